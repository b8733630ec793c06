//! `POST /typing`: typing notifications are events only. Nothing is stored and the
//! realm actor is not involved: the event is decided on the worker against the
//! published version and published at once.

use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
use crate::realm::events::{Audience, Event};
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
                .for_capability("stream_typing_notifications", true))
            }
        }
    }
}
