//! The layout of the message trees: keys, bitmaps and rows.
//!
//! Trees (per realm, in the message database `<data>/messages/`, apart from the
//! database the realms recover from: see `db`):
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
//! copying the database into a fresh one that is then swapped in (`db`), so
//! that the removed keys leave no emptied nodes behind.
//!

use crate::realm::channels::ChannelId;
use crate::realm::messages::{flags, Message, MessageId, Recipient};
use crate::realm::UserId;
use crate::storage::{codec, StorageError};

/// Schema version of a message row.
pub(super) const MESSAGE_SCHEMA: u8 = 1;

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

pub(super) fn be(n: u64) -> [u8; 8] {
    n.to_be_bytes()
}

pub(super) fn id_at_end(key: &[u8]) -> MessageId {
    let mut b = [0u8; 8];
    if key.len() >= 8 {
        b.copy_from_slice(&key[key.len() - 8..]);
    }
    u64::from_be_bytes(b)
}

/// `len(topic) topic` lower-cased, after the channel.
pub(super) fn topic_prefix(channel: ChannelId, topic: &str) -> Vec<u8> {
    let lower = topic.to_lowercase();
    let mut k = Vec::with_capacity(1 + 8 + 2 + lower.len() + 8);
    k.push(b't');
    k.extend_from_slice(&be(channel));
    k.extend_from_slice(&(lower.len() as u16).to_be_bytes());
    k.extend_from_slice(lower.as_bytes());
    k
}

pub(super) fn conversation_prefix(users: &[UserId]) -> Vec<u8> {
    let mut k = Vec::with_capacity(2 + users.len() * 8 + 8);
    k.push(b'd');
    k.push(users.len().min(255) as u8);
    for u in users {
        k.extend_from_slice(&be(*u));
    }
    k
}

pub(super) fn with_id(mut prefix: Vec<u8>, id: MessageId) -> Vec<u8> {
    prefix.extend_from_slice(&be(id));
    prefix
}

pub(super) fn user_key(user: UserId, id: MessageId) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&be(user));
    k[8..].copy_from_slice(&be(id));
    k
}

/// The ids one `ubits128` key covers: 2^7.
pub(super) const CHUNK_SHIFT: u32 = 7;
/// The ids one key of the bitmaps before (`ubits:<realm>`) covered: 2^10.
pub(super) const LEGACY_CHUNK_SHIFT: u32 = 10;
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
pub(super) fn chunk_of(id: MessageId) -> (u64, usize, u8) {
    let at = (id & ((1 << CHUNK_SHIFT) - 1)) as usize;
    (id >> CHUNK_SHIFT, at / 8, 1u8 << (at % 8))
}

/// Whether `id`'s bit is set in its chunk's bitmap `v`.
pub(super) fn bit_in(v: Option<&[u8]>, id: MessageId) -> bool {
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
pub(super) fn ids_in(chunk: u64, v: &[u8]) -> Vec<MessageId> {
    ids_in_chunks_of(CHUNK_SHIFT, chunk, v)
}

/// `ids_in` for chunks of 2^`shift` ids.
pub(super) fn ids_in_chunks_of(shift: u32, chunk: u64, v: &[u8]) -> Vec<MessageId> {
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
pub(super) fn clear_from(chunk: u64, v: &mut Vec<u8>, from: MessageId) {
    for id in ids_in(chunk, v) {
        if id >= from {
            set_bit(v, id, false);
        }
    }
}

/// Sets or clears one bit on disk (a read, then a write of its chunk).
pub(super) fn write_bit(
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
pub(super) fn write_extra(t: &Trees, key: [u8; 16], bits: u32) -> Result<(), StorageError> {
    let extra = bits & !flags::READ;
    if extra == 0 {
        t.flags.remove(key)?;
    } else {
        t.flags.insert(key, &extra.to_le_bytes()[..])?;
    }
    Ok(())
}

/// The index keys a message has: its topic's or its conversation's.
pub(super) fn index_keys(m: &Message) -> Vec<Vec<u8>> {
    match &m.recipient {
        Recipient::Channel { channel_id, topic } => {
            vec![with_id(topic_prefix(*channel_id, topic), m.id)]
        }
        Recipient::Direct { users } => vec![with_id(conversation_prefix(users), m.id)],
    }
}

/// The index bitmaps a message is in (kind, owner): its sender's and its channel's.
pub(super) fn index_bits(m: &Message) -> Vec<(u8, u64)> {
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

pub(super) fn bits_of(v: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    let n = v.len().min(4);
    b[..n].copy_from_slice(&v[..n]);
    u32::from_le_bytes(b)
}
