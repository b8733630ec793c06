//! The message store of one realm: message rows and the trees that serve narrows.
//!
//! Trees (per realm, in the message database `<data>/messages/`, apart from the
//! database the realms recover from: see `message_db`):
//!
//! | tree             | key                                         | value |
//! |------------------|---------------------------------------------|-------|
//! | `msg:<realm>`    | message id (u64 BE)                         | framed `Message` |
//! | `msgidx:<realm>` | `c` channel, id / `t` channel, topic, id / `d` conversation, id / `s` sender, id | empty |
//! | `um:<realm>`     | user id, message id                         | flag bits (u32 LE) |
//! | `unread:<realm>` | user id, message id                         | empty |
//! | `msgundo:<realm>` | WAL record, ordinal (u64 BE each)          | framed `Vec<Before>`: what a logged write replaced |
//!
//! Ids are big-endian, so each index is ordered by message id within its prefix and a
//! narrow is one range scan. A topic key is the lower-cased topic with its length in
//! front, so one topic's prefix never covers another's.
//!
//! Rows are written by `project`, which the realm actor calls for each change right
//! after appending its WAL record and before applying it (recovery calls it the same
//! way while replaying); a replay writes them again, idempotently. The WAL record is the
//! truth until a snapshot covers it: a snapshot is written only after the message
//! database was made durable (`sync`), and every record after it is projected again at
//! start, so a row lost with an unflushed tail of this database is written again.
//!
//! Each key is a plain insert or remove, not a `sled::Batch`: a batch takes sled's
//! global write lock (every reader of every tree waits for it, and from the first
//! batch on every sled operation takes that lock's read side) and writes a batch
//! manifest, which made projection ~3× slower. Atomicity is not needed: every record
//! after the newest snapshot is projected again at start, and a snapshot is written
//! after the rows of every record it covers were made durable. Readers bound what they return by the
//! published version's `max_visible` id, so a message nobody may see yet (not durable)
//! is never returned, and they check that a row still matches the index entry that led
//! to it (an entry left behind by a decision dropped after a storage fault points at a
//! row that no longer matches).
//!
//! Rows run ahead of the WAL: they are written before the record is durable. An edit,
//! flag change, reaction or deletion of the actor (`project` with the record's number)
//! therefore first logs the earlier value of every key it writes (`Op::Logged`, the log
//! entry inserted before the rows, and sled's log keeps that order on disk). Records
//! that never become durable are undone from that log (`undo_after`): those a storage
//! fault dropped, at the actor's reset, and those lost with the WAL's unflushed tail, at
//! start after the replay. A snapshot trims the log up to the record it covers. Sends
//! log nothing: their rows are new keys, which `purge_from` removes.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::message_db::MessageDb;
use super::{codec, StorageError};
use crate::realm::channels::ChannelId;
use crate::realm::messages::fetch::{MessageRows, RowsError, RowsResult, Source};
use crate::realm::messages::flags::MentionFlags;
use crate::realm::messages::rows::MessageStorePort;
use crate::realm::messages::{flags, Message, MessageChange, MessageId, Recipient};
use crate::realm::{Change, Realm, UserId};

/// Schema version of a message row.
const MESSAGE_SCHEMA: u8 = 1;

/// The trees of one realm's messages.
#[derive(Clone)]
pub(super) struct Trees {
    pub(super) rows: sled::Tree,
    pub(super) idx: sled::Tree,
    pub(super) um: sled::Tree,
    pub(super) unread: sled::Tree,
    pub(super) undo: sled::Tree,
}

/// A handle on a realm's message store; cheap to clone, shared by the actor (writes)
/// and the HTTP workers (reads).
#[derive(Clone)]
pub struct MessageStore {
    inner: Arc<Inner>,
}

struct Inner {
    names: Arc<[String; 5]>,
    db: Arc<MessageDb>,
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

/// The names of a realm's trees: rows, index, user-message rows, unread rows, undo log.
pub fn tree_names(subdomain: &str) -> [String; 5] {
    [
        format!("msg:{subdomain}"),
        format!("msgidx:{subdomain}"),
        format!("um:{subdomain}"),
        format!("unread:{subdomain}"),
        format!("msgundo:{subdomain}"),
    ]
}

/// What one change writes, computed from the realm state of its moment (so that it can
/// wait in `MessageDb`'s queue while the database opens): everything `apply` needs.
pub(super) enum Op {
    Sent {
        message: Message,
        /// Each recipient's flag bits.
        recipients: Vec<(UserId, u32)>,
    },
    Flags {
        user_id: UserId,
        flag: u32,
        add: bool,
        ids: Vec<MessageId>,
    },
    Edited {
        pairs: Vec<(Message, Message)>,
        /// Per message whose mentions or alert words changed: the flags the realm
        /// recomputed (`Realm::edit_mentions`, `Realm::edit_alert_words`), applied to the
        /// users who have a row for it.
        mentions: Vec<MentionFlags>,
    },
    Reaction {
        message_id: MessageId,
        reaction: crate::realm::messages::Reaction,
        add: bool,
    },
    Deleted(Vec<Message>),
    /// Removes what rows exist of messages from the realm's next id on, with the
    /// per-user rows of its users for them: rows whose WAL record was lost (see
    /// `MessageStore::purge_from`). The realm (a structurally shared clone) is read only
    /// when such rows exist, so the usual case costs no pass over its users.
    Purge(Arc<Realm>),
    /// `op` (an edit, flag change, reaction or deletion) of WAL record `seq`, whose
    /// rows' earlier values go to the undo log first, so that they can be put back if
    /// the record is lost (`Undo`). `change`: its change's place in the record.
    Logged {
        seq: u64,
        change: u32,
        op: Box<Op>,
    },
    /// Puts back what the logged writes of WAL records after `after` replaced, newest
    /// first, and forgets them: those records were dropped after a storage fault or
    /// lost with an unflushed WAL tail.
    Undo {
        after: u64,
    },
    /// Forgets the undo log up to WAL record `upto`, which a durable snapshot covers.
    Trim {
        upto: u64,
    },
}

impl Op {
    /// Whether this op repairs rows of lost records (see `message_db`'s module doc).
    pub(super) fn is_repair(&self) -> bool {
        matches!(self, Op::Undo { .. } | Op::Purge(_))
    }
}

/// An undo-log entry's size above which the rest of an op's earlier values go to the
/// next entry: sled keeps a value over ~128 KiB as a blob file of its own, which it
/// neither orders with its log nor syncs, so one large entry could be missing after a
/// power loss while the rows written after it are not.
pub(super) const UNDO_CHUNK_BYTES: usize = 32 * 1024;

/// Which tree a write goes to (in the undo log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
enum Tag {
    Rows,
    Idx,
    Um,
    Unread,
}

/// One key as it was before a logged write: `None` when absent.
#[derive(Debug, Serialize, Deserialize)]
struct Before {
    tree: Tag,
    key: Vec<u8>,
    value: Option<Vec<u8>>,
}

/// Schema version of an undo-log entry (`Vec<Before>`).
const UNDO_SCHEMA: u8 = 1;

fn decode_undo(bytes: &[u8]) -> Result<Vec<Before>, StorageError> {
    let (version, payload) = codec::open_frame(bytes)?;
    match version {
        UNDO_SCHEMA => Ok(codec::decode_payload(payload)?),
        v => Err(codec::CodecError::Version(v).into()),
    }
}

impl Trees {
    fn tree(&self, tag: Tag) -> &sled::Tree {
        match tag {
            Tag::Rows => &self.rows,
            Tag::Idx => &self.idx,
            Tag::Um => &self.um,
            Tag::Unread => &self.unread,
        }
    }
}

/// The writes of one op, gathered before any is made (reads see the earlier ones), so
/// that the keys' earlier values can be logged first.
struct Plan<'a> {
    t: &'a Trees,
    writes: Vec<(Tag, Vec<u8>, Option<Vec<u8>>)>,
    /// The newest planned value of each key written.
    planned: HashMap<(Tag, Vec<u8>), Option<Vec<u8>>>,
    /// Each key's value on disk as first read, so that logging it reads it no more.
    read: HashMap<(Tag, Vec<u8>), Option<Vec<u8>>>,
}

impl<'a> Plan<'a> {
    fn new(t: &'a Trees) -> Self {
        Plan {
            t,
            writes: Vec::new(),
            planned: HashMap::new(),
            read: HashMap::new(),
        }
    }

    fn get(&mut self, tag: Tag, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        let k = (tag, key.to_vec());
        if let Some(v) = self.planned.get(&k) {
            return Ok(v.clone());
        }
        let v = self.t.tree(tag).get(key)?.map(|v| v.to_vec());
        self.read.insert(k, v.clone());
        Ok(v)
    }

    fn put(&mut self, tag: Tag, key: &[u8], value: Option<Vec<u8>>) {
        self.planned.insert((tag, key.to_vec()), value.clone());
        self.writes.push((tag, key.to_vec(), value));
    }

    fn insert(&mut self, tag: Tag, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.put(tag, key.as_ref(), Some(value.as_ref().to_vec()));
    }

    fn remove(&mut self, tag: Tag, key: impl AsRef<[u8]>) {
        self.put(tag, key.as_ref(), None);
    }

    /// Makes the writes; for WAL record `seq`, first logs the earlier value of each
    /// key they change. sled's log keeps writes in order, so rows are never on disk
    /// without the entry that undoes them.
    fn commit(mut self, at: Option<(u64, u32)>) -> Result<(), StorageError> {
        let t = self.t;
        if let Some((seq, change)) = at {
            let mut seen = HashSet::new();
            // Entries of at most about `UNDO_CHUNK_BYTES` each.
            let mut chunks: Vec<Vec<Before>> = Vec::new();
            let mut size = 0;
            for (tag, key, _) in &self.writes {
                if !seen.insert((*tag, key.as_slice())) {
                    continue;
                }
                let value = match self.read.remove(&(*tag, key.clone())) {
                    Some(v) => v,
                    None => t.tree(*tag).get(key)?.map(|v| v.to_vec()),
                };
                let bytes = key.len() + value.as_ref().map_or(0, Vec::len) + 8;
                match chunks.last_mut() {
                    Some(_) if size + bytes <= UNDO_CHUNK_BYTES => size += bytes,
                    _ => {
                        chunks.push(Vec::new());
                        size = bytes;
                    }
                }
                if let Some(chunk) = chunks.last_mut() {
                    chunk.push(Before {
                        tree: *tag,
                        key: key.clone(),
                        value,
                    });
                }
            }
            // Key: the record, then an ordinal: the change's place in the record, then
            // the chunk's (undone in reverse key order, newest first).
            let first = u64::from(change) << 32;
            for (ordinal, chunk) in (first..).zip(chunks) {
                let mut key = be(seq).to_vec();
                key.extend_from_slice(&be(ordinal));
                t.undo
                    .insert(key, codec::encode_versioned(UNDO_SCHEMA, &chunk)?)?;
            }
        }
        for (tag, key, value) in self.writes {
            match value {
                Some(v) => t.tree(tag).insert(key, v)?,
                None => t.tree(tag).remove(key)?,
            };
        }
        Ok(())
    }
}

/// The writes of an edit, flag change, reaction or deletion.
fn plan_writes(p: &mut Plan<'_>, op: Op) -> Result<(), StorageError> {
    match op {
        Op::Flags {
            user_id,
            flag,
            add,
            ids,
        } => {
            for id in ids {
                let key = user_key(user_id, id);
                let old = p.get(Tag::Um, &key)?.map(|v| bits_of(&v));
                let new = match (old, add) {
                    (Some(b), true) => b | flag,
                    (Some(b), false) => b & !flag,
                    // A message the user did not receive: Zulip adds a row marked
                    // historical (read, since it was never unread for them).
                    (None, true) => flags::HISTORICAL | flags::READ | flag,
                    (None, false) => (flags::HISTORICAL | flags::READ) & !flag,
                };
                p.insert(Tag::Um, key, new.to_le_bytes());
                if flag == flags::READ {
                    if add {
                        p.remove(Tag::Unread, key);
                    } else {
                        p.insert(Tag::Unread, key, []);
                    }
                }
            }
        }
        Op::Edited { pairs, mentions } => {
            // Zulip's `update_user_message_flags`: a content edit sets each
            // recipient's mention flags from the new rendering; other flags stay.
            for MentionFlags { id, mask, users } in mentions {
                for (user, bits) in users {
                    let key = user_key(user, id);
                    if let Some(old) = p.get(Tag::Um, &key)?.map(|v| bits_of(&v)) {
                        let new = (old & !mask) | (bits & mask);
                        if new != old {
                            p.insert(Tag::Um, key, new.to_le_bytes());
                        }
                    }
                }
            }
            for (before, after) in pairs {
                // The rows of a propagated move were read on a worker: one changed
                // since (a reaction, say) gets the edit's changes on top, one deleted
                // since stays deleted.
                let Some(current) = p.get(Tag::Rows, &be(after.id))? else {
                    continue;
                };
                let current = decode_message(&current)?;
                let after = if current == before || current == after {
                    after
                } else {
                    rebase_edit(current.clone(), &before, after)
                };
                p.insert(Tag::Rows, be(after.id), encode_message(&after)?);
                let old = index_keys(&current);
                let new = index_keys(&after);
                for k in old.iter().filter(|k| !new.contains(k)) {
                    p.remove(Tag::Idx, k);
                }
                for k in new {
                    p.insert(Tag::Idx, k, []);
                }
            }
        }
        Op::Reaction {
            message_id,
            reaction,
            add,
        } => {
            if let Some(v) = p.get(Tag::Rows, &be(message_id))? {
                let mut m = decode_message(&v)?;
                let before = m.reactions.len();
                if add {
                    if !m.reactions.contains(&reaction) {
                        m.reactions.push(reaction);
                    }
                } else {
                    m.reactions.retain(|r| *r != reaction);
                }
                if m.reactions.len() != before {
                    p.insert(Tag::Rows, be(m.id), encode_message(&m)?);
                }
            }
        }
        Op::Deleted(messages) => {
            // User-message and unread rows of deleted messages are left to readers,
            // which skip ids whose row is gone: finding them would mean a scan.
            for m in messages {
                p.remove(Tag::Rows, be(m.id));
                for k in index_keys(&m) {
                    p.remove(Tag::Idx, k);
                }
            }
        }
        Op::Logged { op, .. } => plan_writes(p, *op)?,
        Op::Sent { .. } | Op::Purge(_) | Op::Undo { .. } | Op::Trim { .. } => {}
    }
    Ok(())
}

/// Writes one projection. Idempotent: a replay writes the same keys again. Returns
/// whether it was a repair that changed rows (see `message_db`'s module doc).
pub(super) fn apply(t: &Trees, op: Op) -> Result<bool, StorageError> {
    match op {
        Op::Sent {
            message: m,
            recipients,
        } => {
            t.rows.insert(be(m.id), encode_message(&m)?)?;
            for k in index_keys(&m) {
                t.idx.insert(k, &[][..])?;
            }
            for (user, bits) in recipients {
                let key = user_key(user, m.id);
                t.um.insert(key, &bits.to_le_bytes()[..])?;
                if bits & flags::READ == 0 {
                    t.unread.insert(key, &[][..])?;
                }
            }
        }
        Op::Logged { seq, change, op } => {
            let mut plan = Plan::new(t);
            plan_writes(&mut plan, *op)?;
            plan.commit(Some((seq, change)))?;
        }
        op @ (Op::Flags { .. } | Op::Edited { .. } | Op::Reaction { .. } | Op::Deleted(_)) => {
            let mut plan = Plan::new(t);
            plan_writes(&mut plan, op)?;
            plan.commit(None)?;
        }
        Op::Undo { after } => {
            let entries: Vec<(sled::IVec, sled::IVec)> = t
                .undo
                .range(be(after.saturating_add(1))..)
                .collect::<Result<_, _>>()?;
            for (key, value) in entries.iter().rev() {
                for b in decode_undo(value)?.into_iter().rev() {
                    let tree = t.tree(b.tree);
                    match b.value {
                        Some(v) => tree.insert(b.key, v)?,
                        None => tree.remove(b.key)?,
                    };
                }
                t.undo.remove(key)?;
            }
            if !entries.is_empty() {
                tracing::warn!(
                    "undid the message rows of {} writes after WAL record {after}, whose \
                     records were lost",
                    entries.len()
                );
                return Ok(true);
            }
        }
        Op::Trim { upto } => {
            for key in t.undo.range(..be(upto.saturating_add(1))).keys() {
                t.undo.remove(key?)?;
            }
        }
        Op::Purge(realm) => {
            let from = realm.messages.next_id;
            let mut lost = Vec::new();
            for item in t.rows.range(be(from)..) {
                let (k, v) = item?;
                lost.push((id_at_end(&k), decode_message(&v).ok()));
            }
            if lost.is_empty() {
                return Ok(false);
            }
            // Per-user rows first, message rows last: sled recovers a prefix of its
            // log, so a purge cut short leaves message rows, and the next one finds it
            // unfinished.
            for &user in realm.users.keys() {
                for tree in [&t.um, &t.unread] {
                    let range = user_key(user, from)..=user_key(user, MessageId::MAX);
                    for key in tree.range(range).keys() {
                        tree.remove(key?)?;
                    }
                }
            }
            // Users created by lost records too: ids from the realm's next one (beside
            // system bots with high ids, whose rows of earlier messages stay).
            for tree in [&t.um, &t.unread] {
                for key in tree.range(user_key(realm.next_user_id, 0)..).keys() {
                    let key = key?;
                    if id_at_end(&key) >= from {
                        tree.remove(key)?;
                    }
                }
            }
            for (id, m) in &lost {
                for k in m.iter().flat_map(index_keys) {
                    t.idx.remove(k)?;
                }
                t.rows.remove(be(*id))?;
            }
            tracing::warn!(
                "removed {} message rows (ids from {from}) whose WAL records were lost",
                lost.len()
            );
            return Ok(true);
        }
    }
    Ok(false)
}

impl MessageStore {
    pub(super) fn new(subdomain: &str, db: Arc<MessageDb>) -> Self {
        MessageStore {
            inner: Arc::new(Inner {
                names: Arc::new(tree_names(subdomain)),
                db,
            }),
        }
    }

    fn trees(&self) -> Result<Trees, StorageError> {
        self.inner.db.trees(&self.inner.names)
    }

    /// Waits (bounded) until the message database is open, so that reads on this task
    /// do not block their thread; `Err`: why it is not.
    pub async fn ready(&self) -> Result<(), String> {
        self.inner.db.ready().await
    }

    /// Whether reads would not wait for the message database to open.
    pub fn is_open(&self) -> bool {
        self.inner.db.is_open()
    }

    /// Writes the rows a change implies (nothing for changes that are not about
    /// messages); while the message database opens they are queued. `realm` is the
    /// state right before the change. Idempotent. `at`: the change's WAL record and
    /// its place in it, when it may not be durable yet: the rows an edit, flag change,
    /// reaction or deletion replaces are then logged, for `undo_after` (a replay of
    /// records read back from disk passes `None`). A lost send needs no log:
    /// `purge_from` removes its rows.
    pub fn project(
        &self,
        realm: &Realm,
        change: &Change,
        at: Option<(u64, u32)>,
    ) -> Result<(), StorageError> {
        let Change::Message(change) = change else {
            return Ok(());
        };
        let op = match change {
            MessageChange::Sent(_) | MessageChange::Notice { .. } => {
                let Some((m, recipients)) = realm.delivery(change) else {
                    return Ok(());
                };
                Op::Sent {
                    message: m.clone(),
                    recipients,
                }
            }
            MessageChange::FlagsChanged {
                user_id,
                flag,
                add,
                ids,
            } => Op::Flags {
                user_id: *user_id,
                flag: *flag,
                add: *add,
                ids: ids.clone(),
            },
            MessageChange::Edited { pairs, .. } => Op::Edited {
                pairs: pairs.clone(),
                mentions: pairs
                    .iter()
                    .filter(|(b, a)| b.mentioned != a.mentioned || b.wildcard != a.wildcard)
                    .map(|(before, after)| realm.edit_mentions(before, after))
                    .chain(
                        pairs
                            .iter()
                            .filter_map(|(before, after)| realm.edit_alert_words(before, after)),
                    )
                    .collect(),
            },
            MessageChange::ReactionAdded {
                message_id,
                reaction,
                ..
            } => Op::Reaction {
                message_id: *message_id,
                reaction: reaction.clone(),
                add: true,
            },
            MessageChange::ReactionRemoved {
                message_id,
                reaction,
                ..
            } => Op::Reaction {
                message_id: *message_id,
                reaction: reaction.clone(),
                add: false,
            },
            MessageChange::ScheduledCreated(_)
            | MessageChange::ScheduledUpdated(_)
            | MessageChange::ScheduledDeleted { .. }
            | MessageChange::ScheduledDelivered { .. }
            | MessageChange::ScheduledFailed { .. } => return Ok(()),
            MessageChange::Deleted { messages, .. } => Op::Deleted(messages.clone()),
        };
        let op = match (at, op) {
            (_, op @ Op::Sent { .. }) | (None, op) => op,
            (Some((seq, change)), op) => Op::Logged {
                seq,
                change,
                op: Box::new(op),
            },
        };
        self.inner.db.write(&self.inner.names, op)
    }

    /// Puts back the rows that the changes of WAL records after `seq` replaced (see
    /// `project`): after a storage fault dropped them, or at start when they were lost
    /// with the WAL's unflushed tail. Queued in order with the other writes.
    pub fn undo_after(&self, seq: u64) -> Result<(), StorageError> {
        self.inner
            .db
            .write(&self.inner.names, Op::Undo { after: seq })
    }

    /// Forgets the undo log up to WAL record `seq`, once a durable snapshot covers it.
    pub fn trim_undo(&self, seq: u64) -> Result<(), StorageError> {
        self.inner
            .db
            .write(&self.inner.names, Op::Trim { upto: seq })
    }

    /// Removes the rows of messages from the realm's next id on, written before their
    /// WAL record was lost (the message database may get ahead of the WAL: another
    /// realm's snapshot syncs it, and sled writes full buffers on its own), so that the
    /// ids the realm gives again never meet per-user rows of a message that was never
    /// acknowledged. Queued after a recovery's replay and after a fault's reset, before
    /// any new send; one range probe when there is nothing to remove.
    pub fn purge_from(&self, realm: &Realm) -> Result<(), StorageError> {
        self.inner
            .db
            .write(&self.inner.names, Op::Purge(Arc::new(realm.clone())))
    }

    /// Makes every row written so far durable (before a snapshot; see `message_db`);
    /// returns the sync's number.
    pub fn sync(&self) -> Result<u64, StorageError> {
        self.inner.db.sync()
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
}

/// `current` with what an edit decided on an older copy of it (`before` → `after`)
/// changed: its place, content and edit times, and its new edit records (once: a
/// replay finds them there already).
fn rebase_edit(mut current: Message, before: &Message, after: Message) -> Message {
    if before.recipient != after.recipient {
        current.recipient = after.recipient;
    }
    if before.content != after.content {
        current.content = after.content;
        current.rendered_content = after.rendered_content;
        current.mentioned = after.mentioned;
        current.wildcard = after.wildcard;
        current.is_me_message = after.is_me_message;
    }
    if before.last_edit_timestamp != after.last_edit_timestamp {
        current.last_edit_timestamp = after.last_edit_timestamp;
    }
    if before.last_moved_timestamp != after.last_moved_timestamp {
        current.last_moved_timestamp = after.last_moved_timestamp;
    }
    let new_edits = after.edits.get(before.edits.len()..).unwrap_or_default();
    if !new_edits.is_empty() && !current.edits.ends_with(new_edits) {
        current.edits.extend_from_slice(new_edits);
    }
    current
}

fn bits_of(v: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    let n = v.len().min(4);
    b[..n].copy_from_slice(&v[..n]);
    u32::from_le_bytes(b)
}

fn rows_error(e: StorageError) -> RowsError {
    RowsError::new(e)
}

impl MessageRows for MessageStore {
    fn row(&self, id: MessageId) -> RowsResult<Option<Message>> {
        self.get(id).map_err(rows_error)
    }

    fn user_flags(&self, user: UserId, id: MessageId) -> RowsResult<Option<u32>> {
        self.flags(user, id).map_err(rows_error)
    }

    fn scan<'a>(
        &'a self,
        source: &Source,
        from: MessageId,
        to: MessageId,
        reverse: bool,
    ) -> RowsResult<Box<dyn Iterator<Item = RowsResult<MessageId>> + 'a>> {
        let ids = self.ids(source, from, to, reverse).map_err(rows_error)?;
        Ok(Box::new(ids.map(|r| r.map_err(rows_error))))
    }
}

impl MessageStorePort for MessageStore {
    fn ready(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + '_>> {
        Box::pin(MessageStore::ready(self))
    }
}

/// The realm archive's writes (`ops::archive`): a message as an archive holds it, and
/// the removal of what an import that failed wrote.
impl MessageStore {
    /// Writes one message row with its index entries and each user's flag bits (and
    /// unread entries), as a send projects them. Idempotent.
    pub fn insert_archived(
        &self,
        message: Message,
        flags: Vec<(UserId, u32)>,
    ) -> Result<(), StorageError> {
        self.inner.db.write(
            &self.inner.names,
            Op::Sent {
                message,
                recipients: flags,
            },
        )
    }

    /// Empties every tree of the realm's messages (an import that failed; the realm
    /// is not served).
    pub fn clear(&self) -> Result<(), StorageError> {
        let t = self.trees()?;
        for tree in [&t.rows, &t.idx, &t.um, &t.unread, &t.undo] {
            tree.clear()?;
        }
        Ok(())
    }
}
