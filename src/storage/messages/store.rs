//! A realm's message store: the handle the realm actor writes through and the HTTP
//! workers read through.

use super::db::{MessageDb, Projected};
use super::layout::{tree_names, Trees};
use super::projection::{op_for, Op, Projection};
use crate::realm::messages::fetch::{MessageRows, RowsResult, Source};
use crate::realm::messages::{Message, MessageId};
use crate::realm::{Change, Realm, UserId};
use crate::storage::StorageError;
use std::sync::Arc;

/// A handle on a realm's message store; cheap to clone, shared by the actor (writes)
/// and the HTTP workers (reads).
#[derive(Clone)]
pub struct MessageStore {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) names: Arc<[String; 5]>,
    pub(super) db: Arc<MessageDb>,
    /// How far the realm actor's commits are written (`commit`).
    pub(super) projected: Arc<Projected>,
}

impl MessageStore {
    pub(in crate::storage) fn new(subdomain: &str, db: Arc<MessageDb>) -> Self {
        MessageStore {
            inner: Arc::new(Inner {
                names: Arc::new(tree_names(subdomain)),
                db,
                projected: Arc::default(),
            }),
        }
    }

    pub(super) fn trees(&self) -> Result<Trees, StorageError> {
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
    /// to the message database's writer thread (see `db`'s module doc):
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

    /// Starts the realm's search index (see `messages::search`): opened, or rebuilt from
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

    /// Makes every row written so far durable (before a snapshot; see `db`);
    /// returns the sync's number.
    pub fn sync(&self) -> Result<u64, StorageError> {
        self.inner.db.sync()
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
