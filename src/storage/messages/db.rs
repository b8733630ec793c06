//! The message database: a second sled database, `<data>/messages/`, holding every
//! realm's message trees (`storage::messages`), apart from the database the realms
//! recover from.
//!
//! # Why a second database
//!
//! sled 0.34 builds its page table at open from an entry per tree node, so its open
//! time grows with the number of keys it holds (~60–90 ms per million here; a message
//! has ~13 keys: `benches/RESULTS.md` §6.1), and no setting changes that. With the
//! message trees in the main database, a start at 1 M messages spent ~0.8 s in sled
//! before the first answer. Apart, the main database opens in the time of an empty
//! one, the realms recover and answer at once, and this one opens on its own thread.
//!
//! # While it opens
//!
//! Writes are queued: `write` keeps each projection (`Op`, computed from the realm
//! state of its moment) in order, and the opening thread applies the queue under the
//! state lock before it declares the database open, so rows land in the order their
//! records were decided. Reads wait: the HTTP handlers that read messages await
//! `ready` first (a bounded wait, then a 503), so neither a worker nor the realm
//! actor blocks; any other reader (the event renderer thread, tools) blocks in
//! `trees` with the same bound.
//!
//! # Durability: the WAL stays the truth until a snapshot covers it
//!
//! A flush of the main database does not flush this one: the rows of a record are
//! derived from it, and every record after the newest snapshot is projected again at
//! start (idempotently). The one ordering that matters is that a snapshot is written
//! only after this database was flushed and `fsync`ed (`sync`), since records a
//! snapshot covers are never replayed again and their rows then live only here.
//!
//! # Repairs reach the disk before the WAL moves on
//!
//! Records lost with the WAL's unflushed tail, or dropped by a storage fault, may have
//! left rows here; the repair (`Op::Undo`, then `Op::Purge`) puts back or removes
//! them. Their record numbers and message ids are then given again, and the undo log
//! is keyed by record number: were the repair still in memory when new records with
//! those numbers became durable, a second crash would find the old rows and the old
//! undo entries under the new numbers (and per-user rows of a lost channel message
//! beside a new direct message with its id). So a repair that changed rows, or one
//! still queued while this database opens, makes the next WAL flush that carries new
//! records sync this database first (`sync_repairs`, from `Durability::flush_now`).
//! The usual start, with nothing to repair, costs its first write's flush one wait for
//! the open (the start itself does not wait). In `always` that orders the repair
//! before every new record; in `interval` and `never`, sled may write a full log
//! buffer of new records on its own before that flush, so a second crash in that
//! window can still find rows of the first one's lost records: those modes already
//! give up their unflushed tail.

use super::apply::apply;
use super::layout::Trees;
use super::projection::Op;
use super::search::{self, Indexes, RowTrees, SearchIndex};
use crate::locks::{lock, wait_timeout_while};
use crate::realm::messages::MessageId;
use crate::storage::folder::flush_durably;
use crate::storage::wal::manifest::META_TREE;
use crate::storage::wal::SyncedFirst;
use crate::storage::StorageError;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;
use tokio::sync::watch;

/// The folder of the message database inside a data folder.
pub const FOLDER: &str = "messages";
/// The key, in the main database's `hearth:meta` tree, saying messages live here.
pub(super) const MARKER_KEY: &str = "messages-db";
/// The key, in this database's `hearth:meta` tree, counting its syncs.
pub(super) const SYNCED_KEY: &str = "synced";
/// How long a reader waits for the database to open before it is told to retry.
pub const READY_WAIT: Duration = Duration::from_secs(60);
/// How long the opener retries a folder another process (or a store of this one
/// being dropped) still holds locked.
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(30);
/// Queued writes applied per hold of the state lock while settling.
pub(super) const SETTLE_BATCH: usize = 256;
/// The prefixes of message trees, in either database: today's, then the per-user trees
/// of the layout before bitmaps (`messages::LEGACY_USER_TREES`) and the bitmaps of
/// 1 024 ids a chunk (`messages::LEGACY_BITS_TREE`).
pub const TREE_PREFIXES: [&str; 8] = [
    "msg:",
    "msgidx:",
    "uflags:",
    "ubits128:",
    "msgundo:",
    "um:",
    "unread:",
    "ubits:",
];

/// Whether the database is usable yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    Opening,
    Open,
    /// It cannot be opened (or was closed): message reads and writes fail.
    Failed(String),
}

pub(super) struct Queued {
    pub(super) names: Arc<[String; 5]>,
    pub(super) op: Op,
}

/// How far the realm actor's commits of one realm are written (see the module doc):
/// shared by its `MessageStore`, the writer thread and the event hub's release bound.
#[derive(Default)]
pub(super) struct Projected {
    /// Every commit with a ticket up to this one is where readers find it.
    pub(super) upto: AtomicU64,
    /// Commits handed to the writer thread and not written yet.
    pub(super) pending: AtomicU64,
}

impl Projected {
    pub(super) fn upto(&self) -> u64 {
        self.upto.load(Ordering::SeqCst)
    }

    pub(super) fn reached(&self, ticket: u64) {
        self.upto.fetch_max(ticket, Ordering::SeqCst);
    }
}

/// One commit's rows (or, without `mark`, one other write) for the writer thread.
pub(super) struct Work {
    pub(super) names: Arc<[String; 5]>,
    pub(super) ops: Vec<Op>,
    /// The realm's progress and the commit's ticket, set once its rows are written.
    pub(super) mark: Option<(Arc<Projected>, u64)>,
}

/// The writer thread's queue.
#[derive(Default)]
pub(super) struct Writer {
    pub(super) queue: VecDeque<Work>,
    /// Work handed over and work written so far, counted alike: a caller that saw
    /// `pushed` at N knows everything it handed over is written once `written` is N.
    pub(super) pushed: u64,
    pub(super) written: u64,
    /// The thread runs (else commits are written on the caller's thread).
    pub(super) running: bool,
    pub(super) stop: bool,
    /// Test hook (`MessageDb::hold_writer_for_tests`): the thread takes no work while
    /// set, so a test can hold a commit's rows queued behind the actor.
    pub(super) held: bool,
}

/// Most commits the writer thread takes at once.
pub(super) const WRITE_BATCH: usize = 1024;

/// Whether commits are written on the realm actor's thread (`serve
/// --message-projection inline`, for comparison) instead of the writer thread.
pub(super) static INLINE: AtomicBool = AtomicBool::new(false);

/// Chooses where the realm actors' message rows are written from now on: on their own
/// thread (`true`, as hearth did before the writer thread) or on the writer thread.
pub fn set_inline_projection(inline: bool) {
    INLINE.store(inline, Ordering::SeqCst);
}

pub(super) enum State {
    Opening(Vec<Queued>),
    Open {
        db: sled::Db,
        /// Each realm's trees, opened once (dropped at `close`).
        trees: HashMap<Arc<[String; 5]>, Trees>,
    },
    Failed(String),
}

/// The message database of a data folder; see the module doc.
pub struct MessageDb {
    pub(super) dir: PathBuf,
    pub(super) state: Mutex<State>,
    /// Held by `sync` (its count is read, bumped and written).
    pub(super) syncing: Mutex<()>,
    pub(super) changed: Condvar,
    pub(super) ready: watch::Sender<Readiness>,
    /// Repairs queued while opening and not yet applied (see the module doc).
    pub(super) repairs_queued: AtomicUsize,
    /// A repair changed rows that no sync has covered yet.
    pub(super) repaired: AtomicBool,
    /// The opening's log lines, held back until the server's start is over: a start
    /// that fails says only why (its error line is the last and only one).
    pub(super) start_log: Mutex<StartLog>,
    /// The realm actors' commits waiting for the writer thread (see the module doc).
    pub(super) writer: Mutex<Writer>,
    /// The writer thread waits here for work.
    pub(super) work: Condvar,
    /// Callers of `drain` wait here for the writer.
    pub(super) written: Condvar,
    /// Bumped after each batch the writer wrote: `projected` waits on it.
    pub(super) progress: watch::Sender<u64>,
    /// Bumped after every write of any realm's rows, once readers see it
    /// (`generation`).
    pub(super) generation: AtomicU64,
    /// The data folder (the search indexes live in its `search/`).
    pub(super) data: PathBuf,
    /// This database, for the search indexes it starts (they read rows from it).
    pub(super) me: Weak<MessageDb>,
    /// Each realm's search index, told of every row write (`messages::search`).
    pub(super) indexes: Indexes,
}

/// See `MessageDb::start_log`.
#[derive(Default)]
pub(super) struct StartLog {
    pub(super) started: bool,
    pub(super) pending: Vec<(bool, String)>,
}

pub(super) fn emit(error: bool, line: &str) {
    if error {
        tracing::error!("{line}");
    } else {
        tracing::info!("{line}");
    }
}

/// A realm's trees from `cache`, opened (and kept there) the first time.
pub(super) fn trees_of(
    db: &sled::Db,
    cache: &mut HashMap<Arc<[String; 5]>, Trees>,
    names: &Arc<[String; 5]>,
) -> Result<Trees, sled::Error> {
    if let Some(t) = cache.get(names) {
        return Ok(t.clone());
    }
    let [rows, idx, flags, bits, undo] = &**names;
    let t = Trees {
        rows: db.open_tree(rows)?,
        idx: db.open_tree(idx)?,
        flags: db.open_tree(flags)?,
        bits: db.open_tree(bits)?,
        undo: db.open_tree(undo)?,
    };
    cache.insert(names.clone(), t.clone());
    Ok(t)
}

pub(super) fn is_message_tree(name: &[u8]) -> bool {
    TREE_PREFIXES.iter().any(|p| name.starts_with(p.as_bytes()))
}

/// Whether the main database says its folder keeps messages in `messages/`.
pub fn has_marker(main: &sled::Db) -> Result<bool, sled::Error> {
    if !main.tree_names().iter().any(|n| n == META_TREE.as_bytes()) {
        return Ok(false);
    }
    Ok(main.open_tree(META_TREE)?.get(MARKER_KEY)?.is_some())
}

/// Whether a data folder has a message database.
pub fn exists(data: &Path) -> bool {
    data.join(FOLDER).join("db").is_file()
}

/// sled's page cache for the message database, in MiB (`serve --message-cache-mb`).
pub(super) static CACHE_MB: AtomicU64 = AtomicU64::new(DEFAULT_CACHE_MB);
/// The default of `CACHE_MB`.
pub const DEFAULT_CACHE_MB: u64 = 64;

/// Sets the page cache of message databases opened from now on, in MiB (at least 1).
pub fn set_cache_mb(mb: u64) {
    CACHE_MB.store(mb.max(1), Ordering::Relaxed);
}

/// Opens the message database of `data` (sled, with hearth's flush policy and the
/// page cache `set_cache_mb` chose).
pub fn open_sled(data: &Path) -> Result<sled::Db, sled::Error> {
    open_sled_at(&data.join(FOLDER))
}

/// `open_sled` for the database in `dir`.
pub(super) fn open_sled_at(dir: &Path) -> Result<sled::Db, sled::Error> {
    crate::storage::folder::open_db(
        dir,
        Some(CACHE_MB.load(Ordering::Relaxed).saturating_mul(1024 * 1024)),
    )
}

impl MessageDb {
    pub fn new(data: &Path) -> Arc<MessageDb> {
        let db = Arc::new_cyclic(|me| MessageDb {
            data: data.to_path_buf(),
            me: me.clone(),
            indexes: Indexes::default(),
            dir: data.join(FOLDER),
            state: Mutex::new(State::Opening(Vec::new())),
            syncing: Mutex::new(()),
            changed: Condvar::new(),
            ready: watch::channel(Readiness::Opening).0,
            repairs_queued: AtomicUsize::new(0),
            repaired: AtomicBool::new(false),
            start_log: Mutex::new(StartLog::default()),
            writer: Mutex::new(Writer::default()),
            work: Condvar::new(),
            written: Condvar::new(),
            progress: watch::channel(0).0,
            generation: AtomicU64::new(0),
        });
        // Weak: a database dropped without `close` ends its writer at its next wait.
        let weak = Arc::downgrade(&db);
        let spawned = std::thread::Builder::new()
            .name("hearth-messages-write".into())
            .spawn(move || MessageDb::run_writer(&weak));
        match spawned {
            Ok(_) => lock(&db.writer).running = true,
            Err(e) => tracing::error!(
                "no message writer thread ({e}): the realm actors write message rows"
            ),
        }
        db
    }

    /// A receiver that changes whenever the writer thread wrote a batch (the release
    /// task releases what it made readable).
    pub fn subscribe_progress(&self) -> watch::Receiver<u64> {
        self.progress.subscribe()
    }

    /// A line of the opening (`error` or info): written now once the start is over,
    /// else when it is (`start_finished`), or never if it fails.
    pub(super) fn say(&self, error: bool, line: String) {
        let mut log = lock(&self.start_log);
        if log.started {
            emit(error, &line);
        } else {
            log.pending.push((error, line));
        }
    }

    /// The server started: the opening's lines held back so far are written, and any
    /// later one at once.
    pub fn start_finished(&self) {
        let mut log = lock(&self.start_log);
        log.started = true;
        for (error, line) in std::mem::take(&mut log.pending) {
            emit(error, &line);
        }
    }

    /// Writes (or, while opening, queues) one projection. A write that fails fails this
    /// database (`fail`), never the caller: neither a start nor the main store stops
    /// for it, and the record stays in the WAL until this database works again.
    pub(super) fn write(&self, names: &Arc<[String; 5]>, op: Op) -> Result<(), StorageError> {
        let mut state = lock(&self.state);
        match &mut *state {
            State::Opening(queue) => {
                if op.is_repair() {
                    self.repairs_queued.fetch_add(1, Ordering::SeqCst);
                }
                queue.push(Queued {
                    names: names.clone(),
                    op,
                });
                Ok(())
            }
            State::Open { db, trees } => {
                let t = trees_of(db, trees, names);
                drop(state);
                // After what the writer thread holds: in order with the commits.
                self.drain();
                let mut ids = Vec::new();
                let named = search::touched(&op, &mut ids);
                let written = t.map_err(StorageError::from).and_then(|t| apply(&t, op));
                self.wrote();
                self.tell_index(names, &ids, named || !matches!(written, Ok(true)));
                if let Ok(true) = written {
                    self.repaired.store(true, Ordering::SeqCst);
                }
                if let Err(e) = written {
                    self.fail(format!(
                        "the message database {} cannot be written: {e}; restart hearth \
                         (the rows are written again from the WAL), or run `hearth check`",
                        self.dir.display()
                    ));
                }
                Ok(())
            }
            // Dropped: while failed no snapshot can be written (they sync this database
            // first), so the WAL keeps the record and a restart writes its rows.
            State::Failed(_) => Ok(()),
        }
    }

    /// A realm's trees, waiting (at most `READY_WAIT`) for the database to open.
    pub(super) fn trees(&self, names: &Arc<[String; 5]>) -> Result<Trees, StorageError> {
        self.when_open(|db, cache| Ok(trees_of(db, cache, names)?))
    }

    /// Runs `f` on the open database and its tree cache, waiting (at most
    /// `READY_WAIT`) while it opens; `Err` with why it is not open.
    pub(super) fn when_open<T>(
        &self,
        f: impl FnOnce(&sled::Db, &mut HashMap<Arc<[String; 5]>, Trees>) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let mut state = wait_timeout_while(&self.changed, lock(&self.state), READY_WAIT, |s| {
            matches!(s, State::Opening(_))
        });
        match &mut *state {
            State::Open { db, trees } => f(db, trees),
            State::Opening(_) => Err(StorageError::Invalid(
                "the message database is still opening".into(),
            )),
            State::Failed(why) => Err(StorageError::Invalid(why.clone())),
        }
    }

    /// Whether the database is open, opening or failed.
    pub fn readiness(&self) -> Readiness {
        self.ready.borrow().clone()
    }

    /// Whether the database is open (reads do not wait).
    pub fn is_open(&self) -> bool {
        *self.ready.borrow() == Readiness::Open
    }

    /// Waits (at most `READY_WAIT`) until the database is open; `Err` with why it is
    /// not.
    pub async fn ready(&self) -> Result<(), String> {
        // The common case: no subscription, no timer.
        if self.is_open() {
            return Ok(());
        }
        let mut rx = self.ready.subscribe();
        let waited = tokio::time::timeout(READY_WAIT, async {
            loop {
                match &*rx.borrow_and_update() {
                    Readiness::Open => return Ok(()),
                    Readiness::Failed(why) => return Err(why.clone()),
                    Readiness::Opening => {}
                }
                if rx.changed().await.is_err() {
                    return Err("the message database was dropped".to_owned());
                }
            }
        })
        .await;
        waited.unwrap_or_else(|_| Err("the message database is still opening".into()))
    }

    /// Makes every row written so far durable: counts one more sync in the database,
    /// flushes and `fsync`s it (waiting for it to open), and returns the count, which
    /// the manifest then records. A snapshot is written only after this.
    pub fn sync(&self) -> Result<u64, StorageError> {
        // Every commit handed to the writer thread so far is written first.
        self.drain();
        // Rows an index has not committed are about to be durable: see `search`.
        for ix in self.indexes.all() {
            ix.mark_dirty();
        }
        let _one = lock(&self.syncing);
        let db = self.db()?;
        let meta = db.open_tree(META_TREE)?;
        let n = synced(&db)? + 1;
        meta.insert(SYNCED_KEY, &n.to_be_bytes()[..])?;
        flush_durably(&db, &self.dir)?;
        Ok(n)
    }

    /// Makes repairs durable before the WAL makes more records durable (see the module
    /// doc): waits for repairs queued while opening, then syncs if one changed rows.
    /// Returns the sync's number if it synced. A database that cannot be opened or
    /// synced is failed instead (its rows are then written again from the WAL at the
    /// next start), so the WAL never stops for it.
    pub fn sync_repairs(&self) -> Option<u64> {
        if self.repairs_queued.load(Ordering::SeqCst) > 0 {
            // `Open` is declared only once the queue, repairs included, is applied.
            if self.when_open(|_, _| Ok(())).is_err() {
                return None;
            }
        }
        if !self.repaired.swap(false, Ordering::SeqCst) {
            return None;
        }
        match self.sync() {
            Ok(n) => Some(n),
            Err(e) => {
                self.fail(format!(
                    "the message database {} cannot be synced after a repair: {e}; run \
                     `hearth check`",
                    self.dir.display()
                ));
                None
            }
        }
    }

    /// Drops a realm's trees (`names`, from `messages::tree_names`): out of the cache
    /// and out of the database (a realm dropped from this node).
    pub fn drop_realm(&self, names: &[String; 5]) -> Result<(), StorageError> {
        // Nothing of the realm left with the writer thread to write them again.
        self.drain();
        self.remove_search_index(names);
        let key = Arc::new(names.clone());
        self.when_open(|db, trees| {
            trees.remove(&key);
            for name in names {
                db.drop_tree(name.as_bytes())?;
            }
            self.wrote();
            Ok(())
        })
    }

    /// Marks that rows changed (after the write, so that an answer derived from the
    /// rows and kept under an earlier `generation` is never taken for a later one).
    pub(super) fn wrote(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// A number that changes after every write to any realm's rows: an answer
    /// computed from the rows after reading it stays right while it is unchanged
    /// (a write that lands meanwhile bumps it again once readers see it).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The open database, waiting for it (tools).
    pub fn db(&self) -> Result<sled::Db, StorageError> {
        self.when_open(|db, _| Ok(db.clone()))
    }

    /// Flushes and closes the database (at shutdown), after its opening ended. Readers
    /// and writers after this fail.
    pub fn close(&self) {
        {
            let mut state = lock(&self.state);
            if matches!(&*state, State::Opening(_)) {
                // The writes queued are in the WAL, which no snapshot covers yet (a
                // snapshot waits for this database); the opener drops what it opens.
                *state = State::Failed("the message database is closed".into());
                drop(state);
                self.changed.notify_all();
                self.ready
                    .send_replace(Readiness::Failed("the message database is closed".into()));
                self.stop_writer();
                return;
            }
        }
        // The order matters twice. The writer's queue is written first (`sync` drains
        // it) so the indexes hear of every row; then each index commits what it was
        // told while the rows can still be read (a commit refused by a closed database
        // leaves the index dirty, rebuilt whole at the next start) and lets go of its
        // folder; no index starts after that (`Indexes::close`), so none holds the
        // database once it is closed. A row written after this (a write racing the
        // shutdown) marks its realm's index dirty instead (`tell_index`).
        let flushed = self.sync();
        self.stop_writer();
        for ix in self.indexes.close() {
            ix.stop();
        }
        let mut state = lock(&self.state);
        if let Err(e) = flushed {
            if !matches!(&*state, State::Failed(_)) {
                tracing::error!("final flush of the message database failed: {e}");
            }
        }
        if matches!(&*state, State::Open { .. }) {
            *state = State::Failed("the message database is closed".into());
            drop(state);
            self.changed.notify_all();
            self.ready
                .send_replace(Readiness::Failed("the message database is closed".into()));
        }
    }

    /// Tells the realm's search index which messages a write wrote (`named`: `ids` are
    /// all it changed; else it is rebuilt).
    pub(super) fn tell_index(&self, names: &Arc<[String; 5]>, ids: &[MessageId], named: bool) {
        if ids.is_empty() && named {
            return;
        }
        if let Some(ix) = self.search_index(names) {
            ix.touch(ids);
            if !named {
                ix.rebuild();
            }
        } else if let Some(started) = self.indexes.closed_one(names) {
            // Closing, the indexes stopped or stopping: the next start rebuilds this one.
            match started {
                Some(ix) => ix.leave_dirty(),
                None => {
                    let subdomain = names[0].strip_prefix("msg:").unwrap_or(&names[0]);
                    search::left_behind(&self.data, subdomain);
                }
            }
        }
    }

    /// The search index of the realm of `names`, started (opened or rebuilt on its own
    /// thread) at its first use; `None` when indexes are off.
    pub(super) fn search_index(&self, names: &Arc<[String; 5]>) -> Option<Arc<SearchIndex>> {
        let me: Weak<dyn RowTrees> = self.me.clone();
        self.indexes.get(&self.data, names, &me)
    }

    /// Removes the search index of a realm whose rows are dropped or replaced.
    pub(super) fn remove_search_index(&self, names: &[String; 5]) {
        match self.indexes.take(names) {
            Some(ix) => ix.remove(),
            None => {
                let subdomain = names[0].strip_prefix("msg:").unwrap_or(&names[0]);
                let dir = search::realm_dir(&self.data, subdomain);
                if let Err(e) = std::fs::remove_dir_all(&dir) {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        tracing::warn!("cannot remove {}: {e}", dir.display());
                    }
                }
            }
        }
    }

    /// Ends the writer thread once its queue is empty; later commits are written (or,
    /// closed, dropped) on their caller's thread.
    pub(super) fn stop_writer(&self) {
        lock(&self.writer).stop = true;
        self.work.notify_all();
    }
}

/// A realm's search index reads its rows back from here (`search::RowTrees`).
impl RowTrees for MessageDb {
    fn trees(&self, names: &Arc<[String; 5]>) -> Result<Trees, StorageError> {
        MessageDb::trees(self, names)
    }
}

/// How many syncs the message database `db` holds (see `MessageDb::sync`).
pub fn synced(db: &sled::Db) -> Result<u64, sled::Error> {
    let Some(v) = db.open_tree(META_TREE)?.get(SYNCED_KEY)? else {
        return Ok(0);
    };
    let mut b = [0u8; 8];
    let n = v.len().min(8);
    b[8 - n..].copy_from_slice(&v[..n]);
    Ok(u64::from_be_bytes(b))
}

/// What a message database that holds fewer syncs than the manifest counts lost: sled
/// drops everything after a damaged part of its log, silently (`storage` module doc).
pub fn lost_writes(db: &sled::Db, expected: u64) -> Result<Option<String>, sled::Error> {
    let found = synced(db)?;
    Ok((found < expected).then(|| {
        format!(
            "it lost writes: the manifest counts {expected} syncs of it, it holds {found} \
             (message rows written after its sync {found} may be gone)"
        )
    }))
}

/// The flusher syncs the message database before the main one (`wal::SyncedFirst`).
impl SyncedFirst for MessageDb {
    fn sync_repairs(&self) -> Option<u64> {
        MessageDb::sync_repairs(self)
    }

    fn is_open(&self) -> bool {
        MessageDb::is_open(self)
    }

    fn sync(&self) -> Result<u64, StorageError> {
        MessageDb::sync(self)
    }

    fn failure(&self) -> Option<String> {
        match self.readiness() {
            Readiness::Failed(why) => Some(why),
            Readiness::Opening | Readiness::Open => None,
        }
    }

    fn close(&self) {
        MessageDb::close(self)
    }
}
