//! A data folder of the per-user message layout before bitmaps (a key per user and
//! message, hearth 341b372) opens with every message, flag and unread message as that
//! hearth answered them, and keeps them across restarts and new writes.
//!
//! `tests/fixtures/data-341b372.tar.gz` was written by hearth 341b372 (`serve --dev
//! --snapshot-every 5`): messages to Denmark (one mentioning Hamlet), a direct and a
//! group direct message, one to Verona; stars by Iago and Othello, reads, a read then
//! unread again, a reaction; a clean stop; a message, a star and a topic marked read
//! after the restart, then `kill -9`. `data-341b372.expected.json` holds what that
//! hearth answered, for every human user of the realm, right before the kill: their
//! received messages (id, flags, content) and their `is:unread`, `is:starred` and
//! `is:mentioned` narrows.
//!
//! The rewrite copies the old database into a fresh one and swaps it in
//! (`storage::messages`): the first start leaves no old tree behind, and a `kill -9`
//! in the middle of it (`HEARTH_MESSAGES_FAULT`: after the copy, and between the two
//! renames of the swap) leaves a folder the next start serves in full.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use serde_json::Value;

use crate::common::child::{ChildServer, Started};
use crate::common::*;
use hearth::storage::messages::{FOLDER, FRESH, REPLACED};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Unpacks the fixture's `data` folder into a temporary folder.
fn unpack() -> (tempfile::TempDir, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(fixture("data-341b372.tar.gz"))
        .arg("-C")
        .arg(tmp.path())
        .status()
        .expect("tar");
    assert!(status.success());
    let dir = tempfile::TempDir::new_in(tmp.path()).unwrap();
    std::fs::remove_dir(dir.path()).unwrap();
    std::fs::rename(tmp.path().join("data"), dir.path()).unwrap();
    (tmp, dir)
}

async fn narrow(app: &TestApp, who: &str, narrow: Value) -> Vec<Value> {
    let reply = app
        .get_as(
            who,
            "/api/v1/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "5000"),
                ("num_after", "0"),
                ("narrow", &narrow.to_string()),
            ],
        )
        .await;
    assert_success(&reply)["messages"]
        .as_array()
        .unwrap()
        .clone()
}

fn ids(messages: &[Value]) -> Vec<Value> {
    messages.iter().map(|m| m["id"].clone()).collect()
}

/// What every user sees, in the shape of the expected file.
async fn seen(app: &TestApp, who: &str) -> Value {
    let all: Vec<Value> = narrow(app, who, serde_json::json!([]))
        .await
        .iter()
        .map(|m| {
            let mut flags: Vec<String> = m["flags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap().to_owned())
                .collect();
            flags.sort();
            serde_json::json!([m["id"], flags, m["content"]])
        })
        .collect();
    let is = |what: &str| serde_json::json!([{"operator": "is", "operand": what}]);
    serde_json::json!({
        "all": all,
        "unread": ids(&narrow(app, who, is("unread")).await),
        "starred": ids(&narrow(app, who, is("starred")).await),
        "mentioned": ids(&narrow(app, who, is("mentioned")).await),
    })
}

#[actix_web::test]
async fn flags_of_the_layout_before_bitmaps_are_kept() {
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("data-341b372.expected.json")).unwrap(),
    )
    .unwrap();
    let expected = expected.as_object().unwrap();
    assert!(expected.len() > 5, "the fixture covers the realm's users");
    let (_tmp, dir) = unpack();
    let mut app = TestApp::spawn_in(dir).await;
    for round in 0..2 {
        for (who, want) in expected {
            assert_eq!(&seen(&app, who).await, want, "round {round}: {who}");
        }
        if round == 0 {
            // The first start rewrote the old per-user trees and dropped them.
            app.stop().await;
            let db = hearth::storage::messages::open_sled(app.dir.path()).unwrap();
            let names: Vec<String> = db
                .tree_names()
                .iter()
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .collect();
            drop(db);
            for leftover in [FRESH, REPLACED] {
                assert!(!app.dir.path().join(leftover).exists(), "{leftover}");
            }
            assert!(names.iter().any(|n| n == "ubits128:zulip"), "{names:?}");
            assert!(
                !names.iter().any(|n| n.starts_with("um:")
                    || n.starts_with("unread:")
                    || n.starts_with("ubits:")),
                "{names:?}"
            );
            app.start().await;
        }
    }
    // New flags on old messages go on from there: Hamlet stars and reads all.
    let hamlet = &expected[HAMLET]["all"];
    let first = hamlet[hamlet.as_array().unwrap().len() - 1][0].clone();
    let id = first.to_string();
    let messages = format!("[{id}]");
    let reply = app
        .post_as(
            HAMLET,
            "/api/v1/messages/flags",
            &[("messages", &messages), ("op", "add"), ("flag", "starred")],
        )
        .await;
    assert_success(&reply);
    let reply = app.post_as(HAMLET, "/api/v1/mark_all_as_read", &[]).await;
    assert_success(&reply);
    app.restart().await;
    let after = seen(&app, HAMLET).await;
    assert!(after["unread"].as_array().unwrap().is_empty(), "{after}");
    assert!(after["starred"].as_array().unwrap().contains(&first));
    assert_eq!(
        after["all"].as_array().unwrap().len(),
        hamlet.as_array().unwrap().len()
    );
}

fn tree_names(dir: &std::path::Path) -> Vec<String> {
    let db = sled::Config::new().path(dir).open().unwrap();
    let names = db
        .tree_names()
        .iter()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect();
    drop(db);
    names
}

/// A `kill -9` in the middle of the rewrite into a fresh database: after the copy (not
/// yet marked complete), the old database is still in place and the next start
/// rewrites it again; between the renames of the swap, the complete fresh copy is
/// moved in. Either way every user sees what the old hearth answered.
#[actix_web::test]
async fn a_crash_in_the_middle_of_the_rewrite_loses_nothing() {
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("data-341b372.expected.json")).unwrap(),
    )
    .unwrap();
    for step in ["copied", "replaced"] {
        let (_tmp, dir) = unpack();
        let data = dir.path().to_str().unwrap().to_owned();
        let fault = format!("abort:{step}");
        let status = match ChildServer::start(
            &["--dev", "--data", &data],
            &[("HEARTH_MESSAGES_FAULT", &fault)],
        ) {
            Started::Up(mut server) => server.wait_exit(std::time::Duration::from_secs(60)),
            Started::Refused(status, _) => status,
        };
        assert!(!status.success(), "{step}: {status}");
        let (current, fresh, replaced) = (
            dir.path().join(FOLDER),
            dir.path().join(FRESH),
            dir.path().join(REPLACED),
        );
        assert!(fresh.join("conf").is_file(), "{step}: the copy was written");
        if step == "copied" {
            assert!(!replaced.exists());
            let names = tree_names(&current);
            assert!(names.iter().any(|n| n == "um:zulip"), "{step}: {names:?}");
        } else {
            assert!(!current.exists() && replaced.exists(), "{step}");
        }
        // `hearth check` sees what a start would: the swap finished first.
        let check = std::process::Command::new(HEARTH)
            .args(["check", "--data", &data])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&check.stdout);
        assert!(check.status.success(), "{step}: {said}");
        assert!(
            said.contains("finished an interrupted swap"),
            "{step}: {said}"
        );
        assert!(said.trim_end().ends_with("sound"), "{step}: {said}");
        assert!(
            current.join("conf").is_file() && !fresh.exists() && !replaced.exists(),
            "{step}"
        );
        let mut app = TestApp::spawn_in(dir).await;
        for (who, want) in expected.as_object().unwrap() {
            assert_eq!(&seen(&app, who).await, want, "{step}: {who}");
        }
        app.stop().await;
        assert!(!fresh.exists() && !replaced.exists(), "{step}");
        let names = tree_names(&current);
        assert!(
            names.iter().any(|n| n == "ubits128:zulip")
                && !names
                    .iter()
                    .any(|n| n.starts_with("um:") || n.starts_with("unread:")),
            "{step}: {names:?}"
        );
    }
}
