//! The message store of one realm: message rows and the trees that serve narrows.
//!
//! Trees (per realm, in the server's one sled database):
//!
//! | tree             | key                                         | value |
//! |------------------|---------------------------------------------|-------|
//! | `msg:<realm>`    | message id (u64 BE)                         | framed `Message` |
//! | `msgidx:<realm>` | `c` channel, id / `t` channel, topic, id / `d` conversation, id / `s` sender, id | empty |
//! | `um:<realm>`     | user id, message id                         | flag bits (u32 LE) |
//! | `unread:<realm>` | user id, message id                         | empty |
//!
//! Ids are big-endian, so each index is ordered by message id within its prefix and a
//! narrow is one range scan. A topic key is the lower-cased topic with its length in
//! front, so one topic's prefix never covers another's.
//!
//! Rows are written by `project`, which the realm actor calls for each change right
//! after appending its WAL record and before applying it (recovery calls it the same
//! way while replaying): the rows are in the same durable commit as the record, and a
//! replay writes them again, idempotently.
//!
//! Each key is a plain insert or remove, not a `sled::Batch`: a batch takes sled's
//! global write lock (every reader of every tree waits for it, and from the first
//! batch on every sled operation takes that lock's read side) and writes a batch
//! manifest, which made projection ~3× slower. Atomicity is not needed: sled recovers
//! a prefix of its log, the WAL record comes before its rows in it, and every record
//! after the newest snapshot is projected again at start; a snapshot is written after
//! the rows of every record it covers, so a durable snapshot implies durable rows. Readers bound what they return by the
//! published version's `max_visible` id, so a message nobody may see yet (not durable)
//! is never returned, and they check that a row still matches the index entry that led
//! to it (an entry left behind by a decision dropped after a storage fault points at a
//! row that no longer matches).

use std::sync::{Arc, Mutex, PoisonError};

use super::{codec, Durability, StorageError};
use crate::error::{ApiError, ApiResult};
use crate::realm::channels::ChannelId;
use crate::realm::messages::fetch::{MessageRows, Source};
use crate::realm::messages::{flags, Message, MessageChange, MessageId, Recipient};
use crate::realm::{Change, Realm, UserId};

/// Schema version of a message row.
const MESSAGE_SCHEMA: u8 = 1;

/// The trees of one realm's messages.
#[derive(Clone)]
struct Trees {
    rows: sled::Tree,
    idx: sled::Tree,
    um: sled::Tree,
    unread: sled::Tree,
}

/// A handle on a realm's message store; cheap to clone, shared by the actor (writes)
/// and the HTTP workers (reads).
#[derive(Clone)]
pub struct MessageStore {
    inner: Arc<Inner>,
}

struct Inner {
    names: [String; 4],
    durability: Arc<Durability>,
    /// The trees on the database currently open, with the failure count they were
    /// opened at (a fault reopens the database).
    trees: Mutex<Option<(u64, Trees)>>,
}

fn be(n: u64) -> [u8; 8] {
    n.to_be_bytes()
}

fn id_at_end(key: &[u8]) -> MessageId {
    let mut b = [0u8; 8];
    if key.len() >= 8 {
        b.copy_from_slice(&key[key.len() - 8..]);
    }
    u64::from_be_bytes(b)
}

/// `len(topic) topic` lower-cased, after the channel.
fn topic_prefix(channel: ChannelId, topic: &str) -> Vec<u8> {
    let lower = topic.to_lowercase();
    let mut k = Vec::with_capacity(1 + 8 + 2 + lower.len() + 8);
    k.push(b't');
    k.extend_from_slice(&be(channel));
    k.extend_from_slice(&(lower.len() as u16).to_be_bytes());
    k.extend_from_slice(lower.as_bytes());
    k
}

fn conversation_prefix(users: &[UserId]) -> Vec<u8> {
    let mut k = Vec::with_capacity(2 + users.len() * 8 + 8);
    k.push(b'd');
    k.push(users.len().min(255) as u8);
    for u in users {
        k.extend_from_slice(&be(*u));
    }
    k
}

fn prefixed(tag: u8, n: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(17);
    k.push(tag);
    k.extend_from_slice(&be(n));
    k
}

fn with_id(mut prefix: Vec<u8>, id: MessageId) -> Vec<u8> {
    prefix.extend_from_slice(&be(id));
    prefix
}

fn user_key(user: UserId, id: MessageId) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&be(user));
    k[8..].copy_from_slice(&be(id));
    k
}

/// The index keys a message has.
fn index_keys(m: &Message) -> Vec<Vec<u8>> {
    let mut keys = vec![with_id(prefixed(b's', m.sender_id), m.id)];
    match &m.recipient {
        Recipient::Channel { channel_id, topic } => {
            keys.push(with_id(prefixed(b'c', *channel_id), m.id));
            keys.push(with_id(topic_prefix(*channel_id, topic), m.id));
        }
        Recipient::Direct { users } => keys.push(with_id(conversation_prefix(users), m.id)),
    }
    keys
}

pub fn encode_message(m: &Message) -> Result<Vec<u8>, StorageError> {
    Ok(codec::encode_versioned(MESSAGE_SCHEMA, m)?)
}

pub fn decode_message(bytes: &[u8]) -> Result<Message, StorageError> {
    let (version, payload) = codec::open_frame(bytes)?;
    match version {
        MESSAGE_SCHEMA => Ok(codec::decode_payload(payload)?),
        v => Err(codec::CodecError::Version(v).into()),
    }
}

/// The names of a realm's trees: rows, index, user-message rows, unread rows.
pub fn tree_names(subdomain: &str) -> [String; 4] {
    [
        format!("msg:{subdomain}"),
        format!("msgidx:{subdomain}"),
        format!("um:{subdomain}"),
        format!("unread:{subdomain}"),
    ]
}

impl MessageStore {
    pub(super) fn new(subdomain: &str, durability: Arc<Durability>) -> Self {
        MessageStore {
            inner: Arc::new(Inner {
                names: tree_names(subdomain),
                durability,
                trees: Mutex::new(None),
            }),
        }
    }

    fn trees(&self) -> Result<Trees, StorageError> {
        let failures = self.inner.durability.failures();
        let mut cached = self
            .inner
            .trees
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((at, trees)) = cached.as_ref() {
            if *at == failures {
                return Ok(trees.clone());
            }
        }
        let db = self.inner.durability.db().ok_or_else(|| {
            StorageError::Invalid("the database is closed after a storage failure".into())
        })?;
        let [rows, idx, um, unread] = &self.inner.names;
        let trees = Trees {
            rows: db.open_tree(rows)?,
            idx: db.open_tree(idx)?,
            um: db.open_tree(um)?,
            unread: db.open_tree(unread)?,
        };
        *cached = Some((failures, trees.clone()));
        Ok(trees)
    }

    /// Writes the rows a change implies (nothing for changes that are not about
    /// messages). `realm` is the state right before the change. Idempotent.
    pub fn project(&self, realm: &Realm, change: &Change) -> Result<(), StorageError> {
        let Change::Message(change) = change else {
            return Ok(());
        };
        let t = self.trees()?;
        match change {
            MessageChange::Sent(m) => {
                t.rows.insert(be(m.id), encode_message(m)?)?;
                for k in index_keys(m) {
                    t.idx.insert(k, &[][..])?;
                }
                for (user, bits) in realm.message_recipients(m) {
                    let key = user_key(user, m.id);
                    t.um.insert(key, &bits.to_le_bytes()[..])?;
                    if bits & flags::READ == 0 {
                        t.unread.insert(key, &[][..])?;
                    }
                }
            }
            MessageChange::FlagsChanged {
                user_id,
                flag,
                add,
                ids,
            } => {
                for id in ids {
                    let key = user_key(*user_id, *id);
                    let old = t.um.get(key)?.map(|v| bits_of(&v));
                    let new = match (old, add) {
                        (Some(b), true) => b | flag,
                        (Some(b), false) => b & !flag,
                        // A message the user did not receive: Zulip adds a row marked
                        // historical (read, since it was never unread for them).
                        (None, true) => flags::HISTORICAL | flags::READ | flag,
                        (None, false) => (flags::HISTORICAL | flags::READ) & !flag,
                    };
                    t.um.insert(key, &new.to_le_bytes()[..])?;
                    if *flag == flags::READ {
                        if *add {
                            t.unread.remove(key)?;
                        } else {
                            t.unread.insert(key, &[][..])?;
                        }
                    }
                }
            }
            MessageChange::Edited { pairs, .. } => {
                for (before, after) in pairs {
                    t.rows.insert(be(after.id), encode_message(after)?)?;
                    let old = index_keys(before);
                    let new = index_keys(after);
                    for k in old.iter().filter(|k| !new.contains(k)) {
                        t.idx.remove(k)?;
                    }
                    for k in new {
                        t.idx.insert(k, &[][..])?;
                    }
                }
            }
            MessageChange::ReactionAdded {
                message_id,
                reaction,
                ..
            } => {
                if let Some(mut m) = self.get(*message_id)? {
                    if !m.reactions.contains(reaction) {
                        m.reactions.push(reaction.clone());
                        t.rows.insert(be(m.id), encode_message(&m)?)?;
                    }
                }
            }
            MessageChange::ReactionRemoved {
                message_id,
                reaction,
                ..
            } => {
                if let Some(mut m) = self.get(*message_id)? {
                    let before = m.reactions.len();
                    m.reactions.retain(|r| r != reaction);
                    if m.reactions.len() != before {
                        t.rows.insert(be(m.id), encode_message(&m)?)?;
                    }
                }
            }
            MessageChange::ScheduledCreated(_)
            | MessageChange::ScheduledUpdated(_)
            | MessageChange::ScheduledDeleted { .. }
            | MessageChange::ScheduledDelivered { .. }
            | MessageChange::ScheduledFailed { .. } => {}
            MessageChange::Deleted { messages, .. } => {
                // User-message and unread rows of deleted messages are left to readers,
                // which skip ids whose row is gone: finding them would mean a scan.
                for m in messages {
                    t.rows.remove(be(m.id))?;
                    for k in index_keys(m) {
                        t.idx.remove(k)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// A message row.
    pub fn get(&self, id: MessageId) -> Result<Option<Message>, StorageError> {
        match self.trees()?.rows.get(be(id))? {
            Some(v) => decode_message(&v).map(Some),
            None => Ok(None),
        }
    }

    /// A user's flags on a message (`None`: they did not receive it).
    pub fn flags(&self, user: UserId, id: MessageId) -> Result<Option<u32>, StorageError> {
        Ok(self
            .trees()?
            .um
            .get(user_key(user, id))?
            .map(|v| bits_of(&v)))
    }

    /// Ids of `source` in `[from, to]`, ascending or (`reverse`) descending, lazily.
    pub fn ids(
        &self,
        source: &Source,
        from: MessageId,
        to: MessageId,
        reverse: bool,
    ) -> Result<Box<dyn Iterator<Item = Result<MessageId, StorageError>> + Send>, StorageError>
    {
        let t = self.trees()?;
        let (tree, prefix): (sled::Tree, Vec<u8>) = match source {
            Source::User(u) => (t.um, be(*u).to_vec()),
            Source::Unread(u) => (t.unread, be(*u).to_vec()),
            Source::Channel(c) => (t.idx, prefixed(b'c', *c)),
            Source::Topic(c, topic) => (t.idx, topic_prefix(*c, topic)),
            Source::Conversation(users) => (t.idx, conversation_prefix(users)),
            Source::Sender(s) => (t.idx, prefixed(b's', *s)),
        };
        if from > to {
            return Ok(Box::new(std::iter::empty()));
        }
        let lo = with_id(prefix.clone(), from);
        let hi = with_id(prefix, to);
        let range = tree.range(lo..=hi);
        let map = |r: sled::Result<(sled::IVec, sled::IVec)>| {
            r.map(|(k, _)| id_at_end(&k)).map_err(StorageError::from)
        };
        Ok(if reverse {
            Box::new(range.rev().map(map))
        } else {
            Box::new(range.map(map))
        })
    }

    /// The newest id of a topic at or below `below` (`None`: none left).
    pub fn topic_max(
        &self,
        channel: ChannelId,
        topic: &str,
        skip: &[MessageId],
    ) -> Result<Option<MessageId>, StorageError> {
        for id in self.ids(&Source::Topic(channel, topic.to_owned()), 0, u64::MAX, true)? {
            let id = id?;
            if !skip.contains(&id) {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }
}

fn bits_of(v: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    let n = v.len().min(4);
    b[..n].copy_from_slice(&v[..n]);
    u32::from_le_bytes(b)
}

fn internal(e: StorageError) -> ApiError {
    tracing::error!("message store read failed: {e}");
    ApiError::internal()
}

impl MessageRows for MessageStore {
    fn row(&self, id: MessageId) -> ApiResult<Option<Message>> {
        self.get(id).map_err(internal)
    }

    fn user_flags(&self, user: UserId, id: MessageId) -> ApiResult<Option<u32>> {
        self.flags(user, id).map_err(internal)
    }

    fn scan<'a>(
        &'a self,
        source: &Source,
        from: MessageId,
        to: MessageId,
        reverse: bool,
    ) -> ApiResult<Box<dyn Iterator<Item = ApiResult<MessageId>> + 'a>> {
        let ids = self.ids(source, from, to, reverse).map_err(internal)?;
        Ok(Box::new(ids.map(|r| r.map_err(internal))))
    }
}
