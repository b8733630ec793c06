//! The driver: the recorder of every answer (an HDR histogram per operation, and one
//! per operation and second for the report's charts), the open- and closed-loop
//! request loops, and the driver's own CPU time. The HTTP client is `client.rs`.
//!
//! Open loop (`--rate`) is wrk2's: each connection has a fixed schedule of intended
//! start times, and a request's latency is measured from its intended start, so a
//! server that stalls is charged for the requests it kept from being sent
//! (coordinated omission corrected). Closed loop (`--connections`) measures each
//! request from the moment it is sent.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

/// Name prefix of the driver's threads (their CPU time is the driver's).
pub const THREAD_NAME: &str = "hearth-load";

pub use super::client::Answer;

/// How an answer counts: `None` for a success, else its error label (the HTTP status
/// and Zulip's `code`, or the transport failure).
pub fn error_label(answer: &Answer) -> Option<String> {
    match answer {
        Ok((status, _)) if (200..300).contains(status) => None,
        Ok((status, body)) => {
            let code = serde_json::from_slice::<serde_json::Value>(body)
                .ok()
                .and_then(|v| v.get("code").and_then(|c| c.as_str()).map(str::to_owned));
            Some(match code {
                Some(code) => format!("{status} {code}"),
                None => status.to_string(),
            })
        }
        Err(e) => Some(e.clone()),
    }
}

/// One operation's figures.
pub struct OpStats {
    /// Latencies in microseconds.
    pub hist: Histogram<u64>,
    pub count: u64,
    pub errors: BTreeMap<String, u64>,
    /// Held requests (long-polls): their latency is how long they were held, not a
    /// response time, so thresholds leave it out.
    pub held: bool,
}

impl OpStats {
    fn new(held: bool) -> OpStats {
        OpStats {
            // 1 µs to 1 hour, 3 significant digits.
            hist: Histogram::new_with_bounds(1, 3_600_000_000, 3)
                .unwrap_or_else(|_| unreachable!("valid histogram bounds")),
            count: 0,
            errors: BTreeMap::new(),
            held,
        }
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// One second of one operation, for the charts (2 significant digits).
pub struct Second {
    pub count: u64,
    pub errors: u64,
    pub hist: Histogram<u32>,
}

/// Every answer of a phase, second by second from the phase's start (warm-up
/// included), by operation.
pub struct Series {
    pub start: Instant,
    pub ops: HashMap<&'static str, Vec<Second>>,
}

/// Every answer of the measured part of a run, by operation.
pub struct Recorder {
    /// Requests whose intended start is before the instant are warm-up: not recorded.
    ops: Mutex<(Instant, HashMap<&'static str, OpStats>)>,
    series: Mutex<Series>,
    keep_series: bool,
    /// Live figures for the progress bar (warm-up included).
    pub sent: AtomicU64,
    pub failed: AtomicU64,
}

impl Recorder {
    pub fn new(measure_from: Instant) -> Arc<Recorder> {
        Recorder::with_series(measure_from, true)
    }

    /// `new`, keeping the second-by-second series (the charts) or not: a driver of
    /// many realms merges their reports, which drops the series, and a series costs
    /// a histogram per operation per second (tens of MB a realm over a run).
    pub fn with_series(measure_from: Instant, keep_series: bool) -> Arc<Recorder> {
        Arc::new(Recorder {
            keep_series,
            ops: Mutex::new((measure_from, HashMap::new())),
            series: Mutex::new(Series {
                start: Instant::now(),
                ops: HashMap::new(),
            }),
            sent: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        })
    }

    /// Records one answer to `op`, intended to start at `intended`, that ended now.
    pub fn record(&self, op: &'static str, held: bool, intended: Instant, error: Option<String>) {
        self.sent.fetch_add(1, Ordering::Relaxed);
        if error.is_some() {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        let micros = intended.elapsed().as_micros().clamp(1, 3_600_000_000) as u64;
        if self.keep_series {
            let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
            let at = series.start.elapsed().as_secs() as usize;
            let seconds = series.ops.entry(op).or_default();
            while seconds.len() <= at {
                seconds.push(Second {
                    count: 0,
                    errors: 0,
                    hist: Histogram::new_with_bounds(1, 3_600_000_000, 2)
                        .unwrap_or_else(|_| unreachable!("valid histogram bounds")),
                });
            }
            let second = &mut seconds[at];
            second.count += 1;
            second.errors += u64::from(error.is_some());
            let _ = second.hist.record(micros);
        }
        let mut ops = self.ops.lock().unwrap_or_else(PoisonError::into_inner);
        if intended < ops.0 {
            return;
        }
        let stats = ops.1.entry(op).or_insert_with(|| OpStats::new(held));
        stats.count += 1;
        let _ = stats.hist.record(micros);
        if let Some(e) = error {
            *stats.errors.entry(e).or_insert(0) += 1;
        }
    }

    /// Forgets what was recorded; records only requests intended from `from` on.
    pub fn measure_from(&self, from: Instant) {
        let mut ops = self.ops.lock().unwrap_or_else(PoisonError::into_inner);
        *ops = (from, HashMap::new());
    }

    /// The phase's seconds so far (taken: the next call starts afresh).
    pub fn take_series(&self) -> Series {
        let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        Series {
            start: series.start,
            ops: std::mem::take(&mut series.ops),
        }
    }

    /// The figures so far, by operation name.
    pub fn take(&self) -> BTreeMap<&'static str, OpStats> {
        let mut ops = self.ops.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::take(&mut ops.1).into_iter().collect()
    }
}

/// How requests are paced.
#[derive(Debug, Clone, Copy)]
pub enum Pacing {
    /// `rate` requests/s in all, spread over the connections (wrk2).
    Open { rate: f64, connections: usize },
    /// Each connection sends its next request when the previous one answered.
    Closed { connections: usize },
}

impl Pacing {
    pub fn connections(&self) -> usize {
        match *self {
            Pacing::Open { connections, .. } | Pacing::Closed { connections } => connections,
        }
    }
}

/// The request loops' runtimes: one single-threaded tokio runtime per driver thread
/// (wrk's shape: an event loop per thread). On the multi-threaded runtime a request
/// crossed from its loop's task to hyper's connection task, each free to run on either
/// thread, and every hand-over between threads was a futex wake-up and a context
/// switch: two threads reached no more requests than one (RESULTS §17). A loop, the
/// connections it opens (their tasks are spawned on the loop's runtime) and its
/// connection pool (`client::Http` keeps one per shard) stay on one thread.
static SHARDS: OnceLock<Vec<tokio::runtime::Handle>> = OnceLock::new();

thread_local! {
    /// Which shard this thread runs (1..=n); 0 off the shards.
    static SHARD: Cell<usize> = const { Cell::new(0) };
}

/// The shard of the calling thread: 1..=n on a shard's thread, 0 elsewhere.
pub fn shard() -> usize {
    SHARD.with(Cell::get)
}

/// Starts `n` shard threads (once per process; later calls keep the first ones).
pub fn start_shards(n: usize) -> Result<(), String> {
    if SHARDS.get().is_some() {
        return Ok(());
    }
    let mut handles = Vec::with_capacity(n.max(1));
    for i in 0..n.max(1) {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name(format!("{THREAD_NAME}-shard-{i}"))
            .spawn(move || {
                SHARD.with(|s| s.set(i + 1));
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => {
                        let _ = tx.send(Ok(runtime.handle().clone()));
                        // Runs the tasks spawned on it until the process ends.
                        runtime.block_on(std::future::pending::<()>());
                    }
                    Err(e) => {
                        let _ = tx.send(Err(format!("driver shard runtime: {e}")));
                    }
                }
            })
            .map_err(|e| format!("driver shard thread: {e}"))?;
        handles.push(rx.recv().map_err(|e| e.to_string())??);
    }
    let _ = SHARDS.set(handles);
    Ok(())
}

/// Runs `pacing.connections()` request loops from `start` until `until`. `request`
/// gets the connection number and the request's sequence number on it, sends one
/// request and records it with the intended start it is given. The loops are spread
/// over the shards (`start_shards`) when there are any.
pub async fn run_loops<F, Fut>(pacing: Pacing, start: Instant, until: Instant, request: F)
where
    F: Fn(usize, u64, Instant) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let connections = pacing.connections().max(1);
    let shards = SHARDS.get();
    let mut tasks = Vec::with_capacity(connections);
    for c in 0..connections {
        let request = request.clone();
        let spawn = |fut| match shards.filter(|s| !s.is_empty()) {
            Some(s) => s[c % s.len()].spawn(fut),
            None => tokio::spawn(fut),
        };
        tasks.push(spawn(async move {
            // Open loop: this connection's schedule, offset so that the connections'
            // requests interleave evenly.
            let interval = match pacing {
                Pacing::Open { rate, .. } => Some(Duration::from_secs_f64(
                    connections as f64 / rate.max(f64::MIN_POSITIVE),
                )),
                Pacing::Closed { .. } => None,
            };
            let offset = interval.map(|i| i.mul_f64(c as f64 / connections as f64));
            let mut k = 0u64;
            loop {
                let intended = match (interval, offset) {
                    (Some(i), Some(o)) => {
                        let at = start + o + i.mul_f64(k as f64);
                        tokio::time::sleep_until(at.into()).await;
                        at
                    }
                    _ => Instant::now(),
                };
                if intended >= until {
                    break;
                }
                request(c, k, intended).await;
                k += 1;
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// CPU seconds used by the driver's threads (named `hearth-load*`) and by the whole
/// process, from `/proc/self/task/*/stat` (Linux; `None` elsewhere).
pub fn cpu_seconds() -> Option<(f64, f64)> {
    // Clock ticks per second: 100 on every Linux platform hearth runs on.
    const TICKS: f64 = 100.0;
    let mut driver = 0u64;
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let Ok(entry) = entry else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ...`: comm may hold spaces, so split at the last ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after comm.
        let ticks: u64 = fields
            .get(11..13)
            .map(|f| f.iter().filter_map(|v| v.parse::<u64>().ok()).sum())
            .unwrap_or(0);
        if comm.starts_with(THREAD_NAME) {
            driver += ticks;
        }
    }
    let process = cpu_time::ProcessTime::try_now().ok()?.as_duration();
    Some((driver as f64 / TICKS, process.as_secs_f64()))
}

/// The time the current runtime's worker threads have been busy, summed over them
/// (tokio's own count: a worker is busy from when it wakes until it parks again, so a
/// driver that cannot keep up with the answers shows near 100 % of its threads' time,
/// even when the machine gives its threads less CPU than that).
/// The shards' runtimes count too.
pub fn busy() -> Duration {
    let busy_of = |h: &tokio::runtime::Handle| -> Duration {
        let m = h.metrics();
        (0..m.num_workers())
            .map(|w| m.worker_total_busy_duration(w))
            .sum()
    };
    let shards: Duration = SHARDS
        .get()
        .map_or(Duration::ZERO, |s| s.iter().map(busy_of).sum());
    busy_of(&tokio::runtime::Handle::current()) + shards
}
