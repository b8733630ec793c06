//! Message reminders (Zulip's `zerver/actions/reminders.py`, `zerver/lib/reminders.py`,
//! `zerver/views/reminders.py`): a user asks to be reminded of a message they can read;
//! when the time comes, the Notification Bot sends them a direct message about it.
//!
//! Zulip keeps reminders as scheduled messages of another type; hearth keeps them apart
//! (`Realm::reminders`), with their own due-time index rebuilt on load, and delivers
//! them in the same tick as scheduled messages (`decide_due_reminders`). Unlike a
//! scheduled message a reminder has no late cutoff: one whose time passed while the
//! server was down is delivered at the first tick after start. The reminder's text is
//! written when it is created (what `GET /reminders` shows) and written again at
//! delivery from the message as it is then, unless the user can no longer read it.

use imbl::{OrdMap, OrdSet};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::fetch::MessageRows;
use super::moves::{silent_mention, topic_link_syntax, NOTIFICATION_BOT_ID};
use super::scheduled::not_in_future;
use super::send::{truncate, MAX_MESSAGE_LENGTH};
use super::{Message, MessageChange, MessageId, Recipient};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::realm::events::{Audience, Event};
use crate::realm::{Change, Cx, Decided, PersonalChange, Realm, User, UserId};

pub type ReminderId = u64;

/// Zulip's `MAX_REMINDER_NOTE_LENGTH` (`max_reminder_note_length` in `/register`).
pub const MAX_REMINDER_NOTE_LENGTH: usize = 1000;

/// A pending reminder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reminder {
    pub id: ReminderId,
    /// Who asked, and who is reminded.
    pub user_id: UserId,
    /// The message it is about.
    pub message_id: MessageId,
    /// The user's note, normalized (`None`: none or blank).
    pub note: Option<String>,
    /// The reminder's text as written at creation, and its HTML.
    pub content: String,
    pub rendered_content: String,
    /// UNIX seconds.
    pub deliver_at: i64,
}

impl Reminder {
    /// Zulip's reminder object (`get_undelivered_reminders`).
    pub fn json(&self) -> Value {
        json!({
            "reminder_id": self.id,
            "type": "private",
            "to": [self.user_id],
            "content": self.content,
            "rendered_content": self.rendered_content,
            "scheduled_delivery_timestamp": self.deliver_at,
            "failed": false,
            "reminder_target_message_id": self.message_id,
        })
    }
}

/// The realm's pending reminders.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReminderState {
    pub by_id: OrdMap<ReminderId, Reminder>,
    /// The id the next reminder gets (0 reads as 1).
    pub next_id: ReminderId,
    /// Pending reminders by delivery time. Derived from `by_id`; rebuilt after loading.
    #[serde(skip)]
    pub due: OrdSet<(i64, ReminderId)>,
    /// Each user's pending reminders. Derived from `by_id`; rebuilt after loading.
    #[serde(skip)]
    of_user: OrdMap<UserId, OrdSet<ReminderId>>,
}

impl ReminderState {
    /// Rebuilds the due-time and per-user indexes after loading.
    pub fn rebuild_due(&mut self) {
        self.due = self.by_id.values().map(|r| (r.deliver_at, r.id)).collect();
        self.of_user = OrdMap::new();
        for r in self.by_id.values() {
            self.of_user.entry(r.user_id).or_default().insert(r.id);
        }
    }

    /// A user's pending reminders.
    pub fn of_user(&self, user: UserId) -> impl Iterator<Item = &Reminder> {
        self.of_user
            .get(&user)
            .into_iter()
            .flatten()
            .filter_map(|id| self.by_id.get(id))
    }

    fn add(&mut self, r: &Reminder) {
        self.next_id = self.next_id.max(r.id + 1);
        self.due.insert((r.deliver_at, r.id));
        self.of_user.entry(r.user_id).or_default().insert(r.id);
        self.by_id.insert(r.id, r.clone());
    }

    fn remove(&mut self, id: ReminderId) {
        if let Some(r) = self.by_id.remove(&id) {
            self.due.remove(&(r.deliver_at, r.id));
            if let Some(mine) = self.of_user.get_mut(&r.user_id) {
                mine.remove(&id);
                if mine.is_empty() {
                    self.of_user.remove(&r.user_id);
                }
            }
        }
    }
}

/// `POST /reminders`, parsed; `prepared` is the text and HTML the worker wrote.
#[derive(Debug, Clone)]
pub struct CreateReminder {
    pub message_id: i64,
    pub deliver_at: i64,
    pub note: Option<String>,
    pub prepared: Option<(String, String)>,
}

/// `DELETE /reminders/{reminder_id}`.
#[derive(Debug, Clone, Copy)]
pub struct DeleteReminder {
    pub id: i64,
}

/// Zulip's `access_reminder` refusal (HTTP 404, code `BAD_REQUEST`).
pub fn reminder_missing() -> ApiError {
    ApiError::new(404, ErrorCode::BadRequest, "Reminder does not exist")
}

/// Zulip's `normalize_note_text`: trailing whitespace and leading newlines go; too
/// long is refused. A blank note is no note.
pub fn normalize_note(raw: &str) -> ApiResult<Option<String>> {
    let note = raw.trim_end().trim_start_matches('\n');
    if note.chars().count() > MAX_REMINDER_NOTE_LENGTH {
        return Err(ApiError::bad_request(format!(
            "Maximum reminder note length: {MAX_REMINDER_NOTE_LENGTH} characters"
        )));
    }
    Ok((!note.is_empty()).then(|| note.to_owned()))
}

/// A code fence longer than any run of backticks in `s` (Zulip's `get_unused_fence`).
fn unused_fence(s: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

impl Realm {
    /// The reminder's text for `me` about message `m`: where the message is, who sent
    /// it, the note, then the message quoted (cut to fit a message).
    pub fn reminder_content(&self, m: &Message, note: Option<&str>) -> String {
        let sender = self
            .message_sender(m.sender_id)
            .map(silent_mention)
            .unwrap_or_default();
        let place = match &m.recipient {
            Recipient::Channel { channel_id, topic } => {
                let name = self
                    .channel(*channel_id)
                    .map(|c| c.name.as_str())
                    .unwrap_or_default();
                format!("in {}", topic_link_syntax(self, *channel_id, name, topic))
            }
            Recipient::Direct { .. } => "in a direct message".to_owned(),
        };
        let mut head = format!(
            "Reminder: [a message](#narrow/id/{}) {sender} sent {place}.",
            m.id
        );
        if let Some(note) = note {
            head.push_str("\n\n**Your note:** ");
            head.push_str(note);
        }
        head.push_str("\n\n");
        let fence = unused_fence(&format!("{head}{}", m.content));
        let frame = format!("{fence}quote\n\n{fence}");
        let room = MAX_MESSAGE_LENGTH.saturating_sub(head.chars().count() + frame.chars().count());
        let quoted = truncate(&m.content, room, "\n[message truncated]");
        format!("{head}{fence}quote\n{quoted}\n{fence}")
    }

    /// On the worker, against the published version: the text and HTML a reminder
    /// about message `id` would have now (`None` when the rule will refuse it).
    pub fn prerender_reminder(
        &self,
        rows: &dyn MessageRows,
        me: &User,
        q: &CreateReminder,
    ) -> Option<(String, String)> {
        let (m, _) = self.access_message(rows, me, q.message_id).ok()?;
        let note = q
            .note
            .as_deref()
            .map(normalize_note)
            .transpose()
            .ok()?
            .flatten();
        let content = self.reminder_content(&m, note.as_deref());
        let html = self.render_message(&content).html;
        Some((content, html))
    }

    /// `me`'s pending reminders, by delivery time (`GET /reminders`, `/register`).
    pub fn view_reminders(&self, me: &User) -> Vec<Value> {
        let mut mine: Vec<&Reminder> = self.reminders.of_user(me.id).collect();
        mine.sort_by_key(|r| (r.deliver_at, r.id));
        mine.into_iter().map(Reminder::json).collect()
    }

    /// `POST /reminders`, in Zulip's order: the time, access to the message, the note.
    pub fn decide_create_reminder(
        &self,
        me: &User,
        q: CreateReminder,
        cx: &mut Cx,
    ) -> ApiResult<Decided<ReminderId>> {
        if q.deliver_at <= cx.now_secs() {
            return Err(not_in_future());
        }
        let (m, _) = self.access_message(cx.rows()?, me, q.message_id)?;
        let note = q.note.as_deref().map(normalize_note).transpose()?.flatten();
        let content = self.reminder_content(&m, note.as_deref());
        let rendered_content = match q.prepared {
            Some((c, html)) if c == content => html,
            _ => self.render_message(&content).html,
        };
        let reminder = Reminder {
            id: self.reminders.next_id.max(1),
            user_id: me.id,
            message_id: m.id,
            note,
            content,
            rendered_content,
            deliver_at: q.deliver_at,
        };
        let id = reminder.id;
        Ok(Decided::new(
            vec![Change::Personal(PersonalChange::ReminderAdded {
                user_id: me.id,
                reminder,
            })],
            id,
        ))
    }

    /// `DELETE /reminders/{reminder_id}`.
    pub fn decide_delete_reminder(
        &self,
        me: &User,
        q: DeleteReminder,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let reminder_id = u64::try_from(q.id)
            .ok()
            .and_then(|id| self.reminders.by_id.get(&id))
            .filter(|r| r.user_id == me.id)
            .map(|r| r.id)
            .ok_or_else(reminder_missing)?;
        Ok(Decided::changes(vec![Change::Personal(
            PersonalChange::ReminderRemoved {
                user_id: me.id,
                reminder_id,
            },
        )]))
    }

    /// The due reminders, decided: each is the Notification Bot's direct message to its
    /// user (as message `first_id`, `first_id + 1`, ...) and the reminder's removal. A
    /// reminder whose user was deactivated is removed without a message, as Zulip's
    /// internal send to a deactivated user sends none.
    pub fn decide_due_reminders(
        &self,
        cx: &mut Cx,
        rows: &dyn MessageRows,
        first_id: MessageId,
    ) -> Vec<Change> {
        let now = cx.now_secs();
        let mut out = Vec::new();
        let mut next_id = first_id;
        let due: Vec<ReminderId> = self
            .reminders
            .due
            .range(..=(now, u64::MAX))
            .map(|(_, id)| *id)
            .collect();
        for id in due {
            let Some(r) = self.reminders.by_id.get(&id) else {
                continue;
            };
            if let Some(user) = self.user(r.user_id).filter(|u| u.is_active) {
                // The message as it is now, if the user may still read it; else the
                // text written at creation (Zulip's `send_reminder`).
                let content = match self.access_message(rows, user, r.message_id as i64) {
                    Ok((m, _)) => self.reminder_content(&m, r.note.as_deref()),
                    Err(_) => r.content.clone(),
                };
                let rendered = if content == r.content {
                    r.rendered_content.clone()
                } else {
                    self.render_message(&content).html
                };
                let mut users = vec![user.id, NOTIFICATION_BOT_ID];
                users.sort_unstable();
                let message = Message::internal(
                    next_id,
                    NOTIFICATION_BOT_ID,
                    Recipient::Direct { users },
                    content,
                    rendered,
                    now,
                );
                next_id += 1;
                out.push(Change::Message(MessageChange::Notice {
                    message: Box::new(message),
                    read_by: NOTIFICATION_BOT_ID,
                    all_read: false,
                }));
            } else {
                tracing::info!("reminder {id} dropped: its user is deactivated");
            }
            out.push(Change::Personal(PersonalChange::ReminderRemoved {
                user_id: r.user_id,
                reminder_id: id,
            }));
        }
        out
    }

    pub(in crate::realm) fn apply_reminder_change(&mut self, change: &PersonalChange) {
        match change {
            PersonalChange::ReminderAdded { reminder, .. } => self.reminders.add(reminder),
            PersonalChange::ReminderRemoved { reminder_id, .. } => {
                self.reminders.remove(*reminder_id)
            }
            _ => {}
        }
    }

    /// `reminders` events, to the user only.
    pub(in crate::realm) fn reminder_events(&self, change: &PersonalChange) -> Vec<Event> {
        let (user, body) = match change {
            PersonalChange::ReminderAdded { user_id, reminder } => (
                *user_id,
                json!({"type": "reminders", "op": "add", "reminders": [reminder.json()]}),
            ),
            PersonalChange::ReminderRemoved {
                user_id,
                reminder_id,
            } => (
                *user_id,
                json!({"type": "reminders", "op": "remove", "reminder_id": reminder_id}),
            ),
            _ => return Vec::new(),
        };
        vec![Event::new(body, Audience::users(vec![user]))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_and_fences() {
        assert_eq!(normalize_note("\n hi  \n").ok(), Some(Some(" hi".into())));
        assert_eq!(normalize_note(" \n").ok(), Some(None));
        assert_eq!(
            normalize_note(&"x".repeat(1001)).map_err(|e| e.msg),
            Err("Maximum reminder note length: 1000 characters".into())
        );
        assert_eq!(unused_fence("a ```` b"), "`````");
        assert_eq!(unused_fence("plain"), "```");
    }
}
