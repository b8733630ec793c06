//! Snapshot schema 9: one section per resource, each with its own version
//! (`storage::codec::sections`). The rule the sections keep: a change to one resource's
//! stored shape changes that section's version and nothing else, so a snapshot written
//! before the change still decodes, and every other section's bytes are as they were.
//!
//! `UPDATE_FIXTURES=1 cargo test --test api snapshot_sections::` writes the golden
//! snapshot of today's schema (when adding a schema version, never otherwise).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth::realm::missed_mail::{MailChange, MailTrigger, PendingMail};
use hearth::realm::sessions::{Session, SessionChange, SessionDigest};
use hearth::realm::{Change, Realm};
use hearth::storage::codec::sections::{sections_of, Section, SECTIONS};
use hearth::storage::codec::{self, decode_payload, open_frame, CodecError};

use crate::common::*;
use crate::formats::{add_bot_service, fixture, golden};
use reqwest::Method;
use serde_json::json;

const GOLDEN: &str = "snapshot-v9-dev-realm.bin";

/// A realm with state in every section but the realm's settings, made through the API
/// (like the golden snapshot of schema 5, whose writes it starts from), plus sessions,
/// an outgoing-webhook service with bot storage and a delivery, and a missed-message
/// email applied as changes. Written once into the golden fixture.
async fn everything() -> Realm {
    let app = TestApp::spawn().await;
    let verona = app.stream_id("Verona").await.to_string();
    let hamlet = app.user_id(HAMLET).await;
    let id = send_stream(&app, HAMLET, "Verona", "golden", "remind me").await;
    let in_a_day = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 86_400)
        .to_string();
    let members = json!([hamlet]).to_string();
    let drafts = json!([{"type": "stream", "to": [verona.parse::<u64>().unwrap()],
        "topic": "golden", "content": "draft", "timestamp": 1_700_000_000}])
    .to_string();
    /// Method, path, caller, parameters.
    type Write<'a> = (&'a str, String, &'a str, Vec<(&'a str, String)>);
    let writes: Vec<Write> = vec![
        (
            "POST",
            "/api/v1/realm/filters".into(),
            IAGO,
            vec![
                ("pattern", "#(?P<id>[0-9]+)".into()),
                ("url_template", "https://tracker.example/{id}".into()),
            ],
        ),
        (
            "POST",
            "/api/v1/realm/profile_fields".into(),
            IAGO,
            vec![("name", "Team".into()), ("field_type", "1".into())],
        ),
        (
            "POST",
            "/api/v1/user_groups/create".into(),
            IAGO,
            vec![
                ("name", "golden".into()),
                ("description", "kept".into()),
                ("members", members),
            ],
        ),
        (
            "PATCH",
            "/api/v1/realm".into(),
            IAGO,
            vec![
                (
                    "can_add_custom_emoji_group",
                    format!(r#"{{"new": {MODERATORS}}}"#),
                ),
                ("enable_read_receipts", "false".into()),
            ],
        ),
        (
            "POST",
            "/api/v1/navigation_views".into(),
            HAMLET,
            vec![
                ("fragment", format!("narrow/channel/{verona}-Verona")),
                ("name", "Verona view".into()),
                ("is_pinned", "true".into()),
            ],
        ),
        (
            "POST",
            "/api/v1/users/me/android_gcm_reg_id".into(),
            HAMLET,
            vec![("token", "fcm-token-1".into())],
        ),
        (
            "POST",
            "/api/v1/users/me/status".into(),
            HAMLET,
            vec![("status_text", "golden".into())],
        ),
        (
            "POST",
            "/api/v1/user_topics".into(),
            HAMLET,
            vec![
                ("stream_id", verona.clone()),
                ("topic", "golden".into()),
                ("visibility_policy", "1".into()),
            ],
        ),
        (
            "POST",
            format!("/api/v1/users/me/muted_users/{OTHELLO_ID}"),
            HAMLET,
            vec![],
        ),
        (
            "POST",
            "/api/v1/users/me/alert_words".into(),
            HAMLET,
            vec![("alert_words", r#"["golden"]"#.into())],
        ),
        (
            "PATCH",
            "/api/v1/settings".into(),
            HAMLET,
            vec![("twenty_four_hour_time", "true".into())],
        ),
        (
            "PATCH",
            "/api/v1/realm/user_settings_defaults".into(),
            IAGO,
            vec![("twenty_four_hour_time", "true".into())],
        ),
        (
            "POST",
            "/api/v1/drafts".into(),
            HAMLET,
            vec![("drafts", drafts)],
        ),
        (
            "POST",
            "/api/v1/saved_snippets".into(),
            HAMLET,
            vec![("title", "golden".into()), ("content", "snippet".into())],
        ),
        (
            "POST",
            "/api/v1/reminders".into(),
            HAMLET,
            vec![
                ("message_id", id.to_string()),
                ("scheduled_delivery_timestamp", in_a_day),
            ],
        ),
        (
            "POST",
            "/api/v1/invites/multiuse".into(),
            IAGO,
            vec![("invite_expires_in_minutes", "60".into())],
        ),
        (
            "POST",
            "/api/v1/realm/playgrounds".into(),
            IAGO,
            vec![
                ("name", "Golden".into()),
                ("pygments_language", "Python".into()),
                ("url_template", "https://python.example/?code={code}".into()),
            ],
        ),
        (
            "GET",
            format!("/api/v1/streams/{verona}/email_address"),
            HAMLET,
            vec![],
        ),
        ("POST", "/api/v1/export/realm".into(), OWNER, vec![]),
    ];
    for (method, path, who, params) in &writes {
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        app.ok(method, path, who, &params).await;
    }
    let field = app
        .ok("GET", "/api/v1/realm/profile_fields", HAMLET, &[])
        .await["custom_fields"][0]["id"]
        .clone();
    let data = json!([{"id": field, "value": "storage"}]).to_string();
    app.ok(
        "PATCH",
        "/api/v1/users/me/profile_data",
        HAMLET,
        &[("data", &data)],
    )
    .await;
    let key = app.api_key(HAMLET).await;
    let part = reqwest::multipart::Part::bytes(b"golden".to_vec())
        .file_name("golden.txt")
        .mime_str("text/plain")
        .unwrap();
    let reply = send(
        app.request(
            Method::POST,
            "/api/v1/user_uploads",
            Auth::Basic(HAMLET, &key),
        )
        .multipart(reqwest::multipart::Form::new().part("file", part)),
    )
    .await;
    assert_success(&reply);
    let mut realm = (*app.server().hub("localhost").unwrap().current()).clone();
    for (secret, user_id) in [("first", 10), ("second", 11)] {
        realm.apply(&Change::Session(SessionChange::Started {
            digest: SessionDigest::of(secret),
            session: Session {
                user_id,
                started: 1_800_000_000,
                expires: 1_800_000_000 + 14 * 24 * 3600,
            },
        }));
    }
    add_bot_service(&mut realm);
    realm.apply(&Change::Mail(MailChange::Queued(PendingMail {
        id: 0,
        user_id: 12,
        message_id: 40,
        trigger: MailTrigger::DirectMessage,
        queued_at: 1_800_000_000,
        due_at: 1_800_000_120,
    })));
    realm
}

/// A stored schema 9 snapshot's sections, as written.
fn stored_sections(bytes: &[u8]) -> Vec<Section> {
    let (version, payload) = open_frame(bytes).unwrap();
    assert_eq!(version, 9, "a schema 9 snapshot");
    decode_payload(payload).unwrap()
}

/// The golden snapshot of schema 9 decodes, every resource's state in it, and while 9
/// is today's schema, today's encoding of what it decodes to is the same bytes. (With
/// `UPDATE_FIXTURES` set it is first written from `everything()`.)
#[actix_web::test]
async fn golden_snapshot_of_schema_9_decodes() {
    if std::env::var_os("UPDATE_FIXTURES").is_some() && codec::REALM_SCHEMA == 9 {
        golden(
            GOLDEN,
            9,
            &codec::encode_realm(&everything().await).unwrap(),
        );
    }
    let stored = std::fs::read(fixture(GOLDEN)).unwrap();
    assert_eq!(stored[0], 9, "schema 9 fixture");
    let mut back = codec::decode_realm(&stored).unwrap();
    back.rebuild_indexes();
    assert!(back.user_by_delivery_email("hamlet@zulip.com").is_some());
    assert_eq!(
        back.linkifiers.len(),
        4,
        "the dev realm's three and one more"
    );
    assert_eq!(back.attachments.len(), 1);
    assert_eq!(back.navigation_views.values().flatten().count(), 1);
    assert_eq!(back.exports.by_id.len(), 1);
    assert_eq!(back.sessions.count_of(10), 1);
    assert_eq!(back.bot_services.outbox.next_id, 1);
    assert_eq!(back.missed_mail.pending.len(), 1);
    // Byte for byte, section by section: `each_section_keeps_its_bytes_until_its_own_
    // version_changes` (the whole snapshot's bytes change when a section is added,
    // which needs no new schema). Here: what this build writes of it reads back the same.
    let again = codec::decode_realm(&codec::encode_realm(&back).unwrap()).unwrap();
    let (a, b) = (sections_of(&back).unwrap(), sections_of(&again).unwrap());
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert!(x.bytes == y.bytes, "section '{}' re-encoded", x.name);
    }
}

/// The section rule, section by section against the golden snapshot: a section stored
/// at the version this build writes re-encodes to the very bytes stored (a resource's
/// shape changed without a new section version fails here, naming it); one stored at
/// an older version decoded through its frozen type above; one this build writes that
/// the snapshot lacks (a resource added since) starts as in a new realm.
#[test]
fn each_section_keeps_its_bytes_until_its_own_version_changes() {
    let stored = std::fs::read(fixture(GOLDEN)).unwrap();
    let old = stored_sections(&stored);
    let mut realm = codec::decode_realm(&stored).unwrap();
    realm.rebuild_indexes();
    let now = sections_of(&realm).unwrap();
    let fresh = sections_of(&Realm::new(realm.settings.clone())).unwrap();
    assert_eq!(now.len(), SECTIONS.len());
    for (i, (name, version)) in SECTIONS.iter().enumerate() {
        assert_eq!((now[i].name.as_str(), now[i].version), (*name, *version));
        match old.iter().find(|s| s.name == *name) {
            Some(s) if s.version == *version => assert!(
                s.bytes == now[i].bytes,
                "section '{name}' changed shape without a new version"
            ),
            Some(s) => assert!(
                s.version < *version,
                "section '{name}' stored at version {} > {version}",
                s.version
            ),
            None => assert_eq!(now[i].bytes, fresh[i].bytes, "new section '{name}'"),
        }
    }
    // The fixture holds state in every section but the settings (a new realm is made
    // with the same), so the comparison above means something.
    let empty: Vec<&str> = old
        .iter()
        .zip(&fresh)
        .filter(|(s, f)| s.bytes == f.bytes)
        .map(|(s, _)| s.name.as_str())
        .collect();
    assert_eq!(
        empty,
        ["settings"],
        "sections of the fixture as a new realm has them"
    );
}

/// The record of schemas 7 and 8 is the first version of the first 28 sections one
/// after another: the old golden snapshots decode, and their records re-encode as
/// today's sections byte for byte.
#[test]
fn older_snapshots_are_the_first_sections_in_a_row() {
    for (name, schema) in [
        ("snapshot-v7-dev-realm.bin", 7),
        ("snapshot-v8-dev-realm.bin", 8),
        ("snapshot-v8-missed-mail.bin", 8),
    ] {
        let stored = std::fs::read(fixture(name)).unwrap();
        let (version, payload) = open_frame(&stored).unwrap();
        assert_eq!(version, schema, "{name}");
        let mut realm = codec::decode_realm(&stored).unwrap();
        realm.rebuild_indexes();
        let sections = sections_of(&realm).unwrap();
        let record: Vec<u8> = sections[..28]
            .iter()
            .flat_map(|s| s.bytes.iter().copied())
            .collect();
        assert_eq!(&payload[..record.len()], record, "{name}: the record");
        if schema == 8 {
            // Then the sections added after schema 7, each written only when not empty.
            let later: Vec<Section> = sections[28..]
                .iter()
                .zip(&sections_of(&Realm::new(realm.settings.clone())).unwrap()[28..])
                .filter(|(s, fresh)| s.bytes != fresh.bytes)
                .map(|(s, _)| s.clone())
                .collect();
            let rest: Vec<Section> = decode_payload(&payload[record.len()..]).unwrap();
            assert_eq!(rest, later, "{name}: the later sections");
        } else {
            assert_eq!(
                payload.len(),
                record.len(),
                "{name}: nothing after the record"
            );
        }
    }
}

/// A section given twice, or a snapshot without its settings, is refused; a section
/// the snapshot lacks starts as in a new realm (a resource added after it was written).
#[test]
fn sections_given_twice_or_missing_settings_are_refused_and_others_may_be_absent() {
    let mut realm = codec::decode_realm(&std::fs::read(fixture(GOLDEN)).unwrap()).unwrap();
    realm.rebuild_indexes();
    let all = sections_of(&realm).unwrap();
    let encode = |s: &Vec<Section>| codec::encode_versioned(codec::REALM_SCHEMA, s).unwrap();

    let mut twice = all.clone();
    twice.push(all[1].clone());
    let err = codec::decode_realm(&encode(&twice)).unwrap_err();
    assert!(
        matches!(err, CodecError::DuplicateSection(ref n) if n == "users"),
        "{err}"
    );

    let no_settings: Vec<Section> = all[1..].to_vec();
    let err = codec::decode_realm(&encode(&no_settings)).unwrap_err();
    assert!(
        matches!(err, CodecError::MissingSection("settings")),
        "{err}"
    );

    let newer: Vec<Section> = all
        .iter()
        .map(|s| Section {
            version: if s.name == "drafts" { 2 } else { s.version },
            ..s.clone()
        })
        .collect();
    let err = codec::decode_realm(&encode(&newer))
        .unwrap_err()
        .to_string();
    assert!(err.contains("'drafts' version 2"), "{err}");

    let without: Vec<Section> = all
        .iter()
        .filter(|s| s.name != "missed_mail" && s.name != "bot_services")
        .cloned()
        .collect();
    let mut back = codec::decode_realm(&encode(&without)).unwrap();
    back.rebuild_indexes();
    assert_eq!(back.missed_mail, Default::default());
    assert_eq!(back.bot_services, Default::default());
    assert_eq!(back.users, realm.users);
    assert_eq!(back.sessions, realm.sessions);
}
