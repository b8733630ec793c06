//! The realm's own settings: `PATCH /realm` (Zulip's `update_realm`) for the settings
//! hearth keeps (`realm::settings`); any other parameter is reported as ignored.

use serde_json::Map;

use super::params::Params;
use super::{ApiRequest, ApiResponse};
use crate::error::ApiResult;
use crate::realm::groups::{RealmSetting, SettingValue};
use crate::realm::settings::{
    check_length, LimitValue, MessageLimit, RealmUpdate, MAX_REALM_DESCRIPTION_LENGTH,
    MAX_REALM_NAME_LENGTH,
};
use crate::realm::topics_policy::TopicsPolicy;
use crate::realm::Realm;

/// One parameter of `PATCH /realm`.
#[derive(Clone, Copy)]
enum Param {
    AllowMessageEditing,
    Description,
    Name,
    Limit(MessageLimit),
    Group(RealmSetting),
    TopicsPolicy,
    ModerationRequestChannel,
}

impl Param {
    fn name(self) -> &'static str {
        match self {
            Param::AllowMessageEditing => "allow_message_editing",
            Param::Description => "description",
            Param::Name => "name",
            Param::Limit(l) => l.name(),
            Param::Group(s) => s.name(),
            Param::TopicsPolicy => "topics_policy",
            Param::ModerationRequestChannel => "moderation_request_channel_id",
        }
    }
}

/// Parses the parameters hearth reads in the order of `update_realm`'s signature
/// (alphabetical), which is the order Zulip reports their errors in.
fn parse_update(p: &Params) -> ApiResult<RealmUpdate> {
    let mut params = vec![
        Param::AllowMessageEditing,
        Param::Description,
        Param::Name,
        Param::TopicsPolicy,
        Param::ModerationRequestChannel,
    ];
    params.extend(MessageLimit::ALL.map(Param::Limit));
    params.extend(RealmSetting::EDITABLE.map(Param::Group));
    params.sort_by_key(|x| x.name());
    let mut u = RealmUpdate::default();
    for param in params {
        let name = param.name();
        match param {
            Param::AllowMessageEditing => u.allow_message_editing = p.opt_bool(name)?,
            Param::Description => {
                u.description = p
                    .opt_str(name)
                    .map(|d| check_length(name, d, MAX_REALM_DESCRIPTION_LENGTH))
                    .transpose()?;
            }
            Param::Name => {
                u.name = p
                    .opt_str(name)
                    .map(|n| check_length(name, n, MAX_REALM_NAME_LENGTH))
                    .transpose()?;
            }
            Param::Limit(l) => {
                if let Some(v) = p.opt_json(name)? {
                    u.limits.push((l, LimitValue::parse(name, &v)?));
                }
            }
            Param::Group(s) => {
                if let Some(v) = p.opt_json(name)? {
                    let (new, old) = SettingValue::parse_change(name, &v)?;
                    u.groups.push((s, new, old));
                }
            }
            Param::ModerationRequestChannel => u.moderation_request_channel_id = p.opt_int(name)?,
            // A plain string, not JSON (`str` with `parse_enum_from_string_value`).
            Param::TopicsPolicy => {
                u.topics_policy = p
                    .opt_str(name)
                    .map(|v| TopicsPolicy::parse_realm(&v))
                    .transpose()?;
            }
        }
    }
    // `update_realm` sets the time limits in this order.
    u.limits
        .sort_by_key(|(l, _)| MessageLimit::ALL.iter().position(|x| x == l));
    Ok(u)
}

/// # `PATCH /realm`
pub async fn update_realm(req: ApiRequest) -> ApiResponse {
    let updated = req
        .write(
            |realm, me, p| {
                // `@require_realm_admin` comes before the parameters.
                realm.require_admin(me)?;
                parse_update(p)
            },
            Realm::decide_update_realm,
        )
        .await?;
    let data: Map<_, _> = updated
        .iter()
        .map(|u| (u.name().to_owned(), u.json()))
        .collect();
    req.reply(data)
}
