//! Read state in bulk and the small message reads beside it: `POST /mark_all_as_read`,
//! `/mark_stream_as_read`, `/mark_topic_as_read` (their answers, errors, the
//! `update_message_flags` events they publish and the unread counts of `/register`
//! after them), `POST /messages/render` and `GET /messages/matches_narrow`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::{json, Value};

const FLAG_EVENTS: &[(&str, &str)] = &[("event_types", r#"["update_message_flags"]"#)];

async fn unread_count(app: &TestApp, who: &str) -> Value {
    let reg = app
        .ok(
            "POST",
            "/api/v1/register",
            who,
            &[("fetch_event_types", r#"["message","update_message_flags"]"#)],
        )
        .await;
    reg["unread_msgs"]["count"].clone()
}

/// The `update_message_flags` event Zulip sends when messages are marked read.
fn read_event(ids: &[u64]) -> Value {
    json!({"type": "update_message_flags", "op": "add", "operation": "add",
           "flag": "read", "messages": ids, "all": false})
}

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

/// Cordelia writes to Othello: two messages in Verona > alpha, one in Verona > beta,
/// one in Denmark > gamma and a direct message. Their ids, in that order.
async fn unread_for_othello(app: &TestApp) -> Vec<u64> {
    let mut ids = vec![
        send_stream(app, CORDELIA, "Verona", "alpha", "one").await,
        send_stream(app, CORDELIA, "Verona", "alpha", "two").await,
        send_stream(app, CORDELIA, "Verona", "beta", "three").await,
        send_stream(app, CORDELIA, "Denmark", "gamma", "four").await,
    ];
    let to = format!("[{OTHELLO_ID}]");
    let dm = app
        .ok(
            "POST",
            "/api/v1/messages",
            CORDELIA,
            &[("type", "direct"), ("to", &to), ("content", "five")],
        )
        .await;
    ids.push(dm["id"].as_u64().unwrap());
    ids
}

#[actix_web::test]
async fn mark_topic_channel_and_all_as_read() {
    let app = TestApp::spawn().await;
    let ids = unread_for_othello(&app).await;
    let verona = app.stream_id("Verona").await.to_string();
    assert_eq!(unread_count(&app, OTHELLO).await, 5);
    let queue = app.register(OTHELLO, FLAG_EVENTS).await;

    // A topic, named in another case: its two messages.
    let body = app
        .ok(
            "POST",
            "/api/v1/mark_topic_as_read",
            OTHELLO,
            &[("stream_id", &verona), ("topic_name", "ALPHA")],
        )
        .await;
    assert_eq!(body, json!({"result": "success", "msg": ""}));
    assert_eq!(
        without_ids(app.events(OTHELLO, &queue).await),
        vec![read_event(&ids[..2])]
    );
    assert_eq!(unread_count(&app, OTHELLO).await, 3);

    // The channel: what is left of it.
    let body = app
        .ok(
            "POST",
            "/api/v1/mark_stream_as_read",
            OTHELLO,
            &[("stream_id", &verona)],
        )
        .await;
    assert_eq!(body, json!({"result": "success", "msg": ""}));
    assert_eq!(
        without_ids(app.events(OTHELLO, &queue).await),
        vec![read_event(&ids[..2]), read_event(&ids[2..3])]
    );
    assert_eq!(unread_count(&app, OTHELLO).await, 2);
    // Nothing left there: success, and no event.
    app.ok(
        "POST",
        "/api/v1/mark_stream_as_read",
        OTHELLO,
        &[("stream_id", &verona)],
    )
    .await;
    assert_eq!(app.events(OTHELLO, &queue).await.len(), 2);

    // All: the rest, complete.
    let body = app
        .ok("POST", "/api/v1/mark_all_as_read", OTHELLO, &[])
        .await;
    assert_eq!(
        body,
        json!({"result": "success", "msg": "", "complete": true})
    );
    let events = without_ids(app.events(OTHELLO, &queue).await);
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[2], read_event(&ids[3..]));
    assert_eq!(unread_count(&app, OTHELLO).await, 0);
    let body = app
        .ok("POST", "/api/v1/mark_all_as_read", OTHELLO, &[])
        .await;
    assert_eq!(body["complete"], true);
    assert_eq!(app.events(OTHELLO, &queue).await.len(), 3);

    // Someone else's unread messages stay unread.
    assert_eq!(unread_count(&app, HAMLET).await, 3);
    // The messages read show as read in `GET /messages`.
    let fetched = app
        .ok("GET", &format!("/api/v1/messages/{}", ids[0]), OTHELLO, &[])
        .await;
    assert!(fetched["message"]["flags"]
        .as_array()
        .unwrap()
        .contains(&json!("read")));
}

#[actix_web::test]
async fn mark_as_read_errors() {
    let app = TestApp::spawn().await;
    send_stream(&app, CORDELIA, "Verona", "alpha", "one").await;
    let verona = app.stream_id("Verona").await.to_string();
    let core = app.stream_id("core team").await.to_string();

    app.err(
        "POST",
        "/api/v1/mark_stream_as_read",
        OTHELLO,
        &[],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'stream_id' argument",
    )
    .await;
    app.bad(
        "POST",
        "/api/v1/mark_stream_as_read",
        OTHELLO,
        &[("stream_id", "Verona")],
        "stream_id is not valid JSON",
    )
    .await;
    for id in ["99999", "-1", core.as_str()] {
        app.bad(
            "POST",
            "/api/v1/mark_stream_as_read",
            OTHELLO,
            &[("stream_id", id)],
            "Invalid channel ID",
        )
        .await;
        app.bad(
            "POST",
            "/api/v1/mark_topic_as_read",
            OTHELLO,
            &[("stream_id", id), ("topic_name", "alpha")],
            "Invalid channel ID",
        )
        .await;
    }
    app.err(
        "POST",
        "/api/v1/mark_topic_as_read",
        OTHELLO,
        &[("topic_name", "alpha")],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'stream_id' argument",
    )
    .await;
    app.err(
        "POST",
        "/api/v1/mark_topic_as_read",
        OTHELLO,
        &[("stream_id", &verona)],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'topic_name' argument",
    )
    .await;
    app.bad(
        "POST",
        "/api/v1/mark_topic_as_read",
        OTHELLO,
        &[("stream_id", &verona), ("topic_name", "no such")],
        "No such topic 'no such'",
    )
    .await;
    // A topic of a channel the caller only reads the history of: none received.
    let denmark = app.stream_id("Denmark").await.to_string();
    send_stream(&app, CORDELIA, "Denmark", "history", "h").await;
    app.bad(
        "POST",
        "/api/v1/mark_topic_as_read",
        HAMLET,
        &[("stream_id", &denmark), ("topic_name", "history")],
        "No such topic 'history'",
    )
    .await;
    // Credentials are needed.
    let (status, _, _) = app.post("/api/v1/mark_all_as_read", Auth::None, &[]).await;
    assert_eq!(status.as_u16(), 401);
    // The caller's own unread messages were not touched by any of this.
    assert_eq!(unread_count(&app, OTHELLO).await, 2);
}

#[actix_web::test]
async fn empty_topic_and_archived_channel() {
    let app = TestApp::spawn().await;
    let empty = send_stream(&app, CORDELIA, "Verona", "", "in the empty topic").await;
    send_stream(&app, CORDELIA, "Verona", "named", "elsewhere").await;
    let verona = app.stream_id("Verona").await.to_string();
    let queue = app.register(OTHELLO, FLAG_EVENTS).await;
    // The realm's name for the empty topic names it.
    app.ok(
        "POST",
        "/api/v1/mark_topic_as_read",
        OTHELLO,
        &[("stream_id", &verona), ("topic_name", "general chat")],
    )
    .await;
    assert_eq!(
        without_ids(app.events(OTHELLO, &queue).await),
        vec![read_event(&[empty])]
    );
    assert_eq!(unread_count(&app, OTHELLO).await, 1);
    // An archived channel is no longer one to mark.
    let denmark = app.stream_id("Denmark").await;
    send_stream(&app, CORDELIA, "Denmark", "gamma", "four").await;
    app.ok("DELETE", &format!("/api/v1/streams/{denmark}"), ADMIN, &[])
        .await;
    let denmark = denmark.to_string();
    app.bad(
        "POST",
        "/api/v1/mark_stream_as_read",
        OTHELLO,
        &[("stream_id", &denmark)],
        "Invalid channel ID",
    )
    .await;
    app.bad(
        "POST",
        "/api/v1/mark_topic_as_read",
        OTHELLO,
        &[("stream_id", &denmark), ("topic_name", "gamma")],
        "Invalid channel ID",
    )
    .await;
}

#[actix_web::test]
async fn render_a_message() {
    let app = TestApp::spawn().await;
    let body = app
        .ok(
            "POST",
            "/api/v1/messages/render",
            HAMLET,
            &[("content", "**foo**")],
        )
        .await;
    assert_eq!(
        body,
        json!({"result": "success", "msg": "", "rendered": "<p><strong>foo</strong></p>"})
    );
    // A mention renders as it would in a message; nothing is sent.
    let body = app
        .ok(
            "POST",
            "/api/v1/messages/render",
            HAMLET,
            &[("content", "hi @**Othello, the Moor of Venice**")],
        )
        .await;
    let rendered = body["rendered"].as_str().unwrap();
    assert!(rendered.contains("user-mention"), "{rendered}");
    assert_eq!(unread_count(&app, OTHELLO).await, 0);
    app.err(
        "POST",
        "/api/v1/messages/render",
        HAMLET,
        &[],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'content' argument",
    )
    .await;
    // Zulip's view checks only the length: empty content renders as nothing.
    let body = app
        .ok(
            "POST",
            "/api/v1/messages/render",
            HAMLET,
            &[("content", "")],
        )
        .await;
    assert_eq!(body["rendered"], "");
    let long = "a".repeat(10_001);
    app.bad(
        "POST",
        "/api/v1/messages/render",
        HAMLET,
        &[("content", &long)],
        "content is too long (limit: 10000 characters)",
    )
    .await;
}

#[actix_web::test]
async fn messages_match_a_narrow() {
    let app = TestApp::spawn().await;
    let ids = unread_for_othello(&app).await;
    let odd = send_stream(&app, CORDELIA, "Verona", "a<b & \"c\"", "**six**").await;
    // Rome: Othello is not subscribed and received nothing there.
    let rome = send_stream(&app, CORDELIA, "Rome", "alpha", "seven").await;
    let all: Vec<u64> = ids.iter().copied().chain([odd, rome, 999_999]).collect();
    let msg_ids = serde_json::to_string(&all).unwrap();
    let check = |narrow: &'static str| {
        let (app, msg_ids) = (&app, msg_ids.clone());
        async move {
            app.ok(
                "GET",
                "/api/v1/messages/matches_narrow",
                OTHELLO,
                &[("msg_ids", &msg_ids), ("narrow", narrow)],
            )
            .await
        }
    };
    let body = check(
        r#"[{"operator":"channel","operand":"Verona"},{"operator":"topic","operand":"alpha"}]"#,
    )
    .await;
    assert_eq!(
        body,
        json!({"result": "success", "msg": "", "messages": {
            ids[0].to_string(): {"match_content": "<p>one</p>", "match_subject": "alpha"},
            ids[1].to_string(): {"match_content": "<p>two</p>", "match_subject": "alpha"},
        }})
    );
    let body = check(r#"[{"operator":"search","operand":"six"}]"#).await;
    assert_eq!(
        body["messages"],
        json!({odd.to_string(): {
            "match_content": "<p><strong><span class=\"highlight\">six</span></strong></p>",
            "match_subject": "a&lt;b &amp; &quot;c&quot;"}})
    );
    // A single letter is one of Zulip's stop words: alone, it matches nothing.
    let body = check(r#"[{"operator":"search","operand":"B"}]"#).await;
    assert_eq!(body["messages"], json!({}));
    // A direct message has no topic; an empty narrow matches all the caller received.
    let body = check(r#"[{"operator":"is","operand":"dm"}]"#).await;
    assert_eq!(
        body["messages"],
        json!({ids[4].to_string(): {"match_content": "<p>five</p>", "match_subject": ""}})
    );
    let body = check("[]").await;
    let mut found: Vec<u64> = body["messages"]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.parse().unwrap())
        .collect();
    found.sort_unstable();
    let mut expected: Vec<u64> = ids.clone();
    expected.push(odd);
    assert_eq!(found, expected);

    let one = format!("[{}]", ids[0]);
    app.err(
        "GET",
        "/api/v1/messages/matches_narrow",
        OTHELLO,
        &[("narrow", "[]")],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'msg_ids' argument",
    )
    .await;
    app.err(
        "GET",
        "/api/v1/messages/matches_narrow",
        OTHELLO,
        &[("msg_ids", &one)],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'narrow' argument",
    )
    .await;
    app.bad(
        "GET",
        "/api/v1/messages/matches_narrow",
        OTHELLO,
        &[("msg_ids", "[\"x\"]"), ("narrow", "[]")],
        "msg_ids[0] is not an integer",
    )
    .await;
    app.err(
        "GET",
        "/api/v1/messages/matches_narrow",
        OTHELLO,
        &[
            ("msg_ids", &one),
            ("narrow", r#"[{"operator":"bogus","operand":"x"}]"#),
        ],
        400,
        "BAD_NARROW",
        "Invalid narrow operator: unknown operator bogus",
    )
    .await;
}
