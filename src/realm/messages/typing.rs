//! `POST /typing` and `POST /messages/{id}/typing`: typing notifications are events only. Nothing is stored and the
//! realm actor is not involved: the event is decided on the worker against the
//! published version and published at once.

use serde_json::{json, Value};

use super::fetch::MessageRows;
use super::Recipient;
use crate::error::{ApiError, ApiResult};
use crate::realm::events::{Audience, Event};
use crate::realm::settings::MessageLimit;
use crate::realm::{Realm, User};

/// A typing notification, parsed on the worker (`op` is `start` or `stop`).
#[derive(Debug, Clone, PartialEq)]
pub struct TypingRequest {
    pub op: String,
    pub to: TypingTo,
}

/// Where someone types.
#[derive(Debug, Clone, PartialEq)]
pub enum TypingTo {
    /// User ids, as given (not empty).
    Direct(Vec<i64>),
    Channel {
        stream_id: i64,
        topic: String,
    },
}

impl Realm {
    /// The typing event of `me`: to the conversation's participants, or to the
    /// channel's subscribers that asked for channel typing notifications.
    pub fn typing_event(&self, me: &User, q: TypingRequest) -> ApiResult<Event> {
        let sender = json!({"user_id": me.id, "email": self.api_email(me)});
        let op = q.op;
        match q.to {
            TypingTo::Direct(to) => {
                let mut users = Vec::new();
                for id in &to {
                    let user = u64::try_from(*id)
                        .ok()
                        .and_then(|id| self.user(id))
                        .ok_or_else(|| ApiError::bad_request(format!("Invalid user ID {id}")))?;
                    users.push(user);
                }
                let mut ids: Vec<u64> = users.iter().map(|u| u.id).collect();
                ids.push(me.id);
                let recipients: Vec<Value> = {
                    let mut all: Vec<&User> = users.clone();
                    all.push(me);
                    all.sort_by_key(|u| u.id);
                    all.dedup_by_key(|u| u.id);
                    all.iter()
                        .map(|u| json!({"user_id": u.id, "email": self.api_email(u)}))
                        .collect()
                };
                Ok(Event::new(
                    json!({"type": "typing", "op": op, "message_type": "direct",
                           "sender": sender, "recipients": recipients}),
                    Audience::users(ids),
                ))
            }
            TypingTo::Channel { stream_id, topic } => {
                let ch = self.access_channel(me, stream_id)?;
                Ok(Event::new(
                    json!({"type": "typing", "op": op, "message_type": "stream",
                           "sender": sender, "stream_id": ch.id, "topic": topic}),
                    Audience::users(ch.subscriber_ids()),
                )
                .for_capability("stream_typing_notifications", true)
                .with_topics(self, &[topic.as_str()]))
            }
        }
    }
}

/// `POST /messages/{message_id}/typing`: someone starts or stops editing a message.
#[derive(Debug, Clone, PartialEq)]
pub struct EditTypingRequest {
    pub message_id: i64,
    /// `start` or `stop`.
    pub op: String,
}

impl Realm {
    /// Zulip's `send_message_edit_notification_backend`: `access_message` (as for an
    /// edit: not in an archived channel), `validate_user_can_edit_message` without the
    /// grace period, then the `typing_edit_message` event to the channel's active
    /// subscribers or the conversation's active participants.
    pub fn typing_edit_event(
        &self,
        rows: &dyn MessageRows,
        me: &User,
        q: EditTypingRequest,
        now: i64,
    ) -> ApiResult<Event> {
        let (m, _) = self.access_message(rows, me, q.message_id)?;
        if let Some(ch) = m.recipient.channel().and_then(|c| self.channel(c)) {
            if ch.is_archived {
                return Err(ApiError::bad_request("Invalid message(s)"));
            }
        }
        if !self.properties.allow_message_editing {
            return Err(ApiError::bad_request(
                "Your organization has turned off message editing",
            ));
        }
        if m.sender_id != me.id {
            return Err(ApiError::bad_request(
                "You don't have permission to edit this message",
            ));
        }
        if let Some(limit) = self.message_limit(MessageLimit::ContentEdit) {
            if now - m.timestamp > limit {
                return Err(ApiError::bad_request(
                    "The time limit for editing this message has passed",
                ));
            }
        }
        let active = |id: &u64| self.user(*id).is_some_and(|u| u.is_active);
        let (recipient, audience) = match &m.recipient {
            Recipient::Channel { channel_id, topic } => {
                let subscribers = self
                    .channel(*channel_id)
                    .map(|c| c.subscriber_ids())
                    .unwrap_or_default()
                    .into_iter()
                    .filter(active)
                    .collect::<Vec<_>>();
                (
                    json!({"type": "channel", "channel_id": channel_id, "topic": topic}),
                    subscribers,
                )
            }
            Recipient::Direct { users } => {
                // Zulip's personal recipient lists the sender then the other user (the
                // sender twice in a conversation with oneself); a group lists its members.
                let ids: Vec<u64> = if users.len() <= 2 {
                    let other = users.iter().copied().find(|u| *u != me.id).unwrap_or(me.id);
                    vec![me.id, other]
                } else {
                    users.clone()
                };
                let notify: Vec<u64> = ids.into_iter().filter(active).collect();
                (
                    json!({"type": "direct", "user_ids": notify}),
                    notify.clone(),
                )
            }
        };
        Ok(Event::new(
            json!({"type": "typing_edit_message", "op": q.op, "sender_id": me.id,
                   "message_id": m.id, "recipient": recipient}),
            Audience::users(audience),
        ))
    }
}
