//! Group commit: writers take a ticket after appending; one flusher thread makes the
//! records durable and publishes "durable up to ticket N" in a watch channel.
//!
//! Under load one `fsync` covers every write appended before it started; idle, a write
//! costs one `fsync`. The realm actor never waits: handlers await their ticket.
//!
//! The flusher's commit appends the records to the journal (`wal::journal`) with
//! one `pwrite` and one `fdatasync`; sled itself is flushed by `flush_now`, a
//! checkpoint, which then empties the journal.
//!
//! A second watch channel, `visible`, says up to which ticket the mode lets readers see
//! writes: in `always` the durable ticket, in `interval` and `never` every ticket at
//! once (those modes promise no more).
//!
//! A flush that fails is retried a bounded number of times; then the store is *failed*
//! and recovers once every realm store reset (`wal::faults`).
//!
//! The flusher also keeps the manifest (`wal::manifest`): the appended marks taken
//! before each flush count durable once it succeeded, and it writes them out at most
//! once a second when they moved, after the flush (never while a writer waits on it).
//!
//! A poisoned lock never ends the flusher or drops data: every lock here guards plain
//! values that stay consistent, so the guard is recovered (`crate::locks`).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock, Weak};
use std::time::Duration;

use tokio::sync::watch;

use super::journal::{Journal, CHECKPOINT_BYTES};
use super::manifest::{Manifest, Marks};
use crate::locks::{lock, read, wait_timeout_while};
use crate::storage::folder::{flush_durably, sync_blob_files};
use crate::storage::StorageError;

/// When an acknowledged write reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurabilityMode {
    /// Answer after the flush that covers the write (group commit).
    Always,
    /// Flush at most every N milliseconds; answer at once (like Redis `everysec`).
    Interval(u64),
    /// Never flush on the write path (tests, load harnesses); snapshots and shutdown do.
    Never,
}

impl FromStr for DurabilityMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "always" => Ok(DurabilityMode::Always),
            "interval" => Ok(DurabilityMode::Interval(1000)),
            "never" => Ok(DurabilityMode::Never),
            _ => Err(format!(
                "unknown durability '{s}' (always, interval, never)"
            )),
        }
    }
}

/// A failed flush is tried this many times in all before the store fails.
const FLUSH_ATTEMPTS: u32 = 3;
const FLUSH_RETRY_PAUSE: Duration = Duration::from_millis(200);

/// While failed, the flusher tries to recover this often.
const PROBE_PERIOD: Duration = Duration::from_secs(1);

/// What a realm store hands over after a fault: the state its actor went back to.
#[derive(Debug, Clone)]
pub struct Reset {
    /// The realm's subdomain (its marks in the manifest go back to `seq`).
    pub realm: String,
    /// The realm's WAL tree: every record in it is removed.
    pub wal: String,
    /// The realm's snapshots tree: every snapshot in it is replaced by `snapshot`.
    pub snaps: String,
    /// The sequence number the snapshot covers (the realm's last durable record).
    pub seq: u64,
    /// The encoded realm.
    pub snapshot: Vec<u8>,
}

/// Realm stores that must reset before a failure can be cleared.
#[derive(Default)]
pub(super) struct Participants {
    pub(super) next_id: u64,
    pub(super) live: HashMap<u64, Option<(u64, Reset)>>,
}

/// The store could not make writes durable; it refuses writes until recovered.
#[derive(Debug, Clone, thiserror::Error)]
#[error("storage failed: {0}")]
pub struct StorageFailed(pub String);

/// The database the flusher makes durable before the main one: the message database
/// (`storage::messages`), whose rows are derived from WAL records. A snapshot covers
/// records only once their rows are on disk, and a flush of new records waits for a
/// repair's rows (see `repairs_first`). The `wal` room knows it only through this port,
/// so that it never calls up into the rooms that stand on it.
pub trait SyncedFirst: Send + Sync {
    /// Syncs it when a repair asks for that; the new count of its syncs, if it synced.
    fn sync_repairs(&self) -> Option<u64>;
    /// Whether it is open (a recovery waits for it).
    fn is_open(&self) -> bool;
    /// Makes what it holds durable; the new count of its syncs.
    fn sync(&self) -> Result<u64, StorageError>;
    /// Why it failed, when it did (`/health/ready` says so).
    fn failure(&self) -> Option<String>;
    /// Flushes and closes it (at shutdown, after the main database's last flush).
    fn close(&self);
}

/// The flusher's shared state.
pub struct Durability {
    pub(super) mode: DurabilityMode,
    /// The database; `None` while failed (closed so that it can be reopened).
    pub(super) db: RwLock<Option<sled::Db>>,
    /// The database folder: sled's `flush` ends with `sync_file_range`, which neither
    /// flushes the disk cache nor the file size, so hearth `fsync`s the files itself.
    pub(super) dir: PathBuf,
    /// Tickets handed out so far; ticket N is taken after its record was appended.
    pub(super) written: AtomicU64,
    /// Highest ticket known to be on disk.
    pub(super) durable: watch::Sender<u64>,
    /// Highest ticket readers may see (see the module doc).
    pub(super) visible: watch::Sender<u64>,
    /// Why the store failed, when it did: writes are refused until it recovers.
    pub(super) failed: Mutex<Option<String>>,
    /// Number of failures so far; bumped (and sent) when the store fails, so waiters
    /// and realm actors wake up.
    pub(super) failures: watch::Sender<u64>,
    /// Ticket ranges `(after, upto]` dropped by a fault: never durable.
    pub(super) dead: Mutex<Vec<(u64, u64)>>,
    /// Realm stores, and the reset each handed over for the current failure.
    pub(super) participants: Mutex<Participants>,
    /// Tests: the next snapshots fail before writing anything.
    pub(super) fail_snapshots: AtomicBool,
    /// Snapshots started (and how many of them failed), for tests and tooling.
    pub(super) snapshots_started: AtomicU64,
    pub(super) snapshots_failed: AtomicU64,
    /// Set when a writer waits for a flush; the flusher sleeps on the condvar otherwise.
    pub(super) wanted: Mutex<bool>,
    pub(super) wake: Condvar,
    pub(super) stop: AtomicBool,
    /// The flusher thread, joined at shutdown so the database is released.
    pub(super) thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// What is known durable per realm, and the manifest that records it.
    pub(super) marks: Marks,
    /// The message database (`storage::messages`), synced before the main one and
    /// closed after it at shutdown.
    pub(super) messages: Arc<dyn SyncedFirst>,
    /// The WAL records appended since the last checkpoint (`wal::journal`).
    pub(super) journal: Journal,
}

pub(super) fn closed() -> sled::Error {
    sled::Error::Unsupported("the database is closed after a storage failure".into())
}

impl Durability {
    /// Creates the state and, unless `Never`, its flusher thread. `manifest`: the one
    /// found in `dir` (what start-up checks against, and where the marks start).
    pub fn start(
        db: sled::Db,
        dir: &Path,
        mode: DurabilityMode,
        manifest: Option<Manifest>,
        messages: Arc<dyn SyncedFirst>,
    ) -> io::Result<Arc<Durability>> {
        let marks = Marks::default();
        marks.load(manifest);
        let journal = Journal::create(dir)?;
        let (durable, _) = watch::channel(0);
        let d = Arc::new(Durability {
            mode,
            db: RwLock::new(Some(db)),
            dir: dir.to_path_buf(),
            written: AtomicU64::new(0),
            durable,
            visible: watch::channel(0).0,
            failed: Mutex::new(None),
            failures: watch::channel(0).0,
            dead: Mutex::new(Vec::new()),
            participants: Mutex::new(Participants::default()),
            fail_snapshots: AtomicBool::new(false),
            snapshots_started: AtomicU64::new(0),
            snapshots_failed: AtomicU64::new(0),
            wanted: Mutex::new(false),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
            marks,
            messages,
            journal,
        });
        if mode != DurabilityMode::Never {
            // Weak: a store dropped without `shutdown` still releases the database
            // once the flusher's current wait ends.
            let flusher = Arc::downgrade(&d);
            let handle = std::thread::Builder::new()
                .name("hearth-flusher".into())
                .spawn(move || Durability::run(&flusher))?;
            *lock(&d.thread) = Some(handle);
        }
        Ok(d)
    }

    pub fn mode(&self) -> DurabilityMode {
        self.mode
    }

    /// The open database, or `None` while the store is failed.
    pub fn db(&self) -> Option<sled::Db> {
        read(&self.db).clone()
    }

    /// The database folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The durable marks and the manifest.
    pub fn marks(&self) -> &Marks {
        &self.marks
    }

    /// Called by a realm store after putting record `seq` of `realm` in its WAL tree,
    /// before it takes its ticket: the record goes into the next commit's journal
    /// write. In `never` nothing is journaled (the checkpoints make sled durable).
    pub fn journal(&self, realm: &str, seq: u64, record: Vec<u8>) {
        if self.mode != DurabilityMode::Never {
            self.journal.push(realm, seq, record);
        }
    }

    /// Called by a realm actor after appending a record: the ticket to wait for.
    pub fn ticket(&self) -> u64 {
        let t = self.written.fetch_add(1, Ordering::SeqCst) + 1;
        if self.mode != DurabilityMode::Always {
            self.visible.send_modify(|v| *v = (*v).max(t));
        }
        t
    }

    /// Why the store failed, if it did (writes are refused then).
    pub fn failure(&self) -> Option<String> {
        lock(&self.failed).clone()
    }

    /// Number of failures so far (each one is reset separately).
    pub fn failures(&self) -> u64 {
        *self.failures.borrow()
    }

    /// A receiver that changes whenever the store fails.
    pub fn subscribe_failures(&self) -> watch::Receiver<u64> {
        self.failures.subscribe()
    }

    /// Refuses a write while the store is failed.
    pub fn check_writable(&self) -> Result<(), StorageFailed> {
        match self.failure() {
            Some(why) => Err(StorageFailed(why)),
            None => Ok(()),
        }
    }

    /// Highest ticket readers may see.
    pub fn visible(&self) -> u64 {
        *self.visible.borrow()
    }

    /// Highest ticket known durable.
    pub fn durable(&self) -> u64 {
        *self.durable.borrow()
    }

    /// Wakes the subscribers of `visible` again without moving it (a decision staged
    /// after its ticket became visible).
    pub fn wake_release(&self) {
        self.visible.send_modify(|_| {});
    }

    /// A receiver that changes whenever more becomes visible (the release task).
    pub fn subscribe_visible(&self) -> watch::Receiver<u64> {
        self.visible.subscribe()
    }

    /// Test hook: while set, snapshots fail before writing anything.
    pub fn fail_snapshots_for_tests(&self, fail: bool) {
        self.fail_snapshots.store(fail, Ordering::SeqCst);
    }

    /// Counts a snapshot that starts; refuses it under `fail_snapshots_for_tests`.
    pub(in crate::storage) fn snapshot_started(&self) -> io::Result<()> {
        self.snapshots_started.fetch_add(1, Ordering::SeqCst);
        if self.fail_snapshots.load(Ordering::SeqCst) {
            return Err(io::Error::other("snapshot failure injected by a test"));
        }
        Ok(())
    }

    pub(in crate::storage) fn snapshot_failed(&self) {
        self.snapshots_failed.fetch_add(1, Ordering::SeqCst);
    }

    /// Snapshots started so far, and how many of them failed.
    pub fn snapshot_counts(&self) -> (u64, u64) {
        (
            self.snapshots_started.load(Ordering::SeqCst),
            self.snapshots_failed.load(Ordering::SeqCst),
        )
    }

    /// Waits until `ticket` is durable, in `always` mode; returns at once otherwise.
    /// Fails at once when the store has failed before the ticket became durable.
    pub async fn wait(&self, ticket: u64) -> Result<(), StorageFailed> {
        if self.mode != DurabilityMode::Always {
            return Ok(());
        }
        let mut rx = self.durable.subscribe();
        let mut failures = self.failures.subscribe();
        let dead = || StorageFailed("the write was dropped by a storage failure".into());
        if *rx.borrow() >= ticket {
            return if self.is_dead(ticket) {
                Err(dead())
            } else {
                Ok(())
            };
        }
        self.check_writable()?;
        {
            let mut wanted = lock(&self.wanted);
            *wanted = true;
            self.wake.notify_one();
        }
        loop {
            failures.borrow_and_update();
            if *rx.borrow_and_update() >= ticket {
                return if self.is_dead(ticket) {
                    Err(dead())
                } else {
                    Ok(())
                };
            }
            self.check_writable()?;
            tokio::select! {
                r = rx.changed() => if r.is_err() { return Err(StorageFailed("the flusher stopped".into())) },
                _ = failures.changed() => {}
            }
        }
    }

    /// Flushes now, on the caller's thread: sled's log, then an `fsync` of its file,
    /// then the journal is emptied (a checkpoint: sled holds all it held). When records
    /// were appended since the last flush, repairs of the message database go first
    /// (`repairs_first`).
    pub fn flush_now(&self) -> Result<(), sled::Error> {
        self.repairs_first();
        self.flush_main()
    }

    /// Repairs of the message database (`MessageDb::sync_repairs`) before a flush that
    /// makes new records durable: those records may reuse the numbers and ids of
    /// records whose rows they repaired. Only such a flush waits: the start's own flush
    /// (what recovery read) must not wait for the message database to open.
    fn repairs_first(&self) {
        if self.written.load(Ordering::SeqCst) > *self.durable.borrow() {
            if let Some(n) = self.messages.sync_repairs() {
                self.marks.messages_synced(n);
            }
        }
    }

    /// The flusher's group commit: the records appended since the last commit go to
    /// the journal's end, one `pwrite` and one `fdatasync`. A journal past
    /// `CHECKPOINT_BYTES` gets a checkpoint (`flush_now`) instead.
    fn commit(&self) -> Result<(), sled::Error> {
        if self.journal.tail().len() >= CHECKPOINT_BYTES {
            return self.flush_now();
        }
        self.repairs_first();
        let mut tail = self.journal.tail();
        let target = self.written.load(Ordering::SeqCst);
        // Records appended by now are queued: this commit covers them.
        let appended = self.marks.appended();
        let started = std::time::Instant::now();
        if self.db().is_none() {
            return Err(closed());
        }
        let taken = self.journal.take();
        if let Err(e) = tail.append(&taken) {
            self.journal.put_back(taken);
            return Err(e.into());
        }
        self.published(target, &appended, started)
    }

    /// `flush_now` without the message database's repairs: for the message database's
    /// own opening, which they wait for. Holds the journal through the flush, so no
    /// commit writes to it between the frames taken here and its emptying.
    pub(in crate::storage) fn flush_main(&self) -> Result<(), sled::Error> {
        let mut tail = self.journal.tail();
        let target = self.written.load(Ordering::SeqCst);
        // Records appended by now are in the trees: this flush covers them.
        let appended = self.marks.appended();
        let started = std::time::Instant::now();
        let db = self.db().ok_or_else(closed)?;
        // Every frame queued by now is of a record already in its tree, so in what
        // this flush writes.
        let taken = self.journal.take();
        if let Err(e) = flush_durably(&db, &self.dir) {
            self.journal.put_back(taken);
            return Err(e);
        }
        drop(db);
        tail.clear()?;
        self.published(target, &appended, started)
    }

    /// After a commit or a flush covering ticket `target` and the marks `appended`:
    /// publishes them (under the journal's lock, so they only ever move forward).
    fn published(
        &self,
        target: u64,
        appended: &[(String, u64)],
        started: std::time::Instant,
    ) -> Result<(), sled::Error> {
        // Under `failed`: a failure that closed the database meanwhile wins, and none of
        // these tickets is declared durable after `clear_failure` settled them.
        let failed = lock(&self.failed);
        if failed.is_some() {
            return Err(closed());
        }
        self.marks.flushed(appended);
        // `visible` first: a writer woken by `durable` releases up to `visible`, which
        // must already cover its own ticket (read-your-writes).
        if self.mode == DurabilityMode::Always {
            self.visible.send_if_modified(|v| {
                let moved = target > *v;
                *v = (*v).max(target);
                moved
            });
        }
        let before = *self.durable.borrow();
        self.durable.send_if_modified(|d| {
            let moved = target > *d;
            *d = (*d).max(target);
            moved
        });
        crate::metrics::flushed(
            started.elapsed().as_secs_f64(),
            target.saturating_sub(before),
        );
        Ok(())
    }

    /// `fsync`s sled's blob files (values over its inline limit, such as snapshots of
    /// large realms, live there and sled never syncs them) and their folder.
    pub fn sync_blobs(&self) -> io::Result<()> {
        sync_blob_files(&self.dir)
    }

    /// Stops (and joins) the flusher thread after a last flush; then flushes and closes
    /// the message database.
    pub fn shutdown(&self) {
        {
            let _guard = lock(&self.wanted);
            self.stop.store(true, Ordering::SeqCst);
            self.wake.notify_all();
        }
        let thread = lock(&self.thread).take();
        if let Some(thread) = thread {
            if thread.join().is_err() {
                tracing::error!("the flusher thread panicked");
            }
        }
        match self.flush_now() {
            Ok(()) => {
                let _ = self.marks.write_now(&self.dir, self.db().as_ref());
            }
            Err(e) => tracing::error!("final flush failed: {e}"),
        }
        self.messages.close();
    }

    /// Flushes, retrying a failed flush `FLUSH_ATTEMPTS` times in all, then fails the
    /// store: writers never wait on a flush that keeps failing.
    fn flush_with_retries(&self) {
        let mut last = String::new();
        for attempt in 1..=FLUSH_ATTEMPTS {
            match self.commit() {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!("flush failed (attempt {attempt} of {FLUSH_ATTEMPTS}): {e}");
                    last = e.to_string();
                    std::thread::sleep(FLUSH_RETRY_PAUSE);
                }
            }
        }
        self.fail(format!(
            "cannot flush the database in {}: {last}",
            self.dir.display()
        ));
    }

    fn run(this: &Weak<Durability>) {
        loop {
            let Some(d) = this.upgrade() else { return };
            if d.stop.load(Ordering::SeqCst) {
                return;
            }
            let failed = d.failure().is_some();
            let (period, on_demand) = match d.mode {
                _ if failed => (PROBE_PERIOD, false),
                DurabilityMode::Interval(ms) => (Duration::from_millis(ms.max(1)), false),
                _ => (Duration::from_millis(500), true),
            };
            {
                let mut guard = wait_timeout_while(&d.wake, lock(&d.wanted), period, |wanted| {
                    !(d.stop.load(Ordering::SeqCst) || (on_demand && *wanted))
                });
                *guard = false;
            }
            if d.stop.load(Ordering::SeqCst) {
                return;
            }
            if failed {
                d.try_recover();
            } else {
                if d.written.load(Ordering::SeqCst) > *d.durable.borrow() {
                    d.flush_with_retries();
                }
                if d.failure().is_none() {
                    d.marks.write_if_due(&d.dir, d.db().as_ref());
                }
            }
        }
    }
}

/// The store-health port of the HTTP layer.
impl crate::health::StoreHealth for Durability {
    fn writable(&self) -> Result<(), String> {
        self.check_writable().map_err(|e| e.0)
    }

    fn messages_failed(&self) -> Option<String> {
        self.messages.failure()
    }

    fn failed(&self) -> bool {
        self.failure().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::super::journal::count;
    use crate::realm::dev::dev_realm_changes;
    use crate::realm::Cx;
    use crate::storage::{DurabilityMode, Store};

    #[tokio::test]
    async fn a_poisoned_lock_neither_ends_the_flusher_nor_loses_a_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), DurabilityMode::Always).expect("open");
        let d = store.durability.clone();
        // Panics while holding each lock the flusher and writers take.
        let poison = |f: &(dyn Fn() + Sync)| {
            let _ = std::thread::scope(|s| s.spawn(f).join());
        };
        poison(&|| {
            let _g = d.wanted.lock();
            panic!("poison wanted");
        });
        poison(&|| {
            let _g = d.failed.lock();
            panic!("poison failed");
        });
        poison(&|| {
            let _g = d.participants.lock();
            panic!("poison participants");
        });
        assert!(d.wanted.is_poisoned() && d.failed.is_poisoned());
        let mut rs = store.realm("zulip").expect("realm");
        let changes = dev_realm_changes(&mut Cx::seeded(1, 1)).expect("seed");
        let ticket = rs.append(&changes).expect("append");
        let waited = tokio::time::timeout(std::time::Duration::from_secs(30), d.wait(ticket));
        waited.await.expect("no hang").expect("durable");
        assert!(d.durable() >= ticket && d.visible() >= ticket);
        assert!(d.failure().is_none());
        d.shutdown();
    }

    /// A repair queued while the message database opens holds back only a flush that
    /// carries new records: the start's flush of what recovery read goes on at once,
    /// the first write's flush waits for the opening (and its repair).
    #[test]
    fn only_a_flush_of_new_records_waits_for_the_message_databases_repairs() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Holding the message database's lock keeps its opening waiting.
        let held = crate::storage::messages::open_sled(dir.path()).expect("lock");
        let store = Store::open(dir.path(), DurabilityMode::Always).expect("open");
        let d = store.durability.clone();
        let mut rs = store.realm("zulip").expect("realm");
        rs.messages().undo_after(0).expect("queued");
        d.flush_now().expect("nothing new: no wait");
        assert_eq!(
            store.message_db().readiness(),
            crate::storage::messages::Readiness::Opening,
            "the flush did not wait"
        );
        let changes = dev_realm_changes(&mut Cx::seeded(1, 1)).expect("seed");
        rs.append(&changes).expect("a record");
        let flush = {
            let d = d.clone();
            std::thread::spawn(move || d.flush_now())
        };
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!flush.is_finished(), "a flush of new records waits");
        drop(held);
        flush.join().expect("join").expect("flushed");
        // The opener declares `Open` to readers just after the state it holds turns
        // open (which the flush waited for): on a loaded machine a moment later.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !store.message_db().is_open() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(store.message_db().is_open());
    }

    /// The folder as `kill -9` leaves it right after acknowledged commits (the files as
    /// written, sled's unflushed buffers lost): the journal brings every record back,
    /// and the start empties it only after sled holds them.
    #[actix_web::test]
    async fn acknowledged_records_come_back_from_the_journal_after_a_crash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), DurabilityMode::Always).expect("open");
        let d = store.durability.clone();
        let mut rs = store.realm("zulip").expect("realm");
        // The message database's opening ends with a flush of its own, which empties
        // the journal (sled then holds what it held): the commits below come after it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !store.message_db().is_open() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(store.message_db().is_open());
        let changes = dev_realm_changes(&mut Cx::seeded(1, 1)).expect("seed");
        let mut tickets = Vec::new();
        for _ in 0..5 {
            tickets.push(rs.append(&changes).expect("append"));
        }
        for ticket in tickets {
            let waited = tokio::time::timeout(std::time::Duration::from_secs(30), d.wait(ticket));
            waited.await.expect("no hang").expect("durable");
        }
        assert_eq!(
            count(dir.path()).expect("read"),
            5,
            "the commits went to the journal"
        );
        // What the disk holds now, copied while the server still runs.
        let crashed = tempfile::tempdir().expect("tempdir");
        fn copy(from: &std::path::Path, to: &std::path::Path) {
            std::fs::create_dir_all(to).expect("mkdir");
            for entry in std::fs::read_dir(from).expect("list") {
                let entry = entry.expect("entry");
                let target = to.join(entry.file_name());
                if entry.file_type().expect("type").is_dir() {
                    copy(&entry.path(), &target);
                } else {
                    std::fs::copy(entry.path(), target).expect("copy");
                }
            }
        }
        copy(dir.path(), crashed.path());
        let after = Store::open(crashed.path(), DurabilityMode::Always).expect("reopen");
        let mut again = after.realm("zulip").expect("realm");
        assert_eq!(
            again.wal_len(),
            5,
            "every acknowledged record is in the WAL"
        );
        assert_eq!(again.last_seq(), rs.last_seq());
        assert_eq!(
            count(crashed.path()).expect("read"),
            0,
            "emptied once sled holds the records"
        );
        after.durability.shutdown();
        d.shutdown();
    }
}
