//! Limits that keep one client from hurting the others: Zulip's API rate limits
//! (`api_by_user`, `api_by_ip`). The middleware that applies them to requests is
//! `api::middleware::limits`.
//!
//! Rate limits are token buckets, one per (realm, user) or per IP address, in a
//! `DashMap` (sharded locks, no global one): a check is O(1). A bucket holds a minute's
//! allowance and refills continuously, so a client may burst up to the limit and then
//! makes `limit` requests a minute. Password attempts are limited per username on top
//! (`authenticate_by_username`, see `LoginAttempts`).

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;

/// The window of Zulip's default rules: `(60, 200)` per user, `(60, 100)` per IP.
const WINDOW_SECS: f64 = 60.0;
/// Buckets are pruned (full ones dropped) after this many new keys.
const PRUNE_EVERY: usize = 4096;

/// Counts one new key; true on every `PRUNE_EVERY`th.
fn prune_due(inserted: &AtomicUsize) -> bool {
    inserted.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY == PRUNE_EVERY - 1
}

/// Who a request is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RateKey {
    /// An authenticated user of a realm (by subdomain).
    User(Arc<str>, u64),
    /// Calls without valid credentials, by the client's address.
    Ip(IpAddr),
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// What one check decided, for the `X-RateLimit-*` headers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateDecision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until the bucket is full again.
    pub secs_to_full: f64,
    /// Seconds until one request is allowed again (0 when allowed).
    pub retry_after: f64,
}

/// The rate limiter of a server.
pub struct RateLimiter {
    enabled: bool,
    per_user: u32,
    per_ip: u32,
    buckets: DashMap<RateKey, Bucket>,
    inserted: AtomicUsize,
    /// Password attempts per username (`authenticate_by_username`).
    logins: LoginAttempts,
    /// Password reset emails per address, per hour and per day
    /// (`password_reset_form_by_email`).
    resets: [LoginAttempts; 2],
}

/// Zulip's `password_reset_form_by_email`: 2 emails an hour and 5 a day for one
/// address.
pub const RESET_RULES: [(Duration, usize); 2] = [
    (Duration::from_secs(3600), 2),
    (Duration::from_secs(86_400), 5),
];

/// Zulip's `authenticate_by_username` rule: at most 5 password attempts for one
/// username within 30 minutes; a successful one clears the username's history. Every
/// attempt counts, for unknown usernames too (Zulip counts before it authenticates),
/// so guessing is limited per account whatever the addresses it comes from; the
/// per-IP rule of unauthenticated calls limits it per address on top.
///
/// The table is keyed by a digest of the realm and the lower-cased username, never the
/// username itself (a client chooses it, of any length, and it is kept for the window),
/// and holds at most `LOGIN_TABLE_MAX` usernames.
pub struct LoginAttempts {
    window: Duration,
    max: usize,
    /// `username_key(realm URL, username)` -> times of the attempts in the window.
    seen: DashMap<[u8; 16], VecDeque<Instant>>,
    inserted: AtomicUsize,
    /// The most usernames held.
    capacity: usize,
}

/// `authenticate_by_username`: `(1800, 5)`.
pub const LOGIN_WINDOW: Duration = Duration::from_secs(1800);
pub const LOGIN_ATTEMPTS: usize = 5;
/// The most usernames `LoginAttempts` holds (~100 bytes each): when full, the
/// usernames not locked out leave first (`make_room`).
pub const LOGIN_TABLE_MAX: usize = 100_000;

/// The key of a realm's username: SHA-256 of both (the username lower-cased), cut to
/// 128 bits. Fixed size whatever was sent; collisions cannot be aimed at.
fn username_key(realm: &str, username: &str) -> [u8; 16] {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    digest.update((realm.len() as u64).to_be_bytes());
    digest.update(realm.as_bytes());
    digest.update(username.to_lowercase().as_bytes());
    let full = digest.finalize();
    let mut key = [0u8; 16];
    key.copy_from_slice(&full[..16]);
    key
}

impl LoginAttempts {
    pub fn new(window: Duration, max: usize) -> Self {
        Self::with_capacity(window, max, LOGIN_TABLE_MAX)
    }

    /// `new` holding at most `capacity` usernames.
    pub fn with_capacity(window: Duration, max: usize, capacity: usize) -> Self {
        LoginAttempts {
            window,
            max: max.max(1),
            seen: DashMap::new(),
            inserted: AtomicUsize::new(0),
            capacity: capacity.max(1),
        }
    }

    /// Counts an attempt; `Err(seconds)` when the username has used its attempts, with
    /// the time until the oldest one leaves the window (the attempt is not counted).
    pub fn attempt(&self, realm: &Arc<str>, username: &str, now: Instant) -> Result<(), f64> {
        let key = username_key(realm, username);
        if self.seen.len() >= self.capacity && !self.seen.contains_key(&key) {
            self.make_room(now);
        }
        let mut fresh = false;
        let result = {
            let mut times = self.seen.entry(key).or_insert_with(|| {
                fresh = true;
                VecDeque::new()
            });
            while times
                .front()
                .is_some_and(|t| now.saturating_duration_since(*t) >= self.window)
            {
                times.pop_front();
            }
            if times.len() >= self.max {
                let oldest = times.front().copied().unwrap_or(now);
                Err((self.window - now.saturating_duration_since(oldest)).as_secs_f64())
            } else {
                times.push_back(now);
                Ok(())
            }
        };
        if fresh && prune_due(&self.inserted) {
            // Usernames whose attempts all left the window hold nothing.
            self.seen.retain(|_, times| {
                times
                    .back()
                    .is_some_and(|t| now.saturating_duration_since(*t) < self.window)
            });
        }
        result
    }

    /// `Err(seconds)` when `attempt` would refuse now; counts nothing.
    pub fn check(&self, realm: &Arc<str>, username: &str, now: Instant) -> Result<(), f64> {
        let Some(times) = self.seen.get(&username_key(realm, username)) else {
            return Ok(());
        };
        let live: Vec<Instant> = times
            .iter()
            .copied()
            .filter(|t| now.saturating_duration_since(*t) < self.window)
            .collect();
        match live.first() {
            Some(oldest) if live.len() >= self.max => {
                Err((self.window - now.saturating_duration_since(*oldest)).as_secs_f64())
            }
            _ => Ok(()),
        }
    }

    /// A full table makes room for a new username: first the usernames whose attempts
    /// all left the window, then those not locked out (fewer than `max` attempts: they
    /// lose only their count), and only when every username held is locked out, the
    /// half locked out the longest.
    fn make_room(&self, now: Instant) {
        self.seen.retain(|_, times| {
            times
                .back()
                .is_some_and(|t| now.saturating_duration_since(*t) < self.window)
        });
        if self.seen.len() < self.capacity {
            return;
        }
        self.seen.retain(|_, times| times.len() >= self.max);
        if self.seen.len() < self.capacity {
            return;
        }
        let mut oldest: Vec<Instant> = self
            .seen
            .iter()
            .filter_map(|e| e.value().back().copied())
            .collect();
        oldest.sort_unstable();
        if let Some(&cut) = oldest.get(oldest.len() / 2) {
            self.seen
                .retain(|_, times| times.back().is_some_and(|t| *t > cut));
        }
    }

    /// A successful login clears the username's attempts.
    pub fn succeeded(&self, realm: &Arc<str>, username: &str) {
        self.seen.remove(&username_key(realm, username));
    }

    /// Usernames with attempts held (tests).
    pub fn held(&self) -> usize {
        self.seen.len()
    }
}

impl RateLimiter {
    pub fn new(enabled: bool, per_user: u32, per_ip: u32) -> Self {
        RateLimiter {
            enabled,
            per_user: per_user.max(1),
            per_ip: per_ip.max(1),
            buckets: DashMap::new(),
            inserted: AtomicUsize::new(0),
            logins: LoginAttempts::new(LOGIN_WINDOW, LOGIN_ATTEMPTS),
            resets: RESET_RULES.map(|(window, max)| LoginAttempts::new(window, max)),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Password attempts per username; counted only while rate limits are on.
    pub fn logins(&self) -> Option<&LoginAttempts> {
        self.enabled.then_some(&self.logins)
    }

    /// Counts a password reset email to `address` of the realm `realm`; `Err(seconds)`
    /// when the address had its emails for the hour or the day (only while rate limits
    /// are on). A refused email is counted by neither rule.
    pub fn password_reset(&self, realm: &Arc<str>, address: &str, now: Instant) -> Result<(), f64> {
        if !self.enabled {
            return Ok(());
        }
        for rule in &self.resets {
            rule.check(realm, address, now)?;
        }
        for rule in &self.resets {
            rule.attempt(realm, address, now)?;
        }
        Ok(())
    }

    /// Counts one request of `key` at `now`.
    pub fn check(&self, key: RateKey, now: Instant) -> RateDecision {
        let limit = match key {
            RateKey::User(..) => self.per_user,
            RateKey::Ip(_) => self.per_ip,
        };
        let capacity = f64::from(limit);
        let rate = capacity / WINDOW_SECS;
        let mut fresh = false;
        let decision = {
            let mut bucket = self.buckets.entry(key).or_insert_with(|| {
                fresh = true;
                Bucket {
                    tokens: capacity,
                    at: now,
                }
            });
            let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
            bucket.tokens = (bucket.tokens + elapsed * rate).min(capacity);
            bucket.at = now;
            let allowed = bucket.tokens >= 1.0;
            if allowed {
                bucket.tokens -= 1.0;
            }
            RateDecision {
                allowed,
                limit,
                remaining: bucket.tokens.floor().max(0.0) as u32,
                secs_to_full: (capacity - bucket.tokens) / rate,
                retry_after: if allowed {
                    0.0
                } else {
                    (1.0 - bucket.tokens) / rate
                },
            }
        };
        if fresh && prune_due(&self.inserted) {
            self.prune(now);
        }
        decision
    }

    /// Drops the buckets that have refilled: they hold nothing a new bucket would not.
    fn prune(&self, now: Instant) {
        let (user_rate, ip_rate) = (
            f64::from(self.per_user) / WINDOW_SECS,
            f64::from(self.per_ip) / WINDOW_SECS,
        );
        self.buckets.retain(|key, b| {
            let (rate, capacity) = match key {
                RateKey::User(..) => (user_rate, f64::from(self.per_user)),
                RateKey::Ip(_) => (ip_rate, f64::from(self.per_ip)),
            };
            let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
            b.tokens + elapsed * rate < capacity
        });
    }

    /// Number of buckets held (tests).
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn realm() -> Arc<str> {
        Arc::from("http://zulip.localhost")
    }

    #[test]
    fn a_username_is_counted_case_insensitively_per_realm() {
        let logins = LoginAttempts::new(LOGIN_WINDOW, 2);
        let now = Instant::now();
        assert!(logins.attempt(&realm(), "Iago@zulip.com", now).is_ok());
        assert!(logins.attempt(&realm(), "iago@ZULIP.com", now).is_ok());
        assert!(logins.attempt(&realm(), "iago@zulip.com", now).is_err());
        let other: Arc<str> = Arc::from("http://other.localhost");
        assert!(logins.attempt(&other, "iago@zulip.com", now).is_ok());
        logins.succeeded(&realm(), "IAGO@zulip.com");
        assert!(logins.attempt(&realm(), "iago@zulip.com", now).is_ok());
    }

    #[test]
    fn the_table_holds_a_digest_of_a_username_of_any_length() {
        let logins = LoginAttempts::new(LOGIN_WINDOW, 5);
        let now = Instant::now();
        let long = "x".repeat(2 * 1024 * 1024);
        assert!(logins.attempt(&realm(), &long, now).is_ok());
        // What is held is 16 bytes, whatever the username's size.
        let held: Vec<usize> = logins.seen.iter().map(|e| e.key().len()).collect();
        assert_eq!(held, vec![16]);
    }

    #[test]
    fn a_full_table_drops_the_unlocked_usernames_first_and_keeps_its_bound() {
        let logins = LoginAttempts::with_capacity(LOGIN_WINDOW, 2, 10);
        let now = Instant::now();
        // Two usernames locked out.
        for name in ["a@x.test", "b@x.test"] {
            for _ in 0..2 {
                assert!(logins.attempt(&realm(), name, now).is_ok());
            }
            assert!(logins.attempt(&realm(), name, now).is_err());
        }
        for i in 0..1000 {
            let _ = logins.attempt(&realm(), &format!("guess{i}@x.test"), now);
            assert!(logins.held() <= 10, "{}", logins.held());
        }
        // The lockouts are still there.
        assert!(logins.attempt(&realm(), "a@x.test", now).is_err());
        assert!(logins.attempt(&realm(), "b@x.test", now).is_err());
    }

    #[test]
    fn a_table_of_lockouts_only_drops_the_oldest_half() {
        let logins = LoginAttempts::with_capacity(LOGIN_WINDOW, 1, 4);
        let start = Instant::now();
        for i in 0..4u64 {
            let at = start + Duration::from_secs(i);
            assert!(logins.attempt(&realm(), &format!("{i}@x.test"), at).is_ok());
        }
        let later = start + Duration::from_secs(10);
        assert!(logins.attempt(&realm(), "new@x.test", later).is_ok());
        assert!(logins.held() <= 4);
        // The newest lockout stays.
        assert!(logins.attempt(&realm(), "3@x.test", later).is_err());
    }

    #[test]
    fn password_reset_emails_are_two_an_hour_and_five_a_day_per_address() {
        let limits = RateLimiter::new(true, 200, 200);
        let t0 = Instant::now();
        let at = |secs: u64| t0 + Duration::from_secs(secs);
        let r = realm();
        assert!(limits.password_reset(&r, "a@x.test", at(0)).is_ok());
        assert!(limits.password_reset(&r, "A@x.test", at(1)).is_ok());
        let wait = limits.password_reset(&r, "a@x.test", at(2)).unwrap_err();
        assert!((3597.0..=3600.0).contains(&wait), "{wait}");
        // Another address, another realm: their own counts.
        assert!(limits.password_reset(&r, "b@x.test", at(2)).is_ok());
        assert!(limits
            .password_reset(&Arc::from("http://other"), "a@x.test", at(2))
            .is_ok());
        // Refusals were not counted: two more an hour later, one the next hour, then
        // the day's five are used.
        assert!(limits.password_reset(&r, "a@x.test", at(3600)).is_ok());
        assert!(limits.password_reset(&r, "a@x.test", at(3601)).is_ok());
        assert!(limits.password_reset(&r, "a@x.test", at(7200)).is_ok());
        assert!(limits.password_reset(&r, "a@x.test", at(10_800)).is_err());
        assert!(limits.password_reset(&r, "a@x.test", at(86_400)).is_ok());
        let off = RateLimiter::new(false, 200, 200);
        for i in 0..10 {
            assert!(off.password_reset(&r, "a@x.test", at(i)).is_ok());
        }
    }
}
