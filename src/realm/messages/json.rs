//! Messages as Zulip's API shows them (`MessageDict`), and their edit history.

use serde_json::{json, Map, Value};

use super::{flags, Message, Recipient};
use crate::realm::users::gravatar_url;
use crate::realm::{Realm, UserId};

/// How a client asked for messages.
#[derive(Debug, Clone, Copy)]
pub struct MessageView {
    /// HTML content (`true`, the default) or raw Markdown.
    pub apply_markdown: bool,
    /// `avatar_url` null where the client can compute a gravatar itself.
    pub client_gravatar: bool,
    /// Empty topics as "" (`true`) or as the realm's display name.
    pub allow_empty_topic_name: bool,
}

impl Default for MessageView {
    fn default() -> Self {
        MessageView {
            apply_markdown: true,
            client_gravatar: false,
            allow_empty_topic_name: false,
        }
    }
}

/// A stable recipient id: channels by id, a user's personal recipient, and a
/// conversation of several users by a hash of its members.
pub fn recipient_id(m: &Message) -> u64 {
    match &m.recipient {
        Recipient::Channel { channel_id, .. } => *channel_id,
        Recipient::Direct { users } if users.len() <= 2 => {
            let other = users
                .iter()
                .copied()
                .find(|u| *u != m.sender_id)
                .unwrap_or(m.sender_id);
            (1 << 32) | other
        }
        Recipient::Direct { users } => {
            // FNV-1a over the member ids: stable across restarts and versions.
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for u in users {
                for b in u.to_be_bytes() {
                    h ^= u64::from(b);
                    h = h.wrapping_mul(0x0100_0000_01b3);
                }
            }
            (2 << 32) | (h & 0xFFFF_FFFF)
        }
    }
}

impl Realm {
    /// A topic as a client sees it: the empty topic as the realm's display name unless
    /// the client handles empty topics.
    pub fn topic_for_client(&self, topic: &str, allow_empty: bool) -> String {
        if topic.is_empty() && !allow_empty {
            self.settings.empty_topic_display_name.clone()
        } else {
            topic.to_owned()
        }
    }

    fn avatar_of(&self, user: UserId, view: MessageView) -> Value {
        match self.message_sender(user) {
            Some(u) if view.client_gravatar && self.email_is_public(u) => Value::Null,
            Some(u) => gravatar_url(&u.delivery_email, u.avatar_version).into(),
            None => Value::Null,
        }
    }

    /// `display_recipient`: the channel name, or the conversation's users.
    pub fn display_recipient(&self, m: &Message) -> Value {
        match &m.recipient {
            Recipient::Channel { channel_id, .. } => self
                .channel(*channel_id)
                .map(|c| Value::from(c.name.clone()))
                .unwrap_or(Value::Null),
            Recipient::Direct { users } => users
                .iter()
                .filter_map(|id| self.message_sender(*id))
                .map(|u| {
                    json!({"id": u.id, "email": self.api_email(u), "full_name": u.full_name,
                           "is_mirror_dummy": false})
                })
                .collect(),
        }
    }

    /// A message as the API shows it, in Zulip's key order; `flags` (per user) only
    /// when given (events carry them beside the message).
    pub fn message_json(
        &self,
        m: &Message,
        view: MessageView,
        user_flags: Option<Vec<&str>>,
    ) -> Map<String, Value> {
        let sender = self.message_sender(m.sender_id);
        let mut o = Map::new();
        o.insert("id".into(), m.id.into());
        o.insert("sender_id".into(), m.sender_id.into());
        if view.apply_markdown {
            o.insert("content".into(), m.rendered_content.clone().into());
        } else {
            o.insert("content".into(), m.content.clone().into());
        }
        o.insert("recipient_id".into(), recipient_id(m).into());
        o.insert("timestamp".into(), m.timestamp.into());
        o.insert("client".into(), m.client.clone().into());
        let topic = m.recipient.topic().unwrap_or_default();
        o.insert(
            "subject".into(),
            match m.recipient {
                Recipient::Channel { .. } => {
                    self.topic_for_client(topic, view.allow_empty_topic_name)
                }
                Recipient::Direct { .. } => String::new(),
            }
            .into(),
        );
        o.insert("topic_links".into(), json!([]));
        if let Some(t) = m.last_edit_timestamp {
            o.insert("last_edit_timestamp".into(), t.into());
        }
        o.insert("is_me_message".into(), m.is_me_message.into());
        o.insert(
            "reactions".into(),
            m.reactions
                .iter()
                .map(|r| {
                    json!({"emoji_name": r.emoji_name, "emoji_code": r.emoji_code,
                           "reaction_type": r.reaction_type, "user_id": r.user_id})
                })
                .collect(),
        );
        o.insert("submessages".into(), json!([]));
        if let Some(f) = user_flags {
            o.insert("flags".into(), f.into());
        }
        if let Some(t) = m.last_moved_timestamp {
            o.insert("last_moved_timestamp".into(), t.into());
        }
        o.insert(
            "sender_full_name".into(),
            sender
                .map(|u| u.full_name.clone())
                .unwrap_or_default()
                .into(),
        );
        o.insert(
            "sender_email".into(),
            sender.map(|u| self.api_email(u)).unwrap_or_default().into(),
        );
        let sender_realm = if super::moves::is_system_bot(m.sender_id) {
            super::moves::SYSTEM_BOT_REALM
        } else {
            self.settings.subdomain.as_str()
        };
        o.insert("sender_realm_str".into(), sender_realm.into());
        o.insert("display_recipient".into(), self.display_recipient(m));
        match &m.recipient {
            Recipient::Channel { channel_id, .. } => {
                o.insert("type".into(), "stream".into());
                o.insert("stream_id".into(), (*channel_id).into());
            }
            Recipient::Direct { .. } => {
                o.insert("type".into(), "private".into());
            }
        }
        o.insert("avatar_url".into(), self.avatar_of(m.sender_id, view));
        o.insert(
            "content_type".into(),
            if view.apply_markdown {
                "text/html"
            } else {
                "text/x-markdown"
            }
            .into(),
        );
        o
    }

    /// A message with the viewer's flags (absent: read and historical).
    pub fn message_json_for(
        &self,
        m: &Message,
        user_flags: Option<u32>,
        view: MessageView,
    ) -> Value {
        let bits = user_flags.unwrap_or(flags::READ | flags::HISTORICAL);
        Value::Object(self.message_json(m, view, Some(flags::names(bits))))
    }
}
