//! Layout migration: the rewrite of a message database of an older layout (a key
//! per user and message, or bitmaps of 1 024 ids a chunk; see `layout`) into today's.

use super::layout::{
    bits_key, bits_of, chunk_of, id_at_end, ids_in_chunks_of, set_bit, tree_names, CHANNEL,
    LEGACY_BITS_TREE, LEGACY_CHUNK_SHIFT, LEGACY_USER_TREES, RECEIVED, SENT, UNREAD,
};
use crate::realm::messages::{flags, MessageId};
use crate::storage::StorageError;
use std::collections::BTreeMap;

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
/// swaps `new` in once it is durable (`db`).
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
    use crate::realm::UserId;
    use crate::storage::codec;
    use crate::storage::messages::apply::apply;
    use crate::storage::messages::layout::{be, user_key, write_bit, write_extra, Trees};
    use crate::storage::messages::projection::Op;
    use crate::storage::messages::reads::{bit_ids, user_flags};
    use crate::storage::messages::undo::{Before, Tag, UNDO_SCHEMA};

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
