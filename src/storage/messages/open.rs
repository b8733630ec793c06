//! The background open of the message database.
//!
//! # Folders from before
//!
//! A folder whose main database still holds message trees (hearth before this module)
//! has them copied here at its first start, made durable here, then dropped from the
//! main database, all before the queue is applied; a crash in between copies them
//! again, over identical values. A marker in the main database (`hearth:meta`,
//! `messages-db`) then says that this folder keeps its messages here, so a start that
//! finds the marker but no `messages/` refuses rather than start without them.
//!
//! # A fresh database for a folder of an older layout
//!
//! A message database of an older layout (a key per user and message, or bitmaps of
//! 1 024 ids a chunk: `messages` module doc) is not
//! rewritten in place: sled 0.34 never frees the tree nodes that removals empty, nor
//! shrinks its file, so a folder rewritten in place kept its old size, page table and
//! open time. Instead its trees are copied, rewritten on the way
//! (`messages::migrate_layout`), into a fresh database `<data>/messages.new/`, which
//! is made durable and marked complete (a file `hearth-complete` in it, `fsync`ed with
//! its folder), then swapped in: `messages/` renamed to `messages.old/`, the fresh one
//! renamed to `messages/`, each rename made durable before the next, and the old one
//! removed. The old database is only read until the swap, so a crash (`kill -9`)
//! anywhere leaves a folder that `finish_swap` (at the start, before anything opens
//! it) completes: before the first rename the old database is still in place and the
//! fresh copy is removed (this start rewrites it again); between the renames the
//! complete fresh copy is moved in. Message reads wait for the rewrite as for any
//! opening (at most `READY_WAIT`).

use super::apply::apply;
use super::db::{
    has_marker, is_message_tree, lost_writes, open_sled, open_sled_at, synced, trees_of, MessageDb,
    Queued, Readiness, State, FOLDER, LOCK_WAIT, MARKER_KEY, SETTLE_BATCH, SYNCED_KEY,
};
use super::layout::Trees;
use super::migrate::{migrate_layout, needs_layout_migration};
use super::search;
use crate::locks::lock;
use crate::storage::folder::flush_durably;
use crate::storage::wal::manifest::META_TREE;
use crate::storage::wal::Durability;
use crate::storage::StorageError;
use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl MessageDb {
    /// Opens the database on its own thread: moves the message trees of a folder from
    /// before into it, applies the writes queued meanwhile, and declares it open.
    pub(in crate::storage) fn open_in_background(self: &Arc<Self>, durability: Arc<Durability>) {
        let this = self.clone();
        let spawned = std::thread::Builder::new()
            .name("hearth-messages-open".into())
            .spawn(move || {
                let started = Instant::now();
                let opened = this.open_with_retries().and_then(|db| {
                    migrate(&this, &durability, &db)?;
                    let db = this.migrate_layout(db)?;
                    let expected = durability.marks().loaded().map_or(0, |m| m.messages_synced);
                    if let Some(lost) = lost_writes(&db, expected)? {
                        return Err(StorageError::Invalid(lost));
                    }
                    Ok(db)
                });
                this.settle(opened, started);
            });
        if let Err(e) = spawned {
            self.settle(Err(e.into()), Instant::now());
        }
    }

    /// Rewrites a database of an older layout into a fresh one and swaps it in (see "A
    /// fresh database for a folder of an older layout" in the module doc);
    /// returns the database to use: `db` when there is nothing to rewrite, else the
    /// fresh one.
    pub(super) fn migrate_layout(&self, db: sled::Db) -> Result<sled::Db, StorageError> {
        if !needs_layout_migration(&db)? {
            return Ok(db);
        }
        let started = Instant::now();
        let data = self.dir.parent().unwrap_or(Path::new("."));
        let fresh = data.join(FRESH);
        if fresh.exists() {
            std::fs::remove_dir_all(&fresh)?;
        }
        let new = open_sled_at(&fresh)?;
        let done = migrate_layout(&db, &new)?;
        flush_durably(&new, &fresh)?;
        drop(new);
        fault("copied");
        File::create(fresh.join(COMPLETE))?.sync_all()?;
        File::open(&fresh)?.sync_all()?;
        drop(db);
        swap_in(data)?;
        let db = self.open_with_retries()?;
        self.say(
            false,
            format!(
                "rewrote the message database {} of {} realms into a fresh one in {} ms: \
                 {} keys of the older layouts read, {} keys written",
                self.dir.display(),
                done.realms,
                started.elapsed().as_millis(),
                done.keys,
                done.written,
            ),
        );
        Ok(db)
    }

    pub(super) fn open_with_retries(&self) -> Result<sled::Db, StorageError> {
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            let data = self.dir.parent().unwrap_or(Path::new("."));
            match open_sled(data) {
                Err(e)
                    if crate::storage::folder::is_lock_error(&e) && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => return Ok(other?),
            }
        }
    }

    /// Ends the opening: applies the queue in order, a batch at a time with the lock
    /// released in between (the realm actor queues meanwhile, never waits long), and
    /// publishes the outcome once the queue is empty.
    pub(super) fn settle(&self, opened: Result<sled::Db, StorageError>, started: Instant) {
        let mut trees: HashMap<Arc<[String; 5]>, Trees> = HashMap::new();
        let mut applied = 0usize;
        let outcome = opened.and_then(|db| loop {
            let batch: Vec<Queued> = {
                let mut state = lock(&self.state);
                match &mut *state {
                    State::Opening(queue) if queue.is_empty() => {
                        *state = State::Open {
                            db,
                            trees: std::mem::take(&mut trees),
                        };
                        break Ok(());
                    }
                    State::Opening(queue) => {
                        let n = queue.len().min(SETTLE_BATCH);
                        queue.drain(..n).collect()
                    }
                    // Closed before it opened: the database is dropped (and unlocked).
                    _ => return Ok(()),
                }
            };
            for q in batch {
                let repair = q.op.is_repair();
                let mut ids = Vec::new();
                let named = search::touched(&q.op, &mut ids);
                let changed = apply(&trees_of(&db, &mut trees, &q.names)?, q.op)?;
                self.tell_index(&q.names, &ids, named || !changed);
                if changed {
                    self.repaired.store(true, Ordering::SeqCst);
                }
                if repair {
                    self.repairs_queued.fetch_sub(1, Ordering::SeqCst);
                }
                applied += 1;
            }
            self.wrote();
        });
        let readiness = match outcome {
            Ok(()) if !matches!(&*lock(&self.state), State::Open { .. }) => return,
            Ok(()) => {
                // An instant open of a small store is not worth a line.
                let took = started.elapsed();
                if took >= Duration::from_millis(100) || applied > 0 {
                    self.say(
                        false,
                        format!(
                            "opened the message database {} in {} ms ({applied} writes \
                             made meanwhile applied)",
                            self.dir.display(),
                            took.as_millis()
                        ),
                    );
                }
                Readiness::Open
            }
            Err(e) => {
                let why = format!(
                    "the message database {} cannot be opened: {e}; run `hearth check`",
                    self.dir.display()
                );
                self.say(true, why.clone());
                *lock(&self.state) = State::Failed(why.clone());
                Readiness::Failed(why)
            }
        };
        self.changed.notify_all();
        self.ready.send_replace(readiness);
    }

    /// Fails the database after a write it could not make: reads answer 503 and
    /// `/health/ready` says why; snapshots (which sync it first) stop, so the WAL keeps
    /// every record since the last one and a restart writes their rows again.
    pub(super) fn fail(&self, why: String) {
        let mut state = lock(&self.state);
        if matches!(&*state, State::Failed(_)) {
            return;
        }
        self.say(true, why.clone());
        *state = State::Failed(why.clone());
        drop(state);
        self.changed.notify_all();
        self.ready.send_replace(Readiness::Failed(why));
    }
}

/// Where a fresh message database is written before it is swapped in.
pub const FRESH: &str = "messages.new";
/// Where the message database a swap replaces goes until it is removed.
pub const REPLACED: &str = "messages.old";
/// The file saying that the fresh database is complete and durable.
pub(super) const COMPLETE: &str = "hearth-complete";

/// `HEARTH_MESSAGES_FAULT=abort:<step>` ends the process at that step of the rewrite
/// into a fresh database (`copied`: the copy is durable but not marked complete;
/// `replaced`: the old database moved aside, the fresh one not yet in its place), as
/// `kill -9` would (the crash tests of the rewrite).
pub(super) fn fault(step: &str) {
    let wanted = std::env::var("HEARTH_MESSAGES_FAULT").ok();
    if wanted.as_deref().and_then(|f| f.strip_prefix("abort:")) == Some(step) {
        std::process::abort();
    }
}

pub(super) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Puts the complete fresh database `messages.new` in the place of `messages`: moves
/// `messages` aside to `messages.old`, moves the fresh one in, removes the old one,
/// each rename made durable before the next step (see `finish_swap` for a crash in
/// between).
pub(super) fn swap_in(data: &Path) -> std::io::Result<()> {
    let (current, fresh, replaced) = (data.join(FOLDER), data.join(FRESH), data.join(REPLACED));
    if replaced.exists() {
        std::fs::remove_dir_all(&replaced)?;
    }
    std::fs::rename(&current, &replaced)?;
    sync_dir(data)?;
    fault("replaced");
    std::fs::rename(&fresh, &current)?;
    sync_dir(data)?;
    std::fs::remove_file(current.join(COMPLETE))?;
    std::fs::remove_dir_all(&replaced)?;
    sync_dir(data)
}

/// Ends a swap a crash interrupted, before anything opens the message database of
/// `data`: with `messages` in place, a fresh copy not yet swapped in (`messages.new`,
/// complete or not) and a replaced database left behind (`messages.old`) are removed,
/// and the next start redoes the rewrite; with `messages` moved aside and the fresh one
/// complete, the fresh one is moved in; with only `messages.old`, it is moved back.
/// `true`: there was a swap to finish. `hearth serve`, `check` and `recover` run it
/// first, so each sees the folder a start would.
pub fn finish_swap(data: &Path) -> std::io::Result<bool> {
    let (current, fresh, replaced) = (data.join(FOLDER), data.join(FRESH), data.join(REPLACED));
    if !fresh.exists() && !replaced.exists() {
        return Ok(false);
    }
    if !current.exists() {
        if fresh.join(COMPLETE).is_file() {
            std::fs::rename(&fresh, &current)?;
            sync_dir(data)?;
            std::fs::remove_file(current.join(COMPLETE))?;
        } else if replaced.exists() {
            std::fs::rename(&replaced, &current)?;
        }
        sync_dir(data)?;
    }
    for leftover in [fresh, replaced] {
        if leftover.exists() {
            std::fs::remove_dir_all(&leftover)?;
        }
    }
    sync_dir(data)?;
    Ok(true)
}

/// Moves the message trees of a folder from before into `db` (see the module doc),
/// then sets the marker. Nothing to move: only the marker.
pub(super) fn migrate(
    messages: &MessageDb,
    durability: &Durability,
    db: &sled::Db,
) -> Result<(), StorageError> {
    let dir = &messages.dir;
    let main = durability.db().ok_or_else(|| {
        StorageError::Invalid("the main database is closed after a storage failure".into())
    })?;
    if has_marker(&main)? {
        return Ok(());
    }
    let names: Vec<sled::IVec> = main
        .tree_names()
        .into_iter()
        .filter(|n| is_message_tree(n))
        .collect();
    if !names.is_empty() {
        let started = Instant::now();
        let mut keys = 0u64;
        for name in &names {
            let (from, to) = (main.open_tree(name)?, db.open_tree(name)?);
            for item in from.iter() {
                let (k, v) = item?;
                to.insert(k, v)?;
                keys += 1;
            }
        }
        // Counted as a sync, and the count in the manifest, before the only other copy
        // goes: from here a loss in this database is noticed.
        let n = synced(db)? + 1;
        db.open_tree(META_TREE)?
            .insert(SYNCED_KEY, &n.to_be_bytes()[..])?;
        flush_durably(db, dir)?;
        durability.marks().messages_synced(n);
        durability
            .marks()
            .write_now(durability.dir(), Some(&main))?;
        for name in &names {
            main.drop_tree(name)?;
        }
        messages.say(
            false,
            format!(
                "moved {} message trees ({keys} keys) into {} in {} ms",
                names.len(),
                dir.display(),
                started.elapsed().as_millis()
            ),
        );
    }
    main.open_tree(META_TREE)?.insert(MARKER_KEY, &[1u8][..])?;
    drop(main);
    // Not `flush_now`, which waits for this very opening to end (`sync_repairs`).
    durability.flush_main()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::lock;
    use crate::realm::messages::flags;
    use crate::storage::messages::db::{open_sled, Readiness, State};
    use crate::storage::messages::layout::tree_names;
    use crate::storage::messages::projection::Op;
    use crate::storage::messages::store::MessageStore;
    use std::time::Duration;
    /// A repair that changed rows is synced before the WAL's next flush; one that
    /// changed nothing costs no sync; one queued while the database opens is waited
    /// for.
    #[test]
    fn repairs_are_synced_before_the_next_wal_flush() {
        let dir = tempfile::tempdir().unwrap();
        let db = MessageDb::new(dir.path());
        let names = Arc::new(tree_names("zulip"));
        let logged = |seq: u64, add: bool| Op::Logged {
            seq,
            change: 0,
            op: Box::new(Op::Flags {
                user_id: 7,
                flag: flags::STARRED,
                add,
                ids: vec![1],
            }),
        };
        db.write(&names, logged(1, true)).unwrap();
        db.write(&names, Op::Undo { after: 5 }).unwrap();
        let opener = {
            let (db, dir) = (db.clone(), dir.path().to_owned());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                db.settle(open_sled(&dir).map_err(Into::into), Instant::now());
            })
        };
        // Queued, changed nothing: waited for, not synced.
        assert_eq!(db.sync_repairs(), None);
        assert!(matches!(&*lock(&db.state), State::Open { .. }));
        opener.join().unwrap();
        let syncs = || synced(&db.db().unwrap()).unwrap();
        let before = syncs();
        db.write(&names, logged(6, false)).unwrap();
        db.write(&names, Op::Undo { after: 5 }).unwrap();
        assert_eq!(db.sync_repairs(), Some(before + 1));
        assert_eq!(syncs(), before + 1);
        assert_eq!(db.sync_repairs(), None, "once");
    }

    /// Writes made while the database opens wait in order and are applied before any
    /// reader sees it: a reader started meanwhile blocks, then finds every write, the
    /// later ones over the earlier.
    #[test]
    fn writes_made_while_opening_land_in_order_before_any_read() {
        let dir = tempfile::tempdir().unwrap();
        let db = MessageDb::new(dir.path());
        let store = MessageStore::new("zulip", db.clone());
        let names = Arc::new(tree_names("zulip"));
        let flag = |add: bool, ids: Vec<u64>| Op::Flags {
            user_id: 7,
            flag: flags::STARRED,
            add,
            ids,
        };
        db.write(&names, flag(true, vec![1, 2])).unwrap();
        db.write(&names, flag(false, vec![1])).unwrap();
        assert!(!db.is_open());
        let reader = {
            let store = store.clone();
            std::thread::spawn(move || (store.flags(7, 1), store.flags(7, 2)))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!reader.is_finished(), "a read waits for the opening");
        db.settle(open_sled(dir.path()).map_err(Into::into), Instant::now());
        let (one, two) = reader.join().unwrap();
        let base = flags::HISTORICAL | flags::READ;
        assert_eq!(one.unwrap(), Some(base));
        assert_eq!(two.unwrap(), Some(base | flags::STARRED));
        assert!(db.is_open());
        // Once open, a write is applied at once.
        db.write(&names, flag(true, vec![1])).unwrap();
        assert_eq!(store.flags(7, 1).unwrap(), Some(base | flags::STARRED));
        // Syncs are counted, and a count below the manifest's is a loss.
        assert_eq!(db.sync().unwrap(), 1);
        assert_eq!(db.sync().unwrap(), 2);
        let opened = db.db().unwrap();
        assert_eq!(lost_writes(&opened, 2).unwrap(), None);
        assert!(lost_writes(&opened, 3).unwrap().is_some());
        drop(opened);
        db.close();
        assert!(matches!(db.readiness(), Readiness::Failed(_)));
        assert!(store.flags(7, 1).is_err(), "closed: reads fail, never hang");
    }
}
