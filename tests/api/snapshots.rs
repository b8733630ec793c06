//! Golden responses: every exchange in `snapshots/` is replayed against a fresh
//! development server and its answer (status, selected headers, redacted body) compared
//! with the file. `UPDATE_SNAPSHOTS=1 cargo test --test api snapshots::` rewrites the
//! answers.
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
//! - `{var:NAME}` in the path or a parameter value becomes a value saved by an earlier
//!   setup step (an unknown name fails the snapshot).
//! - `params` go in the query string for GET, else in the body; `encoding` may force
//!   `form`, `multipart` or `query`. `files` adds file parts and makes the body
//!   multipart: `{"field": ["name.txt", "contents"]}` (literal contents) or
//!   `{"field": "img.png"}` (a file of `tests/fixtures/`, typed by its extension).
//! - `request_headers`: headers sent as they are; `raw_body`: a text sent as the body
//!   as it is (the tus protocol's requests, `tus-*.json`).
//! - `relay: true`: the server uses a push relay on loopback (`common::start_relay`).
//! - `setup`: requests made first, in order, each of which must succeed; not compared.
//!   A step with `"retry": true` is repeated (for up to 10 s) until it succeeds.
//!   A step may `save` fields of its answer for later steps and the request:
//!   `"save": {"queue": "queue_id", "bot": "/user_id"}` stores the body's `queue_id` as
//!   `{var:queue}`; a field starting with `/` is a JSON pointer into the body. Strings
//!   are saved as they are, other values as JSON text; `header:NAME` saves an answer's
//!   header (a tus upload's `Location`). A field may end in `#N` or
//!   `#N..`: the `/`-separated segment N of the string, or the segments from N on
//!   (`"/url#3.."` of `/user_uploads/2/ab/cd/x.txt` is `ab/cd/x.txt`).
//! - Events: a setup registers a queue (`save` its `queue_id`) for some `event_types`
//!   and makes the writes; the snapshot is then `GET /events` with `last_event_id`
//!   `-1` and `dont_block` (see `events-*.json`).
//! - In bodies, API keys, dates, timestamps, event queue ids, ids, versions and server
//!   addresses are redacted (`<api_key>`, `<date>`, `<timestamp>`, `<queue_id>`, `<id>`,
//!   `<version>`, `<url>`); a queue id the body names is also replaced inside messages.
//!   The random parts of upload paths become `<random>`, temporary-URL tokens and
//!   channel email-address tokens `<token>`, `create_time` `<timestamp>`.
//! - A body that is not JSON (a served file, an HTML error page) is recorded as
//!   `{"raw_body": "<text>"}`.
//! - An answer of the tus protocol (it has `Tus-Resumable`) also records the protocol's
//!   headers; a tus upload's id in them becomes `<id>`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::common::*;
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

/// Values saved by setup steps, by name (`{var:NAME}`).
type Vars = HashMap<String, String>;

/// Replaces every `{var:NAME}` with its saved value.
fn substitute(vars: &Vars, text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("{var:") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').expect("closing brace") + start;
        let name = &rest[start + "{var:".len()..end];
        let value = vars
            .get(name)
            .unwrap_or_else(|| panic!("no saved variable {name:?} (saved: {vars:?})"));
        out.push_str(value);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Stores the fields a setup step asks to `save` from its answer.
fn save(vars: &mut Vars, step: &Value, headers: &reqwest::header::HeaderMap, body: &Value) {
    let Some(wanted) = step.get("save").and_then(Value::as_object) else {
        return;
    };
    for (name, field) in wanted {
        let field = field.as_str().expect("save: NAME -> field or /pointer");
        let (field, segments) = match field.split_once('#') {
            Some((f, spec)) => (f, Some(spec)),
            None => (field, None),
        };
        let header = field.strip_prefix("header:").map(|h| {
            Value::String(
                headers
                    .get(h)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_else(|| panic!("save {name}: no header {h:?}"))
                    .to_owned(),
            )
        });
        let value = if let Some(header) = &header {
            Some(header)
        } else if field.starts_with('/') {
            body.pointer(field)
        } else {
            body.get(field)
        }
        .unwrap_or_else(|| panic!("save {name}: no {field:?} in {body}"));
        let mut text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if let Some(spec) = segments {
            let parts: Vec<&str> = text.split('/').collect();
            text = match spec.strip_suffix("..") {
                Some(from) => parts[from.parse::<usize>().expect("#N..")..].join("/"),
                None => parts[spec.parse::<usize>().expect("#N")].to_owned(),
            };
        }
        vars.insert(name.clone(), text);
    }
}

/// Replaces every `{var:NAME}` with its saved value, then every `{id:EMAIL}` with that
/// user's id.
async fn resolve(app: &TestApp, vars: &Vars, text: &str) -> String {
    let text = substitute(vars, text);
    let mut out = String::new();
    let mut rest = text.as_str();
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
async fn perform(app: &TestApp, vars: &Vars, spec: &Value) -> Reply {
    let method: Method = spec["method"]
        .as_str()
        .expect("method")
        .parse()
        .expect("a method");
    let path = resolve(app, vars, spec["path"].as_str().expect("path")).await;
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
            params.push((k.clone(), resolve(app, vars, v).await));
        }
    }
    let default = if method == Method::GET {
        "query"
    } else {
        "form"
    };
    let files = spec.get("files").and_then(Value::as_object);
    let encoding = match files {
        Some(_) => "multipart",
        None => spec
            .get("encoding")
            .and_then(Value::as_str)
            .unwrap_or(default),
    };
    let mut rb = app.request(method, &path, auth);
    if let Some(headers) = spec.get("request_headers").and_then(Value::as_object) {
        for (name, value) in headers {
            let value = resolve(
                app,
                vars,
                value.as_str().expect("header values are strings"),
            )
            .await;
            rb = rb.header(name.as_str(), value);
        }
    }
    if let Some(raw) = spec.get("raw_body").and_then(Value::as_str) {
        return send_any(rb.body(raw.to_owned())).await;
    }
    let rb = match encoding {
        "query" => rb.query(&params),
        "form" => rb.form(&params),
        "multipart" => {
            let mut form = reqwest::multipart::Form::new();
            for (k, v) in params {
                form = form.text(k, v);
            }
            for (field, file) in files.into_iter().flatten() {
                let part = if let Some(name) = file.as_str() {
                    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join("tests/fixtures")
                        .join(name);
                    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
                    let mime = match path.extension().and_then(|e| e.to_str()) {
                        Some("png") => "image/png",
                        Some("gif") => "image/gif",
                        Some("jpg" | "jpeg") => "image/jpeg",
                        _ => "application/octet-stream",
                    };
                    reqwest::multipart::Part::bytes(bytes)
                        .file_name(name.to_owned())
                        .mime_str(mime)
                        .unwrap()
                } else {
                    let name = file[0].as_str().expect("files: [name, contents]");
                    let contents = file[1].as_str().expect("files: [name, contents]");
                    reqwest::multipart::Part::bytes(contents.as_bytes().to_vec())
                        .file_name(name.to_owned())
                };
                form = form.part(field.clone(), part);
            }
            rb.multipart(form)
        }
        other => panic!("unknown encoding {other:?}"),
    };
    send_any(rb).await
}

/// Sends a request; a body that is not JSON is kept as `{"raw_body": text}`.
async fn send_any(rb: reqwest::RequestBuilder) -> Reply {
    let resp = rb.send().await.expect("request sent");
    let (status, headers) = (resp.status(), resp.headers().clone());
    let bytes = resp.bytes().await.expect("body read");
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| serde_json::json!({"raw_body": String::from_utf8_lossy(&bytes)}));
    (status, headers, body)
}

/// The random parts of an upload path: `<realm>/<2 hex>/<24 random>/name` becomes
/// `<realm>/<random>/name`.
fn redact_upload_path(path: &str) -> Option<String> {
    let mut parts = path.splitn(4, '/');
    let (realm, a, b, name) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let shaped = !realm.is_empty()
        && realm.bytes().all(|c| c.is_ascii_digit())
        && a.len() == 2
        && b.len() == 24;
    shaped.then(|| format!("{realm}/<random>/{name}"))
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
    if let Some(at) = out.find("/user_uploads/temporary/") {
        let start = at + "/user_uploads/temporary/".len();
        if let Some(len) = out[start..].find('/') {
            out.replace_range(start..start + len, "<token>");
        }
    } else if let Some(at) = out.find("/user_uploads/") {
        let start = at + "/user_uploads/".len();
        if let Some(path) = redact_upload_path(&out[start..]) {
            out.replace_range(start.., &path);
        }
    }
    // A tus upload's id.
    if let Some(at) = out.find("/api/v1/tus/") {
        let start = at + "/api/v1/tus/".len();
        let id = &out[start..];
        if id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
            out.replace_range(start.., "<id>");
        }
    }
    // A data export's random token and file name.
    if let Some(at) = out.find("/user_avatars/exports/") {
        let start = at + "/user_avatars/exports/".len();
        if let Some(slash) = out[start..].find('/') {
            out.replace_range(start + slash + 1.., "<token>/<name>");
        }
    }
    // An invitation link's random key, and a sign-up form's token.
    let mut from = 0;
    while let Some(at) = out[from..].find("/join/").map(|i| from + i) {
        let start = at + "/join/".len();
        if out[start..].find('/') == Some(24) {
            out.replace_range(start..start + 24, "<key>");
        }
        from = start;
    }
    let marker = "name=\"csrf_token\" value=\"";
    if let Some(at) = out.find(marker) {
        let start = at + marker.len();
        if let Some(len) = out[start..].find('"') {
            out.replace_range(start..start + len, "<token>");
        }
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
        (
            Some(
                "date_created"
                | "realm_date_created"
                | "server_timestamp"
                | "server_generation"
                | "timestamp"
                | "last_edit_timestamp"
                | "last_moved_timestamp"
                | "edit_timestamp"
                | "active_timestamp"
                | "idle_timestamp"
                | "export_time"
                | "deleted_timestamp"
                | "failed_timestamp"
                | "last_updated",
            ),
            Value::Number(_),
        ) => "<timestamp>".into(),
        (Some("queue_id"), Value::String(_)) => "<queue_id>".into(),
        // A channel's email-gateway address: its random token.
        (Some("email"), Value::String(s)) if s.contains(".show-sender@") => {
            let (local, host) = s.split_once('@').unwrap_or((s, ""));
            let parts: Vec<&str> = local.split('.').collect();
            let redacted: Vec<&str> = parts
                .iter()
                .map(|p| {
                    if p.len() == 32 && p.bytes().all(|b| b.is_ascii_hexdigit()) {
                        "<token>"
                    } else {
                        p
                    }
                })
                .collect();
            format!("{}@{host}", redacted.join(".")).into()
        }
        (Some("create_time"), Value::Number(_)) => "<timestamp>".into(),
        // An invitation's times (`GET /invites`).
        (Some("invited" | "expiry_date"), Value::Number(_)) => "<timestamp>".into(),
        (Some("path_id"), Value::String(s)) => {
            redact_upload_path(s).unwrap_or_else(|| s.clone()).into()
        }
        (Some("zulip_version"), Value::String(_)) => "<version>".into(),
        (
            Some(
                "user_id" | "bot_owner_id" | "id" | "max_id" | "first_processed_id"
                | "last_processed_id",
            ),
            Value::Number(_),
        ) => "<id>".into(),
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

/// The strings under `queue_id` keys anywhere in a body.
fn queue_ids(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("queue_id", Value::String(s)) => out.push(s.clone()),
                    _ => queue_ids(x, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| queue_ids(i, out)),
        _ => {}
    }
}

/// Replaces `needle` with `with` in every string of a body.
fn replace_in_strings(v: &Value, needle: &str, with: &str) -> Value {
    match v {
        Value::String(s) => s.replace(needle, with).into(),
        Value::Array(items) => items
            .iter()
            .map(|i| replace_in_strings(i, needle, with))
            .collect(),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), replace_in_strings(x, needle, with)))
                .collect(),
        ),
        _ => v.clone(),
    }
}

/// `redact`, and the body's event queue ids also where they appear inside text (for
/// example `Bad event queue ID: ...`).
fn redact_body(body: &Value) -> Value {
    let mut ids = Vec::new();
    queue_ids(body, &mut ids);
    let mut out = redact(None, body);
    for id in ids.iter().filter(|id| !id.is_empty()) {
        out = replace_in_strings(&out, id, "<queue_id>");
    }
    out
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
    if headers.contains_key("tus-resumable") {
        for name in [
            "tus-resumable",
            "tus-version",
            "tus-extension",
            "tus-max-size",
            "location",
            "upload-offset",
            "upload-length",
            "upload-metadata",
            "cache-control",
        ] {
            if let Some(v) = headers.get(name) {
                h.insert(name.into(), redact_text(v.to_str().unwrap()).into());
            }
        }
    }
    (status.as_u16().into(), Value::Object(h), redact_body(body))
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
        let relay = snap.get("relay") == Some(&Value::Bool(true));
        let app = if relay {
            let (url, _, _) = start_relay();
            TestApp::spawn_configured(tempfile::tempdir().unwrap(), move |c| {
                c.push_relay_url = Some(url.clone())
            })
            .await
        } else {
            TestApp::spawn().await
        };
        let mut vars = Vars::new();
        for step in snap
            .get("setup")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
        {
            // A step with `"retry": true` is repeated until it succeeds (something the
            // server does in the background, such as registering a push device).
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            // A step with `"until": "/json/pointer"` is repeated until that field of its
            // answer is there and not null (work the server finishes in the background,
            // such as a data export).
            let until = step.get("until").and_then(Value::as_str);
            let (status, headers, body) = loop {
                let reply = perform(&app, &vars, &step).await;
                let retry = step.get("retry") == Some(&Value::Bool(true)) || until.is_some();
                let done = reply.0.is_success()
                    && until.is_none_or(|p| reply.2.pointer(p).is_some_and(|v| !v.is_null()));
                if done || !retry || std::time::Instant::now() > deadline {
                    break reply;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            };
            assert!(
                status.is_success(),
                "{name}: setup step {step} failed: {body}"
            );
            save(&mut vars, &step, &headers, &body);
        }
        let reply = perform(&app, &vars, &Value::Object(snap.clone())).await;
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

/// Whether a concrete path matches a route pattern (`{name}` is one segment, a last
/// `{name:.*}` one or more).
fn matches(pattern: &str, path: &str) -> bool {
    let p: Vec<&str> = pattern.split('/').collect();
    let mut s: Vec<String> = path.split('/').map(str::to_owned).collect();
    if p.last().is_some_and(|l| l.ends_with(":.*}")) && s.len() > p.len() {
        let tail = s.split_off(p.len() - 1).join("/");
        s.push(tail);
    }
    p.len() == s.len()
        && p.iter()
            .zip(&s)
            .all(|(p, s)| (p.starts_with('{') && p.ends_with('}') && !s.is_empty()) || p == s)
}

/// Routes no golden exchange can succeed on, each tested elsewhere: the sign-up form's
/// POST needs the token of the page it came from (`tests/api/invites.rs` drives it).
const NO_GOLDEN: &[(&str, &str)] = &[
    ("POST", "/join/{key}/"),
    // A redirect to `/join/{key}/` (`invites::a_link_without_its_last_slash_goes_to_its_page`).
    ("GET", "/join/{key}"),
    // An image, not an answer with a shape (`server::the_realm_icon_and_the_favicon_are_served`).
    ("GET", "/static/images/logo/zulip-icon-128x128.png"),
    ("GET", "/favicon.ico"),
    // Its body is the emoji table itself (`src/realm/emoji_codes.tsv`) as JSON, a golden
    // copy of that file; `mobile_app::server_emoji_data_is_served` checks its shape.
    ("GET", "/static/generated/emoji/emoji_api.json"),
    // The web client's login pages and forms: HTML and redirects with cookies, tested
    // with a browser's cookie jar in `web_sessions`.
    ("GET", "/login/"),
    ("GET", "/accounts/login/"),
    ("POST", "/accounts/login/"),
    ("POST", "/accounts/logout/"),
    ("GET", "/devlogin/"),
    ("POST", "/accounts/login/local/"),
    // Password reset's pages and forms (`password_reset`, with an SMTP receiver).
    ("GET", "/accounts/password/reset/"),
    ("POST", "/accounts/password/reset/"),
    ("GET", "/accounts/password/reset/done/"),
    ("GET", "/accounts/password/reset/{user_id}/{token}/"),
    ("POST", "/accounts/password/reset/{user_id}/{token}/"),
    // The web client's page and assets (`web_sessions`, and the browser tests).
    ("GET", "/"),
    ("GET", "/static/app/{file:.*}"),
];
/// Routes hearth can never answer with a success, and why: their snapshots record the
/// error instead.
const NEVER_SUCCEED: [(&str, &str, &str); 2] = [
    (
        "GET",
        "/calls/bigbluebutton/create",
        "no video-call provider can be configured: Zulip's \"not configured\" error",
    ),
    (
        "POST",
        "/calls/constructorgroups/create",
        "no video-call provider can be configured: Zulip's \"not configured\" error",
    ),
];

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
        .filter(|(m, r)| !NO_GOLDEN.contains(&(m.as_str(), r.as_str())))
        .filter(|(m, r)| {
            // Routes that cannot succeed need a snapshot of their answer all the same.
            let never = NEVER_SUCCEED
                .iter()
                .any(|(nm, nr, _)| nm == m && format!("/api/v1{nr}") == *r);
            !snaps.iter().any(|(sm, sp, status)| {
                sm == m && matches(r, sp) && (never || status.starts_with('2'))
            })
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
    let v = serde_json::json!({"queue_id": "1:2", "date_created": 1700000000, "stream": {"date_created": null}});
    assert_eq!(
        redact(None, &v),
        serde_json::json!({"queue_id": "<queue_id>", "date_created": "<timestamp>", "stream": {"date_created": null}})
    );
    let v = serde_json::json!({"msg": "Bad event queue ID: 17:3", "queue_id": "17:3"});
    assert_eq!(
        redact_body(&v),
        serde_json::json!({"msg": "Bad event queue ID: <queue_id>", "queue_id": "<queue_id>"})
    );
    let mut vars = Vars::new();
    let none = reqwest::header::HeaderMap::new();
    save(
        &mut vars,
        &serde_json::json!({"save": {"q": "queue_id", "n": "/a/0"}}),
        &none,
        &serde_json::json!({"queue_id": "abc", "a": [7]}),
    );
    assert_eq!(substitute(&vars, "{var:q}/{var:n}/{id:x}"), "abc/7/{id:x}");
    save(
        &mut vars,
        &serde_json::json!({"save": {"rest": "url#3..", "one": "/url#2"}}),
        &none,
        &serde_json::json!({"url": "/user_uploads/2/ab/cd/x.txt"}),
    );
    assert_eq!(substitute(&vars, "{var:one}|{var:rest}"), "2|ab/cd/x.txt");
    assert!(matches("/api/v1/users/{user}", "/api/v1/users/10"));
    assert!(!matches("/api/v1/users/{user}", "/api/v1/users"));
    assert!(!matches("/api/v1/users", "/api/v1/users/me"));
    assert!(matches(
        "/user_uploads/{realm_id}/{path:.*}",
        "/user_uploads/2/ab/cd/x.txt"
    ));
    assert!(!matches(
        "/user_uploads/{realm_id}/{path:.*}",
        "/user_uploads/2"
    ));
    assert_eq!(
        redact_text("/user_uploads/2/ab/0123456789abcdefghijklmn/x.txt"),
        "/user_uploads/2/<random>/x.txt"
    );
    assert_eq!(
        redact_text("/user_uploads/temporary/ABCD/x.txt"),
        "/user_uploads/temporary/<token>/x.txt"
    );
    assert!(matches("/api/v1/views/{fragment:.*}", "/api/v1/views/a/b"));
    assert!(matches("/api/v1/views/{fragment:.*}", "/api/v1/views/a"));
    assert!(!matches("/api/v1/views/{fragment:.*}", "/api/v1/views"));
}
