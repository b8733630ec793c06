//! Limits and refusals: every error is a Zulip JSON error (also those the HTTP layer
//! answers by itself), rate limits, event queue caps, body limits, timeouts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;
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
    // Bytes after the body's declared end of a chunked body that breaks off.
    let url = app.url.clone();
    let r = blocking(move || {
        raw(
            &url,
            b"POST /api/v1/users HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
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
