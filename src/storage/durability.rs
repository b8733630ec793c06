//! Group commit: writers take a ticket after appending; one flusher thread makes the
//! database durable and publishes "durable up to ticket N" in a watch channel.
//!
//! Under load one `fsync` covers every write appended before it started; idle, a write
//! costs one `fsync`. The realm actor never waits: handlers await their ticket.

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
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
    pub fn start(db: sled::Db, mode: DurabilityMode) -> Arc<Durability> {
        let (durable, _) = watch::channel(0);
        let d = Arc::new(Durability {
            mode,
            db,
            written: AtomicU64::new(0),
            durable,
            wanted: Mutex::new(false),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
        });
        if mode != DurabilityMode::Never {
            let flusher = d.clone();
            let spawned = std::thread::Builder::new()
                .name("hearth-flusher".into())
                .spawn(move || flusher.run());
            match spawned {
                Ok(handle) => {
                    if let Ok(mut slot) = d.thread.lock() {
                        *slot = Some(handle);
                    }
                }
                Err(e) => tracing::error!("cannot start the flusher thread: {e}"),
            }
        }
        d
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

    /// Flushes now, on the caller's thread (snapshots, shutdown).
    pub fn flush_now(&self) -> Result<(), sled::Error> {
        let target = self.written.load(Ordering::SeqCst);
        self.db.flush()?;
        self.durable.send_if_modified(|d| {
            let moved = target > *d;
            *d = (*d).max(target);
            moved
        });
        Ok(())
    }

    /// Stops (and joins) the flusher thread after a last flush.
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Ok(_guard) = self.wanted.lock() {
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

    fn run(&self) {
        let period = match self.mode {
            DurabilityMode::Interval(ms) => Duration::from_millis(ms.max(1)),
            _ => Duration::from_millis(500),
        };
        while !self.stop.load(Ordering::SeqCst) {
            if self.mode == DurabilityMode::Always {
                let Ok(guard) = self.wanted.lock() else {
                    return;
                };
                let Ok((mut guard, _)) = self.wake.wait_timeout_while(guard, period, |w| {
                    !*w && !self.stop.load(Ordering::SeqCst)
                }) else {
                    return;
                };
                *guard = false;
            } else {
                std::thread::sleep(period);
            }
            if self.written.load(Ordering::SeqCst) > *self.durable.borrow() {
                if let Err(e) = self.flush_now() {
                    tracing::error!("flush failed, retrying: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
}
