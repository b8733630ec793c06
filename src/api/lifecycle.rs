//! Account lifecycle: deactivation, reactivation and role / name changes.

use actix_web::web;
use serde_json::Map;

use super::params::Params;
use super::{ApiRequest, ApiResponse};
use crate::error::{ApiError, ApiResult};
use crate::hub::EventHub;
use crate::realm::lifecycle::{
    DeactivateBot, DeactivateOwnUser, DeactivateUser, ReactivateUser, UpdateUser,
    MAX_DEACTIVATION_COMMENT_LENGTH,
};
use crate::realm::profile_fields::parse_user_profile_data;
use crate::realm::{Realm, Role, UserId};

/// A `{user_id}` path segment: digits (too large ones name no user), else 404 as
/// Zulip's `<int:user_id>` routes.
fn user_id_path(raw: &str) -> ApiResult<i64> {
    if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) {
        Ok(raw.parse().unwrap_or(-1))
    } else {
        Err(super::error::not_found_error())
    }
}

/// Removes the event queues of the accounts a deactivation left inactive: `ids` and
/// the bots they own.
fn drop_queues(hub: &EventHub, ids: &[UserId]) {
    let realm = hub.current();
    let gone: Vec<UserId> = realm
        .users
        .values()
        .filter(|u| {
            !u.is_active
                && (ids.contains(&u.id) || u.bot_owner_id.is_some_and(|o| ids.contains(&o)))
        })
        .map(|u| u.id)
        .collect();
    hub.remove_user_queues(&gone);
}

/// `deactivation_notification_comment`: `check_capped_string(2000)`.
fn deactivation_comment(p: &Params) -> ApiResult<Option<String>> {
    let name = "deactivation_notification_comment";
    match p.opt_str(name) {
        Some(c) if c.chars().count() > MAX_DEACTIVATION_COMMENT_LENGTH => {
            Err(ApiError::bad_request(format!(
                "{name} is too long (limit: {MAX_DEACTIVATION_COMMENT_LENGTH} characters)"
            )))
        }
        c => Ok(c.map(|c| c.trim().to_owned())),
    }
}

/// # `DELETE /users/{user_id}`
pub async fn deactivate_user(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = user_id_path(&path.into_inner())?;
    // hearth sends no email: the comment is validated, then not used.
    req.write(
        |_, _, p| {
            let comment = deactivation_comment(p)?;
            Ok(DeactivateUser { id, comment })
        },
        Realm::decide_deactivate_user,
    )
    .await?;
    if let Ok(id) = UserId::try_from(id) {
        drop_queues(&req.hub, &[id]);
    }
    req.reply(Map::new())
}

/// # `DELETE /users/me`
pub async fn deactivate_own_user(req: ApiRequest) -> ApiResponse {
    let parsed = req.parse(|_, _, _| Ok(DeactivateOwnUser))?;
    let me = parsed.me;
    req.commit(parsed, Realm::decide_deactivate_own_user)
        .await?;
    drop_queues(&req.hub, &[me]);
    req.reply(Map::new())
}

/// # `DELETE /bots/{bot_id}`
pub async fn deactivate_bot(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = user_id_path(&path.into_inner())?;
    req.write(
        |_, _, _| Ok(DeactivateBot { id }),
        Realm::decide_deactivate_bot,
    )
    .await?;
    if let Ok(id) = UserId::try_from(id) {
        drop_queues(&req.hub, &[id]);
    }
    req.reply(Map::new())
}

/// # `POST /users/{user_id}/reactivate`
pub async fn reactivate_user(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = user_id_path(&path.into_inner())?;
    req.write(
        |_, _, _| Ok(ReactivateUser { id }),
        Realm::decide_reactivate_user,
    )
    .await?;
    req.reply(Map::new())
}

/// `full_name` (a string), `role` (JSON, one of Zulip's `ROLE_TYPES`: "Invalid role")
/// and `profile_data` (JSON, `check_profile_data`), in Zulip's parameter order.
fn user_update(id: i64, p: &Params) -> ApiResult<UpdateUser> {
    let full_name = p.opt_str("full_name");
    let role = match p.opt_int("role")? {
        None => None,
        Some(v) => Some(Role::from_value(v).ok_or_else(|| ApiError::bad_request("Invalid role"))?),
    };
    let profile_data = p
        .opt_json("profile_data")?
        .map(parse_user_profile_data)
        .transpose()?;
    Ok(UpdateUser {
        id,
        full_name,
        role,
        profile_data,
    })
}

/// # `PATCH /users/{user_id}`, `PATCH /users/{email}`
pub async fn update_user(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let key = path.into_inner();
    if key.contains('@') {
        // `PATCH /users/{email}` (feature level 313): the user `GET /users/{email}`
        // finds, then as by id.
        req.write(
            move |realm, me, p| {
                let id = realm.user_by_email_for(me, &key)?.id;
                user_update(i64::try_from(id).unwrap_or(-1), p)
            },
            Realm::decide_update_user,
        )
        .await?;
    } else {
        let id = user_id_path(&key)?;
        req.write(|_, _, p| user_update(id, p), Realm::decide_update_user)
            .await?;
    }
    req.reply(Map::new())
}
