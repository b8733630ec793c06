//! Messages: what a message is, the per-user flags, and the small part of message
//! state the realm keeps in memory.
//!
//! Message rows are not realm state: they live in the message store (`storage::messages`),
//! one sled tree of rows by id plus index trees for the narrows, and never enter a
//! snapshot. The realm keeps only what decisions and cheap reads need: the next id and
//! the topics of each channel (name and newest message). A send is a `MessageChange::Sent`
//! carrying the whole message; the store writes its rows in the same durable commit as
//! the WAL record, and replay writes them again (idempotently).

pub mod access;
pub mod content;
pub mod edit;
pub mod fetch;
pub mod flags;
pub mod history;
pub mod html_diff;
pub mod json;
pub mod moves;
pub mod reactions;
pub mod read;
pub mod receipts;
pub mod reminders;
pub mod report;
pub mod rows;
pub mod scheduled;
pub mod search;
pub mod send;
pub mod typing;
pub mod unread;
pub mod uploads;

use imbl::{OrdMap, OrdSet};
use serde::{Deserialize, Serialize};

use super::channels::ChannelId;
use super::{Realm, UserId};

/// A message id, unique within a realm, increasing with time.
pub type MessageId = u64;

/// Zulip's `LARGER_THAN_MAX_MESSAGE_ID`: the anchor `newest` stands for.
pub const LARGER_THAN_MAX_MESSAGE_ID: u64 = 10_000_000_000_000_000;
/// Zulip's `MAX_MESSAGES_PER_FETCH`.
pub const MAX_MESSAGES_PER_FETCH: u64 = 5000;
/// Zulip's `MAX_UNREAD_MESSAGES`: at most this many unread ids in `/register`.
pub const MAX_UNREAD_MESSAGES: usize = 50_000;

/// Where a message went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Recipient {
    /// A channel and topic ("" is the empty topic).
    Channel {
        channel_id: ChannelId,
        topic: String,
    },
    /// A direct-message conversation: every participant, sender included, sorted.
    Direct { users: Vec<UserId> },
}

impl Recipient {
    pub fn channel(&self) -> Option<ChannelId> {
        match self {
            Recipient::Channel { channel_id, .. } => Some(*channel_id),
            Recipient::Direct { .. } => None,
        }
    }

    pub fn topic(&self) -> Option<&str> {
        match self {
            Recipient::Channel { topic, .. } => Some(topic),
            Recipient::Direct { .. } => None,
        }
    }

    /// Whether this is `topic` of `channel` (topics compare case-insensitively).
    pub fn is_topic(&self, channel: ChannelId, topic: &str) -> bool {
        matches!(self, Recipient::Channel { channel_id, topic: t }
            if *channel_id == channel && t.to_lowercase() == topic.to_lowercase())
    }
}

/// One edit of a message, as Zulip's `edit_history` keeps it: what it was before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditRecord {
    pub user_id: UserId,
    pub timestamp: i64,
    pub prev_content: Option<String>,
    pub prev_rendered_content: Option<String>,
    pub prev_topic: Option<String>,
    pub prev_channel: Option<ChannelId>,
    /// The topic / channel after the edit (only when it moved).
    pub topic: Option<String>,
    pub channel: Option<ChannelId>,
}

/// An emoji reaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reaction {
    pub user_id: UserId,
    pub emoji_name: String,
    pub emoji_code: String,
    pub reaction_type: String,
}

/// A message as stored in its row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: MessageId,
    pub sender_id: UserId,
    pub recipient: Recipient,
    /// Raw Markdown.
    pub content: String,
    /// HTML, rendered when it was decided.
    pub rendered_content: String,
    /// UNIX seconds.
    pub timestamp: i64,
    /// The sending client's name.
    pub client: String,
    pub is_me_message: bool,
    /// Users mentioned by name (they get the `mentioned` flag).
    pub mentioned: Vec<UserId>,
    /// `@**all**` and its synonyms: every recipient gets `stream_wildcard_mentioned`.
    pub wildcard: Wildcard,
    /// Whether the sender has it as read (`read_by_sender`).
    pub sender_read: bool,
    /// Edits, oldest first.
    pub edits: Vec<EditRecord>,
    pub last_edit_timestamp: Option<i64>,
    pub last_moved_timestamp: Option<i64>,
    pub reactions: Vec<Reaction>,
}

impl Message {
    /// A message the server sends on its own, from a system bot (Zulip's
    /// `internal_send_*_message`): client "Internal", no mention, unread for its sender,
    /// never edited, moved or reacted to.
    pub fn internal(
        id: MessageId,
        sender_id: UserId,
        recipient: Recipient,
        content: String,
        rendered_content: String,
        timestamp: i64,
    ) -> Message {
        Message {
            id,
            sender_id,
            recipient,
            content,
            rendered_content,
            timestamp,
            client: "Internal".to_owned(),
            is_me_message: false,
            mentioned: Vec::new(),
            wildcard: Wildcard::None,
            sender_read: false,
            edits: Vec::new(),
            last_edit_timestamp: None,
            last_moved_timestamp: None,
            reactions: Vec::new(),
        }
    }
}

/// Which wildcard mention a message holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Wildcard {
    #[default]
    None,
    /// `@**all**`, `@**everyone**`, `@**channel**`, `@**stream**`.
    Channel,
    /// `@**topic**`.
    Topic,
}

/// A topic of a channel, as the realm remembers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopicMeta {
    /// The topic as last written (case kept).
    pub name: String,
    /// The newest message in it.
    pub max_id: MessageId,
}

/// What the realm keeps of its messages in memory (and in snapshots).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MessageState {
    /// The id the next message gets; every id below it was handed out.
    pub next_id: MessageId,
    /// Topics by channel, keyed by the lower-cased topic.
    pub topics: OrdMap<ChannelId, OrdMap<String, TopicMeta>>,
    /// Scheduled messages not delivered yet (pending or failed).
    pub scheduled: OrdMap<scheduled::ScheduledId, scheduled::ScheduledMessage>,
    pub next_scheduled_id: scheduled::ScheduledId,
    /// Pending scheduled messages by delivery time. Derived from `scheduled`.
    #[serde(skip)]
    pub due: OrdSet<(i64, scheduled::ScheduledId)>,
}

impl MessageState {
    pub fn new() -> Self {
        MessageState {
            next_id: 1,
            topics: OrdMap::new(),
            scheduled: OrdMap::new(),
            next_scheduled_id: 1,
            due: OrdSet::new(),
        }
    }

    /// Rebuilds the due-time index after loading.
    pub fn rebuild_due(&mut self) {
        self.due = self
            .scheduled
            .values()
            .filter(|s| !s.failed)
            .map(|s| (s.deliver_at, s.id))
            .collect();
    }

    fn unschedule(&mut self, id: scheduled::ScheduledId) -> Option<scheduled::ScheduledMessage> {
        let old = self.scheduled.remove(&id)?;
        self.due.remove(&(old.deliver_at, old.id));
        Some(old)
    }

    fn schedule(&mut self, s: &scheduled::ScheduledMessage) {
        self.unschedule(s.id);
        self.next_scheduled_id = self.next_scheduled_id.max(s.id + 1);
        if !s.failed {
            self.due.insert((s.deliver_at, s.id));
        }
        self.scheduled.insert(s.id, s.clone());
    }

    /// The newest message id any reader of this version may see (0: none).
    pub fn max_visible(&self) -> MessageId {
        self.next_id.saturating_sub(1)
    }
}

/// Facts about messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum MessageChange {
    /// A message was sent. Its recipients (and their flags) follow from the realm's
    /// state when it was sent: the channel's subscribers, or the conversation.
    Sent(Box<Message>),
    /// Flags of one user's messages changed (`add` or remove `flag`, one bit).
    FlagsChanged {
        user_id: UserId,
        flag: u32,
        add: bool,
        ids: Vec<MessageId>,
    },
    /// Messages were edited by `user_id`: each pair is the row before and after (the
    /// first is the message the request named; a move with `propagate_mode` brings
    /// the others), and the topics they left or joined have these newest messages now.
    Edited {
        user_id: UserId,
        propagate_mode: String,
        pairs: Vec<(Message, Message)>,
        topic_max: Vec<TopicMax>,
    },
    /// Messages were deleted.
    Deleted {
        messages: Vec<Message>,
        topic_max: Vec<TopicMax>,
    },
    /// A message was scheduled.
    ScheduledCreated(scheduled::ScheduledMessage),
    /// A scheduled message was edited (the whole new record; editing clears `failed`).
    ScheduledUpdated(scheduled::ScheduledMessage),
    /// A scheduled message was deleted by its sender.
    ScheduledDeleted { id: scheduled::ScheduledId },
    /// A scheduled message was sent as message `message_id` (a `Sent` precedes it).
    ScheduledDelivered {
        id: scheduled::ScheduledId,
        message_id: MessageId,
    },
    /// A due scheduled message could not be sent; it stays, marked failed.
    ScheduledFailed { id: scheduled::ScheduledId },
    /// A user reacted to a message.
    ReactionAdded {
        message_id: MessageId,
        /// Where the message is (who is told).
        recipient: Recipient,
        reaction: Reaction,
    },
    /// A user took a reaction back.
    ReactionRemoved {
        message_id: MessageId,
        recipient: Recipient,
        reaction: Reaction,
    },
    /// A Notification Bot message (Zulip's `internal_send_stream_message`): delivered
    /// as `Sent` is, but read at once by `read_by` where they receive it
    /// (`mark_as_read_for_acting_user`), and by every recipient when `all_read` (an
    /// empty `limit_unread_user_ids`).
    Notice {
        message: Box<Message>,
        read_by: UserId,
        all_read: bool,
    },
}

impl MessageChange {
    /// The message a change delivers (`Sent` or `Notice`).
    pub fn delivered(&self) -> Option<&Message> {
        match self {
            MessageChange::Sent(m) | MessageChange::Notice { message: m, .. } => Some(m),
            _ => None,
        }
    }
}

/// The newest message of a topic after a change (`None`: the topic is empty now).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopicMax {
    pub channel_id: ChannelId,
    pub topic: String,
    pub max_id: Option<MessageId>,
}

impl MessageState {
    /// Applies a message change to the in-memory state.
    pub fn apply(&mut self, change: &MessageChange) {
        match change {
            MessageChange::Sent(m) | MessageChange::Notice { message: m, .. } => {
                self.next_id = self.next_id.max(m.id + 1);
                if let Recipient::Channel { channel_id, topic } = &m.recipient {
                    let topics = self.topics.entry(*channel_id).or_default();
                    let key = topic.to_lowercase();
                    let max_id = topics.get(&key).map_or(m.id, |t| t.max_id.max(m.id));
                    topics.insert(
                        key,
                        TopicMeta {
                            name: topic.clone(),
                            max_id,
                        },
                    );
                }
            }
            MessageChange::FlagsChanged { .. }
            | MessageChange::ReactionAdded { .. }
            | MessageChange::ReactionRemoved { .. } => {}
            MessageChange::ScheduledCreated(s) | MessageChange::ScheduledUpdated(s) => {
                self.schedule(s)
            }
            MessageChange::ScheduledDeleted { id }
            | MessageChange::ScheduledDelivered { id, .. } => {
                self.unschedule(*id);
            }
            MessageChange::ScheduledFailed { id } => {
                if let Some(mut s) = self.unschedule(*id) {
                    s.failed = true;
                    self.schedule(&s);
                }
            }
            MessageChange::Edited { topic_max, .. } | MessageChange::Deleted { topic_max, .. } => {
                for t in topic_max {
                    let topics = self.topics.entry(t.channel_id).or_default();
                    let key = t.topic.to_lowercase();
                    match t.max_id {
                        Some(max_id) => {
                            topics.insert(
                                key,
                                TopicMeta {
                                    name: t.topic.clone(),
                                    max_id,
                                },
                            );
                        }
                        None => {
                            topics.remove(&key);
                        }
                    }
                }
            }
        }
    }
}

impl Realm {
    /// The message a change delivers, with who receives it and the flags they start
    /// with (`message_recipients`, read where a `Notice` says so).
    pub fn delivery<'a>(
        &self,
        change: &'a MessageChange,
    ) -> Option<(&'a Message, Vec<(UserId, u32)>)> {
        let m = change.delivered()?;
        let mut recipients = self.message_recipients(m);
        if let MessageChange::Notice {
            read_by, all_read, ..
        } = change
        {
            for (user, bits) in &mut recipients {
                if *all_read || user == read_by {
                    *bits |= flags::READ;
                }
            }
        }
        Some((m, recipients))
    }

    /// Who receives a message, with the flags they start with.
    pub fn message_recipients(&self, m: &Message) -> Vec<(UserId, u32)> {
        let realm = self;
        let mut users: Vec<UserId> = match &m.recipient {
            Recipient::Channel { channel_id, .. } => realm
                .channel(*channel_id)
                .map(|c| c.subscriber_ids())
                .unwrap_or_default()
                .into_iter()
                .filter(|u| realm.user(*u).is_some_and(|u| u.is_active))
                .collect(),
            Recipient::Direct { users } => users.clone(),
        };
        if !users.contains(&m.sender_id) {
            users.push(m.sender_id);
        }
        users.sort_unstable();
        users.dedup();
        let wildcard = match m.wildcard {
            Wildcard::None => 0,
            Wildcard::Channel => flags::STREAM_WILDCARD_MENTIONED,
            Wildcard::Topic => flags::TOPIC_WILDCARD_MENTIONED,
        };
        let alerted = self.alert_word_users(&m.content);
        users
            .into_iter()
            .map(|u| {
                let mut bits = self.personal_delivery_flags(m, u, &alerted);
                if u == m.sender_id {
                    if m.sender_read {
                        bits |= flags::READ;
                    }
                } else {
                    bits |= wildcard;
                }
                if m.mentioned.contains(&u) {
                    bits |= flags::MENTIONED;
                }
                (u, bits)
            })
            .collect()
    }
}
#[cfg(test)]
mod tests;
