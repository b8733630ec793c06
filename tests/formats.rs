//! Stored formats stay readable: golden bytes of every schema version (WAL records of
//! schemas 1 and 2, snapshots of schemas 1 and 2), and a data folder written by an earlier hearth.
//!
//! `UPDATE_FIXTURES=1 cargo test --test formats` rewrites the golden records; do that only
//! when adding a schema version (old fixtures must then be kept, not replaced).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::*;
use hearth::realm::dev::dev_realm_changes;
use hearth::realm::{Cx, Realm};
use hearth::storage::codec;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// What today's code builds from a fixed seed: the dev realm's changes and the realm.
fn built() -> (Vec<hearth::realm::Change>, Realm) {
    let changes = dev_realm_changes(&mut Cx::seeded(1_700_000_000_000, 7)).unwrap();
    let mut realm = Realm::from_first_change(&changes[0]).unwrap();
    changes.iter().for_each(|c| realm.apply(c));
    (changes, realm)
}

fn golden(name: &str, bytes: &[u8]) -> Vec<u8> {
    let path = fixture(name);
    if std::env::var_os("UPDATE_FIXTURES").is_some() {
        std::fs::write(&path, bytes).unwrap();
    }
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The development realm's changes the golden WAL records were made of: those of the
/// resources that existed then. The development realm has grown since (its custom
/// emoji, its description); the records stay as they were written.
fn golden_wal_changes() -> Vec<hearth::realm::Change> {
    use hearth::realm::{Change, RealmChange};
    built()
        .0
        .into_iter()
        .filter(|c| {
            matches!(
                c,
                Change::Realm(_) | Change::User(_) | Change::Group(_) | Change::Channel(_)
            ) && !matches!(c, Change::Realm(RealmChange::PropertySet(_)))
        })
        .collect()
}

/// The golden WAL record of `schema` decodes (migrated) to today's changes; while
/// `schema` is the current one, today's encoding is byte for byte the same.
fn check_golden_wal(name: &str, schema: u8) {
    let changes = golden_wal_changes();
    let stored = golden(name, &codec::encode_changes(&changes).unwrap());
    assert_eq!(stored[0], schema, "schema {schema} fixture");
    assert_eq!(codec::decode_changes(&stored).unwrap(), changes);
    if codec::CHANGES_SCHEMA == schema {
        assert_eq!(
            codec::encode_changes(&changes).unwrap(),
            stored,
            "the WAL encoding changed without a new schema version"
        );
    }
}

#[test]
fn golden_wal_record_of_schema_1_decodes() {
    check_golden_wal("wal-v1-dev-realm.bin", 1);
}

/// Schema 2 nests changes by resource; schema 1 records migrate to it.
#[test]
fn golden_wal_record_of_schema_2_decodes() {
    check_golden_wal("wal-v2-dev-realm.bin", 2);
}

#[test]
fn golden_snapshot_of_schema_1_decodes() {
    // The realm of the resources schema 1 had (its snapshot predates the rest).
    let changes = golden_wal_changes();
    let mut realm = Realm::from_first_change(&changes[0]).unwrap();
    changes.iter().for_each(|c| realm.apply(c));
    let stored = golden(
        "snapshot-v1-dev-realm.bin",
        &codec::encode_realm(&realm).unwrap(),
    );
    assert_eq!(stored[0], 1, "schema 1 fixture");
    let mut back = codec::decode_realm(&stored).unwrap();
    back.rebuild_indexes();
    assert_eq!(back, realm);
    assert!(back.user_by_delivery_email("hamlet@zulip.com").is_some());
    if codec::REALM_SCHEMA == 1 {
        assert_eq!(
            codec::encode_realm(&realm).unwrap(),
            stored,
            "the snapshot encoding changed without a new schema version"
        );
    }
}

/// `tests/fixtures/data-9ca7417.tar.gz`: a data folder written by hearth 9ca7417 (a
/// snapshot from a clean stop, then WAL records left by `kill -9`): it opens, keeps
/// everything, and takes writes.
#[actix_web::test]
async fn a_data_folder_of_an_earlier_hearth_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(fixture("data-9ca7417.tar.gz"))
        .arg("-C")
        .arg(tmp.path())
        .status()
        .expect("tar");
    assert!(status.success());
    let data = tmp.path().join("data");
    let dir = tempfile::TempDir::new_in(tmp.path()).unwrap();
    std::fs::remove_dir(dir.path()).unwrap();
    std::fs::rename(&data, dir.path()).unwrap();
    let app = TestApp::spawn_in(dir).await;
    // Written by 9ca7417: one user before its clean stop, one after its restart.
    for email in ["old-snapshot@zulip.com", "old-wal@zulip.com"] {
        let reply = app
            .post(
                "/api/v1/fetch_api_key",
                Auth::None,
                &[("username", email), ("password", "old-hearth-pw")],
            )
            .await;
        assert_success(&reply);
    }
    let reply = app.get_as(ADMIN, "/api/v1/streams", &[]).await;
    let seen = names(&assert_success(&reply)["streams"]);
    assert!(seen.iter().any(|n| n == "old-channel"), "{seen:?}");
    app.create_user("new-on-old@zulip.com", "pw-new", "New")
        .await;
}

/// Schema 2 added the message state and every section since (groups' settings,
/// linkifiers, profile fields, attachments, navigation views, push, status, emoji);
/// not the realm's plain settings, which schema 3 added.
#[test]
fn golden_snapshot_of_schema_2_decodes() {
    use hearth::realm::{Change, RealmChange};
    let changes: Vec<Change> = built()
        .0
        .into_iter()
        .filter(|c| !matches!(c, Change::Realm(RealmChange::PropertySet(_))))
        .collect();
    let mut realm = Realm::from_first_change(&changes[0]).unwrap();
    changes.iter().for_each(|c| realm.apply(c));
    let stored = std::fs::read(fixture("snapshot-v2-dev-realm.bin")).unwrap();
    assert_eq!(stored[0], 2, "schema 2 fixture");
    let mut back = codec::decode_realm(&stored).unwrap();
    back.rebuild_indexes();
    assert_eq!(back, realm);
    assert_eq!(
        back.properties,
        Default::default(),
        "Zulip's defaults for a realm of schema 2"
    );
}

/// Schema 3 added the realm's plain settings (`properties`).
#[test]
fn golden_snapshot_of_schema_3_decodes() {
    let (_, realm) = built();
    let stored = golden(
        "snapshot-v3-dev-realm.bin",
        &codec::encode_realm(&realm).unwrap(),
    );
    assert_eq!(stored[0], 3, "schema 3 fixture");
    let mut back = codec::decode_realm(&stored).unwrap();
    back.rebuild_indexes();
    assert_eq!(back, realm);
    if codec::REALM_SCHEMA == 3 {
        assert_eq!(
            codec::encode_realm(&realm).unwrap(),
            stored,
            "the snapshot encoding changed without a new schema version"
        );
    }
}
