//! Shared by the integration tests: a real hearth server on port 0 with a fresh data
//! folder, and an HTTP client that speaks to it the way Zulip clients do.
//!
//! `TEST_LOG=1 cargo test` shows the server's log.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use base64::Engine;
use hearth::config::ServeConfig;
use hearth::Running;
use reqwest::header::HeaderMap;
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::Value;
use tempfile::TempDir;

/// The administrator of the development realm (holds `can_create_users`).
pub const ADMIN: &str = "iago@zulip.com";
/// A member.
pub const MEMBER: &str = "hamlet@zulip.com";
/// The owner (an administrator without `can_create_users`).
pub const OWNER: &str = "desdemona@zulip.com";
/// A guest.
pub const GUEST: &str = "polonius@zulip.com";
/// A generic bot owned by the owner.
pub const BOT: &str = "default-bot@zulip.com";

/// The Basic challenge of `/api/v1/` answers.
pub const BASIC_CHALLENGE: &str = "Basic realm=\"zulip\"";
pub const NOT_LOGGED_IN: &str = "Not logged in: API authentication or user session required";

/// What a request answered: status, headers, JSON body.
pub type Reply = (StatusCode, HeaderMap, Value);

/// How a request authenticates.
#[derive(Debug, Clone, Copy)]
pub enum Auth<'a> {
    /// No `Authorization` header.
    None,
    /// `Basic base64(email:key)`.
    Basic(&'a str, &'a str),
    /// This exact `Authorization` header value.
    Header(&'a str),
}

/// A running server, its data folder and a client.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// Kept alive for the whole test: dropping it deletes the data folder.
    pub dir: TempDir,
    /// `None` only between `stop` and `start`.
    pub running: Option<Running>,
    pub client: reqwest::Client,
    /// API keys fetched so far, by email.
    keys: Mutex<HashMap<String, String>>,
}

static LOG: Once = Once::new();

/// Shows the server's log when `TEST_LOG` is set.
pub fn init_log() {
    LOG.call_once(|| {
        if std::env::var_os("TEST_LOG").is_some() {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env()
                        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
                )
                .with_test_writer()
                .try_init();
        }
    });
}

/// An HTTP client with a timeout, so a hung server fails the test instead of hanging it.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("reqwest client")
}

/// Starts hearth (development realm, no fsync waits) on port 0 in `dir`.
///
/// A restart in the same process may find the database still locked for a moment:
/// `Running::shutdown` returns before the realm actors that own it are dropped (see
/// `persistence::shutdown_releases_the_database`). Only that error is retried.
pub async fn start_server(dir: &Path) -> Running {
    init_log();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match hearth::spawn(ServeConfig::for_tests(dir.to_path_buf())).await {
            Ok(running) => return running,
            Err(e) if is_lock_error(&e.to_string()) && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => panic!("hearth does not start in {}: {e}", dir.display()),
        }
    }
}

/// Whether an error is sled's "database in use by another handle" (`StartError::Locked`
/// at start-up, sled's own text from `Store::open`).
pub fn is_lock_error(msg: &str) -> bool {
    msg.contains("could not acquire lock") || msg.contains("in use by another hearth process")
}

/// Opens the store of a stopped server (retrying while the old handle is released).
pub async fn open_store(dir: &Path) -> hearth::storage::Store {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match hearth::storage::Store::open(dir, hearth::storage::DurabilityMode::Never) {
            Ok(store) => return store,
            Err(e) if is_lock_error(&e.to_string()) && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => panic!("cannot open the store in {}: {e}", dir.display()),
        }
    }
}

/// Starts a fresh development server in a new temporary folder.
/// Must run inside an actix System (`#[actix_web::test]`).
pub async fn spawn_app() -> TestApp {
    let dir = tempfile::tempdir().expect("temp dir");
    spawn_app_in(dir).await
}

/// Starts a server in an existing folder (a restart when it holds data).
pub async fn spawn_app_in(dir: TempDir) -> TestApp {
    let running = start_server(dir.path()).await;
    TestApp {
        url: running.url(),
        dir,
        running: Some(running),
        client: client(),
        keys: Mutex::new(HashMap::new()),
    }
}

/// `Basic base64(email:key)`.
pub fn basic(email: &str, key: &str) -> String {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{email}:{key}"));
    format!("Basic {token}")
}

/// Sends a request and reads its JSON body (panics if the body is not JSON).
pub async fn send(rb: RequestBuilder) -> Reply {
    let resp = rb.send().await.expect("request sent");
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = resp.bytes().await.expect("body read");
    let body = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "status {status}: body is not JSON ({e}): {}",
            String::from_utf8_lossy(&bytes)
        )
    });
    (status, headers, body)
}

/// Applies `auth` to a request.
pub fn with_auth(rb: RequestBuilder, auth: Auth<'_>) -> RequestBuilder {
    match auth {
        Auth::None => rb,
        Auth::Basic(email, key) => rb.header("Authorization", basic(email, key)),
        Auth::Header(h) => rb.header("Authorization", h),
    }
}

impl TestApp {
    /// The running server (panics between `stop` and `start`).
    pub fn server(&self) -> &Running {
        self.running.as_ref().expect("server running")
    }

    /// A request builder for `path` (absolute, e.g. `/api/v1/users`).
    pub fn request(&self, method: Method, path: &str, auth: Auth<'_>) -> RequestBuilder {
        with_auth(
            self.client.request(method, format!("{}{path}", self.url)),
            auth,
        )
    }

    /// GET with query-string parameters.
    pub async fn get(&self, path: &str, auth: Auth<'_>, query: &[(&str, &str)]) -> Reply {
        send(self.request(Method::GET, path, auth).query(query)).await
    }

    /// POST with a form-encoded body.
    pub async fn post(&self, path: &str, auth: Auth<'_>, form: &[(&str, &str)]) -> Reply {
        send(self.request(Method::POST, path, auth).form(form)).await
    }

    /// A user's API key, through `POST /api/v1/dev_fetch_api_key` (cached).
    pub async fn api_key(&self, email: &str) -> String {
        if let Some(k) = self.keys.lock().unwrap().get(email) {
            return k.clone();
        }
        let (status, _, body) = self
            .post(
                "/api/v1/dev_fetch_api_key",
                Auth::None,
                &[("username", email)],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "dev_fetch_api_key {email}: {body}");
        let key = body["api_key"].as_str().expect("api_key").to_owned();
        self.keys
            .lock()
            .unwrap()
            .insert(email.to_owned(), key.clone());
        key
    }

    /// GET as `email` (its key fetched first).
    pub async fn get_as(&self, email: &str, path: &str, query: &[(&str, &str)]) -> Reply {
        let key = self.api_key(email).await;
        self.get(path, Auth::Basic(email, &key), query).await
    }

    /// POST (form body) as `email`.
    pub async fn post_as(&self, email: &str, path: &str, form: &[(&str, &str)]) -> Reply {
        let key = self.api_key(email).await;
        self.post(path, Auth::Basic(email, &key), form).await
    }

    /// Creates a user as the development realm's administrator; returns its id.
    pub async fn create_user(&self, email: &str, password: &str, full_name: &str) -> u64 {
        let (status, _, body) = self
            .post_as(
                ADMIN,
                "/api/v1/users",
                &[
                    ("email", email),
                    ("password", password),
                    ("full_name", full_name),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "create {email}: {body}");
        body["user_id"].as_u64().expect("user_id")
    }

    /// Snapshots and stops the server; the data folder stays.
    pub async fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown().await;
        }
        self.keys.lock().unwrap().clear();
    }

    /// Starts the server again on the same folder (a new port).
    pub async fn start(&mut self) {
        assert!(self.running.is_none(), "already running");
        let running = start_server(self.dir.path()).await;
        self.url = running.url();
        self.running = Some(running);
    }

    /// `stop` then `start`.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.start().await;
    }
}

/// Asserts an error answer: status, `result`, `code`, `msg`.
#[track_caller]
pub fn assert_error(reply: &Reply, status: u16, code: &str, msg: &str) {
    let (s, _, body) = reply;
    assert_eq!(s.as_u16(), status, "status of {body}");
    assert_eq!(body["result"], "error", "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["msg"], msg, "{body}");
}

/// Asserts a success answer (`200`, `result` success, empty `msg`) and returns its body.
#[track_caller]
pub fn assert_success(reply: &Reply) -> &Value {
    let (s, _, body) = reply;
    assert_eq!(*s, StatusCode::OK, "{body}");
    assert_eq!(body["result"], "success", "{body}");
    assert_eq!(body["msg"], "", "{body}");
    body
}

/// The `WWW-Authenticate` header of a reply.
pub fn challenge(reply: &Reply) -> Option<&str> {
    reply
        .1
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
}

/// The sorted keys of a JSON object.
pub fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
    k.sort();
    k
}

/// The sorted list of these names.
pub fn sorted(names: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
    v.sort();
    v
}

/// Polls `f` until it returns `Some`, or panics after `timeout`.
pub async fn poll<T, F, Fut>(timeout: Duration, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
