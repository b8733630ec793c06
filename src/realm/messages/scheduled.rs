//! Scheduled messages (seed 4.2): create, list, edit, delete, and delivery by the realm
//! actor when they are due.
//!
//! Pending scheduled messages are realm state (small, in snapshots), with a due-time
//! index rebuilt on load. Delivery is a decision like any other: every second (or when
//! a test asks) the actor decides the due ones, each either `Sent` with
//! `ScheduledDelivered`, or `ScheduledFailed` when it can no longer be sent (archived
//! channel, deactivated recipient, lost permission, a topic the channel's topics policy
//! now refuses). One whose time passed while the server was down is delivered at the
//! first check after start, unless it is more than `LATE_CUTOFF_SECS` late: then it
//! fails, as in Zulip, rather than surprise its recipients with a stale message.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::fetch::MessageRows;
use super::send::{normalize_body, normalize_topic, Addressee, ChannelRef, SendRequest};
use super::{Message, MessageChange, MessageId};
use crate::error::{ApiError, ApiResult};
use crate::realm::channels::ChannelId;
use crate::realm::{Change, Cx, Decided, Realm, User, UserId};

pub type ScheduledId = u64;

/// Zulip's `SCHEDULED_MESSAGE_LATE_CUTOFF_MINUTES` (10): how late a scheduled message
/// may still be sent.
pub const LATE_CUTOFF_SECS: i64 = 10 * 60;

/// Where a scheduled message goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ScheduledTo {
    Channel {
        channel_id: ChannelId,
        topic: String,
    },
    /// The recipients as given (user ids, sender not added).
    Direct { users: Vec<UserId> },
}

/// A scheduled message, pending or failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduledMessage {
    pub id: ScheduledId,
    pub sender_id: UserId,
    pub to: ScheduledTo,
    pub content: String,
    pub rendered_content: String,
    /// UNIX seconds.
    pub deliver_at: i64,
    pub failed: bool,
    pub read_by_sender: bool,
}

/// `Scheduled message does not exist` (HTTP 404, code BAD_REQUEST).
pub fn scheduled_missing() -> ApiError {
    ApiError::new(
        404,
        crate::error::ErrorCode::BadRequest,
        "Scheduled message does not exist",
    )
}

/// Zulip's `DeliveryTimeNotInFutureError`.
pub fn not_in_future() -> ApiError {
    ApiError::bad_request("Scheduled delivery time must be in the future.")
}

/// The `to` of a channel message: one channel id.
pub fn channel_to(v: &Value) -> ApiResult<i64> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("to is not an integer")),
        Value::Array(items) if items.len() == 1 => channel_to(&items[0]),
        Value::Array(_) => Err(ApiError::bad_request("Invalid data type for channel ID")),
        _ => Err(ApiError::bad_request("to is not an integer")),
    }
}

/// The `to` of a direct message: user ids.
pub fn direct_to(v: &Value) -> ApiResult<Vec<i64>> {
    match v {
        Value::Number(n) => Ok(vec![n
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("to is not an integer"))?]),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_i64()
                    .ok_or_else(|| ApiError::bad_request(format!("to[{i}] is not an integer")))
            })
            .collect(),
        _ => Err(ApiError::bad_request("to is not a list")),
    }
}

/// Whether a type names channel messages (`stream`, `channel`) or direct ones. Zulip's
/// scheduled-message views check `type` with `check_string_in_validator`, whose
/// `ValueError` `typed_endpoint` words as "Invalid {var_name}: {msg}", pydantic's msg
/// being "Value error, Not in the list of possible values" (create and edit alike).
pub fn is_channel_type(t: &str) -> ApiResult<bool> {
    match t {
        "stream" | "channel" => Ok(true),
        "private" | "direct" => Ok(false),
        _ => Err(ApiError::bad_request(INVALID_TYPE)),
    }
}

/// The refusal of an unknown scheduled-message `type`.
pub const INVALID_TYPE: &str = "Invalid type: Value error, Not in the list of possible values";

/// `PATCH /scheduled_messages/{id}`: the scheduled message, as given, and the edit.
#[derive(Debug, Clone)]
pub struct ScheduleEdit {
    pub id: i64,
    pub request: ScheduleRequest,
}

/// `DELETE /scheduled_messages/{id}`, the id as given.
#[derive(Debug, Clone, Copy)]
pub struct DeleteScheduled {
    pub id: i64,
}

/// A create or an edit, parsed on the worker.
#[derive(Debug, Clone, Default)]
pub struct ScheduleRequest {
    /// `Some(true)`: channel; `Some(false)`: direct.
    pub channel_type: Option<bool>,
    pub to: Option<Value>,
    pub topic: Option<String>,
    pub content: Option<String>,
    pub deliver_at: Option<i64>,
    pub read_by_sender: bool,
    /// The content the message will have and its HTML, rendered on the HTTP worker
    /// (`prerender_scheduled`) so the actor renders no Markdown; the rule renders again
    /// only when the content it decides differs (a concurrent edit).
    pub rendered: Option<(String, String)>,
}

impl Realm {
    /// On the worker, against the published version: the normalized content a
    /// scheduled create (`id` `None`) or edit of `me`'s message `id` will store, and
    /// its HTML. `None` when the content is refused (the rule says why).
    pub fn prerender_scheduled(
        &self,
        me: &User,
        id: Option<i64>,
        r: &ScheduleRequest,
    ) -> Option<(String, String)> {
        let raw = match (&r.content, id) {
            (Some(c), _) => c.clone(),
            (None, Some(id)) => u64::try_from(id)
                .ok()
                .and_then(|id| self.messages.scheduled.get(&id))
                .filter(|s| s.sender_id == me.id)?
                .content
                .clone(),
            (None, None) => return None,
        };
        let content = normalize_body(&raw).ok()?;
        let html = self.render_message(&content).html;
        Some((content, html))
    }

    /// The HTML of `content`: the worker's rendering when it rendered the same content.
    fn scheduled_html(&self, content: &str, rendered: &Option<(String, String)>) -> String {
        match rendered {
            Some((c, html)) if c == content => html.clone(),
            _ => self.render_message(content).html,
        }
    }

    /// Checks a destination and content as a send would (`check_message`), returning
    /// the destination.
    fn check_scheduled(
        &self,
        me: &User,
        rows: &dyn MessageRows,
        channel: bool,
        to: &Value,
        topic: Option<&str>,
        content: &str,
    ) -> ApiResult<(ScheduledTo, String)> {
        if channel {
            let id = channel_to(to)?;
            let Some(topic) = topic else {
                return Err(ApiError::bad_request("Missing topic"));
            };
            let topic = normalize_topic(self, topic)?;
            let content = normalize_body(content)?;
            let ch = self.channel_for_send(me, &ChannelRef::Id(id))?;
            self.check_can_post(me, ch)?;
            self.check_topics_policy(ch, &topic)?;
            Ok((
                ScheduledTo::Channel {
                    channel_id: ch.id,
                    topic,
                },
                content,
            ))
        } else {
            let ids = direct_to(to)?;
            if ids.is_empty() {
                return Err(ApiError::bad_request("Message must have recipients"));
            }
            self.lookup_direct_recipients(&ids, &[])?;
            let content = normalize_body(content)?;
            let participants = self.direct_recipients(me, &ids, &[])?;
            self.check_can_send_direct(me, &participants, rows)?;
            let mut users: Vec<UserId> = ids.iter().map(|i| *i as UserId).collect();
            users.sort_unstable();
            users.dedup();
            Ok((ScheduledTo::Direct { users }, content))
        }
    }

    /// `POST /scheduled_messages`: answers the new scheduled message's id.
    pub fn decide_schedule(
        &self,
        me: &User,
        r: ScheduleRequest,
        cx: &mut Cx,
    ) -> ApiResult<Decided<ScheduledId>> {
        let rows = cx.rows()?;
        let deliver_at = r.deliver_at.unwrap_or_default();
        if deliver_at <= cx.now_secs() {
            return Err(not_in_future());
        }
        let to = r.to.clone().unwrap_or(Value::Null);
        let (to, content) = self.check_scheduled(
            me,
            rows,
            r.channel_type.unwrap_or(false),
            &to,
            r.topic.as_deref(),
            r.content.as_deref().unwrap_or_default(),
        )?;
        let s = ScheduledMessage {
            id: self.messages.next_scheduled_id.max(1),
            sender_id: me.id,
            rendered_content: self.scheduled_html(&content, &r.rendered),
            to,
            content,
            deliver_at,
            failed: false,
            read_by_sender: r.read_by_sender,
        };
        let id = s.id;
        Ok(Decided::new(
            vec![Change::Message(MessageChange::ScheduledCreated(s))],
            id,
        ))
    }

    /// `PATCH /scheduled_messages/{id}`, in Zulip's check order.
    pub fn decide_schedule_edit(
        &self,
        me: &User,
        q: ScheduleEdit,
        cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let (id, r) = (q.id, &q.request);
        if r.channel_type.is_none()
            && r.to.is_none()
            && r.topic.is_none()
            && r.content.is_none()
            && r.deliver_at.is_none()
        {
            return Err(ApiError::bad_request("Nothing to change"));
        }
        if r.channel_type.is_some() && r.to.is_none() {
            return Err(ApiError::bad_request(
                "Recipient required when updating type of scheduled message.",
            ));
        }
        if r.channel_type == Some(true) && r.topic.is_none() {
            return Err(ApiError::bad_request(
                "Topic required when updating scheduled message type to channel.",
            ));
        }
        if r.deliver_at.is_some_and(|t| t <= cx.now_secs()) {
            return Err(not_in_future());
        }
        let old = u64::try_from(id)
            .ok()
            .and_then(|id| self.messages.scheduled.get(&id))
            .filter(|s| s.sender_id == me.id)
            .ok_or_else(scheduled_missing)?;
        if old.failed && r.deliver_at.is_none() {
            return Err(not_in_future());
        }
        let was_channel = matches!(old.to, ScheduledTo::Channel { .. });
        let channel = r.channel_type.unwrap_or(was_channel);
        let to = match &r.to {
            Some(v) => v.clone(),
            None => match &old.to {
                ScheduledTo::Channel { channel_id, .. } => json!(channel_id),
                ScheduledTo::Direct { users } => json!(users),
            },
        };
        // A topic is ignored for direct messages.
        let topic = if channel {
            r.topic.clone().or_else(|| match &old.to {
                ScheduledTo::Channel { topic, .. } => Some(topic.clone()),
                ScheduledTo::Direct { .. } => None,
            })
        } else {
            None
        };
        let content = r.content.clone().unwrap_or_else(|| old.content.clone());
        let (to, content) =
            self.check_scheduled(me, cx.rows()?, channel, &to, topic.as_deref(), &content)?;
        let s = ScheduledMessage {
            id: old.id,
            sender_id: me.id,
            rendered_content: self.scheduled_html(&content, &r.rendered),
            to,
            content,
            deliver_at: r.deliver_at.unwrap_or(old.deliver_at),
            failed: false,
            read_by_sender: old.read_by_sender,
        };
        Ok(Decided::changes(vec![Change::Message(
            MessageChange::ScheduledUpdated(s),
        )]))
    }

    /// `DELETE /scheduled_messages/{id}`.
    pub fn decide_schedule_delete(
        &self,
        me: &User,
        q: DeleteScheduled,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let id = u64::try_from(q.id)
            .ok()
            .and_then(|id| self.messages.scheduled.get(&id))
            .filter(|s| s.sender_id == me.id)
            .map(|s| s.id)
            .ok_or_else(scheduled_missing)?;
        Ok(Decided::changes(vec![Change::Message(
            MessageChange::ScheduledDeleted { id },
        )]))
    }

    /// The due scheduled messages, decided: each sent, or failed.
    pub fn decide_due_scheduled(&self, cx: &mut Cx, rows: &dyn MessageRows) -> Vec<Change> {
        let now = cx.now_secs();
        let mut out = Vec::new();
        let mut next_id: MessageId = self.messages.next_id;
        let mut next_delivery = self.bot_services.outbox.next_id;
        let mut next_mail = self.missed_mail.next_id;
        let due: Vec<ScheduledId> = self
            .messages
            .due
            .range(..=(now, u64::MAX))
            .map(|(_, id)| *id)
            .collect();
        for id in due {
            let Some(s) = self.messages.scheduled.get(&id) else {
                continue;
            };
            if s.failed {
                continue;
            }
            if now > s.deliver_at + LATE_CUTOFF_SECS {
                tracing::info!("scheduled message {id} is too late to be sent");
                out.push(Change::Message(MessageChange::ScheduledFailed { id }));
                continue;
            }
            match self.deliver(s, cx, rows) {
                Ok((mut m, mentioned)) => {
                    m.id = next_id;
                    next_id += 1;
                    let message_id = m.id;
                    // As a send does (Zulip's `do_claim_attachments`): the uploads the
                    // message links, that its sender may read, now belong to it.
                    let claims = self
                        .user(s.sender_id)
                        .map(|me| self.claim_uploads(rows, me, &m))
                        .unwrap_or_default();
                    // A message to the Welcome Bot gets its answer, as a send does, and
                    // outgoing-webhook bots it mentions or is sent to get it.
                    let reply = self.welcome_bot_reply(&m, now);
                    let deliveries = self
                        .user(s.sender_id)
                        .map(|me| {
                            self.service_deliveries(&m, me, &mentioned, now, &mut next_delivery)
                        })
                        .unwrap_or_default();
                    let mails = self.missed_mail_for(&m, now, &mut next_mail);
                    out.push(Change::Message(MessageChange::Sent(Box::new(m))));
                    out.extend(claims);
                    out.extend(deliveries);
                    out.extend(mails);
                    out.push(Change::Message(MessageChange::ScheduledDelivered {
                        id,
                        message_id,
                    }));
                    if let Some(reply) = reply {
                        next_id += 1;
                        out.push(reply);
                    }
                }
                Err(e) => {
                    tracing::info!("scheduled message {id} cannot be delivered: {}", e.msg);
                    out.push(Change::Message(MessageChange::ScheduledFailed { id }));
                }
            }
        }
        out
    }

    /// The message a scheduled message becomes, and the users its rendering mentions.
    fn deliver(
        &self,
        s: &ScheduledMessage,
        cx: &Cx,
        rows: &dyn MessageRows,
    ) -> ApiResult<(Message, Vec<UserId>)> {
        let me = self
            .user(s.sender_id)
            .filter(|u| u.is_active)
            .ok_or_else(|| ApiError::bad_request("sender deactivated"))?;
        let to = match &s.to {
            ScheduledTo::Channel { channel_id, topic } => Addressee::Channel {
                channel: ChannelRef::Id(*channel_id as i64),
                topic: topic.clone(),
            },
            ScheduledTo::Direct { users } => Addressee::Direct {
                ids: users.iter().map(|u| *u as i64).collect(),
                emails: Vec::new(),
            },
        };
        let rendered = self.render_message(&s.content);
        let mentioned = rendered.mentioned.clone();
        let m = self.send_row(
            me,
            SendRequest {
                to,
                rendered,
                content: s.content.clone(),
                client: "Scheduled message".into(),
                read_by_sender: s.read_by_sender,
                // Topic participants are not read at delivery (a scan of the topic on
                // the actor): a topic wildcard counts the sender only.
                topic_participants: Vec::new(),
            },
            cx,
            rows,
        )?;
        Ok((m, mentioned))
    }

    /// A scheduled message as the API shows it, the empty topic as `""` when
    /// `allow_empty_topic_name` (the `empty_topic_name` capability), else by the realm's
    /// display name.
    pub fn scheduled_json(&self, s: &ScheduledMessage, allow_empty_topic_name: bool) -> Value {
        let mut o = serde_json::Map::new();
        o.insert("scheduled_message_id".into(), s.id.into());
        match &s.to {
            ScheduledTo::Channel { channel_id, topic } => {
                o.insert("type".into(), "stream".into());
                o.insert("to".into(), (*channel_id).into());
                o.insert(
                    "topic".into(),
                    self.topic_for_client(topic, allow_empty_topic_name).into(),
                );
            }
            ScheduledTo::Direct { users } => {
                o.insert("type".into(), "private".into());
                o.insert("to".into(), users.clone().into());
            }
        }
        o.insert("content".into(), s.content.clone().into());
        o.insert("rendered_content".into(), s.rendered_content.clone().into());
        o.insert("scheduled_delivery_timestamp".into(), s.deliver_at.into());
        o.insert("failed".into(), s.failed.into());
        Value::Object(o)
    }

    /// The topic of a scheduled channel message (for `Event::with_topics`).
    pub fn scheduled_topic(s: &ScheduledMessage) -> &str {
        match &s.to {
            ScheduledTo::Channel { topic, .. } => topic,
            ScheduledTo::Direct { .. } => "-",
        }
    }

    /// A user's pending and failed scheduled messages, by delivery time.
    pub fn view_scheduled(&self, me: &User, allow_empty_topic_name: bool) -> Vec<Value> {
        let mut mine: Vec<&ScheduledMessage> = self
            .messages
            .scheduled
            .values()
            .filter(|s| s.sender_id == me.id)
            .collect();
        mine.sort_by_key(|s| (s.deliver_at, s.id));
        mine.into_iter()
            .map(|s| self.scheduled_json(s, allow_empty_topic_name))
            .collect()
    }
}
