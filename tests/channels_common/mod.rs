//! A real hearth server for the channel tests: start, restart on the same data
//! folder, authenticated requests, event queues.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_arguments,
    dead_code
)]

use std::collections::HashMap;
use std::path::PathBuf;

use hearth::config::ServeConfig;
use serde_json::Value;

/// The test configuration without the heartbeat ticker: the ticker task holds the
/// server state (and so the database lock) until the actix System ends, which would
/// keep a restart in the same test from opening the data folder again.
fn config(dir: &std::path::Path) -> ServeConfig {
    let mut c = ServeConfig::for_tests(PathBuf::from(dir));
    c.tick = false;
    c
}

pub struct Server {
    pub dir: tempfile::TempDir,
    pub running: Option<hearth::Running>,
    pub url: String,
    pub http: reqwest::Client,
    keys: HashMap<String, String>,
}

impl Server {
    pub async fn start() -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let running = hearth::spawn(config(dir.path())).await.expect("spawn");
        let url = running.url();
        Server {
            dir,
            running: Some(running),
            url,
            http: reqwest::Client::new(),
            keys: HashMap::new(),
        }
    }

    /// Shuts down and starts again on the same data folder.
    pub async fn restart(&mut self) {
        if let Some(r) = self.running.take() {
            r.shutdown().await;
        }
        // The old realm actors release the database when their arbiters stop.
        let mut tries = 0;
        let running = loop {
            match hearth::spawn(config(self.dir.path())).await {
                Ok(r) => break r,
                Err(e) if tries < 100 => {
                    tries += 1;
                    let _ = e;
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                Err(e) => panic!("respawn: {e}"),
            }
        };
        self.url = running.url();
        self.running = Some(running);
    }

    pub async fn key(&mut self, email: &str) -> String {
        if let Some(k) = self.keys.get(email) {
            return k.clone();
        }
        let r = self
            .http
            .post(format!("{}/api/v1/dev_fetch_api_key", self.url))
            .form(&[("username", email)])
            .send()
            .await
            .expect("fetch key");
        let body: Value = r.json().await.expect("json");
        let key = body["api_key"].as_str().expect("api_key").to_owned();
        self.keys.insert(email.to_owned(), key.clone());
        key
    }

    /// An authenticated request; params go in the query for GET, the form otherwise.
    pub async fn call(
        &mut self,
        method: &str,
        path: &str,
        email: &str,
        params: &[(&str, &str)],
    ) -> (u16, Value) {
        let key = self.key(email).await;
        let url = format!("{}/api/v1{}", self.url, path);
        let m = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut rb = self
            .http
            .request(m.clone(), url)
            .basic_auth(email, Some(key));
        rb = if m == reqwest::Method::GET {
            rb.query(params)
        } else {
            rb.form(params)
        };
        let r = rb.send().await.expect("send");
        let status = r.status().as_u16();
        let body: Value = r.json().await.expect("json body");
        (status, body)
    }

    /// Asserts a success and returns the body.
    pub async fn ok(
        &mut self,
        method: &str,
        path: &str,
        email: &str,
        params: &[(&str, &str)],
    ) -> Value {
        let (status, body) = self.call(method, path, email, params).await;
        assert_eq!(status, 200, "{method} {path} as {email}: {body}");
        assert_eq!(body["result"], "success", "{body}");
        body
    }

    /// Asserts an error with this status, code and msg; returns the body.
    pub async fn err(
        &mut self,
        method: &str,
        path: &str,
        email: &str,
        params: &[(&str, &str)],
        status: u16,
        code: &str,
        msg: &str,
    ) -> Value {
        let (s, body) = self.call(method, path, email, params).await;
        assert_eq!(s, status, "{method} {path} as {email}: {body}");
        assert_eq!(body["result"], "error", "{body}");
        assert_eq!(body["code"], code, "{body}");
        assert_eq!(body["msg"], msg, "{body}");
        body
    }

    /// Registers an event queue for `email`; returns its id.
    pub async fn register(&mut self, email: &str, params: &[(&str, &str)]) -> String {
        let body = self.ok("POST", "/register", email, params).await;
        body["queue_id"].as_str().expect("queue_id").to_owned()
    }

    /// The events waiting in a queue (never blocks).
    pub async fn events(&mut self, email: &str, queue: &str) -> Vec<Value> {
        let body = self
            .ok(
                "GET",
                "/events",
                email,
                &[
                    ("queue_id", queue),
                    ("last_event_id", "-1"),
                    ("dont_block", "true"),
                ],
            )
            .await;
        body["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["type"] != "heartbeat")
            .cloned()
            .collect()
    }

    /// The id of a channel by name (as iago sees it).
    pub async fn stream_id(&mut self, name: &str) -> i64 {
        let body = self
            .ok("GET", "/get_stream_id", IAGO, &[("stream", name)])
            .await;
        body["stream_id"].as_i64().expect("stream_id")
    }

    /// A user's id.
    pub async fn user_id(&mut self, email: &str) -> i64 {
        let body = self.ok("GET", "/users/me", email, &[]).await;
        body["user_id"].as_i64().expect("user_id")
    }

    /// A request whose answer has a golden counterpart in `snapshots/channels-<name>.json`
    /// (replayed and compared by `tests/snapshots.rs`).
    pub async fn snap(
        &mut self,
        name: &str,
        method: &str,
        path: &str,
        email: &str,
        params: &[(&str, &str)],
    ) -> (u16, Value) {
        let _ = name;
        self.call(method, path, email, params).await
    }

    pub async fn shutdown(mut self) {
        if let Some(r) = self.running.take() {
            r.shutdown().await;
        }
    }
}

pub const DESDEMONA: &str = "desdemona@zulip.com";
pub const IAGO: &str = "iago@zulip.com";
pub const SHIVA: &str = "shiva@zulip.com";
pub const HAMLET: &str = "hamlet@zulip.com";
pub const CORDELIA: &str = "cordelia@zulip.com";
pub const POLONIUS: &str = "polonius@zulip.com";
pub const OTHELLO: &str = "othello@zulip.com";
pub const PROSPERO: &str = "prospero@zulip.com";
pub const DEFAULT_BOT: &str = "default-bot@zulip.com";
