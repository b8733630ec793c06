//! Personal data: drafts, saved snippets and message reminders. Every rule and error
//! text (Zulip's `zerver/lib/drafts.py`, `zerver/views/saved_snippets.py`,
//! `zerver/actions/saved_snippets.py`, `zerver/views/reminders.py`,
//! `zerver/lib/reminders.py`), their events and `/register` keys, a reminder's delivery
//! by the Notification Bot, restarts, and `kill -9` of the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use crate::common::child::ChildServer;
use crate::common::*;
use hearth::realm::ManualClock;
use serde_json::{json, Value};

const DRAFTS: &str = "/api/v1/drafts";
const SNIPPETS: &str = "/api/v1/saved_snippets";
const REMINDERS: &str = "/api/v1/reminders";
const BOT_EMAIL: &str = "notification-bot@zulip.com";

async fn create_drafts(s: &TestApp, who: &str, drafts: Value) -> Vec<u64> {
    let body = s
        .ok("POST", DRAFTS, who, &[("drafts", &drafts.to_string())])
        .await;
    body["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

async fn bad_drafts(s: &TestApp, who: &str, drafts: Value, msg: &str) {
    s.bad("POST", DRAFTS, who, &[("drafts", &drafts.to_string())], msg)
        .await;
}

async fn drafts(s: &TestApp, who: &str) -> Value {
    let body = s.ok("GET", DRAFTS, who, &[]).await;
    assert_eq!(
        body["count"].as_u64().unwrap() as usize,
        body["drafts"].as_array().unwrap().len()
    );
    body["drafts"].clone()
}

async fn send_to_verona(s: &TestApp, who: &str, topic: &str, content: &str) -> i64 {
    s.ok(
        "POST",
        "/api/v1/messages",
        who,
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", topic),
            ("content", content),
        ],
    )
    .await["id"]
        .as_i64()
        .unwrap()
}

async fn send_direct(s: &TestApp, who: &str, to: i64, content: &str) -> i64 {
    s.ok(
        "POST",
        "/api/v1/messages",
        who,
        &[
            ("type", "direct"),
            ("to", &json!([to]).to_string()),
            ("content", content),
        ],
    )
    .await["id"]
        .as_i64()
        .unwrap()
}

// ---- drafts --------------------------------------------------------------------------

#[actix_web::test]
async fn drafts_are_created_listed_edited_and_deleted() {
    let s = TestApp::spawn_with_clock(ManualClock::new(START_MS)).await;
    let verona = s.stream_id("Verona").await;
    let ids = create_drafts(
        &s,
        HAMLET,
        json!([
            {"type": "stream", "to": [verona], "topic": "plans", "content": " later \n", "timestamp": 1_595_479_019.7},
            {"type": "private", "to": [OTHELLO_ID, IAGO_ID, OTHELLO_ID], "topic": "ignored", "content": "psst"},
            {"type": "private", "to": [HAMLET_ID], "topic": "", "content": "note to self", "timestamp": 100},
            {"type": "private", "to": [], "topic": "x", "content": "nobody yet", "timestamp": 200},
            {"type": "", "to": [5], "topic": "x", "content": "unaddressed", "timestamp": 300},
        ]),
    )
    .await;
    assert_eq!(ids.len(), 5);
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    // Oldest edit first; a draft without a timestamp was edited now.
    assert_eq!(
        drafts(&s, HAMLET).await,
        json!([
            {"id": ids[2], "type": "private", "to": [HAMLET_ID], "topic": "", "content": "note to self", "timestamp": 100},
            {"id": ids[3], "type": "", "to": [], "topic": "", "content": "nobody yet", "timestamp": 200},
            {"id": ids[4], "type": "", "to": [], "topic": "", "content": "unaddressed", "timestamp": 300},
            {"id": ids[0], "type": "stream", "to": [verona], "topic": "plans", "content": "later", "timestamp": 1_595_479_019},
            {"id": ids[1], "type": "private", "to": [IAGO_ID, OTHELLO_ID], "topic": "", "content": "psst", "timestamp": START},
        ])
    );
    // Drafts are their user's only.
    assert_eq!(drafts(&s, OTHELLO).await, json!([]));
    for (method, params) in [
        (
            "PATCH",
            vec![(
                "draft",
                json!({"type": "", "to": [], "topic": "", "content": "mine"}).to_string(),
            )],
        ),
        ("DELETE", vec![]),
    ] {
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        s.err(
            method,
            &format!("{DRAFTS}/{}", ids[0]),
            OTHELLO,
            &params,
            404,
            "BAD_REQUEST",
            "Draft does not exist",
        )
        .await;
    }

    // An edit replaces the whole draft.
    let path = format!("{DRAFTS}/{}", ids[1]);
    s.ok(
        "PATCH",
        &path,
        HAMLET,
        &[(
            "draft",
            &json!({"type": "stream", "to": [verona], "topic": "moved", "content": "now public", "timestamp": 50})
                .to_string(),
        )],
    )
    .await;
    assert_eq!(
        drafts(&s, HAMLET).await[0],
        json!({"id": ids[1], "type": "stream", "to": [verona], "topic": "moved", "content": "now public", "timestamp": 50})
    );
    // The lookup comes before the draft's own checks.
    s.err(
        "PATCH",
        &format!("{DRAFTS}/999999"),
        HAMLET,
        &[(
            "draft",
            &json!({"type": "stream", "to": [1, 2], "topic": "", "content": "x"}).to_string(),
        )],
        404,
        "BAD_REQUEST",
        "Draft does not exist",
    )
    .await;
    s.bad(
        "PATCH",
        &path,
        HAMLET,
        &[(
            "draft",
            &json!({"type": "stream", "to": [1, 2], "topic": "", "content": "x"}).to_string(),
        )],
        "Must specify exactly 1 channel ID for channel messages",
    )
    .await;
    s.bad(
        "PATCH",
        &path,
        HAMLET,
        &[("draft", &json!([]).to_string())],
        "draft is not a dict",
    )
    .await;
    let missing = s
        .err(
            "PATCH",
            &path,
            HAMLET,
            &[],
            400,
            "REQUEST_VARIABLE_MISSING",
            "Missing 'draft' argument",
        )
        .await;
    assert_eq!(missing["var_name"], "draft");
    s.bad(
        "PATCH",
        &format!("{DRAFTS}/abc"),
        HAMLET,
        &[],
        "draft_id is not an integer",
    )
    .await;

    s.ok("DELETE", &path, HAMLET, &[]).await;
    s.err(
        "DELETE",
        &path,
        HAMLET,
        &[],
        404,
        "BAD_REQUEST",
        "Draft does not exist",
    )
    .await;
    assert_eq!(drafts(&s, HAMLET).await.as_array().unwrap().len(), 4);
}

#[actix_web::test]
async fn draft_errors_as_zulip_words_them() {
    let s = TestApp::spawn().await;
    let verona = s.stream_id("Verona").await;
    let draft = |kind: &str, to: Value, topic: &str, content: &str| json!([{"type": kind, "to": to, "topic": topic, "content": content}]);
    let missing = s
        .err(
            "POST",
            DRAFTS,
            HAMLET,
            &[],
            400,
            "REQUEST_VARIABLE_MISSING",
            "Missing 'drafts' argument",
        )
        .await;
    assert_eq!(missing["var_name"], "drafts");
    s.bad(
        "POST",
        DRAFTS,
        HAMLET,
        &[("drafts", "{")],
        "drafts is not valid JSON",
    )
    .await;
    bad_drafts(&s, HAMLET, json!({}), "drafts is not a list").await;
    bad_drafts(&s, HAMLET, json!([3]), "drafts[0] is not a dict").await;
    // The fields in `DraftData`'s order, then unexpected keys.
    bad_drafts(
        &s,
        HAMLET,
        json!([{"to": "x", "topic": 1}]),
        "drafts[0][\"type\"] field is missing: Field required",
    )
    .await;
    bad_drafts(
        &s,
        HAMLET,
        draft("huddle", json!([]), "", "x"),
        "Invalid drafts[0][\"type\"]",
    )
    .await;
    bad_drafts(
        &s,
        HAMLET,
        draft("", json!(3), "", "x"),
        "drafts[0][\"to\"] is not a list",
    )
    .await;
    bad_drafts(
        &s,
        HAMLET,
        draft("", json!([1, "2"]), "", "x"),
        "drafts[0][\"to\"][1] is not an integer",
    )
    .await;
    bad_drafts(
        &s,
        HAMLET,
        json!([{"type": "", "to": [], "topic": 4, "content": "x"}]),
        "drafts[0][\"topic\"] is not a string",
    )
    .await;
    bad_drafts(
        &s,
        HAMLET,
        json!([{"type": "", "to": [], "topic": ""}]),
        "drafts[0][\"content\"] field is missing: Field required",
    )
    .await;
    bad_drafts(
        &s,
        HAMLET,
        draft("", json!([]), "", " \n "),
        "drafts[0][\"content\"] cannot be blank",
    )
    .await;
    bad_drafts(
        &s,
        HAMLET,
        json!([{"type": "", "to": [], "topic": "", "content": "x", "timestamp": "soon"}]),
        "drafts[0][\"timestamp\"][\"int\"] is not an integer",
    )
    .await;
    bad_drafts(
        &s,
        HAMLET,
        json!([{"type": "", "to": [], "topic": "", "content": "x", "id": 1}]),
        "Argument \"id\" at drafts[0][\"id\"] is unexpected",
    )
    .await;
    // Then `further_validated_draft_dict`, draft by draft: content, timestamp, address.
    bad_drafts(
        &s,
        HAMLET,
        draft("", json!([]), "", "a\u{0}b"),
        "Message must not contain null bytes",
    )
    .await;
    bad_drafts(
        &s,
        HAMLET,
        json!([{"type": "", "to": [], "topic": "", "content": "x", "timestamp": -1}]),
        "Timestamp must not be negative.",
    )
    .await;
    bad_drafts(
        &s,
        HAMLET,
        draft("stream", json!([verona]), "a\u{0}", "x"),
        "Topic must not contain null bytes",
    )
    .await;
    bad_drafts(
        &s,
        HAMLET,
        draft("stream", json!([]), "t", "x"),
        "Must specify exactly 1 channel ID for channel messages",
    )
    .await;
    bad_drafts(
        &s,
        HAMLET,
        draft("stream", json!([99999]), "t", "x"),
        "Invalid channel ID",
    )
    .await;
    bad_drafts(
        &s,
        HAMLET,
        draft("private", json!([HAMLET_ID, 99999]), "", "x"),
        "Invalid user ID 99999",
    )
    .await;
    // One bad draft refuses them all.
    bad_drafts(
        &s,
        HAMLET,
        json!([
            {"type": "", "to": [], "topic": "", "content": "fine"},
            {"type": "stream", "to": [99999], "topic": "", "content": "x"},
        ]),
        "Invalid channel ID",
    )
    .await;
    assert_eq!(drafts(&s, HAMLET).await, json!([]));
    // A guest may not address a channel it cannot read.
    let private = s.stream_id("core team").await;
    bad_drafts(
        &s,
        POLONIUS,
        draft("stream", json!([private]), "t", "x"),
        "Invalid channel ID",
    )
    .await;
    // A long topic is cut as a message's is.
    let ids = create_drafts(
        &s,
        HAMLET,
        draft("stream", json!([verona]), &"t".repeat(70), "x"),
    )
    .await;
    let listed = drafts(&s, HAMLET).await;
    assert_eq!(listed[0]["id"], ids[0]);
    assert_eq!(listed[0]["topic"], format!("{}...", "t".repeat(57)));
}

#[actix_web::test]
async fn draft_events_and_register() {
    let s = TestApp::spawn_with_clock(ManualClock::new(START_MS)).await;
    let queue = s.register(HAMLET, &[("event_types", "[\"drafts\"]")]).await;
    let other = s
        .register(OTHELLO, &[("event_types", "[\"drafts\"]")])
        .await;
    let ids = create_drafts(
        &s,
        HAMLET,
        json!([
            {"type": "private", "to": [OTHELLO_ID], "topic": "", "content": "one", "timestamp": 10},
            {"type": "", "to": [], "topic": "", "content": "two", "timestamp": 20},
        ]),
    )
    .await;
    let path = format!("{DRAFTS}/{}", ids[0]);
    s.ok(
        "PATCH",
        &path,
        HAMLET,
        &[(
            "draft",
            &json!({"type": "", "to": [], "topic": "", "content": "one, edited", "timestamp": 30})
                .to_string(),
        )],
    )
    .await;
    s.ok("DELETE", &format!("{DRAFTS}/{}", ids[1]), HAMLET, &[])
        .await;
    let events: Vec<Value> = s
        .events(HAMLET, &queue)
        .await
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect();
    assert_eq!(
        events,
        vec![
            json!({"type": "drafts", "op": "add", "drafts": [
                {"id": ids[0], "type": "private", "to": [OTHELLO_ID], "topic": "", "content": "one", "timestamp": 10},
                {"id": ids[1], "type": "", "to": [], "topic": "", "content": "two", "timestamp": 20},
            ]}),
            json!({"type": "drafts", "op": "update", "draft":
                {"id": ids[0], "type": "", "to": [], "topic": "", "content": "one, edited", "timestamp": 30}}),
            json!({"type": "drafts", "op": "remove", "draft_id": ids[1]}),
        ]
    );
    assert!(s.events(OTHELLO, &other).await.is_empty());

    // `/register`: newest edit first.
    create_drafts(
        &s,
        HAMLET,
        json!([{"type": "", "to": [], "topic": "", "content": "three", "timestamp": 5}]),
    )
    .await;
    let state = s
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("fetch_event_types", "[\"drafts\"]")],
        )
        .await;
    let contents: Vec<&str> = state["drafts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["one, edited", "three"]);
    let state = s
        .ok(
            "POST",
            "/api/v1/register",
            OTHELLO,
            &[("fetch_event_types", "[\"drafts\"]")],
        )
        .await;
    assert_eq!(state["drafts"], json!([]));
}

// ---- saved snippets ----------------------------------------------------------------

/// `enable_drafts_synchronization` off: every drafts route refuses, `/register` gives
/// none, and the drafts kept on the server are gone (Zulip deletes them, without
/// events); on again, drafts are kept anew, also across a restart.
#[actix_web::test]
async fn turning_synchronization_off_deletes_the_servers_drafts() {
    let mut s = TestApp::spawn().await;
    let ids = create_drafts(
        &s,
        HAMLET,
        json!([{"type": "", "to": [], "topic": "", "content": "kept?", "timestamp": 10}]),
    )
    .await;
    s.ok(
        "PATCH",
        "/api/v1/settings",
        HAMLET,
        &[("enable_drafts_synchronization", "false")],
    )
    .await;
    let refused = "User has disabled synchronizing drafts.";
    s.bad("GET", DRAFTS, HAMLET, &[], refused).await;
    bad_drafts(
        &s,
        HAMLET,
        json!([{"type": "", "to": [], "topic": "", "content": "x", "timestamp": 1}]),
        refused,
    )
    .await;
    let path = format!("{DRAFTS}/{}", ids[0]);
    s.bad("DELETE", &path, HAMLET, &[], refused).await;
    let state = s
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("fetch_event_types", "[\"drafts\"]")],
        )
        .await;
    assert_eq!(state["drafts"], json!([]));
    // Othello's drafts are his own business.
    create_drafts(
        &s,
        OTHELLO,
        json!([{"type": "", "to": [], "topic": "", "content": "his", "timestamp": 10}]),
    )
    .await;
    s.ok(
        "PATCH",
        "/api/v1/settings",
        HAMLET,
        &[("enable_drafts_synchronization", "true")],
    )
    .await;
    assert_eq!(drafts(&s, HAMLET).await, json!([]));
    create_drafts(
        &s,
        HAMLET,
        json!([{"type": "", "to": [], "topic": "", "content": "anew", "timestamp": 20}]),
    )
    .await;
    s.restart().await;
    assert_eq!(drafts(&s, HAMLET).await.as_array().unwrap().len(), 1);
    assert_eq!(drafts(&s, HAMLET).await[0]["content"], "anew");
    assert_eq!(drafts(&s, OTHELLO).await.as_array().unwrap().len(), 1);
}

#[actix_web::test]
async fn saved_snippets_rules_events_and_register() {
    let s = TestApp::spawn_with_clock(ManualClock::new(START_MS)).await;
    let queue = s
        .register(HAMLET, &[("event_types", "[\"saved_snippets\"]")])
        .await;
    // `typed_endpoint`'s texts, title first.
    let missing = s
        .err(
            "POST",
            SNIPPETS,
            HAMLET,
            &[("content", "x")],
            400,
            "REQUEST_VARIABLE_MISSING",
            "Missing 'title' argument",
        )
        .await;
    assert_eq!(missing["var_name"], "title");
    s.err(
        "POST",
        SNIPPETS,
        HAMLET,
        &[("title", "x")],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'content' argument",
    )
    .await;
    s.bad(
        "POST",
        SNIPPETS,
        HAMLET,
        &[("title", "  "), ("content", "")],
        "title cannot be blank",
    )
    .await;
    s.bad(
        "POST",
        SNIPPETS,
        HAMLET,
        &[("title", &"t".repeat(61)), ("content", "")],
        "title is too long (limit: 60 characters)",
    )
    .await;
    s.bad(
        "POST",
        SNIPPETS,
        HAMLET,
        &[("title", "ok"), ("content", " \n")],
        "content cannot be blank",
    )
    .await;
    s.bad(
        "POST",
        SNIPPETS,
        HAMLET,
        &[("title", "ok"), ("content", &"c".repeat(10_001))],
        "content is too long (limit: 10000 characters)",
    )
    .await;
    // Stripped before the length is counted.
    let title = format!("  {}  ", "t".repeat(60));
    let first = s
        .ok(
            "POST",
            SNIPPETS,
            HAMLET,
            &[("title", &title), ("content", " Welcome! \n")],
        )
        .await["saved_snippet_id"]
        .as_u64()
        .unwrap();
    let second = s
        .ok(
            "POST",
            SNIPPETS,
            HAMLET,
            &[("title", "Bye"), ("content", "See you")],
        )
        .await["saved_snippet_id"]
        .as_u64()
        .unwrap();
    assert_eq!(second, first + 1);
    let one =
        json!({"id": first, "title": "t".repeat(60), "content": "Welcome!", "date_created": START});
    let listed = s.ok("GET", SNIPPETS, HAMLET, &[]).await;
    assert_eq!(
        listed["saved_snippets"],
        json!([one, {"id": second, "title": "Bye", "content": "See you", "date_created": START}])
    );
    assert_eq!(
        s.ok("GET", SNIPPETS, OTHELLO, &[]).await["saved_snippets"],
        json!([])
    );

    let path = format!("{SNIPPETS}/{first}");
    // Nothing to change: success, without even a lookup, and no event.
    s.ok("PATCH", &format!("{SNIPPETS}/999999"), HAMLET, &[])
        .await;
    s.bad(
        "PATCH",
        &path,
        HAMLET,
        &[("title", " ")],
        "title cannot be blank",
    )
    .await;
    for who in [HAMLET, OTHELLO] {
        let target = if who == HAMLET {
            format!("{SNIPPETS}/999999")
        } else {
            path.clone()
        };
        s.err(
            "PATCH",
            &target,
            who,
            &[("title", "Mine")],
            404,
            "BAD_REQUEST",
            "Saved snippet does not exist.",
        )
        .await;
        s.err(
            "DELETE",
            &target,
            who,
            &[],
            404,
            "BAD_REQUEST",
            "Saved snippet does not exist.",
        )
        .await;
    }
    s.ok("PATCH", &path, HAMLET, &[("content", " Hello again ")])
        .await;
    s.ok("DELETE", &format!("{SNIPPETS}/{second}"), HAMLET, &[])
        .await;
    let edited = json!({"id": first, "title": "t".repeat(60), "content": "Hello again", "date_created": START});
    let events: Vec<Value> = s
        .events(HAMLET, &queue)
        .await
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect();
    assert_eq!(
        events,
        vec![
            json!({"type": "saved_snippets", "op": "add", "saved_snippet": one}),
            json!({"type": "saved_snippets", "op": "add", "saved_snippet":
                {"id": second, "title": "Bye", "content": "See you", "date_created": START}}),
            json!({"type": "saved_snippets", "op": "update", "saved_snippet": edited}),
            json!({"type": "saved_snippets", "op": "remove", "saved_snippet_id": second}),
        ]
    );
    let state = s
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("fetch_event_types", "[\"saved_snippets\"]")],
        )
        .await;
    assert_eq!(state["saved_snippets"], json!([edited]));
}

// ---- reminders -----------------------------------------------------------------------

async fn remind(s: &TestApp, who: &str, message: i64, at: i64, note: Option<&str>) -> u64 {
    let (m, t) = (message.to_string(), at.to_string());
    let mut params = vec![
        ("message_id", m.as_str()),
        ("scheduled_delivery_timestamp", &t),
    ];
    if let Some(n) = note {
        params.push(("note", n));
    }
    s.ok("POST", REMINDERS, who, &params).await["reminder_id"]
        .as_u64()
        .unwrap()
}

async fn reminders(s: &TestApp, who: &str) -> Vec<Value> {
    s.ok("GET", REMINDERS, who, &[]).await["reminders"]
        .as_array()
        .unwrap()
        .clone()
}

/// The newest message `who` received.
async fn newest(s: &TestApp, who: &str) -> Value {
    let body = s
        .ok(
            "GET",
            "/api/v1/messages",
            who,
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("num_after", "0"),
                ("apply_markdown", "false"),
            ],
        )
        .await;
    body["messages"].as_array().unwrap().last().unwrap().clone()
}

#[actix_web::test]
async fn reminder_errors_in_zulip_order() {
    let s = TestApp::spawn_with_clock(ManualClock::new(START_MS)).await;
    let msg = send_to_verona(&s, HAMLET, "remind", "hello").await;
    let (m, later) = (msg.to_string(), (START + 60).to_string());
    let missing = s
        .err(
            "POST",
            REMINDERS,
            HAMLET,
            &[("scheduled_delivery_timestamp", &later)],
            400,
            "REQUEST_VARIABLE_MISSING",
            "Missing 'message_id' argument",
        )
        .await;
    assert_eq!(missing["var_name"], "message_id");
    s.err(
        "POST",
        REMINDERS,
        HAMLET,
        &[("message_id", &m)],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'scheduled_delivery_timestamp' argument",
    )
    .await;
    s.bad(
        "POST",
        REMINDERS,
        HAMLET,
        &[
            ("message_id", "x"),
            ("scheduled_delivery_timestamp", &later),
        ],
        "message_id is not valid JSON",
    )
    .await;
    s.bad(
        "POST",
        REMINDERS,
        HAMLET,
        &[
            ("message_id", "\"1\""),
            ("scheduled_delivery_timestamp", &later),
        ],
        "message_id is not an integer",
    )
    .await;
    s.bad(
        "POST",
        REMINDERS,
        HAMLET,
        &[
            ("message_id", &m),
            ("scheduled_delivery_timestamp", "\"soon\""),
        ],
        "scheduled_delivery_timestamp is not an integer",
    )
    .await;
    // The time first (even for a message that does not exist), then the message, then
    // the note.
    let long_note = "n".repeat(1001);
    s.bad(
        "POST",
        REMINDERS,
        HAMLET,
        &[
            ("message_id", "999999"),
            ("scheduled_delivery_timestamp", &START.to_string()),
            ("note", &long_note),
        ],
        "Scheduled delivery time must be in the future.",
    )
    .await;
    s.bad(
        "POST",
        REMINDERS,
        HAMLET,
        &[
            ("message_id", "999999"),
            ("scheduled_delivery_timestamp", &later),
            ("note", &long_note),
        ],
        "Invalid message(s)",
    )
    .await;
    s.bad(
        "POST",
        REMINDERS,
        HAMLET,
        &[
            ("message_id", &m),
            ("scheduled_delivery_timestamp", &later),
            ("note", &long_note),
        ],
        "Maximum reminder note length: 1000 characters",
    )
    .await;
    // Only a message the user may read.
    let private = send_direct(&s, HAMLET, OTHELLO_ID, "between us").await;
    s.bad(
        "POST",
        REMINDERS,
        POLONIUS,
        &[
            ("message_id", &private.to_string()),
            ("scheduled_delivery_timestamp", &later),
        ],
        "Invalid message(s)",
    )
    .await;
    assert!(reminders(&s, POLONIUS).await.is_empty());
    // Reminders are their user's only.
    let id = remind(&s, HAMLET, msg, START + 60, None).await;
    s.err(
        "DELETE",
        &format!("{REMINDERS}/{id}"),
        OTHELLO,
        &[],
        404,
        "BAD_REQUEST",
        "Reminder does not exist",
    )
    .await;
    s.bad(
        "DELETE",
        &format!("{REMINDERS}/x"),
        HAMLET,
        &[],
        "reminder_id is not an integer",
    )
    .await;
    assert_eq!(reminders(&s, HAMLET).await.len(), 1);
    assert!(reminders(&s, OTHELLO).await.is_empty());
}

#[actix_web::test]
async fn reminders_are_listed_delivered_and_deleted_with_events() {
    let clock = ManualClock::new(START_MS);
    let s = TestApp::spawn_with_clock(clock.clone()).await;
    let queue = s
        .register(HAMLET, &[("event_types", "[\"reminders\", \"message\"]")])
        .await;
    let msg = send_to_verona(&s, OTHELLO, "greetings", "Hello, `Hamlet`!").await;
    let dm = send_direct(&s, OTHELLO, HAMLET_ID, "a secret").await;
    let late = remind(&s, HAMLET, dm, START + 600, None).await;
    let soon = remind(&s, HAMLET, msg, START + 60, Some("\nreply to this  \n")).await;
    let gone = remind(&s, HAMLET, msg, START + 30, None).await;
    let listed = reminders(&s, HAMLET).await;
    let ids: Vec<u64> = listed
        .iter()
        .map(|r| r["reminder_id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [gone, soon, late], "by delivery time");
    let r = &listed[1];
    assert_eq!(r["type"], "private");
    assert_eq!(r["to"], json!([HAMLET_ID]));
    assert_eq!(r["scheduled_delivery_timestamp"], START + 60);
    assert_eq!(r["failed"], false);
    assert_eq!(r["reminder_target_message_id"], msg);
    let content = r["content"].as_str().unwrap();
    assert!(
        content.starts_with(&format!(
            "Reminder: [a message](#narrow/id/{msg}) @_**Othello, the Moor of Venice|{OTHELLO_ID}** sent in #**Verona>greetings**."
        )),
        "{content}"
    );
    assert!(
        content.contains("**Your note:** reply to this"),
        "{content}"
    );
    assert!(
        content.ends_with("```quote\nHello, `Hamlet`!\n```"),
        "{content}"
    );
    assert!(
        r["rendered_content"]
            .as_str()
            .unwrap()
            .contains("<blockquote>"),
        "{r}"
    );
    let dm_reminder = listed[2]["content"].as_str().unwrap();
    assert!(
        dm_reminder.contains("sent in a direct message."),
        "{dm_reminder}"
    );

    s.ok("DELETE", &format!("{REMINDERS}/{gone}"), HAMLET, &[])
        .await;
    s.err(
        "DELETE",
        &format!("{REMINDERS}/{gone}"),
        HAMLET,
        &[],
        404,
        "BAD_REQUEST",
        "Reminder does not exist",
    )
    .await;

    // Not yet due.
    clock.advance_ms(59_000);
    s.deliver_scheduled().await;
    assert_eq!(reminders(&s, HAMLET).await.len(), 2);
    // The message changed meanwhile: the reminder quotes it as it is now.
    s.ok(
        "PATCH",
        &format!("/api/v1/messages/{msg}"),
        OTHELLO,
        &[("content", "Hello, edited")],
    )
    .await;
    clock.advance_ms(1_000);
    s.deliver_scheduled().await;
    let left = reminders(&s, HAMLET).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["reminder_id"], late);
    let m = newest(&s, HAMLET).await;
    assert_eq!(m["sender_email"], BOT_EMAIL);
    assert_eq!(m["sender_full_name"], "Notification Bot");
    assert_eq!(m["type"], "private");
    let recipients: Vec<i64> = m["display_recipient"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_i64().unwrap())
        .collect();
    assert_eq!(recipients, [HAMLET_ID, i64::from(i32::MAX)], "{m}");
    assert_eq!(m["display_recipient"][1]["email"], BOT_EMAIL);
    let delivered = m["content"].as_str().unwrap();
    assert!(
        delivered.contains("**Your note:** reply to this"),
        "{delivered}"
    );
    assert!(
        delivered.ends_with("```quote\nHello, edited\n```"),
        "{delivered}"
    );
    assert!(
        !m["flags"].as_array().unwrap().contains(&json!("read")),
        "{m}"
    );

    let events: Vec<Value> = s.events(HAMLET, &queue).await;
    let kinds: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_owned(),
                e["op"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let kinds: Vec<(&str, &str)> = kinds
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("message", ""),
            ("message", ""),
            ("reminders", "add"),
            ("reminders", "add"),
            ("reminders", "add"),
            ("reminders", "remove"),
            ("message", ""),
            ("reminders", "remove"),
        ],
        "{events:#?}"
    );
    assert_eq!(events[2]["reminders"], json!([listed[2]]));
    assert_eq!(events[5]["reminder_id"], gone);
    assert_eq!(events[6]["message"]["sender_email"], BOT_EMAIL);
    assert_eq!(events[6]["flags"], json!([]));
    assert_eq!(
        events[7],
        json!({"type": "reminders", "op": "remove", "reminder_id": soon, "id": events[7]["id"]})
    );

    // `/register` lists the pending ones.
    let state = s
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("fetch_event_types", "[\"reminders\"]")],
        )
        .await;
    assert_eq!(state["reminders"], json!(left));

    // A message the user can no longer read: the text written at creation.
    s.ok("DELETE", &format!("/api/v1/messages/{dm}"), OTHELLO, &[])
        .await;
    clock.advance_ms(600_000);
    s.deliver_scheduled().await;
    assert!(reminders(&s, HAMLET).await.is_empty());
    let m = newest(&s, HAMLET).await;
    assert_eq!(m["sender_email"], BOT_EMAIL);
    assert_eq!(m["content"], left[0]["content"]);
}

#[actix_web::test]
async fn personal_data_survives_a_restart_and_a_late_reminder_is_delivered() {
    let clock = ManualClock::new(START_MS);
    let mut s = TestApp::spawn_with_clock(clock.clone()).await;
    let msg = send_to_verona(&s, OTHELLO, "restart", "before the restart").await;
    let draft = create_drafts(
        &s,
        HAMLET,
        json!([{"type": "", "to": [], "topic": "", "content": "kept", "timestamp": 7}]),
    )
    .await[0];
    let snippet = s
        .ok(
            "POST",
            SNIPPETS,
            HAMLET,
            &[("title", "T"), ("content", "C")],
        )
        .await["saved_snippet_id"]
        .as_u64()
        .unwrap();
    let reminder = remind(&s, HAMLET, msg, START + 60, None).await;
    let before = reminders(&s, HAMLET).await;
    s.restart().await;
    assert_eq!(
        drafts(&s, HAMLET).await,
        json!([{"id": draft, "type": "", "to": [], "topic": "", "content": "kept", "timestamp": 7}])
    );
    assert_eq!(
        s.ok("GET", SNIPPETS, HAMLET, &[]).await["saved_snippets"],
        json!([{"id": snippet, "title": "T", "content": "C", "date_created": START}])
    );
    assert_eq!(reminders(&s, HAMLET).await, before);
    // New ids continue after the old ones.
    let next = create_drafts(
        &s,
        HAMLET,
        json!([{"type": "", "to": [], "topic": "", "content": "new"}]),
    )
    .await[0];
    assert_eq!(next, draft + 1);
    // Due long ago (the server was down): still delivered, no late cutoff.
    clock.advance_ms(3_600_000);
    s.deliver_scheduled().await;
    assert!(reminders(&s, HAMLET).await.is_empty());
    let m = newest(&s, HAMLET).await;
    assert_eq!(m["sender_email"], BOT_EMAIL);
    assert!(
        m["content"]
            .as_str()
            .unwrap()
            .contains("before the restart"),
        "{m}"
    );
    // The delivery itself is durable: after another restart it does not happen again.
    let delivered = m["id"].clone();
    s.restart().await;
    s.deliver_scheduled().await;
    assert!(reminders(&s, HAMLET).await.is_empty());
    assert_eq!(newest(&s, HAMLET).await["id"], delivered);
    let _ = reminder;
}

// ---- kill -9 of the real binary ---------------------------------------------------

fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn key_of(url: &str, email: &str) -> String {
    let body: Value = http()
        .post(format!("{url}/api/v1/dev_fetch_api_key"))
        .form(&[("username", email)])
        .send()
        .unwrap()
        .json()
        .unwrap();
    body["api_key"].as_str().unwrap().to_owned()
}

fn call(url: &str, key: &str, method: reqwest::Method, path: &str, form: &[(&str, &str)]) -> Value {
    let rb = http()
        .request(method.clone(), format!("{url}{path}"))
        .header("Authorization", basic(HAMLET, key));
    let rb = if method == reqwest::Method::GET {
        rb.query(form)
    } else {
        rb.form(form)
    };
    let resp = rb.send().unwrap();
    let status = resp.status();
    let body: Value = resp.json().unwrap();
    assert_eq!(status.as_u16(), 200, "{path}: {body}");
    body
}

#[test]
fn personal_data_survives_kill_9_and_the_reminder_comes_after() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let data = data.to_str().unwrap();
    let args = ["--dev", "--data", data, "--durability", "always"];
    let server = ChildServer::up(&args, &[]);
    let url = server.url.clone();
    let key = key_of(&url, HAMLET);
    let post = reqwest::Method::POST;
    let sent = call(
        &url,
        &key,
        post.clone(),
        "/api/v1/messages",
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "crash"),
            ("content", "remember me"),
        ],
    )["id"]
        .as_i64()
        .unwrap();
    let draft =
        json!([{"type": "", "to": [], "topic": "", "content": "acknowledged", "timestamp": 9}]);
    call(
        &url,
        &key,
        post.clone(),
        DRAFTS,
        &[("drafts", &draft.to_string())],
    );
    call(
        &url,
        &key,
        post.clone(),
        SNIPPETS,
        &[("title", "crash"), ("content", "test")],
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // Due while the server is down.
    let at = (now + 2).to_string();
    call(
        &url,
        &key,
        post,
        REMINDERS,
        &[
            ("message_id", &sent.to_string()),
            ("scheduled_delivery_timestamp", &at),
        ],
    );
    server.kill_9();
    std::thread::sleep(Duration::from_secs(3));

    let server = ChildServer::up(&args, &[]);
    let url = server.url.clone();
    let get = reqwest::Method::GET;
    let drafts = call(&url, &key, get.clone(), DRAFTS, &[]);
    assert_eq!(drafts["drafts"][0]["content"], "acknowledged", "{drafts}");
    let snippets = call(&url, &key, get.clone(), SNIPPETS, &[]);
    assert_eq!(
        snippets["saved_snippets"][0]["title"], "crash",
        "{snippets}"
    );
    // The ticker delivers it within a few seconds of the start.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = call(&url, &key, get.clone(), REMINDERS, &[]);
        if left["reminders"].as_array().unwrap().is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "never delivered: {left}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let newest = call(
        &url,
        &key,
        get,
        "/api/v1/messages",
        &[
            ("anchor", "newest"),
            ("num_before", "1"),
            ("num_after", "0"),
            ("apply_markdown", "false"),
        ],
    );
    let m = &newest["messages"][0];
    assert_eq!(m["sender_email"], BOT_EMAIL, "{newest}");
    assert!(
        m["content"].as_str().unwrap().contains("remember me"),
        "{m}"
    );
    server.kill_9();
}
