//! The writer thread: rows off the realm actors' path.
//!
//! Once open, the rows of a realm actor's commit (`write_commit`: the projections of
//! its changes, computed on the actor from the state of their moment) go to one writer
//! thread, which takes everything queued at once and writes it in order: consecutive
//! commits of a realm together, a run of sends setting each bitmap chunk once
//! (`messages::apply_all`; a send sets about ten bits in chunks a thousand messages
//! share). The actor only queues: its cost per send no longer includes sled's.
//!
//! A commit's durability ticket is marked in its realm's `Projected` once its rows
//! are written. The event hub releases a decision only up to that mark
//! (`EventHub::bound_release`), and the answer to a write waits for it beside the
//! flush (`RealmClient::settle`): what an answer acknowledges, and every event a
//! client receives, is readable, as before. While the database opens, commits are
//! queued as any write (readers wait for the open, which writes the queue first) and
//! marked at once; once failed, dropped and marked at once.
//!
//! Every other write (`write`: recovery's replay, repairs, the undo log's trim,
//! imports) and `sync` first wait for what the writer thread holds (`drain`), so
//! everything reaches sled in the order it was handed over, and a snapshot still
//! covers only rows on disk. The realm actor's own reads (`MessageStore::for_actor`)
//! drain first too, so a rule sees the rows of every earlier decision; sends read no
//! rows (but for a topic wildcard mention or an upload link), so they never wait.
//!
//! Crash safety is unchanged: rows were already written before their WAL record was
//! durable and re-projected from the WAL at start when lost; they are now written a
//! little later, still before the answer. Within a batch a send's bits are written
//! after its row (sled recovers a prefix of its log), so a bit never outlives its row.
//!
//! `serve --message-projection inline` writes commits on the actor instead (as hearth
//! did before), to compare.

use super::apply::apply_all;
use super::db::{trees_of, MessageDb, Projected, State, Work, INLINE, READY_WAIT, WRITE_BATCH};
use super::projection::Op;
use super::search;
use crate::locks::{lock, wait_timeout_while};
use crate::storage::StorageError;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

impl MessageDb {
    /// The writer thread: takes what the realm actors handed over, in order, a batch
    /// at a time, writes it (`apply_all`: a run of sends sets each bitmap chunk once),
    /// then marks each commit written.
    pub(super) fn run_writer(this: &Weak<MessageDb>) {
        loop {
            let Some(db) = this.upgrade() else { return };
            let batch: Vec<Work> = {
                let mut writer = wait_timeout_while(
                    &db.work,
                    lock(&db.writer),
                    Duration::from_millis(500),
                    |w| (w.queue.is_empty() || w.held) && !w.stop,
                );
                // Held (a test's hook): waits again; a stop writes the queue anyway.
                if writer.queue.is_empty() || (writer.held && !writer.stop) {
                    if writer.stop {
                        writer.running = false;
                        return;
                    }
                    continue;
                }
                let n = writer.queue.len().min(WRITE_BATCH);
                writer.queue.drain(..n).collect()
            };
            db.write_batch(batch);
        }
    }

    /// Writes a batch of work in order, consecutive work of one realm together; then
    /// marks its commits written and wakes who waits for them.
    pub(super) fn write_batch(&self, batch: Vec<Work>) {
        let n = batch.len() as u64;
        let mut marks = Vec::with_capacity(batch.len());
        let mut run: Option<(Arc<[String; 5]>, Vec<Op>)> = None;
        for work in batch {
            marks.extend(work.mark);
            match &mut run {
                Some((names, ops)) if *names == work.names => ops.extend(work.ops),
                _ => {
                    if let Some((names, ops)) = run.take() {
                        self.apply_now(&names, ops);
                    }
                    run = Some((work.names, work.ops));
                }
            }
        }
        if let Some((names, ops)) = run {
            self.apply_now(&names, ops);
        }
        for (projected, ticket) in marks {
            projected.reached(ticket);
            projected.pending.fetch_sub(1, Ordering::SeqCst);
        }
        lock(&self.writer).written += n;
        self.written.notify_all();
        self.progress.send_modify(|p| *p += 1);
    }

    /// Writes `ops` of one realm now, on this thread, if the database is open (see
    /// `write`: one that fails fails the database).
    pub(super) fn apply_now(&self, names: &Arc<[String; 5]>, ops: Vec<Op>) {
        if ops.is_empty() {
            return;
        }
        let trees = {
            let mut state = lock(&self.state);
            match &mut *state {
                State::Open { db, trees } => trees_of(db, trees, names),
                // Dropped: see `write`.
                State::Opening(_) | State::Failed(_) => return,
            }
        };
        let mut ids = Vec::new();
        let mut named = true;
        for op in &ops {
            named &= search::touched(op, &mut ids);
        }
        // A panic in a write fails the database like an error (the writer goes on).
        let written = trees.map_err(StorageError::from).and_then(|t| {
            catch_unwind(AssertUnwindSafe(|| apply_all(&t, ops)))
                .unwrap_or_else(|_| Err(StorageError::Invalid("a message write panicked".into())))
        });
        self.wrote();
        self.tell_index(names, &ids, named || !matches!(written, Ok(true)));
        match written {
            Ok(true) => self.repaired.store(true, Ordering::SeqCst),
            Ok(false) => {}
            Err(e) => self.fail(format!(
                "the message database {} cannot be written: {e}; restart hearth \
                 (the rows are written again from the WAL), or run `hearth check`",
                self.dir.display()
            )),
        }
    }

    /// Blocks until everything handed to the writer thread before this call is
    /// written.
    pub(super) fn drain(&self) {
        let mut writer = lock(&self.writer);
        let target = writer.pushed;
        while writer.written < target && writer.running {
            writer = wait_timeout_while(&self.written, writer, READY_WAIT, |w| {
                w.written < target && w.running
            });
        }
    }

    /// Test hook: while `hold` is set the writer thread takes no work, so the rows of
    /// the realm actors' commits stay queued (what is queued is written once released,
    /// in order; `close` writes it anyway). Production never sets it: the thread only
    /// reads a flag under the lock it takes anyway.
    pub fn hold_writer_for_tests(&self, hold: bool) {
        lock(&self.writer).held = hold;
        self.work.notify_all();
    }

    /// Work handed to the writer thread so far, and written so far (a test's view of
    /// how far it is behind; see `hold_writer_for_tests`).
    pub fn writer_counts_for_tests(&self) -> (u64, u64) {
        let writer = lock(&self.writer);
        (writer.pushed, writer.written)
    }

    /// Hands the rows of one realm actor commit (ticket `ticket`) to the writer thread;
    /// see the module doc. Never blocks on sled.
    pub(super) fn write_commit(
        &self,
        names: &Arc<[String; 5]>,
        ops: Vec<Op>,
        projected: &Arc<Projected>,
        ticket: u64,
    ) {
        let open = matches!(&*lock(&self.state), State::Open { .. });
        if !open || INLINE.load(Ordering::Relaxed) {
            // Opening: queued, and readers wait for the queue to be written; failed:
            // dropped (the WAL keeps the records); inline: written now.
            for op in ops {
                let _ = self.write(names, op);
            }
            if projected.pending.load(Ordering::SeqCst) == 0 {
                projected.reached(ticket);
                return;
            }
            // Earlier commits still with the writer: marked after them.
            self.push(Work {
                names: names.clone(),
                ops: Vec::new(),
                mark: Some((projected.clone(), ticket)),
            });
            return;
        }
        if ops.is_empty() && projected.pending.load(Ordering::SeqCst) == 0 {
            projected.reached(ticket);
            return;
        }
        self.push(Work {
            names: names.clone(),
            ops,
            mark: Some((projected.clone(), ticket)),
        });
    }

    /// Queues work for the writer thread (written here if there is none).
    pub(super) fn push(&self, work: Work) {
        let mut writer = lock(&self.writer);
        if !writer.running {
            drop(writer);
            self.write_batch_inline(work);
            return;
        }
        if let Some((projected, _)) = &work.mark {
            projected.pending.fetch_add(1, Ordering::SeqCst);
        }
        writer.pushed += 1;
        writer.queue.push_back(work);
        drop(writer);
        self.work.notify_one();
    }

    /// `push` without a writer thread: written and marked on the caller's thread.
    pub(super) fn write_batch_inline(&self, work: Work) {
        self.apply_now(&work.names, work.ops);
        if let Some((projected, ticket)) = work.mark {
            projected.reached(ticket);
        }
        self.progress.send_modify(|p| *p += 1);
    }

    /// Waits until the commit with `ticket` of the realm whose progress is `projected`
    /// is written (`MessageStore::projected`).
    pub(super) async fn projected(&self, projected: &Projected, ticket: u64) {
        let mut progress = self.progress.subscribe();
        while projected.upto() < ticket {
            if progress.changed().await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realm::messages::flags;
    use crate::storage::messages::apply::apply;
    use crate::storage::messages::db::{is_message_tree, open_sled};
    use crate::storage::messages::layout::tree_names;
    use crate::storage::messages::store::MessageStore;
    use crate::storage::messages::testing::message;
    use std::collections::HashMap;
    use std::time::Instant;
    /// A tree's name and its keys and values.
    type TreeContents = (Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>);

    /// Every tree of a message database, key and value.
    fn contents(db: &sled::Db) -> Vec<TreeContents> {
        let mut names = db.tree_names();
        names.sort();
        names
            .into_iter()
            .filter(|n| is_message_tree(n))
            .map(|n| {
                let t = db.open_tree(&n).unwrap();
                let kv = t
                    .iter()
                    .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
                    .collect();
                (n.to_vec(), kv)
            })
            .collect()
    }

    fn channel_message(id: u64, sender: u64, topic: &str) -> crate::realm::messages::Message {
        let mut m = message(id, sender, sender);
        m.recipient = crate::realm::messages::Recipient::Channel {
            channel_id: 3,
            topic: topic.into(),
        };
        m
    }

    /// The sends, flag changes and edits the writer thread writes as a batch (bitmap
    /// chunks set once per run of sends) leave every tree as writing them one by one
    /// does, across chunk boundaries and with flags between the sends.
    #[test]
    fn a_batch_writes_what_its_writes_one_by_one_write() {
        let ops = || {
            let mut ops = Vec::new();
            for id in 1000..1100u64 {
                let m = if id % 3 == 0 {
                    message(id, 10, 11)
                } else {
                    channel_message(id, 10 + id % 2, if id % 2 == 0 { "a" } else { "b" })
                };
                let mut recipients = vec![(10, flags::READ), (11, 0), (12, 0)];
                if id % 7 == 0 {
                    recipients.push((13, flags::MENTIONED));
                }
                ops.push(Op::Sent {
                    message: m,
                    recipients,
                });
                if id % 25 == 0 {
                    ops.push(Op::Flags {
                        user_id: 11,
                        flag: flags::READ,
                        add: true,
                        ids: (id - 5..=id).collect(),
                    });
                    ops.push(Op::Logged {
                        seq: id,
                        change: 0,
                        op: Box::new(Op::Flags {
                            user_id: 12,
                            flag: flags::STARRED,
                            add: true,
                            ids: vec![id - 1, id],
                        }),
                    });
                }
            }
            ops
        };
        let (one, all) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let names = Arc::new(tree_names("zulip"));
        let (db1, db2) = (
            open_sled(one.path()).unwrap(),
            open_sled(all.path()).unwrap(),
        );
        let mut cache = HashMap::new();
        let t1 = trees_of(&db1, &mut cache, &names).unwrap();
        for op in ops() {
            apply(&t1, op).unwrap();
        }
        let mut cache = HashMap::new();
        let t2 = trees_of(&db2, &mut cache, &names).unwrap();
        apply_all(&t2, ops()).unwrap();
        assert_eq!(contents(&db1), contents(&db2));
        assert!(t2.rows.len() == 100 && !t2.bits.is_empty() && !t2.undo.is_empty());
    }

    /// A commit handed to the writer thread is readable once its ticket is marked, in
    /// order with the writes after it; while the database opens a commit is marked at
    /// once (readers wait for the opening, which writes it first); a sync covers every
    /// commit handed over before it.
    #[test]
    fn a_commit_is_marked_once_its_rows_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let db = MessageDb::new(dir.path());
        let store = MessageStore::new("zulip", db.clone());
        let names = Arc::new(tree_names("zulip"));
        let progress = Arc::new(Projected::default());
        let sent = |id| Op::Sent {
            message: message(id, 10, 11),
            recipients: vec![(10, flags::READ), (11, 0)],
        };
        db.write_commit(&names, vec![sent(1)], &progress, 1);
        assert_eq!(progress.upto(), 1, "opening: marked at once");
        db.settle(open_sled(dir.path()).map_err(Into::into), Instant::now());
        assert!(store.get(1).unwrap().is_some(), "written by the opening");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for ticket in 2..200u64 {
            db.write_commit(&names, vec![sent(ticket)], &progress, ticket);
        }
        // A commit without rows waits for the earlier ones of its realm.
        db.write_commit(&names, Vec::new(), &progress, 200);
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(30), db.projected(&progress, 200))
                .await
                .expect("marked")
        });
        for id in 1..200 {
            assert!(store.get(id).unwrap().is_some(), "message {id} written");
            assert_eq!(store.flags(11, id).unwrap(), Some(0));
        }
        // A write after commits comes after them: the flags land on written rows.
        for ticket in 200..300u64 {
            db.write_commit(&names, vec![sent(ticket)], &progress, ticket);
        }
        db.write(
            &names,
            Op::Flags {
                user_id: 11,
                flag: flags::READ,
                add: true,
                ids: (200..300).collect(),
            },
        )
        .unwrap();
        assert!(
            progress.upto() >= 299,
            "a write waits for the commits before it"
        );
        assert_eq!(store.flags(11, 299).unwrap(), Some(flags::READ));
        for ticket in 300..400u64 {
            db.write_commit(&names, vec![sent(ticket)], &progress, ticket);
        }
        db.sync().unwrap();
        assert!(
            progress.upto() >= 399,
            "a sync covers the commits before it"
        );
        db.close();
        // Closed: a commit is dropped (its records stay in the WAL) and marked at once.
        db.write_commit(&names, vec![sent(400)], &progress, 400);
        assert!(progress.upto() >= 400);
    }
}
