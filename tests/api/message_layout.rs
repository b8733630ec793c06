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
//! That a crash in the middle of the rewrite is harmless is tested where the rewrite
//! is (`storage::messages`' unit tests cut it after each of its writes).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use serde_json::Value;

use crate::common::*;

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
            let db = hearth::storage::message_db::open_sled(app.dir.path()).unwrap();
            let names: Vec<String> = db
                .tree_names()
                .iter()
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .collect();
            drop(db);
            assert!(names.iter().any(|n| n == "ubits:zulip"), "{names:?}");
            assert!(
                !names
                    .iter()
                    .any(|n| n.starts_with("um:") || n.starts_with("unread:")),
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
