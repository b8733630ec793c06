//! The request log: a line per HTTP request (`--access-log all`), or only per error and
//! slow request (`notable`, the default: a busy server answers thousands of requests a
//! second, and a line each is most of its log and a good share of its time). A line
//! carries the method, the route pattern (never the query string, a path parameter, a
//! body or a key), the status, the time taken, the realm and, once the caller is
//! authenticated, the user id. Every request is counted and timed in the metrics
//! (`metrics::record_answer`) whatever the log keeps.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use actix_web::dev::ServiceResponse;
use actix_web::{web, HttpMessage};

use crate::api::{origin, AppState};
use crate::config::AccessLog;

/// Target of the per-request lines (`RUST_LOG=hearth::http=warn` silences them).
pub const HTTP_TARGET: &str = "hearth::http";

/// The most of a method a line holds (the longest standard one, `OPTIONS`, is 7).
const LOGGED_METHOD_BYTES: usize = 16;
/// The most of an unknown path a line holds.
const LOGGED_PATH_BYTES: usize = 128;

/// How an unknown path is logged: an API path (which holds no secret) as sent, cut
/// to `LOGGED_PATH_BYTES`, without its query string; any other by its first segment
/// only, since a mistyped page path may hold a key (`/join/<key>` without its slash, an
/// upload's or an export's address).
fn unknown_path(path: &str) -> String {
    if path.starts_with("/api/") || path.starts_with("/json/") {
        return cut(path, LOGGED_PATH_BYTES);
    }
    let rest = path.strip_prefix('/').unwrap_or(path);
    match rest.split_once('/') {
        Some((first, more)) if !more.is_empty() => {
            format!("/{}/…", cut(first, LOGGED_PATH_BYTES))
        }
        _ => format!("/{}", cut(rest, LOGGED_PATH_BYTES)),
    }
}

/// `text` whole when it is at most `max` bytes, else its first `max` bytes (at a char
/// boundary) and `…`.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The caller's user id, filled in by the realm actor once it has authenticated the
/// request's credentials; the request log reads it. Shared by the clones of one
/// request's credentials.
#[derive(Debug, Clone, Default)]
pub struct LoggedUser(Arc<OnceLock<u64>>);

impl LoggedUser {
    /// Records the authenticated user (the first call wins).
    pub fn set(&self, user_id: u64) {
        let _ = self.0.set(user_id);
    }

    pub fn get(&self) -> Option<u64> {
        self.0.get().copied()
    }
}

/// Which requests get a line (`--access-log`, `--slow-request-ms`).
#[derive(Debug, Clone, Copy)]
pub struct AccessLogPolicy {
    pub mode: AccessLog,
    /// Longer than this is slow.
    pub slow: Duration,
}

impl AccessLogPolicy {
    /// Whether an answer gets a line under `notable`: an error (a 429 aside: a client
    /// over its rate limit would otherwise write a line per refused request), or a
    /// slow answer that is not a long-poll (which waits by design).
    fn notable(&self, status: u16, took: Duration, long_poll: bool) -> bool {
        (status >= 400 && status != 429) || (took > self.slow && !long_poll)
    }
}

/// Whether `--access-log` asks for any line at all (and the log takes them): read
/// before the request, so that a server that logs nothing does no work for it.
pub fn wanted(state: Option<&AppState>) -> Option<AccessLogPolicy> {
    let policy = state.map(|state| state.access_log)?;
    if policy.mode == AccessLog::Off
        || !tracing::enabled!(target: HTTP_TARGET, tracing::Level::INFO)
    {
        return None;
    }
    Some(policy)
}

/// An `info` line on `hearth::http` for an answer `--access-log` asks for, written when
/// the response is ready (a long-poll is logged when it answers).
pub fn log_answer<B>(policy: AccessLogPolicy, res: &ServiceResponse<B>, took: Duration) {
    let request = res.request();
    let method = request.method();
    if policy.mode == AccessLog::Notable {
        let long_poll =
            method == actix_web::http::Method::GET && request.path() == "/api/v1/events";
        if !policy.notable(res.status().as_u16(), took, long_poll) {
            return;
        }
    }
    // The route pattern (`/api/v1/users/{user}`), never the path's values.
    let path = request
        .match_pattern()
        .unwrap_or_else(|| unknown_path(request.path()));
    // Any token is a method to actix-http: one outside HTTP's standard set is logged
    // cut, as sent (the metrics count it as `other`).
    let method = cut(method.as_str(), LOGGED_METHOD_BYTES);
    let realm = request
        .app_data::<web::Data<AppState>>()
        .and_then(|state| state.registry.subdomain_for_host(&origin::host(request)));
    let user_id = request
        .extensions()
        .get::<LoggedUser>()
        .and_then(LoggedUser::get);
    // Tenths of a millisecond are enough, and keep the line short.
    let ms = (took.as_micros() / 100) as f64 / 10.0;
    tracing::info!(
        target: HTTP_TARGET,
        method = %method,
        path = %path,
        status = res.status().as_u16(),
        ms,
        realm = realm.as_deref(),
        user_id,
        "request"
    );
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn an_unknown_page_path_is_logged_by_its_first_segment() {
        use super::unknown_path;
        assert_eq!(unknown_path("/join/abcdefghijklmnopqrstuvwx"), "/join/…");
        assert_eq!(unknown_path("/join/abcdefghijklmnopqrstuvwx/x"), "/join/…");
        assert_eq!(unknown_path("/favicon.ico"), "/favicon.ico");
        assert_eq!(unknown_path("/join/"), "/join/");
        assert_eq!(unknown_path("/api/v1/no_such"), "/api/v1/no_such");
        let long = format!("/api/v1/{}", "x".repeat(1000));
        assert!(unknown_path(&long).len() < 140);
    }

    proptest::proptest! {
        #[test]
        fn any_path_is_logged_bounded(path in "(/[^/]{0,300}){0,6}") {
            let logged = super::unknown_path(&path);
            proptest::prop_assert!(logged.len() <= super::LOGGED_PATH_BYTES + 8, "{}", logged);
        }
    }

    #[test]
    fn a_logged_text_is_cut_at_a_char_boundary() {
        assert_eq!(cut("GET", 16), "GET");
        assert_eq!(
            cut(&"M".repeat(100_000), 16),
            format!("{}…", "M".repeat(16))
        );
        // 'é' is two bytes: the cut never splits it.
        assert_eq!(cut("ééé", 3), "é…");
    }
}
