//! Group commit: writers take a ticket after appending; one flusher thread makes the
//! database durable and publishes "durable up to ticket N" in a watch channel.
//!
//! Under load one `fsync` covers every write appended before it started; idle, a write
//! costs one `fsync`. The realm actor never waits: handlers await their ticket.
//!
//! A second watch channel, `visible`, says up to which ticket the mode lets readers see
//! writes: in `always` the durable ticket, in `interval` and `never` every ticket at
//! once (those modes promise no more).
//!
//! A flush that fails is retried a bounded number of times; then the store is *failed*
//! (like fjall's `Poisoned`): every waiting and later writer gets `StorageFailed` at
//! once, and nothing more becomes visible, until `recover` is called.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

use tokio::sync::watch;

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

/// The store could not make writes durable; it refuses writes until recovered.
#[derive(Debug, Clone, thiserror::Error)]
#[error("storage failed: {0}")]
pub struct StorageFailed(pub String);

/// The flusher's shared state.
pub struct Durability {
    mode: DurabilityMode,
    db: sled::Db,
    /// The database folder: sled's `flush` ends with `sync_file_range`, which neither
    /// flushes the disk cache nor the file size, so hearth `fsync`s the files itself.
    dir: PathBuf,
    /// Tickets handed out so far; ticket N is taken after its record was appended.
    written: AtomicU64,
    /// Highest ticket known to be on disk.
    durable: watch::Sender<u64>,
    /// Highest ticket readers may see (see the module doc).
    visible: watch::Sender<u64>,
    /// Why the store failed, when it did: writes are refused until `recover`.
    failed: Mutex<Option<String>>,
    /// Bumped when the store fails, so waiters wake up.
    failures: watch::Sender<u64>,
    /// Set when a writer waits for a flush; the flusher sleeps on the condvar otherwise.
    wanted: Mutex<bool>,
    wake: Condvar,
    stop: AtomicBool,
    /// The flusher thread, joined at shutdown so the database is released.
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Durability {
    /// Creates the state and, unless `Never`, its flusher thread.
    pub fn start(db: sled::Db, dir: &Path, mode: DurabilityMode) -> io::Result<Arc<Durability>> {
        let (durable, _) = watch::channel(0);
        let d = Arc::new(Durability {
            mode,
            db,
            dir: dir.to_path_buf(),
            written: AtomicU64::new(0),
            durable,
            visible: watch::channel(0).0,
            failed: Mutex::new(None),
            failures: watch::channel(0).0,
            wanted: Mutex::new(false),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
        });
        if mode != DurabilityMode::Never {
            // Weak: a store dropped without `shutdown` still releases the database
            // once the flusher's current wait ends.
            let flusher = Arc::downgrade(&d);
            let handle = std::thread::Builder::new()
                .name("hearth-flusher".into())
                .spawn(move || Durability::run(&flusher))?;
            if let Ok(mut slot) = d.thread.lock() {
                *slot = Some(handle);
            }
        }
        Ok(d)
    }

    pub fn mode(&self) -> DurabilityMode {
        self.mode
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
        self.failed.lock().ok().and_then(|f| f.clone())
    }

    /// Refuses a write while the store is failed.
    pub fn check_writable(&self) -> Result<(), StorageFailed> {
        match self.failure() {
            Some(why) => Err(StorageFailed(why)),
            None => Ok(()),
        }
    }

    /// Marks the store failed: waiting writers are answered with the error.
    pub fn fail(&self, why: String) {
        tracing::error!("storage failed, refusing writes: {why}");
        if let Ok(mut f) = self.failed.lock() {
            *f = Some(why);
        }
        self.failures.send_modify(|n| *n += 1);
    }

    /// Clears a failure once the caller has brought memory back in line with the disk
    /// (the realm actors reload); writes are accepted again.
    pub fn clear_failure(&self) {
        if let Ok(mut f) = self.failed.lock() {
            *f = None;
        }
    }

    /// Highest ticket readers may see.
    pub fn visible(&self) -> u64 {
        *self.visible.borrow()
    }

    /// A receiver that changes whenever more becomes visible (the release task).
    pub fn subscribe_visible(&self) -> watch::Receiver<u64> {
        self.visible.subscribe()
    }

    /// Waits until `ticket` is durable, in `always` mode; returns at once otherwise.
    /// Fails at once when the store has failed before the ticket became durable.
    pub async fn wait(&self, ticket: u64) -> Result<(), StorageFailed> {
        if self.mode != DurabilityMode::Always {
            return Ok(());
        }
        let mut rx = self.durable.subscribe();
        let mut failures = self.failures.subscribe();
        if *rx.borrow() >= ticket {
            return Ok(());
        }
        self.check_writable()?;
        if let Ok(mut wanted) = self.wanted.lock() {
            *wanted = true;
            self.wake.notify_one();
        }
        loop {
            failures.borrow_and_update();
            if *rx.borrow_and_update() >= ticket {
                return Ok(());
            }
            self.check_writable()?;
            tokio::select! {
                r = rx.changed() => if r.is_err() { return Err(StorageFailed("the flusher stopped".into())) },
                _ = failures.changed() => {}
            }
        }
    }

    /// Flushes now, on the caller's thread: sled's log, then an `fsync` of its file.
    pub fn flush_now(&self) -> Result<(), sled::Error> {
        let target = self.written.load(Ordering::SeqCst);
        self.db.flush()?;
        File::open(self.dir.join("db"))?.sync_data()?;
        self.durable.send_if_modified(|d| {
            let moved = target > *d;
            *d = (*d).max(target);
            moved
        });
        if self.mode == DurabilityMode::Always && self.failure().is_none() {
            self.visible.send_if_modified(|v| {
                let moved = target > *v;
                *v = (*v).max(target);
                moved
            });
        }
        Ok(())
    }

    /// `fsync`s sled's blob files (values over its inline limit, such as snapshots of
    /// large realms, live there and sled never syncs them) and their folder.
    pub fn sync_blobs(&self) -> io::Result<()> {
        let blobs = self.dir.join("blobs");
        if !blobs.is_dir() {
            return Ok(());
        }
        for entry in std::fs::read_dir(&blobs)? {
            let path = entry?.path();
            if path.is_file() {
                File::open(&path)?.sync_all()?;
            }
        }
        File::open(&blobs)?.sync_all()
    }

    /// Stops (and joins) the flusher thread after a last flush.
    pub fn shutdown(&self) {
        if let Ok(_guard) = self.wanted.lock() {
            self.stop.store(true, Ordering::SeqCst);
            self.wake.notify_all();
        }
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(thread) = thread {
            if thread.join().is_err() {
                tracing::error!("the flusher thread panicked");
            }
        }
        if let Err(e) = self.flush_now() {
            tracing::error!("final flush failed: {e}");
        }
    }

    /// Flushes, retrying a failed flush `FLUSH_ATTEMPTS` times in all, then fails the
    /// store: writers never wait on a flush that keeps failing.
    fn flush_with_retries(&self) {
        let mut last = String::new();
        for attempt in 1..=FLUSH_ATTEMPTS {
            match self.flush_now() {
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
            let (period, on_demand) = match d.mode {
                DurabilityMode::Interval(ms) => (Duration::from_millis(ms.max(1)), false),
                _ => (Duration::from_millis(500), true),
            };
            {
                let Ok(guard) = d.wanted.lock() else { return };
                let waited = d.wake.wait_timeout_while(guard, period, |wanted| {
                    !(d.stop.load(Ordering::SeqCst) || (on_demand && *wanted))
                });
                let Ok((mut guard, _)) = waited else { return };
                *guard = false;
            }
            if d.written.load(Ordering::SeqCst) > *d.durable.borrow() && d.failure().is_none() {
                d.flush_with_retries();
            }
        }
    }
}
