//! The realm's own settings: `PATCH /realm` (Zulip's `update_realm`) for the settings
//! hearth keeps (`realm::settings`); any other parameter is reported as ignored.

use serde_json::Map;

use super::params::Params;
use super::{ApiRequest, ApiResponse};
use crate::error::ApiResult;
use crate::realm::groups::{RealmSetting, SettingValue};
use crate::realm::onboarding::TestWelcomeMessage;
use crate::realm::settings::{
    check_length, LimitValue, MessageLimit, RealmFlag, RealmUpdate, MAX_REALM_DESCRIPTION_LENGTH,
    MAX_REALM_NAME_LENGTH, MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH,
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
    Flag(RealmFlag),
    WelcomeMessageCustomText,
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
            Param::Flag(f) => f.name(),
            Param::WelcomeMessageCustomText => "welcome_message_custom_text",
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
        Param::WelcomeMessageCustomText,
        Param::ModerationRequestChannel,
    ];
    params.extend(MessageLimit::ALL.map(Param::Limit));
    params.extend(RealmSetting::EDITABLE.map(Param::Group));
    params.extend(RealmFlag::ALL.map(Param::Flag));
    params.sort_by_key(|x| x.name());
    let mut u = RealmUpdate::default();
    for param in params {
        let name = param.name();
        match param {
            Param::AllowMessageEditing => u.allow_message_editing = p.opt_bool(name)?,
            Param::Flag(f) => {
                if let Some(v) = p.opt_bool(name)? {
                    u.flags.push((f, v));
                }
            }
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
            Param::WelcomeMessageCustomText => {
                u.welcome_message_custom_text = p
                    .opt_str(name)
                    .map(|t| check_length(name, t, MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH))
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

/// # `POST /realm/test_welcome_bot_custom_message`
///
/// Zulip's `send_test_welcome_bot_custom_message`: `require_realm_admin`, then the
/// text (at most 8000 characters); the Welcome Bot sends it to the caller. Answers
/// `message_id`.
pub async fn test_welcome_bot_custom_message(req: ApiRequest) -> ApiResponse {
    let id = req
        .write(
            |realm, me, p| {
                realm.require_admin(me)?;
                let text = p.str("welcome_message_custom_text")?;
                Ok(TestWelcomeMessage {
                    welcome_message_custom_text: TestWelcomeMessage::check_length(text)?,
                })
            },
            Realm::decide_test_welcome_bot_custom_message,
        )
        .await?;
    let mut data = Map::new();
    data.insert("message_id".into(), id.into());
    req.reply(data)
}
