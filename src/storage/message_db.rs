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
//! # The writer thread: rows off the realm actors' path
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

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::folder::{flush_durably, sync_blob_files};
#[cfg(test)]
use super::messages::UNDO_CHUNK_BYTES;
use super::messages::{apply, apply_all, migrate_layout, needs_layout_migration, Op, Trees};
use super::search::{self, Indexes, SearchIndex};
use super::wal::manifest::META_TREE;
use super::wal::{Durability, SyncedFirst};
use super::StorageError;
use crate::locks::{lock, wait_timeout_while};
use crate::realm::messages::MessageId;

/// The folder of the message database inside a data folder.
pub const FOLDER: &str = "messages";
/// The key, in the main database's `hearth:meta` tree, saying messages live here.
const MARKER_KEY: &str = "messages-db";
/// The key, in this database's `hearth:meta` tree, counting its syncs.
const SYNCED_KEY: &str = "synced";
/// How long a reader waits for the database to open before it is told to retry.
pub const READY_WAIT: Duration = Duration::from_secs(60);
/// How long the opener retries a folder another process (or a store of this one
/// being dropped) still holds locked.
const LOCK_WAIT: Duration = Duration::from_secs(30);
/// Queued writes applied per hold of the state lock while settling.
const SETTLE_BATCH: usize = 256;
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

struct Queued {
    names: Arc<[String; 5]>,
    op: Op,
}

/// How far the realm actor's commits of one realm are written (see the module doc):
/// shared by its `MessageStore`, the writer thread and the event hub's release bound.
#[derive(Default)]
pub(super) struct Projected {
    /// Every commit with a ticket up to this one is where readers find it.
    upto: AtomicU64,
    /// Commits handed to the writer thread and not written yet.
    pending: AtomicU64,
}

impl Projected {
    pub(super) fn upto(&self) -> u64 {
        self.upto.load(Ordering::SeqCst)
    }

    fn reached(&self, ticket: u64) {
        self.upto.fetch_max(ticket, Ordering::SeqCst);
    }
}

/// One commit's rows (or, without `mark`, one other write) for the writer thread.
struct Work {
    names: Arc<[String; 5]>,
    ops: Vec<Op>,
    /// The realm's progress and the commit's ticket, set once its rows are written.
    mark: Option<(Arc<Projected>, u64)>,
}

/// The writer thread's queue.
#[derive(Default)]
struct Writer {
    queue: VecDeque<Work>,
    /// Work handed over and work written so far, counted alike: a caller that saw
    /// `pushed` at N knows everything it handed over is written once `written` is N.
    pushed: u64,
    written: u64,
    /// The thread runs (else commits are written on the caller's thread).
    running: bool,
    stop: bool,
}

/// Most commits the writer thread takes at once.
const WRITE_BATCH: usize = 1024;

/// Whether commits are written on the realm actor's thread (`serve
/// --message-projection inline`, for comparison) instead of the writer thread.
static INLINE: AtomicBool = AtomicBool::new(false);

/// Chooses where the realm actors' message rows are written from now on: on their own
/// thread (`true`, as hearth did before the writer thread) or on the writer thread.
pub fn set_inline_projection(inline: bool) {
    INLINE.store(inline, Ordering::SeqCst);
}

enum State {
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
    dir: PathBuf,
    state: Mutex<State>,
    /// Held by `sync` (its count is read, bumped and written).
    syncing: Mutex<()>,
    changed: Condvar,
    ready: watch::Sender<Readiness>,
    /// Repairs queued while opening and not yet applied (see the module doc).
    repairs_queued: AtomicUsize,
    /// A repair changed rows that no sync has covered yet.
    repaired: AtomicBool,
    /// The opening's log lines, held back until the server's start is over: a start
    /// that fails says only why (its error line is the last and only one).
    start_log: Mutex<StartLog>,
    /// The realm actors' commits waiting for the writer thread (see the module doc).
    writer: Mutex<Writer>,
    /// The writer thread waits here for work.
    work: Condvar,
    /// Callers of `drain` wait here for the writer.
    written: Condvar,
    /// Bumped after each batch the writer wrote: `projected` waits on it.
    progress: watch::Sender<u64>,
    /// Bumped after every write of any realm's rows, once readers see it
    /// (`generation`).
    generation: AtomicU64,
    /// The data folder (the search indexes live in its `search/`).
    data: PathBuf,
    /// This database, for the search indexes it starts (they read rows from it).
    me: Weak<MessageDb>,
    /// Each realm's search index, told of every row write (`storage::search`).
    indexes: Indexes,
}

/// See `MessageDb::start_log`.
#[derive(Default)]
struct StartLog {
    started: bool,
    pending: Vec<(bool, String)>,
}

fn emit(error: bool, line: &str) {
    if error {
        tracing::error!("{line}");
    } else {
        tracing::info!("{line}");
    }
}

/// A realm's trees from `cache`, opened (and kept there) the first time.
fn trees_of(
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

fn is_message_tree(name: &[u8]) -> bool {
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
static CACHE_MB: AtomicU64 = AtomicU64::new(DEFAULT_CACHE_MB);
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
fn open_sled_at(dir: &Path) -> Result<sled::Db, sled::Error> {
    super::folder::sled_config(dir)
        .cache_capacity(CACHE_MB.load(Ordering::Relaxed).saturating_mul(1024 * 1024))
        .open()
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

    /// The writer thread: takes what the realm actors handed over, in order, a batch
    /// at a time, writes it (`apply_all`: a run of sends sets each bitmap chunk once),
    /// then marks each commit written.
    fn run_writer(this: &Weak<MessageDb>) {
        loop {
            let Some(db) = this.upgrade() else { return };
            let batch: Vec<Work> = {
                let mut writer = wait_timeout_while(
                    &db.work,
                    lock(&db.writer),
                    Duration::from_millis(500),
                    |w| w.queue.is_empty() && !w.stop,
                );
                if writer.queue.is_empty() {
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
    fn write_batch(&self, batch: Vec<Work>) {
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
    fn apply_now(&self, names: &Arc<[String; 5]>, ops: Vec<Op>) {
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
    fn push(&self, work: Work) {
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
    fn write_batch_inline(&self, work: Work) {
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

    /// A receiver that changes whenever the writer thread wrote a batch (the release
    /// task releases what it made readable).
    pub fn subscribe_progress(&self) -> watch::Receiver<u64> {
        self.progress.subscribe()
    }

    /// A line of the opening (`error` or info): written now once the start is over,
    /// else when it is (`start_finished`), or never if it fails.
    fn say(&self, error: bool, line: String) {
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

    /// Opens the database on its own thread: moves the message trees of a folder from
    /// before into it, applies the writes queued meanwhile, and declares it open.
    pub(super) fn open_in_background(self: &Arc<Self>, durability: Arc<Durability>) {
        let this = self.clone();
        let spawned = std::thread::Builder::new()
            .name("hearth-messages-open".into())
            .spawn(move || {
                let started = Instant::now();
                let opened = this.open_with_retries().and_then(|db| {
                    // The folder's and its files' names survive a power loss too.
                    File::open(this.dir.join("conf"))?.sync_all()?;
                    File::open(&this.dir)?.sync_all()?;
                    File::open(durability.dir())?.sync_all()?;
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
    fn migrate_layout(&self, db: sled::Db) -> Result<sled::Db, StorageError> {
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
        sync_blob_files(&fresh)?;
        File::open(fresh.join("conf"))?.sync_all()?;
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

    fn open_with_retries(&self) -> Result<sled::Db, StorageError> {
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            let data = self.dir.parent().unwrap_or(Path::new("."));
            match open_sled(data) {
                Err(e) if super::folder::is_lock_error(&e) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => return Ok(other?),
            }
        }
    }

    /// Ends the opening: applies the queue in order, a batch at a time with the lock
    /// released in between (the realm actor queues meanwhile, never waits long), and
    /// publishes the outcome once the queue is empty.
    fn settle(&self, opened: Result<sled::Db, StorageError>, started: Instant) {
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
    fn fail(&self, why: String) {
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
    fn when_open<T>(
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
        drop(db);
        sync_blob_files(&self.dir)?;
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
        let flushed = self.sync();
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
        self.stop_writer();
        // Each index commits what it was told and lets go of its folder.
        for ix in self.indexes.all() {
            ix.stop();
        }
    }

    /// Tells the realm's search index which messages a write wrote (`named`: `ids` are
    /// all it changed; else it is rebuilt).
    fn tell_index(&self, names: &Arc<[String; 5]>, ids: &[MessageId], named: bool) {
        if ids.is_empty() && named {
            return;
        }
        if let Some(ix) = self.search_index(names) {
            ix.touch(ids);
            if !named {
                ix.rebuild();
            }
        }
    }

    /// The search index of the realm of `names`, started (opened or rebuilt on its own
    /// thread) at its first use; `None` when indexes are off.
    pub(super) fn search_index(&self, names: &Arc<[String; 5]>) -> Option<Arc<SearchIndex>> {
        self.indexes.get(&self.data, names, &self.me)
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
    fn stop_writer(&self) {
        lock(&self.writer).stop = true;
        self.work.notify_all();
    }
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

/// Where a fresh message database is written before it is swapped in.
pub const FRESH: &str = "messages.new";
/// Where the message database a swap replaces goes until it is removed.
pub const REPLACED: &str = "messages.old";
/// The file saying that the fresh database is complete and durable.
const COMPLETE: &str = "hearth-complete";

/// `HEARTH_MESSAGES_FAULT=abort:<step>` ends the process at that step of the rewrite
/// into a fresh database (`copied`: the copy is durable but not marked complete;
/// `replaced`: the old database moved aside, the fresh one not yet in its place), as
/// `kill -9` would (the crash tests of the rewrite).
fn fault(step: &str) {
    let wanted = std::env::var("HEARTH_MESSAGES_FAULT").ok();
    if wanted.as_deref().and_then(|f| f.strip_prefix("abort:")) == Some(step) {
        std::process::abort();
    }
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Puts the complete fresh database `messages.new` in the place of `messages`: moves
/// `messages` aside to `messages.old`, moves the fresh one in, removes the old one,
/// each rename made durable before the next step (see `finish_swap` for a crash in
/// between).
fn swap_in(data: &Path) -> std::io::Result<()> {
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

/// Moves the message trees of a folder from before into `db` (see the module doc),
/// then sets the marker. Nothing to move: only the marker.
fn migrate(
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
    use crate::realm::messages::flags;
    use crate::storage::messages::MessageStore;

    fn message(id: u64, sender: u64, to: u64) -> crate::realm::messages::Message {
        use crate::realm::messages::{Message, Recipient, Wildcard};
        Message {
            id,
            sender_id: sender,
            recipient: Recipient::Direct {
                users: vec![sender, to],
            },
            rendered_content: "<p>hi</p>".into(),
            content: "hi".into(),
            timestamp: 1_700_000_000,
            client: "test".into(),
            is_me_message: false,
            mentioned: Vec::new(),
            wildcard: Wildcard::None,
            sender_read: true,
            edits: Vec::new(),
            last_edit_timestamp: None,
            last_moved_timestamp: None,
            reactions: Vec::new(),
        }
    }

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
        let names = Arc::new(super::super::messages::tree_names("zulip"));
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
        let names = Arc::new(super::super::messages::tree_names("zulip"));
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
        let names = Arc::new(super::super::messages::tree_names("zulip"));
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
        let names = Arc::new(super::super::messages::tree_names("zulip"));
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
        let names = Arc::new(super::super::messages::tree_names("zulip"));
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

    /// A repair that changed rows is synced before the WAL's next flush; one that
    /// changed nothing costs no sync; one queued while the database opens is waited
    /// for.
    #[test]
    fn repairs_are_synced_before_the_next_wal_flush() {
        let dir = tempfile::tempdir().unwrap();
        let db = MessageDb::new(dir.path());
        let names = Arc::new(super::super::messages::tree_names("zulip"));
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
        let names = Arc::new(super::super::messages::tree_names("zulip"));
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
        let names = Arc::new(super::super::messages::tree_names("zulip"));
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
        let names = Arc::new(super::super::messages::tree_names("zulip"));
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
