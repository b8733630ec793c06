//! The realm's own settings and `PATCH /realm` (Zulip's `update_realm`): its name and
//! description, the message policies hearth's message rules read (whether content may
//! be edited, and the time limits on editing, deleting and moving messages), its
//! default topics policy (`topics_policy`), the Welcome Bot's custom message to new
//! users (`welcome_message_custom_text`, `realm::onboarding`), and the group-valued
//! settings of `RealmSetting::EDITABLE` (values checked in `groups/settings.rs`).
//!
//! | Change                | Event                                                       |
//! |-----------------------|-------------------------------------------------------------|
//! | `Name`, `Description`, `MessageContentDeleteLimitSeconds`, `MoveMessages*LimitSeconds`, `WelcomeMessageCustomText` | `realm` `op:update` `{property, value}` |
//! | `AllowMessageEditing`, `MessageContentEditLimitSeconds` | `realm` `op:update_dict` `{property: "default", data: {name: value}}` |
//! | `TopicsPolicy`        | `realm` `op:update_dict` `{property: "default", data: {topics_policy: name, mandatory_topics: bool}}` |
//!
//! Every event goes to every active user (Zulip's `do_set_realm_property`).

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::channels::ChannelId;
use super::events::{Audience, Event};
use super::groups::{RealmSetting, SettingValue};
use super::markdown::render_description;
use super::topics_policy::TopicsPolicy;
use super::{Change, Cx, Decided, Realm, RealmChange, User};
use crate::error::{ApiError, ApiResult, ErrorCode};

/// Zulip's `Realm.MAX_REALM_NAME_LENGTH`.
pub const MAX_REALM_NAME_LENGTH: usize = 40;
/// Zulip's `Realm.MAX_REALM_DESCRIPTION_LENGTH`.
pub const MAX_REALM_DESCRIPTION_LENGTH: usize = 1000;
/// Zulip's `Realm.MAX_REALM_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH`.
pub const MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH: usize = 8000;
/// Zulip's `DEFAULT_MESSAGE_CONTENT_EDIT_LIMIT_SECONDS`.
pub const DEFAULT_CONTENT_EDIT_LIMIT_SECS: i64 = 600;
/// Zulip's `DEFAULT_MESSAGE_CONTENT_DELETE_LIMIT_SECONDS`.
pub const DEFAULT_CONTENT_DELETE_LIMIT_SECS: i64 = 600;
/// Zulip's `DEFAULT_MOVE_MESSAGE_LIMIT_SECONDS` (three days), for both kinds of move.
pub const DEFAULT_MOVE_LIMIT_SECS: i64 = 3 * 24 * 3600;

/// The realm's plain settings that `PATCH /realm` changes (the name lives in
/// `RealmSettings`). `None` limits mean no limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RealmProperties {
    /// Markdown, shown raw in `/register` (`realm_description`).
    pub description: String,
    /// Whether anyone may edit message content (`allow_message_editing`).
    pub allow_message_editing: bool,
    pub message_content_edit_limit_seconds: Option<i64>,
    pub message_content_delete_limit_seconds: Option<i64>,
    pub move_messages_within_stream_limit_seconds: Option<i64>,
    pub move_messages_between_streams_limit_seconds: Option<i64>,
    /// The channels' default topics policy (`allow_empty_topic` or
    /// `disable_empty_topic`; `topics_policy`).
    pub topics_policy: TopicsPolicy,
    /// Whether read receipts are shown (`enable_read_receipts`).
    pub enable_read_receipts: bool,
    /// Whether only administrators may change their name (`name_changes_disabled`).
    pub name_changes_disabled: bool,
    /// Whether only administrators may change their email (`email_changes_disabled`).
    pub email_changes_disabled: bool,
    /// The Markdown the Welcome Bot sends each new user after its welcome
    /// (`welcome_message_custom_text`; empty: nothing more is sent).
    #[serde(default)]
    pub welcome_message_custom_text: String,
    /// Where message reports go (`moderation_request_channel_id`; a private channel),
    /// if anywhere.
    #[serde(default)]
    pub moderation_request_channel: Option<ChannelId>,
}

impl Default for RealmProperties {
    /// Zulip's defaults, which the development realm keeps.
    fn default() -> Self {
        RealmProperties {
            description: String::new(),
            allow_message_editing: true,
            message_content_edit_limit_seconds: Some(DEFAULT_CONTENT_EDIT_LIMIT_SECS),
            message_content_delete_limit_seconds: Some(DEFAULT_CONTENT_DELETE_LIMIT_SECS),
            move_messages_within_stream_limit_seconds: Some(DEFAULT_MOVE_LIMIT_SECS),
            move_messages_between_streams_limit_seconds: Some(DEFAULT_MOVE_LIMIT_SECS),
            topics_policy: TopicsPolicy::AllowEmptyTopic,
            // `do_create_realm`: on for closed organizations (invitations required, as
            // every hearth realm is).
            enable_read_receipts: true,
            name_changes_disabled: false,
            email_changes_disabled: false,
            welcome_message_custom_text: String::new(),
            moderation_request_channel: None,
        }
    }
}

/// The realm's plain boolean settings added with personal settings and read receipts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RealmFlag {
    EmailChangesDisabled,
    EnableReadReceipts,
    NameChangesDisabled,
}

impl RealmFlag {
    /// In `update_realm`'s (alphabetical) order.
    pub const ALL: [RealmFlag; 3] = [
        RealmFlag::EmailChangesDisabled,
        RealmFlag::EnableReadReceipts,
        RealmFlag::NameChangesDisabled,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RealmFlag::EmailChangesDisabled => "email_changes_disabled",
            RealmFlag::EnableReadReceipts => "enable_read_receipts",
            RealmFlag::NameChangesDisabled => "name_changes_disabled",
        }
    }

    pub fn get(self, p: &RealmProperties) -> bool {
        match self {
            RealmFlag::EmailChangesDisabled => p.email_changes_disabled,
            RealmFlag::EnableReadReceipts => p.enable_read_receipts,
            RealmFlag::NameChangesDisabled => p.name_changes_disabled,
        }
    }

    fn set(self, p: &mut RealmProperties, v: bool) {
        match self {
            RealmFlag::EmailChangesDisabled => p.email_changes_disabled = v,
            RealmFlag::EnableReadReceipts => p.enable_read_receipts = v,
            RealmFlag::NameChangesDisabled => p.name_changes_disabled = v,
        }
    }
}

/// One of the realm's time limits on messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MessageLimit {
    ContentDelete,
    ContentEdit,
    MoveWithinStream,
    MoveBetweenStreams,
}

impl MessageLimit {
    /// In the order `update_realm` sets them.
    pub const ALL: [MessageLimit; 4] = [
        MessageLimit::ContentDelete,
        MessageLimit::ContentEdit,
        MessageLimit::MoveWithinStream,
        MessageLimit::MoveBetweenStreams,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MessageLimit::ContentDelete => "message_content_delete_limit_seconds",
            MessageLimit::ContentEdit => "message_content_edit_limit_seconds",
            MessageLimit::MoveWithinStream => "move_messages_within_stream_limit_seconds",
            MessageLimit::MoveBetweenStreams => "move_messages_between_streams_limit_seconds",
        }
    }

    fn get(self, p: &RealmProperties) -> Option<i64> {
        match self {
            MessageLimit::ContentDelete => p.message_content_delete_limit_seconds,
            MessageLimit::ContentEdit => p.message_content_edit_limit_seconds,
            MessageLimit::MoveWithinStream => p.move_messages_within_stream_limit_seconds,
            MessageLimit::MoveBetweenStreams => p.move_messages_between_streams_limit_seconds,
        }
    }

    fn set(self, p: &mut RealmProperties, v: Option<i64>) {
        match self {
            MessageLimit::ContentDelete => p.message_content_delete_limit_seconds = v,
            MessageLimit::ContentEdit => p.message_content_edit_limit_seconds = v,
            MessageLimit::MoveWithinStream => p.move_messages_within_stream_limit_seconds = v,
            MessageLimit::MoveBetweenStreams => p.move_messages_between_streams_limit_seconds = v,
        }
    }
}

/// A realm property as `PATCH /realm` set it (the WAL record of `RealmChange::PropertySet`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RealmProperty {
    Name(String),
    Description(String),
    AllowMessageEditing(bool),
    /// A time limit; `None` is "unlimited".
    Limit(MessageLimit, Option<i64>),
    /// The realm's topics policy. (WAL records name variants by position.)
    TopicsPolicy(TopicsPolicy),
    /// A boolean setting of `RealmFlag`.
    Flag(RealmFlag, bool),
    /// The Welcome Bot's custom message to new users (`welcome_message_custom_text`).
    WelcomeMessageCustomText(String),
    /// Where message reports go (`None`: reporting is off).
    /// (Last: WAL records name variants by position.)
    ModerationRequestChannel(Option<ChannelId>),
}

/// A time-limit parameter as sent (`Json[int | str]`), before Zulip's
/// `parse_message_time_limit_setting`.
#[derive(Debug, Clone, PartialEq)]
pub enum LimitValue {
    Int(i64),
    Str(String),
}

impl LimitValue {
    /// Parses the JSON value of a `Json[int | str]` parameter (pydantic's strict mode:
    /// when neither member fits, the first error is the `int` member's).
    pub fn parse(name: &str, v: &Value) -> ApiResult<LimitValue> {
        match v {
            Value::Number(n) if n.is_i64() => Ok(LimitValue::Int(n.as_i64().unwrap_or(0))),
            Value::String(s) => Ok(LimitValue::Str(s.clone())),
            _ => Err(ApiError::bad_request(format!(
                "{name}[\"int\"] is not an integer"
            ))),
        }
    }

    /// Zulip's `parse_message_time_limit_setting`: "unlimited" is no limit; other
    /// strings and values below 1 are refused (`RequestVariableConversionError`).
    fn limit(&self, name: &str) -> ApiResult<Option<i64>> {
        let bad = |shown: String, value: Value| {
            ApiError::new(
                400,
                ErrorCode::RequestVariableInvalid,
                format!("Bad value for '{name}': {shown}"),
            )
            .with("var_name", name)
            .with("bad_value", value)
        };
        match self {
            LimitValue::Str(s) if s == "unlimited" => Ok(None),
            LimitValue::Str(s) => Err(bad(s.clone(), json!(s))),
            LimitValue::Int(n) if *n <= 0 => Err(bad(n.to_string(), json!(n))),
            LimitValue::Int(n) => Ok(Some(*n)),
        }
    }
}

/// A `PATCH /realm`, its parameters parsed (in Zulip's order) but not yet checked.
#[derive(Debug, Clone, Default)]
pub struct RealmUpdate {
    pub name: Option<String>,
    pub description: Option<String>,
    pub allow_message_editing: Option<bool>,
    pub limits: Vec<(MessageLimit, LimitValue)>,
    /// Already parsed (`RealmTopicsPolicyEnum`).
    pub topics_policy: Option<TopicsPolicy>,
    /// `RealmFlag` settings given, in `RealmFlag::ALL` order.
    pub flags: Vec<(RealmFlag, bool)>,
    /// Group settings: `(setting, new, expected old)`.
    pub groups: Vec<(RealmSetting, SettingValue, Option<SettingValue>)>,
    /// At most `MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH` characters (checked).
    pub welcome_message_custom_text: Option<String>,
    /// `moderation_request_channel_id` as given (-1: none).
    pub moderation_request_channel_id: Option<i64>,
}

/// One entry of `PATCH /realm`'s answer: a setting it reports, with its new value.
#[derive(Debug, Clone, PartialEq)]
pub enum RealmUpdated {
    /// A property that changed.
    Property(RealmProperty),
    /// The topics policy given, which Zulip reports even when it did not change.
    TopicsPolicy(TopicsPolicy),
    /// A group setting that changed, with its new value as given (normalised).
    Group(RealmSetting, SettingValue),
}

impl RealmUpdated {
    /// The answer's key.
    pub fn name(&self) -> &'static str {
        match self {
            RealmUpdated::Property(p) => p.name(),
            RealmUpdated::TopicsPolicy(_) => "topics_policy",
            RealmUpdated::Group(s, _) => s.name(),
        }
    }

    /// The answer's value: `"updated"` for strings, the number of a topics policy (as
    /// orjson encodes Zulip's enum), `null` for an unlimited time limit.
    pub fn json(&self) -> Value {
        match self {
            RealmUpdated::Property(p) => match p {
                RealmProperty::Name(_)
                | RealmProperty::Description(_)
                | RealmProperty::WelcomeMessageCustomText(_) => "updated".into(),
                RealmProperty::AllowMessageEditing(v) | RealmProperty::Flag(_, v) => (*v).into(),
                RealmProperty::Limit(_, v) => json!(v),
                RealmProperty::TopicsPolicy(p) => p.value().into(),
                RealmProperty::ModerationRequestChannel(c) => json!(channel_id_or_none(*c)),
            },
            RealmUpdated::TopicsPolicy(p) => p.value().into(),
            RealmUpdated::Group(_, v) => v.json(),
        }
    }
}

/// A channel setting's API value: the id, or -1 for none.
fn channel_id_or_none(c: Option<ChannelId>) -> i64 {
    c.map_or(-1, |c| c as i64)
}

/// A string parameter of at most `max` characters (`StringConstraints(max_length)`).
pub fn check_length(name: &str, value: String, max: usize) -> ApiResult<String> {
    if value.chars().count() > max {
        return Err(ApiError::bad_request(format!(
            "{name} is too long (limit: {max} characters)"
        )));
    }
    Ok(value)
}

impl Realm {
    /// A message time limit of the realm (`None`: no limit).
    pub fn message_limit(&self, l: MessageLimit) -> Option<i64> {
        l.get(&self.properties)
    }

    /// `PATCH /realm`: administrators only, then Zulip's checks in `update_realm`'s
    /// order, all before anything changes. Answers each setting it reports, in the
    /// answer's order.
    pub fn decide_update_realm(
        &self,
        me: &User,
        mut u: RealmUpdate,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<Vec<RealmUpdated>>> {
        self.require_admin(me)?;
        // Group settings are checked in `Realm.REALM_PERMISSION_GROUP_SETTINGS` order.
        u.groups.sort_by_key(|(s, _, _)| *s);
        if u.groups.iter().any(|(s, _, _)| s.owner_only()) && !me.is_owner() {
            return Err(ApiError::must_be_owner());
        }
        let mut limits = Vec::new();
        for (l, raw) in &u.limits {
            limits.push((*l, raw.limit(l.name())?));
        }
        let mut changes = Vec::new();
        let mut data = Vec::new();
        let mut set = |p: RealmProperty, data: &mut Vec<RealmUpdated>| {
            data.push(RealmUpdated::Property(p.clone()));
            changes.push(Change::Realm(RealmChange::PropertySet(p)));
        };
        // "unlimited" is set first (`parse_and_set_setting_value_if_required`), then
        // every other property in the order of `update_realm`'s locals.
        for (l, v) in &limits {
            if v.is_none() && self.message_limit(*l).is_some() {
                set(RealmProperty::Limit(*l, None), &mut data);
            }
        }
        if let Some(v) = u.allow_message_editing {
            if v != self.properties.allow_message_editing {
                set(RealmProperty::AllowMessageEditing(v), &mut data);
            }
        }
        if let Some(d) = u.description {
            if d != self.properties.description {
                set(RealmProperty::Description(d), &mut data);
            }
        }
        // The flags sort around `name` (`update_realm`'s parameters are alphabetical).
        let changed_flags: Vec<(RealmFlag, bool)> = u
            .flags
            .iter()
            .copied()
            .filter(|(f, v)| *v != f.get(&self.properties))
            .collect();
        for (f, v) in changed_flags.iter().filter(|(f, _)| f.name() < "name") {
            set(RealmProperty::Flag(*f, *v), &mut data);
        }
        if let Some(n) = u.name {
            if n != self.settings.name {
                set(RealmProperty::Name(n), &mut data);
            }
        }
        for (f, v) in changed_flags.iter().filter(|(f, _)| f.name() > "name") {
            set(RealmProperty::Flag(*f, *v), &mut data);
        }
        if let Some(p) = u.topics_policy {
            // Zulip compares the stored number with the parsed enum, which never match,
            // so the answer always reports the value given, as the enum's number
            // (orjson encodes an enum by its value); only a real change is recorded.
            if p != self.properties.topics_policy {
                set(RealmProperty::TopicsPolicy(p), &mut data);
            } else {
                data.push(RealmUpdated::TopicsPolicy(p));
            }
        }
        for (l, v) in &limits {
            if v.is_some() && *v != self.message_limit(*l) {
                set(RealmProperty::Limit(*l, *v), &mut data);
            }
        }
        // Zulip's `update_realm`: a private channel the administrator can access, or
        // -1 for none; only a change is made and reported.
        if let Some(id) = u.moderation_request_channel_id {
            let current = self.properties.moderation_request_channel;
            if current.map(|c| c as i64) != Some(id) {
                let new = if id >= 0 {
                    let ch = self.access_channel(me, id)?;
                    if ch.is_archived {
                        return Err(ApiError::bad_request("Invalid channel ID"));
                    }
                    if !ch.invite_only {
                        return Err(ApiError::bad_request(
                            "Moderation request channel must be private.",
                        ));
                    }
                    Some(ch.id)
                } else {
                    None
                };
                if new != current {
                    set(RealmProperty::ModerationRequestChannel(new), &mut data);
                }
            }
        }
        if let Some(t) = u.welcome_message_custom_text {
            if t != self.properties.welcome_message_custom_text {
                set(RealmProperty::WelcomeMessageCustomText(t), &mut data);
            }
        }
        let Decided {
            changes: group_changes,
            answer: group_data,
        } = self.decide_update_realm_settings(me, u.groups)?;
        changes.extend(group_changes);
        data.extend(
            group_data
                .into_iter()
                .map(|(s, v)| RealmUpdated::Group(s, v)),
        );
        Ok(Decided::new(changes, data))
    }

    pub(super) fn apply_realm_property(&mut self, p: &RealmProperty) {
        match p {
            RealmProperty::Name(n) => self.settings.name = n.clone(),
            RealmProperty::Description(d) => self.properties.description = d.clone(),
            RealmProperty::AllowMessageEditing(v) => self.properties.allow_message_editing = *v,
            RealmProperty::Limit(l, v) => l.set(&mut self.properties, *v),
            RealmProperty::TopicsPolicy(p) => self.properties.topics_policy = *p,
            RealmProperty::Flag(f, v) => f.set(&mut self.properties, *v),
            RealmProperty::WelcomeMessageCustomText(t) => {
                self.properties.welcome_message_custom_text = t.clone()
            }
            RealmProperty::ModerationRequestChannel(c) => {
                self.properties.moderation_request_channel = *c
            }
        }
    }

    /// The event of a property change (see the module table).
    pub(super) fn realm_property_events(&self, p: &RealmProperty) -> Vec<Event> {
        let value = match p {
            RealmProperty::Name(n) => json!(n),
            RealmProperty::Description(d) => json!(d),
            RealmProperty::AllowMessageEditing(v) | RealmProperty::Flag(_, v) => json!(v),
            RealmProperty::Limit(_, v) => json!(v),
            RealmProperty::TopicsPolicy(p) => json!(p.name()),
            RealmProperty::WelcomeMessageCustomText(t) => json!(t),
            RealmProperty::ModerationRequestChannel(c) => json!(channel_id_or_none(*c)),
        };
        let body = match p {
            // `do_set_realm_property` adds the deprecated `mandatory_topics`.
            RealmProperty::TopicsPolicy(tp) => {
                let data = json!({
                    "topics_policy": value,
                    "mandatory_topics": *tp == TopicsPolicy::DisableEmptyTopic,
                });
                json!({"type": "realm", "op": "update_dict", "property": "default", "data": data})
            }
            RealmProperty::AllowMessageEditing(_)
            | RealmProperty::Limit(MessageLimit::ContentEdit, _) => {
                let mut data = Map::new();
                data.insert(p.name().to_owned(), value);
                json!({"type": "realm", "op": "update_dict", "property": "default", "data": data})
            }
            _ => json!({"type": "realm", "op": "update", "property": p.name(), "value": value}),
        };
        vec![Event::new(body, Audience::users(self.active_users(false)))]
    }

    /// Zulip's `get_realm_rendered_description` (`GET /server_settings`): the
    /// description as HTML, Zulip's placeholder when it is blank.
    pub fn rendered_description(&self) -> String {
        let d = &self.properties.description;
        if d.is_empty() {
            render_description("The coolest place in the universe.")
        } else {
            render_description(d)
        }
    }

    /// The `/register` keys of these properties (`realm_name` and `realm_description`
    /// among them).
    pub(super) fn realm_properties_state(&self) -> Map<String, Value> {
        let p = &self.properties;
        let mut m = Map::new();
        m.insert("realm_name".into(), self.settings.name.clone().into());
        m.insert("realm_description".into(), p.description.clone().into());
        m.insert(
            "realm_allow_message_editing".into(),
            p.allow_message_editing.into(),
        );
        for l in MessageLimit::ALL {
            m.insert(format!("realm_{}", l.name()), json!(l.get(p)));
        }
        m.insert("realm_topics_policy".into(), p.topics_policy.name().into());
        for f in RealmFlag::ALL {
            m.insert(format!("realm_{}", f.name()), f.get(p).into());
        }
        m.insert(
            "realm_moderation_request_channel_id".into(),
            json!(channel_id_or_none(p.moderation_request_channel)),
        );
        // Deprecated since feature level 392, still sent.
        m.insert(
            "realm_mandatory_topics".into(),
            (p.topics_policy == TopicsPolicy::DisableEmptyTopic).into(),
        );
        m.insert(
            "realm_welcome_message_custom_text".into(),
            p.welcome_message_custom_text.clone().into(),
        );
        m
    }
}

impl RealmProperty {
    /// The API name of the property.
    pub fn name(&self) -> &'static str {
        match self {
            RealmProperty::Name(_) => "name",
            RealmProperty::Description(_) => "description",
            RealmProperty::AllowMessageEditing(_) => "allow_message_editing",
            RealmProperty::Limit(l, _) => l.name(),
            RealmProperty::TopicsPolicy(_) => "topics_policy",
            RealmProperty::Flag(f, _) => f.name(),
            RealmProperty::WelcomeMessageCustomText(_) => "welcome_message_custom_text",
            RealmProperty::ModerationRequestChannel(_) => "moderation_request_channel_id",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse_as_zulip() {
        let p = |v: Value| LimitValue::parse("x", &v).and_then(|l| l.limit("x"));
        assert_eq!(p(json!(5)).ok(), Some(Some(5)));
        assert_eq!(p(json!("unlimited")).ok(), Some(None));
        let e = p(json!(0)).unwrap_err();
        assert_eq!(e.msg, "Bad value for 'x': 0");
        assert_eq!(e.code, ErrorCode::RequestVariableInvalid);
        assert_eq!(e.extra.get("bad_value"), Some(&json!(0)));
        assert_eq!(e.extra.get("var_name"), Some(&json!("x")));
        let e = p(json!("forever")).unwrap_err();
        assert_eq!(e.msg, "Bad value for 'x': forever");
        assert_eq!(e.extra.get("bad_value"), Some(&json!("forever")));
        assert_eq!(
            p(json!(1.5)).map_err(|e| e.msg),
            Err("x[\"int\"] is not an integer".into())
        );
        assert_eq!(
            p(json!(true)).map_err(|e| e.msg),
            Err("x[\"int\"] is not an integer".into())
        );
    }

    #[test]
    fn defaults_are_zulips() {
        let p = RealmProperties::default();
        assert_eq!(p.message_content_edit_limit_seconds, Some(600));
        assert_eq!(p.message_content_delete_limit_seconds, Some(600));
        assert_eq!(p.move_messages_within_stream_limit_seconds, Some(259_200));
        assert_eq!(p.move_messages_between_streams_limit_seconds, Some(259_200));
        assert!(p.allow_message_editing);
        assert_eq!(p.topics_policy, TopicsPolicy::AllowEmptyTopic);
    }

    #[test]
    fn lengths_count_characters() {
        assert!(check_length("name", "é".repeat(40), 40).is_ok());
        assert_eq!(
            check_length("name", "a".repeat(41), 40).map_err(|e| e.msg),
            Err("name is too long (limit: 40 characters)".into())
        );
    }
}
