//! Uploads and attachments (seed 4.14, 2.12): `POST /user_uploads`, serving files to
//! who may see them, temporary URLs, `GET /attachments`, `DELETE
//! /attachments/{attachment_id}`, `attachment` events, files on disk
//! (content-addressed, written before `success`, removed after), the sweep of
//! unclaimed uploads, restarts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use crate::common::*;
use hearth::realm::ManualClock;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const UPLOADS: &str = "/api/v1/user_uploads";
const ATTACHMENTS: &str = "/api/v1/attachments";
const DAY_MS: i64 = 86_400_000;

/// Uploads one file as `email`, under the multipart field `field`.
async fn upload_as(app: &TestApp, email: &str, field: &str, name: &str, bytes: &[u8]) -> Reply {
    let key = app.api_key(email).await;
    let part = reqwest::multipart::Part::bytes(bytes.to_vec()).file_name(name.to_owned());
    let form = reqwest::multipart::Form::new().part(field.to_owned(), part);
    send(
        app.request(Method::POST, UPLOADS, Auth::Basic(email, &key))
            .multipart(form),
    )
    .await
}

/// Uploads and returns the answer's `url`.
async fn upload(app: &TestApp, email: &str, name: &str, bytes: &[u8]) -> String {
    let reply = upload_as(app, email, "file", name, bytes).await;
    assert_success(&reply);
    reply.2["url"].as_str().expect("url").to_owned()
}

/// A GET whose body may be anything: status, headers, bytes.
async fn fetch(
    app: &TestApp,
    path: &str,
    auth: Auth<'_>,
) -> (StatusCode, reqwest::header::HeaderMap, Vec<u8>) {
    let resp = app
        .request(Method::GET, path, auth)
        .send()
        .await
        .expect("sent");
    let (status, headers) = (resp.status(), resp.headers().clone());
    (status, headers, resp.bytes().await.expect("body").to_vec())
}

async fn fetch_as(
    app: &TestApp,
    email: &str,
    path: &str,
) -> (StatusCode, reqwest::header::HeaderMap, Vec<u8>) {
    let key = app.api_key(email).await;
    fetch(app, path, Auth::Basic(email, &key)).await
}

async fn attachments(app: &TestApp, email: &str) -> Value {
    app.ok("GET", ATTACHMENTS, email, &[]).await
}

/// Where the development realm keeps a file with these bytes.
fn stored_path(app: &TestApp, bytes: &[u8]) -> PathBuf {
    let sha = hex::encode(Sha256::digest(bytes));
    app.dir
        .path()
        .join("uploads")
        .join(format!("realm-{}", hex::encode("zulip")))
        .join(sha)
}

/// A scheduled message claims the uploads it links when it is delivered, as a send
/// does: the attachment then lists the delivered message.
#[actix_web::test]
async fn a_delivered_scheduled_message_claims_its_uploads() {
    let clock = ManualClock::new(START_MS);
    let mut app = TestApp::spawn_with_clock(clock.clone()).await;
    let url = upload(&app, MEMBER, "plan.txt", b"the plan\n").await;
    let verona = app.stream_id("Verona").await.to_string();
    let at = (START + 60).to_string();
    let content = format!("[the plan]({url})");
    app.ok(
        "POST",
        "/api/v1/scheduled_messages",
        MEMBER,
        &[
            ("type", "stream"),
            ("to", &verona),
            ("topic", "later"),
            ("content", &content),
            ("scheduled_delivery_timestamp", &at),
        ],
    )
    .await;
    let list = attachments(&app, MEMBER).await;
    assert_eq!(list["attachments"][0]["messages"], json!([]));
    clock.advance_ms(60_000);
    app.deliver_scheduled().await;
    let newest = app
        .ok(
            "GET",
            "/api/v1/messages",
            MEMBER,
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("narrow", r#"[{"operator":"channel","operand":"Verona"}]"#),
            ],
        )
        .await;
    let id = newest["messages"][0]["id"].clone();
    assert_eq!(newest["messages"][0]["subject"], "later");
    let list = attachments(&app, MEMBER).await;
    assert_eq!(list["attachments"][0]["messages"][0]["id"], id, "{list}");
    // Still claimed after a restart.
    app.restart().await;
    let list = attachments(&app, MEMBER).await;
    assert_eq!(list["attachments"][0]["messages"][0]["id"], id, "{list}");
}

#[actix_web::test]
async fn upload_list_and_serve_to_the_uploader() {
    let app = TestApp::spawn().await;
    let bytes = b"zulip attachment contents\n";
    let reply = upload_as(&app, MEMBER, "anything", "zulip notes (1).txt", bytes).await;
    let body = assert_success(&reply).clone();
    let url = body["url"].as_str().unwrap().to_owned();
    assert_eq!(body["uri"], body["url"]);
    assert_eq!(body["filename"], "zulip notes (1).txt");
    assert_eq!(
        keys(&body),
        sorted(&["filename", "msg", "result", "uri", "url"])
    );
    let segments: Vec<&str> = url.split('/').collect();
    assert_eq!(segments.len(), 6, "{url}");
    assert_eq!(&segments[..3], ["", "user_uploads", "2"]);
    assert!(segments[3].len() == 2 && u8::from_str_radix(segments[3], 16).is_ok());
    assert_eq!(segments[4].len(), 24);
    assert_eq!(segments[5], "zulip-notes-1.txt");
    // On disk, under its hash, before the answer.
    assert_eq!(std::fs::read(stored_path(&app, bytes)).unwrap(), bytes);

    let list = attachments(&app, MEMBER).await;
    assert_eq!(list["upload_space_used"], bytes.len());
    let a = &list["attachments"][0];
    assert_eq!(a["name"], "zulip notes (1).txt");
    assert_eq!(a["path_id"], url.strip_prefix("/user_uploads/").unwrap());
    assert_eq!(a["size"], bytes.len());
    assert_eq!(a["messages"], json!([]));
    assert!(
        a["create_time"].as_i64().unwrap() > 1_600_000_000_000,
        "milliseconds"
    );
    assert_eq!(attachments(&app, OTHELLO).await["attachments"], json!([]));
    // upload_space_used is the realm's, whoever asks.
    assert_eq!(
        attachments(&app, OTHELLO).await["upload_space_used"],
        bytes.len()
    );

    let (status, headers, got) = fetch_as(&app, MEMBER, &url).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(got, bytes);
    assert_eq!(headers["content-type"], "text/plain");
    assert_eq!(
        headers["content-disposition"],
        "inline; filename=\"zulip notes (1).txt\""
    );

    let (status, headers, body) = fetch_as(&app, OTHELLO, &url).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(body, b"<p>You are not authorized to view this file.</p>");
    let (status, _, body) = fetch(&app, &url, Auth::None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body, b"<p>You are not authorized to view this file.</p>");
    let (status, _, body) = fetch(
        &app,
        &url,
        Auth::Basic(MEMBER, "0123456789abcdef0123456789abcdef"),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["msg"],
        "Invalid API key"
    );
    let (status, _, body) = fetch_as(&app, MEMBER, "/user_uploads/2/ab/nothing/here.txt").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        body,
        b"<p>This file does not exist or has been deleted.</p>"
    );
    let (status, _, _) = fetch_as(&app, MEMBER, &url.replacen("/2/", "/3/", 1)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A non-text type is a download.
    let url = upload(&app, MEMBER, "data.bin", &[0, 1, 2, 255]).await;
    let (_, headers, got) = fetch_as(&app, MEMBER, &url).await;
    assert_eq!(got, [0, 1, 2, 255]);
    assert_eq!(headers["content-type"], "application/octet-stream");
    assert_eq!(
        headers["content-disposition"],
        "attachment; filename=\"data.bin\""
    );
}

#[actix_web::test]
async fn temporary_urls_through_the_api() {
    let app = TestApp::spawn().await;
    let url = upload(&app, MEMBER, "report.pdf", b"%PDF-1.4 fake").await;
    let api = format!("/api/v1{url}");
    let body = app.ok("GET", &api, MEMBER, &[]).await;
    let temporary = body["url"].as_str().unwrap().to_owned();
    assert!(
        temporary.starts_with("/user_uploads/temporary/") && temporary.ends_with("/report.pdf"),
        "{temporary}"
    );
    let (status, headers, got) = fetch(&app, &temporary, Auth::None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(got, b"%PDF-1.4 fake");
    assert_eq!(headers["content-type"], "application/pdf");

    let (status, _, body) = fetch(
        &app,
        &temporary.replacen("temporary/", "temporary/00", 1),
        Auth::None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["msg"],
        "Invalid token"
    );
    let (status, _, body) = fetch(
        &app,
        &temporary.replace("/report.pdf", "/other.pdf"),
        Auth::None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["msg"],
        "Invalid filename"
    );

    let (status, _, body) = fetch_as(&app, OTHELLO, &api).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body, b"<p>You are not authorized to view this file.</p>");
    let (status, _, body) = fetch_as(&app, MEMBER, "/api/v1/user_uploads/2/ab/no/file.txt").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        body,
        b"<p>This file does not exist or has been deleted.</p>"
    );
    let (status, _, _) = fetch(&app, &api, Auth::None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[actix_web::test]
async fn upload_errors() {
    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::spawn_configured(dir, |c| c.max_file_upload_size_mib = 1).await;
    let key = app.api_key(MEMBER).await;
    let no_file = "You must specify a file to upload";
    assert_error(
        &send(app.request(Method::POST, UPLOADS, Auth::Basic(MEMBER, &key))).await,
        400,
        "BAD_REQUEST",
        no_file,
    );
    assert_error(
        &send(
            app.request(Method::POST, UPLOADS, Auth::Basic(MEMBER, &key))
                .form(&[("a", "b")]),
        )
        .await,
        400,
        "BAD_REQUEST",
        no_file,
    );
    let text_only = reqwest::multipart::Form::new().text("file", "not a file");
    assert_error(
        &send(
            app.request(Method::POST, UPLOADS, Auth::Basic(MEMBER, &key))
                .multipart(text_only),
        )
        .await,
        400,
        "BAD_REQUEST",
        no_file,
    );
    let two = reqwest::multipart::Form::new()
        .part(
            "a",
            reqwest::multipart::Part::bytes(b"1".to_vec()).file_name("a.txt"),
        )
        .part(
            "b",
            reqwest::multipart::Part::bytes(b"2".to_vec()).file_name("b.txt"),
        );
    assert_error(
        &send(
            app.request(Method::POST, UPLOADS, Auth::Basic(MEMBER, &key))
                .multipart(two),
        )
        .await,
        400,
        "BAD_REQUEST",
        "You may only upload one file at a time",
    );
    let big = vec![7u8; 1024 * 1024 + 1];
    let reply = upload_as(&app, MEMBER, "file", "big.bin", &big).await;
    assert_error(
        &reply,
        413,
        "BAD_REQUEST",
        "File is larger than this server's configured maximum upload size (1 MiB).",
    );
    let reply = send(app.request(Method::POST, UPLOADS, Auth::None)).await;
    assert_error(&reply, 401, "UNAUTHORIZED", NOT_LOGGED_IN);
    // Exactly the limit is fine; nothing refused was kept.
    upload(&app, MEMBER, "max.bin", &vec![1u8; 1024 * 1024]).await;
    let list = attachments(&app, MEMBER).await;
    assert_eq!(list["attachments"].as_array().unwrap().len(), 1);
    assert_eq!(list["upload_space_used"], 1024 * 1024);
    assert!(!stored_path(&app, &big).exists());
    let tmp = app.dir.path().join("uploads/tmp");
    assert_eq!(std::fs::read_dir(tmp).map(|d| d.count()).unwrap_or(0), 0);
    let state = app
        .ok(
            "POST",
            "/api/v1/register",
            MEMBER,
            &[("fetch_event_types", r#"["realm"]"#)],
        )
        .await;
    assert_eq!(state["max_file_upload_size_mib"], 1);
}

#[actix_web::test]
async fn delete_attachments_and_their_files() {
    let app = TestApp::spawn().await;
    let same = b"same bytes";
    upload(&app, MEMBER, "one.txt", same).await;
    upload(&app, MEMBER, "two.txt", same).await;
    upload(&app, OTHELLO, "three.txt", same).await;
    let mine = attachments(&app, MEMBER).await["attachments"].clone();
    let theirs = attachments(&app, OTHELLO).await["attachments"][0]["id"]
        .as_i64()
        .unwrap();
    let (a, b) = (
        mine[0]["id"].as_i64().unwrap(),
        mine[1]["id"].as_i64().unwrap(),
    );
    assert_eq!(
        attachments(&app, MEMBER).await["upload_space_used"],
        3 * same.len()
    );
    app.err(
        "DELETE",
        &format!("{ATTACHMENTS}/{theirs}"),
        MEMBER,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid attachment",
    )
    .await;
    app.err(
        "DELETE",
        &format!("{ATTACHMENTS}/{theirs}"),
        ADMIN,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid attachment",
    )
    .await;
    app.err(
        "DELETE",
        &format!("{ATTACHMENTS}/99999"),
        MEMBER,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid attachment",
    )
    .await;
    app.err(
        "DELETE",
        &format!("{ATTACHMENTS}/abc"),
        MEMBER,
        &[],
        400,
        "BAD_REQUEST",
        "attachment_id is not an integer",
    )
    .await;
    let reply = send(app.request(Method::DELETE, &format!("{ATTACHMENTS}/{a}"), Auth::None)).await;
    assert_error(&reply, 401, "UNAUTHORIZED", NOT_LOGGED_IN);

    // One file serves all three; it goes with the last of them.
    let path = stored_path(&app, same);
    app.ok("DELETE", &format!("{ATTACHMENTS}/{a}"), MEMBER, &[])
        .await;
    app.ok("DELETE", &format!("{ATTACHMENTS}/{b}"), MEMBER, &[])
        .await;
    assert!(path.exists());
    assert_eq!(attachments(&app, MEMBER).await["attachments"], json!([]));
    assert_eq!(
        attachments(&app, MEMBER).await["upload_space_used"],
        same.len()
    );
    app.err(
        "DELETE",
        &format!("{ATTACHMENTS}/{a}"),
        MEMBER,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid attachment",
    )
    .await;
    let url = format!("/user_uploads/{}", mine[0]["path_id"].as_str().unwrap());
    assert_eq!(fetch_as(&app, MEMBER, &url).await.0, StatusCode::NOT_FOUND);
    app.ok("DELETE", &format!("{ATTACHMENTS}/{theirs}"), OTHELLO, &[])
        .await;
    assert!(!path.exists());
}

#[actix_web::test]
async fn attachment_events_go_to_the_uploader() {
    let app = TestApp::spawn().await;
    let mine = app.register(MEMBER, &[]).await;
    let other = app.register(OTHELLO, &[]).await;
    upload(&app, MEMBER, "a.txt", b"abc").await;
    let id = attachments(&app, MEMBER).await["attachments"][0].clone();
    app.ok(
        "DELETE",
        &format!("{ATTACHMENTS}/{}", id["id"]),
        MEMBER,
        &[],
    )
    .await;
    let events = app.events(MEMBER, &mine).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["type"], "attachment");
    assert_eq!(events[0]["op"], "add");
    assert_eq!(events[0]["attachment"], id);
    assert_eq!(events[0]["upload_space_used"], 3);
    assert_eq!(events[1]["op"], "remove");
    assert_eq!(events[1]["attachment"], json!({"id": id["id"]}));
    assert_eq!(events[1]["upload_space_used"], 0);
    assert!(app.events(OTHELLO, &other).await.is_empty());
}

#[actix_web::test]
async fn uploads_survive_a_restart() {
    let mut app = TestApp::spawn_durable().await;
    let url = upload(&app, MEMBER, "keep.txt", b"kept").await;
    upload(&app, MEMBER, "gone.txt", b"gone").await;
    let gone = attachments(&app, MEMBER).await["attachments"][1]["id"].clone();
    app.ok("DELETE", &format!("{ATTACHMENTS}/{gone}"), MEMBER, &[])
        .await;
    let before = attachments(&app, MEMBER).await;
    app.restart().await;
    assert_eq!(attachments(&app, MEMBER).await, before);
    assert_eq!(fetch_as(&app, MEMBER, &url).await.2, b"kept");
    // Ids keep growing.
    upload(&app, MEMBER, "new.txt", b"new").await;
    let list = attachments(&app, MEMBER).await["attachments"].clone();
    assert!(list[1]["id"].as_i64() > gone.as_i64());
}

#[actix_web::test]
async fn unclaimed_uploads_are_swept_after_three_weeks() {
    let clock = ManualClock::new(1_700_000_000_000);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    upload(&app, MEMBER, "old.txt", b"old").await;
    clock.advance_ms(10 * DAY_MS);
    upload(&app, OTHELLO, "newer.txt", b"newer").await;
    // A stray file (a crash between writing and recording) and a stray temporary file.
    let stray = stored_path(&app, b"stray");
    std::fs::write(&stray, b"stray").unwrap();
    let server = app.server();
    clock.advance_ms(10 * DAY_MS);
    assert_eq!(server.sweep_uploads().await, 0);
    assert!(!stray.exists(), "stray files are removed");
    assert!(stored_path(&app, b"old").exists());
    clock.advance_ms(DAY_MS + 1);
    assert_eq!(server.sweep_uploads().await, 1);
    assert_eq!(attachments(&app, MEMBER).await["attachments"], json!([]));
    assert!(!stored_path(&app, b"old").exists());
    assert_eq!(
        attachments(&app, OTHELLO).await["attachments"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    clock.advance_ms(10 * DAY_MS);
    assert_eq!(server.sweep_uploads().await, 1);
    assert_eq!(attachments(&app, OTHELLO).await["upload_space_used"], 0);
}

/// A sweep period of one day; an upload a message links is never swept, and is read
/// only by those who may read the message.
#[actix_web::test]
async fn claimed_uploads_are_never_swept_and_the_period_is_configurable() {
    let clock = ManualClock::new(1_700_000_000_000);
    let app =
        TestApp::spawn_configured_with_clock(clock.clone(), |c| c.upload_sweep_days = 1).await;
    upload(&app, MEMBER, "loose.txt", b"loose").await;
    let linked = upload(&app, MEMBER, "linked.txt", b"linked").await;
    // Linked from a message in a public channel the guest is not in.
    app.ok(
        "POST",
        "/api/v1/messages",
        MEMBER,
        &[
            ("type", "stream"),
            ("to", "Zulip"),
            ("topic", "files"),
            ("content", &format!("[linked]({linked})")),
        ],
    )
    .await;
    let server = app.server();
    // One day exactly: kept.
    clock.advance_ms(DAY_MS);
    assert_eq!(server.sweep_uploads().await, 0);
    assert!(stored_path(&app, b"loose").exists());
    // A second later: the unclaimed one goes, file and all.
    clock.advance_ms(1_000);
    assert_eq!(server.sweep_uploads().await, 1);
    assert!(!stored_path(&app, b"loose").exists());
    let list = attachments(&app, MEMBER).await["attachments"].clone();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["name"], "linked.txt");
    // The claimed one stays, however old.
    clock.advance_ms(30 * DAY_MS);
    assert_eq!(server.sweep_uploads().await, 0);
    assert!(stored_path(&app, b"linked").exists());
    assert_eq!(
        attachments(&app, MEMBER).await["attachments"][0]["name"],
        "linked.txt"
    );
    // Readers of the channel read it; the guest, who cannot see the channel, may not.
    let (status, _, bytes) = fetch_as(&app, OTHELLO, &linked).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(bytes, b"linked");
    assert_eq!(fetch_as(&app, MEMBER, &linked).await.0, StatusCode::OK);
    assert_eq!(
        fetch_as(&app, POLONIUS, &linked).await.0,
        StatusCode::FORBIDDEN
    );
}

#[actix_web::test]
async fn the_sweep_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = TestApp::spawn_configured(dir, |c| c.upload_sweep_days = 0).await;
    upload(&app, MEMBER, "forever.txt", b"forever").await;
    assert_eq!(app.server().sweep_uploads().await, 0);
    app.restart().await;
    assert_eq!(
        attachments(&app, MEMBER).await["attachments"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

/// `hearth serve --dev --durability always` as a child process on a free port.
struct Child {
    child: std::process::Child,
    url: String,
}

impl Child {
    async fn start(data: &std::path::Path) -> Child {
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let child = std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
                .env("HEARTH_METRICS_BIND", "off")
                .env("HEARTH_ADMIN_BIND", "off")
                .args(["serve", "--dev", "--durability", "always", "--workers", "2"])
                .arg("--data")
                .arg(data)
                .arg("--bind")
                .arg(format!("127.0.0.1:{port}"))
                .env_remove("HEARTH_URL")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("start the hearth binary");
            let mut me = Child {
                child,
                url: format!("http://127.0.0.1:{port}"),
            };
            let ready = poll(std::time::Duration::from_secs(60), "hearth answers", || {
                let (url, exited) = (me.url.clone(), me.child.try_wait().unwrap().is_some());
                async move {
                    if exited {
                        return Some(false);
                    }
                    let ok = client()
                        .get(format!("{url}/api/v1/server_settings"))
                        .send()
                        .await
                        .is_ok_and(|r| r.status() == StatusCode::OK);
                    ok.then_some(true)
                }
            })
            .await;
            if ready {
                return me;
            }
        }
        panic!("hearth did not start");
    }

    /// SIGKILL: no snapshot, no flush.
    fn kill_9(mut self) {
        self.child.kill().expect("kill -9");
        self.child.wait().expect("reap");
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[actix_web::test]
async fn acknowledged_uploads_fields_and_linkifiers_survive_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let http = client();
    let key = |url: String, email: &'static str| {
        let http = http.clone();
        async move {
            let (_, _, body) = send(
                http.post(format!("{url}/api/v1/dev_fetch_api_key"))
                    .form(&[("username", email)]),
            )
            .await;
            body["api_key"].as_str().unwrap().to_owned()
        }
    };
    let server = Child::start(&data).await;
    let (hamlet, iago) = (
        key(server.url.clone(), MEMBER).await,
        key(server.url.clone(), ADMIN).await,
    );
    let mut urls = Vec::new();
    for i in 0..3 {
        let part = reqwest::multipart::Part::bytes(format!("file {i}").into_bytes())
            .file_name(format!("f{i}.txt"));
        let (status, _, body) = send(
            http.post(format!("{}{UPLOADS}", server.url))
                .basic_auth(MEMBER, Some(&hamlet))
                .multipart(reqwest::multipart::Form::new().part("file", part)),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        urls.push(body["url"].as_str().unwrap().to_owned());
    }
    let (status, _, _) = send(
        http.post(format!("{}/api/v1/realm/filters", server.url))
            .basic_auth(ADMIN, Some(&iago))
            .form(&[
                ("pattern", "K-(?P<id>[0-9]+)"),
                ("url_template", "https://k.com/{id}"),
            ]),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = send(
        http.patch(format!("{}/api/v1/users/me/profile_data", server.url))
            .basic_auth(MEMBER, Some(&hamlet))
            .form(&[("data", r#"[{"id": 1, "value": "K-7"}]"#)]),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    server.kill_9();

    let server = Child::start(&data).await;
    for (i, url) in urls.iter().enumerate() {
        let resp = http
            .get(format!("{}{url}", server.url))
            .basic_auth(MEMBER, Some(&hamlet))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{url}");
        assert_eq!(resp.bytes().await.unwrap(), format!("file {i}").as_bytes());
    }
    let (_, _, list) = send(
        http.get(format!("{}{ATTACHMENTS}", server.url))
            .basic_auth(MEMBER, Some(&hamlet)),
    )
    .await;
    assert_eq!(list["attachments"].as_array().unwrap().len(), 3);
    let (_, _, me) = send(
        http.get(format!("{}/api/v1/users/me", server.url))
            .basic_auth(MEMBER, Some(&hamlet)),
    )
    .await;
    assert_eq!(
        me["profile_data"]["1"],
        json!({"value": "K-7", "rendered_value": "<p><a href=\"https://k.com/7\">K-7</a></p>"})
    );
    let (_, _, linkifiers) = send(
        http.get(format!("{}/api/v1/realm/linkifiers", server.url))
            .basic_auth(MEMBER, Some(&hamlet)),
    )
    .await;
    assert_eq!(linkifiers["linkifiers"][3]["pattern"], "K-(?P<id>[0-9]+)");
}

#[actix_web::test]
async fn messages_claim_uploads_and_share_them_with_their_readers() {
    let app = TestApp::spawn().await;
    let url = upload(&app, MEMBER, "plan.txt", b"the plan\n").await;
    // Before any message links it, only the uploader reads it.
    assert_eq!(fetch_as(&app, OTHELLO, &url).await.0, StatusCode::FORBIDDEN);
    let content = format!("see [plan.txt]({url})");
    let sent = app
        .ok(
            "POST",
            "/api/v1/messages",
            MEMBER,
            &[
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", "plans"),
                ("content", &content),
            ],
        )
        .await;
    let id = sent["id"].as_u64().unwrap();
    // Anyone who may read the message reads the file; the attachment lists the message.
    let (status, _, bytes) = fetch_as(&app, OTHELLO, &url).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(bytes, b"the plan\n");
    let list = app.ok("GET", "/api/v1/attachments", MEMBER, &[]).await;
    assert_eq!(list["attachments"][0]["messages"][0]["id"], id);
    // A direct message's upload stays with its participants.
    let secret = upload(&app, MEMBER, "secret.txt", b"secret\n").await;
    let othello = app.user_id(OTHELLO).await;
    app.ok(
        "POST",
        "/api/v1/messages",
        MEMBER,
        &[
            ("type", "direct"),
            ("to", &format!("[{othello}]")),
            ("content", &format!("[s]({secret})")),
        ],
    )
    .await;
    assert_eq!(fetch_as(&app, OTHELLO, &secret).await.0, StatusCode::OK);
    assert_eq!(fetch_as(&app, IAGO, &secret).await.0, StatusCode::FORBIDDEN);
    // An edit that drops the link detaches the upload.
    let edited = app
        .ok(
            "PATCH",
            &format!("/api/v1/messages/{id}"),
            MEMBER,
            &[("content", "no plan")],
        )
        .await;
    assert_eq!(edited["detached_uploads"].as_array().unwrap().len(), 1);
    assert_eq!(fetch_as(&app, OTHELLO, &url).await.0, StatusCode::FORBIDDEN);
    // Deleting the message that holds the last link deletes the attachment and its file.
    let doomed = upload(&app, MEMBER, "doomed.txt", b"doomed\n").await;
    let sent = app
        .ok(
            "POST",
            "/api/v1/messages",
            MEMBER,
            &[
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", "plans"),
                ("content", &format!("[d]({doomed})")),
            ],
        )
        .await;
    let before = app.ok("GET", "/api/v1/attachments", MEMBER, &[]).await["attachments"]
        .as_array()
        .unwrap()
        .len();
    app.ok(
        "DELETE",
        &format!("/api/v1/messages/{}", sent["id"]),
        MEMBER,
        &[],
    )
    .await;
    let after = app.ok("GET", "/api/v1/attachments", MEMBER, &[]).await["attachments"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(after, before - 1);
    assert_eq!(
        fetch_as(&app, MEMBER, &doomed).await.0,
        StatusCode::NOT_FOUND
    );
}

/// What a user uploaded is served as user content (Zulip's): the type the uploader
/// chose is kept, never sniffed, and opened as a page it runs nothing.
#[actix_web::test]
async fn uploads_are_served_as_user_content_that_runs_nothing() {
    let app = TestApp::spawn().await;
    let page = b"<script>document.title='ran'</script>";
    let key = app.api_key(MEMBER).await;
    let part = reqwest::multipart::Part::bytes(page.to_vec())
        .file_name("page.html")
        .mime_str("text/html")
        .unwrap();
    let form = reqwest::multipart::Form::new().part("file", part);
    let reply = send(
        app.request(Method::POST, UPLOADS, Auth::Basic(MEMBER, &key))
            .multipart(form),
    )
    .await;
    let url = assert_success(&reply)["url"].as_str().unwrap().to_owned();
    let temporary = app.ok("GET", &format!("/api/v1{url}"), MEMBER, &[]).await["url"]
        .as_str()
        .unwrap()
        .to_owned();
    for (path, auth) in [
        (url.as_str(), Auth::Basic(MEMBER, &key)),
        (temporary.as_str(), Auth::None),
    ] {
        let (status, headers, got) = fetch(&app, path, auth).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(got, page);
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(
            headers["content-security-policy"], "default-src 'none'; sandbox",
            "{path}"
        );
    }
}

// ---- resumable uploads (`/api/v1/tus`) ---------------------------------------------------

const TUS: &str = "/api/v1/tus";

/// A tus request as `email` (no credentials for `None`), with the protocol's version.
async fn tus_as(
    app: &TestApp,
    email: Option<&str>,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (StatusCode, reqwest::header::HeaderMap, Vec<u8>) {
    let key = match email {
        Some(email) => Some(app.api_key(email).await),
        None => None,
    };
    let auth = match (email, &key) {
        (Some(email), Some(key)) => Auth::Basic(email, key),
        _ => Auth::None,
    };
    let mut rb = app
        .request(method, path, auth)
        .header("Tus-Resumable", "1.0.0");
    for (name, value) in headers {
        rb = rb.header(*name, *value);
    }
    let resp = rb.body(body.to_vec()).send().await.expect("sent");
    let (status, headers) = (resp.status(), resp.headers().clone());
    (status, headers, resp.bytes().await.expect("body").to_vec())
}

/// Creates an upload of `length` bytes named `name`; returns its path.
async fn tus_create(app: &TestApp, email: &str, length: u64, name: &str) -> String {
    let metadata = format!(
        "filename {},filetype dGV4dC9wbGFpbg==",
        base64::engine::general_purpose::STANDARD.encode(name)
    );
    let length = length.to_string();
    let (status, headers, body) = tus_as(
        app,
        Some(email),
        Method::POST,
        TUS,
        &[("Upload-Length", &length), ("Upload-Metadata", &metadata)],
        b"",
    )
    .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(headers["tus-resumable"], "1.0.0");
    let location = headers["location"].to_str().unwrap();
    let id = location.rsplit('/').next().unwrap();
    assert!(location.ends_with(&format!("{TUS}/{id}")), "{location}");
    assert_eq!(id.len(), 32, "{location}");
    format!("{TUS}/{id}")
}

/// Appends `bytes` at `offset`.
async fn tus_patch(
    app: &TestApp,
    email: &str,
    path: &str,
    offset: u64,
    bytes: &[u8],
) -> (StatusCode, reqwest::header::HeaderMap, Vec<u8>) {
    let offset = offset.to_string();
    tus_as(
        app,
        Some(email),
        Method::PATCH,
        path,
        &[
            ("Upload-Offset", &offset),
            ("Content-Type", "application/offset+octet-stream"),
        ],
        bytes,
    )
    .await
}

/// The offset `HEAD` answers (the status when it is not 200).
async fn tus_offset(app: &TestApp, email: &str, path: &str) -> Result<u64, StatusCode> {
    let (status, headers, _) = tus_as(app, Some(email), Method::HEAD, path, &[], b"").await;
    if status != StatusCode::OK {
        return Err(status);
    }
    assert_eq!(headers["cache-control"], "no-store");
    Ok(headers["upload-offset"].to_str().unwrap().parse().unwrap())
}

fn text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

use base64::Engine as _;

#[actix_web::test]
async fn a_resumable_upload_arrives_in_several_patches_and_becomes_an_upload() {
    let app = TestApp::spawn().await;
    // The capabilities.
    let (status, headers, _) = tus_as(&app, None, Method::OPTIONS, TUS, &[], b"").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["tus-version"], "1.0.0");
    assert_eq!(headers["tus-extension"], "creation,termination");
    assert_eq!(headers["tus-max-size"], (100u64 << 20).to_string().as_str());

    let contents = b"the plan, in three parts.\n";
    let path = tus_create(&app, MEMBER, contents.len() as u64, "plan notes.txt").await;
    assert_eq!(tus_offset(&app, MEMBER, &path).await, Ok(0));
    let (status, headers, _) = tus_patch(&app, MEMBER, &path, 0, &contents[..10]).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(headers["upload-offset"], "10");
    // The client lost track: HEAD tells it where to resume.
    assert_eq!(tus_offset(&app, MEMBER, &path).await, Ok(10));
    // A chunk at the wrong offset is refused, as tusd refuses it.
    let (status, _, body) = tus_patch(&app, MEMBER, &path, 4, &contents[4..]).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(text(&body), "ERR_MISMATCHED_OFFSET: mismatched offset\n");
    // Only `application/offset+octet-stream` bodies.
    let (status, _, body) = tus_as(
        &app,
        Some(MEMBER),
        Method::PATCH,
        &path,
        &[("Upload-Offset", "10"), ("Content-Type", "text/plain")],
        &contents[10..],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        text(&body),
        "ERR_INVALID_CONTENT_TYPE: missing or invalid Content-Type header\n"
    );
    let (status, headers, _) = tus_patch(&app, MEMBER, &path, 10, &contents[10..18]).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(headers["upload-offset"], "18");
    // The last chunk: the file is an upload now, answered as Zulip's hook answers.
    let (status, headers, body) = tus_patch(&app, MEMBER, &path, 18, &contents[18..]).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(
        headers["upload-offset"],
        contents.len().to_string().as_str()
    );
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["filename"], "plan notes.txt");
    let url = answer["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with("/user_uploads/2/"), "{url}");
    assert!(url.ends_with("/plan-notes.txt"), "{url}");
    assert_eq!(answer.as_object().unwrap().len(), 2, "{answer}");
    let (status, headers, bytes) = fetch_as(&app, MEMBER, &url).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(bytes, contents);
    assert!(headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let list = app.ok("GET", ATTACHMENTS, MEMBER, &[]).await;
    assert_eq!(list["attachments"][0]["name"], "plan notes.txt");
    assert_eq!(list["attachments"][0]["size"], contents.len());
    // The upload is complete: HEAD says so, and another PATCH at its end writes nothing.
    assert_eq!(
        tus_offset(&app, MEMBER, &path).await,
        Ok(contents.len() as u64)
    );
    let end = contents.len() as u64;
    let (status, headers, _) = tus_patch(&app, MEMBER, &path, end, b"").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(headers["upload-offset"], end.to_string().as_str());
    let list = app.ok("GET", ATTACHMENTS, MEMBER, &[]).await;
    assert_eq!(list["attachments"].as_array().unwrap().len(), 1);

    // An empty file is complete when it is created.
    let (status, headers, body) = tus_as(
        &app,
        Some(MEMBER),
        Method::POST,
        TUS,
        &[("Upload-Length", "0"), ("Upload-Metadata", "filename ")],
        b"",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    assert!(headers.contains_key("location"));
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["filename"], "uploaded-file");
    // Zulip serves the protocol under `/api/v1` only: under `/json` it answers as
    // the other paths served under `/api/v1` alone do.
    let (unknown, _, unknown_body) = tus_as(
        &app,
        Some(MEMBER),
        Method::GET,
        "/json/server_settings",
        &[],
        b"",
    )
    .await;
    let (status, _, body) = tus_as(&app, Some(MEMBER), Method::GET, "/json/tus", &[], b"").await;
    assert_ne!(status, StatusCode::OK);
    assert_eq!((status, body), (unknown, unknown_body));
}

#[actix_web::test]
async fn resumable_uploads_refuse_what_tusd_and_zulip_refuse() {
    let app = TestApp::spawn_configured(tempfile::tempdir().unwrap(), |c| {
        c.max_file_upload_size_mib = 1
    })
    .await;
    let json_of = |body: &[u8]| -> Value { serde_json::from_slice(body).unwrap() };
    // Larger than the server's limit: Zulip's hook refuses it.
    let (status, _, body) = tus_as(
        &app,
        Some(MEMBER),
        Method::POST,
        TUS,
        &[("Upload-Length", "1048577")],
        b"",
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        json_of(&body),
        json!({"message": "Uploaded file is larger than the allowed limit of 1 MiB"})
    );
    // A length given later.
    let (status, _, body) = tus_as(
        &app,
        Some(MEMBER),
        Method::POST,
        TUS,
        &[("Upload-Defer-Length", "1")],
        b"",
    )
    .await;
    assert_eq!(status, StatusCode::LENGTH_REQUIRED);
    assert_eq!(
        json_of(&body),
        json!({"message": "SizeIsDeferred is not supported"})
    );
    // No length at all, a bad one.
    for headers in [&[][..], &[("Upload-Length", "-3")][..]] {
        let (status, _, body) = tus_as(&app, Some(MEMBER), Method::POST, TUS, headers, b"").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            text(&body),
            "ERR_INVALID_UPLOAD_LENGTH: missing or invalid Upload-Length header\n"
        );
    }
    // Without the protocol's version.
    let key = app.api_key(MEMBER).await;
    let resp = app
        .request(Method::POST, TUS, Auth::Basic(MEMBER, &key))
        .header("Upload-Length", "3")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::PRECONDITION_FAILED);
    assert_eq!(
        resp.text().await.unwrap(),
        "ERR_UNSUPPORTED_VERSION: missing, invalid or unsupported Tus-Resumable header\n"
    );
    // More bytes than the upload's length.
    let path = tus_create(&app, MEMBER, 4, "four.txt").await;
    let (status, _, body) = tus_patch(&app, MEMBER, &path, 0, b"12345").await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        text(&body),
        "ERR_UPLOAD_SIZE_EXCEEDED: upload's size exceeded\n"
    );
    assert_eq!(tus_offset(&app, MEMBER, &path).await, Ok(0));
    // No offset.
    let (status, _, body) = tus_as(
        &app,
        Some(MEMBER),
        Method::PATCH,
        &path,
        &[("Content-Type", "application/offset+octet-stream")],
        b"1",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        text(&body),
        "ERR_INVALID_OFFSET: missing or invalid Upload-Offset header\n"
    );
    // Nothing was stored.
    let list = app.ok("GET", ATTACHMENTS, MEMBER, &[]).await;
    assert_eq!(list["attachments"], json!([]));
}

#[actix_web::test]
async fn a_resumable_upload_is_its_uploaders_alone() {
    let app = TestApp::spawn().await;
    let path = tus_create(&app, MEMBER, 6, "mine.txt").await;
    let (status, _, _) = tus_patch(&app, MEMBER, &path, 0, b"abc").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // Another user does not find it.
    assert_eq!(
        tus_offset(&app, OTHELLO, &path).await,
        Err(StatusCode::NOT_FOUND)
    );
    let (status, _, body) = tus_patch(&app, OTHELLO, &path, 3, b"xyz").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(text(&body), "ERR_UPLOAD_NOT_FOUND: upload not found\n");
    let (status, _, _) = tus_as(&app, Some(OTHELLO), Method::DELETE, &path, &[], b"").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Without credentials, or with a wrong key: Zulip's hook refuses.
    let unauthenticated = json!({"message": "Unauthenticated upload"});
    let (status, _, body) = tus_as(
        &app,
        None,
        Method::POST,
        TUS,
        &[("Upload-Length", "3")],
        b"",
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap(),
        unauthenticated
    );
    let (status, _, body) = tus_as(
        &app,
        None,
        Method::PATCH,
        &path,
        &[
            ("Upload-Offset", "3"),
            ("Content-Type", "application/offset+octet-stream"),
        ],
        b"xyz",
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap(),
        unauthenticated
    );
    let resp = app
        .request(Method::HEAD, &path, Auth::Basic(MEMBER, "not-the-key"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    // Its owner's upload is untouched, and finishes.
    assert_eq!(tus_offset(&app, MEMBER, &path).await, Ok(3));
    let (status, _, body) = tus_patch(&app, MEMBER, &path, 3, b"def").await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    let url = serde_json::from_slice::<Value>(&body).unwrap()["url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(fetch_as(&app, MEMBER, &url).await.2, b"abcdef");
    assert!(
        app.ok("GET", ATTACHMENTS, OTHELLO, &[]).await["attachments"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[actix_web::test]
async fn deleting_a_resumable_upload_abandons_it() {
    let app = TestApp::spawn().await;
    let path = tus_create(&app, MEMBER, 8, "gone.txt").await;
    let (status, _, _) = tus_patch(&app, MEMBER, &path, 0, b"half").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, headers, _) = tus_as(&app, Some(MEMBER), Method::DELETE, &path, &[], b"").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(headers["tus-resumable"], "1.0.0");
    assert_eq!(
        tus_offset(&app, MEMBER, &path).await,
        Err(StatusCode::NOT_FOUND)
    );
    let (status, _, _) = tus_patch(&app, MEMBER, &path, 4, b"more").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = tus_as(&app, Some(MEMBER), Method::DELETE, &path, &[], b"").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let list = app.ok("GET", ATTACHMENTS, MEMBER, &[]).await;
    assert_eq!(list["attachments"], json!([]));
}

#[actix_web::test]
async fn a_restart_discards_partial_uploads_and_keeps_finished_ones() {
    let mut app = TestApp::spawn().await;
    let partial = tus_create(&app, MEMBER, 10, "partial.txt").await;
    assert_eq!(
        tus_patch(&app, MEMBER, &partial, 0, b"12345").await.0,
        StatusCode::NO_CONTENT
    );
    let done = tus_create(&app, MEMBER, 4, "done.txt").await;
    let (status, _, body) = tus_patch(&app, MEMBER, &done, 0, b"done").await;
    assert_eq!(status, StatusCode::OK);
    let url = serde_json::from_slice::<Value>(&body).unwrap()["url"]
        .as_str()
        .unwrap()
        .to_owned();
    app.restart().await;
    // The partial upload is gone: the client starts again.
    assert_eq!(
        tus_offset(&app, MEMBER, &partial).await,
        Err(StatusCode::NOT_FOUND)
    );
    let (status, _, _) = tus_patch(&app, MEMBER, &partial, 5, b"67890").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(fetch_as(&app, MEMBER, &url).await.2, b"done");
}

#[actix_web::test]
async fn a_finished_resumable_upload_survives_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let http = client();
    let server = Child::start(&data).await;
    let (_, _, body) = send(
        http.post(format!("{}/api/v1/dev_fetch_api_key", server.url))
            .form(&[("username", MEMBER)]),
    )
    .await;
    let key = body["api_key"].as_str().unwrap().to_owned();
    let resp = http
        .post(format!("{}{TUS}", server.url))
        .basic_auth(MEMBER, Some(&key))
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", "12")
        .header("Upload-Metadata", "filename a2lsbC50eHQ=")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let location = resp.headers()["location"].to_str().unwrap().to_owned();
    let id = location.rsplit('/').next().unwrap().to_owned();
    let mut url = String::new();
    for (offset, chunk) in [(0, "survives "), (9, "it\n")] {
        let resp = http
            .patch(format!("{}{TUS}/{id}", server.url))
            .basic_auth(MEMBER, Some(&key))
            .header("Tus-Resumable", "1.0.0")
            .header("Upload-Offset", offset.to_string())
            .header("Content-Type", "application/offset+octet-stream")
            .body(chunk)
            .send()
            .await
            .unwrap();
        if offset == 9 {
            assert_eq!(resp.status(), StatusCode::OK);
            let body: Value = resp.json().await.unwrap();
            url = body["url"].as_str().unwrap().to_owned();
        } else {
            assert_eq!(resp.status(), StatusCode::NO_CONTENT);
        }
    }
    server.kill_9();
    let server = Child::start(&data).await;
    let resp = http
        .get(format!("{}{url}", server.url))
        .basic_auth(MEMBER, Some(&key))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK, "{url}");
    assert_eq!(resp.bytes().await.unwrap(), "survives it\n".as_bytes());
    let (_, _, list) = send(
        http.get(format!("{}{ATTACHMENTS}", server.url))
            .basic_auth(MEMBER, Some(&key)),
    )
    .await;
    assert_eq!(list["attachments"][0]["name"], "kill.txt");
}

#[actix_web::test]
async fn a_user_has_a_bounded_number_of_resumable_uploads_in_progress() {
    let app = TestApp::spawn().await;
    let mut paths = Vec::new();
    for i in 0..32 {
        paths.push(tus_create(&app, MEMBER, 3, &format!("f{i}.txt")).await);
    }
    let (status, _, body) = tus_as(
        &app,
        Some(MEMBER),
        Method::POST,
        TUS,
        &[("Upload-Length", "3")],
        b"",
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap(),
        json!({"message": "You may have at most 32 uploads in progress"})
    );
    // Someone else is not held back.
    tus_create(&app, OTHELLO, 3, "other.txt").await;
    // A finished upload, and a deleted one, free their places.
    assert_eq!(
        tus_patch(&app, MEMBER, &paths[0], 0, b"abc").await.0,
        StatusCode::OK
    );
    let (status, _, _) = tus_as(&app, Some(MEMBER), Method::DELETE, &paths[1], &[], b"").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    tus_create(&app, MEMBER, 3, "again.txt").await;
    tus_create(&app, MEMBER, 3, "and again.txt").await;
}
