//! Channels (streams), subscriptions, default channels and channel folders: state,
//! access rules (who may see a channel, its content, its subscribers), the JSON shapes
//! of seed 2.1 and Zulip's stream/subscription objects, and the `decide_*` rules of
//! seed 4.1, 4.5, 4.19 and 4.20 plus channel creation, update and archiving.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::groups::{GroupSetting, SystemGroup};
pub use super::markdown::render_description;
use super::{Change, Cx, Realm, User, UserId};
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
    fn default_for(self, realm: &Realm, creator: Option<UserId>) -> GroupSetting {
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
                let s = value
                    .as_str()
                    .ok_or_else(|| invalid("color is not a string"))?;
                if !is_hex_color(s) {
                    return Err(invalid("color is not a valid hex color code"));
                }
                SubProperty::Color(s.to_owned())
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
    /// `None`: the realm's policy; `Some(-1)`: unlimited. (Last: WAL records name
    /// variants by position.)
    MessageRetentionDays(Option<i64>),
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
/// channels `POST /users/me/subscriptions` creates).
#[derive(Debug, Clone, Default)]
pub struct ChannelSpec {
    pub invite_only: bool,
    pub is_web_public: bool,
    /// `None`: Zulip's default (true unless private).
    pub history_public_to_subscribers: Option<bool>,
    pub is_default_stream: bool,
    pub folder_id: Option<i64>,
    pub message_retention_days: Option<i64>,
    /// Group settings given by the client.
    pub settings: Vec<(ChannelSetting, GroupSetting)>,
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
    /// Resolved target users (`None`: the caller).
    pub principals: Option<Vec<UserId>>,
    pub spec: ChannelSpec,
    pub authorization_errors_fatal: bool,
}

/// The answer of a subscribe decision.
#[derive(Debug, Default)]
pub struct SubscribeOutcome {
    pub changes: Vec<Change>,
    /// user id -> names newly subscribed.
    pub subscribed: BTreeMap<UserId, Vec<String>>,
    pub already_subscribed: BTreeMap<UserId, Vec<String>>,
    pub unauthorized: Vec<String>,
    /// Ids of channels created, in request order.
    pub created: Vec<ChannelId>,
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
    pub settings: Vec<(ChannelSetting, GroupSetting)>,
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

impl Realm {
    pub fn channel(&self, id: ChannelId) -> Option<&Channel> {
        self.channels.get(&id).map(Arc::as_ref)
    }

    /// A channel by name, case-insensitively.
    pub fn channel_by_name(&self, name: &str) -> Option<&Channel> {
        self.channel_by_name
            .get(&name.to_lowercase())
            .and_then(|id| self.channel(*id))
    }

    /// Zulip's metadata access: whether `user` may know the channel exists and read
    /// its settings.
    pub fn can_see_channel(&self, user: &User, ch: &Channel) -> bool {
        if ch.is_subscribed(user.id) || (ch.is_web_public && !ch.invite_only) {
            return true;
        }
        if user.is_guest() {
            return false;
        }
        user.is_admin()
            || ch.is_public()
            || [
                ChannelSetting::CanAdministerChannel,
                ChannelSetting::CanAddSubscribers,
                ChannelSetting::CanSubscribe,
            ]
            .iter()
            .any(|s| self.in_setting(user, &ch.setting(*s)))
    }

    /// Zulip's content access (`access_stream_by_id`): subscribers, everyone but guests
    /// for public channels, guests for web-public ones, and the groups allowed to join.
    pub fn can_access_channel(&self, user: &User, ch: &Channel) -> bool {
        if ch.is_subscribed(user.id) || (ch.is_web_public && !ch.invite_only) {
            return true;
        }
        if user.is_guest() {
            return false;
        }
        ch.is_public()
            || [
                ChannelSetting::CanAddSubscribers,
                ChannelSetting::CanSubscribe,
            ]
            .iter()
            .any(|s| self.in_setting(user, &ch.setting(*s)))
    }

    /// Whether `user` may see who is subscribed (and so receives peer events).
    pub fn can_see_subscribers(&self, user: &User, ch: &Channel) -> bool {
        if !user.is_active {
            return false;
        }
        if ch.is_subscribed(user.id) {
            return true;
        }
        if user.is_guest() {
            return ch.is_web_public && !ch.invite_only;
        }
        user.is_admin() || ch.is_public() || self.can_see_channel(user, ch)
    }

    /// Whether `user` administers the channel (administrators, or its
    /// `can_administer_channel_group`).
    pub fn can_administer_channel(&self, user: &User, ch: &Channel) -> bool {
        user.is_admin()
            || (!user.is_guest()
                && self.in_setting(user, &ch.setting(ChannelSetting::CanAdministerChannel)))
    }

    /// `access_stream_by_id` with content access: "Invalid channel ID" otherwise.
    pub fn access_channel(&self, user: &User, id: i64) -> ApiResult<&Channel> {
        u64::try_from(id)
            .ok()
            .and_then(|id| self.channel(id))
            .filter(|ch| self.can_access_channel(user, ch))
            .ok_or_else(invalid_channel_id)
    }

    /// `access_stream_by_id` with metadata access only.
    pub fn access_channel_metadata(&self, user: &User, id: i64) -> ApiResult<&Channel> {
        u64::try_from(id)
            .ok()
            .and_then(|id| self.channel(id))
            .filter(|ch| self.can_see_channel(user, ch))
            .ok_or_else(invalid_channel_id)
    }

    /// Active users who may see the channel exists.
    pub fn channel_viewers(&self, ch: &Channel) -> Vec<UserId> {
        self.users
            .values()
            .filter(|u| u.is_active && self.can_see_channel(u, ch))
            .map(|u| u.id)
            .collect()
    }

    /// Active users who may see the subscriber list.
    pub fn subscriber_viewers(&self, ch: &Channel) -> Vec<UserId> {
        self.users
            .values()
            .filter(|u| self.can_see_subscribers(u, ch))
            .map(|u| u.id)
            .collect()
    }

    /// Zulip's legacy `stream_post_policy`, derived from `can_send_message_group`.
    fn stream_post_policy(&self, ch: &Channel) -> u8 {
        let sys = |g| self.system_setting(g);
        let s = ch.setting(ChannelSetting::CanSendMessage);
        if s == sys(SystemGroup::Administrators) {
            2
        } else if s == sys(SystemGroup::FullMembers) {
            3
        } else if s == sys(SystemGroup::Moderators) {
            4
        } else {
            1
        }
    }

    /// The channel object of `GET /streams` and `stream` events.
    pub fn stream_json(&self, ch: &Channel) -> Map<String, Value> {
        let policy = self.stream_post_policy(ch);
        let mut m = Map::new();
        m.insert("stream_id".into(), ch.id.into());
        m.insert("name".into(), ch.name.clone().into());
        m.insert("is_archived".into(), ch.is_archived.into());
        m.insert("description".into(), ch.description.clone().into());
        m.insert(
            "rendered_description".into(),
            ch.rendered_description.clone().into(),
        );
        m.insert("date_created".into(), ch.date_created.into());
        m.insert("creator_id".into(), ch.creator_id.into());
        m.insert("invite_only".into(), ch.invite_only.into());
        m.insert("is_web_public".into(), ch.is_web_public.into());
        m.insert("stream_post_policy".into(), policy.into());
        m.insert(
            "message_retention_days".into(),
            ch.message_retention_days.into(),
        );
        m.insert(
            "history_public_to_subscribers".into(),
            ch.history_public_to_subscribers.into(),
        );
        m.insert("topics_policy".into(), "inherit".into());
        m.insert("first_message_id".into(), Value::Null);
        m.insert("folder_id".into(), ch.folder_id.into());
        m.insert("is_recently_active".into(), true.into());
        m.insert("is_announcement_only".into(), (policy == 2).into());
        for s in ChannelSetting::ALL {
            m.insert(s.name().into(), ch.setting(s).json());
        }
        m.insert("subscriber_count".into(), ch.subscriber_ids().len().into());
        m.insert("stream_weekly_traffic".into(), Value::Null);
        m
    }

    /// A subscription object: the channel plus the user's personal settings.
    pub fn subscription_json(
        &self,
        ch: &Channel,
        sub: &Subscription,
        include_subscribers: bool,
    ) -> Map<String, Value> {
        let mut m = self.stream_json(ch);
        m.insert("color".into(), sub.color.clone().into());
        m.insert("is_muted".into(), sub.is_muted.into());
        m.insert("in_home_view".into(), (!sub.is_muted).into());
        m.insert("pin_to_top".into(), sub.pin_to_top.into());
        m.insert(
            "desktop_notifications".into(),
            sub.desktop_notifications.into(),
        );
        m.insert(
            "audible_notifications".into(),
            sub.audible_notifications.into(),
        );
        m.insert("push_notifications".into(), sub.push_notifications.into());
        m.insert("email_notifications".into(), sub.email_notifications.into());
        m.insert(
            "wildcard_mentions_notify".into(),
            sub.wildcard_mentions_notify.into(),
        );
        if include_subscribers {
            m.insert("subscribers".into(), ch.subscriber_ids().into());
        }
        m
    }

    pub fn folder_json(&self, f: &ChannelFolder) -> Value {
        json!({
            "id": f.id,
            "name": f.name,
            "description": f.description,
            "rendered_description": f.rendered_description,
            "order": f.order,
            "date_created": f.date_created,
            "creator_id": f.creator_id,
            "is_archived": f.is_archived,
        })
    }

    /// Channel folders sorted by `order`, then id.
    pub fn folders_sorted(&self, include_archived: bool) -> Vec<&ChannelFolder> {
        let mut v: Vec<&ChannelFolder> = self
            .folders
            .values()
            .filter(|f| include_archived || !f.is_archived)
            .collect();
        v.sort_by_key(|f| (f.order, f.id));
        v
    }

    // ---- reads ---------------------------------------------------------------

    /// `GET /users/me/subscriptions`.
    pub fn view_subscriptions(&self, me: &User, include_subscribers: bool) -> Vec<Value> {
        self.channels
            .values()
            .filter_map(|ch| {
                let sub = ch.subs.get(&me.id).filter(|s| s.active)?;
                let subscribers = include_subscribers && self.can_see_subscribers(me, ch);
                Some(Value::Object(self.subscription_json(ch, sub, subscribers)))
            })
            .collect()
    }

    /// `GET /streams`, with Zulip's filters.
    pub fn view_streams(&self, me: &User, f: &StreamFilter) -> ApiResult<Vec<Value>> {
        if f.include_all_active && !me.is_admin() {
            return Err(ApiError::bad_request("User not authorized for this query"));
        }
        Ok(self
            .channels
            .values()
            .filter(|ch| !(f.exclude_archived && ch.is_archived))
            .filter(|ch| {
                let public = f.include_public && ch.is_public() && !me.is_guest();
                let web_public = f.include_web_public && ch.is_web_public && !ch.invite_only;
                let subscribed = f.include_subscribed && ch.is_subscribed(me.id);
                let all = (f.include_all || f.include_all_active) && self.can_see_channel(me, ch);
                let default = f.include_default && self.default_channels.contains(&ch.id);
                let owner = f.include_owner_subscribed
                    && self.users.values().any(|b| {
                        b.is_active && b.bot_owner_id == Some(me.id) && ch.is_subscribed(b.id)
                    })
                    && self.can_see_channel(me, ch);
                let content = f.include_can_access_content && self.can_access_channel(me, ch);
                public || web_public || subscribed || all || default || owner || content
            })
            .map(|ch| {
                let mut m = self.stream_json(ch);
                m.insert(
                    "is_default".into(),
                    self.default_channels.contains(&ch.id).into(),
                );
                Value::Object(m)
            })
            .collect())
    }

    /// `GET /streams/{stream_id}`.
    pub fn view_stream(&self, me: &User, id: i64) -> ApiResult<Value> {
        let ch = self.access_channel_metadata(me, id)?;
        let mut m = self.stream_json(ch);
        m.insert(
            "is_default".into(),
            self.default_channels.contains(&ch.id).into(),
        );
        Ok(Value::Object(m))
    }

    /// `GET /get_stream_id`.
    pub fn view_stream_id(&self, me: &User, name: &str) -> ApiResult<ChannelId> {
        self.channel_by_name(name.trim())
            .filter(|ch| self.can_see_channel(me, ch))
            .map(|ch| ch.id)
            .ok_or_else(|| ApiError::bad_request(format!("Invalid channel name '{name}'")))
    }

    /// `GET /streams/{stream_id}/members`.
    pub fn view_stream_members(&self, me: &User, id: i64) -> ApiResult<Vec<UserId>> {
        let ch = self.access_channel_metadata(me, id)?;
        if !self.can_see_subscribers(me, ch) {
            return Err(ApiError::bad_request(
                "Unable to retrieve subscribers for private channel",
            ));
        }
        Ok(ch.subscriber_ids())
    }

    /// `GET /users/{user_id}/subscriptions/{stream_id}`.
    pub fn view_is_subscribed(&self, me: &User, user_id: i64, stream_id: i64) -> ApiResult<bool> {
        let user = u64::try_from(user_id)
            .ok()
            .and_then(|id| self.users.get(&id))
            .filter(|u| u.is_active)
            .ok_or_else(|| ApiError::bad_request("No such user"))?;
        let ch = self.access_channel_metadata(me, stream_id)?;
        if user.id != me.id && !self.can_see_subscribers(me, ch) {
            return Err(invalid_channel_id());
        }
        Ok(ch.is_subscribed(user.id))
    }

    // ---- subscribe / create --------------------------------------------------

    /// The color of a new subscription of `user`; `taken` holds the palette use of the
    /// users this decision already chose colors for, and records this choice.
    fn next_color(&self, user: UserId, taken: &mut HashMap<UserId, ColorUse>) -> String {
        let used = taken
            .entry(user)
            .or_insert_with(|| self.color_use.get(&user).cloned().unwrap_or_default());
        let color = used.pick();
        used.add(&color);
        color
    }

    /// Records `color` as chosen for `user` in this decision (a color the client asked for).
    fn take_color(&self, user: UserId, color: &str, taken: &mut HashMap<UserId, ColorUse>) {
        taken
            .entry(user)
            .or_insert_with(|| self.color_use.get(&user).cloned().unwrap_or_default())
            .add(color);
    }

    /// Whether `me` may create a channel with this privacy (realm group settings of the
    /// development realm: members create public/private, owners web-public).
    fn check_can_create(&self, me: &User, spec: &ChannelSpec) -> ApiResult<()> {
        let needed = if spec.is_web_public {
            SystemGroup::Owners
        } else {
            SystemGroup::Members
        };
        if !needed.includes_role(me.role) {
            return Err(insufficient_permission());
        }
        Ok(())
    }

    fn check_folder(&self, id: Option<i64>) -> ApiResult<Option<FolderId>> {
        match id {
            None => Ok(None),
            Some(id) => u64::try_from(id)
                .ok()
                .filter(|id| self.folders.get(id).is_some_and(|f| !f.is_archived))
                .map(Some)
                .ok_or_else(|| ApiError::bad_request("Invalid channel folder ID")),
        }
    }

    /// Builds a new channel (not yet subscribed) with Zulip's defaults.
    fn new_channel(
        &self,
        id: ChannelId,
        name: String,
        description: String,
        spec: &ChannelSpec,
        creator: Option<UserId>,
        now: i64,
    ) -> Channel {
        let mut settings: BTreeMap<ChannelSetting, GroupSetting> = ChannelSetting::ALL
            .into_iter()
            .map(|s| (s, s.default_for(self, creator)))
            .collect();
        for (s, v) in &spec.settings {
            settings.insert(*s, v.clone());
        }
        Channel {
            id,
            rendered_description: render_description(&description),
            name,
            description,
            invite_only: spec.invite_only,
            is_web_public: spec.is_web_public,
            history_public_to_subscribers: spec
                .history_public_to_subscribers
                .unwrap_or(!spec.invite_only)
                || spec.is_web_public
                || !spec.invite_only,
            is_archived: false,
            folder_id: None,
            date_created: now,
            creator_id: creator,
            message_retention_days: spec.message_retention_days,
            settings,
            subs: imbl::OrdMap::new(),
        }
    }

    /// Whether `me` may subscribe themself to an existing channel.
    fn can_subscribe_self(&self, me: &User, ch: &Channel) -> bool {
        ch.is_subscribed(me.id)
            || self.can_access_channel(me, ch)
            || (me.is_admin() && ch.invite_only)
    }

    /// Whether `me` may subscribe other users to a channel.
    fn can_subscribe_others(&self, me: &User, ch: &Channel) -> bool {
        if me.is_admin() {
            return true;
        }
        let realm_allows = SystemGroup::Members.includes_role(me.role);
        let channel_allows = self.in_setting(me, &ch.setting(ChannelSetting::CanAddSubscribers));
        if channel_allows {
            return true;
        }
        realm_allows
            && self.can_access_channel(me, ch)
            && (ch.is_public() || ch.is_subscribed(me.id))
    }

    /// `POST /users/me/subscriptions`: subscribes the caller or `principals`, creating
    /// missing channels.
    pub fn decide_subscribe(
        &self,
        me: &User,
        req: SubscribeRequest,
        cx: &mut Cx,
    ) -> ApiResult<SubscribeOutcome> {
        let targets = req.principals.clone().unwrap_or_else(|| vec![me.id]);
        let subscribing_others = targets.iter().any(|t| *t != me.id);
        let mut out = SubscribeOutcome::default();
        // Resolve names; channels to create get ids in request order.
        let mut next_id = self.next_channel_id;
        let mut existing: Vec<&Channel> = Vec::new();
        let mut to_create: Vec<Channel> = Vec::new();
        let mut seen = BTreeSet::new();
        for item in &req.items {
            let name = check_channel_name(&item.name)?;
            if !seen.insert(name.to_lowercase()) {
                continue;
            }
            match self.channel_by_name(&name) {
                Some(ch) => existing.push(ch),
                None => {
                    let description =
                        check_channel_description(item.description.as_deref().unwrap_or_default())?;
                    to_create.push(self.new_channel(
                        next_id,
                        name,
                        description,
                        &req.spec,
                        Some(me.id),
                        cx.now_secs(),
                    ));
                    next_id += 1;
                }
            }
        }
        if !to_create.is_empty() {
            self.check_can_create(me, &req.spec)?;
            if req.spec.is_default_stream && req.spec.invite_only {
                return Err(ApiError::bad_request(
                    "A default channel cannot be private.",
                ));
            }
            let folder = self.check_folder(req.spec.folder_id)?;
            for ch in &mut to_create {
                ch.folder_id = folder;
            }
        }
        // Authorization for existing channels.
        let mut authorized: Vec<&Channel> = Vec::new();
        for ch in existing {
            if self.can_subscribe_self(me, ch)
                && !(ch.invite_only && me.is_guest() && !ch.is_subscribed(me.id))
            {
                authorized.push(ch);
            } else {
                out.unauthorized.push(ch.name.clone());
            }
        }
        if !out.unauthorized.is_empty() && req.authorization_errors_fatal {
            return Err(ApiError::bad_request(format!(
                "Unable to access channel ({}).",
                out.unauthorized.join(", ")
            )));
        }
        if subscribing_others {
            if !SystemGroup::Members.includes_role(me.role) && !me.is_admin() {
                let any_channel_grant = authorized
                    .iter()
                    .all(|ch| self.in_setting(me, &ch.setting(ChannelSetting::CanAddSubscribers)));
                if !any_channel_grant || !to_create.is_empty() {
                    return Err(insufficient_permission());
                }
            }
            for ch in &authorized {
                if !self.can_subscribe_others(me, ch) {
                    return Err(insufficient_permission());
                }
            }
        }
        // Decide.
        let mut taken = HashMap::new();
        let mut subs = Vec::new();
        // The first item of each name decides its requested color.
        let mut requested: HashMap<String, Option<String>> = HashMap::new();
        for i in &req.items {
            requested
                .entry(i.name.trim().to_lowercase())
                .or_insert_with(|| i.color.clone().filter(|c| is_hex_color(c)));
        }
        let color_of =
            |item_name: &str| requested.get(&item_name.to_lowercase()).cloned().flatten();
        let all: Vec<(ChannelId, String, bool)> = authorized
            .iter()
            .map(|c| (c.id, c.name.clone(), false))
            .chain(to_create.iter().map(|c| (c.id, c.name.clone(), true)))
            .collect();
        for &user in &targets {
            for (id, name, new) in &all {
                let already = !*new && self.channels.get(id).is_some_and(|c| c.is_subscribed(user));
                if already {
                    out.already_subscribed
                        .entry(user)
                        .or_default()
                        .push(name.clone());
                    continue;
                }
                let color = match color_of(name) {
                    Some(c) if user == me.id => {
                        self.take_color(user, &c, &mut taken);
                        c
                    }
                    _ => self.next_color(user, &mut taken),
                };
                subs.push(NewSubscription {
                    channel_id: *id,
                    user_id: user,
                    color,
                });
                out.subscribed.entry(user).or_default().push(name.clone());
            }
        }
        for ch in to_create {
            out.created.push(ch.id);
            let id = ch.id;
            out.changes.push(Change::ChannelCreated(Box::new(ch)));
            if req.spec.is_default_stream {
                out.changes.push(Change::DefaultChannelSet {
                    channel_id: id,
                    is_default: true,
                });
            }
        }
        if !subs.is_empty() {
            out.changes.push(Change::Subscribed { subs });
        }
        Ok(out)
    }

    /// `POST /channels/create`: one new channel, 409 if the name is taken.
    pub fn decide_create_channel(
        &self,
        me: &User,
        name: &str,
        description: &str,
        subscribers: Vec<UserId>,
        spec: ChannelSpec,
        cx: &mut Cx,
    ) -> ApiResult<(Vec<Change>, ChannelId)> {
        let name = check_channel_name(name)?;
        if let Some(ch) = self.channel_by_name(&name) {
            return Err(channel_exists(&ch.name));
        }
        let description = check_channel_description(description)?;
        self.check_can_create(me, &spec)?;
        if spec.is_default_stream && spec.invite_only {
            return Err(ApiError::bad_request(
                "A default channel cannot be private.",
            ));
        }
        if subscribers.iter().any(|s| *s != me.id) && !SystemGroup::Members.includes_role(me.role) {
            return Err(insufficient_permission());
        }
        let folder = self.check_folder(spec.folder_id)?;
        let id = self.next_channel_id;
        let mut ch = self.new_channel(id, name, description, &spec, Some(me.id), cx.now_secs());
        ch.folder_id = folder;
        let mut changes = vec![Change::ChannelCreated(Box::new(ch))];
        if spec.is_default_stream {
            changes.push(Change::DefaultChannelSet {
                channel_id: id,
                is_default: true,
            });
        }
        let mut taken = HashMap::new();
        let mut subs = Vec::new();
        let mut seen = BTreeSet::new();
        for user in subscribers {
            if !seen.insert(user) {
                continue;
            }
            let color = self.next_color(user, &mut taken);
            subs.push(NewSubscription {
                channel_id: id,
                user_id: user,
                color,
            });
        }
        if !subs.is_empty() {
            changes.push(Change::Subscribed { subs });
        }
        Ok((changes, id))
    }

    /// Subscriptions of a new user to the default channels (`POST /users`).
    pub fn default_channel_subscriptions(&self, user: UserId) -> Option<Change> {
        let mut taken = HashMap::new();
        let subs: Vec<NewSubscription> = self
            .default_channels
            .iter()
            .filter_map(|id| self.channels.get(id))
            .filter(|ch| !ch.is_archived)
            .map(|ch| {
                let color = self.next_color(user, &mut taken);
                NewSubscription {
                    channel_id: ch.id,
                    user_id: user,
                    color,
                }
            })
            .collect();
        (!subs.is_empty()).then_some(Change::Subscribed { subs })
    }

    // ---- unsubscribe (seed 4.5) ---------------------------------------------

    /// Resolves `principals` (API emails or user ids) to active users: "No such user".
    pub fn resolve_principals(&self, principals: &Value) -> ApiResult<Vec<UserId>> {
        let list = principals
            .as_array()
            .ok_or_else(|| ApiError::bad_request("principals is not a list"))?;
        let no_such = || ApiError::bad_request("No such user");
        let mut out = Vec::new();
        for (i, p) in list.iter().enumerate() {
            let user = match p {
                Value::String(email) => self.user_by_api_email(email.trim()),
                Value::Number(n) => n.as_u64().and_then(|id| self.user(id)),
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "principals[{i}] is not a string"
                    )))
                }
            };
            let user = user.filter(|u| u.is_active).ok_or_else(no_such)?;
            if !out.contains(&user.id) {
                out.push(user.id);
            }
        }
        Ok(out)
    }

    /// `DELETE /users/me/subscriptions` (seed 4.5). Returns the changes and the
    /// `removed` / `not_removed` name lists.
    pub fn decide_unsubscribe(
        &self,
        me: &User,
        names: &[String],
        principals: Option<Vec<UserId>>,
    ) -> ApiResult<(Vec<Change>, Vec<String>, Vec<String>)> {
        // Zulip tests `if principals:`: an empty list means the caller too.
        let targets = match principals {
            Some(p) if !p.is_empty() => p,
            _ => vec![me.id],
        };
        let mut channels: Vec<&Channel> = Vec::new();
        for raw in names {
            let name = raw.trim();
            let ch = self.channel_by_name(name).ok_or_else(|| {
                ApiError::new(
                    400,
                    ErrorCode::StreamDoesNotExist,
                    format!("Channel '{name}' does not exist"),
                )
                .with("stream", name)
            })?;
            if !channels.iter().any(|c| c.id == ch.id) {
                channels.push(ch);
            }
        }
        for &t in &targets {
            if t == me.id {
                continue;
            }
            let target = self.users.get(&t);
            for ch in &channels {
                let own_bot = target.is_some_and(|b| b.is_bot() && b.bot_owner_id == Some(me.id))
                    && self.can_access_channel(me, ch);
                let via_group = self.can_access_channel(me, ch)
                    && self.in_setting(me, &ch.setting(ChannelSetting::CanRemoveSubscribers));
                // Channel administrators (the creator, by default) may remove anyone.
                let administers = self.can_administer_channel(me, ch);
                if !(me.is_admin() || own_bot || via_group || administers) {
                    return Err(insufficient_permission());
                }
            }
        }
        let (mut removed, mut not_removed, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
        for &t in &targets {
            for ch in &channels {
                if ch.is_subscribed(t) {
                    removed.push(ch.name.clone());
                    pairs.push((ch.id, t));
                } else {
                    not_removed.push(ch.name.clone());
                }
            }
        }
        let changes = if pairs.is_empty() {
            Vec::new()
        } else {
            vec![Change::Unsubscribed { subs: pairs }]
        };
        Ok((changes, removed, not_removed))
    }

    // ---- subscription properties (seed 4.1) ---------------------------------

    /// `POST /users/me/subscriptions/properties`: validates the whole list, then checks
    /// each item's channel in order.
    pub fn decide_subscription_properties(
        &self,
        me: &User,
        data: &Value,
    ) -> ApiResult<Vec<Change>> {
        let list = data
            .as_array()
            .ok_or_else(|| ApiError::bad_request("subscription_data is not a list"))?;
        let mut parsed = Vec::new();
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
            if !(value.is_boolean() || value.is_string()) {
                return Err(ApiError::bad_request(format!(
                    "subscription_data[{i}][\"value\"] is not a string"
                )));
            }
            parsed.push((stream_id, SubProperty::parse(i, property, value)?));
        }
        let mut changes = Vec::new();
        for (stream_id, property) in parsed {
            let ch = self.access_channel(me, stream_id)?;
            if !ch.is_subscribed(me.id) {
                return Err(ApiError::bad_request(format!(
                    "Not subscribed to channel ID {stream_id}"
                )));
            }
            changes.push(Change::SubscriptionPropertySet {
                user_id: me.id,
                channel_id: ch.id,
                property,
            });
        }
        Ok(changes)
    }

    // ---- update / archive ----------------------------------------------------

    /// Zulip's access for updating or deleting a channel.
    fn access_channel_for_admin(&self, me: &User, id: i64) -> ApiResult<&Channel> {
        let ch = u64::try_from(id)
            .ok()
            .and_then(|id| self.channels.get(&id))
            .ok_or_else(invalid_channel_id)?;
        if self.can_administer_channel(me, ch) {
            return Ok(ch);
        }
        if !self.can_see_channel(me, ch) {
            return Err(invalid_channel_id());
        }
        Err(ApiError::bad_request(
            "You do not have permission to administer this channel.",
        ))
    }

    /// `PATCH /streams/{stream_id}`.
    pub fn decide_update_channel(
        &self,
        me: &User,
        id: i64,
        p: ChannelPatch,
    ) -> ApiResult<Vec<Change>> {
        let ch = self.access_channel_for_admin(me, id)?;
        let cid = ch.id;
        let mut changes = Vec::new();
        let upd = |update| Change::ChannelUpdated {
            channel_id: cid,
            update,
        };
        if p.is_archived == Some(true) {
            return Err(ApiError::bad_request("Invalid parameters"));
        }
        if p.is_archived == Some(false) && ch.is_archived {
            if let Some(other) = self.channel_by_name(&ch.name).filter(|o| o.id != cid) {
                return Err(channel_exists(&other.name));
            }
            changes.push(upd(ChannelUpdate::Archived(false)));
        }
        if let Some(raw) = &p.description {
            let description = check_channel_description(raw)?;
            if description != ch.description {
                changes.push(upd(ChannelUpdate::Description {
                    rendered: render_description(&description),
                    description,
                }));
            }
        }
        if let Some(raw) = &p.new_name {
            let name = check_channel_name(raw)?;
            if name == ch.name {
                return Err(ApiError::bad_request("Channel already has that name."));
            }
            if let Some(other) = self.channel_by_name(&name).filter(|o| o.id != cid) {
                return Err(channel_exists(&other.name));
            }
            changes.push(upd(ChannelUpdate::Name {
                old: ch.name.clone(),
                new: name,
            }));
        }
        let is_default = self.default_channels.contains(&cid);
        let privacy_given = p.is_private.is_some()
            || p.is_web_public.is_some()
            || p.history_public_to_subscribers.is_some();
        if privacy_given {
            let invite_only = p.is_private.unwrap_or(ch.invite_only);
            let is_web_public = p.is_web_public.unwrap_or(if p.is_private == Some(true) {
                false
            } else {
                ch.is_web_public
            });
            if invite_only && is_web_public {
                return Err(ApiError::bad_request("Invalid parameters"));
            }
            if is_web_public && !ch.is_web_public && !SystemGroup::Owners.includes_role(me.role) {
                return Err(insufficient_permission());
            }
            if (invite_only && !ch.invite_only || is_web_public != ch.is_web_public)
                && !me.is_admin()
                && !self.in_setting(me, &ch.setting(ChannelSetting::CanAdministerChannel))
            {
                return Err(insufficient_permission());
            }
            let making_default = p.is_default_stream.unwrap_or(is_default);
            if invite_only && making_default {
                return Err(ApiError::bad_request(
                    "A default channel cannot be made private.",
                ));
            }
            let history = if invite_only {
                p.history_public_to_subscribers
                    .unwrap_or(ch.history_public_to_subscribers)
            } else {
                true
            };
            if invite_only != ch.invite_only
                || is_web_public != ch.is_web_public
                || history != ch.history_public_to_subscribers
            {
                changes.push(upd(ChannelUpdate::Privacy {
                    invite_only,
                    history_public_to_subscribers: history,
                    is_web_public,
                }));
            }
        }
        if let Some(d) = p.is_default_stream {
            if d != is_default {
                if !me.is_admin() {
                    return Err(ApiError::must_be_admin());
                }
                let private = p.is_private.unwrap_or(ch.invite_only);
                if d && private {
                    return Err(ApiError::bad_request(
                        "A default channel cannot be private.",
                    ));
                }
                changes.push(Change::DefaultChannelSet {
                    channel_id: cid,
                    is_default: d,
                });
            }
        }
        if let Some(folder) = p.folder_id {
            let folder = self.check_folder(folder)?;
            if folder != ch.folder_id {
                changes.push(upd(ChannelUpdate::Folder(folder)));
            }
        }
        if let Some(raw) = &p.message_retention_days {
            if !me.is_owner() {
                return Err(ApiError::must_be_owner());
            }
            let days = parse_message_retention_days(raw)?;
            if days != ch.message_retention_days {
                changes.push(upd(ChannelUpdate::MessageRetentionDays(days)));
            }
        }
        for (s, v) in p.settings {
            if ch.setting(s) != v {
                changes.push(upd(ChannelUpdate::Setting(s, v)));
            }
        }
        Ok(changes)
    }

    /// `DELETE /streams/{stream_id}`: archives the channel.
    pub fn decide_archive_channel(&self, me: &User, id: i64) -> ApiResult<Vec<Change>> {
        let ch = self.access_channel_for_admin(me, id)?;
        if ch.is_archived {
            return Err(ApiError::bad_request("Channel is already deactivated"));
        }
        let mut changes = Vec::new();
        if self.default_channels.contains(&ch.id) {
            changes.push(Change::DefaultChannelSet {
                channel_id: ch.id,
                is_default: false,
            });
        }
        changes.push(Change::ChannelUpdated {
            channel_id: ch.id,
            update: ChannelUpdate::Archived(true),
        });
        Ok(changes)
    }

    // ---- default channels (seed 4.20) ---------------------------------------

    /// `POST /default_streams`, after `require_admin`.
    /// An archived channel answers "Invalid channel ID", as Zulip's
    /// `access_stream_by_id` does for inactive channels.
    pub fn decide_add_default_channel(&self, me: &User, id: i64) -> ApiResult<Vec<Change>> {
        let ch = self.access_channel(me, id)?;
        if ch.is_archived {
            return Err(invalid_channel_id());
        }
        if ch.invite_only {
            return Err(ApiError::bad_request(
                "Private channels cannot be made default.",
            ));
        }
        if self.default_channels.contains(&ch.id) {
            return Ok(Vec::new());
        }
        Ok(vec![Change::DefaultChannelSet {
            channel_id: ch.id,
            is_default: true,
        }])
    }

    /// `DELETE /default_streams`, after `require_admin`.
    pub fn decide_remove_default_channel(&self, me: &User, id: i64) -> ApiResult<Vec<Change>> {
        let ch = u64::try_from(id)
            .ok()
            .and_then(|id| self.channels.get(&id))
            .filter(|ch| me.is_admin() || self.can_access_channel(me, ch))
            .ok_or_else(invalid_channel_id)?;
        if !self.default_channels.contains(&ch.id) {
            return Ok(Vec::new());
        }
        Ok(vec![Change::DefaultChannelSet {
            channel_id: ch.id,
            is_default: false,
        }])
    }

    // ---- channel folders (seed 4.19) ----------------------------------------

    fn check_folder_name(&self, raw: &str, except: Option<FolderId>) -> ApiResult<String> {
        let name = raw.trim();
        if name.is_empty() {
            return Err(ApiError::bad_request("Channel folder name can't be empty."));
        }
        if name.chars().count() > MAX_FOLDER_NAME_LENGTH {
            return Err(ApiError::bad_request(format!(
                "name is too long (limit: {MAX_FOLDER_NAME_LENGTH} characters)"
            )));
        }
        if name.chars().any(char::is_control) {
            return Err(ApiError::bad_request(
                "Invalid character in channel folder name, at position 1.",
            ));
        }
        let taken = self
            .folders
            .values()
            .any(|f| !f.is_archived && Some(f.id) != except && f.name.eq_ignore_ascii_case(name));
        if taken {
            return Err(ApiError::bad_request("Channel folder name already in use"));
        }
        Ok(name.to_owned())
    }

    fn check_folder_description(raw: &str) -> ApiResult<String> {
        if raw.chars().count() > MAX_FOLDER_DESCRIPTION_LENGTH {
            return Err(ApiError::bad_request(format!(
                "description is too long (limit: {MAX_FOLDER_DESCRIPTION_LENGTH} characters)"
            )));
        }
        Ok(raw.trim().to_owned())
    }

    /// `POST /channel_folders/create`, after `require_admin`.
    pub fn decide_create_folder(
        &self,
        me: &User,
        name: &str,
        description: &str,
        cx: &mut Cx,
    ) -> ApiResult<(Vec<Change>, FolderId)> {
        let name = self.check_folder_name(name, None)?;
        let description = Self::check_folder_description(description)?;
        let id = self.next_folder_id;
        let order = self
            .folders
            .values()
            .map(|f| f.order + 1)
            .max()
            .unwrap_or(1);
        Ok((
            vec![Change::ChannelFolderCreated(ChannelFolder {
                id,
                name,
                rendered_description: render_description(&description),
                description,
                order,
                date_created: cx.now_secs(),
                creator_id: Some(me.id),
                is_archived: false,
            })],
            id,
        ))
    }

    /// `PATCH /channel_folders/{channel_folder_id}`, after `require_admin`.
    pub fn decide_update_folder(
        &self,
        id: i64,
        name: Option<String>,
        description: Option<String>,
        is_archived: Option<bool>,
    ) -> ApiResult<Vec<Change>> {
        let f = u64::try_from(id)
            .ok()
            .and_then(|id| self.folders.get(&id))
            .ok_or_else(|| ApiError::bad_request("Invalid channel folder ID"))?;
        let mut changes = Vec::new();
        let upd = |update| Change::ChannelFolderUpdated {
            folder_id: f.id,
            update,
        };
        if let Some(raw) = name {
            let name = self.check_folder_name(&raw, Some(f.id))?;
            if name != f.name {
                changes.push(upd(FolderUpdate::Name(name)));
            }
        }
        if let Some(raw) = description {
            let description = Self::check_folder_description(&raw)?;
            if description != f.description {
                changes.push(upd(FolderUpdate::Description {
                    rendered: render_description(&description),
                    description,
                }));
            }
        }
        if let Some(a) = is_archived {
            if a && !f.is_archived {
                let in_use = self
                    .channels
                    .values()
                    .any(|c| c.folder_id == Some(f.id) && !c.is_archived);
                if in_use {
                    return Err(ApiError::bad_request(
                        "You need to remove all the channels from this folder to archive it.",
                    ));
                }
            }
            if !a && f.is_archived {
                self.check_folder_name(&f.name, Some(f.id))?;
            }
            if a != f.is_archived {
                changes.push(upd(FolderUpdate::Archived(a)));
            }
        }
        Ok(changes)
    }

    /// `PATCH /channel_folders` (seed 4.19), after `require_admin`: every folder id,
    /// archived ones included, must be in `order`; duplicates and unknown ids pass.
    pub fn decide_reorder_folders(&self, order: Vec<i64>) -> ApiResult<Vec<Change>> {
        let all_present = self
            .folders
            .keys()
            .all(|id| order.iter().any(|o| u64::try_from(*o).ok() == Some(*id)));
        if !all_present {
            return Err(ApiError::bad_request("Invalid order mapping."));
        }
        Ok(vec![Change::ChannelFoldersReordered { order }])
    }

    // ---- apply -----------------------------------------------------------------

    /// Applies a channel change (called by `Realm::apply`).
    pub(super) fn apply_channel_change(&mut self, change: &Change) {
        match change {
            Change::ChannelCreated(ch) => {
                self.next_channel_id = self.next_channel_id.max(ch.id + 1);
                self.channel_by_name.insert(ch.name.to_lowercase(), ch.id);
                self.channels.insert(ch.id, Arc::new((**ch).clone()));
            }
            Change::Subscribed { subs } => {
                for s in subs {
                    if let Some(ch) = self.channels.get_mut(&s.channel_id).map(Arc::make_mut) {
                        let colors = self.color_use.entry(s.user_id).or_default();
                        match ch.subs.get_mut(&s.user_id) {
                            Some(existing) => {
                                colors.recolor(&existing.color, &s.color);
                                existing.active = true;
                                existing.color = s.color.clone();
                            }
                            None => {
                                colors.add(&s.color);
                                ch.subs
                                    .insert(s.user_id, Subscription::new(s.color.clone()));
                            }
                        }
                    }
                }
            }
            Change::Unsubscribed { subs } => {
                for (cid, uid) in subs {
                    if let Some(sub) = self
                        .channels
                        .get_mut(cid)
                        .map(Arc::make_mut)
                        .and_then(|ch| ch.subs.get_mut(uid))
                    {
                        sub.active = false;
                    }
                }
            }
            Change::SubscriptionPropertySet {
                user_id,
                channel_id,
                property,
            } => {
                if let Some(sub) = self
                    .channels
                    .get_mut(channel_id)
                    .map(Arc::make_mut)
                    .and_then(|ch| ch.subs.get_mut(user_id))
                {
                    match property {
                        SubProperty::Color(c) => {
                            self.color_use
                                .entry(*user_id)
                                .or_default()
                                .recolor(&sub.color, c);
                            sub.color = c.clone();
                        }
                        SubProperty::IsMuted(v) => sub.is_muted = *v,
                        SubProperty::PinToTop(v) => sub.pin_to_top = *v,
                        SubProperty::DesktopNotifications(v) => {
                            sub.desktop_notifications = Some(*v)
                        }
                        SubProperty::AudibleNotifications(v) => {
                            sub.audible_notifications = Some(*v)
                        }
                        SubProperty::PushNotifications(v) => sub.push_notifications = Some(*v),
                        SubProperty::EmailNotifications(v) => sub.email_notifications = Some(*v),
                        SubProperty::WildcardMentionsNotify(v) => {
                            sub.wildcard_mentions_notify = Some(*v)
                        }
                    }
                }
            }
            Change::ChannelUpdated { channel_id, update } => {
                let Some(ch) = self.channels.get_mut(channel_id).map(Arc::make_mut) else {
                    return;
                };
                match update {
                    ChannelUpdate::Name { new: n, .. } => {
                        let old = std::mem::replace(&mut ch.name, n.clone());
                        if self.channel_by_name.get(&old.to_lowercase()) == Some(channel_id) {
                            self.channel_by_name.remove(&old.to_lowercase());
                        }
                        self.channel_by_name.insert(n.to_lowercase(), *channel_id);
                    }
                    ChannelUpdate::Description {
                        description,
                        rendered,
                    } => {
                        ch.description = description.clone();
                        ch.rendered_description = rendered.clone();
                    }
                    ChannelUpdate::Privacy {
                        invite_only,
                        history_public_to_subscribers,
                        is_web_public,
                    } => {
                        ch.invite_only = *invite_only;
                        ch.history_public_to_subscribers = *history_public_to_subscribers;
                        ch.is_web_public = *is_web_public;
                    }
                    ChannelUpdate::Folder(f) => ch.folder_id = *f,
                    ChannelUpdate::Setting(s, v) => {
                        ch.settings.insert(*s, v.clone());
                    }
                    ChannelUpdate::MessageRetentionDays(d) => ch.message_retention_days = *d,
                    ChannelUpdate::Archived(a) => {
                        ch.is_archived = *a;
                        if *a {
                            self.default_channels.remove(channel_id);
                        }
                    }
                }
            }
            Change::DefaultChannelSet {
                channel_id,
                is_default,
            } => {
                if *is_default {
                    self.default_channels.insert(*channel_id);
                } else {
                    self.default_channels.remove(channel_id);
                }
            }
            Change::ChannelFolderCreated(f) => {
                self.next_folder_id = self.next_folder_id.max(f.id + 1);
                self.folders.insert(f.id, f.clone());
            }
            Change::ChannelFolderUpdated { folder_id, update } => {
                if let Some(f) = self.folders.get_mut(folder_id) {
                    match update {
                        FolderUpdate::Name(n) => f.name = n.clone(),
                        FolderUpdate::Description {
                            description,
                            rendered,
                        } => {
                            f.description = description.clone();
                            f.rendered_description = rendered.clone();
                        }
                        FolderUpdate::Archived(a) => f.is_archived = *a,
                    }
                }
            }
            Change::ChannelFoldersReordered { order } => {
                // Zulip enumerates the list: a duplicated id keeps its last position.
                for (i, id) in order.iter().enumerate() {
                    if let Some(f) = u64::try_from(*id)
                        .ok()
                        .and_then(|id| self.folders.get_mut(&id))
                    {
                        f.order = i as i64;
                    }
                }
            }
            // Not channel changes: `Realm::apply` never routes them here. Listed, not
            // `_`, so that a new variant must be placed.
            Change::RealmCreated { .. }
            | Change::UserCreated(_)
            | Change::CanCreateUsersSet { .. }
            | Change::UserGroupCreated(_) => {}
        }
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
