//! Storage corruption is never silent: a damaged data folder either starts with every
//! acknowledged write, or is refused with one line that names the folder, the realm,
//! what was expected and found, and what to do. `hearth check` and `hearth recover`
//! agree with the start. All through the real binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::child::{ChildServer as Server, Started};
use crate::common::{run, text};
use reqwest::blocking::Client;
use serde_json::Value;

const ADMIN: &str = "iago@zulip.com";

/// `hearth serve --dev --data <data> extra...`.
fn start(data: &Path, extra: &[&str]) -> Started {
    let data = data.to_str().expect("a UTF-8 path");
    let mut args = vec!["--dev", "--data", data];
    args.extend_from_slice(extra);
    Server::start(&args, &[])
}

/// As `start`, for a start that must succeed.
fn up(data: &Path, extra: &[&str]) -> Server {
    match start(data, extra) {
        Started::Up(s) => s,
        Started::Refused(status, lines) => panic!("refused ({status}): {lines:#?}"),
    }
}

fn http() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn admin_key(url: &str) -> String {
    let body: Value = http()
        .post(format!("{url}/api/v1/dev_fetch_api_key"))
        .form(&[("username", ADMIN)])
        .send()
        .unwrap()
        .json()
        .unwrap();
    body["api_key"].as_str().expect("an api key").to_owned()
}

/// `POST /channels/create` as the administrator: whether it was acknowledged.
fn create_channel(client: &Client, url: &str, key: &str, name: &str) -> bool {
    create_described(client, url, key, name, "integrity")
}

fn create_described(client: &Client, url: &str, key: &str, name: &str, description: &str) -> bool {
    client
        .post(format!("{url}/api/v1/channels/create"))
        .basic_auth(ADMIN, Some(key))
        .form(&[("name", name), ("description", description)])
        .send()
        .is_ok_and(|r| r.status().is_success())
}

fn send_message(client: &Client, url: &str, key: &str, channel: &str, n: usize) {
    let reply = client
        .post(format!("{url}/api/v1/messages"))
        .basic_auth(ADMIN, Some(key))
        .form(&[
            ("type", "stream"),
            ("to", channel),
            ("topic", &format!("topic {}", n % 3)),
            ("content", &format!("message {n}")),
        ])
        .send()
        .unwrap();
    assert!(reply.status().is_success(), "{:?}", reply.text());
}

/// Names of every channel in the realm (`include_all`, as the administrator).
fn channel_names(url: &str) -> BTreeSet<String> {
    let key = admin_key(url);
    let body: Value = http()
        .get(format!("{url}/api/v1/streams"))
        .basic_auth(ADMIN, Some(&key))
        .query(&[("include_all", "true")])
        .send()
        .unwrap()
        .json()
        .unwrap();
    body["streams"]
        .as_array()
        .expect("streams")
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

fn user_count(url: &str) -> usize {
    let key = admin_key(url);
    let body: Value = http()
        .get(format!("{url}/api/v1/users"))
        .basic_auth(ADMIN, Some(&key))
        .send()
        .unwrap()
        .json()
        .unwrap();
    body["members"].as_array().expect("members").len()
}

/// Copies a folder tree.
fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), to).unwrap();
        }
    }
}

/// Every file of a folder tree, relative to it, sorted.
fn files(root: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// Every file's bytes, to tell whether a command changed a folder.
fn contents(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    files(root)
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(root.join(&f)).unwrap();
            (f, bytes)
        })
        .collect()
}

/// XORs `len` bytes of `file` from `offset` (clamped to the file) with 0xff.
fn flip(file: &Path, offset: usize, len: usize) {
    let mut bytes = std::fs::read(file).unwrap();
    let start = offset.min(bytes.len().saturating_sub(1));
    let end = (start + len).min(bytes.len());
    for b in &mut bytes[start..end] {
        *b ^= 0xff;
    }
    std::fs::write(file, bytes).unwrap();
}

/// Asserts a refused start's stderr: its last line is the one error line, which names
/// the folder, says what was expected and found, and what to do.
#[track_caller]
fn assert_refusal(status: std::process::ExitStatus, lines: &[String], data: &Path) -> String {
    assert!(!status.success(), "exit status 0: {lines:#?}");
    let errors: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("hearth: error: "))
        .collect();
    assert_eq!(errors.len(), 1, "one error line: {lines:#?}");
    let line = lines.last().unwrap();
    assert!(line.starts_with("hearth: error: "), "{lines:#?}");
    let folder = data.display().to_string();
    for needle in [
        folder.as_str(),
        "is damaged",
        "expected ",
        "found ",
        "hearth check --data",
        "hearth recover --data",
        "--accept-loss",
        "restore",
    ] {
        assert!(line.contains(needle), "{line:?} should name {needle:?}");
    }
    for debug in ["Os {", "Custom {", "kind:", "\\\""] {
        assert!(!line.contains(debug), "Debug formatting in {line:?}");
    }
    line.clone()
}

/// A data folder with `channels` acknowledged channels (with descriptions of
/// `description` bytes) and a few messages, stopped cleanly; returns the folder and the
/// channels' names (every channel the realm has).
fn build_folder(root: &Path, channels: usize, description: usize) -> (PathBuf, BTreeSet<String>) {
    let data = root.join("base");
    let server = up(&data, &[]);
    let key = admin_key(&server.url);
    let client = http();
    let description = "d".repeat(description);
    for i in 0..channels {
        let name = format!("chan{i}");
        assert!(create_described(
            &client,
            &server.url,
            &key,
            &name,
            &description
        ));
    }
    for n in 0..12 {
        send_message(
            &client,
            &server.url,
            &key,
            &format!("chan{}", n % channels.min(4)),
            n,
        );
    }
    let names = channel_names(&server.url);
    assert!(names.len() >= channels);
    server.stop();
    (data, names)
}

#[test]
fn flipped_bytes_anywhere_never_lose_acknowledged_channels_silently() {
    let root = tempfile::tempdir().unwrap();
    // Long descriptions: the snapshot outgrows sled's inline limit and lives in a blob
    // file of its own.
    let (base, acknowledged) = build_folder(root.path(), 300, 600);
    assert!(
        files(&base).iter().any(|f| f.starts_with("blobs")),
        "a sled blob file: {:?}",
        files(&base)
    );
    // Offsets spread over every file of the folder: sled's files, the manifest, uploads.
    let mut cases = Vec::new();
    for file in files(&base) {
        let len = std::fs::metadata(base.join(&file)).unwrap().len() as usize;
        let name = file.to_string_lossy().into_owned();
        let n = if name == "db" {
            28
        } else if name == "hearth-manifest" || name == "conf" || name.starts_with("blobs") {
            3
        } else {
            1
        };
        for i in 0..n {
            cases.push((file.clone(), len * (2 * i + 1) / (2 * n)));
        }
    }
    assert!(cases.len() >= 30, "{} cases", cases.len());
    let cases = Arc::new(Mutex::new(cases));
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..2)
        .map(|w| {
            let (cases, outcomes) = (cases.clone(), outcomes.clone());
            let (base, acknowledged) = (base.clone(), acknowledged.clone());
            let root = root.path().to_path_buf();
            std::thread::spawn(move || loop {
                let Some((file, offset)) = cases.lock().unwrap().pop() else {
                    break;
                };
                let data = root.join(format!("w{w}-{}-{offset}", file.display()).replace('/', "_"));
                copy_tree(&base, &data);
                flip(&data.join(&file), offset, 64);
                let before = contents(&data);
                let check = run(&["check", "--data", data.to_str().unwrap()]);
                assert_eq!(contents(&data), before, "check changed the folder");
                let what = format!("64 bytes flipped at {offset} of {}", file.display());
                match start(&data, &[]) {
                    Started::Refused(status, lines) => {
                        let line = assert_refusal(status, &lines, &data);
                        assert!(
                            !check.status.success(),
                            "{what}: refused ({line}) but check says sound: {}",
                            text(&check.stdout)
                        );
                        outcomes.lock().unwrap().push((what, false));
                    }
                    Started::Up(server) => {
                        let now = channel_names(&server.url);
                        let missing: Vec<_> = acknowledged.difference(&now).collect();
                        assert!(
                            missing.is_empty(),
                            "{what}: started without {} acknowledged channels: {missing:?}",
                            missing.len()
                        );
                        server.stop();
                        let checked = if check.status.success() {
                            "check: sound"
                        } else {
                            "check: damaged"
                        };
                        outcomes
                            .lock()
                            .unwrap()
                            .push((format!("{what} ({checked})"), true));
                    }
                }
                let _ = std::fs::remove_dir_all(&data);
            })
        })
        .collect();
    for w in workers {
        w.join().expect("no case failed");
    }
    let outcomes = outcomes.lock().unwrap();
    let refused = outcomes.iter().filter(|(_, up)| !up).count();
    eprintln!(
        "{} cases: {} started whole, {refused} refused",
        outcomes.len(),
        outcomes.len() - refused
    );
    for (what, up) in outcomes.iter() {
        eprintln!(
            "  {what}: {}",
            if *up { "started whole" } else { "refused" }
        );
    }
    assert!(refused > 0, "no flip was noticed: {outcomes:#?}");
}

/// The `kept ... : U users, C channels` of `hearth recover`'s report.
fn kept(report: &str) -> (usize, usize) {
    let line = report
        .lines()
        .find(|l| l.starts_with("realm 'zulip': kept records up to"))
        .unwrap_or_else(|| panic!("no kept line in {report}"));
    let numbers: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    // records, users, channels, message rows
    (numbers[1], numbers[2])
}

#[test]
fn check_then_recover_then_start_gives_what_recover_reported() {
    let root = tempfile::tempdir().unwrap();
    let (base, acknowledged) = build_folder(root.path(), 120, 10);
    let data = root.path().join("data");

    let sound = run(&["check", "--data", base.to_str().unwrap()]);
    assert!(sound.status.success(), "{}", text(&sound.stderr));
    assert!(text(&sound.stdout).contains("realm 'zulip': sound"));
    assert!(text(&sound.stdout).ends_with("sound\n"));
    let nothing = run(&["recover", "--data", base.to_str().unwrap(), "--accept-loss"]);
    assert!(nothing.status.success());
    assert!(text(&nothing.stdout).contains("nothing to recover"));

    // A flip in the middle of the database that check notices.
    let len = std::fs::metadata(base.join("db")).unwrap().len() as usize;
    let mut found = None;
    for step in (10..20).chain(1..10) {
        let _ = std::fs::remove_dir_all(&data);
        copy_tree(&base, &data);
        flip(&data.join("db"), len * step / 20, 64);
        let out = run(&["check", "--data", data.to_str().unwrap()]);
        if !out.status.success() {
            found = Some(out);
            break;
        }
    }
    let check = found.expect("a flip check notices");
    let report = text(&check.stdout);
    assert!(report.contains("realm 'zulip': DAMAGED"), "{report}");
    assert!(report.contains("problem: expected"), "{report}");
    let err = text(&check.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("hearth recover --data"), "{err}");
    let damaged_bytes = contents(&data);

    // Without --accept-loss: refused, explained, nothing changed.
    let refused = run(&["recover", "--data", data.to_str().unwrap()]);
    assert!(!refused.status.success());
    let err = text(&refused.stderr);
    assert!(
        err.contains("--accept-loss") && err.contains("hearth check"),
        "{err}"
    );
    assert_eq!(contents(&data), damaged_bytes);

    let out = run(&["recover", "--data", data.to_str().unwrap(), "--accept-loss"]);
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}{}", text(&out.stderr));
    let aside = report
        .lines()
        .next()
        .and_then(|l| l.split("the damaged folder is now ").nth(1))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("where the damaged folder went: {report}"));
    assert!(aside.exists());
    assert_eq!(
        contents(&aside),
        damaged_bytes,
        "the damaged folder is kept as it was"
    );
    assert!(report.contains("realm 'zulip': lost records "), "{report}");
    let (users, channels) = kept(&report);

    let again = run(&["check", "--data", data.to_str().unwrap()]);
    assert!(again.status.success(), "{}", text(&again.stdout));

    let server = up(&data, &[]);
    let now = channel_names(&server.url);
    assert_eq!(
        now.len(),
        channels,
        "the channels recover reported: {report}"
    );
    assert!(now.is_subset(&acknowledged));
    assert!(now.len() < acknowledged.len(), "{report}");
    assert_eq!(user_count(&server.url), users, "{report}");
    // The recovered folder takes writes and keeps them.
    let key = admin_key(&server.url);
    assert!(create_channel(&http(), &server.url, &key, "after recovery"));
    server.stop();
    let server = up(&data, &[]);
    assert!(channel_names(&server.url).contains("after recovery"));
    server.stop();
}

#[test]
fn kill_9_during_writes_starts_without_a_false_alarm() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let mut acknowledged = BTreeSet::new();
    for round in 0..3 {
        // Snapshots every few records, so the kill lands around snapshots and manifest
        // writes too.
        let server = up(&data, &["--snapshot-every", "7"]);
        let url = server.url.clone();
        let key = admin_key(&url);
        let acked = Arc::new(Mutex::new(Vec::new()));
        let writers: Vec<_> = (0..3)
            .map(|w| {
                let (url, key, acked) = (url.clone(), key.clone(), acked.clone());
                std::thread::spawn(move || {
                    let client = http();
                    for i in 0.. {
                        let name = format!("r{round}w{w}n{i}");
                        if !create_channel(&client, &url, &key, &name) {
                            break;
                        }
                        acked.lock().unwrap().push(name);
                    }
                })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(30);
        while acked.lock().unwrap().len() < 40 + 25 * round {
            assert!(Instant::now() < deadline, "writes too slow");
            std::thread::sleep(Duration::from_millis(5));
        }
        server.kill_9();
        for w in writers {
            w.join().unwrap();
        }
        acknowledged.extend(acked.lock().unwrap().iter().cloned());

        let check = run(&["check", "--data", data.to_str().unwrap()]);
        assert!(
            check.status.success(),
            "round {round}: check after kill -9: {}{}",
            text(&check.stdout),
            text(&check.stderr)
        );
        let server = up(&data, &[]);
        let now = channel_names(&server.url);
        let missing: Vec<_> = acknowledged.difference(&now).collect();
        assert!(missing.is_empty(), "round {round}: lost {missing:?}");
        assert!(
            !server.log().iter().any(|l| l.contains("damaged")),
            "{:#?}",
            server.log()
        );
        server.kill_9();
    }
}

#[test]
fn a_missing_manifest_is_refused_unless_the_folder_predates_manifests() {
    let root = tempfile::tempdir().unwrap();
    let (base, acknowledged) = build_folder(root.path(), 5, 10);
    let manifest = base.join("hearth-manifest");
    assert!(manifest.is_file());

    // Deleted: the database knows there was one.
    let data = root.path().join("deleted");
    copy_tree(&base, &data);
    std::fs::remove_file(data.join("hearth-manifest")).unwrap();
    match start(&data, &[]) {
        Started::Refused(status, lines) => {
            let line = assert_refusal(status, &lines, &data);
            assert!(line.contains("hearth-manifest"), "{line}");
        }
        Started::Up(_) => panic!("started without its manifest"),
    }
    let check = run(&["check", "--data", data.to_str().unwrap()]);
    assert!(!check.status.success());
    assert!(text(&check.stdout).contains("the manifest is missing"));

    // A folder from before manifests: no file, no marker. It starts and gets one.
    let old = root.path().join("old");
    copy_tree(&base, &old);
    std::fs::remove_file(old.join("hearth-manifest")).unwrap();
    {
        let db = sled::Config::new().path(&old).open().unwrap();
        db.drop_tree(hearth::storage::wal::manifest::META_TREE)
            .unwrap();
        db.flush().unwrap();
    }
    let check = run(&["check", "--data", old.to_str().unwrap()]);
    assert!(check.status.success(), "{}", text(&check.stdout));
    assert!(text(&check.stdout).contains("no manifest yet"));
    let server = up(&old, &[]);
    assert!(
        server
            .log()
            .iter()
            .any(|l| l.contains("has no manifest") && l.contains("writing one")),
        "{:#?}",
        server.log()
    );
    assert_eq!(channel_names(&server.url), acknowledged);
    assert!(
        old.join("hearth-manifest").is_file(),
        "written at the end of the start"
    );
    server.stop();
    let marks = hearth::storage::wal::manifest::read(&old).unwrap().unwrap();
    assert!(marks.realms["zulip"].last_seq > 0);
    std::fs::remove_file(old.join("hearth-manifest")).unwrap();
    match start(&old, &[]) {
        Started::Refused(status, lines) => {
            assert_refusal(status, &lines, &old);
        }
        Started::Up(_) => panic!("from now on a missing manifest is noticed"),
    }
}

#[test]
fn a_database_sled_cannot_open_is_refused_and_recover_points_at_backups() {
    let root = tempfile::tempdir().unwrap();
    let (base, _) = build_folder(root.path(), 3, 10);
    flip(&base.join("conf"), 0, 64);
    let before = contents(&base);
    match start(&base, &[]) {
        Started::Refused(status, lines) => {
            let line = assert_refusal(status, &lines, &base);
            assert!(line.contains("sled"), "{line}");
        }
        Started::Up(_) => panic!("started on a config sled cannot read"),
    }
    let check = run(&["check", "--data", base.to_str().unwrap()]);
    assert!(!check.status.success());
    let out = run(&["recover", "--data", base.to_str().unwrap(), "--accept-loss"]);
    assert!(!out.status.success());
    // sled may log what it thinks of the files before hearth's one error line.
    let stderr = text(&out.stderr);
    let err = stderr.lines().last().unwrap_or_default();
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.starts_with("hearth: error: "))
            .count(),
        1,
        "{stderr}"
    );
    assert!(
        err.contains("cannot recover")
            && err.contains("hearth restore")
            && err.contains("Nothing was changed"),
        "{err}"
    );
    assert_eq!(contents(&base), before, "nothing changed");
    let siblings: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(siblings, vec!["base".to_owned()], "no folder left behind");
}

#[test]
fn check_and_recover_refuse_a_running_server_s_folder() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let server = up(&data, &[]);
    let folder = data.to_str().unwrap();
    for args in [
        vec!["check", "--data", folder],
        vec!["recover", "--data", folder, "--accept-loss"],
    ] {
        let out = run(&args);
        assert!(!out.status.success());
        assert!(
            text(&out.stderr).contains("in use by another hearth process"),
            "{}",
            text(&out.stderr)
        );
    }
    server.stop();
}

#[test]
fn a_damaged_upload_is_reported_by_check_and_dropped_by_recover() {
    let root = tempfile::tempdir().unwrap();
    let (base, acknowledged) = build_folder(root.path(), 3, 10);
    let upload = files(&base)
        .into_iter()
        .find(|f| f.starts_with("uploads"))
        .expect("the development realm's emoji images");
    flip(&base.join(&upload), 10, 8);
    let check = run(&["check", "--data", base.to_str().unwrap()]);
    assert!(!check.status.success());
    let report = text(&check.stdout);
    assert!(
        report.contains("do not match their checksum")
            && report.contains(&upload.display().to_string()),
        "{report}"
    );
    let out = run(&["recover", "--data", base.to_str().unwrap(), "--accept-loss"]);
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}{}", text(&out.stderr));
    assert!(
        report.contains(&format!("lost the uploaded file {}", upload.display())),
        "{report}"
    );
    assert!(report.contains("realm 'zulip': nothing lost"), "{report}");
    assert!(!base.join(&upload).exists());
    let again = run(&["check", "--data", base.to_str().unwrap()]);
    assert!(again.status.success(), "{}", text(&again.stdout));
    let server = up(&base, &[]);
    assert_eq!(channel_names(&server.url), acknowledged);
    server.stop();
}

/// `GET /messages` of channel `chan0` as the administrator: the status, the ids and
/// the body.
fn chan0_messages(url: &str) -> (u16, Vec<u64>, Value) {
    let key = admin_key(url);
    let reply = http()
        .get(format!("{url}/api/v1/messages"))
        .basic_auth(ADMIN, Some(key))
        .query(&[
            ("anchor", "newest"),
            ("num_before", "100"),
            ("num_after", "0"),
            ("narrow", r#"[{"operator":"channel","operand":"chan0"}]"#),
        ])
        .send()
        .unwrap();
    let status = reply.status().as_u16();
    let body: Value = reply.json().unwrap();
    let ids = body["messages"]
        .as_array()
        .map(|a| a.iter().map(|m| m["id"].as_u64().unwrap()).collect())
        .unwrap_or_default();
    (status, ids, body)
}

/// The message database (`messages/`) is a second sled database, and sled silently
/// drops what follows a damaged part of its log. Its sync count, recorded in the
/// manifest, catches that: a message database older than the manifest (here, the copy
/// of one taken before more messages were sent and a snapshot synced it) is reported
/// by `hearth check`, makes `/health/ready` fail and message reads answer 503, while
/// the rest of the realm keeps serving. A folder whose message database is missing
/// altogether is refused at start.
#[test]
fn a_message_database_that_lost_writes_or_went_missing_is_never_silent() {
    let root = tempfile::tempdir().unwrap();
    let (data, _) = build_folder(root.path(), 4, 10);
    let old = root.path().join("old-messages");
    copy_tree(&data.join("messages"), &old);
    let server = up(&data, &[]);
    let (status, before, _) = chan0_messages(&server.url);
    assert_eq!(status, 200);
    assert_eq!(before.len(), 3, "{before:?}");
    let key = admin_key(&server.url);
    send_message(&http(), &server.url, &key, "chan0", 100);
    server.stop();
    let check = run(&["check", "--data", data.to_str().unwrap()]);
    assert!(check.status.success(), "{}", text(&check.stdout));

    // The older message database in its place.
    std::fs::remove_dir_all(data.join("messages")).unwrap();
    copy_tree(&old, &data.join("messages"));
    let check = run(&["check", "--data", data.to_str().unwrap()]);
    assert!(!check.status.success(), "check says sound");
    let said = format!("{}{}", text(&check.stdout), text(&check.stderr));
    assert!(said.contains("message database"), "{said}");
    assert!(said.contains("lost writes"), "{said}");
    let server = up(&data, &[]);
    assert!(channel_names(&server.url).contains("chan0"));
    let (status, ids, body) = chan0_messages(&server.url);
    assert_eq!(status, 503, "{ids:?}");
    assert_eq!(body["result"], "error");
    assert_eq!(body["code"], "INTERNAL_SERVER_ERROR");
    assert_eq!(
        body["msg"],
        "The message store is unavailable right now; nothing was changed. Try again later."
    );
    let ready = http()
        .get(format!("{}/health/ready", server.url))
        .send()
        .unwrap();
    assert_eq!(ready.status().as_u16(), 500);
    let body: Value = ready.json().unwrap();
    assert!(
        body["msg"].as_str().unwrap().contains("lost writes"),
        "{body}"
    );
    assert!(
        server.log().iter().any(|l| l.contains("lost writes")),
        "{:#?}",
        server.log()
    );
    server.kill_9();

    // No message database at all.
    std::fs::remove_dir_all(data.join("messages")).unwrap();
    match start(&data, &[]) {
        Started::Up(_) => panic!("started without its message database"),
        Started::Refused(status, lines) => {
            let line = assert_refusal(status, &lines, &data);
            assert!(line.contains("message database"), "{line}");
        }
    }
}

/// The journal after `kill -9` holds the acknowledged records since the last checkpoint;
/// a start reads them. A frame damaged before the journal's end (a later commit after it)
/// is not a torn write: the start refuses, `hearth check` names the journal, and
/// `hearth recover --accept-loss` rebuilds from what comes before it.
#[test]
fn a_journal_damaged_before_its_end_is_refused_and_check_and_recover_agree() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let server = up(&data, &[]);
    let key = admin_key(&server.url);
    let client = http();
    for i in 0..12 {
        assert!(create_channel(&client, &server.url, &key, &format!("j{i}")));
    }
    let acknowledged = channel_names(&server.url);
    server.kill_9();
    let journal = data.join(hearth::storage::wal::journal::JOURNAL_FILE);
    assert!(
        hearth::storage::wal::journal::count(&data).unwrap() >= 12,
        "the acknowledged writes are in the journal"
    );

    // Read as it is: every acknowledged channel is there.
    let copy = root.path().join("copy");
    copy_tree(&data, &copy);
    let check = run(&["check", "--data", copy.to_str().unwrap()]);
    assert!(check.status.success(), "{}", text(&check.stdout));
    assert!(
        text(&check.stdout).contains("journal: "),
        "{}",
        text(&check.stdout)
    );
    let server = up(&copy, &[]);
    assert_eq!(channel_names(&server.url), acknowledged);
    server.stop();

    // A flipped byte in the first frame's body (past the header and its length).
    flip(
        &journal,
        hearth::storage::wal::journal::HEADER as usize + 12,
        1,
    );
    let Started::Refused(status, lines) = start(&data, &[]) else {
        panic!("a damaged journal started");
    };
    let line = assert_refusal(status, &lines, &data);
    assert!(line.contains("journal"), "{line}");
    let check = run(&["check", "--data", data.to_str().unwrap()]);
    assert!(!check.status.success());
    let report = text(&check.stdout);
    assert!(
        report.contains("problem: the journal") && report.contains("a later commit"),
        "{report}"
    );
    let out = run(&["recover", "--data", data.to_str().unwrap(), "--accept-loss"]);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let server = up(&data, &[]);
    let now = channel_names(&server.url);
    assert!(now.is_subset(&acknowledged));
    assert!(
        !now.contains("j11"),
        "the records from the damage on are gone"
    );
    server.stop();
}
