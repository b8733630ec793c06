//! Limits that keep one client from hurting the others: Zulip's API rate limits
//! (`api_by_user`, `api_by_ip`), and the middleware that turns every error actix-web
//! answers by itself (an extractor's, a payload's, a routing one) into Zulip's JSON
//! error body.
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

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use actix_web::middleware::Next;
use actix_web::{web, Error, HttpResponse, ResponseError};
use dashmap::DashMap;

use crate::api::{auth, AppState};
use crate::error::{ApiError, ErrorCode};

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
}

/// Zulip's `authenticate_by_username` rule: at most 5 password attempts for one
/// username within 30 minutes; a successful one clears the username's history. Every
/// attempt counts, for unknown usernames too (Zulip counts before it authenticates),
/// so guessing is limited per account whatever the addresses it comes from; the
/// per-IP rule of unauthenticated calls limits it per address on top.
pub struct LoginAttempts {
    window: Duration,
    max: usize,
    /// (realm URL, lowercased username) -> times of the attempts in the window.
    seen: DashMap<(Arc<str>, String), VecDeque<Instant>>,
    inserted: AtomicUsize,
}

/// `authenticate_by_username`: `(1800, 5)`.
pub const LOGIN_WINDOW: Duration = Duration::from_secs(1800);
pub const LOGIN_ATTEMPTS: usize = 5;

impl LoginAttempts {
    pub fn new(window: Duration, max: usize) -> Self {
        LoginAttempts {
            window,
            max: max.max(1),
            seen: DashMap::new(),
            inserted: AtomicUsize::new(0),
        }
    }

    /// Counts an attempt; `Err(seconds)` when the username has used its attempts, with
    /// the time until the oldest one leaves the window (the attempt is not counted).
    pub fn attempt(&self, realm: &Arc<str>, username: &str, now: Instant) -> Result<(), f64> {
        let key = (realm.clone(), username.to_lowercase());
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

    /// A successful login clears the username's attempts.
    pub fn succeeded(&self, realm: &Arc<str>, username: &str) {
        self.seen.remove(&(realm.clone(), username.to_lowercase()));
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
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Password attempts per username; counted only while rate limits are on.
    pub fn logins(&self) -> Option<&LoginAttempts> {
        self.enabled.then_some(&self.logins)
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

/// Middleware: counts each `/api/v1` request against its user (valid credentials) or
/// its IP address (none, or invalid ones), answers 429 `RATE_LIMIT_HIT` beyond the
/// limit, and adds Zulip's `X-RateLimit-*` headers to the answer.
pub async fn rate_limit(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    if !state.rate_limits.enabled() || !req.path().starts_with("/api/v1/") {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    }
    let key = rate_key(&state, req.request());
    let decision = state.rate_limits.check(key, Instant::now());
    let mut res = if decision.allowed {
        next.call(req).await?.map_into_boxed_body()
    } else {
        // Whole seconds, as Zulip's `retry-after` (a float) rounds up for the header.
        let secs = (decision.retry_after * 1000.0).ceil() / 1000.0;
        let response = ApiError::rate_limited(secs).error_response();
        req.into_response(response)
    };
    let headers = res.headers_mut();
    let reset = chrono::Utc::now().timestamp() + decision.secs_to_full.ceil() as i64;
    for (name, value) in [
        ("x-ratelimit-limit", decision.limit.to_string()),
        ("x-ratelimit-remaining", decision.remaining.to_string()),
        ("x-ratelimit-reset", reset.to_string()),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    Ok(res)
}

/// The caller's user when its credentials are valid for the realm of its Host, else its
/// address.
fn rate_key(state: &AppState, req: &actix_web::HttpRequest) -> RateKey {
    let host = auth::host(req);
    if let (Some(handle), Some(subdomain), Ok(c)) = (
        state.registry.for_host(&host),
        state.registry.subdomain_for_host(&host),
        auth::credentials(req),
    ) {
        if let Ok(user) = handle.hub.current().authenticate(&c.email, &c.api_key) {
            return RateKey::User(subdomain.into(), user.id);
        }
    }
    let ip = req
        .peer_addr()
        .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    RateKey::Ip(ip)
}

/// Middleware: an error answer without a JSON body (actix-web's own: an extractor's,
/// a payload's, a routing error) gets Zulip's `result`/`msg`/`code` body, with its
/// status kept.
pub async fn json_errors(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    // Handlers' and extractors' errors arrive here as responses.
    let res = next.call(req).await?.map_into_boxed_body();
    let status = res.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return Ok(res);
    }
    // actix's own refusals are bodiless or plain text; anything else (JSON, or the
    // HTML pages Zulip answers file downloads with) is a handler's deliberate answer.
    let deliberate = res
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| !v.starts_with("text/plain"));
    if deliberate {
        return Ok(res);
    }
    let (request, response) = res.into_parts();
    let text = actix_web::body::to_bytes_limited(response.into_body(), 4096)
        .await
        .ok()
        .and_then(Result::ok)
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let code = if status.is_server_error() {
        ErrorCode::InternalServerError
    } else {
        ErrorCode::BadRequest
    };
    let msg = match status.as_u16() {
        413 => "Request body too large".to_owned(),
        415 => "Unsupported media type".to_owned(),
        _ if !text.is_empty() && status.is_client_error() => text,
        _ => status
            .canonical_reason()
            .unwrap_or("Request refused")
            .to_owned(),
    };
    let error = ApiError::new(status.as_u16(), code, msg);
    let response: HttpResponse = error.error_response();
    Ok(ServiceResponse::new(request, response))
}

/// Bodies larger than this (or of unknown length) are read only for callers whose
/// credentials are valid: a bad login is refused before its body is read.
pub const EARLY_AUTH_BYTES: u64 = 64 * 1024;
/// The endpoints that take no credentials.
const ANONYMOUS_ENDPOINTS: &[&str] = &[
    "/api/v1/server_settings",
    "/api/v1/fetch_api_key",
    "/api/v1/dev_fetch_api_key",
];

/// Checks made before a request's body is read: its declared length against the body
/// limits (413), and, for a large body, the caller's credentials (401), so neither a
/// body too large nor one from a bad login is read at all.
pub fn check_before_body(
    req: &actix_web::HttpRequest,
    handle: &crate::registry::RealmHandle,
) -> crate::error::ApiResult<()> {
    use actix_web::http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
    let headers = req.headers();
    let multipart = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("multipart/form-data"));
    let limit = if multipart {
        crate::api::MULTIPART_LIMIT
    } else {
        crate::api::BODY_LIMIT
    } as u64;
    let length = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if length.is_some_and(|n| n > limit) {
        return Err(crate::api::too_large());
    }
    let large = match length {
        Some(n) => n > EARLY_AUTH_BYTES,
        // Chunked: its length is unknown until read.
        None => headers.contains_key(TRANSFER_ENCODING),
    };
    if large && !ANONYMOUS_ENDPOINTS.contains(&req.path()) {
        let c = auth::credentials(req)?;
        handle.hub.current().authenticate(&c.email, &c.api_key)?;
    }
    Ok(())
}

/// A payload that fails once more than `limit` bytes went through; the flag tells
/// that failure from a malformed body.
pub fn counted(
    payload: actix_web::dev::Payload,
    limit: usize,
) -> (
    impl futures_util::Stream<Item = Result<bytes::Bytes, actix_web::error::PayloadError>> + 'static,
    std::rc::Rc<std::cell::Cell<bool>>,
) {
    use futures_util::StreamExt;
    let over = std::rc::Rc::new(std::cell::Cell::new(false));
    let flag = over.clone();
    let mut seen = 0usize;
    let stream = payload.map(move |chunk| {
        let chunk = chunk?;
        seen += chunk.len();
        if seen > limit {
            flag.set(true);
            return Err(actix_web::error::PayloadError::Overflow);
        }
        Ok(chunk)
    });
    (stream, over)
}
