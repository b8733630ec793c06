//! Messages: send, fetch with narrows and anchors, single messages, flags, unread
//! state in `/register`, topics, events, and restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{json, Value};

async fn send_stream(app: &TestApp, who: &str, to: &str, topic: &str, content: &str) -> u64 {
    let body = app
        .ok(
            "POST",
            "/api/v1/messages",
            who,
            &[
                ("type", "stream"),
                ("to", to),
                ("topic", topic),
                ("content", content),
            ],
        )
        .await;
    body["id"].as_u64().expect("id")
}

async fn fetch(app: &TestApp, who: &str, params: &[(&str, &str)]) -> Value {
    app.ok("GET", "/api/v1/messages", who, params).await
}

fn ids(body: &Value) -> Vec<u64> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["id"].as_u64().expect("id"))
        .collect()
}

#[actix_web::test]
async fn send_and_fetch_newest() {
    let app = TestApp::spawn().await;
    let id = send_stream(&app, ADMIN, "Verona", "oracle", "original content").await;
    let body = fetch(
        &app,
        ADMIN,
        &[
            ("anchor", "newest"),
            ("num_before", "1"),
            ("num_after", "0"),
        ],
    )
    .await;
    assert_eq!(ids(&body), vec![id]);
    let m = &body["messages"][0];
    assert_eq!(m["content"], "<p>original content</p>");
    assert_eq!(m["subject"], "oracle");
    assert_eq!(m["display_recipient"], "Verona");
    assert_eq!(m["type"], "stream");
    assert_eq!(m["stream_id"], app.stream_id("Verona").await);
    assert_eq!(m["sender_full_name"], "Iago");
    assert_eq!(m["content_type"], "text/html");
    assert_eq!(body["found_anchor"], false);
    assert_eq!(body["found_newest"], true);
    // Zulip: not "oldest" when exactly `num_before` were asked for and found.
    assert_eq!(body["found_oldest"], false);
    assert_eq!(body["history_limited"], false);
    assert_eq!(body["anchor"], json!(10_000_000_000_000_000u64));
    // Sent through the API (not a Zulip UI client): unread for the sender too.
    assert_eq!(m["flags"], json!([]));
    // A subscriber who is not the sender has it unread.
    let body = fetch(
        &app,
        MEMBER,
        &[
            ("anchor", "newest"),
            ("num_before", "5"),
            ("num_after", "0"),
        ],
    )
    .await;
    assert_eq!(ids(&body), vec![id]);
    assert_eq!(body["messages"][0]["flags"], json!([]));
    // Raw Markdown on request.
    let body = fetch(
        &app,
        MEMBER,
        &[
            ("anchor", "newest"),
            ("num_before", "5"),
            ("num_after", "0"),
            ("apply_markdown", "false"),
        ],
    )
    .await;
    assert_eq!(body["messages"][0]["content"], "original content");
    assert_eq!(body["messages"][0]["content_type"], "text/x-markdown");
}

#[actix_web::test]
async fn send_errors() {
    let app = TestApp::spawn().await;
    let path = "/api/v1/messages";
    app.err(
        "POST",
        path,
        ADMIN,
        &[("type", "stream"), ("to", "Verona"), ("topic", "t")],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'content' argument",
    )
    .await;
    app.err(
        "POST",
        path,
        ADMIN,
        &[("type", "stream"), ("to", "Verona"), ("content", "x")],
        400,
        "BAD_REQUEST",
        "Missing topic",
    )
    .await;
    app.err(
        "POST",
        path,
        ADMIN,
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "t"),
            ("content", "  \n "),
        ],
        400,
        "BAD_REQUEST",
        "Message must not be empty",
    )
    .await;
    let body = app
        .err(
            "POST",
            path,
            ADMIN,
            &[
                ("type", "stream"),
                ("to", "Nowhere"),
                ("topic", "t"),
                ("content", "x"),
            ],
            400,
            "STREAM_DOES_NOT_EXIST",
            "Channel 'Nowhere' does not exist",
        )
        .await;
    assert_eq!(body["stream"], "Nowhere");
    let body = app
        .err(
            "POST",
            path,
            ADMIN,
            &[
                ("type", "stream"),
                ("to", "9999"),
                ("topic", "t"),
                ("content", "x"),
            ],
            400,
            "STREAM_DOES_NOT_EXIST",
            "Channel with ID '9999' does not exist",
        )
        .await;
    assert_eq!(body["stream_id"], 9999);
    app.err(
        "POST",
        path,
        ADMIN,
        &[("type", "private"), ("to", "[9999]"), ("content", "x")],
        400,
        "BAD_REQUEST",
        "Invalid user ID 9999",
    )
    .await;
    app.err(
        "POST",
        path,
        ADMIN,
        &[
            ("type", "private"),
            ("to", "nobody@zulip.com"),
            ("content", "x"),
        ],
        400,
        "BAD_REQUEST",
        "Invalid email 'nobody@zulip.com'",
    )
    .await;
    app.err(
        "POST",
        path,
        ADMIN,
        &[
            ("type", "private"),
            ("to", "[1, \"a@b.c\"]"),
            ("content", "x"),
        ],
        400,
        "BAD_REQUEST",
        "Recipient lists may contain emails or user IDs, but not both.",
    )
    .await;
    // A private channel its guest is not in: the guest cannot see it at all.
    app.err(
        "POST",
        path,
        GUEST,
        &[
            ("type", "stream"),
            ("to", "core team"),
            ("topic", "t"),
            ("content", "x"),
        ],
        400,
        "STREAM_DOES_NOT_EXIST",
        "Channel 'core team' does not exist",
    )
    .await;
    // Nothing was sent.
    let body = fetch(
        &app,
        ADMIN,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
        ],
    )
    .await;
    assert_eq!(ids(&body), Vec::<u64>::new());
}

#[actix_web::test]
async fn narrows_and_anchors() {
    let app = TestApp::spawn().await;
    let mut verona = Vec::new();
    for i in 0..5 {
        verona.push(
            send_stream(
                &app,
                MEMBER,
                "Verona",
                if i % 2 == 0 { "even" } else { "odd" },
                &format!("verona {i}"),
            )
            .await,
        );
    }
    let denmark = send_stream(&app, OTHELLO, "Denmark", "even", "denmark hello").await;
    let narrow = |s: &str| s.to_owned();
    // Channel narrow.
    let n = narrow(r#"[{"operator":"channel","operand":"Verona"}]"#);
    let body = fetch(
        &app,
        MEMBER,
        &[
            ("anchor", "oldest"),
            ("num_before", "0"),
            ("num_after", "100"),
            ("narrow", &n),
        ],
    )
    .await;
    assert_eq!(ids(&body), verona);
    assert_eq!(body["found_oldest"], true);
    assert_eq!(body["found_newest"], true);
    // Channel + topic (case-insensitive), legacy pair syntax.
    let n = narrow(r#"[["stream","Verona"],["topic","EVEN"]]"#);
    let body = fetch(
        &app,
        MEMBER,
        &[
            ("anchor", "newest"),
            ("num_before", "100"),
            ("num_after", "0"),
            ("narrow", &n),
        ],
    )
    .await;
    assert_eq!(ids(&body), vec![verona[0], verona[2], verona[4]]);
    // Anchor in the middle, both sides, and include_anchor.
    let n = narrow(r#"[{"operator":"channel","operand":"Verona"}]"#);
    let anchor = verona[2].to_string();
    let body = fetch(
        &app,
        MEMBER,
        &[
            ("anchor", &anchor),
            ("num_before", "1"),
            ("num_after", "1"),
            ("narrow", &n),
        ],
    )
    .await;
    assert_eq!(ids(&body), vec![verona[1], verona[2], verona[3]]);
    assert_eq!(body["found_anchor"], true);
    assert_eq!(body["found_oldest"], false);
    assert_eq!(body["found_newest"], false);
    app.err(
        "GET",
        "/api/v1/messages",
        MEMBER,
        &[
            ("anchor", &anchor),
            ("num_before", "1"),
            ("num_after", "1"),
            ("include_anchor", "false"),
            ("narrow", &n),
        ],
        400,
        "BAD_REQUEST",
        "The anchor can only be excluded at an end of the range",
    )
    .await;
    let body = fetch(
        &app,
        MEMBER,
        &[
            ("anchor", &anchor),
            ("num_before", "0"),
            ("num_after", "1"),
            ("include_anchor", "false"),
            ("narrow", &n),
        ],
    )
    .await;
    assert_eq!(ids(&body), vec![verona[3]]);
    assert_eq!(body["found_anchor"], false);
    // Sender narrow and search.
    let othello = app.user_id(OTHELLO).await;
    let n = format!(r#"[{{"operator":"sender","operand":{othello}}}]"#);
    let body = fetch(
        &app,
        OTHELLO,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", &n),
        ],
    )
    .await;
    assert_eq!(ids(&body), vec![denmark]);
    let n = narrow(r#"[{"operator":"search","operand":"HELLO"}]"#);
    let body = fetch(
        &app,
        OTHELLO,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", &n),
        ],
    )
    .await;
    assert_eq!(ids(&body), vec![denmark]);
    // Hamlet is not in Denmark: not received, but its history is public to him when
    // narrowed to the channel (historical, read).
    let body = fetch(
        &app,
        MEMBER,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
        ],
    )
    .await;
    assert!(!ids(&body).contains(&denmark));
    let n = narrow(r#"[{"operator":"channel","operand":"Denmark"}]"#);
    let body = fetch(
        &app,
        MEMBER,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", &n),
        ],
    )
    .await;
    assert_eq!(ids(&body), vec![denmark]);
    assert_eq!(body["messages"][0]["flags"], json!(["read", "historical"]));
    // Errors.
    app.err(
        "GET",
        "/api/v1/messages",
        MEMBER,
        &[
            ("anchor", "newest"),
            ("num_before", "3000"),
            ("num_after", "3000"),
        ],
        400,
        "BAD_REQUEST",
        "Too many messages requested (maximum 5000).",
    )
    .await;
    app.err(
        "GET",
        "/api/v1/messages",
        MEMBER,
        &[
            ("anchor", "newest"),
            ("num_before", "1"),
            ("num_after", "0"),
            ("narrow", r#"[{"operator":"channel","operand":"Nowhere"}]"#),
        ],
        400,
        "BAD_NARROW",
        "Invalid narrow operator: unknown channel Nowhere",
    )
    .await;
}

#[actix_web::test]
async fn direct_messages_flags_and_unread() {
    let app = TestApp::spawn().await;
    let hamlet = app.user_id(MEMBER).await;
    let othello = app.user_id(OTHELLO).await;
    let to = format!("[{othello}]");
    let body = app
        .ok(
            "POST",
            "/api/v1/messages",
            MEMBER,
            &[
                ("type", "direct"),
                ("to", &to),
                ("content", "hi @**Othello, the Moor of Venice**"),
            ],
        )
        .await;
    let dm = body["id"].as_u64().unwrap();
    let ch = send_stream(&app, MEMBER, "Denmark", "t", "unread here").await;
    // Othello: two unread, one mention.
    let reg = app
        .ok(
            "POST",
            "/api/v1/register",
            OTHELLO,
            &[("fetch_event_types", r#"["message","update_message_flags"]"#)],
        )
        .await;
    let unread = &reg["unread_msgs"];
    assert_eq!(unread["count"], 2, "{unread}");
    assert_eq!(
        unread["pms"],
        json!([{"other_user_id": hamlet, "sender_id": hamlet, "unread_message_ids": [dm]}])
    );
    assert_eq!(unread["streams"][0]["unread_message_ids"], json!([ch]));
    assert_eq!(reg["max_message_id"], json!(ch));
    let mentioned = unread["mentions"].as_array().unwrap().contains(&json!(dm));
    let fetched = app
        .ok("GET", &format!("/api/v1/messages/{dm}"), OTHELLO, &[])
        .await;
    assert_eq!(
        fetched["raw_content"],
        "hi @**Othello, the Moor of Venice**"
    );
    if mentioned {
        assert!(fetched["message"]["flags"]
            .as_array()
            .unwrap()
            .contains(&json!("mentioned")));
    }
    assert_eq!(fetched["message"]["type"], "private");
    // DM narrow from both sides.
    let n = format!(r#"[{{"operator":"dm","operand":[{hamlet}]}}]"#);
    let body = fetch(
        &app,
        OTHELLO,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", &n),
        ],
    )
    .await;
    assert_eq!(ids(&body), vec![dm]);
    // Mark read; the event says so; unread counts follow.
    let queue = app.register(OTHELLO, &[]).await;
    let read = format!("[{dm}, {ch}]");
    let body = app
        .ok(
            "POST",
            "/api/v1/messages/flags",
            OTHELLO,
            &[("messages", &read), ("op", "add"), ("flag", "read")],
        )
        .await;
    assert_eq!(body["messages"], json!([dm, ch]));
    let events = app.events(OTHELLO, &queue).await;
    let flags_event = events
        .iter()
        .find(|e| e["type"] == "update_message_flags")
        .expect("flags event");
    assert_eq!(flags_event["messages"], json!([dm, ch]));
    assert_eq!(flags_event["flag"], "read");
    let reg = app
        .ok(
            "POST",
            "/api/v1/register",
            OTHELLO,
            &[("fetch_event_types", r#"["message","update_message_flags"]"#)],
        )
        .await;
    assert_eq!(reg["unread_msgs"]["count"], 0);
    // is:unread / is:starred narrows.
    app.ok(
        "POST",
        "/api/v1/messages/flags",
        OTHELLO,
        &[
            ("messages", &format!("[{ch}]")),
            ("op", "add"),
            ("flag", "starred"),
        ],
    )
    .await;
    let n = r#"[{"operator":"is","operand":"starred"}]"#;
    let body = fetch(
        &app,
        OTHELLO,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", n),
        ],
    )
    .await;
    assert_eq!(ids(&body), vec![ch]);
    // Flag errors.
    app.err(
        "POST",
        "/api/v1/messages/flags",
        OTHELLO,
        &[("messages", "[1]"), ("op", "add"), ("flag", "bogus")],
        400,
        "BAD_REQUEST",
        "Invalid flag: 'bogus'",
    )
    .await;
    app.err(
        "POST",
        "/api/v1/messages/flags",
        OTHELLO,
        &[("messages", "[1]"), ("op", "add"), ("flag", "mentioned")],
        400,
        "BAD_REQUEST",
        "Flag not editable: 'mentioned'",
    )
    .await;
    app.err(
        "POST",
        "/api/v1/messages/flags",
        OTHELLO,
        &[("messages", "[1]"), ("op", "toggle"), ("flag", "read")],
        400,
        "BAD_REQUEST",
        "Invalid message flag operation: 'toggle'",
    )
    .await;
    // A DM between others is invisible to a third user.
    app.err(
        "GET",
        &format!("/api/v1/messages/{dm}"),
        IAGO,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid message(s)",
    )
    .await;
    app.err(
        "POST",
        "/api/v1/messages/flags",
        IAGO,
        &[
            ("messages", &format!("[{dm}]")),
            ("op", "add"),
            ("flag", "starred"),
        ],
        400,
        "BAD_REQUEST",
        "Invalid message(s)",
    )
    .await;
}

#[actix_web::test]
async fn message_events_and_topics() {
    let app = TestApp::spawn().await;
    let queue = app.register(MEMBER, &[("apply_markdown", "false")]).await;
    let html_queue = app.register(MEMBER, &[("apply_markdown", "true")]).await;
    let id = send_stream(&app, IAGO, "Verona", "lunch", "**bold** @**King Hamlet**").await;
    let events = app.events(MEMBER, &queue).await;
    let e = events
        .iter()
        .find(|e| e["type"] == "message")
        .expect("message event");
    assert_eq!(e["message"]["id"], id);
    assert_eq!(e["message"]["content"], "**bold** @**King Hamlet**");
    assert_eq!(e["flags"], json!(["mentioned"]));
    assert!(e.get("__raw_content").is_none());
    let events = app.events(MEMBER, &html_queue).await;
    let e = events
        .iter()
        .find(|e| e["type"] == "message")
        .expect("message event");
    assert!(e["message"]["content"]
        .as_str()
        .unwrap()
        .starts_with("<p><strong>bold</strong> <span class=\"user-mention\""));
    // Not a recipient (not subscribed to Verona? Rome has no Hamlet): no event.
    let queue = app.register(MEMBER, &[]).await;
    send_stream(&app, IAGO, "Rome", "x", "not for hamlet").await;
    assert!(app
        .events(MEMBER, &queue)
        .await
        .iter()
        .all(|e| e["type"] != "message"));
    // Topics, newest first.
    send_stream(&app, IAGO, "Verona", "dinner", "later").await;
    let verona = app.stream_id("Verona").await;
    let body = app
        .ok(
            "GET",
            &format!("/api/v1/users/me/{verona}/topics"),
            MEMBER,
            &[],
        )
        .await;
    let names: Vec<&str> = body["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["dinner", "lunch"]);
}

#[actix_web::test]
async fn messages_survive_restart() {
    let mut app = TestApp::spawn_durable().await;
    let a = send_stream(&app, MEMBER, "Verona", "persist", "one").await;
    let b = send_stream(&app, MEMBER, "Verona", "persist", "two").await;
    app.ok(
        "POST",
        "/api/v1/messages/flags",
        IAGO,
        &[
            ("messages", &format!("[{a}]")),
            ("op", "add"),
            ("flag", "starred"),
        ],
    )
    .await;
    app.restart().await;
    let n =
        r#"[{"operator":"channel","operand":"Verona"},{"operator":"topic","operand":"persist"}]"#;
    let body = fetch(
        &app,
        IAGO,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", n),
        ],
    )
    .await;
    assert_eq!(ids(&body), vec![a, b]);
    assert_eq!(body["messages"][0]["flags"], json!(["starred"]));
    // Ids keep increasing after the restart.
    let c = send_stream(&app, MEMBER, "Verona", "persist", "three").await;
    assert!(c > b);
}
