//! Topics policies (Zulip's `topics_policy`, feature levels 392 and 404): whether a
//! channel's messages may, must not, or must go to the empty ("general chat") topic.
//!
//! The realm has a default (`allow_empty_topic` or `disable_empty_topic`, set by
//! `PATCH /realm`); each channel has its own, `inherit` (the realm's) unless set at
//! creation or by `PATCH /streams/{id}`. Zulip's `get_stream_topics_policy` resolves
//! the two (`Realm::topics_policy`), and every way a message reaches a topic checks it:
//! sends, scheduled messages (when scheduled, edited and delivered), and edits that move
//! messages (`Realm::check_topics_policy`, `Realm::check_move_topics_policy`).
//!
//! Who may set a channel's policy: Zulip's `validate_topics_policy` asks for
//! `can_set_topics_policy_group` (administrators always) for anything but `inherit`,
//! and `empty_topic_only` only for a channel whose messages are all in the empty topic
//! (the realm's topics per channel, no message scan). `PATCH /streams/{id}` asks first
//! for the channel's administration (`access_channel_for_admin`). A change tells the
//! channel through the Notification Bot (`do_set_stream_property`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::channels::Channel;
use super::groups::RealmSetting;
use super::messages::moves::{silent_mention, NOTIFICATION_BOT_ID};
use super::messages::MessageChange;
use super::{Change, Cx, Realm, User};
use crate::error::{ApiError, ApiResult};

/// Zulip's `StreamTopicsPolicyEnum` (a channel's values; the realm's are the middle
/// two, Zulip's `RealmTopicsPolicyEnum`). Stored by position: new values go last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum TopicsPolicy {
    /// The realm's policy (channels only).
    #[default]
    Inherit,
    AllowEmptyTopic,
    DisableEmptyTopic,
    /// Only the empty topic (channels only).
    EmptyTopicOnly,
}

impl TopicsPolicy {
    pub const ALL: [TopicsPolicy; 4] = [
        TopicsPolicy::Inherit,
        TopicsPolicy::AllowEmptyTopic,
        TopicsPolicy::DisableEmptyTopic,
        TopicsPolicy::EmptyTopicOnly,
    ];

    /// The API name.
    pub fn name(self) -> &'static str {
        match self {
            TopicsPolicy::Inherit => "inherit",
            TopicsPolicy::AllowEmptyTopic => "allow_empty_topic",
            TopicsPolicy::DisableEmptyTopic => "disable_empty_topic",
            TopicsPolicy::EmptyTopicOnly => "empty_topic_only",
        }
    }

    /// Zulip's stored value (`StreamTopicsPolicyEnum.value`), which `PATCH /realm`
    /// reports (see `Realm::decide_update_realm`).
    pub fn value(self) -> i64 {
        match self {
            TopicsPolicy::Inherit => 1,
            TopicsPolicy::AllowEmptyTopic => 2,
            TopicsPolicy::DisableEmptyTopic => 3,
            TopicsPolicy::EmptyTopicOnly => 4,
        }
    }

    /// Zulip's `parse_enum_from_string_value` over `StreamTopicsPolicyEnum`.
    pub fn parse_channel(s: &str) -> ApiResult<TopicsPolicy> {
        TopicsPolicy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(invalid)
    }

    /// The same over `RealmTopicsPolicyEnum` (`allow_empty_topic`, `disable_empty_topic`).
    pub fn parse_realm(s: &str) -> ApiResult<TopicsPolicy> {
        match TopicsPolicy::parse_channel(s)? {
            p @ (TopicsPolicy::AllowEmptyTopic | TopicsPolicy::DisableEmptyTopic) => Ok(p),
            _ => Err(invalid()),
        }
    }

    /// The JSON-encoded parameter of the creation endpoints (`Json[str | None]`, then
    /// the enum): `None` for JSON `null`.
    pub fn parse_json(v: &Value) -> ApiResult<Option<TopicsPolicy>> {
        match v {
            Value::Null => Ok(None),
            Value::String(s) => TopicsPolicy::parse_channel(s).map(Some),
            _ => Err(ApiError::bad_request("topics_policy is not a string")),
        }
    }

    /// How the channel-events notice names it (`TOPICS_POLICY_DISPLAY_NAME_MAP`).
    fn label(self, empty_topic: &str) -> String {
        match self {
            TopicsPolicy::Inherit => "Automatic".to_owned(),
            TopicsPolicy::AllowEmptyTopic => format!("*{empty_topic}* topic allowed"),
            TopicsPolicy::DisableEmptyTopic => format!("No *{empty_topic}* topic"),
            TopicsPolicy::EmptyTopicOnly => format!("Only *{empty_topic}* topic allowed"),
        }
    }
}

/// `Invalid topics_policy` (Zulip's `parse_enum_from_string_value`).
fn invalid() -> ApiError {
    ApiError::bad_request("Invalid topics_policy")
}

/// Zulip's `Realm.STREAM_EVENTS_NOTIFICATION_TOPIC_NAME`.
pub const CHANNEL_EVENTS_TOPIC: &str = "channel events";

impl Realm {
    /// The realm's default policy (`allow_empty_topic` or `disable_empty_topic`).
    pub fn realm_topics_policy(&self) -> TopicsPolicy {
        self.properties.topics_policy
    }

    /// Zulip's `get_stream_topics_policy`: the channel's, or the realm's for `inherit`.
    pub fn topics_policy(&self, ch: &Channel) -> TopicsPolicy {
        match ch.topics_policy {
            TopicsPolicy::Inherit => self.realm_topics_policy(),
            p => p,
        }
    }

    /// Zulip's `MessagesNotAllowedInEmptyTopicError`, naming the realm's empty topic.
    fn empty_topic_refused(&self) -> ApiError {
        ApiError::bad_request(format!(
            "Sending messages to the {} is not allowed in this channel.",
            self.settings.empty_topic_display_name
        ))
    }

    /// Zulip's `TopicsNotAllowedError`.
    fn named_topic_refused(&self) -> ApiError {
        ApiError::bad_request(format!(
            "Only the {} topic is allowed in this channel.",
            self.settings.empty_topic_display_name
        ))
    }

    /// A message to `topic` (normalized: "" is the empty topic) of `ch`, as
    /// `check_message` checks it for sends and scheduled messages: what a move there
    /// would meet.
    pub fn check_topics_policy(&self, ch: &Channel, topic: &str) -> ApiResult<()> {
        self.check_move_topics_policy(ch, topic, true)
    }

    /// An edit whose messages end in `topic` of `target`, as Zulip's
    /// `build_message_edit_request` checks it: the empty topic is refused only when the
    /// edit moves the messages (`moved`: a new topic or channel); a named topic in an
    /// `empty_topic_only` channel is refused by any edit.
    pub fn check_move_topics_policy(
        &self,
        target: &Channel,
        topic: &str,
        moved: bool,
    ) -> ApiResult<()> {
        match self.topics_policy(target) {
            TopicsPolicy::DisableEmptyTopic if topic.is_empty() && moved => {
                Err(self.empty_topic_refused())
            }
            TopicsPolicy::EmptyTopicOnly if !topic.is_empty() => Err(self.named_topic_refused()),
            _ => Ok(()),
        }
    }

    /// Zulip's `UserProfile.can_set_topics_policy`.
    pub fn can_set_topics_policy(&self, me: &User) -> bool {
        me.is_admin() || self.has_realm_permission(me, RealmSetting::CanSetTopicsPolicy)
    }

    /// Zulip's `validate_topics_policy`: `channel` is the one being edited (`None` at
    /// creation).
    pub fn check_set_topics_policy(
        &self,
        me: &User,
        policy: TopicsPolicy,
        channel: Option<&Channel>,
    ) -> ApiResult<()> {
        if policy != TopicsPolicy::Inherit && !self.can_set_topics_policy(me) {
            return Err(ApiError::bad_request("Insufficient permission"));
        }
        if let (TopicsPolicy::EmptyTopicOnly, Some(ch)) = (policy, channel) {
            if self.channel_has_named_topics(ch) {
                return Err(ApiError::bad_request(format!(
                    "To enable this configuration, all messages in this channel must be in \
                     the {} topic. Consider renaming or deleting other topics.",
                    self.settings.empty_topic_display_name
                )));
            }
        }
        Ok(())
    }

    /// Zulip's `channel_has_named_topics`, from the topics the realm keeps per channel.
    fn channel_has_named_topics(&self, ch: &Channel) -> bool {
        self.messages
            .topics
            .get(&ch.id)
            .is_some_and(|topics| topics.keys().any(|t| !t.is_empty()))
    }

    /// The Notification Bot's notice of `me` changing `ch`'s policy from `old` to `new`
    /// (`do_set_stream_property`), in the topic Zulip's `channel_events_topic_name`
    /// picks under the new policy. Its id is the realm's next message id.
    pub fn topics_policy_notice(
        &self,
        me: &User,
        ch: &Channel,
        old: TopicsPolicy,
        new: TopicsPolicy,
        cx: &mut Cx,
    ) -> Change {
        let empty = &self.settings.empty_topic_display_name;
        let content = format!(
            "{} changed the \"Allow posting to the *general chat* topic?\" setting from **{}** \
             to **{}**.",
            silent_mention(me),
            old.label(empty),
            new.label(empty)
        );
        let topic = if new == TopicsPolicy::EmptyTopicOnly {
            String::new()
        } else {
            CHANNEL_EVENTS_TOPIC.to_owned()
        };
        let message = self.bot_message(self.messages.next_id, ch.id, topic, content, cx.now_secs());
        // `internal_send_stream_message` without `mark_as_read_for_acting_user`: unread
        // for every recipient.
        Change::Message(MessageChange::Notice {
            message: Box::new(message),
            read_by: NOTIFICATION_BOT_ID,
            all_read: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_parse_as_zulip() {
        for p in TopicsPolicy::ALL {
            assert_eq!(TopicsPolicy::parse_channel(p.name()).ok(), Some(p));
        }
        assert_eq!(
            TopicsPolicy::parse_channel("bogus").map_err(|e| e.msg),
            Err("Invalid topics_policy".into())
        );
        assert!(TopicsPolicy::parse_realm("inherit").is_err());
        assert!(TopicsPolicy::parse_realm("empty_topic_only").is_err());
        assert_eq!(
            TopicsPolicy::parse_realm("disable_empty_topic").ok(),
            Some(TopicsPolicy::DisableEmptyTopic)
        );
        assert_eq!(TopicsPolicy::parse_json(&json!(null)).ok(), Some(None));
        assert_eq!(
            TopicsPolicy::parse_json(&json!(3)).map_err(|e| e.msg),
            Err("topics_policy is not a string".into())
        );
        assert_eq!(TopicsPolicy::default(), TopicsPolicy::Inherit);
    }

    #[test]
    fn labels_are_zulips() {
        let g = "general chat";
        assert_eq!(TopicsPolicy::Inherit.label(g), "Automatic");
        assert_eq!(
            TopicsPolicy::AllowEmptyTopic.label(g),
            "*general chat* topic allowed"
        );
        assert_eq!(
            TopicsPolicy::DisableEmptyTopic.label(g),
            "No *general chat* topic"
        );
        assert_eq!(
            TopicsPolicy::EmptyTopicOnly.label(g),
            "Only *general chat* topic allowed"
        );
    }
}
