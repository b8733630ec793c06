//! Property tests (proptest) of what decodes untrusted bytes: request parameters and
//! the WAL and snapshot codec.
//!
//! - The codec never panics on arbitrary bytes, and a damaged or truncated record or
//!   snapshot (any bit flipped, any length cut) is refused, never decoded into
//!   something else.
//! - Parameter decoding never panics, refuses with a 400, and reads back exactly the
//!   integers, booleans and lists it was given.
//! - Over HTTP, generated parameters (the corpus below, arbitrary text, numbers, deep
//!   JSON) sent to the server's operations never get a 5xx, and every answer is a
//!   Zulip JSON body (`result`, `msg`, and `code` on errors).
//!
//! Cases proptest shrinks to after a failure are kept in `tests/proptest-regressions/`
//! and replayed first on every run; `tests/corpus/param-values.txt` holds values that
//! every run tries.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use crate::common::*;
use hearth::api::params::{json_depth, path_int, Params};
use hearth::storage::codec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .expect("fixture")
}

/// The corpus of parameter values (`tests/corpus/param-values.txt`).
fn corpus() -> Vec<String> {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/param-values.txt"),
    )
    .expect("corpus");
    let mut values: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.replace("\\n", "\n").replace("\\u0000", "\0"))
        .collect();
    values.push("x".repeat(20_000));
    values
}

// ------------------------------------------------------------------ the codec

proptest! {
    #![proptest_config(Config::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic_the_codec(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = codec::decode_changes(&bytes);
        let _ = codec::decode_realm(&bytes);
        let _ = codec::decode_presence(&bytes);
    }

    #[test]
    fn a_wal_record_with_any_bit_flipped_is_refused(at in any::<Index>(), bit in 0u8..8) {
        let mut record = fixture("wal-v2-dev-realm.bin");
        let i = at.index(record.len());
        record[i] ^= 1 << bit;
        prop_assert!(codec::decode_changes(&record).is_err(), "flip at byte {} bit {}", i, bit);
    }

    #[test]
    fn a_cut_or_lengthened_wal_record_is_refused(at in any::<Index>(), extra in prop::collection::vec(any::<u8>(), 1..16)) {
        let record = fixture("wal-v2-dev-realm.bin");
        let cut = at.index(record.len());
        prop_assert!(codec::decode_changes(&record[..cut]).is_err(), "cut at {}", cut);
        let mut longer = record.clone();
        longer.extend_from_slice(&extra);
        prop_assert!(codec::decode_changes(&longer).is_err());
    }
}

proptest! {
    // A snapshot decode is a whole realm: fewer cases.
    #![proptest_config(Config::with_cases(64))]

    #[test]
    fn a_snapshot_with_any_bit_flipped_is_refused(at in any::<Index>(), bit in 0u8..8) {
        let mut snapshot = fixture("snapshot-v2-dev-realm.bin");
        let i = at.index(snapshot.len());
        snapshot[i] ^= 1 << bit;
        prop_assert!(codec::decode_realm(&snapshot).is_err(), "flip at byte {} bit {}", i, bit);
    }
}

#[test]
fn the_golden_records_decode_unharmed() {
    assert!(codec::decode_changes(&fixture("wal-v2-dev-realm.bin")).is_ok());
    assert!(codec::decode_realm(&fixture("snapshot-v2-dev-realm.bin")).is_ok());
}

// ------------------------------------------------------------ parameter decoding

/// Every decoder of one parameter, on one value: none panics, each refusal is a 400.
fn decode_every_way(value: &str) {
    let p = Params::from_pairs(&[("x", value)]);
    let results: Vec<Option<u16>> = vec![
        p.opt_int("x").err().map(|e| e.status),
        p.opt_bool("x").err().map(|e| e.status),
        p.opt_json("x").err().map(|e| e.status),
        p.opt_int_list("x").err().map(|e| e.status),
        p.opt_str_list("x").err().map(|e| e.status),
        p.opt_object("x").err().map(|e| e.status),
        path_int("x", value).err().map(|e| e.status),
    ];
    for status in results.into_iter().flatten() {
        assert!(
            (400..500).contains(&status),
            "{value:?} refused with {status}"
        );
    }
    let _ = json_depth(value);
}

#[test]
fn the_corpus_decodes_without_panics() {
    for value in corpus() {
        decode_every_way(&value);
    }
}

proptest! {
    #![proptest_config(Config::with_cases(512))]

    #[test]
    fn any_text_decodes_without_panics(value in "\\PC{0,64}") {
        decode_every_way(&value);
    }

    #[test]
    fn any_json_decodes_without_panics(value in json_value()) {
        decode_every_way(&value.to_string());
    }

    #[test]
    fn integers_read_back_exactly(n in any::<i64>()) {
        let p = Params::from_pairs(&[("x", &n.to_string())]);
        prop_assert_eq!(p.opt_int("x").unwrap(), Some(n));
    }

    #[test]
    fn integer_lists_read_back_exactly(v in prop::collection::vec(any::<i64>(), 0..20)) {
        let text = serde_json::to_string(&v).unwrap();
        let p = Params::from_pairs(&[("x", &text)]);
        prop_assert_eq!(p.opt_int_list("x").unwrap(), Some(v));
    }

    #[test]
    fn string_lists_read_back_exactly(v in prop::collection::vec("\\PC{0,12}", 0..10)) {
        let text = serde_json::to_string(&v).unwrap();
        let p = Params::from_pairs(&[("x", &text)]);
        prop_assert_eq!(p.opt_str_list("x").unwrap(), Some(v));
    }

    #[test]
    fn booleans_read_back_exactly(b in any::<bool>()) {
        let p = Params::from_pairs(&[("x", &b.to_string())]);
        prop_assert_eq!(p.opt_bool("x").unwrap(), Some(b));
    }
}

/// JSON values: scalars, strings of any text, nested lists and objects.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,16}".prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

// ------------------------------------------------------------------- over HTTP

/// Operations and the parameters they read: generated values go to these.
const OPERATIONS: &[(&str, &str, &[&str])] = &[
    (
        "POST",
        "/users/me/subscriptions",
        &[
            "subscriptions",
            "principals",
            "invite_only",
            "announce",
            "history_public_to_subscribers",
            "authorization_errors_fatal",
        ],
    ),
    ("PATCH", "/users/me/subscriptions", &["subscription_data"]),
    (
        "DELETE",
        "/users/me/subscriptions",
        &["subscriptions", "principals"],
    ),
    (
        "PATCH",
        "/streams/{channel}",
        &[
            "description",
            "new_name",
            "is_private",
            "message_retention_days",
            "can_remove_subscribers_group",
        ],
    ),
    (
        "POST",
        "/messages",
        &["type", "to", "topic", "content", "queue_id", "local_id"],
    ),
    (
        "GET",
        "/messages",
        &[
            "anchor",
            "num_before",
            "num_after",
            "narrow",
            "apply_markdown",
            "include_anchor",
            "client_gravatar",
        ],
    ),
    (
        "PATCH",
        "/messages/{message}",
        &[
            "content",
            "topic",
            "propagate_mode",
            "stream_id",
            "send_notification_to_old_thread",
        ],
    ),
    (
        "POST",
        "/messages/{message}/reactions",
        &["emoji_name", "emoji_code", "reaction_type"],
    ),
    ("POST", "/messages/flags", &["messages", "op", "flag"]),
    (
        "POST",
        "/messages/flags/narrow",
        &[
            "anchor",
            "num_before",
            "num_after",
            "narrow",
            "op",
            "flag",
            "include_anchor",
        ],
    ),
    (
        "POST",
        "/scheduled_messages",
        &[
            "type",
            "to",
            "topic",
            "content",
            "scheduled_delivery_timestamp",
        ],
    ),
    (
        "POST",
        "/register",
        &[
            "event_types",
            "narrow",
            "apply_markdown",
            "client_capabilities",
            "fetch_event_types",
            "queue_lifespan_secs",
            "all_public_streams",
        ],
    ),
    (
        "GET",
        "/events",
        &["queue_id", "last_event_id", "dont_block"],
    ),
    (
        "GET",
        "/users",
        &[
            "user_ids",
            "client_gravatar",
            "include_custom_profile_fields",
        ],
    ),
    ("POST", "/users", &["email", "password", "full_name"]),
    (
        "POST",
        "/invites",
        &[
            "invitee_emails",
            "stream_ids",
            "invite_as",
            "invite_expires_in_minutes",
            "notify_referrer_on_join",
            "group_ids",
        ],
    ),
    (
        "PATCH",
        "/users/{user}",
        &["full_name", "role", "profile_data"],
    ),
    (
        "POST",
        "/users/me/status",
        &[
            "status_text",
            "emoji_name",
            "emoji_code",
            "reaction_type",
            "away",
        ],
    ),
    (
        "POST",
        "/users/me/presence",
        &[
            "status",
            "ping_only",
            "new_user_input",
            "last_update_id",
            "slim_presence",
            "history_limit_days",
        ],
    ),
    (
        "POST",
        "/user_groups/create",
        &[
            "name",
            "description",
            "members",
            "subgroups",
            "can_manage_group",
            "can_join_group",
        ],
    ),
    (
        "POST",
        "/user_groups/{group}/members",
        &["add", "delete", "add_subgroups", "delete_subgroups"],
    ),
    (
        "PATCH",
        "/realm",
        &[
            "can_create_groups",
            "can_manage_all_groups",
            "name",
            "description",
        ],
    ),
    ("POST", "/realm/filters", &["pattern", "url_template"]),
    (
        "POST",
        "/realm/profile_fields",
        &[
            "name",
            "hint",
            "field_type",
            "field_data",
            "display_in_profile_summary",
        ],
    ),
    (
        "POST",
        "/navigation_views",
        &["fragment", "name", "is_pinned"],
    ),
    ("POST", "/users/me/apns_device_token", &["token", "appid"]),
    ("POST", "/fetch_api_key", &["username", "password"]),
    ("POST", "/dev_fetch_api_key", &["username"]),
];

/// Generated requests per run (deterministic: the same ones every run).
const CASES: usize = 3000;

/// One generated request: an operation, and a value for some of its parameters.
#[derive(Debug, Clone)]
struct Call {
    op: usize,
    params: Vec<(usize, String)>,
}

fn call_strategy(corpus: Vec<String>) -> impl Strategy<Value = Call> {
    let value = prop_oneof![
        4 => prop::sample::select(corpus),
        2 => "\\PC{0,40}",
        2 => any::<i64>().prop_map(|n| n.to_string()),
        2 => json_value().prop_map(|v| v.to_string()),
        1 => Just("1".to_owned()),
    ];
    (0..OPERATIONS.len()).prop_flat_map(move |op| {
        let n = OPERATIONS[op].2.len();
        (
            Just(op),
            prop::collection::vec((0..n, value.clone()), 0..=n),
        )
            .prop_map(|(op, params)| Call { op, params })
    })
}

#[actix_web::test]
async fn generated_requests_never_get_a_5xx_and_always_a_zulip_body() {
    let app = TestApp::spawn().await;
    // Objects the paths name.
    let channel = app.stream_id("Verona").await;
    let user = app.user_id("hamlet@zulip.com").await;
    let (_, sent) = app
        .call(
            "POST",
            "/api/v1/messages",
            "iago@zulip.com",
            &[
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", "properties"),
                ("content", "a message to edit"),
            ],
        )
        .await;
    let message = sent["id"].as_u64().expect("a message id");
    let (_, groups) = app
        .call("GET", "/api/v1/user_groups", "iago@zulip.com", &[])
        .await;
    let group = groups["user_groups"][0]["id"].as_u64().expect("a group");

    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let strategy = call_strategy(corpus());
    let mut failures = Vec::new();
    for case in 0..CASES {
        let call = strategy
            .new_tree(&mut runner)
            .expect("a generated case")
            .current();
        let (method, path, names) = OPERATIONS[call.op];
        let path = path
            .replace("{channel}", &channel.to_string())
            .replace("{message}", &message.to_string())
            .replace("{user}", &user.to_string())
            .replace("{group}", &group.to_string());
        let params: Vec<(&str, &str)> = call
            .params
            .iter()
            .map(|(i, v)| (names[*i], v.as_str()))
            .collect();
        // Admins reach the most code; a member is refused elsewhere.
        let who = if case % 3 == 0 {
            "hamlet@zulip.com"
        } else {
            "iago@zulip.com"
        };
        let (status, body) = app
            .call(method, &format!("/api/v1{path}"), who, &params)
            .await;
        let zulip_body = matches!(body["result"].as_str(), Some("success" | "error"))
            && body["msg"].is_string()
            && (body["result"] == "success" || body["code"].is_string());
        if status >= 500 || !zulip_body {
            failures.push(format!(
                "{method} {path} {params:?} as {who}: {status} {body}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {CASES} generated requests failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
