//! Group commit: writers take a ticket after appending; one flusher thread makes the
//! database durable and publishes "durable up to ticket N" in a watch channel.
//!
//! Under load one `fsync` covers every write appended before it started; idle, a write
//! costs one `fsync`. The realm actor never waits: handlers await their ticket.

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
        self.written.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Waits until `ticket` is durable, in `always` mode; returns at once otherwise.
    pub async fn wait(&self, ticket: u64) {
        if self.mode != DurabilityMode::Always {
            return;
        }
        let mut rx = self.durable.subscribe();
        if *rx.borrow() >= ticket {
            return;
        }
        if let Ok(mut wanted) = self.wanted.lock() {
            *wanted = true;
            self.wake.notify_one();
        }
        // The sender lives as long as `self`, so this only ends when the ticket is durable.
        let _ = rx.wait_for(|d| *d >= ticket).await;
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
            if d.written.load(Ordering::SeqCst) > *d.durable.borrow() {
                if let Err(e) = d.flush_now() {
                    tracing::error!("flush failed, retrying: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
}
