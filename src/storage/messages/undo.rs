//! The undo log: the earlier value of every key and bit an edit, flag change,
//! reaction or deletion writes, logged before the rows (`Before`), and putting them
//! back (`Trees::restore`) for records that never became durable.

use super::layout::{
    be, bits_of, id_at_end, user_key, write_bit, write_extra, Trees, CHANNEL, RECEIVED, SENT,
    UNREAD,
};
use crate::realm::messages::MessageId;
use crate::storage::{codec, StorageError};
use serde::{Deserialize, Serialize};

/// An undo-log entry's size above which the rest of an op's earlier values go to the
/// next entry: sled keeps a value over ~128 KiB as a blob file of its own, which it
/// neither orders with its log nor syncs, so one large entry could be missing after a
/// power loss while the rows written after it are not.
pub(super) const UNDO_CHUNK_BYTES: usize = 32 * 1024;

/// Which tree a write goes to (in the undo log). Positional: variants are only added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub(super) enum Tag {
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
pub(super) fn bit_key(kind: u8, owner: u64, id: MessageId) -> Vec<u8> {
    let mut k = Vec::with_capacity(17);
    k.extend_from_slice(&be(owner));
    k.push(kind);
    k.extend_from_slice(&be(id));
    k
}

/// One key as it was before a logged write: `None` when absent.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Before {
    pub(super) tree: Tag,
    pub(super) key: Vec<u8>,
    pub(super) value: Option<Vec<u8>>,
}

/// Schema version of an undo-log entry (`Vec<Before>`).
pub(super) const UNDO_SCHEMA: u8 = 1;

pub(super) fn decode_undo(bytes: &[u8]) -> Result<Vec<Before>, StorageError> {
    let (version, payload) = codec::open_frame(bytes)?;
    match version {
        UNDO_SCHEMA => Ok(codec::decode_payload(payload)?),
        v => Err(codec::CodecError::Version(v).into()),
    }
}

impl Trees {
    /// The tree of a key-level tag (rows, index, exceptions); bits are written through
    /// `write_bit`.
    pub(super) fn tree(&self, tag: Tag) -> &sled::Tree {
        match tag {
            Tag::Rows => &self.rows,
            Tag::Idx => &self.idx,
            _ => &self.flags,
        }
    }

    /// Puts back one logged earlier value.
    pub(super) fn restore(&self, b: Before) -> Result<(), StorageError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realm::messages::flags;
    use crate::storage::messages::db::{open_sled, MessageDb};
    use crate::storage::messages::layout::tree_names;
    use crate::storage::messages::projection::Op;
    use crate::storage::messages::store::MessageStore;
    use crate::storage::messages::testing::message;
    use std::sync::Arc;
    use std::time::Instant;
    /// Rows of messages whose WAL records were lost (the message database got ahead of
    /// the WAL) are removed from the realm's next id on, per-user rows of every user of
    /// the realm included, so an id given again never meets them; older messages stay.
    #[test]
    fn a_purge_removes_rows_from_the_next_id_on() {
        use crate::realm::dev::dev_realm_changes;
        use crate::realm::messages::fetch::Source;
        use crate::realm::{Cx, Realm};
        let changes = dev_realm_changes(&mut Cx::seeded(1, 1)).unwrap();
        let mut realm = Realm::from_first_change(&changes[0]).unwrap();
        changes.iter().for_each(|c| realm.apply(c));
        realm.messages.next_id = 5;
        let mut users = realm.users.keys().copied();
        let (a, b) = (users.next().unwrap(), users.next().unwrap());
        let dir = tempfile::tempdir().unwrap();
        let db = MessageDb::new(dir.path());
        db.settle(open_sled(dir.path()).map_err(Into::into), Instant::now());
        let store = MessageStore::new("zulip", db.clone());
        let names = Arc::new(tree_names("zulip"));
        for id in [4, 5, 6] {
            let op = Op::Sent {
                message: message(id, a, b),
                recipients: vec![(a, flags::READ), (b, 0)],
            };
            db.write(&names, op).unwrap();
        }
        store.purge_from(&realm).unwrap();
        assert!(store.get(4).unwrap().is_some());
        assert!(store.get(5).unwrap().is_none());
        assert!(store.get(6).unwrap().is_none());
        assert_eq!(store.flags(b, 4).unwrap(), Some(0));
        assert_eq!(store.flags(b, 5).unwrap(), None);
        let ids = |source: Source| -> Vec<u64> {
            store
                .ids(&source, 0, u64::MAX, false)
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        assert_eq!(ids(Source::Unread(b)), [4]);
        assert_eq!(ids(Source::User(b)), [4]);
        assert_eq!(ids(Source::User(a)), [4]);
        assert_eq!(ids(Source::Conversation(vec![a, b])), [4]);
        assert_eq!(ids(Source::Sender(a)), [4]);
    }

    /// Edits, flag changes, reactions and deletions of WAL records that may not be
    /// durable log what they replace: undoing the records after a point puts every
    /// row, index entry and per-user row back as it was, newest record first; records
    /// at or before the point keep their writes, and a trimmed log undoes nothing.
    #[test]
    fn undo_puts_back_what_lost_records_replaced() {
        use crate::realm::messages::fetch::Source;
        use crate::realm::messages::{Reaction, Recipient};
        let dir = tempfile::tempdir().unwrap();
        let db = MessageDb::new(dir.path());
        db.settle(open_sled(dir.path()).map_err(Into::into), Instant::now());
        let store = MessageStore::new("zulip", db.clone());
        let names = Arc::new(tree_names("zulip"));
        let logged = |seq: u64, op: Op| Op::Logged {
            seq,
            change: 0,
            op: Box::new(op),
        };
        let (a, b) = (10, 11);
        let original = message(1, a, b);
        for m in [original.clone(), message(2, a, b)] {
            let op = Op::Sent {
                message: m,
                recipients: vec![(a, flags::READ), (b, 0)],
            };
            db.write(&names, op).unwrap();
        }
        let star = |seq, add| {
            logged(
                seq,
                Op::Flags {
                    user_id: b,
                    flag: flags::STARRED,
                    add,
                    ids: vec![1],
                },
            )
        };
        // Record 3 (durable): star. Records 4-7 (lost): read, edit, react, delete.
        db.write(&names, star(3, true)).unwrap();
        let read = Op::Flags {
            user_id: b,
            flag: flags::READ,
            add: true,
            ids: vec![1, 2],
        };
        db.write(&names, logged(4, read)).unwrap();
        let mut edited = original.clone();
        edited.content = "edited".into();
        edited.recipient = Recipient::Direct { users: vec![a, b] };
        let pairs = vec![(original.clone(), edited.clone())];
        let edit = Op::Edited {
            pairs,
            mentions: Vec::new(),
        };
        db.write(&names, logged(5, edit)).unwrap();
        let reaction = Reaction {
            user_id: b,
            emoji_name: "smile".into(),
            emoji_code: "1f604".into(),
            reaction_type: "unicode_emoji".into(),
        };
        let react = Op::Reaction {
            message_id: 1,
            reaction,
            add: true,
        };
        db.write(&names, logged(6, react)).unwrap();
        db.write(&names, logged(7, Op::Deleted(vec![message(2, a, b)])))
            .unwrap();
        assert_eq!(store.get(1).unwrap().unwrap().reactions.len(), 1);
        assert!(store.get(2).unwrap().is_none());

        db.write(&names, Op::Undo { after: 3 }).unwrap();
        assert_eq!(store.get(1).unwrap(), Some(original));
        assert_eq!(store.get(2).unwrap(), Some(message(2, a, b)));
        assert_eq!(store.flags(b, 1).unwrap(), Some(flags::STARRED));
        assert_eq!(store.flags(b, 2).unwrap(), Some(0));
        let unread: Vec<u64> = store
            .ids(&Source::Unread(b), 0, u64::MAX, false)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(unread, [1, 2]);
        let conversation: Vec<u64> = store
            .ids(&Source::Conversation(vec![a, b]), 0, u64::MAX, false)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(conversation, [1, 2]);

        // Undone entries are gone; a trimmed log no longer undoes what it covered.
        db.write(&names, star(4, false)).unwrap();
        assert_eq!(store.flags(b, 1).unwrap(), Some(0));
        db.write(&names, Op::Trim { upto: 3 }).unwrap();
        db.write(&names, Op::Undo { after: 0 }).unwrap();
        assert_eq!(store.flags(b, 1).unwrap(), Some(flags::STARRED));
    }

    /// A logged op whose earlier values are large (a move of a long topic) is logged
    /// as several entries of at most about `UNDO_CHUNK_BYTES` (sled keeps larger values
    /// as unsynced blob files), and undoing the record puts every row back.
    #[test]
    fn a_large_undo_is_logged_in_chunks_and_undone_whole() {
        use crate::realm::messages::Recipient;
        let dir = tempfile::tempdir().unwrap();
        let db = MessageDb::new(dir.path());
        db.settle(open_sled(dir.path()).map_err(Into::into), Instant::now());
        let store = MessageStore::new("zulip", db.clone());
        let names = Arc::new(tree_names("zulip"));
        let (a, b) = (10, 11);
        let originals: Vec<_> = (1..=200)
            .map(|id| {
                let mut m = message(id, a, b);
                m.content = "x".repeat(1_000);
                m
            })
            .collect();
        for m in &originals {
            let op = Op::Sent {
                message: m.clone(),
                recipients: vec![(a, flags::READ), (b, 0)],
            };
            db.write(&names, op).unwrap();
        }
        let pairs = originals
            .iter()
            .map(|m| {
                let mut after = m.clone();
                after.recipient = Recipient::Direct { users: vec![a, b] };
                after.content = "moved".into();
                (m.clone(), after)
            })
            .collect();
        let edit = Op::Logged {
            seq: 9,
            change: 0,
            op: Box::new(Op::Edited {
                pairs,
                mentions: Vec::new(),
            }),
        };
        db.write(&names, edit).unwrap();
        let undo = db.db().unwrap().open_tree(&names[4]).unwrap();
        let sizes: Vec<usize> = undo.iter().map(|e| e.unwrap().1.len()).collect();
        assert!(sizes.len() > 4, "one entry per ~32 KiB: {sizes:?}");
        assert!(sizes.iter().all(|&n| n < 2 * UNDO_CHUNK_BYTES), "{sizes:?}");
        assert_eq!(store.get(7).unwrap().unwrap().content, "moved");
        db.write(&names, Op::Undo { after: 8 }).unwrap();
        for m in &originals {
            assert_eq!(store.get(m.id).unwrap().as_ref(), Some(m));
        }
        assert_eq!(undo.len(), 0);
    }

    /// A propagated move decided on rows read earlier (on a worker) keeps what changed
    /// since: a reaction added meanwhile stays, with the move and its edit record on
    /// top, once even when the write is replayed; a message deleted meanwhile stays
    /// deleted, out of every index.
    #[test]
    fn a_move_of_stale_rows_keeps_what_changed_since() {
        use crate::realm::messages::fetch::Source;
        use crate::realm::messages::{EditRecord, Reaction, Recipient};
        let dir = tempfile::tempdir().unwrap();
        let db = MessageDb::new(dir.path());
        db.settle(open_sled(dir.path()).map_err(Into::into), Instant::now());
        let store = MessageStore::new("zulip", db.clone());
        let names = Arc::new(tree_names("zulip"));
        let (a, b) = (10, 11);
        let in_topic = |id, topic: &str| {
            let mut m = message(id, a, b);
            m.recipient = Recipient::Channel {
                channel_id: 3,
                topic: topic.into(),
            };
            m
        };
        let stale = [in_topic(1, "old"), in_topic(2, "old")];
        for m in &stale {
            let op = Op::Sent {
                message: m.clone(),
                recipients: vec![(a, flags::READ), (b, 0)],
            };
            db.write(&names, op).unwrap();
        }
        let reaction = Reaction {
            user_id: b,
            emoji_name: "smile".into(),
            emoji_code: "1f604".into(),
            reaction_type: "unicode_emoji".into(),
        };
        let react = Op::Reaction {
            message_id: 1,
            reaction: reaction.clone(),
            add: true,
        };
        db.write(&names, react).unwrap();
        db.write(&names, Op::Deleted(vec![stale[1].clone()]))
            .unwrap();
        let record = EditRecord {
            user_id: a,
            timestamp: 1_700_000_100,
            prev_content: None,
            prev_rendered_content: None,
            prev_topic: Some("old".into()),
            prev_channel: None,
            topic: Some("new".into()),
            channel: None,
        };
        let pairs: Vec<_> = stale
            .iter()
            .map(|m| {
                let mut after = m.clone();
                after.recipient = in_topic(m.id, "new").recipient;
                after.last_moved_timestamp = Some(1_700_000_100);
                after.edits.push(record.clone());
                (m.clone(), after)
            })
            .collect();
        for _ in 0..2 {
            let edit = Op::Edited {
                pairs: pairs.clone(),
                mentions: Vec::new(),
            };
            db.write(&names, edit).unwrap();
        }
        let moved = store.get(1).unwrap().unwrap();
        assert_eq!(moved.reactions, [reaction]);
        assert_eq!(moved.recipient, in_topic(1, "new").recipient);
        assert_eq!(moved.edits, [record]);
        assert_eq!(moved.last_moved_timestamp, Some(1_700_000_100));
        assert!(store.get(2).unwrap().is_none());
        let ids = |topic: &str| -> Vec<u64> {
            store
                .ids(&Source::Topic(3, topic.into()), 0, u64::MAX, false)
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        assert_eq!(ids("new"), [1]);
        assert_eq!(ids("old"), Vec::<u64>::new());
    }

    /// A purge removes per-user rows from the realm's next message id on of users the
    /// realm does not know (created by lost records), while rows of earlier messages of
    /// ids above the realm's next user id (system bots) stay.
    #[test]
    fn a_purge_removes_rows_of_users_created_by_lost_records() {
        use crate::realm::dev::dev_realm_changes;
        use crate::realm::{Cx, Realm};
        let changes = dev_realm_changes(&mut Cx::seeded(1, 1)).unwrap();
        let mut realm = Realm::from_first_change(&changes[0]).unwrap();
        changes.iter().for_each(|c| realm.apply(c));
        realm.messages.next_id = 5;
        let a = *realm.users.keys().next().unwrap();
        let (lost_user, bot) = (realm.next_user_id, u64::from(i32::MAX as u32));
        let dir = tempfile::tempdir().unwrap();
        let db = MessageDb::new(dir.path());
        db.settle(open_sled(dir.path()).map_err(Into::into), Instant::now());
        let store = MessageStore::new("zulip", db.clone());
        let names = Arc::new(tree_names("zulip"));
        for (id, to) in [(4, bot), (5, lost_user), (6, bot)] {
            let op = Op::Sent {
                message: message(id, a, to),
                recipients: vec![(a, flags::READ), (to, 0)],
            };
            db.write(&names, op).unwrap();
        }
        store.purge_from(&realm).unwrap();
        assert_eq!(store.flags(bot, 4).unwrap(), Some(0));
        assert_eq!(store.flags(lost_user, 5).unwrap(), None);
        assert_eq!(store.flags(bot, 6).unwrap(), None);
        assert_eq!(store.flags(a, 5).unwrap(), None);
    }
}
