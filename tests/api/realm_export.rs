//! Data exports of the organization (`POST /export/realm`, `GET /export/realm`,
//! `DELETE /export/realm/{export_id}`, `GET /export/realm/consents`): Zulip's answers
//! (`zerver/views/realm_export.py`, `zerver/tests/test_realm_export.py`), the
//! `realm_export` events to the administrators, the download of the archive, which
//! `hearth realm import` turns back into the realm, and an export cut off by a stop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::child::ChildServer;
use crate::common::*;
use hearth::realm::ManualClock;
use reqwest::StatusCode;
use serde_json::Value;

const EXPORTS: &str = "/api/v1/export/realm";
const NOT_ADMIN: &str = "Must be an organization administrator";

/// The exports as `who` lists them.
async fn exports(app: &TestApp, who: &str) -> Vec<Value> {
    app.ok("GET", EXPORTS, who, &[]).await["exports"]
        .as_array()
        .expect("exports")
        .clone()
}

/// Waits until export `id` is no longer pending; returns it.
async fn finished(app: &TestApp, id: u64) -> Value {
    poll(Duration::from_secs(60), "the export to finish", || async {
        exports(app, IAGO)
            .await
            .into_iter()
            .find(|e| e["id"] == id && e["pending"] == false)
    })
    .await
}

/// Requests an export as `who` and waits for it; returns it.
async fn exported(app: &TestApp, who: &str, params: &[(&str, &str)]) -> Value {
    let id = app.ok("POST", EXPORTS, who, params).await["id"]
        .as_u64()
        .expect("id");
    finished(app, id).await
}

/// The bytes behind an export's URL, fetched without credentials.
async fn download(url: &str) -> (StatusCode, Vec<u8>) {
    let resp = client().get(url).send().await.expect("sent");
    let status = resp.status();
    (status, resp.bytes().await.expect("body").to_vec())
}

#[actix_web::test]
async fn an_export_downloads_and_imports_back_into_the_realm() {
    let app = TestApp::spawn().await;
    let kept = send_stream(&app, HAMLET, "Denmark", "exported", "in the archive").await;
    let before = app.ok("GET", "/api/v1/users", IAGO, &[]).await["members"]
        .as_array()
        .unwrap()
        .len();
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;

    let e = exported(&app, IAGO, &[]).await;
    // Zulip's `RealmExport` fields, and nothing else.
    assert_eq!(
        keys(&e),
        sorted(&[
            "acting_user_id",
            "deleted_timestamp",
            "export_time",
            "export_type",
            "export_url",
            "failed_timestamp",
            "id",
            "pending",
        ])
    );
    assert_eq!(e["acting_user_id"], IAGO_ID);
    assert_eq!(e["export_type"], "public");
    assert_eq!(e["failed_timestamp"], Value::Null);
    assert_eq!(e["deleted_timestamp"], Value::Null);
    assert!(e["export_time"].as_i64().unwrap() >= started - 1, "{e}");
    let url = e["export_url"].as_str().expect("an export_url").to_owned();
    let path = url.strip_prefix(&app.url).expect("on the realm's URL");
    let segments: Vec<&str> = path.split('/').collect();
    assert_eq!(segments[..3], ["", "user_avatars", "exports"], "{url}");
    assert_eq!(segments.len(), 6, "{url}");
    assert_eq!(segments[4].len(), 24, "Zulip's token_urlsafe(18): {url}");
    assert!(segments[5].ends_with(".archive"), "{url}");

    // Downloaded without credentials: a realm archive.
    let (status, bytes) = download(&url).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(&bytes[..8], b"HEARTHAR");
    // A wrong token or realm segment finds nothing.
    let wrong = url.replace(segments[4], "AAAAAAAAAAAAAAAAAAAAAAAA");
    assert_eq!(download(&wrong).await.0, StatusCode::NOT_FOUND);
    let other = url.replace(&format!("/exports/{}/", segments[3]), "/exports/elsewhere/");
    assert_eq!(download(&other).await.0, StatusCode::NOT_FOUND);

    // `hearth realm import` of the downloaded file gives the realm back.
    let (back, _) = import_export(&e).await;
    assert_eq!(
        found(&back, HAMLET, kept).await.as_deref(),
        Some("<p>in the archive</p>")
    );
    let after = back.ok("GET", "/api/v1/users", IAGO, &[]).await["members"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(after, before);
    // The export records (each with its download path) stay behind: the imported
    // realm has none.
    assert_eq!(exports(&back, IAGO).await, Vec::<Value>::new());
}

#[actix_web::test]
async fn the_archive_holds_uploads_but_not_earlier_exports() {
    let app = TestApp::spawn().await;
    let key = app.api_key(HAMLET).await;
    let part = reqwest::multipart::Part::bytes(b"uploaded".to_vec())
        .file_name("f.txt")
        .mime_str("text/plain")
        .unwrap();
    let up = send(
        app.request(
            reqwest::Method::POST,
            "/api/v1/user_uploads",
            Auth::Basic(HAMLET, &key),
        )
        .multipart(reqwest::multipart::Form::new().part("file", part)),
    )
    .await;
    let up_url = assert_success(&up)["url"].as_str().unwrap().to_owned();
    send_stream(&app, HAMLET, "Denmark", "t", &format!("[f]({up_url})")).await;
    let first = exported(&app, IAGO, &[]).await;
    let second = exported(&app, DESDEMONA, &[("export_type", "2")]).await;
    assert_eq!(second["export_type"], "full_with_consent");
    assert_eq!(second["acting_user_id"], DESDEMONA_ID);
    let work = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, e) in [("first", &first), ("second", &second)] {
        let (status, bytes) = download(e["export_url"].as_str().unwrap()).await;
        assert_eq!(status, StatusCode::OK);
        let file = work.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        let (_, manifest) = hearth::storage::archive::verify(&file).expect("sound");
        files.push(manifest.counts.files);
    }
    // The upload and the development realm's emoji image, in both; the second holds
    // no copy of the first export.
    assert_eq!(files, [2, 2]);
    // The upload sweep keeps the exports (they are not uploads).
    app.server().sweep_uploads().await;
    let (status, _) = download(first["export_url"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::OK);
}

#[actix_web::test]
async fn every_refusal_has_zulips_status_code_and_text() {
    let app = TestApp::spawn().await;
    // Roles: administrators and owners only, before any parameter.
    for who in [HAMLET, POLONIUS, SHIVA, DEFAULT_BOT] {
        for (method, path) in [
            ("POST", EXPORTS),
            ("GET", EXPORTS),
            ("GET", "/api/v1/export/realm/consents"),
            ("DELETE", "/api/v1/export/realm/1"),
        ] {
            app.err(
                method,
                path,
                who,
                &[("export_type", "7")],
                400,
                "UNAUTHORIZED_PRINCIPAL",
                NOT_ADMIN,
            )
            .await;
        }
    }
    // `export_type`: `Json[int]` in (1, 2), or its names.
    for (value, msg) in [
        ("3", "Invalid export_type"),
        ("0", "Invalid export_type"),
        ("full_without_consent", "Invalid export_type"),
        ("private", "Invalid export_type"),
        ("1.5", "export_type is not an integer"),
        ("[1]", "export_type is not an integer"),
    ] {
        app.bad("POST", EXPORTS, IAGO, &[("export_type", value)], msg)
            .await;
    }
    assert!(exports(&app, IAGO).await.is_empty(), "nothing recorded");
    // Deletion: an unknown id, a pending export, then a deleted one.
    for id in ["0", "999", "-1"] {
        app.bad(
            "DELETE",
            &format!("{EXPORTS}/{id}"),
            IAGO,
            &[],
            "Invalid data export ID",
        )
        .await;
    }
    app.bad(
        "DELETE",
        &format!("{EXPORTS}/x"),
        IAGO,
        &[],
        "export_id is not an integer",
    )
    .await;
    let e = exported(&app, IAGO, &[]).await;
    let one = format!("{EXPORTS}/{}", e["id"]);
    app.ok("DELETE", &one, DESDEMONA, &[]).await;
    app.bad("DELETE", &one, IAGO, &[], "Export already deleted")
        .await;
    let listed = exports(&app, IAGO).await;
    assert_eq!(listed[0]["export_url"], Value::Null);
    assert!(listed[0]["deleted_timestamp"].is_i64());
    assert_eq!(listed[0]["pending"], false);
    // Its file is gone.
    let (status, _) = download(e["export_url"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[actix_web::test]
async fn five_exports_a_week() {
    let clock = ManualClock::new(1_700_000_000_000);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(
            app.ok("POST", EXPORTS, IAGO, &[]).await["id"]
                .as_u64()
                .unwrap(),
        );
    }
    app.bad("POST", EXPORTS, DESDEMONA, &[], "Exceeded rate limit.")
        .await;
    for id in &ids {
        finished(&app, *id).await;
    }
    // Deleted ones still count, as Zulip counts every row of the week.
    app.ok("DELETE", &format!("{EXPORTS}/{}", ids[0]), IAGO, &[])
        .await;
    app.bad("POST", EXPORTS, IAGO, &[], "Exceeded rate limit.")
        .await;
    clock.advance_ms(7 * 24 * 3600 * 1000 + 1000);
    let id = app.ok("POST", EXPORTS, IAGO, &[]).await["id"]
        .as_u64()
        .unwrap();
    assert_eq!(id, 6);
    finished(&app, id).await;
}

#[actix_web::test]
async fn administrators_hear_of_each_step() {
    let app = TestApp::spawn().await;
    let types = r#"["realm_export", "realm_export_consent"]"#;
    let iago = app.register(IAGO, &[("event_types", types)]).await;
    let owner = app.register(DESDEMONA, &[("event_types", types)]).await;
    let hamlet = app.register(HAMLET, &[("event_types", types)]).await;

    let e = exported(&app, IAGO, &[]).await;
    app.ok("DELETE", &format!("{EXPORTS}/{}", e["id"]), IAGO, &[])
        .await;
    for queue_of in [(IAGO, &iago), (DESDEMONA, &owner)] {
        let got = app.events(queue_of.0, queue_of.1).await;
        let steps: Vec<(bool, bool, bool)> = got
            .iter()
            .map(|ev| {
                assert_eq!(ev["type"], "realm_export", "{ev}");
                let x = &ev["exports"][0];
                (
                    x["pending"] == true,
                    x["export_url"].is_string(),
                    x["deleted_timestamp"].is_i64(),
                )
            })
            .collect();
        // Pending, written (its URL), deleted.
        assert_eq!(
            steps,
            [
                (true, false, false),
                (false, true, false),
                (false, false, true)
            ],
            "{}: {got:#?}",
            queue_of.0
        );
    }
    assert!(app.events(HAMLET, &hamlet).await.is_empty());

    // Consent: the user's setting, announced to the administrators.
    app.ok(
        "PATCH",
        "/api/v1/settings",
        HAMLET,
        &[("allow_private_data_export", "true")],
    )
    .await;
    let got = app.events(IAGO, &iago).await;
    let consent = got.last().unwrap();
    assert_eq!(consent["type"], "realm_export_consent");
    assert_eq!(consent["user_id"], HAMLET_ID);
    assert_eq!(consent["consented"], true);
    assert!(app
        .events(HAMLET, &hamlet)
        .await
        .iter()
        .all(|e| e["type"] != "realm_export_consent"));
}

#[actix_web::test]
async fn consents_list_each_active_human() {
    let app = TestApp::spawn().await;
    app.ok(
        "PATCH",
        "/api/v1/settings",
        HAMLET,
        &[
            ("allow_private_data_export", "true"),
            ("email_address_visibility", "5"),
        ],
    )
    .await;
    let body = app
        .ok("GET", "/api/v1/export/realm/consents", DESDEMONA, &[])
        .await;
    let list = body["export_consents"].as_array().unwrap();
    let users = app.ok("GET", "/api/v1/users", IAGO, &[]).await["members"]
        .as_array()
        .unwrap()
        .clone();
    let humans: Vec<&Value> = users
        .iter()
        .filter(|u| u["is_bot"] == false && u["is_active"] == true)
        .map(|u| &u["user_id"])
        .collect();
    let listed: Vec<&Value> = list.iter().map(|c| &c["user_id"]).collect();
    assert_eq!(listed, humans);
    for c in list {
        assert_eq!(
            keys(c),
            sorted(&["consented", "email_address_visibility", "user_id"])
        );
        let me = c["user_id"] == HAMLET_ID;
        assert_eq!(c["consented"], me, "{c}");
        assert_eq!(c["email_address_visibility"], if me { 5 } else { 1 }, "{c}");
    }
}

/// Writes survive a restart: the list and its files.
#[actix_web::test]
async fn exports_survive_a_restart() {
    let mut app = TestApp::spawn().await;
    let e = exported(&app, IAGO, &[]).await;
    app.restart().await;
    let listed = exports(&app, IAGO).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], e["id"]);
    assert_eq!(listed[0]["export_url"], e["export_url"]);
    // The harness's server changes its port at a restart (a real one keeps its URL):
    // the file downloads from the same path on the new one.
    let path = e["export_url"]
        .as_str()
        .unwrap()
        .split_once("/user_avatars/")
        .unwrap()
        .1;
    let (status, bytes) = download(&format!("{}/user_avatars/{path}", app.url)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(&bytes[..8], b"HEARTHAR");
}

/// An export cut off by the server's end (here `kill -9` right after it was recorded):
/// the next start marks it failed, as Zulip's worker marks an export it sees again,
/// and removes what was written of it.
#[actix_web::test]
async fn an_export_cut_off_by_a_stop_is_marked_failed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_s = data.to_str().unwrap();
    let args = ["--dev", "--data", data_s, "--durability", "always"];
    let server = ChildServer::up(&args, &[("HEARTH_REALM_EXPORT_FAULT", "abort")]);
    let key = dev_key_at(&server.url, IAGO).await;
    // The answer may or may not arrive before the process ends: the record is durable
    // before either.
    let _ = client()
        .post(format!("{}{EXPORTS}", server.url))
        .header("Authorization", basic(IAGO, &key))
        .send()
        .await;
    poll(Duration::from_secs(30), "the process to end", || async {
        server
            .log()
            .iter()
            .any(|l| l.contains("HEARTH_REALM_EXPORT_FAULT"))
            .then_some(())
    })
    .await;
    std::thread::sleep(Duration::from_millis(200));
    drop(server);

    let server = ChildServer::up(&args, &[]);
    let key = dev_key_at(&server.url, IAGO).await;
    let list = poll(
        Duration::from_secs(30),
        "the export marked failed",
        || async {
            let (_, _, body) = send(
                client()
                    .get(format!("{}{EXPORTS}", server.url))
                    .header("Authorization", basic(IAGO, &key)),
            )
            .await;
            let list = body["exports"].as_array().cloned().unwrap_or_default();
            (list.len() == 1 && list[0]["pending"] == false).then_some(list)
        },
    )
    .await;
    assert!(list[0]["failed_timestamp"].is_i64(), "{list:?}");
    assert_eq!(list[0]["export_url"], Value::Null);
    // Nothing of it is left on disk, and it cannot be deleted.
    let exports_dir = hearth::storage::uploads::UploadStore::new(&data)
        .exports_dir(hearth::version::DEV_SUBDOMAIN);
    let left: Vec<_> = std::fs::read_dir(&exports_dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    let (status, _, body) = send(
        client()
            .delete(format!("{}{EXPORTS}/{}", server.url, list[0]["id"]))
            .header("Authorization", basic(IAGO, &key)),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["msg"], "Export failed, nothing to delete");
    let log = server.stop();
    assert!(
        log.iter().any(|l| l.contains("cut off by the last stop")),
        "{log:#?}"
    );
}

/// Uploads `bytes` as `who`; the file's URL.
async fn upload(app: &TestApp, who: &str, bytes: &[u8]) -> String {
    let key = app.api_key(who).await;
    let part = reqwest::multipart::Part::bytes(bytes.to_vec())
        .file_name("f.txt")
        .mime_str("text/plain")
        .unwrap();
    let up = send(
        app.request(
            reqwest::Method::POST,
            "/api/v1/user_uploads",
            Auth::Basic(who, &key),
        )
        .multipart(reqwest::multipart::Form::new().part("file", part)),
    )
    .await;
    assert_success(&up)["url"].as_str().unwrap().to_owned()
}

/// Creates private channel `name` with `members` (ids) as `who`.
async fn private_channel(app: &TestApp, who: &str, name: &str, members: &[i64], shared: bool) {
    app.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        who,
        &[
            ("subscriptions", &format!(r#"[{{"name": "{name}"}}]"#)),
            ("principals", &serde_json::to_string(members).unwrap()),
            ("invite_only", "true"),
            ("history_public_to_subscribers", &shared.to_string()),
        ],
    )
    .await;
}

/// Downloads export `e`, imports it into a new data folder and serves that.
async fn import_export(e: &Value) -> (TestApp, hearth::storage::archive::Manifest) {
    let (app, manifest, _) = import_export_printing(e).await;
    (app, manifest)
}

/// `import_export`, with what the import printed on stdout.
async fn import_export_printing(
    e: &Value,
) -> (TestApp, hearth::storage::archive::Manifest, String) {
    let (status, bytes) = download(e["export_url"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("export.archive");
    std::fs::write(&file, &bytes).unwrap();
    let (_, manifest) = hearth::storage::archive::verify(&file).expect("sound");
    let target = tempfile::tempdir().unwrap();
    let o = output(hearth().args([
        "realm",
        "import",
        "--data",
        target.path().to_str().unwrap(),
        "--archive",
        file.to_str().unwrap(),
    ]));
    assert!(o.status.success(), "import: {}", text(&o.stderr));
    (TestApp::spawn_in(target).await, manifest, text(&o.stdout))
}

/// How many drafts and scheduled messages `who` has in `app`.
async fn personal(app: &TestApp, who: &str) -> (usize, usize) {
    let drafts = app.ok("GET", "/api/v1/drafts", who, &[]).await["drafts"]
        .as_array()
        .unwrap()
        .len();
    let scheduled = app.ok("GET", "/api/v1/scheduled_messages", who, &[]).await
        ["scheduled_messages"]
        .as_array()
        .unwrap()
        .len();
    (drafts, scheduled)
}

/// `who`'s attachment records in `app`: each one's URL path and the messages linking
/// it, by path.
async fn attachments(app: &TestApp, who: &str) -> Vec<(String, Vec<u64>)> {
    let got = app.ok("GET", "/api/v1/attachments", who, &[]).await;
    let mut out: Vec<(String, Vec<u64>)> = got["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let path = format!("/user_uploads/{}", a["path_id"].as_str().unwrap());
            let ids = a["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["id"].as_u64().unwrap())
                .collect();
            (path, ids)
        })
        .collect();
    out.sort();
    out
}

/// Message `id`'s content, if `who` finds it in `app`.
async fn found(app: &TestApp, who: &str, id: u64) -> Option<String> {
    let got = app
        .ok(
            "GET",
            "/api/v1/messages",
            who,
            &[
                ("anchor", &id.to_string()),
                ("num_before", "0"),
                ("num_after", "0"),
            ],
        )
        .await;
    got["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .map(|m| m["content"].as_str().unwrap().to_owned())
}

/// The private data of a realm in its exports: a `public` export holds the messages
/// of public channels only; `full_with_consent` adds the direct and group-direct
/// messages a consenting user takes part in and the private channels they are
/// subscribed to; the uploads only left-out messages link stay out.
#[actix_web::test]
async fn exports_hold_private_data_only_with_consent() {
    let app = TestApp::spawn().await;
    app.ok(
        "PATCH",
        "/api/v1/settings",
        HAMLET,
        &[("allow_private_data_export", "true")],
    )
    .await;
    private_channel(&app, HAMLET, "with hamlet", &[HAMLET_ID, OTHELLO_ID], true).await;
    private_channel(&app, CORDELIA, "without", &[CORDELIA_ID, OTHELLO_ID], true).await;
    let public_file = upload(&app, HAMLET, b"public file").await;
    let private_file = upload(&app, CORDELIA, b"private file").await;
    // Uploaded, never sent: private data of its owner.
    let unsent_file = upload(&app, HAMLET, b"unsent file").await;
    let public = send_stream(&app, HAMLET, "Denmark", "t", &format!("[p]({public_file})")).await;
    let hamlets_channel = send_stream(&app, OTHELLO, "with hamlet", "t", "in hamlet's").await;
    let other_channel = send_stream(&app, OTHELLO, "without", "t", "not hamlet's").await;
    let hamlet_sent = send_direct(&app, HAMLET, &[OTHELLO_ID], "from hamlet").await;
    let hamlet_got = send_direct(&app, CORDELIA, &[HAMLET_ID], "to hamlet").await;
    let hamlet_group = send_direct(
        &app,
        CORDELIA,
        &[HAMLET_ID, OTHELLO_ID],
        "group with hamlet",
    )
    .await;
    let others = send_direct(
        &app,
        CORDELIA,
        &[OTHELLO_ID],
        &format!("[s]({private_file})"),
    )
    .await;
    let others_group =
        send_direct(&app, CORDELIA, &[OTHELLO_ID, PROSPERO_ID], "group without").await;
    // Drafts and scheduled messages: private data too.
    for who in [HAMLET, CORDELIA] {
        app.ok(
            "POST",
            "/api/v1/drafts",
            who,
            &[(
                "drafts",
                r#"[{"type": "private", "to": [12], "topic": "", "content": "a draft"}]"#,
            )],
        )
        .await;
        let at = (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 3600)
            .to_string();
        app.ok(
            "POST",
            "/api/v1/scheduled_messages",
            who,
            &[
                ("type", "direct"),
                ("to", "[12]"),
                ("content", "later"),
                ("scheduled_delivery_timestamp", &at),
            ],
        )
        .await;
    }
    let private = [
        hamlets_channel,
        other_channel,
        hamlet_sent,
        hamlet_got,
        hamlet_group,
        others,
        others_group,
    ];

    // The realm holds them all; a public export only the public channel's.
    assert!(found(&app, OTHELLO, others).await.is_some());
    let e = exported(&app, IAGO, &[("export_type", "1")]).await;
    assert_eq!(e["export_type"], "public");
    let (back, manifest) = import_export(&e).await;
    assert!(found(&back, HAMLET, public).await.is_some());
    for id in private {
        for who in [HAMLET, OTHELLO, CORDELIA, PROSPERO] {
            assert_eq!(found(&back, who, id).await, None, "message {id} as {who}");
        }
    }
    for who in [HAMLET, CORDELIA] {
        assert_eq!(personal(&app, who).await, (1, 1), "{who}");
        assert_eq!(personal(&back, who).await, (0, 0), "{who}");
    }
    // The public channel's message, and the realm's other files but the one only a
    // direct message links (the development realm's emoji image, the public upload).
    let public_count = manifest.counts.messages;
    assert_eq!(manifest.counts.files, 2);
    // Attachment records: only those of exported messages, listing only those
    // (Zulip's `fetch_attachment_data`); Cordelia's upload, which only her direct
    // message links, and Hamlet's unsent one are not there.
    assert_eq!(
        attachments(&back, HAMLET).await,
        [(public_file.clone(), vec![public])]
    );
    assert_eq!(attachments(&back, CORDELIA).await, []);
    assert_eq!(attachments(&app, CORDELIA).await.len(), 1);
    // The imported realm serves and takes new messages.
    send_stream(&back, HAMLET, "Denmark", "t", "after").await;
    drop(back);

    // With consent: Hamlet's direct and group-direct messages and his private
    // channel's; not Cordelia's with others, nor the channel Hamlet is not in.
    let e = exported(&app, IAGO, &[("export_type", "2")]).await;
    let (back, manifest) = import_export(&e).await;
    for id in [public, hamlets_channel] {
        assert!(found(&back, OTHELLO, id).await.is_some(), "message {id}");
    }
    assert_eq!(
        found(&back, OTHELLO, hamlet_sent).await.as_deref(),
        Some("<p>from hamlet</p>")
    );
    assert!(found(&back, HAMLET, hamlet_got).await.is_some());
    assert!(found(&back, OTHELLO, hamlet_group).await.is_some());
    for id in [other_channel, others, others_group] {
        for who in [OTHELLO, CORDELIA, PROSPERO] {
            assert_eq!(found(&back, who, id).await, None, "message {id} as {who}");
        }
    }
    assert_eq!(personal(&back, HAMLET).await, (1, 1));
    assert_eq!(personal(&back, CORDELIA).await, (0, 0));
    // Hamlet consented: his unsent upload comes along (it may be in his drafts).
    assert_eq!(manifest.counts.files, 3);
    let mut hamlets = vec![(public_file.clone(), vec![public]), (unsent_file, vec![])];
    hamlets.sort();
    assert_eq!(attachments(&back, HAMLET).await, hamlets);
    assert_eq!(attachments(&back, CORDELIA).await, []);
    // The four kept private messages more than the public export (any the development
    // realm holds of Hamlet's too).
    assert!(
        manifest.counts.messages >= public_count + 4,
        "{} {public_count}",
        manifest.counts.messages
    );
    drop(back);
}

/// The secrets a realm holds that a data export must not: every user's API key, a
/// password hash, a reusable link's key, a channel's email-gateway token.
struct Secrets {
    keys: Vec<(&'static str, String)>,
    password: &'static str,
    link_key: String,
    email_token: String,
}

async fn secrets(app: &TestApp) -> Secrets {
    let password = "correct horse battery staple 7";
    app.ok(
        "POST",
        "/api/v1/users",
        IAGO,
        &[
            ("email", "keyholder@zulip.com"),
            ("password", password),
            ("full_name", "Key Holder"),
        ],
    )
    .await;
    let mut keys = Vec::new();
    for who in [IAGO, DESDEMONA, HAMLET, BOT, "keyholder@zulip.com"] {
        keys.push((who, app.api_key(who).await));
    }
    let link = app.ok("POST", "/api/v1/invites/multiuse", IAGO, &[]).await["invite_link"]
        .as_str()
        .unwrap()
        .to_owned();
    let link_key = link
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let verona = app.stream_id("Verona").await;
    let address = app
        .ok(
            "GET",
            &format!("/api/v1/streams/{verona}/email_address"),
            IAGO,
            &[],
        )
        .await["email"]
        .as_str()
        .unwrap()
        .to_owned();
    // `verona.<token>.show-sender@host`: the token is the address's second part.
    let local = address.split('@').next().unwrap();
    let email_token = local.split('.').nth(1).unwrap().to_owned();
    assert!(email_token.len() >= 16, "{address}");
    Secrets {
        keys,
        password,
        link_key,
        email_token,
    }
}

#[actix_web::test]
async fn a_data_export_holds_no_credentials_and_its_import_takes_none_of_the_old_ones() {
    let app = TestApp::spawn().await;
    let s = secrets(&app).await;
    let session = dev_session(&app, HAMLET).await;
    // An outgoing-webhook bot: its service's token is a credential of its bot server.
    let bot = app
        .ok(
            "POST",
            "/api/v1/bots",
            HAMLET,
            &[
                ("full_name", "Out Bot"),
                ("short_name", "out"),
                ("bot_type", "3"),
                ("payload_url", r#""https://bots.example/""#),
            ],
        )
        .await;
    let state = app
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("fetch_event_types", r#"["realm_bot"]"#)],
        )
        .await;
    let service_token = state["realm_bots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["user_id"] == bot["user_id"])
        .unwrap()["services"][0]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let e = exported(&app, IAGO, &[]).await;
    let (status, bytes) = download(e["export_url"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    let digest = hearth::realm::sessions::SessionDigest::of(&session).0;

    // None of them in the archive's bytes (the parts are plain bincode)...
    let holds = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    for (who, key) in &s.keys {
        assert!(!holds(key.as_bytes()), "{who}'s API key is in the export");
    }
    assert!(!holds(b"$argon2"), "a password hash is in the export");
    assert!(
        !holds(s.link_key.as_bytes()),
        "the link's key is in the export"
    );
    assert!(
        !holds(s.email_token.as_bytes()),
        "an email token is in the export"
    );
    // ... nor in its realm, read back as the import reads it.
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("export.archive");
    std::fs::write(&file, &bytes).unwrap();
    let mut reader = hearth::storage::archive::ArchiveReader::open(&file).unwrap();
    let mut realm = None;
    while let Some(part) = reader.next_part().unwrap() {
        if part.kind == hearth::storage::archive::PartKind::Realm {
            realm = Some(hearth::storage::codec::decode_realm(&part.bytes).unwrap());
        }
    }
    let realm = realm.expect("a realm part");
    assert!(realm.users.len() > 5);
    for user in realm.users.values() {
        assert_eq!(user.api_key, "", "{}", user.delivery_email);
        assert_eq!(user.password_hash, None, "{}", user.delivery_email);
    }
    assert!(realm.invites.email.is_empty() && realm.invites.multiuse.is_empty());
    assert!(realm.channel_email_tokens.is_empty());
    assert!(realm.exports.by_id.is_empty());
    assert!(realm.push_tokens.is_empty() && realm.push_devices.is_empty());
    assert!(realm.sessions.by_digest.is_empty());
    assert!(!holds(&digest), "a session is in the export");
    assert!(
        !holds(service_token.as_bytes()),
        "an outgoing webhook's token is in the export"
    );
    let services: Vec<_> = realm.bot_services.services.values().collect();
    assert_eq!(services.len(), 1);
    assert_eq!(services[0].token, "");
    assert_eq!(services[0].base_url, "https://bots.example/");

    // Imported, every user has a new key, and no old key or password opens it.
    let (back, _, printed) = import_export_printing(&e).await;
    // The owner's new key is printed, and it is the one the realm holds.
    let owner_key = printed
        .lines()
        .find_map(|l| l.split_once(&format!("owner {DESDEMONA}: ")))
        .map(|(_, key)| key.trim().to_owned())
        .unwrap_or_else(|| panic!("no owner key in {printed}"));
    assert_eq!(owner_key, back.api_key(DESDEMONA).await);
    for (who, key) in &s.keys {
        let reply = send(back.request(
            reqwest::Method::GET,
            "/api/v1/users/me",
            Auth::Basic(who, key),
        ))
        .await;
        assert_error(&reply, 401, "UNAUTHORIZED", "Invalid API key");
        let new = back.api_key(who).await;
        assert_eq!(new.len(), 32);
        assert_ne!(&new, key, "{who}");
    }
    back.ok("GET", "/api/v1/users/me", "keyholder@zulip.com", &[])
        .await;
    let reply = send(
        back.request(reqwest::Method::POST, "/api/v1/fetch_api_key", Auth::None)
            .form(&[
                ("username", "keyholder@zulip.com"),
                ("password", s.password),
            ]),
    )
    .await;
    assert_error(
        &reply,
        401,
        "AUTHENTICATION_FAILED",
        "Your username or password is incorrect",
    );
    // The old link is no link there.
    let page = client()
        .get(format!("{}/join/{}/", back.url, s.link_key))
        .send()
        .await
        .unwrap();
    assert_ne!(page.status(), StatusCode::OK);
}

/// A web session of `email`, through the development login: its cookie's secret.
async fn dev_session(app: &TestApp, email: &str) -> String {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let cookie = |resp: &reqwest::Response, name: &str| {
        resp.headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .find(|v| v.starts_with(&format!("{name}=")))
            .map(|v| v[name.len() + 1..v.find(';').unwrap()].to_owned())
            .unwrap()
    };
    let page = client
        .get(format!("{}/devlogin/", app.url))
        .send()
        .await
        .unwrap();
    let token = cookie(&page, "csrftoken");
    let done = client
        .post(format!("{}/accounts/login/local/", app.url))
        .header("Cookie", format!("csrftoken={token}"))
        .form(&[("direct_email", email), ("csrfmiddlewaretoken", &token)])
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), StatusCode::FOUND);
    cookie(&done, "sessionid")
}
