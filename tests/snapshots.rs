//! Golden responses: every exchange in `snapshots/` is replayed against a fresh
//! development server and its answer (status, selected headers, redacted body) compared
//! with the file. `UPDATE_SNAPSHOTS=1 cargo test --test snapshots` rewrites the answers.
//!
//! A snapshot file:
//!
//! ```json
//! {
//!   "method": "GET",
//!   "path": "/api/v1/users/{id:hamlet@zulip.com}",
//!   "auth": "admin",
//!   "params": {"client_gravatar": "false"},
//!   "encoding": "form",
//!   "setup": [{"method": "POST", "path": "/api/v1/users", "auth": "admin", "params": {}}],
//!   "status": 200,
//!   "headers": {"content-type": "application/json"},
//!   "body": {"result": "success", "msg": "", "user": {}}
//! }
//! ```
//!
//! - `auth`: `none`, `admin` (iago), `member` (hamlet), `owner` (desdemona), `guest`
//!   (polonius), `bot` (default-bot), `user:EMAIL` (that user's key), `basic:EMAIL:KEY`
//!   (literal credentials), `header:VALUE` (a literal `Authorization` header).
//! - `{id:EMAIL}` in the path or a parameter value becomes that user's id.
//! - `params` go in the query string for GET, else in the body; `encoding` may force
//!   `form`, `multipart` or `query`.
//! - `setup`: requests made first, each of which must succeed; not compared.
//! - In bodies, API keys, dates, ids, versions and server addresses are redacted
//!   (`<api_key>`, `<date>`, `<id>`, `<version>`, `<url>`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::*;
use reqwest::Method;
use serde_json::{Map, Value};

fn snapshot_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots")
}

fn snapshot_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(snapshot_dir())
        .expect("snapshots/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn updating() -> bool {
    std::env::var("UPDATE_SNAPSHOTS").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Replaces every `{id:EMAIL}` with that user's id.
async fn resolve(app: &TestApp, text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("{id:") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').expect("closing brace") + start;
        let email = &rest[start + 4..end];
        let (status, _, body) = app
            .post(
                "/api/v1/dev_fetch_api_key",
                Auth::None,
                &[("username", email)],
            )
            .await;
        assert!(status.is_success(), "no user {email}: {body}");
        out.push_str(&body["user_id"].to_string());
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Makes one request as described by a snapshot (or setup) entry.
async fn perform(app: &TestApp, spec: &Value) -> Reply {
    let method: Method = spec["method"]
        .as_str()
        .expect("method")
        .parse()
        .expect("a method");
    let path = resolve(app, spec["path"].as_str().expect("path")).await;
    let auth = spec["auth"].as_str().unwrap_or("none");
    let (email, key);
    let header;
    let auth = match auth {
        "none" => Auth::None,
        "admin" | "member" | "owner" | "guest" | "bot" => {
            email = match auth {
                "admin" => ADMIN,
                "member" => MEMBER,
                "owner" => OWNER,
                "guest" => GUEST,
                _ => BOT,
            }
            .to_owned();
            key = app.api_key(&email).await;
            Auth::Basic(&email, &key)
        }
        other if other.starts_with("user:") => {
            email = other["user:".len()..].to_owned();
            key = app.api_key(&email).await;
            Auth::Basic(&email, &key)
        }
        other if other.starts_with("basic:") => {
            let (e, k) = other["basic:".len()..]
                .split_once(':')
                .expect("basic:EMAIL:KEY");
            Auth::Basic(e, k)
        }
        other if other.starts_with("header:") => {
            header = other["header:".len()..].to_owned();
            Auth::Header(&header)
        }
        other => panic!("unknown auth {other:?}"),
    };
    let mut params = Vec::new();
    if let Some(map) = spec.get("params").and_then(Value::as_object) {
        for (k, v) in map {
            let v = v
                .as_str()
                .expect("parameter values are strings (JSON as text)");
            params.push((k.clone(), resolve(app, v).await));
        }
    }
    let default = if method == Method::GET {
        "query"
    } else {
        "form"
    };
    let encoding = spec
        .get("encoding")
        .and_then(Value::as_str)
        .unwrap_or(default);
    let rb = app.request(method, &path, auth);
    let rb = match encoding {
        "query" => rb.query(&params),
        "form" => rb.form(&params),
        "multipart" => {
            let mut form = reqwest::multipart::Form::new();
            for (k, v) in params {
                form = form.text(k, v);
            }
            rb.multipart(form)
        }
        other => panic!("unknown encoding {other:?}"),
    };
    send(rb).await
}

/// `http://127.0.0.1:PORT` -> `<url>`; `user17@zulipdev.com` -> `user<id>@zulipdev.com`.
fn redact_text(s: &str) -> String {
    let mut out = s.to_owned();
    while let Some(at) = out.find("http://127.0.0.1:") {
        let port_start = at + "http://127.0.0.1:".len();
        let port_len = out[port_start..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        out.replace_range(at..port_start + port_len, "<url>");
    }
    if let Some(rest) = out.strip_prefix("user") {
        if let Some((digits, domain)) = rest.split_once('@') {
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                out = format!("user<id>@{domain}");
            }
        }
    }
    out
}

fn redact(key: Option<&str>, v: &Value) -> Value {
    match (key, v) {
        (Some("api_key"), Value::String(_)) => "<api_key>".into(),
        (Some("date_joined"), Value::String(_)) => "<date>".into(),
        (Some("zulip_version"), Value::String(_)) => "<version>".into(),
        (Some("user_id" | "bot_owner_id" | "id"), Value::Number(_)) => "<id>".into(),
        (_, Value::String(s)) => redact_text(s).into(),
        (_, Value::Array(items)) => items.iter().map(|i| redact(None, i)).collect(),
        (_, Value::Object(m)) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), redact(Some(k), v)))
                .collect(),
        ),
        _ => v.clone(),
    }
}

/// The compared part of an answer.
fn record(reply: &Reply) -> (Value, Value, Value) {
    let (status, headers, body) = reply;
    let mut h = Map::new();
    for name in ["content-type", "www-authenticate"] {
        if let Some(v) = headers.get(name) {
            h.insert(name.into(), v.to_str().unwrap().into());
        }
    }
    (status.as_u16().into(), Value::Object(h), redact(None, body))
}

#[actix_web::test]
async fn snapshots_match() {
    let files = snapshot_files();
    assert!(
        !files.is_empty(),
        "no snapshots in {}",
        snapshot_dir().display()
    );
    let mut failures = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(file).unwrap();
        let mut snap: Map<String, Value> =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let app = spawn_app().await;
        for step in snap
            .get("setup")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
        {
            let (status, _, body) = perform(&app, &step).await;
            assert!(
                status.is_success(),
                "{name}: setup step {step} failed: {body}"
            );
        }
        let reply = perform(&app, &Value::Object(snap.clone())).await;
        let (status, headers, body) = record(&reply);
        if let Some(running) = app.running {
            running.shutdown().await;
        }
        if updating() {
            snap.insert("status".into(), status);
            snap.insert("headers".into(), headers);
            snap.insert("body".into(), body);
            let out = serde_json::to_string_pretty(&snap).unwrap() + "\n";
            if out != text {
                std::fs::write(file, out).unwrap();
                eprintln!("updated {name}");
            }
            continue;
        }
        let expected = (
            snap.get("status").cloned().unwrap_or_default(),
            snap.get("headers").cloned().unwrap_or_default(),
            snap.get("body").cloned().unwrap_or_default(),
        );
        if (status.clone(), headers.clone(), body.clone()) != expected {
            failures.push(format!(
                "{name}:\n  expected status {} headers {}\n  actual   status {status} headers {headers}\n  expected body {}\n  actual body   {}",
                expected.0,
                expected.1,
                serde_json::to_string_pretty(&expected.2).unwrap(),
                serde_json::to_string_pretty(&body).unwrap(),
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} snapshots differ (UPDATE_SNAPSHOTS=1 rewrites them; review the diff):\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

/// `(METHOD, /full/path)` of every `.route(...)` in the route table.
fn routes() -> Vec<(String, String)> {
    let src = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api/mod.rs"))
        .expect("src/api/mod.rs");
    let literal = |s: &str| -> Option<String> {
        let s = s.trim_start();
        let s = s.strip_prefix('"')?;
        Some(s[..s.find('"')?].to_owned())
    };
    let mut out = Vec::new();
    // Entries look like `endpoint!("/path", get => handler, post => handler)`.
    for (at, _) in src.match_indices("endpoint!(") {
        let after = &src[at + "endpoint!(".len()..];
        let Some(path) = literal(after) else { continue };
        let Some(end) = after.find(')') else { continue };
        let scope = src[..at]
            .rmatch_indices("web::scope(")
            .next()
            .and_then(|(s, _)| literal(&src[s + "web::scope(".len()..]))
            .unwrap_or_default();
        for (arrow, _) in after[..end].match_indices("=>") {
            let method = after[..arrow]
                .trim_end()
                .rsplit([' ', ','])
                .next()
                .unwrap_or_default();
            out.push((method.to_uppercase(), format!("{scope}{path}")));
        }
    }
    assert!(out.len() > 10, "could not read the route table");
    out
}

/// Whether a concrete path matches a route pattern (`{name}` is one segment).
fn matches(pattern: &str, path: &str) -> bool {
    let p: Vec<&str> = pattern.split('/').collect();
    let s: Vec<&str> = path.split('/').collect();
    p.len() == s.len()
        && p.iter()
            .zip(&s)
            .all(|(p, s)| (p.starts_with('{') && p.ends_with('}') && !s.is_empty()) || p == s)
}

#[test]
fn every_route_has_a_snapshot() {
    if updating() {
        // New files get their status from `snapshots_match` in this same run.
        return;
    }
    let routes = routes();
    assert!(routes.len() >= 7, "route table not understood: {routes:?}");
    let snaps: Vec<(String, String, String)> = snapshot_files()
        .iter()
        .map(|f| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            (
                v["method"].as_str().unwrap().to_owned(),
                v["path"].as_str().unwrap().to_owned(),
                v["status"].to_string(),
            )
        })
        .collect();
    let missing: Vec<String> = routes
        .iter()
        .filter(|(m, r)| {
            !snaps
                .iter()
                .any(|(sm, sp, status)| sm == m && matches(r, sp) && status.starts_with('2'))
        })
        .map(|(m, r)| format!("{m} {r}"))
        .collect();
    assert!(
        missing.is_empty(),
        "routes without a successful snapshot in snapshots/: {missing:?}"
    );
}

#[test]
fn redaction() {
    assert_eq!(redact_text("http://127.0.0.1:9991/x"), "<url>/x");
    assert_eq!(redact_text("user17@zulipdev.com"), "user<id>@zulipdev.com");
    assert_eq!(redact_text("user@zulip.com"), "user@zulip.com");
    let v = serde_json::json!({"api_key": "k", "user": {"user_id": 3, "date_joined": "d"}, "n": [{"id": 1}]});
    assert_eq!(
        redact(None, &v),
        serde_json::json!({"api_key": "<api_key>", "user": {"user_id": "<id>", "date_joined": "<date>"}, "n": [{"id": "<id>"}]})
    );
    assert!(matches("/api/v1/users/{user}", "/api/v1/users/10"));
    assert!(!matches("/api/v1/users/{user}", "/api/v1/users"));
    assert!(!matches("/api/v1/users", "/api/v1/users/me"));
}
