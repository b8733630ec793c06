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
