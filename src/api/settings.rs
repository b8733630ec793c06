//! Personal settings: `PATCH /settings` and its legacy aliases `PATCH /settings/display`
//! and `PATCH /settings/notifications` (Zulip routes all three to
//! `json_change_settings`), and the realm's defaults for new users,
//! `PATCH /realm/user_settings_defaults`. The table of settings and the rules are in
//! `realm::user_settings`; here the parameters are read in Zulip's order and the
//! password is checked off the realm actor.

use actix_web::web;
use serde_json::Map;

use super::params::Params;
use super::{ApiRequest, ApiResponse, Parsed};
use crate::error::{ApiError, ApiResult};
use crate::realm::status::require_human;
use crate::realm::user_settings::{
    canonicalize_timezone, check_values, is_timezone, not_in_list, setting, sorted, value_error,
    DefaultsUpdate, Kind, PasswordChange, Setting, SettingValue, SettingsUpdate, RESOLVED_POLICIES,
};
use crate::realm::users::password_is_strong;
use crate::realm::Realm;

/// Which endpoint parses: the realm level declares the string choices as pydantic
/// `Literal`s (but `emojiset`), whose refusal `typed_endpoint` words as "Invalid {name}".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    User,
    RealmDefaults,
}

/// Parses one setting's parameter (its type and allowed values, in the parser's
/// words); `check_settings_values` comes after every parameter (`check_values`).
fn parse_one(p: &Params, st: &Setting, at: Endpoint) -> ApiResult<Option<SettingValue>> {
    let name = st.name;
    let value = match st.kind {
        Kind::Bool => p.opt_bool(name)?.map(SettingValue::Bool),
        Kind::Int | Kind::BatchingPeriod => p.opt_int(name)?.map(SettingValue::Int),
        Kind::IntIn(allowed) => match p.opt_int(name)? {
            Some(i) if !allowed.contains(&i) => return Err(not_in_list(name)),
            i => i.map(SettingValue::Int),
        },
        Kind::StrIn(allowed) => match p.opt_str(name) {
            Some(v) if !allowed.contains(&v.as_str()) => {
                return Err(if at == Endpoint::RealmDefaults && name != "emojiset" {
                    ApiError::bad_request(format!("Invalid {name}"))
                } else {
                    not_in_list(name)
                });
            }
            v => v.map(SettingValue::Str),
        },
        Kind::Sound | Kind::Language => p.opt_str(name).map(SettingValue::Str),
        Kind::Timezone => match p.opt_str(name) {
            Some(v) if !is_timezone(&v) => {
                return Err(value_error(name, "Not a recognized time zone"))
            }
            // `do_change_user_setting` stores the canonical name.
            v => v.map(|v| SettingValue::Str(canonicalize_timezone(&v).to_owned())),
        },
        // `parse_enum_from_string_value`.
        Kind::ResolvedTopicPolicy => match p.opt_str(name) {
            Some(v) if !RESOLVED_POLICIES.contains(&v.as_str()) => {
                return Err(ApiError::bad_request(format!("Invalid {name}")))
            }
            v => v.map(SettingValue::Str),
        },
    };
    Ok(value)
}

/// `PATCH /settings`'s parameters as read, the passwords still in clear.
struct Request {
    update: SettingsUpdate,
    old_password: Option<String>,
    new_password: Option<String>,
}

/// Reads `PATCH /settings` in Zulip's (alphabetical) parameter order, then
/// `check_settings_values`. `target_users` (feature level 444: administrators changing
/// others' settings) is not read, so it is reported as ignored.
fn parse_settings(p: &Params) -> ApiResult<Request> {
    let mut r = Request {
        update: SettingsUpdate::default(),
        old_password: None,
        new_password: None,
    };
    let mut names: Vec<&str> = sorted().iter().map(|s| s.name).collect();
    names.extend(["email", "full_name", "new_password", "old_password"]);
    names.sort_unstable();
    for name in names {
        match name {
            "email" => r.update.email = p.opt_str(name),
            "full_name" => r.update.full_name = p.opt_str(name),
            "new_password" => r.new_password = p.opt_str(name),
            "old_password" => r.old_password = p.opt_str(name),
            _ => {
                if let Some(st) = setting(name) {
                    if let Some(v) = parse_one(p, st, Endpoint::User)? {
                        r.update.values.push((st, v));
                    }
                }
            }
        }
    }
    check_values(&r.update.values)?;
    Ok(r)
}

/// # `PATCH /settings`
///
/// Also `PATCH /settings/display` and `PATCH /settings/notifications`, the aliases
/// older clients call. Bots are refused before any parameter is read
/// (`human_users_only`). A new password is checked against the old one and for
/// strength on the hashing threads, never on the realm actor.
pub async fn update_settings(req: ApiRequest) -> ApiResponse {
    let parsed = req.parse(|_, me, p| {
        require_human(me)?;
        let r = parse_settings(p)?;
        Ok((r, me.password_hash.clone()))
    })?;
    let Parsed {
        me,
        req: (mut r, old_hash),
    } = parsed;
    if let Some(new_password) = r.new_password.take() {
        let old = r.old_password.take().unwrap_or_default();
        if !crate::passwords::verify(old, old_hash.clone()).await? {
            return Err(ApiError::bad_request("Wrong password!"));
        }
        let strength = new_password.clone();
        let strong = web::block(move || password_is_strong(&strength))
            .await
            .map_err(|_| ApiError::internal())?;
        if !strong {
            return Err(ApiError::bad_request("New password is too weak!"));
        }
        let new_hash = crate::passwords::hash(new_password).await?;
        r.update.password = Some(PasswordChange { old_hash, new_hash });
    }
    let presence = r
        .update
        .values
        .iter()
        .any(|(st, _)| st.name == "presence_enabled");
    let password_changed = r.update.password.is_some();
    req.commit(Parsed { me, req: r.update }, Realm::decide_update_settings)
        .await?;
    // As `do_change_user_setting`: a change of `presence_enabled` refreshes presence
    // (the hub's renderer makes it, in the realm's order: `Realm::presence_refresh`),
    // seen by whoever reads after this answer.
    if presence {
        req.hub.settled().await;
    }
    let mut res = req.reply(Map::new())?;
    // The change ended every session of the user; the browser that made it goes on.
    if password_changed {
        if let Some(cookie) = super::session::renew_after_password_change(&req, me).await {
            res.add_cookie(&cookie).map_err(|_| ApiError::internal())?;
        }
    }
    Ok(res)
}

/// # `PATCH /realm/user_settings_defaults`
///
/// Administrators only (`require_realm_admin`, before any parameter); the settings
/// Zulip lets a realm default (others are reported as ignored).
pub async fn update_settings_defaults(req: ApiRequest) -> ApiResponse {
    req.write(
        |realm, me, p| {
            realm.require_admin(me)?;
            let mut values = Vec::new();
            for st in sorted().into_iter().filter(|s| s.realm_default) {
                if let Some(v) = parse_one(p, st, Endpoint::RealmDefaults)? {
                    values.push((st, v));
                }
            }
            check_values(&values)?;
            Ok(DefaultsUpdate { values })
        },
        Realm::decide_update_settings_defaults,
    )
    .await?;
    req.reply(Map::new())
}
