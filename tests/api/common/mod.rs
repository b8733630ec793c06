//! The one harness of the integration tests: a real hearth server on port 0 with a
//! fresh data folder, and an HTTP client that speaks to it the way Zulip clients do.
//!
//! - Start: `TestApp::spawn()` (development realm, new temporary folder),
//!   `TestApp::spawn_in(dir)` (an existing folder, e.g. a fixture), or
//!   `TestApp::spawn_with_clock(clock)` (an injected `ManualClock`, no background
//!   ticker: the test moves time with `clock.advance_ms` and ticks the event hub with
//!   `tick`), `spawn_durable()` (`--durability always`), `spawn_configured(dir, tweak)`
//!   (any other configuration, kept across restarts). `stop`, `start` and `restart`
//!   reuse the same folder (and clock). Every start goes through `start_server_with`,
//!   which retries only sled's lock error. `spawn_two_realms` serves the development realm and
//!   a second realm from one folder; the `Host` header then selects the realm
//!   (`DEV_HOST` on every request, `request_on(host, ...)` for the other).
//! - Authenticate: `api_key(email)` (cached per start), or `Auth` for literal
//!   credentials and headers.
//! - Call: `call(method, path, email, params)` as a user (params in the query for GET,
//!   in the form otherwise; paths are absolute, `/api/v1/...`) answers `(status, body)`;
//!   `get`/`post` take an `Auth` and answer the headers too (`Reply`), `get_as`/`post_as`
//!   as a user. `ok` and `err` call and assert success, or an error's status, code and
//!   msg (`assert_success` and `assert_error` check a `Reply` the same way).
//! - Events: `register(email, params)` answers a queue id, `events(email, queue)` what
//!   waits in it.
//!
//! - Push: `start_relay()` runs a push relay on loopback for `--push-relay-url`.
//! - Role tables: a `Case` per caller and request, made with `ok`, `bad`, `coded`,
//!   `missing`, `not_admin`, `not_owner` (parameters with `p`), sent by `run_cases`.
//!   The development realm's people (`HAMLET`, `HAMLET_ID`, ...), its system groups
//!   (`NOBODY` 1 ... `INTERNET` 8), Zulip's role refusals (`NOT_ADMIN`, ...), and the
//!   `ManualClock` start (`START_MS`) are named here once.
//!
//! Golden responses live in `snapshots/` and are replayed by `snapshots.rs`.
//!
//! `TEST_LOG=1 cargo test` shows the server's log.

#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod child;
pub mod smtp;

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use actix_web::dev::ServerHandle;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use base64::Engine;
use hearth::config::{DurabilityArg, ServeConfig};
use hearth::realm::ManualClock;
use hearth::Running;
use reqwest::header::HeaderMap;
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{json, Map, Value};
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

// The development realm's people by name (`ADMIN` is `IAGO`, `MEMBER` is `HAMLET`,
// `OWNER` is `DESDEMONA`, `GUEST` is `POLONIUS`, `BOT` is `DEFAULT_BOT`).
pub const DESDEMONA: &str = OWNER;
pub const IAGO: &str = ADMIN;
pub const SHIVA: &str = "shiva@zulip.com";
pub const HAMLET: &str = MEMBER;
pub const CORDELIA: &str = "cordelia@zulip.com";
pub const POLONIUS: &str = GUEST;
pub const OTHELLO: &str = "othello@zulip.com";
pub const PROSPERO: &str = "prospero@zulip.com";
pub const DEFAULT_BOT: &str = BOT;
/// A member who owns the incoming webhook bot `WEBHOOK_BOT`.
pub const ZOE: &str = "ZOE@zulip.com";
/// A member who owns the outgoing webhook bot `OUTGOING_BOT`.
pub const AARON: &str = "AARON@zulip.com";
pub const WEBHOOK_BOT: &str = "webhook-bot@zulip.com";
pub const OUTGOING_BOT: &str = "outgoing-webhook@zulip.com";

// Their user ids.
pub const CORDELIA_ID: i64 = 8;
pub const DESDEMONA_ID: i64 = 9;
pub const HAMLET_ID: i64 = 10;
pub const IAGO_ID: i64 = 11;
pub const OTHELLO_ID: i64 = 12;
pub const POLONIUS_ID: i64 = 13;
pub const PROSPERO_ID: i64 = 14;
pub const SHIVA_ID: i64 = 15;
/// `DEFAULT_BOT`.
pub const BOT_ID: i64 = 16;

// The development realm's system groups by id (`role:nobody` ... `role:internet`);
// groups that tests create come next, from 9.
pub const NOBODY: i64 = 1;
pub const OWNERS: i64 = 2;
pub const ADMINS: i64 = 3;
pub const MODERATORS: i64 = 4;
pub const FULL_MEMBERS: i64 = 5;
pub const MEMBERS: i64 = 6;
pub const EVERYONE: i64 = 7;
pub const INTERNET: i64 = 8;
/// The development realm's one named group, "hamletcharacters" (cordelia and hamlet);
/// groups a test creates get ids after it.
pub const HAMLET_CHARACTERS: i64 = 9;

/// Where a `ManualClock` starts, in milliseconds (`ManualClock::new(START_MS)`).
pub const START_MS: i64 = 1_800_000_000_000;
/// `START_MS` in seconds, as answers show times.
pub const START: i64 = START_MS / 1000;

/// The Basic challenge of `/api/v1/` answers.
pub const BASIC_CHALLENGE: &str = "Basic realm=\"zulip\"";
pub const NOT_LOGGED_IN: &str = "Not logged in: API authentication or user session required";
/// Zulip's texts for a caller without the role (`UNAUTHORIZED_PRINCIPAL`, and
/// `BAD_REQUEST` for `INSUFFICIENT`).
pub const NOT_ADMIN: &str = "Must be an organization administrator";
pub const NOT_OWNER: &str = "Must be an organization owner";
pub const INSUFFICIENT: &str = "Insufficient permission";

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
    /// The injected clock, when started with `spawn_with_clock`.
    pub clock: Option<ManualClock>,
    /// Applied to the test configuration at every start (`spawn_configured`).
    tweak: ConfigTweak,
    /// API keys fetched so far, by email.
    keys: Mutex<HashMap<String, String>>,
    /// The `Host` header of every request, when the server holds several realms
    /// (`spawn_two_realms`); else the URL's host.
    host: Option<String>,
}

/// The `Host` that selects the development realm when the server holds several.
pub const DEV_HOST: &str = "zulip.localhost";

/// A second realm on the same server and data folder (`TestApp::spawn_two_realms`).
pub struct OtherRealm {
    /// The `Host` header that selects it (`<subdomain>.localhost`).
    pub host: String,
    pub owner_email: String,
    pub owner_key: String,
    pub owner_id: u64,
}

/// A change to the test configuration (`TestApp::spawn_configured`).
type ConfigTweak = Arc<dyn Fn(&mut ServeConfig) + Send + Sync>;

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

/// Starts hearth with this configuration (and this clock, if any).
///
/// A restart in the same process may find the database still locked for a moment:
/// `Running::shutdown` returns before the realm actors that own it are dropped (see
/// `persistence::shutdown_releases_the_database`). Only that error is retried; any
/// other is reported with the folder.
pub async fn start_server_with(config: ServeConfig, clock: Option<&ManualClock>) -> Running {
    init_log();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let started = match clock {
            Some(clock) => hearth::spawn_with_clock(config.clone(), Arc::new(clock.clone())).await,
            None => hearth::spawn(config.clone()).await,
        };
        match started {
            Ok(running) => return running,
            Err(e) if is_lock_error(&e.to_string()) && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => panic!("hearth does not start in {}: {e}", config.data.display()),
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

/// `Basic base64(email:key)`.
pub fn basic(email: &str, key: &str) -> String {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{email}:{key}"));
    format!("Basic {token}")
}

/// Sends a request and reads its JSON body (panics if the body is not JSON).
/// A development-realm user's API key from a server at `url` (a child server's,
/// say), through `POST /api/v1/dev_fetch_api_key`.
pub async fn dev_key_at(url: &str, email: &str) -> String {
    let (status, _, body) = send(
        client()
            .post(format!("{url}/api/v1/dev_fetch_api_key"))
            .form(&[("username", email)]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "dev_fetch_api_key {email}: {body}");
    body["api_key"].as_str().expect("api_key").to_owned()
}

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
    /// Starts a fresh development server in a new temporary folder.
    /// Must run inside an actix System (`#[actix_web::test]`).
    pub async fn spawn() -> TestApp {
        TestApp::spawn_in(tempfile::tempdir().expect("temp dir")).await
    }

    /// Starts a server in an existing folder (a restart when it holds data).
    pub async fn spawn_in(dir: TempDir) -> TestApp {
        TestApp::spawn_from(dir, None).await
    }

    /// Starts a fresh development server whose time is `clock`. The background ticker is
    /// off: `tick` runs the event hub's timers (heartbeats, queue expiry) by hand.
    pub async fn spawn_with_clock(clock: ManualClock) -> TestApp {
        TestApp::spawn_from(tempfile::tempdir().expect("temp dir"), Some(clock)).await
    }

    /// `spawn_with_clock` with a changed configuration (as `spawn_configured`).
    pub async fn spawn_configured_with_clock(
        clock: ManualClock,
        tweak: impl Fn(&mut ServeConfig) + Send + Sync + 'static,
    ) -> TestApp {
        let dir = tempfile::tempdir().expect("temp dir");
        TestApp::spawn_from_with(dir, Some(clock), Arc::new(tweak)).await
    }

    /// Starts a fresh development server in `--durability always` mode: every write is
    /// answered after its flush (tests of what becomes visible when).
    pub async fn spawn_durable() -> TestApp {
        let dir = tempfile::tempdir().expect("temp dir");
        TestApp::spawn_configured(dir, |c| c.durability = DurabilityArg::Always).await
    }

    /// Starts a server in `dir` with the test configuration changed by `tweak`, at this
    /// start and every later one (restarts keep it).
    pub async fn spawn_configured(
        dir: TempDir,
        tweak: impl Fn(&mut ServeConfig) + Send + Sync + 'static,
    ) -> TestApp {
        TestApp::spawn_from_with(dir, None, Arc::new(tweak)).await
    }

    async fn spawn_from(dir: TempDir, clock: Option<ManualClock>) -> TestApp {
        TestApp::spawn_from_with(dir, clock, Arc::new(|_: &mut ServeConfig| {})).await
    }

    async fn spawn_from_with(
        dir: TempDir,
        clock: Option<ManualClock>,
        tweak: ConfigTweak,
    ) -> TestApp {
        let config = TestApp::config(dir.path(), &clock, &tweak);
        let running = start_server_with(config, clock.as_ref()).await;
        TestApp {
            url: running.url(),
            dir,
            running: Some(running),
            client: client(),
            clock,
            tweak,
            keys: Mutex::new(HashMap::new()),
            host: None,
        }
    }

    /// Starts one server holding two realms on one data folder: the development realm
    /// and a production realm `subdomain` owned by `owner_email` (made as `hearth realm
    /// create` makes it, before the first start). With two realms the `Host` header
    /// selects one: every request of this harness carries `DEV_HOST`; `request_on`
    /// reaches the other realm. `tweak` changes the configuration as in
    /// `spawn_configured`.
    pub async fn spawn_two_realms(
        subdomain: &str,
        owner_email: &str,
        tweak: impl Fn(&mut ServeConfig) + Send + Sync + 'static,
    ) -> (TestApp, OtherRealm) {
        let dir = tempfile::tempdir().expect("temp dir");
        let create = hearth::config::CreateRealm {
            subdomain: subdomain.to_owned(),
            name: format!("Realm {subdomain}"),
            owner_email: owner_email.to_owned(),
            owner_name: None,
            owner_password: None,
            data: dir.path().to_path_buf(),
            url: format!("http://{subdomain}.localhost"),
            zuliprc: dir.path().join("zuliprc"),
        };
        let (owner_key, owner_id) =
            hearth::create_production_realm(&create).expect("second realm created");
        let mut app = TestApp::spawn_from_with(dir, None, Arc::new(tweak)).await;
        app.host = Some(DEV_HOST.to_owned());
        let other = OtherRealm {
            host: format!("{subdomain}.localhost"),
            owner_email: owner_email.to_owned(),
            owner_key,
            owner_id,
        };
        (app, other)
    }

    /// A request builder for `path` on the realm `host` selects.
    pub fn request_on(
        &self,
        host: &str,
        method: Method,
        path: &str,
        auth: Auth<'_>,
    ) -> RequestBuilder {
        with_auth(
            self.client
                .request(method, format!("{}{path}", self.url))
                .header(reqwest::header::HOST, host),
            auth,
        )
    }

    /// The test configuration; without the heartbeat ticker when the clock is manual.
    fn config(dir: &Path, clock: &Option<ManualClock>, tweak: &ConfigTweak) -> ServeConfig {
        let mut config = ServeConfig::for_tests(dir.to_path_buf());
        config.tick = clock.is_none();
        tweak(&mut config);
        config
    }

    /// The injected clock (panics unless started with `spawn_with_clock`).
    pub fn clock(&self) -> &ManualClock {
        self.clock.as_ref().expect("started with spawn_with_clock")
    }

    /// Runs the development realm's event-hub timers once (heartbeats, queue expiry).
    pub fn tick(&self) {
        self.server()
            .hub("localhost")
            .expect("the development realm")
            .tick();
    }

    /// Delivers the scheduled messages that are due now (the ticker's other job); waits
    /// until they are visible.
    pub async fn deliver_scheduled(&self) {
        // The actor leaves deliveries to a later tick until the message database opens.
        self.server()
            .message_db()
            .ready()
            .await
            .expect("the message database opens");
        let actor = self
            .server()
            .realm("localhost")
            .expect("the development realm");
        let n = actor
            .send(hearth::actor::DeliverScheduled)
            .await
            .expect("realm actor");
        if n > 0 {
            // Visible once durable: a read after this sees the delivery.
            let hub = self.server().hub("localhost").expect("hub");
            let durability = self.server().durability();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while hub.staged_len() > 0 && std::time::Instant::now() < deadline {
                hub.release(durability.visible());
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
        }
    }

    /// The running server (panics between `stop` and `start`).
    pub fn server(&self) -> &Running {
        self.running.as_ref().expect("server running")
    }

    /// A request builder for `path` (absolute, e.g. `/api/v1/users`).
    pub fn request(&self, method: Method, path: &str, auth: Auth<'_>) -> RequestBuilder {
        match &self.host {
            Some(host) => self.request_on(host, method, path, auth),
            None => with_auth(
                self.client.request(method, format!("{}{path}", self.url)),
                auth,
            ),
        }
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

    /// A request as `email` (its key fetched first): `params` go in the query string for
    /// GET, in a form body otherwise.
    pub async fn send_as(
        &self,
        method: Method,
        path: &str,
        email: &str,
        params: &[(&str, &str)],
    ) -> Reply {
        let key = self.api_key(email).await;
        let rb = self.request(method.clone(), path, Auth::Basic(email, &key));
        send(if method == Method::GET {
            rb.query(params)
        } else {
            rb.form(params)
        })
        .await
    }

    /// GET as `email`.
    pub async fn get_as(&self, email: &str, path: &str, query: &[(&str, &str)]) -> Reply {
        self.send_as(Method::GET, path, email, query).await
    }

    /// POST (form body) as `email`.
    pub async fn post_as(&self, email: &str, path: &str, form: &[(&str, &str)]) -> Reply {
        self.send_as(Method::POST, path, email, form).await
    }

    /// `method` (`"GET"`, `"PATCH"`, ...) on `path` as `email`: status and body.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        email: &str,
        params: &[(&str, &str)],
    ) -> (u16, Value) {
        let (status, _, body) = self
            .send_as(method_named(method), path, email, params)
            .await;
        (status.as_u16(), body)
    }

    /// `call`, asserting a success (see `assert_success`); returns the body.
    pub async fn ok(
        &self,
        method: &str,
        path: &str,
        email: &str,
        params: &[(&str, &str)],
    ) -> Value {
        let reply = self
            .send_as(method_named(method), path, email, params)
            .await;
        check_success(&reply, &format!("{method} {path} as {email}"));
        reply.2
    }

    /// `call`, asserting an error with this status, code and msg; returns the body.
    #[allow(clippy::too_many_arguments)]
    pub async fn err(
        &self,
        method: &str,
        path: &str,
        email: &str,
        params: &[(&str, &str)],
        status: u16,
        code: &str,
        msg: &str,
    ) -> Value {
        let reply = self
            .send_as(method_named(method), path, email, params)
            .await;
        check_error(
            &reply,
            status,
            code,
            msg,
            &format!("{method} {path} as {email}"),
        );
        reply.2
    }

    /// `err` for a 400 `BAD_REQUEST` with this msg.
    pub async fn bad(
        &self,
        method: &str,
        path: &str,
        email: &str,
        params: &[(&str, &str)],
        msg: &str,
    ) -> Value {
        self.err(method, path, email, params, 400, "BAD_REQUEST", msg)
            .await
    }

    /// Registers an event queue for `email`; returns its id.
    pub async fn register(&self, email: &str, params: &[(&str, &str)]) -> String {
        let body = self.ok("POST", "/api/v1/register", email, params).await;
        body["queue_id"].as_str().expect("queue_id").to_owned()
    }

    /// The events waiting in a queue, heartbeats left out (never blocks).
    pub async fn events(&self, email: &str, queue: &str) -> Vec<Value> {
        let params = [
            ("queue_id", queue),
            ("last_event_id", "-1"),
            ("dont_block", "true"),
        ];
        let body = self.ok("GET", "/api/v1/events", email, &params).await;
        body["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["type"] != "heartbeat")
            .cloned()
            .collect()
    }

    /// The id of a channel by name, archived and private ones included (from the
    /// administrator's `GET /streams?include_all=true`: `GET /get_stream_id` needs
    /// access to the channel's content, which administrators lack outside private
    /// channels).
    pub async fn stream_id(&self, name: &str) -> i64 {
        let body = self
            .ok(
                "GET",
                "/api/v1/streams",
                ADMIN,
                &[("include_all", "true"), ("exclude_archived", "false")],
            )
            .await;
        body["streams"]
            .as_array()
            .expect("streams")
            .iter()
            .find(|s| {
                s["name"]
                    .as_str()
                    .is_some_and(|n| n.to_lowercase() == name.trim().to_lowercase())
            })
            .and_then(|s| s["stream_id"].as_i64())
            .unwrap_or_else(|| panic!("no channel named {name}"))
    }

    /// A user's id.
    pub async fn user_id(&self, email: &str) -> i64 {
        let body = self.ok("GET", "/api/v1/users/me", email, &[]).await;
        body["user_id"].as_i64().expect("user_id")
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
        let config = TestApp::config(self.dir.path(), &self.clock, &self.tweak);
        let running = start_server_with(config, self.clock.as_ref()).await;
        self.url = running.url();
        self.running = Some(running);
    }

    /// `stop` then `start`.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.start().await;
    }
}

/// The `name` of every object in a JSON list (channels, subscriptions, folders).
pub fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|s| s["name"].as_str().expect("a name").to_owned())
        .collect()
}

/// A method by name (`"GET"`, `"PATCH"`, ...).
fn method_named(method: &str) -> Method {
    Method::from_bytes(method.as_bytes()).expect("an HTTP method")
}

/// Asserts an error answer: status, `result`, `code`, `msg`.
#[track_caller]
pub fn assert_error(reply: &Reply, status: u16, code: &str, msg: &str) {
    check_error(reply, status, code, msg, "");
}

/// Asserts a success answer (`200`, `result` success, empty `msg`) and returns its body.
#[track_caller]
pub fn assert_success(reply: &Reply) -> &Value {
    check_success(reply, "");
    &reply.2
}

/// `assert_error`, naming the request (`what`) in failures.
#[track_caller]
fn check_error(reply: &Reply, status: u16, code: &str, msg: &str, what: &str) {
    let (s, _, body) = reply;
    assert_eq!(s.as_u16(), status, "{what}: status of {body}");
    assert_eq!(body["result"], "error", "{what}: {body}");
    assert_eq!(body["code"], code, "{what}: {body}");
    assert_eq!(body["msg"], msg, "{what}: {body}");
}

/// `assert_success`, naming the request (`what`) in failures.
#[track_caller]
fn check_success(reply: &Reply, what: &str) {
    let (s, _, body) = reply;
    assert_eq!(*s, StatusCode::OK, "{what}: {body}");
    assert_eq!(body["result"], "success", "{what}: {body}");
    assert_eq!(body["msg"], "", "{what}: {body}");
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

// ---- a push relay on loopback ------------------------------------------------------

/// What the loopback push relay answers, and what it was sent.
#[derive(Default)]
pub struct RelayState {
    /// Answers to registrations, in turn (the last one repeats): status and body.
    pub register: Vec<(u16, Value)>,
    /// The answer to notifications (E2EE ones and legacy test notifications).
    pub notify: (u16, Value),
    /// Every request: path, `Authorization` header, body.
    pub seen: Vec<(String, String, String)>,
}

pub type Shared = Arc<Mutex<RelayState>>;

async fn relay_answer(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<Shared>,
) -> HttpResponse {
    let mut st = state.lock().unwrap();
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let path = req.path().to_owned();
    st.seen.push((
        path.clone(),
        auth,
        String::from_utf8_lossy(&body).into_owned(),
    ));
    let (status, body) = match path.as_str() {
        "/api/v1/remotes/push/e2ee/register" => {
            if st.register.len() > 1 {
                st.register.remove(0)
            } else {
                st.register[0].clone()
            }
        }
        "/api/v1/remotes/push/e2ee/notify" | "/api/v1/remotes/push/test_notification" => {
            st.notify.clone()
        }
        _ => (
            404,
            json!({"result": "error", "msg": "Not Found", "code": "BAD_REQUEST"}),
        ),
    };
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap()).json(body)
}

/// A push relay on loopback (Zulip's push bouncer API, as `hearth::push_relay` speaks
/// it) that answers registrations with device 1001 and notifications with success
/// until told otherwise; its URL (with credentials `org-id`/`org key`), state and
/// handle. Must run inside an actix System.
pub fn start_relay() -> (String, Shared, ServerHandle) {
    let state: Shared = Arc::new(Mutex::new(RelayState {
        register: vec![(
            200,
            json!({"result": "success", "msg": "", "device_id": 1001}),
        )],
        notify: (200, json!({"result": "success", "msg": ""})),
        seen: Vec::new(),
    }));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let data = web::Data::new(state.clone());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .default_service(web::to(relay_answer))
    })
    .workers(1)
    .listen(listener)
    .unwrap()
    .run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    (
        format!("http://org-id:org%20key@127.0.0.1:{port}/"),
        state,
        handle,
    )
}

// ---- the route table -------------------------------------------------------------

/// Every operation of the route table (`src/api/mod.rs` `routes`) as (METHOD, path
/// pattern), read from the source: `endpoint!("/path", get => handler, ...)` entries
/// and `web::resource("/path").route(web::get()...)` ones, each under the
/// `web::scope("/prefix")` that encloses it, if any.
pub fn route_table() -> Vec<(String, String)> {
    let src = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api/mod.rs"))
        .expect("src/api/mod.rs");
    let src = &src[src.find("pub fn routes(").expect("fn routes")..];
    let literal = |s: &str| -> Option<String> {
        let s = s.trim_start();
        let s = s.strip_prefix('"')?;
        Some(s[..s.find('"')?].to_owned())
    };
    // The prefix of the `web::scope(...)` whose chain encloses `at`: a scope lasts
    // until the parenthesis around it (`.service(web::scope("/p").service(...))`)
    // closes.
    let scope_at = |at: usize| -> String {
        let bytes = src.as_bytes();
        let mut open: Vec<(usize, String)> = Vec::new();
        let mut depth = 0usize;
        let mut i = 0;
        while i < at {
            if src[i..].starts_with("web::scope(") {
                let prefix = literal(&src[i + "web::scope(".len()..]).unwrap_or_default();
                open.push((depth, prefix));
                i += "web::scope".len();
                continue;
            }
            match bytes[i] {
                b'(' => depth += 1,
                b')' => {
                    depth = depth.saturating_sub(1);
                    while open.last().is_some_and(|(d, _)| *d > depth) {
                        open.pop();
                    }
                }
                b'"' => {
                    // Skip string literals.
                    i += 1;
                    while i < at && bytes[i] != b'"' {
                        i += 1;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        open.last().map(|(_, p)| p.clone()).unwrap_or_default()
    };
    let mut out = Vec::new();
    for (at, _) in src.match_indices("endpoint!(") {
        let after = &src[at + "endpoint!(".len()..];
        let Some(path) = literal(after) else { continue };
        let Some(end) = after.find(')') else { continue };
        let scope = scope_at(at);
        for (arrow, _) in after[..end].match_indices("=>") {
            let method = after[..arrow]
                .trim_end()
                .rsplit([' ', ','])
                .next()
                .unwrap_or_default();
            out.push((method.to_uppercase(), format!("{scope}{path}")));
        }
    }
    for (at, _) in src.match_indices("web::resource(") {
        let after = &src[at + "web::resource(".len()..];
        let Some(path) = literal(after) else { continue };
        // Its methods: the `.route(web::get()...)` calls up to the next entry.
        let next = ["web::resource(", "endpoint!(", "web::scope("]
            .iter()
            .filter_map(|m| after.find(m))
            .min()
            .unwrap_or(after.len());
        let scope = scope_at(at);
        for (r, _) in after[..next].match_indices(".route(web::") {
            let method: String = after[r + ".route(web::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphabetic())
                .collect();
            out.push((method.to_uppercase(), format!("{scope}{path}")));
        }
    }
    assert!(out.len() > 10, "could not read the route table");
    out
}

// ------------------------------------------------------------- the real binary

/// The `hearth` binary under test.
pub const HEARTH: &str = env!("CARGO_BIN_EXE_hearth");

/// `hearth` with a clean environment: no `HEARTH_*`, `RUST_LOG` or `NO_COLOR` from the
/// caller.
pub fn hearth() -> std::process::Command {
    hearth_at(Path::new(HEARTH))
}

/// `hearth()` from another path (a link to or copy of `HEARTH`).
pub fn hearth_at(program: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("HEARTH_") || key == "RUST_LOG" || key == "NO_COLOR" {
            cmd.env_remove(key);
        }
    }
    // Tests run in parallel: the default metrics port would be taken by the first one.
    cmd.env("HEARTH_METRICS_BIND", "off")
        .env("HEARTH_ADMIN_BIND", "off");
    // A development realm without its message history, as in-process tests have it
    // (`ServeConfig::for_tests`); a test that wants the history sets it to false.
    cmd.env("HEARTH_DEV_WITHOUT_HISTORY", "true");
    cmd.stdin(std::process::Stdio::null());
    cmd
}

/// Runs `hearth args...` to completion (60 s at most).
pub fn run(args: &[&str]) -> std::process::Output {
    output(hearth().args(args))
}

/// Runs a command to completion (60 s at most); its exit, stdout and stderr.
pub fn output(cmd: &mut std::process::Command) -> std::process::Output {
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hearth starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{cmd:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("output")
}

/// The PNG image of `tests/fixtures/img.png`.
pub fn png() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/img.png"))
        .expect("tests/fixtures/img.png")
}

/// Bytes as text (lossy).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ------------------------------------------------------------ role tables

/// One row of a role table: who sends which parameters, and the whole expected answer.
#[derive(Debug, Clone)]
pub struct Case {
    pub who: &'static str,
    pub params: Vec<(&'static str, String)>,
    pub status: u16,
    /// Empty for a success.
    pub code: &'static str,
    pub msg: String,
    /// Every other field of the body (an object; `{}` for none).
    pub fields: Value,
}

/// A case's parameters, owned.
pub fn p(pairs: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
}

/// A success with these fields (`json!({})` for none).
pub fn ok(who: &'static str, params: Vec<(&'static str, String)>, fields: Value) -> Case {
    Case {
        who,
        params,
        status: 200,
        code: "",
        msg: String::new(),
        fields,
    }
}

/// A 400 `BAD_REQUEST` with this message and no other field.
pub fn bad(who: &'static str, params: Vec<(&'static str, String)>, msg: impl Into<String>) -> Case {
    coded(who, params, "BAD_REQUEST", msg)
}

/// A 400 with this code and message and no other field (`Case::with_fields` adds some).
pub fn coded(
    who: &'static str,
    params: Vec<(&'static str, String)>,
    code: &'static str,
    msg: impl Into<String>,
) -> Case {
    Case {
        who,
        params,
        status: 400,
        code,
        msg: msg.into(),
        fields: json!({}),
    }
}

/// `Missing 'name' argument`, with `var_name`.
pub fn missing(who: &'static str, params: Vec<(&'static str, String)>, name: &str) -> Case {
    coded(
        who,
        params,
        "REQUEST_VARIABLE_MISSING",
        format!("Missing '{name}' argument"),
    )
    .with_fields(json!({ "var_name": name }))
}

/// `@require_realm_admin`'s refusal.
pub fn not_admin(who: &'static str, params: Vec<(&'static str, String)>) -> Case {
    coded(who, params, "UNAUTHORIZED_PRINCIPAL", NOT_ADMIN)
}

/// `@require_realm_owner`'s refusal.
pub fn not_owner(who: &'static str, params: Vec<(&'static str, String)>) -> Case {
    coded(who, params, "UNAUTHORIZED_PRINCIPAL", NOT_OWNER)
}

impl Case {
    /// The same answer with these other fields in the body.
    pub fn with_fields(mut self, fields: Value) -> Case {
        self.fields = fields;
        self
    }
}

/// Sends every case and compares the whole body: `result`, `msg`, `code` and fields.
pub async fn run_cases(s: &TestApp, method: &str, path: &str, table: &[Case]) {
    for (i, c) in table.iter().enumerate() {
        let params: Vec<(&str, &str)> = c.params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body) = s.call(method, path, c.who, &params).await;
        let mut want = Map::new();
        if c.code.is_empty() {
            want.insert("result".into(), "success".into());
        } else {
            want.insert("result".into(), "error".into());
            want.insert("code".into(), c.code.into());
        }
        want.insert("msg".into(), c.msg.clone().into());
        if let Some(f) = c.fields.as_object() {
            want.extend(f.clone());
        }
        let label = format!("case {i}: {method} {path} as {} {:?}", c.who, c.params);
        assert_eq!(status, c.status, "{label}: {body}");
        assert_eq!(body, Value::Object(want), "{label}");
    }
}

/// Sends a direct message from `who` to the users `to` (ids); the new message's id.
pub async fn send_direct(app: &TestApp, who: &str, to: &[i64], content: &str) -> u64 {
    let to = serde_json::to_string(to).expect("ids");
    app.ok(
        "POST",
        "/api/v1/messages",
        who,
        &[("type", "direct"), ("to", &to), ("content", content)],
    )
    .await["id"]
        .as_u64()
        .expect("id")
}

/// Sends `content` to channel `to`, topic `topic`, as `who`; the new message's id.
pub async fn send_stream(app: &TestApp, who: &str, to: &str, topic: &str, content: &str) -> u64 {
    let body = app
        .ok(
            "POST",
            "/api/v1/messages",
            who,
            &[
                ("type", "stream"),
                ("to", to),
                ("topic", topic),
                ("content", content),
            ],
        )
        .await;
    body["id"].as_u64().expect("id")
}
