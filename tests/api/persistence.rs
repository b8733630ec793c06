//! Durability: what the server acknowledged survives a crash (`kill -9` of the real
//! binary), a clean restart, and a torn WAL tail; the recovered realm equals the live one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use hearth::actor::CloneRealm;
use hearth::realm::UserChange;
use hearth::realm::{Change, NewUser, Realm, Role};
use reqwest::StatusCode;
use serde_json::Value;

// ---------------------------------------------------------------- the real binary

/// `hearth serve --dev` as a child process.
struct Server {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Server {
    /// Starts the binary on a free port with `--durability always`, and waits until it
    /// answers.
    async fn start(data: &Path, log: PathBuf) -> Server {
        Server::start_with(data, log, &[]).await
    }

    /// As `start`, with more `hearth serve` arguments.
    async fn start_with(data: &Path, log: PathBuf, extra: &[&str]) -> Server {
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let out = std::fs::File::create(&log).unwrap();
            let child = Command::new(env!("CARGO_BIN_EXE_hearth"))
                .env("HEARTH_METRICS_BIND", "off")
                .env("HEARTH_ADMIN_BIND", "off")
                // These tests count messages from an empty development realm.
                .env("HEARTH_DEV_WITHOUT_HISTORY", "true")
                .args(["serve", "--dev", "--durability", "always", "--workers", "2"])
                .arg("--data")
                .arg(data)
                .arg("--bind")
                .arg(format!("127.0.0.1:{port}"))
                .args(extra)
                .env("RUST_LOG", "info")
                .env_remove("HEARTH_URL")
                // The log goes to stdout, start-up errors to stderr: both in `log`.
                .stdout(out.try_clone().unwrap())
                .stderr(out)
                .spawn()
                .expect("start the hearth binary");
            let mut server = Server {
                child,
                url: format!("http://127.0.0.1:{port}"),
                log: log.clone(),
            };
            if server.wait_ready().await {
                return server;
            }
            // The port was taken between our probe and the child's bind: try another.
            assert!(
                server.log_text().contains("cannot listen"),
                "hearth exited:\n{}",
                server.log_text()
            );
        }
        panic!("no free port for hearth");
    }

    /// Polls until the server answers (true) or the process exits (false).
    async fn wait_ready(&mut self) -> bool {
        let client = client();
        let url = format!("{}/api/v1/server_settings", self.url);
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                eprintln!("hearth exited with {status}");
                return false;
            }
            if let Ok(resp) = client
                .get(&url)
                .timeout(Duration::from_secs(2))
                .send()
                .await
            {
                if resp.status() == StatusCode::OK {
                    return true;
                }
            }
            assert!(
                std::time::Instant::now() < deadline,
                "hearth never answered:\n{}",
                self.log_text()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL: no snapshot, no flush, no goodbye.
    fn kill_9(mut self) {
        self.child.kill().expect("kill -9");
        self.child.wait().expect("reap");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn key_for(client: &reqwest::Client, url: &str, email: &str) -> String {
    let (status, _, body) = send(
        client
            .post(format!("{url}/api/v1/dev_fetch_api_key"))
            .form(&[("username", email)]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["api_key"].as_str().unwrap().to_owned()
}

async fn create(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    email: &str,
) -> Result<u64, String> {
    let full_name = email.replace('@', " at ");
    let resp = client
        .post(format!("{url}/api/v1/users"))
        .header("Authorization", basic(ADMIN, key))
        .form(&[
            ("email", email),
            ("password", "crash-pw-1"),
            ("full_name", &full_name),
        ])
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = resp.status();
    let body: Value = resp.json().await.map_err(|e| e.to_string())?;
    if status != StatusCode::OK {
        return Err(format!("{status}: {body}"));
    }
    Ok(body["user_id"].as_u64().unwrap())
}

/// `POST /api/v1/channels/create` as the administrator; the new channel's id.
async fn create_channel(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    name: &str,
    description: &str,
) -> Result<u64, String> {
    let resp = client
        .post(format!("{url}/api/v1/channels/create"))
        .header("Authorization", basic(ADMIN, key))
        .form(&[("name", name), ("description", description)])
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = resp.status();
    let body: Value = resp.json().await.map_err(|e| e.to_string())?;
    if status != StatusCode::OK {
        return Err(format!("{status}: {body}"));
    }
    Ok(body["id"].as_u64().unwrap())
}

/// Names of every channel the administrator sees.
async fn channel_names(client: &reqwest::Client, url: &str, key: &str) -> Vec<String> {
    let (status, _, body) = send(
        client
            .get(format!("{url}/api/v1/streams"))
            .header("Authorization", basic(ADMIN, key)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    names(&body["streams"])
}

/// The "N WAL records replayed" of a server's start-up log.
fn replayed_at_start(log: &str) -> u64 {
    let line = log
        .lines()
        .find(|l| l.contains("WAL records replayed"))
        .unwrap_or_else(|| panic!("no replay line in:\n{log}"));
    let before = line.split(" WAL records replayed").next().unwrap();
    before
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {line}"))
}

#[actix_web::test]
async fn acknowledged_writes_survive_kill_9_during_snapshots() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let client = client();
    // Large snapshots (hundreds of channels with long descriptions, so they live in
    // sled's blob files), taken every few records, killed at varied moments.
    let description = "d".repeat(1000);
    let mut acked: Vec<String> = Vec::new();
    for (cycle, delay_ms) in [150u64, 400, 50, 700, 250].into_iter().enumerate() {
        let server = Server::start_with(
            &data,
            tmp.path().join(format!("cycle{cycle}.log")),
            &["--snapshot-every", "8"],
        )
        .await;
        let url = server.url.clone();
        let key = key_for(&client, &url, ADMIN).await;
        let seen = channel_names(&client, &url, &key).await;
        for name in &acked {
            assert!(
                seen.contains(name),
                "cycle {cycle}: acknowledged {name} lost"
            );
        }
        let mut writers = Vec::new();
        for w in 0..3 {
            let (client, url, key, description) = (
                client.clone(),
                url.clone(),
                key.clone(),
                description.clone(),
            );
            writers.push(actix_web::rt::spawn(async move {
                let mut mine = Vec::new();
                for i in 0.. {
                    let name = format!("snap-c{cycle}-w{w}-{i}");
                    match create_channel(&client, &url, &key, &name, &description).await {
                        Ok(_) => mine.push(name),
                        Err(_) => break,
                    }
                }
                mine
            }));
        }
        // Enough records for several snapshots, then the kill after a varied delay.
        poll(Duration::from_secs(120), "writes before the kill", || {
            let (client, url, key) = (client.clone(), url.clone(), key.clone());
            async move {
                let n = channel_names(&client, &url, &key).await.len();
                (n >= 40 * (cycle + 1)).then_some(())
            }
        })
        .await;
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        let log = server.log.clone();
        server.kill_9();
        for w in writers {
            acked.extend(w.await.unwrap());
        }
        let text = std::fs::read_to_string(log).unwrap_or_default();
        eprintln!(
            "cycle {cycle}: {} acknowledged so far, {} snapshots written",
            acked.len(),
            text.matches("snapshot at record").count()
        );
    }
    let server = Server::start(&data, tmp.path().join("last.log")).await;
    let key = key_for(&client, &server.url, ADMIN).await;
    let seen = channel_names(&client, &server.url, &key).await;
    for name in &acked {
        assert!(seen.contains(name), "acknowledged {name} lost");
    }
    assert!(acked.len() >= 200, "{} writes", acked.len());
}

#[actix_web::test]
async fn the_wal_replayed_at_start_stays_bounded_across_crashes() {
    // Each run writes fewer records than --snapshot-every and is killed: only because
    // replayed records count toward the next snapshot does the WAL stop growing.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let client = client();
    let every = 10u64;
    let per_run = 7u64;
    let runs = 10u64;
    let mut replayed = Vec::new();
    for run in 0..runs {
        let log = tmp.path().join(format!("run{run}.log"));
        let server = Server::start_with(&data, log.clone(), &["--snapshot-every", "10"]).await;
        replayed.push(replayed_at_start(&server.log_text()));
        let key = key_for(&client, &server.url, ADMIN).await;
        for i in 0..per_run {
            create_channel(&client, &server.url, &key, &format!("r{run}-{i}"), "")
                .await
                .unwrap();
        }
        server.kill_9();
    }
    let server = Server::start(&data, tmp.path().join("last.log")).await;
    replayed.push(replayed_at_start(&server.log_text()));
    eprintln!("WAL records replayed at each start: {replayed:?}");
    // Without the carry-over the last start would replay runs * per_run = 70 records.
    // With it: at most a snapshot interval, one run, and a snapshot in flight.
    let bound = 2 * every + per_run;
    for (run, n) in replayed.iter().enumerate() {
        assert!(*n <= bound, "start {run} replayed {n} records (> {bound})");
    }
    let key = key_for(&client, &server.url, ADMIN).await;
    let seen = channel_names(&client, &server.url, &key).await;
    for run in 0..runs {
        for i in 0..per_run {
            assert!(seen.contains(&format!("r{run}-{i}")));
        }
    }
}

async fn all_users(client: &reqwest::Client, url: &str, key: &str) -> Vec<Value> {
    let (status, _, body) = send(
        client
            .get(format!("{url}/api/v1/users"))
            .header("Authorization", basic(ADMIN, key))
            .query(&[("client_gravatar", "false")]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["members"].as_array().unwrap().clone()
}

#[actix_web::test]
async fn acknowledged_users_survive_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let client = client();
    let server = Server::start(&data, tmp.path().join("first.log")).await;
    let url = server.url.clone();
    let key = key_for(&client, &url, ADMIN).await;

    // Phase 1: one at a time, each acknowledged.
    let mut acked: Vec<(String, u64)> = Vec::new();
    for i in 0..5 {
        let email = format!("crash{i}@zulip.com");
        let id = create(&client, &url, &key, &email)
            .await
            .expect("acknowledged");
        acked.push((email, id));
    }
    let before = all_users(&client, &url, &key).await;
    assert_eq!(before.len(), 16 + 5);

    // Phase 2: concurrent writers; the kill lands while some are in flight.
    let done = Arc::new(AtomicUsize::new(0));
    let mut writers = Vec::new();
    for w in 0..3 {
        let (client, url, key, done) = (client.clone(), url.clone(), key.clone(), done.clone());
        writers.push(actix_web::rt::spawn(async move {
            let mut mine = Vec::new();
            for i in 0.. {
                let email = format!("crash-w{w}-{i}@zulip.com");
                match create(&client, &url, &key, &email).await {
                    Ok(id) => {
                        mine.push((email, id));
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(_) => break,
                }
            }
            mine
        }));
    }
    poll(
        Duration::from_secs(120),
        "concurrent acknowledgements",
        || {
            let n = done.load(Ordering::SeqCst);
            async move { (n >= 6).then_some(()) }
        },
    )
    .await;
    server.kill_9();
    for w in writers {
        acked.extend(w.await.unwrap());
    }
    assert!(acked.len() >= 11);
    eprintln!("{} users acknowledged before the kill", acked.len());

    // Restart on the same folder, another port.
    let server = Server::start(&data, tmp.path().join("second.log")).await;
    let url = server.url.clone();
    let key_after = key_for(&client, &url, ADMIN).await;
    assert_eq!(
        key_after, key,
        "API keys are state, recovered like the rest"
    );
    let after = all_users(&client, &url, &key_after).await;
    for m in &before {
        assert!(after.contains(m), "{m} changed or vanished after the crash");
    }
    for (email, id) in &acked {
        let m = after
            .iter()
            .find(|m| m["delivery_email"] == email.as_str())
            .unwrap_or_else(|| panic!("acknowledged {email} lost in the crash"));
        assert_eq!(m["user_id"], *id, "{email}");
        let (status, _, body) = send(
            client
                .post(format!("{url}/api/v1/fetch_api_key"))
                .form(&[("username", email.as_str()), ("password", "crash-pw-1")]),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{email}: {body}");
        assert_eq!(body["user_id"], *id);
        let user_key = body["api_key"].as_str().unwrap();
        let (status, _, me) = send(
            client
                .get(format!("{url}/api/v1/users/me"))
                .header("Authorization", basic(email, user_key)),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{me}");
        assert_eq!(me["user_id"], *id);
    }
    // Ids are never reused, even for writes cut short by the crash.
    let max = after
        .iter()
        .map(|m| m["user_id"].as_u64().unwrap())
        .max()
        .unwrap();
    let next = create(&client, &url, &key_after, "after-crash@zulip.com")
        .await
        .unwrap();
    assert!(next > max);
    drop(server);
}

/// Sends a channel message as `email`; its id.
async fn send_message(
    client: &reqwest::Client,
    url: &str,
    email: &str,
    key: &str,
    content: &str,
) -> Result<u64, String> {
    let resp = client
        .post(format!("{url}/api/v1/messages"))
        .header("Authorization", basic(email, key))
        .form(&[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "crash"),
            ("content", content),
        ])
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = resp.status();
    let body: Value = resp.json().await.map_err(|e| e.to_string())?;
    if status != StatusCode::OK {
        return Err(format!("{status}: {body}"));
    }
    Ok(body["id"].as_u64().unwrap())
}

#[actix_web::test]
async fn acknowledged_messages_edits_and_flags_survive_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let client = client();
    // Snapshots every few records: the message rows are not in them, so they must come
    // from the message store (written in the same commit), not from a replay.
    let server = Server::start_with(
        &data,
        tmp.path().join("first.log"),
        &["--snapshot-every", "7"],
    )
    .await;
    let url = server.url.clone();
    let key = key_for(&client, &url, ADMIN).await;
    let first = send_message(&client, &url, ADMIN, &key, "to be edited")
        .await
        .expect("acknowledged");
    let edit = client
        .patch(format!("{url}/api/v1/messages/{first}"))
        .header("Authorization", basic(ADMIN, &key))
        .form(&[("content", "edited before the crash")])
        .send()
        .await
        .unwrap();
    assert_eq!(edit.status(), StatusCode::OK);
    let star = client
        .post(format!("{url}/api/v1/messages/flags"))
        .header("Authorization", basic(ADMIN, &key))
        .form(&[
            ("messages", format!("[{first}]").as_str()),
            ("op", "add"),
            ("flag", "starred"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(star.status(), StatusCode::OK);
    let done = Arc::new(AtomicUsize::new(0));
    let mut writers = Vec::new();
    for w in 0..4 {
        let (client, url, key, done) = (client.clone(), url.clone(), key.clone(), done.clone());
        writers.push(actix_web::rt::spawn(async move {
            let mut mine = Vec::new();
            for i in 0.. {
                let content = format!("writer {w} message {i}");
                match send_message(&client, &url, ADMIN, &key, &content).await {
                    Ok(id) => {
                        mine.push((id, content));
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(_) => break,
                }
            }
            mine
        }));
    }
    poll(Duration::from_secs(120), "acknowledged sends", || {
        let n = done.load(Ordering::SeqCst);
        async move { (n >= 40).then_some(()) }
    })
    .await;
    server.kill_9();
    let mut acked = Vec::new();
    for w in writers {
        acked.extend(w.await.unwrap());
    }
    let server = Server::start(&data, tmp.path().join("second.log")).await;
    let url = server.url.clone();
    let fetched = client
        .get(format!("{url}/api/v1/messages"))
        .header("Authorization", basic(ADMIN, &key))
        .query(&[
            ("anchor", "oldest"),
            ("num_after", "5000"),
            ("narrow", r#"[{"operator":"channel","operand":"Verona"}]"#),
            ("apply_markdown", "false"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(fetched.status(), StatusCode::OK);
    let body: Value = fetched.json().await.unwrap();
    let messages = body["messages"].as_array().unwrap();
    let by_id = |id: u64| messages.iter().find(|m| m["id"] == id);
    let m = by_id(first).expect("the first message survived");
    assert_eq!(m["content"], "edited before the crash");
    assert!(m["flags"]
        .as_array()
        .unwrap()
        .contains(&Value::from("starred")));
    for (id, content) in &acked {
        let m = by_id(*id).unwrap_or_else(|| panic!("acknowledged message {id} lost"));
        assert_eq!(m["content"], content.as_str());
    }
    eprintln!(
        "{} messages acknowledged before the kill, all present",
        acked.len()
    );
    // Ids keep increasing.
    let next = send_message(&client, &url, ADMIN, &key, "after the crash")
        .await
        .unwrap();
    assert!(acked.iter().all(|(id, _)| *id < next));
    drop(server);
}

/// The unread count `/register` gives `email`.
async fn unread_count(client: &reqwest::Client, url: &str, email: &str, key: &str) -> Value {
    let resp = client
        .post(format!("{url}/api/v1/register"))
        .header("Authorization", basic(email, key))
        .form(&[("fetch_event_types", r#"["message","update_message_flags"]"#)])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let body: Value = resp.json().await.unwrap();
    body["unread_msgs"]["count"].clone()
}

#[actix_web::test]
async fn a_channel_marked_read_stays_read_after_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let client = client();
    let server = Server::start(&data, tmp.path().join("first.log")).await;
    let url = server.url.clone();
    let admin = key_for(&client, &url, ADMIN).await;
    let hamlet = key_for(&client, &url, HAMLET).await;
    let mut sent = Vec::new();
    for i in 0..3 {
        let id = send_message(&client, &url, ADMIN, &admin, &format!("unread {i}"))
            .await
            .expect("acknowledged");
        sent.push(id);
    }
    assert_eq!(unread_count(&client, &url, HAMLET, &hamlet).await, 3);
    let verona = client
        .get(format!("{url}/api/v1/get_stream_id"))
        .header("Authorization", basic(HAMLET, &hamlet))
        .query(&[("stream", "Verona")])
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap()["stream_id"]
        .to_string();
    let marked = client
        .post(format!("{url}/api/v1/mark_stream_as_read"))
        .header("Authorization", basic(HAMLET, &hamlet))
        .form(&[("stream_id", verona.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(marked.status(), StatusCode::OK);
    server.kill_9();

    let server = Server::start(&data, tmp.path().join("second.log")).await;
    let url = server.url.clone();
    assert_eq!(unread_count(&client, &url, HAMLET, &hamlet).await, 0);
    for id in sent {
        let body: Value = client
            .get(format!("{url}/api/v1/messages/{id}"))
            .header("Authorization", basic(HAMLET, &hamlet))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(
            body["message"]["flags"]
                .as_array()
                .unwrap()
                .contains(&Value::from("read")),
            "{body}"
        );
    }
    // The sender's (sent from an API client, so unread for them too) are untouched.
    assert_eq!(unread_count(&client, &url, ADMIN, &admin).await, 3);
    drop(server);
}

// ---------------------------------------------------------------- in-process restarts

#[actix_web::test]
async fn writes_survive_a_clean_restart() {
    let mut app = TestApp::spawn().await;
    let a = app
        .create_user("keep-a@zulip.com", "pw-keep-a", "Keep A")
        .await;
    let b = app
        .create_user("keep-b@zulip.com", "pw-keep-b", "Keep B")
        .await;
    let iago_key = app.api_key(ADMIN).await;
    let (_, _, before) = app.get_as(ADMIN, "/api/v1/users", &[]).await;

    app.restart().await;

    assert_eq!(app.api_key(ADMIN).await, iago_key);
    let (_, _, after) = app.get_as(ADMIN, "/api/v1/users", &[]).await;
    assert_eq!(after["members"], before["members"]);
    for (email, pw, id) in [
        ("keep-a@zulip.com", "pw-keep-a", a),
        ("keep-b@zulip.com", "pw-keep-b", b),
    ] {
        let reply = app
            .post(
                "/api/v1/fetch_api_key",
                Auth::None,
                &[("username", email), ("password", pw)],
            )
            .await;
        assert_eq!(assert_success(&reply)["user_id"], id);
    }
    // The duplicate check and the id counter are recovered too.
    let reply = app
        .post_as(
            ADMIN,
            "/api/v1/users",
            &[
                ("email", "KEEP-A@zulip.com"),
                ("password", "x"),
                ("full_name", "Xy"),
            ],
        )
        .await;
    assert_error(&reply, 400, "BAD_REQUEST", "Email is already in use.");
    let c = app.create_user("keep-c@zulip.com", "pw", "Keep C").await;
    assert!(c > b);

    // And a second restart keeps the write made after the first.
    app.restart().await;
    let reply = app.get_as(ADMIN, &format!("/api/v1/users/{c}"), &[]).await;
    assert_eq!(
        assert_success(&reply)["user"]["delivery_email"],
        "keep-c@zulip.com"
    );
}

#[actix_web::test]
async fn shutdown_releases_the_database() {
    let mut app = TestApp::spawn().await;
    app.create_user("lock@zulip.com", "pw", "Lock").await;
    for _ in 0..3 {
        app.running.take().unwrap().shutdown().await;
        let running = hearth::spawn(hearth::config::ServeConfig::for_tests(
            app.dir.path().to_path_buf(),
        ))
        .await
        .expect("the database is free once shutdown returns");
        app.url = running.url();
        app.running = Some(running);
    }
    let reply = app.get_as(ADMIN, "/api/v1/users/lock@zulip.com", &[]).await;
    assert_success(&reply);
}

async fn live_realm(app: &TestApp) -> Realm {
    let addr = app
        .server()
        .realm("127.0.0.1")
        .expect("a realm for the host");
    addr.send(CloneRealm).await.expect("realm actor answers")
}

#[actix_web::test]
async fn recovered_realm_equals_the_live_one() {
    let mut app = TestApp::spawn().await;
    let fresh = live_realm(&app).await;
    for i in 0..4 {
        app.create_user(
            &format!("same{i}@zulip.com"),
            "pw-same",
            &format!("Same {i}"),
        )
        .await;
    }
    let live = live_realm(&app).await;
    assert_ne!(live, fresh, "the writes changed the realm");
    assert_eq!(live.users.len(), 20);

    app.restart().await;
    let recovered = live_realm(&app).await;
    assert_eq!(recovered, live);
    // Derived indexes were rebuilt, not just the stored fields.
    assert!(recovered
        .user_by_delivery_email("SAME3@zulip.com")
        .is_some());
    assert_eq!(
        recovered.user_by_delivery_email("hamlet@zulip.com"),
        live.user_by_delivery_email("hamlet@zulip.com")
    );
}

// ---------------------------------------------------------------- torn WAL tails

/// Stops the app, runs `f` on the realm's storage, lets the storage go.
async fn with_stopped_store(app: &mut TestApp, f: impl FnOnce(&mut hearth::storage::RealmStore)) {
    app.stop().await;
    let store = open_store(app.dir.path()).await;
    let mut realm = store
        .realm(hearth::DEV_SUBDOMAIN)
        .expect("the dev realm's storage");
    f(&mut realm);
    drop(realm);
    store.durability.flush_now().expect("flush");
    drop(store);
}

fn user_change(id: u64, email: &str) -> Change {
    Change::User(UserChange::UserCreated(NewUser {
        user_id: id,
        delivery_email: email.to_owned(),
        full_name: "After The Tear".to_owned(),
        role: Role::Member,
        bot_type: None,
        bot_owner_id: None,
        timezone: String::new(),
        api_key: "A".repeat(32),
        password_hash: None,
        date_joined: 1_800_000_000,
    }))
}

#[actix_web::test]
async fn garbage_tail_is_cut_and_earlier_writes_stay() {
    let mut app = TestApp::spawn().await;
    let id = app
        .create_user("before-tear@zulip.com", "pw-tear", "Before")
        .await;
    let live = live_realm(&app).await;
    with_stopped_store(&mut app, |s| s.append_raw(b"garbage").unwrap()).await;

    app.start().await;
    assert_eq!(
        live_realm(&app).await,
        live,
        "the tail was cut, nothing else"
    );
    let reply = app
        .post(
            "/api/v1/fetch_api_key",
            Auth::None,
            &[
                ("username", "before-tear@zulip.com"),
                ("password", "pw-tear"),
            ],
        )
        .await;
    assert_eq!(assert_success(&reply)["user_id"], id);

    // Writes after the cut land, and survive another restart.
    let next = app
        .create_user("after-cut@zulip.com", "pw-cut", "After Cut")
        .await;
    assert!(next > id);
    app.restart().await;
    let reply = app
        .get_as(ADMIN, &format!("/api/v1/users/{next}"), &[])
        .await;
    assert_eq!(
        assert_success(&reply)["user"]["delivery_email"],
        "after-cut@zulip.com"
    );
}

#[actix_web::test]
async fn everything_after_a_torn_record_is_cut() {
    let mut app = TestApp::spawn().await;
    app.create_user("kept@zulip.com", "pw", "Kept").await;
    let live = live_realm(&app).await;
    let next_id = live.next_user_id;
    with_stopped_store(&mut app, |s| {
        // A record cut short in the middle (a torn write), then a valid one after it.
        let whole =
            hearth::storage::codec::encode_changes(&[user_change(next_id, "torn@zulip.com")])
                .unwrap();
        s.append_raw(&whole[..whole.len() / 2]).unwrap();
        s.append(&[user_change(next_id + 1, "behind-tear@zulip.com")])
            .unwrap();
        let recovered = s.recover().unwrap().expect("a realm");
        assert_eq!(recovered.cut, 2);
        assert_eq!(recovered.realm, live);
    })
    .await;

    app.start().await;
    assert_eq!(live_realm(&app).await, live);
    for email in ["torn@zulip.com", "behind-tear@zulip.com"] {
        let reply = app
            .post(
                "/api/v1/dev_fetch_api_key",
                Auth::None,
                &[("username", email)],
            )
            .await;
        assert_error(
            &reply,
            401,
            "AUTHENTICATION_FAILED",
            "Your username or password is incorrect",
        );
    }
    let reply = app.get_as(ADMIN, "/api/v1/users", &[]).await;
    assert_eq!(
        assert_success(&reply)["members"].as_array().unwrap().len(),
        17
    );
}

#[actix_web::test]
async fn a_valid_wal_tail_is_replayed() {
    // A record appended behind the last snapshot, as a crash leaves it, is replayed.
    let mut app = TestApp::spawn().await;
    let live = live_realm(&app).await;
    let id = live.next_user_id;
    with_stopped_store(&mut app, |s| {
        s.append(&[user_change(id, "replayed@zulip.com")]).unwrap();
    })
    .await;
    app.start().await;
    let realm = live_realm(&app).await;
    assert_eq!(realm.users.len(), live.users.len() + 1);
    assert_eq!(realm.next_user_id, id + 1);
    let reply = app.get_as(ADMIN, &format!("/api/v1/users/{id}"), &[]).await;
    let user = &assert_success(&reply)["user"];
    assert_eq!(user["delivery_email"], "replayed@zulip.com");
    assert_eq!(user["full_name"], "After The Tear");
    // Its key, decided before the crash, is the one it has now.
    let key = app.api_key("replayed@zulip.com").await;
    assert_eq!(key, "A".repeat(32));
}

// ---------------------------------------------------------------- rows ahead of the WAL

/// The message database may hold the rows of WAL records that were lost (the WAL's
/// unflushed tail in `interval` and `never`, while another realm's snapshot synced the
/// message database): the start puts back what their edits, flag changes, reactions
/// and deletions replaced, so the rows agree with the realm the WAL recovers.
#[actix_web::test]
async fn rows_of_lost_records_are_put_back_at_start() {
    use hearth::realm::messages::{flags, MessageChange, Reaction};
    let mut app = TestApp::spawn().await;
    let kept = send_stream(&app, IAGO, "Verona", "undo", "original").await;
    let gone = send_stream(&app, IAGO, "Verona", "undo", "deleted?").await;
    let hamlet = app.user_id(HAMLET).await as u64;
    let before = app
        .ok("GET", &format!("/api/v1/messages/{kept}"), HAMLET, &[])
        .await;

    with_stopped_store(&mut app, |s| {
        let mut realm = s.recover().unwrap().expect("the dev realm").realm;
        let row = |id| s.messages().get(id).unwrap().expect("a row");
        let (original, deleted) = (row(kept), row(gone));
        let mut edited = original.clone();
        edited.content = "edited".into();
        edited.rendered_content = "<p>edited</p>".into();
        let reaction = Reaction {
            user_id: hamlet,
            emoji_name: "smile".into(),
            emoji_code: "1f604".into(),
            reaction_type: "unicode_emoji".into(),
        };
        let lost = [
            MessageChange::Edited {
                user_id: original.sender_id,
                propagate_mode: "change_one".into(),
                pairs: vec![(original.clone(), edited)],
                topic_max: Vec::new(),
            },
            MessageChange::FlagsChanged {
                user_id: hamlet,
                flag: flags::STARRED,
                add: true,
                ids: vec![kept],
            },
            MessageChange::FlagsChanged {
                user_id: hamlet,
                flag: flags::READ,
                add: true,
                ids: vec![kept, gone],
            },
            MessageChange::ReactionAdded {
                message_id: kept,
                recipient: original.recipient.clone(),
                reaction,
            },
            MessageChange::Deleted {
                messages: vec![deleted],
                topic_max: Vec::new(),
            },
        ];
        // Projected as the actor does, for records after the WAL's last one, which
        // never reach the WAL: the rows are synced, the records are lost.
        let last = s.last_seq();
        for (seq, change) in (last + 1..).zip(lost) {
            let change = Change::Message(change);
            s.messages()
                .project(&realm, &change, Some((seq, 0)))
                .unwrap();
            realm.apply(&change);
        }
        assert_eq!(s.messages().get(kept).unwrap().unwrap().content, "edited");
        s.messages().sync().unwrap();
    })
    .await;

    app.start().await;
    let after = app
        .ok("GET", &format!("/api/v1/messages/{kept}"), HAMLET, &[])
        .await;
    assert_eq!(after["message"], before["message"]);
    assert_eq!(after["message"]["content"], "<p>original</p>");
    assert_eq!(after["message"]["reactions"], serde_json::json!([]));
    assert_eq!(after["message"]["flags"], serde_json::json!([]));
    let still = app
        .ok("GET", &format!("/api/v1/messages/{gone}"), HAMLET, &[])
        .await;
    assert_eq!(still["message"]["flags"], serde_json::json!([]));
    // Once undone, the log is gone: another restart changes nothing.
    app.restart().await;
    let again = app
        .ok("GET", &format!("/api/v1/messages/{kept}"), HAMLET, &[])
        .await;
    assert_eq!(again["message"], before["message"]);
}

// ---------------------------------------------------------------- more message writes

/// One request to a child server as `email` (key `key`): status and body. `params` go
/// in the query for GET, in a form otherwise.
async fn call_as(
    client: &reqwest::Client,
    url: &str,
    method: &str,
    path: &str,
    (email, key): (&str, &str),
    params: &[(&str, &str)],
) -> (StatusCode, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let rb = client
        .request(method.clone(), format!("{url}{path}"))
        .header("Authorization", basic(email, key));
    let rb = if method == reqwest::Method::GET {
        rb.query(params)
    } else {
        rb.form(params)
    };
    let (status, _, body) = send(rb).await;
    (status, body)
}

/// `call_as`, which must succeed (it is acknowledged); the body.
async fn acked(
    client: &reqwest::Client,
    url: &str,
    method: &str,
    path: &str,
    who: (&str, &str),
    params: &[(&str, &str)],
) -> Value {
    let (status, body) = call_as(client, url, method, path, who, params).await;
    assert_eq!(status, StatusCode::OK, "{method} {path}: {body}");
    body
}

#[actix_web::test]
async fn acknowledged_deletes_moves_reactions_and_flag_removals_survive_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let c = client();
    let server = Server::start(&data, tmp.path().join("first.log")).await;
    let url = server.url.clone();
    let iago_key = key_for(&c, &url, ADMIN).await;
    let hamlet_key = key_for(&c, &url, MEMBER).await;
    let (iago, hamlet) = ((ADMIN, iago_key.as_str()), (MEMBER, hamlet_key.as_str()));
    let mut ids = Vec::new();
    for (topic, content) in [
        ("gone", "to be deleted"),
        ("two", "to be moved"),
        ("two", "moved along"),
        ("three", "to Denmark"),
        ("four", "starred and reacted, then not"),
    ] {
        let body = acked(
            &c,
            &url,
            "POST",
            "/api/v1/messages",
            iago,
            &[
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", topic),
                ("content", content),
            ],
        )
        .await;
        ids.push(body["id"].as_u64().unwrap());
    }
    let (gone, two, two_b, three, four) = (ids[0], ids[1], ids[2], ids[3], ids[4]);
    let denmark = {
        let body = acked(
            &c,
            &url,
            "GET",
            "/api/v1/get_stream_id",
            iago,
            &[("stream", "Denmark")],
        )
        .await;
        body["stream_id"].as_u64().unwrap()
    };
    acked(
        &c,
        &url,
        "DELETE",
        &format!("/api/v1/messages/{gone}"),
        iago,
        &[],
    )
    .await;
    acked(
        &c,
        &url,
        "PATCH",
        &format!("/api/v1/messages/{two}"),
        iago,
        &[
            ("topic", "moved"),
            ("propagate_mode", "change_all"),
            ("send_notification_to_new_thread", "false"),
        ],
    )
    .await;
    acked(
        &c,
        &url,
        "PATCH",
        &format!("/api/v1/messages/{three}"),
        iago,
        &[
            ("stream_id", &denmark.to_string()),
            ("send_notification_to_new_thread", "false"),
        ],
    )
    .await;
    let four_path = format!("/api/v1/messages/{four}");
    let flag = |op: &'static str| {
        [
            ("messages", format!("[{four}]")),
            ("op", op.to_owned()),
            ("flag", "starred".to_owned()),
        ]
    };
    for op in ["add", "remove"] {
        let params = flag(op);
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        acked(&c, &url, "POST", "/api/v1/messages/flags", hamlet, &params).await;
    }
    let reactions = format!("{four_path}/reactions");
    acked(
        &c,
        &url,
        "POST",
        &reactions,
        hamlet,
        &[("emoji_name", "octopus")],
    )
    .await;
    acked(
        &c,
        &url,
        "DELETE",
        &reactions,
        hamlet,
        &[("emoji_name", "octopus")],
    )
    .await;
    let body = acked(
        &c,
        &url,
        "POST",
        "/api/v1/messages/flags/narrow",
        hamlet,
        &[
            ("anchor", "oldest"),
            ("num_before", "0"),
            ("num_after", "100"),
            ("narrow", "[]"),
            ("op", "add"),
            ("flag", "read"),
        ],
    )
    .await;
    assert_eq!(body["updated_count"], 4, "{body}");
    server.kill_9();

    let server = Server::start(&data, tmp.path().join("second.log")).await;
    let url = server.url.clone();
    let (status, body) = call_as(
        &c,
        &url,
        "GET",
        &format!("/api/v1/messages/{gone}"),
        iago,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["msg"], "Invalid message(s)");
    let message = |id: u64| {
        let c = c.clone();
        let url = url.clone();
        async move {
            acked(
                &c,
                &url,
                "GET",
                &format!("/api/v1/messages/{id}"),
                hamlet,
                &[],
            )
            .await["message"]
                .clone()
        }
    };
    for id in [two, two_b] {
        let m = message(id).await;
        assert_eq!(m["subject"], "moved", "{m}");
        assert_eq!(m["display_recipient"], "Verona");
    }
    let m = message(three).await;
    assert_eq!(m["display_recipient"], "Denmark");
    assert_eq!(m["subject"], "three");
    let history = acked(
        &c,
        &url,
        "GET",
        &format!("/api/v1/messages/{three}/history"),
        hamlet,
        &[],
    )
    .await;
    assert_eq!(history["message_history"][1]["stream"], denmark);
    let m = message(four).await;
    assert_eq!(m["flags"], serde_json::json!(["read"]));
    assert_eq!(m["reactions"], serde_json::json!([]));
    let verona = acked(
        &c,
        &url,
        "GET",
        "/api/v1/get_stream_id",
        iago,
        &[("stream", "Verona")],
    )
    .await["stream_id"]
        .as_u64()
        .unwrap();
    let topics = acked(
        &c,
        &url,
        "GET",
        &format!("/api/v1/users/me/{verona}/topics"),
        hamlet,
        &[],
    )
    .await;
    let names: Vec<&str> = topics["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["four", "moved"]);
    let reg = acked(
        &c,
        &url,
        "POST",
        "/api/v1/register",
        hamlet,
        &[("fetch_event_types", r#"["message","update_message_flags"]"#)],
    )
    .await;
    assert_eq!(reg["unread_msgs"]["count"], 0, "{}", reg["unread_msgs"]);
    assert_eq!(reg["max_message_id"], four);
    drop(server);
}

#[actix_web::test]
async fn acknowledged_scheduled_linkifier_and_attachment_writes_survive_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let c = client();
    let server = Server::start(&data, tmp.path().join("first.log")).await;
    let url = server.url.clone();
    let iago_key = key_for(&c, &url, ADMIN).await;
    let hamlet_key = key_for(&c, &url, MEMBER).await;
    let (iago, hamlet) = ((ADMIN, iago_key.as_str()), (MEMBER, hamlet_key.as_str()));

    // Scheduled messages a day ahead: created, edited, deleted.
    let tomorrow = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 86_400;
    let mut scheduled = Vec::new();
    for (i, content) in ["kept", "edited", "deleted"].iter().enumerate() {
        let at = (tomorrow + i as u64).to_string();
        let body = acked(
            &c,
            &url,
            "POST",
            "/api/v1/scheduled_messages",
            hamlet,
            &[
                ("type", "stream"),
                // Verona, as a list of one id.
                ("to", "[3]"),
                ("topic", "later"),
                ("content", content),
                ("scheduled_delivery_timestamp", &at),
            ],
        )
        .await;
        scheduled.push(body["scheduled_message_id"].as_u64().unwrap());
    }
    acked(
        &c,
        &url,
        "PATCH",
        &format!("/api/v1/scheduled_messages/{}", scheduled[1]),
        hamlet,
        &[
            ("content", "edited **twice**"),
            ("topic", "sooner"),
            (
                "scheduled_delivery_timestamp",
                &(tomorrow - 3600).to_string(),
            ),
        ],
    )
    .await;
    acked(
        &c,
        &url,
        "DELETE",
        &format!("/api/v1/scheduled_messages/{}", scheduled[2]),
        hamlet,
        &[],
    )
    .await;

    // Linkifiers: two added, one changed, one removed, then a new order.
    let mut filters = Vec::new();
    for (pattern, template) in [
        ("ONE-(?P<id>[0-9]+)", "https://one.example/{id}"),
        ("TWO-(?P<id>[0-9]+)", "https://two.example/{id}"),
    ] {
        let body = acked(
            &c,
            &url,
            "POST",
            "/api/v1/realm/filters",
            iago,
            &[("pattern", pattern), ("url_template", template)],
        )
        .await;
        filters.push(body["id"].as_u64().unwrap());
    }
    acked(
        &c,
        &url,
        "PATCH",
        &format!("/api/v1/realm/filters/{}", filters[0]),
        iago,
        &[
            ("pattern", "UNO-(?P<id>[0-9]+)"),
            ("url_template", "https://uno.example/{id}"),
        ],
    )
    .await;
    acked(
        &c,
        &url,
        "DELETE",
        &format!("/api/v1/realm/filters/{}", filters[1]),
        iago,
        &[],
    )
    .await;
    let listed = acked(&c, &url, "GET", "/api/v1/realm/linkifiers", hamlet, &[]).await;
    let mut order: Vec<u64> = listed["linkifiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_u64().unwrap())
        .collect();
    order.reverse();
    acked(
        &c,
        &url,
        "PATCH",
        "/api/v1/realm/linkifiers",
        iago,
        &[(
            "ordered_linkifier_ids",
            &serde_json::to_string(&order).unwrap(),
        )],
    )
    .await;

    // Attachments: two uploads, one deleted.
    let mut uploaded = Vec::new();
    for i in 0..2 {
        let part = reqwest::multipart::Part::bytes(format!("file {i}").into_bytes())
            .file_name(format!("f{i}.txt"));
        let (status, _, body) = send(
            c.post(format!("{url}/api/v1/user_uploads"))
                .header("Authorization", basic(MEMBER, &hamlet_key))
                .multipart(reqwest::multipart::Form::new().part("file", part)),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        uploaded.push(body["url"].as_str().unwrap().to_owned());
    }
    let attachments = acked(&c, &url, "GET", "/api/v1/attachments", hamlet, &[]).await;
    let doomed = attachments["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| uploaded[1].ends_with(a["path_id"].as_str().unwrap()))
        .expect("the second upload")["id"]
        .as_u64()
        .unwrap();
    acked(
        &c,
        &url,
        "DELETE",
        &format!("/api/v1/attachments/{doomed}"),
        hamlet,
        &[],
    )
    .await;

    // What was acknowledged, as the server showed it.
    let before = (
        acked(&c, &url, "GET", "/api/v1/scheduled_messages", hamlet, &[]).await,
        acked(&c, &url, "GET", "/api/v1/realm/linkifiers", hamlet, &[]).await,
        acked(&c, &url, "GET", "/api/v1/attachments", hamlet, &[]).await,
    );
    let shown = before.0["scheduled_messages"].as_array().unwrap();
    assert_eq!(shown.len(), 2);
    assert_eq!(shown[0]["content"], "edited **twice**");
    assert_eq!(shown[1]["content"], "kept");
    assert_eq!(before.1["linkifiers"][0]["pattern"], "UNO-(?P<id>[0-9]+)");
    assert_eq!(before.2["attachments"].as_array().unwrap().len(), 1);
    server.kill_9();

    let server = Server::start(&data, tmp.path().join("second.log")).await;
    let url = server.url.clone();
    let after = (
        acked(&c, &url, "GET", "/api/v1/scheduled_messages", hamlet, &[]).await,
        acked(&c, &url, "GET", "/api/v1/realm/linkifiers", hamlet, &[]).await,
        acked(&c, &url, "GET", "/api/v1/attachments", hamlet, &[]).await,
    );
    assert_eq!(after.0, before.0, "scheduled messages");
    assert_eq!(after.1, before.1, "linkifiers");
    assert_eq!(after.2, before.2, "attachments");
    // The deleted upload's file is gone; the other is served.
    for (i, path) in uploaded.iter().enumerate() {
        let resp = c
            .get(format!("{url}{path}"))
            .header("Authorization", basic(MEMBER, &hamlet_key))
            .send()
            .await
            .unwrap();
        let want = if i == 0 {
            StatusCode::OK
        } else {
            StatusCode::NOT_FOUND
        };
        assert_eq!(resp.status(), want, "{path}");
    }
    drop(server);
}

/// Verona's newest messages, as `who` reads them.
async fn verona_messages(c: &reqwest::Client, url: &str, who: (&str, &str)) -> Value {
    let narrow = r#"[["channel","Verona"]]"#;
    acked(
        c,
        url,
        "GET",
        "/api/v1/messages",
        who,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", narrow),
        ],
    )
    .await["messages"]
        .clone()
}

/// The topics policies of the realm and of a channel, and the channel notice their
/// change sends, are on disk once acknowledged: after `kill -9` both hold, and a
/// send they refuse is still refused.
#[actix_web::test]
async fn acknowledged_topics_policies_survive_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let c = client();
    let server = Server::start(&data, tmp.path().join("first.log")).await;
    let url = server.url.clone();
    let iago_key = key_for(&c, &url, ADMIN).await;
    let iago = (ADMIN, iago_key.as_str());
    acked(
        &c,
        &url,
        "PATCH",
        "/api/v1/realm",
        iago,
        &[("topics_policy", "disable_empty_topic")],
    )
    .await;
    // Verona (id 3) holds no message yet, so it may allow only the empty topic.
    acked(
        &c,
        &url,
        "PATCH",
        "/api/v1/streams/3",
        iago,
        &[("topics_policy", "empty_topic_only")],
    )
    .await;
    let before = verona_messages(&c, &url, iago).await;
    assert_eq!(before.as_array().unwrap().len(), 1, "{before}");
    server.kill_9();

    let server = Server::start(&data, tmp.path().join("second.log")).await;
    let url = server.url.clone();
    let reg = acked(&c, &url, "POST", "/api/v1/register", iago, &[]).await;
    assert_eq!(reg["realm_topics_policy"], "disable_empty_topic");
    assert_eq!(reg["realm_mandatory_topics"], true);
    let stream = acked(&c, &url, "GET", "/api/v1/streams/3", iago, &[]).await;
    assert_eq!(stream["stream"]["topics_policy"], "empty_topic_only");
    assert_eq!(verona_messages(&c, &url, iago).await, before);
    let (status, _, body) = send(
        c.post(format!("{url}/api/v1/messages"))
            .header("Authorization", basic(ADMIN, &iago_key))
            .form(&[
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", "named"),
                ("content", "refused"),
            ]),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["code"], "BAD_REQUEST");
    assert_eq!(
        body["msg"],
        "Only the general chat topic is allowed in this channel."
    );
    drop(server);
}
