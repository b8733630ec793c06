//! Limits and refusals: every error is a Zulip JSON error (also those the HTTP layer
//! answers by itself), rate limits, event queue caps, body limits, timeouts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

/// A parsed raw HTTP response.
#[derive(Debug)]
struct Raw {
    status: u16,
    head: String,
    body: Value,
}

impl Raw {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }
}

/// Sends `bytes` on a new connection and reads the first response (the server closes
/// refused connections; a kept-alive one is read up to its content length).
fn raw(url: &str, bytes: &[u8]) -> Raw {
    let addr = url.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // The server may answer (and close) before it has read everything.
    let _ = s.write_all(bytes);
    read_response(&mut s)
}

fn read_response(s: &mut TcpStream) -> Raw {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let len: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                let status = head[9..12].parse().unwrap();
                let body_bytes = &buf[end + 4..end + 4 + len];
                let body = serde_json::from_slice(body_bytes).unwrap_or_else(|e| {
                    panic!(
                        "not JSON ({e}): {head}\n\n{}",
                        String::from_utf8_lossy(body_bytes)
                    )
                });
                return Raw { status, head, body };
            }
        }
        match s.read(&mut chunk) {
            Ok(0) => panic!(
                "connection closed before a whole response: {:?}",
                String::from_utf8_lossy(&buf)
            ),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => panic!("read: {e}; got {:?}", String::from_utf8_lossy(&buf)),
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn assert_zulip_error(r: &Raw, status: u16, msg: &str) {
    assert_eq!(r.status, status, "{r:?}");
    assert_eq!(r.body["result"], "error", "{r:?}");
    assert_eq!(r.body["msg"], msg, "{r:?}");
    assert!(r.body["code"].is_string(), "{r:?}");
    assert!(
        r.header("content-type")
            .is_some_and(|v| v.starts_with("application/json")),
        "{r:?}"
    );
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[actix_web::test]
async fn a_malformed_request_line_gets_a_json_400() {
    let app = TestApp::spawn().await;
    let url = app.url.clone();
    let r = blocking(move || raw(&url, b"GET /api/v1/users\x01 HTTP/1.1\r\nHost: x\r\n\r\n")).await;
    assert_zulip_error(&r, 400, "Malformed HTTP request");
    let url = app.url.clone();
    let r = blocking(move || raw(&url, b"BLAH BLAH BLAH\r\n\r\n")).await;
    assert_zulip_error(&r, 400, "Malformed HTTP request");
    let url = app.url.clone();
    let r = blocking(move || {
        raw(
            &url,
            b"GET /api/v1/users HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
        )
    })
    .await;
    assert_zulip_error(&r, 400, "Malformed HTTP request");
    // A body whose length is not a number.
    let url = app.url.clone();
    let r = blocking(move || {
        raw(
            &url,
            b"POST /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        )
    })
    .await;
    assert_zulip_error(&r, 400, "Malformed HTTP request");
    // The server still serves.
    let r = app.get("/api/v1/server_settings", Auth::None, &[]).await;
    assert_success(&r);
}

#[actix_web::test]
async fn oversized_uri_and_headers_get_json_414_and_431() {
    let app = TestApp::spawn().await;
    let url = app.url.clone();
    let r = blocking(move || {
        let long = "a".repeat(200_000);
        raw(
            &url,
            format!("GET /api/v1/users?x={long} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes(),
        )
    })
    .await;
    assert_zulip_error(&r, 414, "Request URI too long");
    // A URI longer than the HTTP library takes, in a head that fits the buffer.
    let url = app.url.clone();
    let r = blocking(move || {
        let long = "a".repeat(70_000);
        raw(
            &url,
            format!("GET /api/v1/users?x={long} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes(),
        )
    })
    .await;
    assert_zulip_error(&r, 414, "Request URI too long");
    let url = app.url.clone();
    let r = blocking(move || {
        let big = "b".repeat(200_000);
        raw(
            &url,
            format!("GET /api/v1/users HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n").as_bytes(),
        )
    })
    .await;
    assert_zulip_error(&r, 431, "Request header fields too large");
    // Too many headers.
    let url = app.url.clone();
    let r = blocking(move || {
        let mut req = String::from("GET /api/v1/users HTTP/1.1\r\nHost: x\r\n");
        for i in 0..200 {
            req.push_str(&format!("X-H{i}: v\r\n"));
        }
        req.push_str("\r\n");
        raw(&url, req.as_bytes())
    })
    .await;
    assert_eq!(r.body["result"], "error", "{r:?}");
    assert!([400, 431].contains(&r.status), "{r:?}");
}

#[actix_web::test]
async fn a_refusal_after_a_kept_alive_request_is_json_too() {
    let app = TestApp::spawn().await;
    let url = app.url.clone();
    blocking(move || {
        let addr = url.trim_start_matches("http://");
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let first = read_response(&mut s);
        assert_eq!(first.status, 200);
        assert_eq!(first.body["result"], "success");
        s.write_all(b"GET /\x7f HTTP/1.1\r\n\r\n").unwrap();
        let second = read_response(&mut s);
        assert_zulip_error(&second, 400, "Malformed HTTP request");
    })
    .await;
}

#[actix_web::test]
async fn a_slow_request_head_gets_a_json_408() {
    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::spawn_configured(dir, |c| c.client_request_timeout_ms = 300).await;
    let url = app.url.clone();
    let r = blocking(move || raw(&url, b"GET /api/v1/server_settings HTTP/1.1\r\nHo")).await;
    assert_zulip_error(
        &r,
        408,
        "Request timed out: the request was not sent in time",
    );
}

#[actix_web::test]
async fn actix_web_rejections_are_json() {
    let app = TestApp::spawn().await;
    let auth = basic("iago@zulip.com", &app.api_key("iago@zulip.com").await);
    // A chunked body whose chunk size is not a number.
    let url = app.url.clone();
    let r = blocking(move || {
        raw(
            &url,
            format!(
                "POST /api/v1/users HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\n\
                 Transfer-Encoding: chunked\r\n\r\nzz\r\n"
            )
            .as_bytes(),
        )
    })
    .await;
    assert_eq!(r.body["result"], "error", "{r:?}");
    assert_eq!(r.status, 400, "{r:?}");
    // The path of an upload served with a bad realm id, a path parameter actix parses.
    let r = app
        .get("/user_avatars/zulip/emoji/images/x", Auth::None, &[])
        .await;
    assert_eq!(r.2["result"], "error", "{r:?}");
}

fn header(r: &Reply, name: &str) -> Option<String> {
    r.1.get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

#[actix_web::test]
async fn rate_limits_count_per_user_and_per_ip_as_zulip() {
    use hearth::config::Switch;
    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::spawn_configured(dir, |c| {
        c.rate_limit = Some(Switch::On);
        c.rate_limit_per_user = 5;
        c.rate_limit_per_ip = 4;
    })
    .await;
    // Two unauthenticated calls of this address.
    let iago = app.api_key("iago@zulip.com").await;
    let hamlet = app.api_key("hamlet@zulip.com").await;
    for left in (0..5).rev() {
        let r = app
            .get(
                "/api/v1/users/me",
                Auth::Basic("iago@zulip.com", &iago),
                &[],
            )
            .await;
        assert_success(&r);
        assert_eq!(header(&r, "x-ratelimit-limit").as_deref(), Some("5"));
        assert_eq!(
            header(&r, "x-ratelimit-remaining"),
            Some(left.to_string()),
            "{r:?}"
        );
        let reset: i64 = header(&r, "x-ratelimit-reset").unwrap().parse().unwrap();
        let now = chrono_now();
        assert!(reset >= now && reset <= now + 61, "{reset} vs {now}");
    }
    let r = app
        .get(
            "/api/v1/users/me",
            Auth::Basic("iago@zulip.com", &iago),
            &[],
        )
        .await;
    assert_error(&r, 429, "RATE_LIMIT_HIT", "API usage exceeded rate limit");
    let retry = r.2["retry-after"].as_f64().unwrap();
    assert!(retry > 0.0 && retry <= 12.0, "{retry}");
    assert_eq!(
        header(&r, "retry-after"),
        Some((retry.ceil() as u64).to_string())
    );
    assert_eq!(header(&r, "x-ratelimit-remaining").as_deref(), Some("0"));
    // Another user has their own allowance.
    let r = app
        .get(
            "/api/v1/users/me",
            Auth::Basic("hamlet@zulip.com", &hamlet),
            &[],
        )
        .await;
    assert_success(&r);
    assert_eq!(header(&r, "x-ratelimit-remaining").as_deref(), Some("4"));
    // Without valid credentials, the address is counted: 2 of 4 were used above.
    for _ in 0..2 {
        let r = app.get("/api/v1/server_settings", Auth::None, &[]).await;
        assert_success(&r);
        assert_eq!(header(&r, "x-ratelimit-limit").as_deref(), Some("4"));
    }
    let r = app
        .get("/api/v1/users/me", Auth::Basic("iago@zulip.com", "x"), &[])
        .await;
    assert_error(&r, 429, "RATE_LIMIT_HIT", "API usage exceeded rate limit");
    // Uploaded files and unknown paths outside the API are not counted.
    let r = app.get("/no/such/page", Auth::None, &[]).await;
    assert_eq!(r.0, 404);
    assert!(header(&r, "x-ratelimit-limit").is_none());
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[actix_web::test]
async fn rate_limits_are_off_under_dev_unless_asked_for() {
    let app = TestApp::spawn().await;
    for _ in 0..120 {
        let r = app.get("/api/v1/server_settings", Auth::None, &[]).await;
        assert_success(&r);
        assert!(header(&r, "x-ratelimit-limit").is_none());
    }
    let dir = std::path::PathBuf::from("/nonexistent");
    let mut c = hearth::config::ServeConfig::for_tests(dir);
    assert!(!c.rate_limited(), "--dev: off");
    c.dev = false;
    assert!(c.rate_limited(), "production: on");
    c.rate_limit = Some(hearth::config::Switch::Off);
    assert!(!c.rate_limited(), "--rate-limit off");
    c.dev = true;
    c.rate_limit = Some(hearth::config::Switch::On);
    assert!(c.rate_limited(), "--dev --rate-limit on");
}

#[test]
fn the_rate_limiter_refills_continuously() {
    use hearth::limits::{RateKey, RateLimiter};
    use std::time::Instant;
    let limiter = RateLimiter::new(true, 200, 100);
    let t0 = Instant::now();
    let key = || RateKey::User("zulip".into(), 8);
    for i in 0..200 {
        let d = limiter.check(key(), t0);
        assert!(d.allowed, "request {i}");
    }
    let d = limiter.check(key(), t0);
    assert!(!d.allowed);
    assert!((d.retry_after - 0.3).abs() < 0.01, "{d:?}");
    // 200 a minute: one more every 0.3 s.
    let d = limiter.check(key(), t0 + Duration::from_millis(310));
    assert!(d.allowed, "{d:?}");
    assert!(
        !limiter
            .check(key(), t0 + Duration::from_millis(320))
            .allowed
    );
    let ip = RateKey::Ip([10, 0, 0, 1].into());
    assert_eq!(limiter.check(ip, t0).remaining, 99);
}

/// A multipart body of `parts` empty parameters.
fn empty_parts(parts: usize) -> (String, Vec<u8>) {
    let boundary = "XyZzY".to_owned();
    let mut body = Vec::new();
    for i in 0..parts {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"p{i}\"\r\n\r\n\r\n")
                .as_bytes(),
        );
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (boundary, body)
}

#[actix_web::test]
async fn multipart_bodies_count_every_byte() {
    let app = TestApp::spawn().await;
    let key = app.api_key("iago@zulip.com").await;
    // 60 000 empty fields: about 4.5 MB of names and headers, nothing in values.
    let (boundary, body) = empty_parts(60_000);
    assert!(body.len() < hearth::api::MULTIPART_LIMIT);
    let r = send(
        app.client
            .post(format!("{}/api/v1/users/me/status", app.url))
            .header("Authorization", basic("iago@zulip.com", &key))
            .header(
                "Content-Type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body),
    )
    .await;
    assert_error(&r, 413, "BAD_REQUEST", "Request body too large");
    // A few fields are read (and found to change nothing).
    let (boundary, body) = empty_parts(3);
    let r = send(
        app.client
            .post(format!("{}/api/v1/users/me/status", app.url))
            .header("Authorization", basic("iago@zulip.com", &key))
            .header(
                "Content-Type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body),
    )
    .await;
    assert_error(
        &r,
        400,
        "BAD_REQUEST",
        "Client did not pass any new values.",
    );
}

/// zulip-js sends `queues.register({})` as a multipart form with no field: the
/// closing delimiter alone (or an empty body). Django reads that as an empty form.
#[actix_web::test]
async fn a_multipart_form_with_no_field_is_an_empty_form() {
    let app = TestApp::spawn().await;
    let key = app.api_key("iago@zulip.com").await;
    let post = |body: &'static [u8]| {
        app.client
            .post(format!("{}/api/v1/register", app.url))
            .header("Authorization", basic("iago@zulip.com", &key))
            .header("Content-Type", "multipart/form-data; boundary=XyZzY")
            .body(body)
    };
    for body in [&b"--XyZzY--\r\n"[..], b"", b"\r\n--XyZzY--\r\n\r\n"] {
        let (status, _, reply) = send(post(body)).await;
        assert_eq!(status, 200, "{body:?}: {reply}");
        assert!(reply["queue_id"].is_string(), "{reply}");
    }
    // Anything else that is not a form stays refused, short or not.
    for body in [&b"--XyZzY\r\n"[..], b"--Other--\r\n", b"garbage"] {
        let r = send(post(body)).await;
        assert_error(&r, 400, "BAD_REQUEST", "Malformed multipart body");
    }
}

#[actix_web::test]
async fn a_large_body_is_refused_before_it_is_read() {
    let app = TestApp::spawn().await;
    let url = app.url.clone();
    // A bogus login announcing 200 MB: refused at once, nothing of the body sent.
    let r = blocking(move || {
        raw(
            &url,
            b"POST /api/v1/users/me/status HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 209715200\r\n\r\n",
        )
    })
    .await;
    assert_zulip_error(&r, 413, "Request body too large");
    // Within the limit, but large: the credentials are checked before it is read.
    let url = app.url.clone();
    let r = blocking(move || {
        let auth = basic("iago@zulip.com", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
        raw(
            &url,
            format!(
                "POST /api/v1/users/me/status HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\n\
                 Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 3000000\r\n\r\n"
            )
            .as_bytes(),
        )
    })
    .await;
    assert_zulip_error(&r, 401, "Invalid API key");
    let url = app.url.clone();
    let r = blocking(move || {
        raw(
            &url,
            b"POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nTransfer-Encoding: chunked\r\n\r\n",
        )
    })
    .await;
    assert_eq!(r.status, 401, "{r:?}");
    assert_eq!(r.body["result"], "error");
}

#[actix_web::test]
async fn deeply_nested_json_parameters_are_refused() {
    let app = TestApp::spawn().await;
    let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let r = app
        .post_as(
            "iago@zulip.com",
            "/api/v1/users/me/subscriptions",
            &[("subscriptions", &deep)],
        )
        .await;
    assert_error(
        &r,
        400,
        "BAD_REQUEST",
        "subscriptions is nested too deeply (limit: 64 levels)",
    );
}

#[actix_web::test]
async fn password_attempts_are_limited_per_username_as_zulip() {
    use hearth::config::Switch;
    let app = TestApp::spawn_configured(tempfile::tempdir().unwrap(), |c| {
        c.rate_limit = Some(Switch::On);
        c.rate_limit_per_ip = 1000;
    })
    .await;
    app.create_user("guessed@zulip.com", "right-password-42", "Guessed")
        .await;
    app.create_user("other@zulip.com", "other-password-42", "Other")
        .await;
    let login = |user: &'static str, password: &'static str| {
        let app = &app;
        async move {
            app.post(
                "/api/v1/fetch_api_key",
                Auth::None,
                &[("username", user), ("password", password)],
            )
            .await
        }
    };
    // Five attempts within 30 minutes, whatever their outcome...
    for _ in 0..5 {
        let r = login("guessed@zulip.com", "wrong").await;
        assert_error(
            &r,
            401,
            "AUTHENTICATION_FAILED",
            "Your username or password is incorrect",
        );
    }
    // ...then even the right password is refused, before it is checked.
    let r = login("GUESSED@zulip.com", "right-password-42").await;
    assert_error(&r, 429, "RATE_LIMIT_HIT", "API usage exceeded rate limit");
    let retry = r.2["retry-after"].as_f64().unwrap();
    assert!(retry > 1700.0 && retry <= 1800.0, "{retry}");
    assert_eq!(
        header(&r, "retry-after"),
        Some((retry.ceil() as u64).to_string())
    );
    // Another account is not affected; a success clears its count.
    for _ in 0..4 {
        let r = login("other@zulip.com", "wrong").await;
        assert_eq!(r.0, 401);
    }
    assert_success(&login("other@zulip.com", "other-password-42").await);
    for _ in 0..5 {
        let r = login("other@zulip.com", "wrong").await;
        assert_eq!(r.0, 401, "{r:?}");
    }
    assert_eq!(login("other@zulip.com", "wrong").await.0, 429);
    // Unknown usernames are counted too (Zulip counts before it authenticates).
    for _ in 0..5 {
        assert_eq!(login("nobody@zulip.com", "x").await.0, 401);
    }
    assert_eq!(login("nobody@zulip.com", "x").await.0, 429);
}

#[actix_web::test]
async fn password_attempts_are_not_limited_with_rate_limits_off() {
    let app = TestApp::spawn().await;
    app.create_user("free@zulip.com", "free-password-42", "Free")
        .await;
    for _ in 0..7 {
        let r = app
            .post(
                "/api/v1/fetch_api_key",
                Auth::None,
                &[("username", "free@zulip.com"), ("password", "wrong")],
            )
            .await;
        assert_eq!(r.0, 401);
    }
}

#[test]
fn login_attempts_leave_the_window_per_realm_and_username() {
    use hearth::limits::LoginAttempts;
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    let l = LoginAttempts::new(Duration::from_secs(10), 2);
    let realm: Arc<str> = Arc::from("http://a");
    let t0 = Instant::now();
    assert!(l.attempt(&realm, "u", t0).is_ok());
    assert!(l.attempt(&realm, "U", t0 + Duration::from_secs(4)).is_ok());
    let wait = l
        .attempt(&realm, "u", t0 + Duration::from_secs(5))
        .unwrap_err();
    assert!((wait - 5.0).abs() < 1e-6, "{wait}");
    // The first attempt leaves the window at t0 + 10.
    assert!(l.attempt(&realm, "u", t0 + Duration::from_secs(10)).is_ok());
    // Another realm's username of the same name is another account.
    let other: Arc<str> = Arc::from("http://b");
    assert!(l.attempt(&other, "u", t0 + Duration::from_secs(10)).is_ok());
    assert_eq!(l.held(), 2);
    l.succeeded(&realm, "u");
    assert_eq!(l.held(), 1);
}

#[test]
fn the_connection_cap_fits_under_the_open_files_limit() {
    use rustix::process::{getrlimit, Resource};
    let small = hearth::api::wire::fit_to_open_files(100);
    assert_eq!(small, 100, "a cap under the limit is kept");
    let limit = getrlimit(Resource::Nofile);
    // The soft limit was raised to the hard one.
    assert_eq!(limit.current, limit.maximum);
    let huge = hearth::api::wire::fit_to_open_files(usize::MAX);
    if let Some(open_files) = limit.current {
        assert!(
            huge as u64 <= open_files.max(64),
            "{huge} over {open_files}"
        );
        assert!(huge < usize::MAX);
    }
}

/// A username no account can have (longer than an address may be) is refused as an
/// unknown one and never counted: the table of attempts keeps nothing of it, so a
/// client cannot fill the memory with megabyte usernames, and no lockout follows.
#[actix_web::test]
async fn an_overlong_username_is_refused_and_not_kept() {
    use hearth::config::Switch;
    let app = TestApp::spawn_configured(tempfile::tempdir().unwrap(), |c| {
        c.rate_limit = Some(Switch::On);
        c.rate_limit_per_ip = 1000;
    })
    .await;
    let long = format!("{}@zulip.com", "a".repeat(512 * 1024));
    for _ in 0..7 {
        let r = app
            .post(
                "/api/v1/fetch_api_key",
                Auth::None,
                &[("username", &long), ("password", "x")],
            )
            .await;
        assert_error(
            &r,
            401,
            "AUTHENTICATION_FAILED",
            "Your username or password is incorrect",
        );
    }
}

/// A request whose method is not one of HTTP's is counted against its address on any
/// path, not only under `/api/v1/`.
#[actix_web::test]
async fn an_unknown_method_is_rate_limited_on_any_path() {
    use hearth::config::Switch;
    let app = TestApp::spawn_configured(tempfile::tempdir().unwrap(), |c| {
        c.rate_limit = Some(Switch::On);
        c.rate_limit_per_ip = 3;
    })
    .await;
    let method = reqwest::Method::from_bytes(b"BREW").unwrap();
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let r = send(app.request(method.clone(), "/no/such/page", Auth::None)).await;
        statuses.push(r.0.as_u16());
    }
    assert_eq!(statuses[..3], [404, 404, 404], "{statuses:?}");
    assert_eq!(statuses[3..], [429, 429], "{statuses:?}");
}
