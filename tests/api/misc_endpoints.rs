//! Smaller endpoints: typing while editing a message (`POST /messages/{id}/typing`),
//! with their rules, error texts, events, `/register` state and, for writes, the state
//! after a kill -9.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use hearth::realm::ManualClock;
use serde_json::{json, Value};

/// Events without their ids.
fn without_ids(events: Vec<Value>) -> Vec<Value> {
    events
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect()
}

/// The subscribers of a channel.
async fn members(app: &TestApp, channel: i64) -> Vec<i64> {
    let body = app
        .ok(
            "GET",
            &format!("/api/v1/streams/{channel}/members"),
            IAGO,
            &[],
        )
        .await;
    body["subscribers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect()
}

async fn send_direct(app: &TestApp, who: &str, to: &[i64], content: &str) -> u64 {
    let to = json!(to).to_string();
    let body = app
        .ok(
            "POST",
            "/api/v1/messages",
            who,
            &[("type", "direct"), ("to", &to), ("content", content)],
        )
        .await;
    body["id"].as_u64().unwrap()
}

// ---- POST /messages/{message_id}/typing ------------------------------------------------

const EDIT_TYPING: &[(&str, &str)] = &[("event_types", r#"["typing_edit_message"]"#)];

#[actix_web::test]
async fn edit_typing_in_a_channel_reaches_its_subscribers() {
    let app = TestApp::spawn().await;
    let verona = app.stream_id("Verona").await;
    app.ok(
        "DELETE",
        "/api/v1/users/me/subscriptions",
        POLONIUS,
        &[("subscriptions", r#"["Verona"]"#)],
    )
    .await;
    let subscribers = members(&app, verona).await;
    assert!(subscribers.contains(&HAMLET_ID) && subscribers.contains(&OTHELLO_ID));
    assert!(!subscribers.contains(&POLONIUS_ID));
    let id = send_stream(&app, HAMLET, "Verona", "edits", "first draft").await;
    let othello = app.register(OTHELLO, EDIT_TYPING).await;
    let hamlet = app.register(HAMLET, EDIT_TYPING).await;
    let polonius = app.register(POLONIUS, EDIT_TYPING).await;
    // Plain typing queues do not get these events.
    let plain = app
        .register(OTHELLO, &[("event_types", r#"["typing"]"#)])
        .await;

    let path = format!("/api/v1/messages/{id}/typing");
    let body = app.ok("POST", &path, HAMLET, &[("op", "start")]).await;
    assert_eq!(body, json!({"result": "success", "msg": ""}));
    app.ok("POST", &path, HAMLET, &[("op", "stop")]).await;

    let event = |op: &str| {
        json!({"type": "typing_edit_message", "op": op, "sender_id": HAMLET_ID,
               "message_id": id,
               "recipient": {"type": "channel", "channel_id": verona, "topic": "edits"}})
    };
    let want = vec![event("start"), event("stop")];
    assert_eq!(without_ids(app.events(OTHELLO, &othello).await), want);
    assert_eq!(without_ids(app.events(HAMLET, &hamlet).await), want);
    assert!(app.events(POLONIUS, &polonius).await.is_empty());
    assert!(app.events(OTHELLO, &plain).await.is_empty());
}

#[actix_web::test]
async fn edit_typing_in_direct_messages_names_the_participants() {
    let app = TestApp::spawn().await;
    let one = send_direct(&app, HAMLET, &[OTHELLO_ID], "to othello").await;
    let group = send_direct(&app, HAMLET, &[OTHELLO_ID, CORDELIA_ID], "to two").await;
    let own = send_direct(&app, HAMLET, &[HAMLET_ID], "a note").await;
    let othello = app.register(OTHELLO, EDIT_TYPING).await;
    let cordelia = app.register(CORDELIA, EDIT_TYPING).await;
    let hamlet = app.register(HAMLET, EDIT_TYPING).await;

    for id in [one, group, own] {
        app.ok(
            "POST",
            &format!("/api/v1/messages/{id}/typing"),
            HAMLET,
            &[("op", "start")],
        )
        .await;
    }
    let event = |id: u64, users: Value| {
        json!({"type": "typing_edit_message", "op": "start", "sender_id": HAMLET_ID,
               "message_id": id, "recipient": {"type": "direct", "user_ids": users}})
    };
    // A conversation of two lists the sender then the other; oneself twice (Zulip's
    // personal recipient); a group its members.
    let to_one = event(one, json!([HAMLET_ID, OTHELLO_ID]));
    let to_group = event(group, json!([CORDELIA_ID, HAMLET_ID, OTHELLO_ID]));
    let to_self = event(own, json!([HAMLET_ID, HAMLET_ID]));
    assert_eq!(
        without_ids(app.events(OTHELLO, &othello).await),
        vec![to_one.clone(), to_group.clone()]
    );
    assert_eq!(
        without_ids(app.events(CORDELIA, &cordelia).await),
        vec![to_group.clone()]
    );
    assert_eq!(
        without_ids(app.events(HAMLET, &hamlet).await),
        vec![to_one, to_group, to_self]
    );
}

#[actix_web::test]
async fn edit_typing_follows_the_edit_rules() {
    let clock = ManualClock::new(START_MS);
    let app = TestApp::spawn_with_clock(clock).await;
    let id = send_stream(&app, HAMLET, "Verona", "edits", "mine").await;
    let path = format!("/api/v1/messages/{id}/typing");
    let queue = app.register(OTHELLO, EDIT_TYPING).await;

    let missing_op = app
        .err(
            "POST",
            &path,
            HAMLET,
            &[],
            400,
            "REQUEST_VARIABLE_MISSING",
            "Missing 'op' argument",
        )
        .await;
    assert_eq!(missing_op["var_name"], "op");
    app.bad("POST", &path, HAMLET, &[("op", "begin")], "Invalid op")
        .await;
    // Someone else's message, a message one cannot read, one that does not exist.
    app.bad(
        "POST",
        &path,
        OTHELLO,
        &[("op", "start")],
        "You don't have permission to edit this message",
    )
    .await;
    let secret = app
        .ok(
            "POST",
            "/api/v1/channels/create",
            CORDELIA,
            &[
                ("name", "secret edits"),
                ("subscribers", &json!([CORDELIA_ID]).to_string()),
                ("invite_only", "true"),
            ],
        )
        .await;
    assert!(secret["id"].is_i64());
    let hidden = send_stream(&app, CORDELIA, "secret edits", "t", "hidden").await;
    for bad in [hidden, 999_999] {
        app.bad(
            "POST",
            &format!("/api/v1/messages/{bad}/typing"),
            HAMLET,
            &[("op", "start")],
            "Invalid message(s)",
        )
        .await;
    }
    app.bad(
        "POST",
        "/api/v1/messages/abc/typing",
        HAMLET,
        &[("op", "start")],
        "message_id is not an integer",
    )
    .await;

    // Zulip's limit, without the grace period an edit has.
    app.ok(
        "PATCH",
        "/api/v1/realm",
        DESDEMONA,
        &[("message_content_edit_limit_seconds", "600")],
    )
    .await;
    app.clock().advance_ms(600_000);
    app.ok("POST", &path, HAMLET, &[("op", "start")]).await;
    app.clock().advance_ms(1_000);
    app.bad(
        "POST",
        &path,
        HAMLET,
        &[("op", "start")],
        "The time limit for editing this message has passed",
    )
    .await;

    app.ok(
        "PATCH",
        "/api/v1/realm",
        DESDEMONA,
        &[("allow_message_editing", "false")],
    )
    .await;
    app.bad(
        "POST",
        &path,
        HAMLET,
        &[("op", "start")],
        "Your organization has turned off message editing",
    )
    .await;
    // Only the one accepted notification was sent.
    assert_eq!(app.events(OTHELLO, &queue).await.len(), 1);
}
