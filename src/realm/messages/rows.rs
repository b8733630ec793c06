//! The message-row port: how rules and reads reach message rows without knowing where
//! they are kept.
//!
//! The message store (`storage::messages`) implements `MessageRows`; the realm actor
//! hands it to rules through `Cx::rows`, and the HTTP workers read it through a
//! `MessageRowsHandle`, which also waits for the store to open. A read that fails is a
//! `RowsError`, a storage fault the client only ever sees as an internal error: the
//! conversion into `ApiError` (which logs it) happens where a rule or a read returns.
//! Unit tests use `MemRows`, rows in a `BTreeMap`.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::fetch::Source;
use super::search::SearchQuery;
use super::{Message, MessageId};
use crate::error::ApiError;
use crate::realm::channels::ChannelId;
use crate::realm::UserId;

/// A message row could not be read: the store's fault, described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowsError(pub String);

impl RowsError {
    pub fn new(why: impl std::fmt::Display) -> Self {
        RowsError(why.to_string())
    }
}

impl std::fmt::Display for RowsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RowsError {}

/// A failed read answers an internal error; the fault itself goes to the log.
impl From<RowsError> for ApiError {
    fn from(e: RowsError) -> Self {
        tracing::error!("message store read failed: {e}");
        ApiError::internal()
    }
}

pub type RowsResult<T> = Result<T, RowsError>;

/// Reads message rows (implemented by the message store).
pub trait MessageRows {
    fn row(&self, id: MessageId) -> RowsResult<Option<Message>>;
    /// A user's flags on a message (`None`: they did not receive it).
    fn user_flags(&self, user: UserId, id: MessageId) -> RowsResult<Option<u32>>;
    /// Ids of `source` in `[from, to]`, ascending or (`reverse`) descending.
    fn scan<'a>(
        &'a self,
        source: &Source,
        from: MessageId,
        to: MessageId,
        reverse: bool,
    ) -> RowsResult<Box<dyn Iterator<Item = RowsResult<MessageId>> + 'a>>;

    /// The ids of messages that may match a search (a superset, ascending: each is
    /// checked on its row), from the full-text index; `None`: no index to ask, the
    /// fetch scans its source instead. See `storage::messages::search`.
    fn search(&self, _q: &SearchQuery) -> RowsResult<Option<Vec<MessageId>>> {
        Ok(None)
    }

    /// The newest id the index has for a topic, `skip` left out (`None`: none left).
    fn topic_max(
        &self,
        channel: ChannelId,
        topic: &str,
        skip: &[MessageId],
    ) -> RowsResult<Option<MessageId>> {
        // A move of a whole topic skips every id of it: a set keeps that linear.
        let skip: HashSet<MessageId> = skip.iter().copied().collect();
        for id in self.scan(&Source::Topic(channel, topic.to_owned()), 0, u64::MAX, true)? {
            let id = id?;
            if !skip.contains(&id) {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }
}

/// A message store as the HTTP workers reach it: its rows, and a wait for it to open.
pub trait MessageStorePort: MessageRows + Send + Sync {
    /// Waits (bounded) until rows can be read without blocking; `Err`: why not.
    fn ready(&self) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>>;
    /// Whether rows can be read now, without waiting: a request checks it before
    /// building `ready`'s wait.
    fn is_open(&self) -> bool;
    /// A number that changes after every write to the rows, once readers see it: an
    /// answer computed from rows read after it stays right while it is unchanged.
    fn generation(&self) -> u64;
}

/// The realm's message rows, shared by the HTTP workers: cheap to clone.
#[derive(Clone)]
pub struct MessageRowsHandle(Arc<dyn MessageStorePort>);

impl MessageRowsHandle {
    pub fn new(store: Arc<dyn MessageStorePort>) -> Self {
        MessageRowsHandle(store)
    }

    /// Waits (bounded) until the store is open, so that reads on this task do not
    /// block their thread; `Err`: why it is not.
    pub async fn ready(&self) -> Result<(), String> {
        if self.0.is_open() {
            return Ok(());
        }
        self.0.ready().await
    }

    /// See `MessageStorePort::generation`.
    pub fn generation(&self) -> u64 {
        self.0.generation()
    }
}

impl MessageRows for MessageRowsHandle {
    fn row(&self, id: MessageId) -> RowsResult<Option<Message>> {
        self.0.row(id)
    }

    fn user_flags(&self, user: UserId, id: MessageId) -> RowsResult<Option<u32>> {
        self.0.user_flags(user, id)
    }

    fn scan<'a>(
        &'a self,
        source: &Source,
        from: MessageId,
        to: MessageId,
        reverse: bool,
    ) -> RowsResult<Box<dyn Iterator<Item = RowsResult<MessageId>> + 'a>> {
        self.0.scan(source, from, to, reverse)
    }

    fn topic_max(
        &self,
        channel: ChannelId,
        topic: &str,
        skip: &[MessageId],
    ) -> RowsResult<Option<MessageId>> {
        self.0.topic_max(channel, topic, skip)
    }

    fn search(&self, q: &SearchQuery) -> RowsResult<Option<Vec<MessageId>>> {
        self.0.search(q)
    }
}

/// Message rows in memory (unit tests): rows by id and each user's flags, indexed as
/// the store indexes them (an index entry follows the row as it is now).
#[cfg(test)]
#[derive(Debug, Default, Clone)]
pub struct MemRows {
    pub rows: std::collections::BTreeMap<MessageId, Message>,
    pub flags: std::collections::BTreeMap<(UserId, MessageId), u32>,
}

#[cfg(test)]
impl MemRows {
    /// Stores a message with its recipients' flags, as a send writes them.
    pub fn put(&mut self, m: Message, recipients: &[(UserId, u32)]) {
        for (u, bits) in recipients {
            self.flags.insert((*u, m.id), *bits);
        }
        self.rows.insert(m.id, m);
    }

    /// Writes what a change decided, as the store's projection does (enough for tests).
    pub fn project(&mut self, realm: &crate::realm::Realm, change: &crate::realm::Change) {
        use super::{flags, MessageChange};
        let crate::realm::Change::Message(change) = change else {
            return;
        };
        if let Some((m, recipients)) = realm.delivery(change) {
            self.put(m.clone(), &recipients);
            return;
        }
        match change {
            MessageChange::FlagsChanged {
                user_id,
                flag,
                add,
                ids,
            } => {
                for id in ids {
                    let base = flags::READ | flags::HISTORICAL;
                    let old = self.flags.get(&(*user_id, *id)).copied().unwrap_or(base);
                    let new = if *add { old | flag } else { old & !flag };
                    self.flags.insert((*user_id, *id), new);
                }
            }
            MessageChange::Edited { pairs, .. } => {
                for (_, after) in pairs {
                    self.rows.insert(after.id, after.clone());
                }
            }
            MessageChange::Deleted { messages, .. } => {
                for m in messages {
                    self.rows.remove(&m.id);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
impl MessageRows for MemRows {
    fn row(&self, id: MessageId) -> RowsResult<Option<Message>> {
        Ok(self.rows.get(&id).cloned())
    }

    fn user_flags(&self, user: UserId, id: MessageId) -> RowsResult<Option<u32>> {
        Ok(self.flags.get(&(user, id)).copied())
    }

    fn scan<'a>(
        &'a self,
        source: &Source,
        from: MessageId,
        to: MessageId,
        reverse: bool,
    ) -> RowsResult<Box<dyn Iterator<Item = RowsResult<MessageId>> + 'a>> {
        use super::{flags, Recipient};
        let mut ids: Vec<MessageId> = match source {
            Source::User(u) => self
                .flags
                .keys()
                .filter(|(user, _)| user == u)
                .map(|(_, id)| *id)
                .collect(),
            Source::Unread(u) => self
                .flags
                .iter()
                .filter(|((user, _), bits)| user == u && *bits & flags::READ == 0)
                .map(|((_, id), _)| *id)
                .collect(),
            source => self
                .rows
                .values()
                .filter(|m| match source {
                    Source::Channel(c) => m.recipient.channel() == Some(*c),
                    Source::Topic(c, t) => m.recipient.is_topic(*c, t),
                    Source::Conversation(users) => {
                        matches!(&m.recipient, Recipient::Direct { users: u } if u == users)
                    }
                    Source::Sender(s) => m.sender_id == *s,
                    Source::User(_) | Source::Unread(_) => false,
                })
                .map(|m| m.id)
                .collect(),
        };
        ids.retain(|id| (from..=to).contains(id));
        ids.sort_unstable();
        if reverse {
            ids.reverse();
        }
        Ok(Box::new(ids.into_iter().map(Ok)))
    }
}
