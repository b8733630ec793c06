//! Write planning: the writes of one op gathered before any is made (`Plan`), so
//! that the earlier values of its keys and bits can be logged first.

use super::layout::{
    be, bit_in, bits_key, bits_of, chunk_of, decode_message, encode_message, index_bits,
    index_keys, set_bit, user_key, Trees, RECEIVED, UNREAD,
};
use super::projection::Op;
use super::undo::{bit_key, Before, Tag, UNDO_CHUNK_BYTES, UNDO_SCHEMA};
use crate::realm::messages::flags::MentionFlags;
use crate::realm::messages::{flags, Message, MessageId};
use crate::realm::UserId;
use crate::storage::{codec, StorageError};
use std::collections::{BTreeMap, HashMap, HashSet};

/// A bitmap chunk as on disk (`None`: absent) and as planned.
pub(super) type Chunk = (Option<Vec<u8>>, Vec<u8>);

/// The writes of one op, gathered before any is made (reads see the earlier ones), so
/// that the keys' and bits' earlier values can be logged first.
pub(super) struct Plan<'a> {
    pub(super) t: &'a Trees,
    pub(super) writes: Vec<(Tag, Vec<u8>, Option<Vec<u8>>)>,
    /// The newest planned value of each key written.
    pub(super) planned: HashMap<(Tag, Vec<u8>), Option<Vec<u8>>>,
    /// Each key's value on disk as first read, so that logging it reads it no more.
    pub(super) read: HashMap<(Tag, Vec<u8>), Option<Vec<u8>>>,
    /// Each bitmap chunk touched: as on disk, and as planned.
    pub(super) chunks: BTreeMap<[u8; 17], Chunk>,
    /// The bits written, in order: kind, owner, message.
    pub(super) bits: Vec<(u8, u64, MessageId)>,
}

impl<'a> Plan<'a> {
    pub(super) fn new(t: &'a Trees) -> Self {
        Plan {
            t,
            writes: Vec::new(),
            planned: HashMap::new(),
            read: HashMap::new(),
            chunks: BTreeMap::new(),
            bits: Vec::new(),
        }
    }

    pub(super) fn get(&mut self, tag: Tag, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        let k = (tag, key.to_vec());
        if let Some(v) = self.planned.get(&k) {
            return Ok(v.clone());
        }
        let v = self.t.tree(tag).get(key)?.map(|v| v.to_vec());
        self.read.insert(k, v.clone());
        Ok(v)
    }

    pub(super) fn put(&mut self, tag: Tag, key: &[u8], value: Option<Vec<u8>>) {
        self.planned.insert((tag, key.to_vec()), value.clone());
        self.writes.push((tag, key.to_vec(), value));
    }

    pub(super) fn insert(&mut self, tag: Tag, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.put(tag, key.as_ref(), Some(value.as_ref().to_vec()));
    }

    pub(super) fn remove(&mut self, tag: Tag, key: impl AsRef<[u8]>) {
        self.put(tag, key.as_ref(), None);
    }

    /// The chunk holding `id`'s bit of `user`'s `kind` bitmap, read once.
    pub(super) fn chunk(
        &mut self,
        kind: u8,
        user: UserId,
        id: MessageId,
    ) -> Result<&mut Chunk, StorageError> {
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

    pub(super) fn bit(
        &mut self,
        kind: u8,
        user: UserId,
        id: MessageId,
    ) -> Result<bool, StorageError> {
        Ok(bit_in(Some(&self.chunk(kind, user, id)?.1), id))
    }

    pub(super) fn set_bit(
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
    pub(super) fn user_bits(
        &mut self,
        user: UserId,
        id: MessageId,
    ) -> Result<Option<u32>, StorageError> {
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
    pub(super) fn set_user_bits(
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
    pub(super) fn commit(mut self, at: Option<(u64, u32)>) -> Result<(), StorageError> {
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
pub(super) fn plan_writes(p: &mut Plan<'_>, op: Op) -> Result<(), StorageError> {
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

/// `current` with what an edit decided on an older copy of it (`before` → `after`)
/// changed: its place, content and edit times, and its new edit records (once: a
/// replay finds them there already).
pub(super) fn rebase_edit(mut current: Message, before: &Message, after: Message) -> Message {
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
