//! The message store of one realm: message rows and the trees that serve narrows.
//!
//! Trees (per realm, in the message database `<data>/messages/`, apart from the
//! database the realms recover from: see `message_db`):
//!
//! | tree             | key                                         | value |
//! |------------------|---------------------------------------------|-------|
//! | `msg:<realm>`    | message id (u64 BE)                         | framed `Message` |
//! | `msgidx:<realm>` | `t` channel, topic, id / `d` conversation, id   | empty |
//! | `ubits128:<realm>` | owner, kind, id / 128 (u64 BE each but the kind) | bitmap of ids |
//! | `uflags:<realm>` | user id, message id                         | flag bits but `read` (u32 LE), when any |
//! | `msgundo:<realm>` | WAL record, ordinal (u64 BE each)          | framed `Vec<Before>`: what a logged write replaced |
//!
//! Ids are big-endian, so each index is ordered by message id within its prefix and a
//! narrow is one range scan (of keys, or of bitmap chunks). A topic key is the lower-cased topic with its length in
//! front, so one topic's prefix never covers another's.
//!
//! # Bitmaps: per-user flags, channels and senders
//!
//! A set of message ids that grows with nearly every message of its owner is kept as
//! bitmaps of 128 ids a key in `ubits128`: kind `c`, a channel's messages (owner: the
//! channel id); `s`, a sender's; `r` and `u`, a user's received and unread ones (below).
//! Topics and conversations keep a key per message in `msgidx`: a topic is too sparse
//! among a realm's ids for bitmaps to pay.
//!
//! A user's messages (Zulip's user-message rows) are two sets of ids kept as bitmaps of
//! 128 ids a key (`ubits128`, bit `i` of byte `j` of chunk `c` is id `c·128 + 8j + i`,
//! trailing zero bytes dropped, an empty chunk removed): `r`, the messages the user
//! received (has flags on), and `u`, those of them unread. The `read` flag is "received
//! and not unread"; every other flag (starred, mentioned, historical, ...) is an
//! exception kept per (user, message) in `uflags`, only when the message has one. A
//! message to a channel of five subscribers that mentions nobody thus adds two keys,
//! its row and its topic entry, and sets a bit in chunks that a hundred messages share
//! (its channel's, its sender's, and each recipient's).
//!
//! # Why chunks of 128 ids
//!
//! sled writes every insert to its log as the key and its whole new value, and every
//! tenth change of a tree node as the whole node; a send changes eleven chunks (for a
//! channel of five), so the log grows by about eleven chunks and one node of chunks
//! per message, and what it replaced stays on disk until sled's cleaner reclaims the
//! segment (only once it is at most half live). Chunks of 1 024 ids (up to 128 bytes,
//! `ubits:<realm>` until this layout) are most of what a send writes to the log (eleven
//! values of up to 128 bytes against one ~200-byte row and one ~30-byte topic key), so
//! most of the garbage on disk; chunks of 128 ids (up to 16 bytes) cost ~0.09 keys per
//! message instead of ~0.01. The bytes on disk it saves are not measured yet
//! (`benches/RESULTS.md` §17 says how). A database with `ubits:` trees is rewritten at
//! its first start (`migrate_layout`), as the layout before bitmaps is. `flags` reads the two bits and
//! the exception; `Source::User`, `Unread`, `Channel` and `Sender` scan chunks.
//!
//! Before this layout (hearth up to 341b372) a user's flags were a key per (user,
//! message) in `um:<realm>` (all bits) and an empty key per unread one in
//! `unread:<realm>`, and the channel and sender indexes a key per message in `msgidx`:
//! 13 keys for such a message. `migrate_layout` rewrites them at the first start,
//! copying the database into a fresh one that is then swapped in (`message_db`), so
//! that the removed keys leave no emptied nodes behind.
//!
//! # Writing
//!
//! Rows are computed for each change from the realm state right before it, after its
//! WAL record was appended: the realm actor hands a commit's rows to the message
//! database's writer thread (`add`, `commit`; see `message_db`), recovery writes them
//! while replaying (`project`); a replay writes them again, idempotently. The WAL record is the
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
//! therefore first logs the earlier value of every key and bit it writes (`Op::Logged`,
//! the log entry inserted before the rows, and sled's log keeps that order on disk):
//! a bit is logged as the bit, not as its chunk, so that undoing it leaves the other
//! bits of the chunk (a later send's) alone. Records that never become durable are
//! undone from that log (`undo_after`): those a storage fault dropped, at the actor's
//! reset, and those lost with the WAL's unflushed tail, at start after the replay. A
//! snapshot trims the log up to the record it covers. Sends log nothing: their rows
//! are new keys and new bits, which `purge_from` removes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::message_db::{MessageDb, Projected};
use super::{codec, StorageError};
use crate::realm::channels::ChannelId;
use crate::realm::messages::fetch::{MessageRows, RowsError, RowsResult, Source};
use crate::realm::messages::flags::MentionFlags;
use crate::realm::messages::rows::MessageStorePort;
use crate::realm::messages::search::SearchQuery;
use crate::realm::messages::{flags, Message, MessageChange, MessageId, Recipient};
use crate::realm::{Change, Realm, UserId};

/// Schema version of a message row.
const MESSAGE_SCHEMA: u8 = 1;

/// The trees of one realm's messages.
#[derive(Clone)]
pub(super) struct Trees {
    pub(super) rows: sled::Tree,
    pub(super) idx: sled::Tree,
    /// Flag bits but `read`, per (user, message) that has any.
    pub(super) flags: sled::Tree,
    /// Per user, the bitmaps of received and of unread message ids.
    pub(super) bits: sled::Tree,
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
    /// How far the realm actor's commits are written (`commit`).
    projected: Arc<Projected>,
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

/// The ids one `ubits128` key covers: 2^7.
const CHUNK_SHIFT: u32 = 7;
/// The ids one key of the bitmaps before (`ubits:<realm>`) covered: 2^10.
const LEGACY_CHUNK_SHIFT: u32 = 10;
/// The prefix of the bitmap trees of 1 024 ids a chunk (see the module doc).
pub const LEGACY_BITS_TREE: &str = "ubits:";
/// The bitmap of the messages a user received (has flags on).
pub(super) const RECEIVED: u8 = b'r';
/// The bitmap of the messages a user received and has not read.
pub(super) const UNREAD: u8 = b'u';
/// The bitmap of the messages a user sent (the sender index).
pub(super) const SENT: u8 = b's';
/// The bitmap of the messages of a channel (the channel index; its owner is the
/// channel's id).
pub(super) const CHANNEL: u8 = b'c';

/// The `ubits` key of `user`'s `kind` bitmap chunk `chunk`.
pub(super) fn bits_key(user: UserId, kind: u8, chunk: u64) -> [u8; 17] {
    let mut k = [0u8; 17];
    k[..8].copy_from_slice(&be(user));
    k[8] = kind;
    k[9..].copy_from_slice(&be(chunk));
    k
}

/// The chunk of an id, and its byte and bit in the chunk's bitmap.
fn chunk_of(id: MessageId) -> (u64, usize, u8) {
    let at = (id & ((1 << CHUNK_SHIFT) - 1)) as usize;
    (id >> CHUNK_SHIFT, at / 8, 1u8 << (at % 8))
}

/// Whether `id`'s bit is set in its chunk's bitmap `v`.
fn bit_in(v: Option<&[u8]>, id: MessageId) -> bool {
    let (_, byte, mask) = chunk_of(id);
    v.and_then(|v| v.get(byte)).is_some_and(|b| b & mask != 0)
}

/// Sets or clears `id`'s bit in its chunk's bitmap `v` (trailing zero bytes dropped).
pub(super) fn set_bit(v: &mut Vec<u8>, id: MessageId, on: bool) {
    let (_, byte, mask) = chunk_of(id);
    if on {
        if v.len() <= byte {
            v.resize(byte + 1, 0);
        }
        v[byte] |= mask;
    } else if let Some(b) = v.get_mut(byte) {
        *b &= !mask;
    }
    while v.last() == Some(&0) {
        v.pop();
    }
}

/// The ids set in chunk `chunk`'s bitmap `v`, ascending.
fn ids_in(chunk: u64, v: &[u8]) -> Vec<MessageId> {
    ids_in_chunks_of(CHUNK_SHIFT, chunk, v)
}

/// `ids_in` for chunks of 2^`shift` ids.
fn ids_in_chunks_of(shift: u32, chunk: u64, v: &[u8]) -> Vec<MessageId> {
    let base = chunk << shift;
    let mut ids = Vec::new();
    for (i, b) in v.iter().enumerate() {
        for bit in 0..8 {
            if b & (1 << bit) != 0 {
                ids.push(base + (i as u64) * 8 + bit);
            }
        }
    }
    ids
}

/// Clears the bits of ids from `from` on in chunk `chunk`'s bitmap `v`.
fn clear_from(chunk: u64, v: &mut Vec<u8>, from: MessageId) {
    for id in ids_in(chunk, v) {
        if id >= from {
            set_bit(v, id, false);
        }
    }
}

/// Sets or clears one bit on disk (a read, then a write of its chunk).
fn write_bit(
    t: &Trees,
    kind: u8,
    user: UserId,
    id: MessageId,
    on: bool,
) -> Result<(), StorageError> {
    let key = bits_key(user, kind, chunk_of(id).0);
    let old = t.bits.get(key)?;
    if bit_in(old.as_deref(), id) == on {
        return Ok(());
    }
    let mut v = old.map(|v| v.to_vec()).unwrap_or_default();
    set_bit(&mut v, id, on);
    if v.is_empty() {
        t.bits.remove(key)?;
    } else {
        t.bits.insert(key, v)?;
    }
    Ok(())
}

/// A user's flag bits but `read` on disk: an exception key, or nothing.
fn write_extra(t: &Trees, key: [u8; 16], bits: u32) -> Result<(), StorageError> {
    let extra = bits & !flags::READ;
    if extra == 0 {
        t.flags.remove(key)?;
    } else {
        t.flags.insert(key, &extra.to_le_bytes()[..])?;
    }
    Ok(())
}

/// The index keys a message has: its topic's or its conversation's.
fn index_keys(m: &Message) -> Vec<Vec<u8>> {
    match &m.recipient {
        Recipient::Channel { channel_id, topic } => {
            vec![with_id(topic_prefix(*channel_id, topic), m.id)]
        }
        Recipient::Direct { users } => vec![with_id(conversation_prefix(users), m.id)],
    }
}

/// The index bitmaps a message is in (kind, owner): its sender's and its channel's.
fn index_bits(m: &Message) -> Vec<(u8, u64)> {
    let mut bits = vec![(SENT, m.sender_id)];
    if let Some(channel) = m.recipient.channel() {
        bits.push((CHANNEL, channel));
    }
    bits
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

/// The names of a realm's trees: rows, index, flag exceptions, per-user bitmaps, undo
/// log.
pub fn tree_names(subdomain: &str) -> [String; 5] {
    [
        format!("msg:{subdomain}"),
        format!("msgidx:{subdomain}"),
        format!("uflags:{subdomain}"),
        format!("ubits128:{subdomain}"),
        format!("msgundo:{subdomain}"),
    ]
}

/// The prefixes of the per-user trees of the layout before bitmaps (see the module
/// doc): a key per (user, message) with all its flag bits, and one per unread message.
pub const LEGACY_USER_TREES: [&str; 2] = ["um:", "unread:"];

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

/// Which tree a write goes to (in the undo log). Positional: variants are only added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
enum Tag {
    Rows,
    Idx,
    /// The layout before bitmaps: a user's flags on a message, `read` included (undone
    /// as the received bit and the exception).
    Um,
    /// The layout before bitmaps: a user's unread message (undone as the unread bit).
    Unread,
    /// `uflags`: a key.
    Flags,
    /// A bit of a `ubits` bitmap: `key` is its owner (u64 BE), kind and message id
    /// (u64 BE), `value` is `Some` (empty) when it was set.
    Bit,
}

/// The undo-log key of a bit (`Tag::Bit`).
fn bit_key(kind: u8, owner: u64, id: MessageId) -> Vec<u8> {
    let mut k = Vec::with_capacity(17);
    k.extend_from_slice(&be(owner));
    k.push(kind);
    k.extend_from_slice(&be(id));
    k
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
    /// The tree of a key-level tag (rows, index, exceptions); bits are written through
    /// `write_bit`.
    fn tree(&self, tag: Tag) -> &sled::Tree {
        match tag {
            Tag::Rows => &self.rows,
            Tag::Idx => &self.idx,
            _ => &self.flags,
        }
    }

    /// Puts back one logged earlier value.
    fn restore(&self, b: Before) -> Result<(), StorageError> {
        let user_id = |key: &[u8]| (id_at_end(&key[..key.len().min(8)]), id_at_end(key));
        match b.tree {
            // A channel or sender entry of the layout before bitmaps (a move or a
            // deletion logged by an older hearth): its bit.
            Tag::Idx if b.key.len() == 17 && matches!(b.key[0], b'c' | b's') => {
                let kind = if b.key[0] == b'c' { CHANNEL } else { SENT };
                let owner = id_at_end(&b.key[..9]);
                write_bit(self, kind, owner, id_at_end(&b.key), b.value.is_some())?;
            }
            Tag::Rows | Tag::Idx | Tag::Flags => {
                let tree = self.tree(b.tree);
                match b.value {
                    Some(v) => tree.insert(b.key, v)?,
                    None => tree.remove(b.key)?,
                };
            }
            Tag::Bit => {
                let (owner, id) = user_id(&b.key);
                let kind = b.key.get(8).copied().unwrap_or_default();
                write_bit(self, kind, owner, id, b.value.is_some())?;
            }
            Tag::Um => {
                let (user, id) = user_id(&b.key);
                let bits = b.value.as_deref().map(bits_of);
                write_bit(self, RECEIVED, user, id, bits.is_some())?;
                write_extra(self, user_key(user, id), bits.unwrap_or(0))?;
            }
            Tag::Unread => {
                let (user, id) = user_id(&b.key);
                write_bit(self, UNREAD, user, id, b.value.is_some())?;
            }
        }
        Ok(())
    }
}

/// A bitmap chunk as on disk (`None`: absent) and as planned.
type Chunk = (Option<Vec<u8>>, Vec<u8>);

/// A user's received messages with their flags (`MessageStore::received`).
pub type Received = Box<dyn Iterator<Item = Result<(MessageId, u32), StorageError>> + Send>;

/// The writes of one op, gathered before any is made (reads see the earlier ones), so
/// that the keys' and bits' earlier values can be logged first.
struct Plan<'a> {
    t: &'a Trees,
    writes: Vec<(Tag, Vec<u8>, Option<Vec<u8>>)>,
    /// The newest planned value of each key written.
    planned: HashMap<(Tag, Vec<u8>), Option<Vec<u8>>>,
    /// Each key's value on disk as first read, so that logging it reads it no more.
    read: HashMap<(Tag, Vec<u8>), Option<Vec<u8>>>,
    /// Each bitmap chunk touched: as on disk, and as planned.
    chunks: BTreeMap<[u8; 17], Chunk>,
    /// The bits written, in order: kind, owner, message.
    bits: Vec<(u8, u64, MessageId)>,
}

impl<'a> Plan<'a> {
    fn new(t: &'a Trees) -> Self {
        Plan {
            t,
            writes: Vec::new(),
            planned: HashMap::new(),
            read: HashMap::new(),
            chunks: BTreeMap::new(),
            bits: Vec::new(),
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

    /// The chunk holding `id`'s bit of `user`'s `kind` bitmap, read once.
    fn chunk(&mut self, kind: u8, user: UserId, id: MessageId) -> Result<&mut Chunk, StorageError> {
        let key = bits_key(user, kind, chunk_of(id).0);
        if !self.chunks.contains_key(&key) {
            let v = self.t.bits.get(key)?.map(|v| v.to_vec());
            let planned = v.clone().unwrap_or_default();
            self.chunks.insert(key, (v, planned));
        }
        self.chunks
            .get_mut(&key)
            .ok_or_else(|| StorageError::Invalid("a bitmap chunk vanished".into()))
    }

    fn bit(&mut self, kind: u8, user: UserId, id: MessageId) -> Result<bool, StorageError> {
        Ok(bit_in(Some(&self.chunk(kind, user, id)?.1), id))
    }

    fn set_bit(
        &mut self,
        kind: u8,
        user: UserId,
        id: MessageId,
        on: bool,
    ) -> Result<(), StorageError> {
        set_bit(&mut self.chunk(kind, user, id)?.1, id, on);
        self.bits.push((kind, user, id));
        Ok(())
    }

    /// A user's flag bits on a message, as `MessageStore::flags`.
    fn user_bits(&mut self, user: UserId, id: MessageId) -> Result<Option<u32>, StorageError> {
        if !self.bit(RECEIVED, user, id)? {
            return Ok(None);
        }
        let extra = self
            .get(Tag::Flags, &user_key(user, id))?
            .map_or(0, |v| bits_of(&v));
        let read = if self.bit(UNREAD, user, id)? {
            0
        } else {
            flags::READ
        };
        Ok(Some((extra & !flags::READ) | read))
    }

    /// Makes a user's flag bits on a message `new` (they were `old`, as `user_bits`).
    fn set_user_bits(
        &mut self,
        user: UserId,
        id: MessageId,
        old: Option<u32>,
        new: u32,
    ) -> Result<(), StorageError> {
        if old.is_none() {
            self.set_bit(RECEIVED, user, id, true)?;
        }
        let (old_extra, new_extra) = (old.unwrap_or(0) & !flags::READ, new & !flags::READ);
        if old_extra != new_extra {
            let key = user_key(user, id);
            if new_extra == 0 {
                self.remove(Tag::Flags, key);
            } else {
                self.insert(Tag::Flags, key, new_extra.to_le_bytes());
            }
        }
        let old_unread = old.is_some_and(|b| b & flags::READ == 0);
        let new_unread = new & flags::READ == 0;
        if old_unread != new_unread {
            self.set_bit(UNREAD, user, id, new_unread)?;
        }
        Ok(())
    }

    /// Makes the writes; for WAL record `seq`, first logs the earlier value of each
    /// key and bit they change. sled's log keeps writes in order, so rows are never on
    /// disk without the entry that undoes them.
    fn commit(mut self, at: Option<(u64, u32)>) -> Result<(), StorageError> {
        let t = self.t;
        if let Some((seq, change)) = at {
            let mut befores = Vec::new();
            let mut seen = HashSet::new();
            for (tag, key, _) in &self.writes {
                if !seen.insert((*tag, key.clone())) {
                    continue;
                }
                let value = match self.read.remove(&(*tag, key.clone())) {
                    Some(v) => v,
                    None => t.tree(*tag).get(key)?.map(|v| v.to_vec()),
                };
                befores.push(Before {
                    tree: *tag,
                    key: key.clone(),
                    value,
                });
            }
            for &(kind, owner, id) in &self.bits {
                let key = bit_key(kind, owner, id);
                if !seen.insert((Tag::Bit, key.clone())) {
                    continue;
                }
                let on_disk = self
                    .chunks
                    .get(&bits_key(owner, kind, chunk_of(id).0))
                    .is_some_and(|(disk, _)| bit_in(disk.as_deref(), id));
                befores.push(Before {
                    tree: Tag::Bit,
                    key,
                    value: on_disk.then(Vec::new),
                });
            }
            // Entries of at most about `UNDO_CHUNK_BYTES` each.
            let mut chunks: Vec<Vec<Before>> = Vec::new();
            let mut size = 0;
            for before in befores {
                let bytes = before.key.len() + before.value.as_ref().map_or(0, Vec::len) + 8;
                match chunks.last_mut() {
                    Some(_) if size + bytes <= UNDO_CHUNK_BYTES => size += bytes,
                    _ => {
                        chunks.push(Vec::new());
                        size = bytes;
                    }
                }
                if let Some(chunk) = chunks.last_mut() {
                    chunk.push(before);
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
        for (key, (disk, planned)) in self.chunks {
            if disk.as_deref().unwrap_or_default() == planned.as_slice() {
                continue;
            }
            if planned.is_empty() {
                t.bits.remove(key)?;
            } else {
                t.bits.insert(key, planned)?;
            }
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
                let old = p.user_bits(user_id, id)?;
                let new = match (old, add) {
                    (Some(b), true) => b | flag,
                    (Some(b), false) => b & !flag,
                    // A message the user did not receive: Zulip adds a row marked
                    // historical (read, since it was never unread for them).
                    (None, true) => flags::HISTORICAL | flags::READ | flag,
                    (None, false) => (flags::HISTORICAL | flags::READ) & !flag,
                };
                if Some(new) != old {
                    p.set_user_bits(user_id, id, old, new)?;
                }
            }
        }
        Op::Edited { pairs, mentions } => {
            // Zulip's `update_user_message_flags`: a content edit sets each
            // recipient's mention flags from the new rendering; other flags stay.
            for MentionFlags { id, mask, users } in mentions {
                for (user, bits) in users {
                    if let Some(old) = p.user_bits(user, id)? {
                        let new = (old & !mask) | (bits & mask);
                        if new != old {
                            p.set_user_bits(user, id, Some(old), new)?;
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
                let (old, new) = (index_bits(&current), index_bits(&after));
                for &(kind, owner) in old.iter().filter(|b| !new.contains(b)) {
                    p.set_bit(kind, owner, after.id, false)?;
                }
                for &(kind, owner) in new.iter().filter(|b| !old.contains(b)) {
                    p.set_bit(kind, owner, after.id, true)?;
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
            // Users' bits and exceptions of deleted messages are left to readers, which
            // skip ids whose row is gone: finding them would mean a scan.
            for m in messages {
                p.remove(Tag::Rows, be(m.id));
                for k in index_keys(&m) {
                    p.remove(Tag::Idx, k);
                }
                for (kind, owner) in index_bits(&m) {
                    p.set_bit(kind, owner, m.id, false)?;
                }
            }
        }
        Op::Logged { op, .. } => plan_writes(p, *op)?,
        Op::Sent { .. } | Op::Purge(_) | Op::Undo { .. } | Op::Trim { .. } => {}
    }
    Ok(())
}

/// Bitmap chunks that a run of sends sets bits in, each read once and written once
/// (`apply_all`): a send sets about ten bits, in chunks that a thousand messages share.
#[derive(Default)]
struct Chunks(BTreeMap<[u8; 17], (bool, Vec<u8>)>);

impl Chunks {
    /// Sets `id`'s bit in `owner`'s `kind` bitmap (read from disk the first time).
    fn set(&mut self, t: &Trees, kind: u8, owner: u64, id: MessageId) -> Result<(), StorageError> {
        let key = bits_key(owner, kind, chunk_of(id).0);
        let (changed, v) = match self.0.entry(key) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                let old = t.bits.get(key)?.map(|v| v.to_vec()).unwrap_or_default();
                e.insert((false, old))
            }
        };
        if !bit_in(Some(v.as_slice()), id) {
            set_bit(v, id, true);
            *changed = true;
        }
        Ok(())
    }

    /// Writes the chunks that changed.
    fn write(self, t: &Trees) -> Result<(), StorageError> {
        for (key, (changed, v)) in self.0 {
            if changed {
                t.bits.insert(key, v)?;
            }
        }
        Ok(())
    }
}

/// A send's row, index entry and exceptions, and its bits into `chunks` (written by
/// the caller after the rows: a bit on disk always has its row).
fn write_sent(
    t: &Trees,
    m: &Message,
    recipients: &[(UserId, u32)],
    chunks: &mut Chunks,
) -> Result<(), StorageError> {
    t.rows.insert(be(m.id), encode_message(m)?)?;
    for k in index_keys(m) {
        t.idx.insert(k, &[][..])?;
    }
    for (kind, owner) in index_bits(m) {
        chunks.set(t, kind, owner, m.id)?;
    }
    // A bit in each recipient's received chunk (and unread one), and an exception key
    // only for flags beyond `read`. A replay sets the same bits; an exception a later
    // record removed is removed again by its replay.
    for &(user, bits) in recipients {
        chunks.set(t, RECEIVED, user, m.id)?;
        if bits & flags::READ == 0 {
            chunks.set(t, UNREAD, user, m.id)?;
        }
        if bits & !flags::READ != 0 {
            write_extra(t, user_key(user, m.id), bits)?;
        }
    }
    Ok(())
}

/// Writes projections in order, as `apply` each would; a run of sends sets its bits
/// in each bitmap chunk once (`Chunks`), after the run's rows. Returns whether a
/// repair among them changed rows.
pub(super) fn apply_all(t: &Trees, ops: Vec<Op>) -> Result<bool, StorageError> {
    let mut chunks = Chunks::default();
    let mut repaired = false;
    for op in ops {
        match op {
            Op::Sent {
                message,
                recipients,
            } => write_sent(t, &message, &recipients, &mut chunks)?,
            op => {
                std::mem::take(&mut chunks).write(t)?;
                repaired |= apply(t, op)?;
            }
        }
    }
    chunks.write(t)?;
    Ok(repaired)
}

/// Writes one projection. Idempotent: a replay writes the same keys again. Returns
/// whether it was a repair that changed rows (see `message_db`'s module doc).
pub(super) fn apply(t: &Trees, op: Op) -> Result<bool, StorageError> {
    match op {
        Op::Sent {
            message: m,
            recipients,
        } => {
            let mut chunks = Chunks::default();
            write_sent(t, &m, &recipients, &mut chunks)?;
            chunks.write(t)?;
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
                    t.restore(b)?;
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
            let mut chunks = Vec::new();
            for &user in realm.users.keys() {
                let range = user_key(user, from)..=user_key(user, MessageId::MAX);
                for key in t.flags.range(range).keys() {
                    t.flags.remove(key?)?;
                }
                for kind in [RECEIVED, UNREAD] {
                    let (lo, hi) = (
                        bits_key(user, kind, chunk_of(from).0),
                        bits_key(user, kind, MessageId::MAX >> CHUNK_SHIFT),
                    );
                    for item in t.bits.range(lo..=hi) {
                        chunks.push(item?);
                    }
                }
            }
            // Users created by lost records too: ids from the realm's next one (beside
            // system bots with high ids, whose rows of earlier messages stay).
            for key in t.flags.range(user_key(realm.next_user_id, 0)..).keys() {
                let key = key?;
                if id_at_end(&key) >= from {
                    t.flags.remove(key)?;
                }
            }
            for item in t.bits.range(be(realm.next_user_id)..) {
                let (key, v) = item?;
                if (id_at_end(&key) + 1) << CHUNK_SHIFT > from {
                    chunks.push((key, v));
                }
            }
            for (key, v) in chunks {
                let mut bits = v.to_vec();
                clear_from(id_at_end(&key), &mut bits, from);
                if bits.is_empty() {
                    t.bits.remove(key)?;
                } else if bits != v.as_ref() {
                    t.bits.insert(key, bits)?;
                }
            }
            for (id, m) in &lost {
                for k in m.iter().flat_map(index_keys) {
                    t.idx.remove(k)?;
                }
                for (kind, owner) in m.iter().flat_map(index_bits) {
                    write_bit(t, kind, owner, *id, false)?;
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
                projected: Arc::default(),
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

    /// See `MessageDb::generation`: read it before reading the rows an answer kept
    /// under it is computed from.
    pub fn generation(&self) -> u64 {
        self.inner.db.generation()
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
        match op_for(realm, change, at) {
            Some(op) => self.inner.db.write(&self.inner.names, op),
            None => Ok(()),
        }
    }

    /// Adds the rows a change implies to `p` (as `project` would write them), for
    /// `commit`.
    pub fn add(&self, p: &mut Projection, realm: &Realm, change: &Change, at: (u64, u32)) {
        p.0.extend(op_for(realm, change, Some(at)));
    }

    /// Hands the rows of the realm actor's commit whose durability ticket is `ticket`
    /// to the message database's writer thread (see `message_db`'s module doc):
    /// written in order with every other write, after this call returns. Readers see
    /// the commit once `projected_upto` reaches `ticket`.
    pub fn commit(&self, p: Projection, ticket: u64) {
        self.inner
            .db
            .write_commit(&self.inner.names, p.0, &self.inner.projected, ticket);
    }

    /// The ticket up to which every commit's rows are where readers find them (the
    /// event hub releases no further).
    pub fn projected_upto(&self) -> u64 {
        self.inner.projected.upto()
    }

    /// Waits until the rows of the commit with `ticket` are where readers find them.
    pub async fn projected(&self, ticket: u64) {
        self.inner.db.projected(&self.inner.projected, ticket).await;
    }

    /// Blocks until every write handed over so far is written (the realm actor before
    /// it reads rows or drops undurable decisions).
    pub fn caught_up(&self) {
        self.inner.db.drain();
    }

    /// Starts the realm's search index (see `storage::search`): opened, or rebuilt from
    /// these rows, on its own thread.
    pub fn start_search_index(&self) {
        self.inner.db.search_index(&self.inner.names);
    }

    /// The rows as the realm actor reads them: every commit it handed over written
    /// first (`caught_up`), so a rule sees the rows of every earlier decision.
    pub fn for_actor(&self) -> ActorRows {
        ActorRows(self.clone())
    }
}

/// The rows of one commit of the realm actor, in order (`MessageStore::add`).
#[derive(Default)]
pub struct Projection(Vec<Op>);

/// `MessageStore::for_actor`.
pub struct ActorRows(MessageStore);

impl MessageRows for ActorRows {
    fn row(&self, id: MessageId) -> RowsResult<Option<Message>> {
        self.0.caught_up();
        self.0.row(id)
    }

    fn user_flags(&self, user: UserId, id: MessageId) -> RowsResult<Option<u32>> {
        self.0.caught_up();
        MessageRows::user_flags(&self.0, user, id)
    }

    fn scan<'a>(
        &'a self,
        source: &Source,
        from: MessageId,
        to: MessageId,
        reverse: bool,
    ) -> RowsResult<Box<dyn Iterator<Item = RowsResult<MessageId>> + 'a>> {
        self.0.caught_up();
        self.0.scan(source, from, to, reverse)
    }
}

/// What a change writes (`None`: nothing, it is not about message rows); see
/// `MessageStore::project`.
fn op_for(realm: &Realm, change: &Change, at: Option<(u64, u32)>) -> Option<Op> {
    let Change::Message(change) = change else {
        return None;
    };
    let op = match change {
        MessageChange::Sent(_) | MessageChange::Notice { .. } => {
            let (m, recipients) = realm.delivery(change)?;
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
        | MessageChange::ScheduledFailed { .. } => return None,
        MessageChange::Deleted { messages, .. } => Op::Deleted(messages.clone()),
    };
    Some(match (at, op) {
        (_, op @ Op::Sent { .. }) | (None, op) => op,
        (Some((seq, change)), op) => Op::Logged {
            seq,
            change,
            op: Box::new(op),
        },
    })
}

impl MessageStore {
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
        let t = self.trees()?;
        user_flags(&t, user, id)
    }

    /// The messages `user` received with ids in `[from, to]`, ascending, each with the
    /// user's flags on it (deleted messages included: `get` tells them), lazily: a
    /// realm's messages with their per-user flags are those of each of its users.
    pub fn received(
        &self,
        user: UserId,
        from: MessageId,
        to: MessageId,
    ) -> Result<Received, StorageError> {
        let t = self.trees()?;
        let ids = bit_ids(&t.bits, user, RECEIVED, from, to, false);
        Ok(Box::new(ids.map(move |id| {
            let id = id?;
            Ok((id, user_flags(&t, user, id)?.unwrap_or(0)))
        })))
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
        if from > to {
            return Ok(Box::new(std::iter::empty()));
        }
        let (tree, prefix): (sled::Tree, Vec<u8>) = match source {
            Source::User(u) => return Ok(bit_ids(&t.bits, *u, RECEIVED, from, to, reverse)),
            Source::Unread(u) => return Ok(bit_ids(&t.bits, *u, UNREAD, from, to, reverse)),
            Source::Channel(c) => return Ok(bit_ids(&t.bits, *c, CHANNEL, from, to, reverse)),
            Source::Topic(c, topic) => (t.idx, topic_prefix(*c, topic)),
            Source::Conversation(users) => (t.idx, conversation_prefix(users)),
            Source::Sender(s) => return Ok(bit_ids(&t.bits, *s, SENT, from, to, reverse)),
        };
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

/// A user's flags on a message from its two bits and its exception.
fn user_flags(t: &Trees, user: UserId, id: MessageId) -> Result<Option<u32>, StorageError> {
    let chunk = chunk_of(id).0;
    if !bit_in(t.bits.get(bits_key(user, RECEIVED, chunk))?.as_deref(), id) {
        return Ok(None);
    }
    let extra = t.flags.get(user_key(user, id))?.map_or(0, |v| bits_of(&v));
    let unread = bit_in(t.bits.get(bits_key(user, UNREAD, chunk))?.as_deref(), id);
    Ok(Some(
        (extra & !flags::READ) | if unread { 0 } else { flags::READ },
    ))
}

/// The ids set in `user`'s `kind` bitmap within `[from, to]`, lazily, a chunk at a time.
fn bit_ids(
    bits: &sled::Tree,
    user: UserId,
    kind: u8,
    from: MessageId,
    to: MessageId,
    reverse: bool,
) -> Box<dyn Iterator<Item = Result<MessageId, StorageError>> + Send> {
    let lo = bits_key(user, kind, chunk_of(from).0);
    let hi = bits_key(user, kind, chunk_of(to).0);
    let range = bits.range(lo..=hi);
    let expand = move |item: sled::Result<(sled::IVec, sled::IVec)>| {
        let ids: Vec<Result<MessageId, StorageError>> = match item {
            Ok((k, v)) => {
                let mut ids: Vec<_> = ids_in(id_at_end(&k), &v)
                    .into_iter()
                    .filter(|id| (from..=to).contains(id))
                    .map(Ok)
                    .collect();
                if reverse {
                    ids.reverse();
                }
                ids
            }
            Err(e) => vec![Err(e.into())],
        };
        ids
    };
    if reverse {
        Box::new(range.rev().flat_map(expand))
    } else {
        Box::new(range.flat_map(expand))
    }
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

    fn search(&self, q: &SearchQuery) -> RowsResult<Option<Vec<MessageId>>> {
        self.search_candidates(q)
    }
}

impl MessageStore {
    /// See `MessageRows::search`.
    fn search_candidates(&self, q: &SearchQuery) -> RowsResult<Option<Vec<MessageId>>> {
        match self.inner.db.search_index(&self.inner.names) {
            Some(ix) => ix.candidates(q).map_err(RowsError::new),
            None => Ok(None),
        }
    }
}

impl MessageStorePort for MessageStore {
    fn ready(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + '_>> {
        Box::pin(MessageStore::ready(self))
    }

    fn is_open(&self) -> bool {
        MessageStore::is_open(self)
    }

    fn generation(&self) -> u64 {
        MessageStore::generation(self)
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
    /// is not served), and removes its search index.
    pub fn clear(&self) -> Result<(), StorageError> {
        self.inner.db.remove_search_index(&self.inner.names);
        let t = self.trees()?;
        let cleared = [&t.rows, &t.idx, &t.flags, &t.bits, &t.undo]
            .into_iter()
            .try_for_each(|tree| tree.clear());
        self.inner.db.wrote();
        Ok(cleared?)
    }
}

/// What `migrate_layout` rewrote.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Migrated {
    pub realms: usize,
    /// Keys of the old trees read.
    pub keys: u64,
    /// Keys written into the fresh database.
    pub written: u64,
}

/// Whether `db` still holds anything of a layout before this one (see the module doc):
/// a per-user tree `um:<realm>` or `unread:<realm>`, a channel or sender entry in a
/// `msgidx:<realm>`, or bitmaps of 1 024 ids a chunk (`ubits:<realm>`).
pub(super) fn needs_layout_migration(db: &sled::Db) -> Result<bool, StorageError> {
    let [um_prefix, unread_prefix] = LEGACY_USER_TREES;
    for name in db.tree_names() {
        if [um_prefix, unread_prefix, LEGACY_BITS_TREE]
            .iter()
            .any(|p| name.starts_with(p.as_bytes()))
        {
            return Ok(true);
        }
        if name.starts_with(b"msgidx:") {
            let idx = db.open_tree(&name)?;
            for tag in [b'c', b's'] {
                if let Some(item) = idx.range([tag]..[tag + 1]).keys().next() {
                    if item?.len() == 17 {
                        return Ok(true);
                    }
                }
            }
        }
    }
    Ok(false)
}

/// Copies every tree of `old` into the empty database `new`, rewriting on the way what
/// the layout before bitmaps kept a key per message for (see the module doc): the
/// per-user trees `um:<realm>` and `unread:<realm>` become bits in `ubits` and
/// exceptions in `uflags`, the channel and sender entries of `msgidx` (`c` channel, id
/// and `s` sender, id) bits in `ubits128`, and so do the bits of chunks of 1 024 ids
/// (`ubits:<realm>`); everything else is copied as it is (undo-log
/// entries of the old layout too: `Tag::Um`, `Tag::Unread` are undone as bits, and
/// `Tag::Idx` entries of channel and sender keys name keys no reader looks at any
/// more). `old` is only read, so a crash in the middle leaves it as it was; the caller
/// swaps `new` in once it is durable (`message_db`).
pub(super) fn migrate_layout(old: &sled::Db, new: &sled::Db) -> Result<Migrated, StorageError> {
    let [um_prefix, unread_prefix] = LEGACY_USER_TREES;
    let mut done = Migrated::default();
    // Per realm: its bitmap chunks rebuilt from the old keys.
    let mut chunks: BTreeMap<String, BTreeMap<[u8; 17], Vec<u8>>> = BTreeMap::new();
    let mut mark = |sub: &str, kind: u8, owner: u64, id: MessageId| {
        if !chunks.contains_key(sub) {
            chunks.insert(sub.to_owned(), BTreeMap::new());
        }
        if let Some(realm) = chunks.get_mut(sub) {
            set_bit(
                realm
                    .entry(bits_key(owner, kind, chunk_of(id).0))
                    .or_default(),
                id,
                true,
            );
        }
    };
    let owner_id = |key: &[u8]| (id_at_end(&key[..key.len().min(8)]), id_at_end(key));
    let mut realms = std::collections::BTreeSet::new();
    for name in old.tree_names() {
        let from = old.open_tree(&name)?;
        let text = String::from_utf8_lossy(&name).into_owned();
        if let Some(sub) = text.strip_prefix(um_prefix) {
            let exceptions = new.open_tree(&tree_names(sub)[2])?;
            for item in from.iter() {
                let (key, value) = item?;
                let (user, id) = owner_id(&key);
                mark(sub, RECEIVED, user, id);
                let extra = bits_of(&value) & !flags::READ;
                if extra != 0 {
                    exceptions.insert(key.as_ref(), &extra.to_le_bytes()[..])?;
                    done.written += 1;
                }
                done.keys += 1;
            }
            realms.insert(sub.to_owned());
            continue;
        }
        if let Some(sub) = text.strip_prefix(LEGACY_BITS_TREE) {
            for item in from.iter() {
                let (key, value) = item?;
                if key.len() != 17 {
                    continue;
                }
                let (owner, kind, chunk) = (id_at_end(&key[..8]), key[8], id_at_end(&key));
                for id in ids_in_chunks_of(LEGACY_CHUNK_SHIFT, chunk, &value) {
                    mark(sub, kind, owner, id);
                }
                done.keys += 1;
            }
            realms.insert(sub.to_owned());
            continue;
        }
        if let Some(sub) = text.strip_prefix(unread_prefix) {
            for key in from.iter().keys() {
                let (user, id) = owner_id(&key?);
                mark(sub, UNREAD, user, id);
                done.keys += 1;
            }
            realms.insert(sub.to_owned());
            continue;
        }
        let sub = text.strip_prefix("msgidx:");
        let to = new.open_tree(&name)?;
        for item in from.iter() {
            let (key, value) = item?;
            if let Some(sub) = sub {
                let kind = match key.first() {
                    Some(b'c') => Some(CHANNEL),
                    Some(b's') => Some(SENT),
                    _ => None,
                };
                if let (Some(kind), 17) = (kind, key.len()) {
                    mark(sub, kind, id_at_end(&key[..9]), id_at_end(&key));
                    realms.insert(sub.to_owned());
                    done.keys += 1;
                    continue;
                }
            }
            to.insert(key, value)?;
            done.written += 1;
        }
    }
    for (sub, chunks) in chunks {
        let bits = new.open_tree(&tree_names(&sub)[3])?;
        for (key, mut v) in chunks {
            // Bits a store of the new layout already wrote (copied above).
            if let Some(old) = bits.get(key)? {
                if v.len() < old.len() {
                    v.resize(old.len(), 0);
                }
                for (i, b) in old.iter().enumerate() {
                    if let Some(new) = v.get_mut(i) {
                        *new |= b;
                    }
                }
            }
            bits.insert(key, v)?;
            done.written += 1;
        }
    }
    done.realms = realms.len();
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &std::path::Path) -> (sled::Db, Trees) {
        let db = sled::Config::new().path(dir).open().unwrap();
        let [rows, idx, flags, bits, undo] = tree_names("zulip");
        let t = Trees {
            rows: db.open_tree(rows).unwrap(),
            idx: db.open_tree(idx).unwrap(),
            flags: db.open_tree(flags).unwrap(),
            bits: db.open_tree(bits).unwrap(),
            undo: db.open_tree(undo).unwrap(),
        };
        (db, t)
    }

    /// Per-user rows of the layout before bitmaps: (user, message, all its bits).
    const LEGACY: [(UserId, MessageId, u32); 8] = [
        (10, 1, flags::READ),
        (11, 1, 0),
        (11, 2, flags::STARRED),
        (10, 2, flags::READ | flags::MENTIONED),
        (10, 1_500, flags::READ | flags::STARRED),
        (11, 1_500, flags::READ),
        (11, 2_048, flags::HISTORICAL | flags::READ),
        (12, 3, flags::MENTIONED),
    ];

    /// Channel and sender index entries of the layout before bitmaps: (tag, owner, id).
    const LEGACY_IDX: [(u8, u64, MessageId); 4] =
        [(b'c', 7, 1), (b'c', 7, 2), (b's', 10, 1), (b's', 10, 1_500)];

    fn write_legacy(db: &sled::Db) {
        let idx = db.open_tree("msgidx:zulip").unwrap();
        for (tag, owner, id) in LEGACY_IDX {
            let mut key = vec![tag];
            key.extend_from_slice(&be(owner));
            key.extend_from_slice(&be(id));
            idx.insert(key, &[][..]).unwrap();
        }
        let (um, unread) = (
            db.open_tree("um:zulip").unwrap(),
            db.open_tree("unread:zulip").unwrap(),
        );
        for (user, id, bits) in LEGACY {
            um.insert(user_key(user, id), &bits.to_le_bytes()[..])
                .unwrap();
            if bits & flags::READ == 0 {
                unread.insert(user_key(user, id), &[][..]).unwrap();
            }
        }
    }

    fn scan(t: &Trees, user: UserId, kind: u8) -> Vec<MessageId> {
        bit_ids(&t.bits, user, kind, 0, u64::MAX, false)
            .map(Result::unwrap)
            .collect()
    }

    /// Every user's flags on every message, received and unread sets, as the legacy rows say.
    fn assert_as_legacy(t: &Trees) {
        for user in [10, 11, 12, 13] {
            for id in [1, 2, 3, 1_500, 2_048, 4_000] {
                let expected = LEGACY
                    .iter()
                    .find(|(u, i, _)| (*u, *i) == (user, id))
                    .map(|(_, _, bits)| *bits);
                assert_eq!(
                    user_flags(t, user, id).unwrap(),
                    expected,
                    "user {user}, id {id}"
                );
            }
            let of = |unread: bool| -> Vec<MessageId> {
                let mut ids: Vec<_> = LEGACY
                    .iter()
                    .filter(|(u, _, bits)| *u == user && (!unread || bits & flags::READ == 0))
                    .map(|(_, id, _)| *id)
                    .collect();
                ids.sort_unstable();
                ids
            };
            assert_eq!(scan(t, user, RECEIVED), of(false), "user {user}");
            assert_eq!(scan(t, user, UNREAD), of(true), "user {user}");
        }
        assert_eq!(scan(t, 7, CHANNEL), [1, 2]);
        assert_eq!(scan(t, 10, SENT), [1, 1_500]);
        assert_eq!(
            t.idx.len(),
            0,
            "the old channel and sender entries are gone"
        );
    }

    /// The rewrite into a fresh database keeps every user's flags as bits and
    /// exceptions, copies every other tree as it is, and leaves the old database as it
    /// was (a crash in the middle of it loses nothing: the old one stays in use).
    #[test]
    fn the_layout_migration_copies_into_a_fresh_database() {
        let (old_dir, new_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (old, old_trees) = open(old_dir.path());
        write_legacy(&old);
        old_trees.rows.insert(be(1), &b"row one"[..]).unwrap();
        old_trees
            .undo
            .insert([be(3), be(0)].concat(), &b"undo"[..])
            .unwrap();
        old.open_tree("hearth:meta")
            .unwrap()
            .insert("synced", &be(4)[..])
            .unwrap();
        // A bit written after a start of the new layout, before the folder was rewritten.
        write_bit(&old_trees, RECEIVED, 13, 4_000, true).unwrap();
        write_bit(&old_trees, RECEIVED, 13, 4_000, false).unwrap();
        write_bit(&old_trees, CHANNEL, 7, 5, true).unwrap();
        // Bitmaps of 1 024 ids a chunk: channel 7's message 1 030 (chunk 1, byte 0, bit
        // 6) and sender 10's message 1 (already an index entry of the older layout).
        let wide = old.open_tree("ubits:zulip").unwrap();
        wide.insert(bits_key(7, CHANNEL, 1), &[0x40u8][..]).unwrap();
        wide.insert(bits_key(10, SENT, 0), &[0x02u8][..]).unwrap();
        assert!(needs_layout_migration(&old).unwrap());
        let old_len = |db: &sled::Db| -> usize {
            db.tree_names()
                .iter()
                .map(|n| db.open_tree(n).unwrap().len())
                .sum()
        };
        let before = old_len(&old);
        let (new, t) = open(new_dir.path());
        let done = migrate_layout(&old, &new).unwrap();
        assert_eq!(done.realms, 1);
        // Eight per-user rows, three unread ones, four index entries, two wide chunks.
        assert_eq!(done.keys, 17);
        assert_eq!(old_len(&old), before, "the old database is only read");
        assert!(needs_layout_migration(&old).unwrap());
        assert!(!needs_layout_migration(&new).unwrap());
        assert_eq!(scan(&t, 7, CHANNEL), [1, 2, 5, 1_030]);
        write_bit(&t, CHANNEL, 7, 5, false).unwrap();
        write_bit(&t, CHANNEL, 7, 1_030, false).unwrap();
        assert_as_legacy(&t);
        assert!(!new.tree_names().iter().any(|n| n.starts_with(b"um:")
            || n.starts_with(b"unread:")
            || n.starts_with(b"ubits:")));
        assert_eq!(t.rows.get(be(1)).unwrap().as_deref(), Some(&b"row one"[..]));
        assert_eq!(t.undo.len(), 1);
        assert_eq!(
            new.open_tree("hearth:meta")
                .unwrap()
                .get("synced")
                .unwrap()
                .as_deref(),
            Some(&be(4)[..])
        );
    }

    /// Undo-log entries written by the layout before bitmaps put back the bits and
    /// exceptions their keys stood for.
    #[test]
    fn a_legacy_undo_entry_is_undone_as_bits() {
        let (old_dir, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (old, _) = open(old_dir.path());
        write_legacy(&old);
        let (db, t) = open(dir.path());
        migrate_layout(&old, &db).unwrap();
        // Lost record 5 had starred message 1 for user 11 and read it; record 6 had
        // added a historical row for user 13.
        let entry = |befores: Vec<Before>| codec::encode_versioned(UNDO_SCHEMA, &befores).unwrap();
        let five = vec![
            Before {
                tree: Tag::Um,
                key: user_key(11, 1).to_vec(),
                value: Some(0u32.to_le_bytes().to_vec()),
            },
            Before {
                tree: Tag::Unread,
                key: user_key(11, 1).to_vec(),
                value: Some(Vec::new()),
            },
        ];
        // Record 6 had also moved message 2 out of channel 7 into channel 8.
        let entry_of = |tag: u8, owner: u64, id: MessageId| {
            let mut key = vec![tag];
            key.extend_from_slice(&be(owner));
            key.extend_from_slice(&be(id));
            key
        };
        let six = vec![
            Before {
                tree: Tag::Um,
                key: user_key(13, 4_000).to_vec(),
                value: None,
            },
            Before {
                tree: Tag::Idx,
                key: entry_of(b'c', 7, 2),
                value: Some(Vec::new()),
            },
            Before {
                tree: Tag::Idx,
                key: entry_of(b'c', 8, 2),
                value: None,
            },
        ];
        write_bit(&t, CHANNEL, 7, 2, false).unwrap();
        write_bit(&t, CHANNEL, 8, 2, true).unwrap();
        t.undo.insert([be(5), be(0)].concat(), entry(five)).unwrap();
        t.undo.insert([be(6), be(0)].concat(), entry(six)).unwrap();
        write_bit(&t, UNREAD, 11, 1, false).unwrap();
        write_extra(&t, user_key(11, 1), flags::STARRED).unwrap();
        write_bit(&t, RECEIVED, 13, 4_000, true).unwrap();
        write_extra(&t, user_key(13, 4_000), flags::HISTORICAL | flags::READ).unwrap();
        assert_eq!(
            user_flags(&t, 11, 1).unwrap(),
            Some(flags::READ | flags::STARRED)
        );
        apply(&t, Op::Undo { after: 4 }).unwrap();
        assert_as_legacy(&t);
        assert!(scan(&t, 8, CHANNEL).is_empty());
        assert!(t.flags.get(user_key(13, 4_000)).unwrap().is_none());
    }
}
