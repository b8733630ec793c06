//! Stored formats stay readable: golden bytes of every schema version (WAL records of
//! schemas 1 to 3, snapshots of schemas 1 to 8; schema 9's sections are checked in
//! `snapshot_sections`), and a data folder written by an earlier hearth.
//!
//! `UPDATE_FIXTURES=1 cargo test --test api formats::` writes the golden records of
//! today's schemas (when adding a schema version); those of older schemas are never
//! rewritten.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use crate::common::*;
use hearth::realm::dev::dev_realm_changes;
use hearth::realm::{Cx, Realm};
use hearth::storage::codec;

pub(crate) fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// What today's code builds from a fixed seed: the dev realm's changes and the realm.
pub(crate) fn built() -> (Vec<hearth::realm::Change>, Realm) {
    let changes = dev_realm_changes(&mut Cx::seeded(1_700_000_000_000, 7)).unwrap();
    let mut realm = Realm::from_first_change(&changes[0]).unwrap();
    changes.iter().for_each(|c| realm.apply(c));
    (changes, realm)
}

/// The fixture `name` of schema `schema`; with `UPDATE_FIXTURES` set, first rewritten
/// with `bytes` when they are of that schema (today's), never otherwise: the fixtures of
/// older schemas stay as they were written.
pub(crate) fn golden(name: &str, schema: u8, bytes: &[u8]) -> Vec<u8> {
    let path = fixture(name);
    if std::env::var_os("UPDATE_FIXTURES").is_some() && bytes.first() == Some(&schema) {
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
    check_golden_wal_of(name, schema, golden_wal_changes());
}

/// `check_golden_wal` for a record made of `changes`.
fn check_golden_wal_of(name: &str, schema: u8, changes: Vec<hearth::realm::Change>) {
    let stored = golden(name, schema, &codec::encode_changes(&changes).unwrap());
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

/// The topics policies of schema 3 (WAL) and 4 (snapshots): the first channel created
/// with its own, another one's set later, and the realm's.
fn topics_policy_changes() -> Vec<hearth::realm::Change> {
    use hearth::realm::channels::ChannelUpdate;
    use hearth::realm::settings::RealmProperty;
    use hearth::realm::topics_policy::TopicsPolicy;
    use hearth::realm::{Change, ChannelChange, RealmChange};
    let mut changes = golden_wal_changes();
    let mut created = changes.iter_mut().filter_map(|c| match c {
        Change::Channel(ChannelChange::ChannelCreated(ch)) => Some(ch),
        _ => None,
    });
    created.next().unwrap().topics_policy = TopicsPolicy::DisableEmptyTopic;
    let second = created.next().unwrap().id;
    changes.push(Change::Channel(ChannelChange::ChannelUpdated {
        channel_id: second,
        update: ChannelUpdate::TopicsPolicy(TopicsPolicy::EmptyTopicOnly),
    }));
    changes.push(Change::Realm(RealmChange::PropertySet(
        RealmProperty::TopicsPolicy(TopicsPolicy::DisableEmptyTopic),
    )));
    changes
}

/// Schema 3: a created channel carries its topics policy (schema 2 records migrate to
/// `inherit`).
#[test]
fn golden_wal_record_of_schema_3_decodes() {
    check_golden_wal_of("wal-v3-dev-realm.bin", 3, topics_policy_changes());
}

#[test]
fn golden_snapshot_of_schema_1_decodes() {
    // The realm of the resources schema 1 had (its snapshot predates the rest).
    let changes = golden_wal_changes();
    let mut realm = Realm::from_first_change(&changes[0]).unwrap();
    changes.iter().for_each(|c| realm.apply(c));
    let stored = golden(
        "snapshot-v1-dev-realm.bin",
        1,
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

/// Unpacks a data folder fixture (a `data` folder in a tarball) into a temporary folder.
fn unpack(name: &str) -> (tempfile::TempDir, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(fixture(name))
        .arg("-C")
        .arg(tmp.path())
        .status()
        .expect("tar");
    assert!(status.success());
    let data = tmp.path().join("data");
    let dir = tempfile::TempDir::new_in(tmp.path()).unwrap();
    std::fs::remove_dir(dir.path()).unwrap();
    std::fs::rename(&data, dir.path()).unwrap();
    (tmp, dir)
}

/// `tests/fixtures/data-9ca7417.tar.gz`: a data folder written by hearth 9ca7417 (a
/// snapshot from a clean stop, then WAL records left by `kill -9`): it opens, keeps
/// everything, and takes writes.
#[actix_web::test]
async fn a_data_folder_of_an_earlier_hearth_opens() {
    let (_tmp, dir) = unpack("data-9ca7417.tar.gz");
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

/// The newest 100 messages of a one-term narrow, as `who` sees them.
async fn newest(app: &TestApp, who: &str, operator: &str, operand: &str) -> Vec<serde_json::Value> {
    let narrow = serde_json::json!([{"operator": operator, "operand": operand}]).to_string();
    let reply = app
        .get_as(
            who,
            "/api/v1/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "100"),
                ("num_after", "0"),
                ("narrow", &narrow),
            ],
        )
        .await;
    assert_success(&reply)["messages"]
        .as_array()
        .unwrap()
        .clone()
}

/// `tests/fixtures/data-bf7106f.tar.gz`: a data folder written by hearth bf7106f, which
/// kept message rows in the main database (`--snapshot-every 5`: messages 1–12 and a
/// direct message 13 sent, message 2 starred by Iago, an octopus on message 3, messages
/// 1–3 marked read by Hamlet, who is not subscribed to Denmark; a clean stop; message 14
/// sent, then `kill -9`). Every row, flag and reaction is still there after the upgrade, twice (the second start reads the
/// folder the first one upgraded), and new messages go on from 15.
#[actix_web::test]
async fn messages_of_an_earlier_hearth_are_kept() {
    let (_tmp, dir) = unpack("data-bf7106f.tar.gz");
    let mut app = TestApp::spawn_in(dir).await;
    for round in 0..2 {
        let found = newest(&app, ADMIN, "channel", "Denmark").await;
        let contents: Vec<String> = found
            .iter()
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .collect();
        let mut expected: Vec<String> = (1..=12)
            .map(|i| format!("<p>old message {i}</p>"))
            .collect();
        expected.push("<p>after restart</p>".into());
        assert_eq!(contents, expected, "round {round}");
        let ids: Vec<i64> = found.iter().map(|m| m["id"].as_i64().unwrap()).collect();
        assert_eq!(
            ids,
            (1..=12).chain([14]).collect::<Vec<i64>>(),
            "round {round}"
        );
        assert!(found[1]["flags"]
            .as_array()
            .unwrap()
            .contains(&"starred".into()));
        assert_eq!(found[2]["reactions"][0]["emoji_name"], "octopus");
        let dm = newest(&app, HAMLET, "is", "dm").await;
        assert_eq!(dm.len(), 1, "{dm:?}");
        assert_eq!(dm[0]["content"], "<p>old direct</p>");
        let unread: Vec<i64> = newest(&app, HAMLET, "is", "unread")
            .await
            .iter()
            .map(|m| m["id"].as_i64().unwrap())
            .collect();
        assert_eq!(
            unread,
            [13],
            "round {round}: Hamlet is not subscribed to Denmark"
        );
        if round == 0 {
            app.restart().await;
        }
    }
    let next = send_stream(&app, ADMIN, "Denmark", "upgrade", "new message").await;
    assert_eq!(next, 15);
}

/// The same folder kept its emoji images in the old shared layout
/// (`uploads/<aa>/<sha256>`): the first start moves green_tick's image into the realm's
/// folder, it is served from there, and the upload sweep keeps it.
#[actix_web::test]
async fn emoji_images_of_an_earlier_hearth_are_served() {
    let (_tmp, dir) = unpack("data-bf7106f.tar.gz");
    let sha = hearth::storage::uploads::content_hash(hearth::realm::dev::GREEN_TICK_PNG);
    let old = dir.path().join("uploads").join(&sha[..2]).join(&sha);
    assert!(old.is_file(), "the fixture holds the old layout");
    let mut app = TestApp::spawn_in(dir).await;
    let moved = app
        .dir
        .path()
        .join("uploads")
        .join(format!("realm-{}", hex::encode("zulip")))
        .join(&sha);
    for round in 0..2 {
        let url = format!("{}/user_avatars/zulip/emoji/images/{sha}.png", app.url);
        let image = app.client.get(url).send().await.unwrap();
        assert_eq!(image.status(), 200, "round {round}");
        let bytes = image.bytes().await.unwrap();
        assert_eq!(
            &bytes[..],
            hearth::realm::dev::GREEN_TICK_PNG,
            "round {round}"
        );
        assert!(moved.is_file() && !old.exists(), "round {round}");
        assert!(!old.parent().unwrap().exists(), "round {round}");
        app.server().sweep_uploads().await;
        assert!(moved.is_file(), "round {round}: the sweep keeps it");
        if round == 0 {
            app.restart().await;
        }
    }
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

/// Schema 3 added the realm's plain settings (`properties`); it had no topics policies,
/// so the realm gets Zulip's defaults (`allow_empty_topic`, channels `inherit`).
#[test]
fn golden_snapshot_of_schema_3_decodes() {
    let (_, realm) = built();
    let stored = golden(
        "snapshot-v3-dev-realm.bin",
        3,
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

/// Schema 4 added the topics policies, of the realm and of each channel.
#[test]
fn golden_snapshot_of_schema_4_decodes() {
    use hearth::realm::topics_policy::TopicsPolicy;
    let changes = topics_policy_changes();
    let mut realm = Realm::from_first_change(&changes[0]).unwrap();
    changes.iter().for_each(|c| realm.apply(c));
    let stored = golden(
        "snapshot-v4-dev-realm.bin",
        4,
        &codec::encode_realm(&realm).unwrap(),
    );
    assert_eq!(stored[0], 4, "schema 4 fixture");
    let mut back = codec::decode_realm(&stored).unwrap();
    back.rebuild_indexes();
    assert_eq!(back, realm);
    assert_eq!(back.realm_topics_policy(), TopicsPolicy::DisableEmptyTopic);
    let policies: Vec<TopicsPolicy> = back.channels.values().map(|c| c.topics_policy).collect();
    assert_eq!(
        policies[..2],
        [
            TopicsPolicy::DisableEmptyTopic,
            TopicsPolicy::EmptyTopicOnly
        ]
    );
    if codec::REALM_SCHEMA == 4 {
        assert_eq!(
            codec::encode_realm(&realm).unwrap(),
            stored,
            "the snapshot encoding changed without a new schema version"
        );
    }
}

/// Schema 5 added each user's personal state (topic visibility, muted users, alert words,
/// settings, drafts, saved snippets, reminders) and the realm's new state (settings
/// defaults, invitations, playgrounds, channel email tokens, the new realm properties).
/// The fixture is a realm that holds each of them, made through the API; it decodes
/// with all of it, and (while schema 5 is today's) encodes back to the same bytes: a
/// field added without a new schema version fails here.
#[actix_web::test]
async fn golden_snapshot_of_schema_5_decodes() {
    let app = TestApp::spawn().await;
    let verona = app.stream_id("Verona").await.to_string();
    let id = send_stream(&app, HAMLET, "Verona", "golden", "remind me").await;
    let in_a_day = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 86_400)
        .to_string();
    /// Method, path, caller, parameters.
    type Write<'a> = (&'a str, &'a str, &'a str, Vec<(&'a str, String)>);
    let writes: &[Write] = &[
        (
            "POST",
            "/api/v1/user_topics",
            HAMLET,
            vec![
                ("stream_id", verona.clone()),
                ("topic", "golden".into()),
                ("visibility_policy", "1".into()),
            ],
        ),
        (
            "POST",
            &format!("/api/v1/users/me/muted_users/{OTHELLO_ID}"),
            HAMLET,
            vec![],
        ),
        (
            "POST",
            "/api/v1/users/me/alert_words",
            HAMLET,
            vec![("alert_words", r#"["golden"]"#.into())],
        ),
        (
            "PATCH",
            "/api/v1/settings",
            HAMLET,
            vec![("twenty_four_hour_time", "true".into())],
        ),
        (
            "PATCH",
            "/api/v1/realm/user_settings_defaults",
            IAGO,
            vec![("twenty_four_hour_time", "true".into())],
        ),
        (
            "POST",
            "/api/v1/drafts",
            HAMLET,
            vec![(
                "drafts",
                format!(
                    r#"[{{"type":"stream","to":[{verona}],"topic":"golden","content":"draft","timestamp":1700000000}}]"#
                ),
            )],
        ),
        (
            "POST",
            "/api/v1/saved_snippets",
            HAMLET,
            vec![("title", "golden".into()), ("content", "snippet".into())],
        ),
        (
            "POST",
            "/api/v1/reminders",
            HAMLET,
            vec![
                ("message_id", id.to_string()),
                ("scheduled_delivery_timestamp", in_a_day.clone()),
            ],
        ),
        (
            "POST",
            "/api/v1/invites/multiuse",
            IAGO,
            vec![("invite_expires_in_minutes", "60".into())],
        ),
        (
            "POST",
            "/api/v1/realm/playgrounds",
            IAGO,
            vec![
                ("name", "Golden".into()),
                ("pygments_language", "Python".into()),
                ("url_template", "https://python.example/?code={code}".into()),
            ],
        ),
        (
            "GET",
            &format!("/api/v1/streams/{verona}/email_address"),
            HAMLET,
            vec![],
        ),
        (
            "PATCH",
            "/api/v1/realm",
            IAGO,
            vec![
                ("enable_read_receipts", "false".into()),
                ("welcome_message_custom_text", "Welcome, golden.".into()),
            ],
        ),
    ];
    for (method, path, who, params) in writes {
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        app.ok(method, path, who, &params).await;
    }
    let realm = app.server().hub("localhost").unwrap().current();
    let stored = golden(
        "snapshot-v5-dev-realm.bin",
        5,
        &codec::encode_realm(&realm).unwrap(),
    );
    assert_eq!(stored[0], 5, "schema 5 fixture");
    let mut back = codec::decode_realm(&stored).unwrap();
    back.rebuild_indexes();
    let hamlet = HAMLET_ID as u64;
    assert_eq!(back.user_topics.get(&hamlet).map(Vec::len), Some(1));
    assert!(back.has_muted(hamlet, OTHELLO_ID as u64));
    assert_eq!(
        back.alert_words.get(&hamlet),
        Some(&vec!["golden".to_owned()])
    );
    assert!(back.user_settings.contains_key(&hamlet));
    assert!(!back.user_settings_defaults.is_empty());
    assert_eq!(back.drafts.by_user.get(&hamlet).map(|d| d.len()), Some(1));
    assert!(!back.properties.enable_read_receipts);
    assert_eq!(
        back.properties.welcome_message_custom_text,
        "Welcome, golden."
    );
    for (what, empty) in [
        ("saved snippets", back.saved_snippets == Default::default()),
        ("reminders", back.reminders == Default::default()),
        ("invitations", back.invites == Default::default()),
        ("playgrounds", back.playgrounds == Default::default()),
        (
            "email tokens",
            back.channel_email_tokens == Default::default(),
        ),
    ] {
        assert!(!empty, "the fixture holds {what}");
    }
    if codec::REALM_SCHEMA == 5 {
        assert_eq!(
            codec::encode_realm(&back).unwrap(),
            stored,
            "the snapshot encoding changed without a new schema version"
        );
    }
}

/// Schema 6 added the realm's data exports (`Realm::exports`). The fixture holds one
/// written export of each type, the second deleted; it decodes with them, and (while
/// schema 6 is today's) encodes back to the same bytes.
#[actix_web::test]
async fn golden_snapshot_of_schema_6_decodes() {
    use hearth::realm::realm_export::{ExportStatus, ExportType};
    let app = TestApp::spawn().await;
    let mut ids = Vec::new();
    for (who, export_type) in [(IAGO, "1"), (DESDEMONA, "2")] {
        let id = app
            .ok(
                "POST",
                "/api/v1/export/realm",
                who,
                &[("export_type", export_type)],
            )
            .await["id"]
            .as_u64()
            .unwrap();
        poll(std::time::Duration::from_secs(60), "the export", || async {
            let listed = app.ok("GET", "/api/v1/export/realm", IAGO, &[]).await;
            listed["exports"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["id"] == id && e["export_url"].is_string())
                .then_some(())
        })
        .await;
        ids.push(id);
    }
    app.ok(
        "DELETE",
        &format!("/api/v1/export/realm/{}", ids[1]),
        IAGO,
        &[],
    )
    .await;
    let realm = app.server().hub("localhost").unwrap().current();
    let stored = golden(
        "snapshot-v6-dev-realm.bin",
        6,
        &codec::encode_realm(&realm).unwrap(),
    );
    assert_eq!(stored[0], 6, "schema 6 fixture");
    let mut back = codec::decode_realm(&stored).unwrap();
    back.rebuild_indexes();
    let exports: Vec<_> = back.exports.by_id.values().collect();
    assert_eq!(exports.len(), 2);
    assert_eq!(exports[0].export_type, ExportType::Public);
    assert!(matches!(exports[0].status, ExportStatus::Succeeded { size, .. } if size > 0));
    assert_eq!(exports[1].export_type, ExportType::FullWithConsent);
    assert!(matches!(exports[1].status, ExportStatus::Deleted { .. }));
    assert_eq!(exports[1].acting_user_id, DESDEMONA_ID as u64);
    assert_eq!(back.exports.next_id, 3);
    if codec::REALM_SCHEMA == 6 {
        assert_eq!(
            codec::encode_realm(&back).unwrap(),
            stored,
            "the snapshot encoding changed without a new schema version"
        );
    }
}

/// A snapshot of schema 5 (before the exports) decodes with none.
#[test]
fn a_snapshot_of_schema_5_has_no_exports() {
    let stored = std::fs::read(fixture("snapshot-v5-dev-realm.bin")).unwrap();
    assert_eq!(stored[0], 5);
    let back = codec::decode_realm(&stored).unwrap();
    assert!(back.exports.by_id.is_empty());
    assert_eq!(back.exports.next_id, 0);
}

/// Schema 7 added the web client's sessions (`Realm::sessions`), by their cookie's
/// digest; each user's are indexed again after decoding.
#[test]
fn golden_snapshot_of_schema_7_decodes() {
    use hearth::realm::sessions::{Session, SessionChange, SessionDigest};
    use hearth::realm::Change;
    let (_, mut realm) = built();
    for (secret, user_id, started) in [
        ("first", 10, 1_800_000_000),
        ("second", 10, 1_800_000_100),
        ("third", 11, 1_800_000_200),
    ] {
        realm.apply(&Change::Session(SessionChange::Started {
            digest: SessionDigest::of(secret),
            session: Session {
                user_id,
                started,
                expires: started + 14 * 24 * 3600,
            },
        }));
    }
    realm.apply(&Change::Session(SessionChange::Ended {
        digest: SessionDigest::of("first"),
    }));
    let stored = golden(
        "snapshot-v7-dev-realm.bin",
        7,
        &codec::encode_realm(&realm).unwrap(),
    );
    assert_eq!(stored[0], 7, "schema 7 fixture");
    let mut back = codec::decode_realm(&stored).unwrap();
    back.rebuild_indexes();
    assert_eq!(back, realm);
    assert_eq!(back.sessions.count_of(10), 1);
    assert_eq!(back.sessions.count_of(11), 1);
    assert!(back
        .session_user(&SessionDigest::of("second"), 1_800_000_200)
        .is_ok());
    if codec::REALM_SCHEMA == 7 {
        assert_eq!(
            codec::encode_realm(&back).unwrap(),
            stored,
            "the snapshot encoding changed without a new schema version"
        );
    }
}

/// A snapshot of schema 6 (before sessions) decodes with none, its exports kept.
#[test]
fn a_snapshot_of_schema_6_has_no_sessions() {
    let stored = std::fs::read(fixture("snapshot-v6-dev-realm.bin")).unwrap();
    assert_eq!(stored[0], 6);
    let back = codec::decode_realm(&stored).unwrap();
    assert!(back.sessions.by_digest.is_empty());
    assert_eq!(back.exports.by_id.len(), 2);
}

/// Bot 10's outgoing-webhook service, one bot storage entry and a queued delivery
/// (the `bot_services` section's state in the golden snapshots).
pub(crate) fn add_bot_service(realm: &mut Realm) {
    use hearth::realm::bot_services::{
        BotChange, Delivery, OutgoingService, Trigger, GENERIC_INTERFACE,
    };
    use hearth::realm::Change;
    realm.apply(&Change::Bot(BotChange::ServiceSet {
        bot_id: 10,
        service: OutgoingService {
            name: "echo".into(),
            base_url: "https://bots.example/echo".into(),
            interface: GENERIC_INTERFACE,
            token: "t0k3n".into(),
        },
        created: true,
    }));
    realm.apply(&Change::Bot(BotChange::StoragePut {
        user_id: 10,
        entries: vec![("number".into(), "3".into())],
    }));
    realm.apply(&Change::Bot(BotChange::DeliveryQueued(Delivery {
        id: 0,
        bot_id: 10,
        message_id: 7,
        trigger: Trigger::Mention,
        attempts: 0,
        queued_at: 1_800_000_000,
    })));
}

/// Schema 8 is schema 7's record followed by sections (`storage::codec::sections`): the
/// outgoing-webhook services, bot storage and outbox are the first. Its golden fixture
/// decodes to the same realm, and schema 7's fixture decodes with the sections empty.
#[test]
fn golden_snapshot_of_schema_8_decodes() {
    use hearth::realm::bot_services::BotChange;
    use hearth::realm::Change;
    let (_, mut realm) = built();
    add_bot_service(&mut realm);
    realm.apply(&Change::Bot(BotChange::DeliveryAttempted { id: 0 }));
    let stored = golden(
        "snapshot-v8-dev-realm.bin",
        8,
        &codec::encode_realm(&realm).unwrap(),
    );
    assert_eq!(stored[0], 8, "schema 8 fixture");
    let mut back = codec::decode_realm(&stored).unwrap();
    back.rebuild_indexes();
    assert_eq!(back, realm);
    assert_eq!(back.bot_services.outbox.pending[&0].attempts, 1);
    assert_eq!(back.bot_services.outbox.next_id, 1);
    if codec::REALM_SCHEMA == 8 {
        assert_eq!(
            codec::encode_realm(&back).unwrap(),
            stored,
            "the snapshot encoding changed without a new schema version"
        );
    }
}

/// A section this build does not know is refused, never dropped.
#[test]
fn an_unknown_snapshot_section_is_refused() {
    use hearth::storage::codec::sections::{sections_of, Section};
    let (_, realm) = built();
    let mut sections = sections_of(&realm).unwrap();
    sections.push(Section {
        name: "tomorrow".into(),
        version: 1,
        bytes: vec![0],
    });
    let bytes = codec::encode_versioned(codec::REALM_SCHEMA, &sections).unwrap();
    let err = codec::decode_realm(&bytes).unwrap_err().to_string();
    assert!(err.contains("unknown snapshot section 'tomorrow'"), "{err}");
}

/// The `missed_mail` section (the missed-message email schedule) is a section of
/// schema 8 like `bot_services`: its golden fixture decodes to the same realm, pending
/// entries and batches included, and the first schema 8 fixture (written before the
/// section existed) decodes with an empty schedule.
#[test]
fn golden_snapshot_with_the_missed_mail_section_decodes() {
    use hearth::realm::missed_mail::{MailChange, MailTrigger, PendingMail};
    use hearth::realm::Change;
    let (_, mut realm) = built();
    for (id, user_id, trigger) in [
        (0, 12, MailTrigger::DirectMessage),
        (1, 12, MailTrigger::Mention),
        (2, 8, MailTrigger::ChannelEmail),
    ] {
        realm.apply(&Change::Mail(MailChange::Queued(PendingMail {
            id,
            user_id,
            message_id: 40 + id,
            trigger,
            queued_at: 1_800_000_000,
            due_at: 1_800_000_120,
        })));
    }
    realm.apply(&Change::Mail(MailChange::Done { ids: vec![2] }));
    let stored = golden(
        "snapshot-v8-missed-mail.bin",
        8,
        &codec::encode_realm(&realm).unwrap(),
    );
    assert_eq!(stored[0], 8, "schema 8 fixture");
    let mut back = codec::decode_realm(&stored).unwrap();
    back.rebuild_indexes();
    assert_eq!(back, realm);
    assert_eq!(back.missed_mail.pending.len(), 2);
    assert_eq!(back.missed_mail.next_id, 3);
    assert_eq!(back.missed_mail.batches.get(&12), Some(&(1_800_000_120, 2)));
    assert_eq!(back.missed_mail.batches.get(&8), None);
    if codec::REALM_SCHEMA == 8 {
        assert_eq!(
            codec::encode_realm(&back).unwrap(),
            stored,
            "the snapshot encoding changed without a new schema version"
        );
    }
    let first = std::fs::read(fixture("snapshot-v8-dev-realm.bin")).unwrap();
    assert_eq!(
        codec::decode_realm(&first).unwrap().missed_mail,
        Default::default()
    );
}
