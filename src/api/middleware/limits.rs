//! The rate limit of `/api/v1` requests (the buckets are `crate::limits`), and the
//! checks made before a request's body is read.

use std::time::Instant;

use actix_web::body::BoxBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::ResponseError;

use crate::api::{auth, origin, AppState};
use crate::error::{ApiError, ApiResult};
use crate::limits::{RateDecision, RateKey};
use crate::registry::RealmHandle;

/// Counts an `/api/v1` request against its user (valid credentials) or its IP address
/// (none, or invalid ones), when rate limits are on: `None` when they are off or the
/// request is not an API request. A request whose method is not one of HTTP's standard
/// ones is counted on any path: nothing answers it but a refusal. A decision that is
/// not `allowed` is answered by `refusal`, and every answer to a counted request gets
/// `add_headers`.
pub fn count(state: &AppState, req: &ServiceRequest) -> Option<RateDecision> {
    if !state.rate_limits.enabled()
        || !(req.path().starts_with("/api/v1/")
            || super::metrics::method_label(req.method()) == "other")
    {
        return None;
    }
    let key = rate_key(state, req.request());
    Some(state.rate_limits.check(key, Instant::now()))
}

/// The 429 `RATE_LIMIT_HIT` answer of a request over its limit.
pub fn refusal(req: ServiceRequest, decision: &RateDecision) -> ServiceResponse<BoxBody> {
    // Whole seconds, as Zulip's `retry-after` (a float) rounds up for the header.
    let secs = (decision.retry_after * 1000.0).ceil() / 1000.0;
    let response = ApiError::rate_limited(secs).error_response();
    req.into_response(response)
}

/// Zulip's `X-RateLimit-*` headers of a counted request's answer.
pub fn add_headers(res: &mut ServiceResponse<BoxBody>, decision: &RateDecision) {
    let headers = res.headers_mut();
    let reset = chrono::Utc::now().timestamp() + decision.secs_to_full.ceil() as i64;
    for (name, value) in [
        ("x-ratelimit-limit", i64::from(decision.limit)),
        ("x-ratelimit-remaining", i64::from(decision.remaining)),
        ("x-ratelimit-reset", reset),
    ] {
        headers.insert(HeaderName::from_static(name), HeaderValue::from(value));
    }
}

/// The caller's user when its credentials are valid for the realm of its Host, else its
/// address. A valid caller is recorded in the request's extensions (`Authenticated`),
/// so the handler does not authenticate the same credentials against the same version
/// again.
fn rate_key(state: &AppState, req: &actix_web::HttpRequest) -> RateKey {
    let host = origin::host(req);
    if let (Some(subdomain), Ok(c)) = (
        state.registry.subdomain_for_host(&host),
        auth::credentials(req),
    ) {
        if let Some(handle) = state.registry.get(&subdomain) {
            let version = handle.hub.current();
            if let Ok(user) = c.user_in(&version, handle.clock.now_secs()) {
                let key = RateKey::User(subdomain.into(), user.id);
                auth::Authenticated::record(req, c, version.clone(), user.id);
                return key;
            }
        }
    }
    // An incoming webhook counts against its bot, as Zulip's `webhook_view` does.
    if let (Some(subdomain), Some(key)) = (
        state.registry.subdomain_for_host(&host),
        auth::webhook_api_key(req),
    ) {
        if let Some(handle) = state.registry.get(&subdomain) {
            if let Ok(user) = handle.hub.current().user_by_api_key(&key) {
                return RateKey::User(subdomain.into(), user.id);
            }
        }
    }
    RateKey::Ip(origin::client_ip(req, &state.trusted_proxies))
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
pub fn check_before_body(req: &actix_web::HttpRequest, handle: &RealmHandle) -> ApiResult<()> {
    use actix_web::http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
    let headers = req.headers();
    let multipart = crate::api::is_multipart(req);
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
        if let Some(key) = auth::webhook_api_key(req) {
            handle.hub.current().user_by_api_key(&key)?;
        } else {
            let c = auth::credentials(req)?;
            c.user_in(&handle.hub.current(), handle.clock.now_secs())?;
        }
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
