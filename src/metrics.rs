//! The server's own metrics, in Prometheus text format (`encode`); `GET /metrics`
//! serves them on a listener of its own (`api::middleware::metrics`).
//!
//! Counters and histograms are process-wide and updated where things happen (the
//! request middleware, the flusher, snapshots, presence pings, the path of writes);
//! gauges that describe state (event queues, parked long-polls, RSS) are set when
//! scraped. Labels are route patterns, statuses and realm subdomains: never a user,
//! a path's values, a query string or a body.

use std::sync::LazyLock;

use prometheus::{
    exponential_buckets, Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter,
    IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};

/// hearth's registry (not the `prometheus` crate's global one).
static REGISTRY: LazyLock<Registry> = LazyLock::new(Registry::new);

fn register<T: prometheus::core::Collector + Clone + 'static>(metric: T) -> T {
    // Registration fails only on a duplicate name, which these static names cannot be.
    let _ = REGISTRY.register(Box::new(metric.clone()));
    metric
}

fn histogram(name: &str, help: &str, buckets: Vec<f64>) -> Histogram {
    register(
        Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets))
            .unwrap_or_else(|_| unreachable!("valid metric options")),
    )
}

/// Latency buckets from 50 µs to about 52 s.
fn latency_buckets() -> Vec<f64> {
    exponential_buckets(0.00005, 2.0, 21).unwrap_or_default()
}

/// HTTP requests answered, by route pattern, method and status.
pub static HTTP_REQUESTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let opts = Opts::new(
        "hearth_http_requests_total",
        "HTTP requests answered, by route pattern, method and status",
    );
    register(
        IntCounterVec::new(opts, &["route", "method", "status"])
            .unwrap_or_else(|_| unreachable!("valid metric options")),
    )
});

/// Time to answer, by route pattern and method (a long-poll counts until it answers).
pub static HTTP_SECONDS: LazyLock<HistogramVec> = LazyLock::new(|| {
    let opts = HistogramOpts::new(
        "hearth_http_request_duration_seconds",
        "Time to answer an HTTP request, by route pattern and method",
    )
    .buckets(latency_buckets());
    register(
        HistogramVec::new(opts, &["route", "method"])
            .unwrap_or_else(|_| unreachable!("valid metric options")),
    )
});

/// Flushes of the database (sled's log plus an fsync).
pub static WAL_FLUSHES: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "hearth_wal_flushes_total",
            "Flushes of the WAL (with an fsync)",
        )
        .unwrap_or_else(|_| unreachable!("valid metric options")),
    )
});

/// Time one flush took.
pub static WAL_FLUSH_SECONDS: LazyLock<Histogram> = LazyLock::new(|| {
    histogram(
        "hearth_wal_flush_duration_seconds",
        "Time one WAL flush (with its fsync) took",
        latency_buckets(),
    )
});

/// Writes one flush made durable (group commit).
pub static WAL_BATCH: LazyLock<Histogram> = LazyLock::new(|| {
    histogram(
        "hearth_wal_group_commit_batch_size",
        "Writes made durable by one flush (group commit)",
        exponential_buckets(1.0, 2.0, 14).unwrap_or_default(),
    )
});

/// Time a snapshot took (encode, write, flush, WAL prefix removal).
pub static SNAPSHOT_SECONDS: LazyLock<Histogram> = LazyLock::new(|| {
    histogram(
        "hearth_snapshot_duration_seconds",
        "Time one realm snapshot took",
        exponential_buckets(0.001, 2.0, 16).unwrap_or_default(),
    )
});

/// Presence pings (`POST /users/me/presence`) recorded.
pub static PRESENCE_PINGS: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new("hearth_presence_pings_total", "Presence pings recorded")
            .unwrap_or_else(|_| unreachable!("valid metric options")),
    )
});

/// Calls sent to a realm actor and not answered yet, by realm.
pub static MAILBOX: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    realm_gauge(
        "hearth_actor_mailbox_depth",
        "Calls sent to the realm actor and not answered yet",
    )
});

static EVENT_QUEUES: LazyLock<IntGaugeVec> =
    LazyLock::new(|| realm_gauge("hearth_event_queues", "Live event queues"));

static PARKED_POLLS: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    realm_gauge(
        "hearth_parked_long_polls",
        "GET /events long-polls waiting for an event",
    )
});

static RSS: LazyLock<IntGauge> = LazyLock::new(|| {
    register(
        IntGauge::new(
            "hearth_resident_memory_bytes",
            "Resident set size of the process",
        )
        .unwrap_or_else(|_| unreachable!("valid metric options")),
    )
});

static STORAGE_FAILED: LazyLock<IntGauge> = LazyLock::new(|| {
    register(
        IntGauge::new(
            "hearth_storage_failed",
            "1 while the store refuses writes after a storage failure",
        )
        .unwrap_or_else(|_| unreachable!("valid metric options")),
    )
});

fn realm_gauge(name: &str, help: &str) -> IntGaugeVec {
    register(
        IntGaugeVec::new(Opts::new(name, help), &["realm"])
            .unwrap_or_else(|_| unreachable!("valid metric options")),
    )
}

/// A call to a realm actor: counted in `hearth_actor_mailbox_depth` while it lives.
pub struct InFlight(IntGauge);

impl InFlight {
    pub fn start(realm: &str) -> InFlight {
        let gauge = MAILBOX.with_label_values(&[realm]);
        gauge.inc();
        InFlight(gauge)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Records a flush that made `batch` more writes durable in `seconds`.
pub fn flushed(seconds: f64, batch: u64) {
    WAL_FLUSHES.inc();
    WAL_FLUSH_SECONDS.observe(seconds);
    if batch > 0 {
        WAL_BATCH.observe(batch as f64);
    }
}

/// Resident set size in bytes (Linux: `/proc/self/statm`), if known.
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Sets the state gauges of one realm (when scraped).
pub fn realm_gauges(subdomain: &str, queues: usize, parked_polls: usize) {
    EVENT_QUEUES
        .with_label_values(&[subdomain])
        .set(queues as i64);
    PARKED_POLLS
        .with_label_values(&[subdomain])
        .set(parked_polls as i64);
    // Present (at 0) before the first write.
    MAILBOX.with_label_values(&[subdomain]);
}

/// Every metric in the text format; `storage_failed`: the store refuses writes now.
/// The realms' gauges are set first (`realm_gauges`).
pub fn encode(storage_failed: bool) -> String {
    RSS.set(rss_bytes().unwrap_or(0) as i64);
    STORAGE_FAILED.set(i64::from(storage_failed));
    // Touch the process-wide metrics so each is listed from the start.
    LazyLock::force(&HTTP_REQUESTS);
    LazyLock::force(&HTTP_SECONDS);
    LazyLock::force(&WAL_FLUSHES);
    LazyLock::force(&WAL_FLUSH_SECONDS);
    LazyLock::force(&WAL_BATCH);
    LazyLock::force(&SNAPSHOT_SECONDS);
    LazyLock::force(&PRESENCE_PINGS);
    let mut out = Vec::new();
    if let Err(e) = TextEncoder::new().encode(&REGISTRY.gather(), &mut out) {
        tracing::error!("cannot encode the metrics: {e}");
    }
    String::from_utf8(out).unwrap_or_default()
}
