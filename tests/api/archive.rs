//! Realm archives: `hearth realm export` and `hearth realm import` on stopped servers
//! (a round trip with every kind of data, compared field by field), their refusals,
//! the online export under writes with the WAL tail replayed on the import, and an
//! import cut short (injected failure, and a process ended as `kill -9` would).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use hearth::ops::archive::{self as ops_archive, Fault};
use hearth::realm::Realm;
use hearth::storage::archive::{
    unframe, verify, ArchiveReader, ArchivedMessage, FilePiece, Header, PartKind, PresencePart,
};
use hearth::storage::codec;
use reqwest::Method;
use serde_json::{json, Value};

use crate::common::*;

const SUB: &str = hearth::version::DEV_SUBDOMAIN;

/// Everything an archive holds, decoded (the header's export time left out).
#[derive(Debug, PartialEq)]
struct Contents {
    seq: u64,
    realm: Option<Realm>,
    messages: Vec<ArchivedMessage>,
    files: Vec<FilePiece>,
    presence: PresencePart,
}

fn contents(path: &Path) -> Contents {
    let (header, _) = verify(path).expect("a sound archive");
    let mut reader = ArchiveReader::open(path).unwrap();
    let mut c = Contents {
        seq: header.seq,
        realm: None,
        messages: Vec::new(),
        files: Vec::new(),
        presence: Vec::new(),
    };
    while let Some(part) = reader.next_part().unwrap() {
        match part.kind {
            PartKind::Realm => c.realm = Some(codec::decode_realm(&part.bytes).unwrap()),
            PartKind::Messages => c
                .messages
                .extend(unframe::<Vec<ArchivedMessage>>(&part.bytes).unwrap()),
            PartKind::Uploads => c.files.push(unframe(&part.bytes).unwrap()),
            PartKind::Presence => c.presence = unframe(&part.bytes).unwrap(),
            PartKind::Header => {
                let _: Header = unframe(&part.bytes).unwrap();
            }
            PartKind::Manifest => {}
        }
    }
    c
}

/// `hearth realm export` of a stopped server's folder; asserts success.
fn export_cli(data: &Path, out: &Path) -> String {
    let o = run(&[
        "realm",
        "export",
        "--data",
        data.to_str().unwrap(),
        "--subdomain",
        SUB,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "export: {}", text(&o.stderr));
    text(&o.stdout)
}

/// `hearth realm import`; its output.
fn import_cli(data: &Path, archive: &Path, envs: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = hearth();
    cmd.args([
        "realm",
        "import",
        "--data",
        data.to_str().unwrap(),
        "--archive",
        archive.to_str().unwrap(),
    ]);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    output(&mut cmd)
}

/// The one stderr line of a failed command.
#[track_caller]
fn failure(o: &std::process::Output) -> String {
    assert!(!o.status.success(), "succeeded: {}", text(&o.stdout));
    let err = text(&o.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.starts_with("hearth: error: "), "{err}");
    err
}

/// Where each part starts in an archive: `(kind byte, offset of its frame, length)`.
fn part_offsets(bytes: &[u8]) -> Vec<(u8, usize, usize)> {
    let mut at = 9;
    let mut out = Vec::new();
    while at + 5 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 1..at + 5].try_into().unwrap()) as usize;
        out.push((bytes[at], at + 5, len));
        at += 5 + len;
    }
    out
}

/// `POST` a file as `email`; the reply's body.
async fn upload(app: &TestApp, email: &str, path: &str, name: &str, bytes: Vec<u8>) -> Value {
    let key = app.api_key(email).await;
    let part = reqwest::multipart::Part::bytes(bytes)
        .file_name(name.to_owned())
        .mime_str(if name.ends_with(".png") {
            "image/png"
        } else {
            "text/plain"
        })
        .unwrap();
    let reply = send(
        app.request(Method::POST, path, Auth::Basic(email, &key))
            .multipart(reqwest::multipart::Form::new().part("file", part)),
    )
    .await;
    assert_success(&reply).clone()
}

/// What `fill` made, to look for after an import.
struct Filled {
    edited: u64,
    direct: u64,
    file_url: String,
    file_bytes: Vec<u8>,
}

/// Writes one of every kind of data into the development realm.
async fn fill(app: &TestApp) -> Filled {
    let later = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600)
        .to_string();
    let ann = app
        .create_user("ann@zulip.com", "a long passphrase for ann", "Ann")
        .await;
    let hamlet = app.user_id(HAMLET).await;
    let subs = json!([{ "name": "archived", "description": "kept whole" }]).to_string();
    let principals = json!([hamlet, ann]).to_string();
    app.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        IAGO,
        &[("subscriptions", &subs), ("principals", &principals)],
    )
    .await;
    let members = json!([hamlet, ann]).to_string();
    app.ok(
        "POST",
        "/api/v1/user_groups/create",
        IAGO,
        &[
            ("name", "archivists"),
            ("description", "they keep"),
            ("members", &members),
        ],
    )
    .await;
    app.ok(
        "PATCH",
        "/api/v1/realm",
        OWNER,
        &[("name", "Archived realm")],
    )
    .await;
    app.ok("PATCH", "/api/v1/settings", HAMLET, &[("emojiset", "text")])
        .await;
    let channel = app.stream_id("archived").await.to_string();
    let edited = send_stream(app, HAMLET, "archived", "kept", "first words").await;
    app.ok(
        "PATCH",
        &format!("/api/v1/messages/{edited}"),
        HAMLET,
        &[("content", "second words")],
    )
    .await;
    app.ok(
        "POST",
        &format!("/api/v1/messages/{edited}/reactions"),
        IAGO,
        &[("emoji_name", "smile")],
    )
    .await;
    let ids = json!([edited]).to_string();
    app.ok(
        "POST",
        "/api/v1/messages/flags",
        IAGO,
        &[("messages", &ids), ("op", "add"), ("flag", "starred")],
    )
    .await;
    let to = json!([hamlet]).to_string();
    let direct = app
        .ok(
            "POST",
            "/api/v1/messages",
            IAGO,
            &[("type", "direct"), ("to", &to), ("content", "between us")],
        )
        .await["id"]
        .as_u64()
        .unwrap();
    app.ok(
        "POST",
        "/api/v1/scheduled_messages",
        HAMLET,
        &[
            ("type", "stream"),
            ("to", &channel),
            ("topic", "later"),
            ("content", "in an hour"),
            ("scheduled_delivery_timestamp", &later),
        ],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/reminders",
        HAMLET,
        &[
            ("message_id", &edited.to_string()),
            ("scheduled_delivery_timestamp", &later),
        ],
    )
    .await;
    let file_bytes = b"the bytes of an archived file".to_vec();
    let uploaded = upload(
        app,
        HAMLET,
        "/api/v1/user_uploads",
        "notes.txt",
        file_bytes.clone(),
    )
    .await;
    let file_url = uploaded["url"].as_str().unwrap().to_owned();
    send_stream(
        app,
        HAMLET,
        "archived",
        "kept",
        &format!("[notes]({file_url})"),
    )
    .await;
    upload(
        app,
        IAGO,
        "/api/v1/realm/emoji/archived_emoji",
        "e.png",
        png(),
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/users/me/presence",
        HAMLET,
        &[("status", "active")],
    )
    .await;
    Filled {
        edited,
        direct,
        file_url,
        file_bytes,
    }
}

#[actix_web::test]
async fn a_round_trip_through_an_archive_keeps_every_kind_of_data() {
    let mut app = TestApp::spawn().await;
    let filled = fill(&app).await;
    app.stop().await;
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("zulip.archive");
    let said = export_cli(app.dir.path(), &archive);
    assert!(said.contains("exported realm 'zulip'"), "{said}");

    let target = tempfile::tempdir().unwrap();
    let data = target.path().to_path_buf();
    let o = import_cli(&data, &archive, &[]);
    assert!(o.status.success(), "import: {}", text(&o.stderr));
    assert!(text(&o.stdout).contains("imported realm 'zulip'"));

    // Field by field: the state (users, groups, channels, subscriptions, settings,
    // scheduled messages, reminders, emoji, attachments), every message with each
    // user's flags, reactions and edit history, the files and presence are the same
    // when read back from the new folder.
    let again = work.path().join("again.archive");
    export_cli(&data, &again);
    let (before, after) = (contents(&archive), contents(&again));
    assert!(before.messages.len() >= 3, "{}", before.messages.len());
    let shas: Vec<&str> = before.files.iter().map(|f| f.sha256.as_str()).collect();
    for bytes in [filled.file_bytes.clone(), png()] {
        let sha = hearth::storage::uploads::content_hash(&bytes);
        assert!(shas.contains(&sha.as_str()), "{sha} in {shas:?}");
    }
    assert!(!before.presence.is_empty());
    assert_eq!(before.realm.as_ref().unwrap().messages.scheduled.len(), 1);
    assert_eq!(before.realm.as_ref().unwrap().reminders.by_id.len(), 1);
    assert_eq!(before, after);

    // And served: a server on the new folder answers as the old one did.
    let app2 = TestApp::spawn_in(target).await;
    let _ = &data;
    let got = app2
        .ok(
            "GET",
            "/api/v1/messages",
            HAMLET,
            &[
                ("anchor", &filled.edited.to_string()),
                ("num_before", "0"),
                ("num_after", "0"),
            ],
        )
        .await;
    let m = &got["messages"][0];
    assert_eq!(m["content"], "<p>second words</p>", "{got}");
    assert_eq!(m["reactions"][0]["emoji_name"], "smile");
    let starred = json!([{ "operator": "is", "operand": "starred" }]).to_string();
    let got = app2
        .ok(
            "GET",
            "/api/v1/messages",
            IAGO,
            &[
                ("anchor", "newest"),
                ("num_before", "10"),
                ("num_after", "0"),
                ("narrow", &starred),
            ],
        )
        .await;
    assert_eq!(got["messages"][0]["id"], filled.edited, "{got}");
    let history = app2
        .ok(
            "GET",
            &format!("/api/v1/messages/{}/history", filled.edited),
            HAMLET,
            &[],
        )
        .await;
    assert_eq!(history["message_history"].as_array().unwrap().len(), 2);
    let direct = app2
        .ok(
            "GET",
            &format!("/api/v1/messages/{}", filled.direct),
            HAMLET,
            &[],
        )
        .await;
    assert_eq!(direct["raw_content"], "between us");
    let scheduled = app2
        .ok("GET", "/api/v1/scheduled_messages", HAMLET, &[])
        .await;
    assert_eq!(scheduled["scheduled_messages"][0]["content"], "in an hour");
    let reminders = app2.ok("GET", "/api/v1/reminders", HAMLET, &[]).await;
    assert_eq!(reminders["reminders"].as_array().unwrap().len(), 1);
    let emoji = app2.ok("GET", "/api/v1/realm/emoji", HAMLET, &[]).await;
    let image = emoji["emoji"]
        .as_object()
        .unwrap()
        .values()
        .find(|e| e["name"] == "archived_emoji")
        .expect("the custom emoji")["source_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let served = app2
        .client
        .get(format!("{}{image}", app2.url))
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), 200, "{image}");
    assert_eq!(served.bytes().await.unwrap().to_vec(), png());
    let key = app2.api_key(HAMLET).await;
    let file = app2
        .request(Method::GET, &filled.file_url, Auth::Basic(HAMLET, &key))
        .send()
        .await
        .unwrap();
    assert_eq!(file.status(), 200, "{}", filled.file_url);
    assert_eq!(file.bytes().await.unwrap().to_vec(), filled.file_bytes);
    let realm = app2.ok("POST", "/api/v1/register", HAMLET, &[]).await;
    assert_eq!(realm["realm_name"], "Archived realm");
    assert!(names(&realm["subscriptions"]).contains(&"archived".to_owned()));
    assert!(realm["realm_user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["name"] == "archivists"));
    assert_eq!(realm["user_settings"]["emojiset"], "text");
}

#[actix_web::test]
async fn exports_and_imports_refuse_what_they_must() {
    let mut app = TestApp::spawn().await;
    send_stream(&app, HAMLET, "Denmark", "t", "a message to archive").await;
    app.stop().await;
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("a.archive");
    export_cli(app.dir.path(), &archive);
    let data_path = app.dir.path().to_path_buf();
    let data = data_path.to_str().unwrap();

    // An existing file is never overwritten; an unknown realm is named.
    let o = run(&[
        "realm",
        "export",
        "--data",
        data,
        "--subdomain",
        SUB,
        "--out",
        archive.to_str().unwrap(),
    ]);
    assert!(failure(&o).contains("exists already"));
    let elsewhere = work.path().join("b.archive");
    let o = run(&[
        "realm",
        "export",
        "--data",
        data,
        "--subdomain",
        "nope",
        "--out",
        elsewhere.to_str().unwrap(),
    ]);
    let err = failure(&o);
    assert!(
        err.contains("no realm 'nope'") && err.contains("zulip"),
        "{err}"
    );
    assert!(!elsewhere.exists());

    // The realm exists already in the folder it came from.
    let o = import_cli(app.dir.path(), &archive, &[]);
    assert!(failure(&o).contains("realm 'zulip' already exists"));

    // A running server's folder is refused (its lock).
    app.start().await;
    let o = run(&[
        "realm",
        "export",
        "--data",
        data,
        "--subdomain",
        SUB,
        "--out",
        elsewhere.to_str().unwrap(),
    ]);
    assert!(failure(&o).contains("in use by another hearth process"));
    app.stop().await;

    // A damaged archive names the damaged part; nothing is created.
    let bytes = std::fs::read(&archive).unwrap();
    let parts = part_offsets(&bytes);
    let (_, at, len) = *parts
        .iter()
        .find(|(kind, ..)| *kind == PartKind::Messages as u8)
        .expect("a messages part");
    let mut damaged = bytes.clone();
    damaged[at + len / 2] ^= 0x55;
    let bad = work.path().join("damaged.archive");
    std::fs::write(&bad, &damaged).unwrap();
    let fresh = work.path().join("fresh");
    let err = failure(&import_cli(&fresh, &bad, &[]));
    assert!(err.contains("part 'messages'"), "{err}");
    assert!(err.contains("checksum"), "{err}");
    assert!(!fresh.exists(), "nothing made for a refused import");

    // A cut archive lacks its manifest.
    let cut = work.path().join("cut.archive");
    let (_, manifest_at, _) = *parts.last().unwrap();
    std::fs::write(&cut, &bytes[..manifest_at - 5]).unwrap();
    assert!(failure(&import_cli(&fresh, &cut, &[])).contains("part 'manifest'"));

    // A newer format is refused by its version.
    let mut newer = bytes.clone();
    newer[8] = hearth::storage::archive::ARCHIVE_VERSION + 1;
    let newer_path = work.path().join("newer.archive");
    std::fs::write(&newer_path, &newer).unwrap();
    let err = failure(&import_cli(&fresh, &newer_path, &[]));
    assert!(
        err.contains("version 2, newer than this hearth reads"),
        "{err}"
    );
    assert!(!fresh.exists());

    // Not an archive at all.
    let text_file = work.path().join("notes.txt");
    std::fs::write(&text_file, "not an archive").unwrap();
    let o = import_cli(&fresh, &text_file, &[]);
    assert!(failure(&o).contains("not a hearth realm archive"));
}

/// Sends, edits, reacts and flags as fast as answered until `stop` is set, then ten
/// more rounds.
async fn write_load(app: &TestApp, stop: &AtomicBool) -> usize {
    let mut rounds = 0;
    let mut after_stop = 0;
    while after_stop < 10 {
        if stop.load(Ordering::SeqCst) {
            after_stop += 1;
        }
        let id = send_stream(app, HAMLET, "Denmark", "load", &format!("m{rounds}")).await;
        app.ok(
            "PATCH",
            &format!("/api/v1/messages/{id}"),
            HAMLET,
            &[("content", &format!("m{rounds} edited"))],
        )
        .await;
        app.ok(
            "POST",
            &format!("/api/v1/messages/{id}/reactions"),
            IAGO,
            &[("emoji_name", "smile")],
        )
        .await;
        let ids = json!([id, id.saturating_sub(3)]).to_string();
        app.ok(
            "POST",
            "/api/v1/messages/flags",
            IAGO,
            &[("messages", &ids), ("op", "add"), ("flag", "read")],
        )
        .await;
        rounds += 1;
    }
    rounds
}

#[actix_web::test]
async fn an_online_export_under_writes_plus_its_wal_tail_equals_the_source() {
    let mut app = TestApp::spawn().await;
    for i in 0..20 {
        send_stream(&app, HAMLET, "Denmark", "before", &format!("b{i}")).await;
    }
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("online.archive");
    let stop = AtomicBool::new(false);
    let server = app.server();
    let actor = server.realm("localhost").expect("the realm's actor");
    let export = async {
        // Let the load start first.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let m = ops_archive::export_running(server.store(), &actor, SUB, &archive).await;
        stop.store(true, Ordering::SeqCst);
        m
    };
    let (rounds, manifest) = tokio::join!(write_load(&app, &stop), export);
    let manifest = manifest.expect("online export");
    assert!(rounds > 10, "{rounds}");

    // The WAL records written after the archive's position: the tail a move ships.
    let db = server.durability().db().unwrap();
    let wal = db.open_tree(format!("wal:{SUB}")).unwrap();
    let tail: Vec<(Vec<u8>, Vec<u8>)> = wal
        .range((manifest.seq + 1).to_be_bytes()..)
        .map(|r| {
            let (k, v) = r.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect();
    assert!(tail.len() >= 20, "writes after the export: {}", tail.len());
    drop((wal, db, actor));
    app.stop().await;

    let target = tempfile::tempdir().unwrap();
    ops_archive::import_command(target.path(), &archive, None).expect("import");
    {
        let store = open_store(target.path()).await;
        let db = store.db().unwrap();
        let wal = db.open_tree(format!("wal:{SUB}")).unwrap();
        assert_eq!(wal.len(), 0, "an import writes no WAL record");
        for (k, v) in &tail {
            wal.insert(k, v.clone()).unwrap();
        }
        store.durability.flush_now().unwrap();
        store.durability.shutdown();
    }
    // Both read back (the target replays the tail over the rows, some of them newer
    // than the position) hold the same state, messages, flags, files.
    let (a, b) = (work.path().join("a"), work.path().join("b"));
    export_cli(app.dir.path(), &a);
    export_cli(target.path(), &b);
    let (a, b) = (contents(&a), contents(&b));
    assert!(a.messages.len() >= 20 + rounds);
    assert_eq!(a.realm, b.realm);
    assert_eq!(a.messages, b.messages);
    assert_eq!(a.files, b.files);
}

/// A fresh development server with a message and an upload, stopped; its archive.
async fn archived(work: &Path) -> (TestApp, PathBuf) {
    let mut app = TestApp::spawn().await;
    send_stream(&app, HAMLET, "Denmark", "t", "kept").await;
    upload(
        &app,
        HAMLET,
        "/api/v1/user_uploads",
        "f.txt",
        b"file".to_vec(),
    )
    .await;
    app.stop().await;
    let archive = work.join("crash.archive");
    export_cli(app.dir.path(), &archive);
    (app, archive)
}

#[actix_web::test]
async fn an_import_killed_midway_leaves_no_realm_and_can_be_run_again() {
    let work = tempfile::tempdir().unwrap();
    let (_app, archive) = archived(work.path()).await;
    for part in ["messages", "uploads", "presence"] {
        let data = work.path().join(format!("data-{part}"));
        let o = import_cli(
            &data,
            &archive,
            &[("HEARTH_ARCHIVE_FAULT", &format!("abort:{part}"))],
        );
        assert!(!o.status.success(), "the import was ended at {part}");
        // No realm: an export finds none, a start finds nothing to serve.
        let o = run(&[
            "realm",
            "export",
            "--data",
            data.to_str().unwrap(),
            "--subdomain",
            SUB,
            "--out",
            work.path().join("none").to_str().unwrap(),
        ]);
        let err = failure(&o);
        assert!(
            err.contains("no realm 'zulip'") && err.contains("none"),
            "{part}: {err}"
        );
        let o = run(&[
            "serve",
            "--data",
            data.to_str().unwrap(),
            "--bind",
            "127.0.0.1:0",
        ]);
        assert!(failure(&o).contains("no realm in"), "{part}");
        // Run again, it completes, with all of it.
        let o = import_cli(&data, &archive, &[]);
        assert!(o.status.success(), "{part}: {}", text(&o.stderr));
        let again = work.path().join(format!("again-{part}"));
        export_cli(&data, &again);
        assert_eq!(contents(&archive), contents(&again), "{part}");
    }
}

#[actix_web::test]
async fn a_failing_import_removes_what_it_wrote() {
    let work = tempfile::tempdir().unwrap();
    let (_app, archive) = archived(work.path()).await;
    let data = work.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let store = open_store(&data).await;
    let err =
        ops_archive::import_into_with(&store, &archive, Some(Fault::Fail(PartKind::Presence)))
            .expect_err("failure put in");
    assert!(err.to_string().contains("presence"), "{err}");
    assert!(store.realm_subdomains().is_empty());
    let db = store.db().unwrap();
    let trees: Vec<String> = db
        .tree_names()
        .iter()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect();
    assert!(
        !trees.iter().any(|n| n.ends_with(&format!(":{SUB}"))),
        "{trees:?}"
    );
    assert!(
        store.messages(SUB).get(1).unwrap().is_none(),
        "no message row left"
    );
    let uploads = hearth::storage::uploads::UploadStore::new(&data);
    assert!(!uploads.realm_dir(SUB).exists(), "no file left");
    // Then it imports.
    let imported = ops_archive::import_into(&store, &archive).expect("import");
    assert_eq!(imported.subdomain, SUB);
    assert_eq!(store.realm_subdomains(), vec![SUB.to_owned()]);
    assert!(uploads.realm_dir(SUB).exists());
    store.durability.shutdown();
}

/// `tests/fixtures/archive-v1-dev-realm.bin`: an archive of version 1 (the development
/// realm with a message, an edit, a reaction and an uploaded file), written by
/// `UPDATE_FIXTURES=1` and never again once archives have a newer version. It must
/// keep importing, and its realm keep serving what it held.
#[actix_web::test]
async fn golden_archive_of_version_1_imports() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/archive-v1-dev-realm.bin");
    if std::env::var_os("UPDATE_FIXTURES").is_some()
        && hearth::storage::archive::ARCHIVE_VERSION == 1
    {
        let mut app = TestApp::spawn().await;
        let id = send_stream(&app, HAMLET, "Denmark", "golden", "first").await;
        app.ok(
            "PATCH",
            &format!("/api/v1/messages/{id}"),
            HAMLET,
            &[("content", "golden words")],
        )
        .await;
        app.ok(
            "POST",
            &format!("/api/v1/messages/{id}/reactions"),
            IAGO,
            &[("emoji_name", "smile")],
        )
        .await;
        let up = upload(
            &app,
            HAMLET,
            "/api/v1/user_uploads",
            "g.txt",
            b"golden file".to_vec(),
        )
        .await;
        send_stream(
            &app,
            HAMLET,
            "Denmark",
            "golden",
            &format!("[g]({})", up["url"].as_str().unwrap()),
        )
        .await;
        app.stop().await;
        let _ = std::fs::remove_file(&fixture);
        export_cli(app.dir.path(), &fixture);
    }
    let bytes = std::fs::read(&fixture).unwrap();
    assert_eq!(&bytes[..8], b"HEARTHAR");
    assert_eq!(bytes[8], 1, "version 1 fixture");
    let target = tempfile::tempdir().unwrap();
    let o = import_cli(target.path(), &fixture, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let app = TestApp::spawn_in(target).await;
    let got = app
        .ok(
            "GET",
            "/api/v1/messages",
            HAMLET,
            &[
                ("anchor", "newest"),
                ("num_before", "5"),
                ("num_after", "0"),
            ],
        )
        .await;
    let messages = got["messages"].as_array().unwrap();
    let golden = messages
        .iter()
        .find(|m| m["content"] == "<p>golden words</p>")
        .unwrap_or_else(|| panic!("{got}"));
    assert_eq!(golden["reactions"][0]["emoji_name"], "smile");
    let link = messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let start = link.find("/user_uploads/").expect("a link to the file");
    let url = &link[start..start + link[start..].find('"').unwrap()];
    let key = app.api_key(HAMLET).await;
    let file = app
        .request(Method::GET, url, Auth::Basic(HAMLET, &key))
        .send()
        .await
        .unwrap();
    assert_eq!(file.status(), 200, "{url}");
    assert_eq!(file.bytes().await.unwrap().to_vec(), b"golden file");
}
