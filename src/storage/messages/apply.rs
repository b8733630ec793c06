//! Writing projections: one at a time (`apply`), or a batch whose run of sends sets
//! each bitmap chunk once (`apply_all`).

use super::layout::{
    be, bit_in, bits_key, chunk_of, clear_from, decode_message, encode_message, id_at_end,
    index_bits, index_keys, set_bit, user_key, write_bit, write_extra, Trees, CHUNK_SHIFT,
    RECEIVED, UNREAD,
};
use super::plan::{plan_writes, Plan};
use super::projection::Op;
use super::undo::decode_undo;
use crate::realm::messages::{flags, Message, MessageId};
use crate::realm::UserId;
use crate::storage::StorageError;
use std::collections::BTreeMap;

/// Bitmap chunks that a run of sends sets bits in, each read once and written once
/// (`apply_all`): a send sets about ten bits, in chunks that a thousand messages share.
#[derive(Default)]
pub(super) struct Chunks(BTreeMap<[u8; 17], (bool, Vec<u8>)>);

impl Chunks {
    /// Sets `id`'s bit in `owner`'s `kind` bitmap (read from disk the first time).
    pub(super) fn set(
        &mut self,
        t: &Trees,
        kind: u8,
        owner: u64,
        id: MessageId,
    ) -> Result<(), StorageError> {
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
    pub(super) fn write(self, t: &Trees) -> Result<(), StorageError> {
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
pub(super) fn write_sent(
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
/// whether it was a repair that changed rows (see `db`'s module doc).
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
