//! Channels (streams), subscriptions, default channels and channel folders: state,
//! access rules (who may see a channel, its content, its subscribers), the JSON shapes
//! of seed 2.1 and Zulip's stream/subscription objects, and the `decide_*` rules of
//! seed 4.1, 4.5, 4.19 and 4.20 plus channel creation, update and archiving.
//!
//! This file holds the types, limits and value checks; each concern has its file:
//! `access` (who sees what), `render` (JSON shapes and the reads), `subscriptions`
//! (subscribe, create, unsubscribe, properties), `updates` (update, archive, default
//! channels), `folders`, and `apply` (changes into state).

mod access;
mod apply;
pub mod email;
mod folders;
mod render;
mod subscriptions;
mod updates;

pub use subscriptions::require_non_guest;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::groups::{GroupSetting, RealmSetting, SettingValue, SystemGroup};
pub use super::markdown::render_description;
use super::topics_policy::TopicsPolicy;
use super::{Change, Cx, Decided, Realm, User, UserId};
use crate::error::{ApiError, ApiResult, ErrorCode};

/// A channel id, unique within a realm.
pub type ChannelId = u64;
/// A channel folder id, unique within a realm.
pub type FolderId = u64;

/// Zulip's `Stream.MAX_NAME_LENGTH`.
pub const MAX_CHANNEL_NAME_LENGTH: usize = 60;
/// Zulip's `Stream.MAX_DESCRIPTION_LENGTH`.
pub const MAX_CHANNEL_DESCRIPTION_LENGTH: usize = 1024;
/// Zulip's `ChannelFolder.MAX_NAME_LENGTH`.
pub const MAX_FOLDER_NAME_LENGTH: usize = 60;
/// Zulip's `ChannelFolder.MAX_DESCRIPTION_LENGTH`.
pub const MAX_FOLDER_DESCRIPTION_LENGTH: usize = 1024;

/// Zulip's `STREAM_ASSIGNMENT_COLORS`: subscription colors are handed out in this order.
pub const STREAM_ASSIGNMENT_COLORS: [&str; 24] = [
    "#76ce90", "#fae589", "#a6c7e5", "#e79ab5", "#bfd56f", "#f4ae55", "#b0a5fd", "#addfe5",
    "#f5ce6e", "#c2726a", "#94c849", "#bd86e5", "#ee7e4a", "#a6dcbf", "#95a5fd", "#53a063",
    "#9987e1", "#e4523d", "#c2c2c2", "#4f8de4", "#c6a8ad", "#e7cc4d", "#c8bebf", "#a47462",
];

/// The group settings of a channel, with their API names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ChannelSetting {
    CanAddSubscribers,
    CanAdministerChannel,
    CanCreateTopic,
    CanDeleteAnyMessage,
    CanDeleteOwnMessage,
    CanMoveMessagesOutOfChannel,
    CanMoveMessagesWithinChannel,
    CanRemoveSubscribers,
    CanResolveTopics,
    CanSendMessage,
    CanSubscribe,
}

impl ChannelSetting {
    pub const ALL: [ChannelSetting; 11] = [
        ChannelSetting::CanAddSubscribers,
        ChannelSetting::CanAdministerChannel,
        ChannelSetting::CanCreateTopic,
        ChannelSetting::CanDeleteAnyMessage,
        ChannelSetting::CanDeleteOwnMessage,
        ChannelSetting::CanMoveMessagesOutOfChannel,
        ChannelSetting::CanMoveMessagesWithinChannel,
        ChannelSetting::CanRemoveSubscribers,
        ChannelSetting::CanResolveTopics,
        ChannelSetting::CanSendMessage,
        ChannelSetting::CanSubscribe,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ChannelSetting::CanAddSubscribers => "can_add_subscribers_group",
            ChannelSetting::CanAdministerChannel => "can_administer_channel_group",
            ChannelSetting::CanCreateTopic => "can_create_topic_group",
            ChannelSetting::CanDeleteAnyMessage => "can_delete_any_message_group",
            ChannelSetting::CanDeleteOwnMessage => "can_delete_own_message_group",
            ChannelSetting::CanMoveMessagesOutOfChannel => "can_move_messages_out_of_channel_group",
            ChannelSetting::CanMoveMessagesWithinChannel => {
                "can_move_messages_within_channel_group"
            }
            ChannelSetting::CanRemoveSubscribers => "can_remove_subscribers_group",
            ChannelSetting::CanResolveTopics => "can_resolve_topics_group",
            ChannelSetting::CanSendMessage => "can_send_message_group",
            ChannelSetting::CanSubscribe => "can_subscribe_group",
        }
    }

    pub fn from_name(name: &str) -> Option<ChannelSetting> {
        ChannelSetting::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Zulip's default for a new channel (the creator administers it).
    pub(crate) fn default_for(self, realm: &Realm, creator: Option<UserId>) -> GroupSetting {
        let sys = |g| realm.system_setting(g);
        match self {
            ChannelSetting::CanAdministerChannel => match creator {
                Some(id) => GroupSetting::Anonymous {
                    members: vec![id],
                    subgroups: Vec::new(),
                },
                None => sys(SystemGroup::Nobody),
            },
            ChannelSetting::CanCreateTopic | ChannelSetting::CanSendMessage => {
                sys(SystemGroup::Everyone)
            }
            ChannelSetting::CanRemoveSubscribers => sys(SystemGroup::Administrators),
            _ => sys(SystemGroup::Nobody),
        }
    }
}

/// One user's subscription to a channel. Kept (inactive) after unsubscribing, so the
/// color survives and register can list it under `unsubscribed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subscription {
    pub active: bool,
    pub color: String,
    pub is_muted: bool,
    pub pin_to_top: bool,
    /// `None`: follow the user's global setting (sent as null).
    pub desktop_notifications: Option<bool>,
    pub audible_notifications: Option<bool>,
    pub push_notifications: Option<bool>,
    pub email_notifications: Option<bool>,
    pub wildcard_mentions_notify: Option<bool>,
}

impl Subscription {
    fn new(color: String) -> Self {
        Subscription {
            active: true,
            color,
            is_muted: false,
            pin_to_top: false,
            desktop_notifications: None,
            audible_notifications: None,
            push_notifications: None,
            email_notifications: None,
            wildcard_mentions_notify: None,
        }
    }
}

/// A channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Channel {
    pub id: ChannelId,
    pub name: String,
    pub description: String,
    /// HTML of `description`, rendered when it was decided.
    pub rendered_description: String,
    pub invite_only: bool,
    pub is_web_public: bool,
    pub history_public_to_subscribers: bool,
    pub is_archived: bool,
    pub folder_id: Option<FolderId>,
    pub date_created: i64,
    pub creator_id: Option<UserId>,
    /// `None`: the realm's policy.
    pub message_retention_days: Option<i64>,
    /// Whether the empty topic is allowed, refused or the only one (`Inherit`: the
    /// realm's policy; `Realm::topics_policy` resolves it).
    pub topics_policy: TopicsPolicy,
    /// Every group setting (all of `ChannelSetting::ALL` are present).
    pub settings: BTreeMap<ChannelSetting, GroupSetting>,
    /// Subscriptions by user, active or not.
    pub subs: imbl::OrdMap<UserId, Subscription>,
}

impl Channel {
    pub fn setting(&self, s: ChannelSetting) -> GroupSetting {
        self.settings
            .get(&s)
            .cloned()
            .unwrap_or(GroupSetting::Anonymous {
                members: Vec::new(),
                subgroups: Vec::new(),
            })
    }

    pub fn is_subscribed(&self, user: UserId) -> bool {
        self.subs.get(&user).is_some_and(|s| s.active)
    }

    /// Active subscribers, in id order.
    pub fn subscriber_ids(&self) -> Vec<UserId> {
        self.subs
            .iter()
            .filter(|(_, s)| s.active)
            .map(|(id, _)| *id)
            .collect()
    }

    pub fn is_public(&self) -> bool {
        !self.invite_only
    }
}

/// A subscription about to be created: decided, with its color.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewSubscription {
    pub channel_id: ChannelId,
    pub user_id: UserId,
    pub color: String,
}

/// A personal subscription property (seed 2.1), already validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SubProperty {
    Color(String),
    /// Set through `is_muted` or through its inverse `in_home_view`.
    IsMuted(bool),
    PinToTop(bool),
    DesktopNotifications(bool),
    AudibleNotifications(bool),
    PushNotifications(bool),
    EmailNotifications(bool),
    WildcardMentionsNotify(bool),
}

impl SubProperty {
    /// Parses one property as seed 2.1 and Zulip's validator do.
    pub fn parse(index: usize, property: &str, value: &Value) -> ApiResult<SubProperty> {
        let boolean = || {
            value
                .as_bool()
                .ok_or_else(|| ApiError::bad_request(format!("{property} is not a boolean")))
        };
        Ok(match property {
            "color" => {
                let invalid = |why: &str| {
                    ApiError::bad_request(format!(
                        "Invalid subscription_data[{index}]: Value error, {why}"
                    ))
                };
                // Zulip's `check_color` tests `str(value)`: `true` is "True", no colour.
                match value.as_str() {
                    Some(s) if is_hex_color(s) => SubProperty::Color(s.to_owned()),
                    _ => return Err(invalid("color is not a valid hex color code")),
                }
            }
            "is_muted" => SubProperty::IsMuted(boolean()?),
            "in_home_view" => SubProperty::IsMuted(!boolean()?),
            "pin_to_top" => SubProperty::PinToTop(boolean()?),
            "desktop_notifications" => SubProperty::DesktopNotifications(boolean()?),
            "audible_notifications" => SubProperty::AudibleNotifications(boolean()?),
            "push_notifications" => SubProperty::PushNotifications(boolean()?),
            "email_notifications" => SubProperty::EmailNotifications(boolean()?),
            "wildcard_mentions_notify" => SubProperty::WildcardMentionsNotify(boolean()?),
            other => {
                return Err(ApiError::bad_request(format!(
                    "Unknown subscription property: {other}"
                )))
            }
        })
    }

    /// The `(property, value)` pairs of the `subscription` update events it sends.
    pub fn events(&self) -> Vec<(&'static str, Value)> {
        match self {
            SubProperty::Color(c) => vec![("color", json!(c))],
            SubProperty::IsMuted(m) => vec![("in_home_view", json!(!m)), ("is_muted", json!(m))],
            SubProperty::PinToTop(v) => vec![("pin_to_top", json!(v))],
            SubProperty::DesktopNotifications(v) => vec![("desktop_notifications", json!(v))],
            SubProperty::AudibleNotifications(v) => vec![("audible_notifications", json!(v))],
            SubProperty::PushNotifications(v) => vec![("push_notifications", json!(v))],
            SubProperty::EmailNotifications(v) => vec![("email_notifications", json!(v))],
            SubProperty::WildcardMentionsNotify(v) => {
                vec![("wildcard_mentions_notify", json!(v))]
            }
        }
    }
}

/// Zulip's `check_color`: `#` and 3 to 6 hex digits.
pub fn is_hex_color(s: &str) -> bool {
    s.strip_prefix('#')
        .is_some_and(|h| (3..=6).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// One change to a channel's properties.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ChannelUpdate {
    /// A rename; the old name is kept for the event.
    Name {
        old: String,
        new: String,
    },
    Description {
        description: String,
        rendered: String,
    },
    /// The three privacy flags change together (one `invite_only` event).
    Privacy {
        invite_only: bool,
        history_public_to_subscribers: bool,
        is_web_public: bool,
    },
    Folder(Option<FolderId>),
    Setting(ChannelSetting, GroupSetting),
    Archived(bool),
    /// `None`: the realm's policy; `Some(-1)`: unlimited.
    MessageRetentionDays(Option<i64>),
    /// (Last: WAL records name variants by position.)
    TopicsPolicy(TopicsPolicy),
}

/// A channel folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelFolder {
    pub id: FolderId,
    pub name: String,
    pub description: String,
    pub rendered_description: String,
    pub order: i64,
    pub date_created: i64,
    pub creator_id: Option<UserId>,
    pub is_archived: bool,
}

/// One change to a channel folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FolderUpdate {
    Name(String),
    Description {
        description: String,
        rendered: String,
    },
    Archived(bool),
}

/// Zulip's `check_stream_name`: the stripped name, or Zulip's error.
pub fn check_channel_name(raw: &str) -> ApiResult<String> {
    let name = raw.trim();
    if name.is_empty() {
        return Err(ApiError::bad_request("Channel name can't be empty."));
    }
    if name.chars().count() > MAX_CHANNEL_NAME_LENGTH {
        return Err(ApiError::bad_request(format!(
            "Channel name too long (limit: {MAX_CHANNEL_NAME_LENGTH} characters)."
        )));
    }
    if let Some(i) = name.chars().position(|c| c.is_control() || c == '\u{fffe}') {
        return Err(ApiError::bad_request(format!(
            "Invalid character in channel name, at position {}.",
            i + 1
        )));
    }
    Ok(name.to_owned())
}

/// Zulip's description check: at most 1024 characters, newlines kept.
pub fn check_channel_description(raw: &str) -> ApiResult<String> {
    if raw.chars().count() > MAX_CHANNEL_DESCRIPTION_LENGTH {
        return Err(ApiError::bad_request(format!(
            "description is too long (limit: {MAX_CHANNEL_DESCRIPTION_LENGTH} characters)"
        )));
    }
    Ok(raw.trim().to_owned())
}

/// How one user's subscriptions (active or not) use the color palette: how many use
/// each palette color, and how many there are. Kept up to date by `apply`, so choosing
/// a color costs O(palette), not a scan of the realm's channels.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColorUse {
    per_color: [u32; STREAM_ASSIGNMENT_COLORS.len()],
    total: u32,
}

impl ColorUse {
    fn palette_index(color: &str) -> Option<usize> {
        STREAM_ASSIGNMENT_COLORS
            .iter()
            .position(|c| c.eq_ignore_ascii_case(color))
    }

    /// Counts one more subscription with `color`.
    pub fn add(&mut self, color: &str) {
        if let Some(i) = Self::palette_index(color) {
            self.per_color[i] += 1;
        }
        self.total += 1;
    }

    /// Forgets one subscription with `color`.
    pub fn remove(&mut self, color: &str) {
        if let Some(i) = Self::palette_index(color) {
            self.per_color[i] = self.per_color[i].saturating_sub(1);
        }
        self.total = self.total.saturating_sub(1);
    }

    /// Replaces one subscription's color.
    pub fn recolor(&mut self, old: &str, new: &str) {
        self.remove(old);
        self.add(new);
    }

    /// The first palette color not in use, or the palette in turn once all are used.
    pub fn pick(&self) -> String {
        let i = self
            .per_color
            .iter()
            .position(|n| *n == 0)
            .unwrap_or(self.total as usize % STREAM_ASSIGNMENT_COLORS.len());
        STREAM_ASSIGNMENT_COLORS[i].to_owned()
    }
}

/// The next color for a user who already uses `used`: the first palette color not in
/// use, or the palette in turn once all are used.
pub fn pick_color(used: &[String]) -> String {
    let mut u = ColorUse::default();
    used.iter().for_each(|c| u.add(c));
    u.pick()
}

/// `"Invalid channel ID"`.
pub fn invalid_channel_id() -> ApiError {
    ApiError::bad_request("Invalid channel ID")
}

fn insufficient_permission() -> ApiError {
    ApiError::bad_request("Insufficient permission")
}

/// The channel-related parameters of a creation (`POST /channels/create` and the
/// channels `POST /users/me/subscriptions` creates), parsed on the worker.
#[derive(Debug, Clone, Default)]
pub struct ChannelSpec {
    pub invite_only: bool,
    pub is_web_public: bool,
    /// `None`: Zulip's default (true unless private).
    pub history_public_to_subscribers: Option<bool>,
    pub is_default_stream: bool,
    pub folder_id: Option<i64>,
    pub message_retention_days: Option<i64>,
    /// `None`: not given (`inherit`).
    pub topics_policy: Option<TopicsPolicy>,
    /// Group settings given by the client, as sent (the rule looks them up).
    pub settings: Vec<(ChannelSetting, SettingValue)>,
}

/// One user named by a `principals` (or `subscribers`) list: an API email or a user id,
/// decoded on the worker; the rule resolves it (`Realm::resolve_principals`).
#[derive(Debug, Clone, PartialEq)]
pub enum Principal {
    Email(String),
    /// `None`: a number that is no user id (a negative or fractional one).
    Id(Option<UserId>),
}

impl Principal {
    /// Decodes a `principals` list: "principals is not a list", or
    /// "principals[i] is not a string" for an element neither string nor number.
    pub fn parse_list(principals: &Value) -> ApiResult<Vec<Principal>> {
        let list = principals
            .as_array()
            .ok_or_else(|| ApiError::bad_request("principals is not a list"))?;
        list.iter()
            .enumerate()
            .map(|(i, p)| match p {
                Value::String(email) => Ok(Principal::Email(email.clone())),
                Value::Number(n) => Ok(Principal::Id(n.as_u64())),
                _ => Err(ApiError::bad_request(format!(
                    "principals[{i}] is not a string"
                ))),
            })
            .collect()
    }
}

/// `POST /channels/create`.
#[derive(Debug, Clone)]
pub struct CreateChannel {
    pub name: String,
    pub description: String,
    /// `None`: the caller alone.
    pub subscribers: Option<Vec<Principal>>,
    pub spec: ChannelSpec,
}

/// One channel of a subscribe request.
#[derive(Debug, Clone)]
pub struct SubscribeItem {
    pub name: String,
    pub description: Option<String>,
    pub color: Option<String>,
}

/// `POST /users/me/subscriptions` after parameter parsing.
#[derive(Debug, Clone)]
pub struct SubscribeRequest {
    pub items: Vec<SubscribeItem>,
    /// Target users as sent (`None`: the caller).
    pub principals: Option<Vec<Principal>>,
    pub spec: ChannelSpec,
    pub authorization_errors_fatal: bool,
}

/// The answer of a subscribe decision.
#[derive(Debug, Default)]
pub struct SubscribeOutcome {
    /// user id -> names newly subscribed.
    pub subscribed: BTreeMap<UserId, Vec<String>>,
    pub already_subscribed: BTreeMap<UserId, Vec<String>>,
    pub unauthorized: Vec<String>,
    /// Ids of channels created, in request order.
    pub created: Vec<ChannelId>,
}

/// `DELETE /users/me/subscriptions`.
#[derive(Debug, Clone)]
pub struct Unsubscribe {
    pub names: Vec<String>,
    /// Target users as sent (`None` or empty: the caller).
    pub principals: Option<Vec<Principal>>,
}

/// The answer of `DELETE /users/me/subscriptions`: channel names, per target user.
#[derive(Debug, Clone, Default)]
pub struct Unsubscribed {
    pub removed: Vec<String>,
    pub not_removed: Vec<String>,
}

/// `PATCH /users/me/subscriptions`: channels to join (created when missing) and
/// channel names to leave, for the caller.
#[derive(Debug, Clone)]
pub struct UpdateSubscriptions {
    pub add: Vec<SubscribeItem>,
    pub delete: Vec<String>,
}

/// The answer of `PATCH /users/me/subscriptions`: both halves' answers.
#[derive(Debug, Default)]
pub struct UpdatedSubscriptions {
    pub added: SubscribeOutcome,
    pub removed: Unsubscribed,
}

/// `POST /users/me/subscriptions/properties`: `(stream_id, property)`, in order.
#[derive(Debug, Clone)]
pub struct SubscriptionProperties {
    pub items: Vec<(i64, SubProperty)>,
}

impl SubscriptionProperties {
    /// Validates the whole `subscription_data` list (before any channel is looked up).
    pub fn parse(data: &Value) -> ApiResult<SubscriptionProperties> {
        let list = data
            .as_array()
            .ok_or_else(|| ApiError::bad_request("subscription_data is not a list"))?;
        let mut items = Vec::new();
        for (i, item) in list.iter().enumerate() {
            let obj = item.as_object().ok_or_else(|| {
                ApiError::bad_request(format!("subscription_data[{i}] is not a dict"))
            })?;
            let field = |k: &str| {
                obj.get(k).ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "subscription_data[{i}][\"{k}\"] field is missing: Field required"
                    ))
                })
            };
            let stream_id = field("stream_id")?.as_i64().ok_or_else(|| {
                ApiError::bad_request(format!(
                    "subscription_data[{i}][\"stream_id\"] is not an integer"
                ))
            })?;
            let property = field("property")?.as_str().ok_or_else(|| {
                ApiError::bad_request(format!(
                    "subscription_data[{i}][\"property\"] is not a string"
                ))
            })?;
            let value = field("value")?;
            // `value: bool | str` in pydantic's strict mode: when neither member fits,
            // the first error is the `bool` member's, located at `["value"]["bool"]`.
            if !(value.is_boolean() || value.is_string()) {
                return Err(ApiError::bad_request(format!(
                    "subscription_data[{i}][\"value\"][\"bool\"] is not a boolean"
                )));
            }
            items.push((stream_id, SubProperty::parse(i, property, value)?));
        }
        Ok(SubscriptionProperties { items })
    }
}

/// Optional fields of `PATCH /streams/{stream_id}`.
#[derive(Debug, Clone, Default)]
pub struct ChannelPatch {
    pub new_name: Option<String>,
    pub description: Option<String>,
    pub is_private: Option<bool>,
    pub is_web_public: Option<bool>,
    pub history_public_to_subscribers: Option<bool>,
    pub is_default_stream: Option<bool>,
    pub is_archived: Option<bool>,
    /// `Some(None)`: remove from its folder.
    pub folder_id: Option<Option<i64>>,
    /// The JSON value as sent: checked after the owner check, as Zulip does.
    pub message_retention_days: Option<Value>,
    pub topics_policy: Option<TopicsPolicy>,
    /// The new values as sent (the rule looks them up).
    pub settings: Vec<(ChannelSetting, SettingValue)>,
}

/// `PATCH /streams/{stream_id}`.
#[derive(Debug, Clone)]
pub struct UpdateChannel {
    /// As sent: the lookup (and its error) belongs to the rule.
    pub id: i64,
    pub patch: ChannelPatch,
}

/// `DELETE /streams/{stream_id}`.
#[derive(Debug, Clone, Copy)]
pub struct ArchiveChannel {
    pub id: i64,
}

/// `POST /default_streams` and `DELETE /default_streams`: the channel's id as sent.
#[derive(Debug, Clone, Copy)]
pub struct DefaultChannel {
    pub stream_id: i64,
}

/// `POST /channel_folders/create`.
#[derive(Debug, Clone)]
pub struct CreateFolder {
    pub name: String,
    pub description: String,
}

/// `PATCH /channel_folders/{channel_folder_id}`.
#[derive(Debug, Clone)]
pub struct UpdateFolder {
    pub id: i64,
    pub name: Option<String>,
    pub description: Option<String>,
    pub is_archived: Option<bool>,
}

/// `PATCH /channel_folders`: folder ids in the new order.
#[derive(Debug, Clone)]
pub struct ReorderFolders {
    pub order: Vec<i64>,
}

/// Zulip's `parse_message_retention_days` with `Stream.MESSAGE_RETENTION_SPECIAL_VALUES_MAP`:
/// a positive number of days, `"unlimited"` (-1) or `"realm_default"` (None).
pub fn parse_message_retention_days(v: &Value) -> ApiResult<Option<i64>> {
    let bad = |shown: String| {
        ApiError::bad_request(format!("Bad value for 'message_retention_days': {shown}"))
    };
    match v {
        Value::String(s) if s == "unlimited" => Ok(Some(-1)),
        Value::String(s) if s == "realm_default" => Ok(None),
        Value::String(s) => Err(bad(s.clone())),
        Value::Number(n) => match n.as_i64() {
            Some(d) if d > 0 => Ok(Some(d)),
            _ => Err(bad(n.to_string())),
        },
        other => Err(bad(other.to_string())),
    }
}

/// `GET /streams` filters.
#[derive(Debug, Clone)]
pub struct StreamFilter {
    pub include_public: bool,
    pub include_web_public: bool,
    pub include_subscribed: bool,
    pub exclude_archived: bool,
    pub include_all_active: bool,
    pub include_all: bool,
    pub include_default: bool,
    pub include_owner_subscribed: bool,
    pub include_can_access_content: bool,
}

/// 409 `CHANNEL_ALREADY_EXISTS`.
pub fn channel_exists(name: &str) -> ApiError {
    ApiError::new(
        409,
        ErrorCode::ChannelAlreadyExists,
        format!("Channel '{name}' already exists"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colors() {
        assert!(is_hex_color("#abc"));
        assert!(is_hex_color("#A1B2C3"));
        assert!(!is_hex_color("notacolor"));
        assert!(!is_hex_color("#abcdefa"));
        assert!(!is_hex_color("#ab"));
        assert_eq!(pick_color(&[]), "#76ce90");
        assert_eq!(pick_color(&["#76CE90".into()]), "#fae589");
        let all: Vec<String> = STREAM_ASSIGNMENT_COLORS
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert_eq!(pick_color(&all), "#76ce90");
    }

    #[test]
    fn sub_property_parsing() {
        assert_eq!(
            SubProperty::parse(0, "in_home_view", &json!(true)).ok(),
            Some(SubProperty::IsMuted(false))
        );
        assert_eq!(
            SubProperty::parse(0, "bogus_property", &json!(true)).map_err(|e| e.msg),
            Err("Unknown subscription property: bogus_property".into())
        );
        assert_eq!(
            SubProperty::parse(0, "color", &json!("notacolor")).map_err(|e| e.msg),
            Err(
                "Invalid subscription_data[0]: Value error, color is not a valid hex color code"
                    .into()
            )
        );
        assert_eq!(
            SubProperty::parse(2, "is_muted", &json!("bad")).map_err(|e| e.msg),
            Err("is_muted is not a boolean".into())
        );
        let ev = SubProperty::IsMuted(true).events();
        assert_eq!(ev[0], ("in_home_view", json!(false)));
        assert_eq!(ev[1], ("is_muted", json!(true)));
    }

    #[test]
    fn names_and_descriptions() {
        assert_eq!(check_channel_name("  x ").ok().as_deref(), Some("x"));
        assert_eq!(
            check_channel_name(" ").map_err(|e| e.msg),
            Err("Channel name can't be empty.".into())
        );
        assert!(check_channel_name(&"a".repeat(61)).is_err());
        assert_eq!(
            render_description("For convenient *channel folder* testing!"),
            "<p>For convenient <em>channel folder</em> testing!</p>"
        );
        assert_eq!(
            render_description("For testing `code`"),
            "<p>For testing <code>code</code></p>"
        );
        assert_eq!(render_description(""), "");
        assert_eq!(render_description("a < b"), "<p>a &lt; b</p>");
    }
}
