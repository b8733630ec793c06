//! `Cx`: what a decision may draw on besides state: the clock and randomness.
//!
//! Every non-deterministic value a `Change` carries comes from here, so tests inject a
//! `ManualClock` and replay never consults either.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use rand::distributions::Alphanumeric;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::messages::fetch::MessageRows;
use crate::error::{ApiError, ApiResult};

/// A source of the current time, in milliseconds since the UNIX epoch.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now_ms(&self) -> i64;

    fn now_secs(&self) -> i64 {
        self.now_ms().div_euclid(1000)
    }
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        chrono::Utc::now().timestamp_millis()
    }
}

/// A clock that moves only when told to (tests: heartbeats, expiry).
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    pub fn new(start_ms: i64) -> Self {
        ManualClock(Arc::new(AtomicI64::new(start_ms)))
    }

    pub fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// The context of one decision.
pub struct Cx {
    /// Milliseconds since the epoch, read once per decision.
    pub now_ms: i64,
    rng: StdRng,
    /// The realm's message rows, for rules that read them (the realm actor gives its
    /// store; reads on a worker and unit tests give theirs, or none).
    rows: Option<Arc<dyn MessageRows + Send + Sync>>,
}

impl Cx {
    pub fn new(clock: &dyn Clock) -> Self {
        Cx {
            now_ms: clock.now_ms(),
            rng: StdRng::from_entropy(),
            rows: None,
        }
    }

    /// A context with a fixed seed (unit tests, benches).
    pub fn seeded(now_ms: i64, seed: u64) -> Self {
        Cx {
            now_ms,
            rng: StdRng::seed_from_u64(seed),
            rows: None,
        }
    }

    /// This context, reading message rows through `rows`.
    pub fn with_rows(mut self, rows: Arc<dyn MessageRows + Send + Sync>) -> Self {
        self.rows = Some(rows);
        self
    }

    /// The message rows a rule reads (a context made without them answers an internal
    /// error: a rule that reads rows was run where none are).
    pub fn rows(&self) -> ApiResult<&(dyn MessageRows + Send + Sync)> {
        self.rows.as_deref().ok_or_else(|| {
            tracing::error!("a rule read message rows in a context without them");
            ApiError::internal()
        })
    }

    pub fn now_secs(&self) -> i64 {
        self.now_ms.div_euclid(1000)
    }

    /// A fresh API key: 32 alphanumeric characters, like Zulip's.
    pub fn api_key(&mut self) -> String {
        (&mut self.rng)
            .sample_iter(&Alphanumeric)
            .take(32)
            .map(char::from)
            .collect()
    }

    /// Random bytes for salts and queue ids.
    pub fn random_bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut b = [0u8; N];
        self.rng.fill(&mut b[..]);
        b
    }
}
