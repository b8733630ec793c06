//! Messages: send, fetch with narrows and anchors, single messages, flags, unread
//! state in `/register`, topics, events, and restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::{json, Value};

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

#[actix_web::test]
async fn edit_content_and_history() {
    let clock = hearth::realm::ManualClock::new(1_795_238_601_000);
    let mut app = TestApp::spawn_with_clock(clock.clone()).await;
    let id = send_stream(&app, IAGO, "Verona", "oracle", "original content").await;
    let path = format!("/api/v1/messages/{id}");
    let queue = app.register(MEMBER, &[]).await;
    let body = app
        .ok(
            "PATCH",
            &path,
            IAGO,
            &[("content", "edited content"), ("topic", "oracle edited")],
        )
        .await;
    assert_eq!(body["detached_uploads"], json!([]));
    // Zulip's recorded history of the same edit (rec 12d).
    let iago = app.user_id(IAGO).await;
    let history = app.ok("GET", &format!("{path}/history"), MEMBER, &[]).await;
    assert_eq!(
        history["message_history"],
        json!([
            {"content": "original content", "rendered_content": "<p>original content</p>",
             "timestamp": 1_795_238_601, "topic": "oracle", "user_id": iago},
            {"content": "edited content", "rendered_content": "<p>edited content</p>",
             "timestamp": 1_795_238_601, "topic": "oracle edited", "user_id": iago,
             "prev_topic": "oracle", "prev_content": "original content",
             "prev_rendered_content": "<p>original content</p>",
             "content_html_diff": "<div><p> <span class=\"highlight_text_inserted\">edited</span> <span class=\"highlight_text_deleted\">original</span> content</p></div>"}
        ])
    );
    // The event.
    app.tick();
    let events = app.events(MEMBER, &queue).await;
    let e = events
        .iter()
        .find(|e| e["type"] == "update_message")
        .expect("update_message");
    assert_eq!(e["message_id"], id);
    assert_eq!(e["orig_content"], "original content");
    assert_eq!(e["content"], "edited content");
    assert_eq!(e["orig_subject"], "oracle");
    assert_eq!(e["subject"], "oracle edited");
    assert_eq!(e["message_ids"], json!([id]));
    // Rules.
    app.err(
        "PATCH",
        &path,
        MEMBER,
        &[("content", "mine now")],
        400,
        "BAD_REQUEST",
        "You don't have permission to edit this message",
    )
    .await;
    app.err(
        "PATCH",
        &path,
        IAGO,
        &[("topic", "oracle edited")],
        400,
        "BAD_REQUEST",
        "Nothing to change",
    )
    .await;
    app.err(
        "PATCH",
        &path,
        IAGO,
        &[("topic", "x"), ("propagate_mode", "sideways")],
        400,
        "BAD_REQUEST",
        "Invalid propagate_mode",
    )
    .await;
    app.err(
        "GET",
        "/api/v1/messages/99999999/history",
        IAGO,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid message(s)",
    )
    .await;
    clock.advance_ms(621_000);
    app.err(
        "PATCH",
        &path,
        IAGO,
        &[("content", "too late")],
        400,
        "BAD_REQUEST",
        "The time limit for editing this message has passed",
    )
    .await;
    // Topic moves stay allowed for three days.
    app.ok("PATCH", &path, IAGO, &[("topic", "later topic")])
        .await;
    // Survives a restart.
    app.restart().await;
    let history = app.ok("GET", &format!("{path}/history"), MEMBER, &[]).await;
    assert_eq!(history["message_history"].as_array().unwrap().len(), 3);
    let m = app.ok("GET", &path, MEMBER, &[]).await;
    assert_eq!(m["message"]["subject"], "later topic");
    assert_eq!(m["raw_content"], "edited content");
}

#[actix_web::test]
async fn move_a_topic_and_direct_message_rules() {
    let app = TestApp::spawn().await;
    let a = send_stream(&app, MEMBER, "Verona", "old", "a").await;
    let b = send_stream(&app, OTHELLO, "Verona", "old", "b").await;
    let c = send_stream(&app, MEMBER, "Verona", "old", "c").await;
    let other = send_stream(&app, MEMBER, "Verona", "elsewhere", "d").await;
    app.ok(
        "PATCH",
        &format!("/api/v1/messages/{b}"),
        MEMBER,
        &[
            ("topic", "new"),
            ("propagate_mode", "change_later"),
            // Without the Notification Bot's message in the new topic.
            ("send_notification_to_new_thread", "false"),
        ],
    )
    .await;
    let n = r#"[{"operator":"channel","operand":"Verona"},{"operator":"topic","operand":"new"}]"#;
    let body = fetch(
        &app,
        MEMBER,
        &[("anchor", "oldest"), ("num_after", "10"), ("narrow", n)],
    )
    .await;
    assert_eq!(ids(&body), vec![b, c]);
    let n = r#"[{"operator":"channel","operand":"Verona"},{"operator":"topic","operand":"old"}]"#;
    let body = fetch(
        &app,
        MEMBER,
        &[("anchor", "oldest"), ("num_after", "10"), ("narrow", n)],
    )
    .await;
    assert_eq!(ids(&body), vec![a]);
    assert!(body["messages"][0].get("last_moved_timestamp").is_none());
    app.ok(
        "PATCH",
        &format!("/api/v1/messages/{a}"),
        MEMBER,
        &[
            ("topic", "new"),
            ("propagate_mode", "change_all"),
            // Without the Notification Bot's message in the new topic.
            ("send_notification_to_new_thread", "false"),
        ],
    )
    .await;
    let verona = app.stream_id("Verona").await;
    let topics = app
        .ok(
            "GET",
            &format!("/api/v1/users/me/{verona}/topics"),
            MEMBER,
            &[],
        )
        .await;
    assert_eq!(
        topics["topics"],
        json!([{"name": "elsewhere", "max_id": other}, {"name": "new", "max_id": c}])
    );
    // Direct messages.
    let othello = app.user_id(OTHELLO).await;
    let dm = app
        .ok(
            "POST",
            "/api/v1/messages",
            MEMBER,
            &[
                ("type", "private"),
                ("to", &format!("[{othello}]")),
                ("content", "psst"),
            ],
        )
        .await["id"]
        .as_u64()
        .unwrap();
    app.err(
        "PATCH",
        &format!("/api/v1/messages/{dm}"),
        MEMBER,
        &[("topic", "t")],
        400,
        "BAD_REQUEST",
        "Direct messages cannot have topics.",
    )
    .await;
    let denmark = app.stream_id("Denmark").await.to_string();
    app.err(
        "PATCH",
        &format!("/api/v1/messages/{dm}"),
        MEMBER,
        &[("stream_id", &denmark)],
        400,
        "BAD_REQUEST",
        "Direct messages cannot be moved to channels.",
    )
    .await;
    app.err(
        "PATCH",
        &format!("/api/v1/messages/{a}"),
        MEMBER,
        &[("stream_id", &denmark), ("content", "x")],
        400,
        "BAD_REQUEST",
        "Cannot change message content while changing channel",
    )
    .await;
    // Move to another channel.
    app.ok(
        "PATCH",
        &format!("/api/v1/messages/{a}"),
        MEMBER,
        &[("stream_id", &denmark)],
    )
    .await;
    let m = app
        .ok("GET", &format!("/api/v1/messages/{a}"), OTHELLO, &[])
        .await;
    assert_eq!(m["message"]["display_recipient"], "Denmark");
    assert!(m["message"]["last_moved_timestamp"].is_number());
}

#[actix_web::test]
async fn delete_messages() {
    let app = TestApp::spawn().await;
    let mine = send_stream(&app, MEMBER, "Verona", "t", "mine").await;
    let theirs = send_stream(&app, OTHELLO, "Verona", "t", "theirs").await;
    let bulk = app
        .register(
            MEMBER,
            &[("client_capabilities", r#"{"bulk_message_deletion": true}"#)],
        )
        .await;
    let legacy = app.register(MEMBER, &[]).await;
    app.err(
        "DELETE",
        &format!("/api/v1/messages/{theirs}"),
        MEMBER,
        &[],
        400,
        "BAD_REQUEST",
        "You don't have permission to delete this message",
    )
    .await;
    app.ok("DELETE", &format!("/api/v1/messages/{mine}"), MEMBER, &[])
        .await;
    app.err(
        "DELETE",
        &format!("/api/v1/messages/{mine}"),
        MEMBER,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid message(s)",
    )
    .await;
    app.err(
        "GET",
        &format!("/api/v1/messages/{mine}"),
        MEMBER,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid message(s)",
    )
    .await;
    // Administrators delete anyone's.
    app.ok("DELETE", &format!("/api/v1/messages/{theirs}"), IAGO, &[])
        .await;
    let verona = app.stream_id("Verona").await;
    let events = app.events(MEMBER, &bulk).await;
    let deletes: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "delete_message")
        .collect();
    assert_eq!(deletes.len(), 2);
    assert_eq!(deletes[0]["message_ids"], json!([mine]));
    assert_eq!(deletes[0]["message_type"], "stream");
    assert_eq!(deletes[0]["stream_id"], verona);
    assert_eq!(deletes[0]["topic"], "t");
    let events = app.events(MEMBER, &legacy).await;
    let deletes: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "delete_message")
        .collect();
    assert_eq!(deletes[0]["message_id"], mine);
    assert!(deletes[0].get("message_ids").is_none());
    let body = fetch(&app, MEMBER, &[("anchor", "newest"), ("num_before", "10")]).await;
    assert_eq!(ids(&body), Vec::<u64>::new());
    let topics = app
        .ok(
            "GET",
            &format!("/api/v1/users/me/{verona}/topics"),
            MEMBER,
            &[],
        )
        .await;
    assert_eq!(topics["topics"], json!([]));
    let reg = app
        .ok(
            "POST",
            "/api/v1/register",
            OTHELLO,
            &[("fetch_event_types", r#"["message","update_message_flags"]"#)],
        )
        .await;
    assert_eq!(reg["unread_msgs"]["count"], 0);
}

#[actix_web::test]
async fn typing_notifications_are_events_only() {
    let app = TestApp::spawn().await;
    let othello = app.user_id(OTHELLO).await;
    let hamlet = app.user_id(MEMBER).await;
    let queue = app.register(OTHELLO, &[]).await;
    let stream_queue = app
        .register(
            OTHELLO,
            &[(
                "client_capabilities",
                r#"{"stream_typing_notifications": true}"#,
            )],
        )
        .await;
    app.ok(
        "POST",
        "/api/v1/typing",
        MEMBER,
        &[("op", "start"), ("to", &format!("[{othello}]"))],
    )
    .await;
    let events = app.events(OTHELLO, &queue).await;
    let e = events
        .iter()
        .find(|e| e["type"] == "typing")
        .expect("typing");
    assert_eq!(e["op"], "start");
    assert_eq!(e["message_type"], "direct");
    assert_eq!(e["sender"]["user_id"], hamlet);
    let ids: Vec<i64> = e["recipients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["user_id"].as_i64().unwrap())
        .collect();
    let mut expected = vec![hamlet, othello];
    expected.sort();
    assert_eq!(ids, expected);
    let denmark = app.stream_id("Denmark").await.to_string();
    app.ok(
        "POST",
        "/api/v1/typing",
        MEMBER,
        &[
            ("op", "stop"),
            ("type", "stream"),
            ("stream_id", &denmark),
            ("topic", "t"),
        ],
    )
    .await;
    let events = app.events(OTHELLO, &stream_queue).await;
    assert!(events
        .iter()
        .any(|e| e["type"] == "typing" && e["message_type"] == "stream" && e["topic"] == "t"));
    // Without the capability, no channel typing events.
    let events = app.events(OTHELLO, &queue).await;
    assert!(!events
        .iter()
        .any(|e| e["type"] == "typing" && e["message_type"] == "stream"));
    app.err(
        "POST",
        "/api/v1/typing",
        MEMBER,
        &[("op", "maybe"), ("to", "[1]")],
        400,
        "BAD_REQUEST",
        "Invalid op",
    )
    .await;
    app.err(
        "POST",
        "/api/v1/typing",
        MEMBER,
        &[("op", "start")],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'to' argument",
    )
    .await;
    app.err(
        "POST",
        "/api/v1/typing",
        MEMBER,
        &[("op", "start"), ("to", "[99999]")],
        400,
        "BAD_REQUEST",
        "Invalid user ID 99999",
    )
    .await;
}

#[actix_web::test]
async fn register_narrow_filters_message_events() {
    let app = TestApp::spawn().await;
    let narrowed = app
        .register(
            MEMBER,
            &[("narrow", r#"[["stream","Verona"],["topic","wanted"]]"#)],
        )
        .await;
    let everything = app.register(MEMBER, &[]).await;
    let dms = app
        .register(
            MEMBER,
            &[("narrow", r#"[{"operator":"is","operand":"dm"}]"#)],
        )
        .await;
    let wanted = send_stream(&app, IAGO, "Verona", "wanted", "yes").await;
    send_stream(&app, IAGO, "Verona", "other", "no").await;
    send_stream(&app, IAGO, "Denmark", "wanted", "no").await;
    let hamlet = app.user_id(MEMBER).await;
    app.ok(
        "POST",
        "/api/v1/messages",
        IAGO,
        &[
            ("type", "direct"),
            ("to", &format!("[{hamlet}]")),
            ("content", "dm"),
        ],
    )
    .await;
    let message_ids = |events: Vec<Value>| -> Vec<Value> {
        events
            .into_iter()
            .filter(|e| e["type"] == "message")
            .map(|e| e["message"]["id"].clone())
            .collect()
    };
    assert_eq!(
        message_ids(app.events(MEMBER, &narrowed).await),
        vec![json!(wanted)]
    );
    assert_eq!(
        message_ids(app.events(MEMBER, &everything).await).len(),
        3,
        "two in Verona and the direct message; Hamlet is not in Denmark"
    );
    let dm_events = message_ids(app.events(MEMBER, &dms).await);
    assert_eq!(dm_events.len(), 1);
    app.err(
        "POST",
        "/api/v1/register",
        MEMBER,
        &[("narrow", r#"[["bogus","x"]]"#)],
        400,
        "BAD_REQUEST",
        "Invalid narrow operator: unknown operator bogus",
    )
    .await;
}

#[actix_web::test]
async fn reactions() {
    let app = TestApp::spawn().await;
    let id = send_stream(&app, IAGO, "Verona", "r", "react to me").await;
    let path = format!("/api/v1/messages/{id}/reactions");
    let queue = app.register(MEMBER, &[]).await;
    app.ok("POST", &path, MEMBER, &[("emoji_name", "octopus")])
        .await;
    app.err(
        "POST",
        &path,
        MEMBER,
        &[("emoji_name", "octopus")],
        400,
        "BAD_REQUEST",
        "Reaction already exists.",
    )
    .await;
    app.err(
        "POST",
        &path,
        MEMBER,
        &[("emoji_name", "no_such_emoji")],
        400,
        "BAD_REQUEST",
        "Emoji 'no_such_emoji' does not exist",
    )
    .await;
    app.err(
        "POST",
        &path,
        MEMBER,
        &[
            ("emoji_name", "octopus"),
            ("emoji_code", "1f419"),
            ("reaction_type", "bogus"),
        ],
        400,
        "BAD_REQUEST",
        "Invalid emoji type.",
    )
    .await;
    // Voting with the code of an existing reaction.
    app.ok(
        "POST",
        &path,
        OTHELLO,
        &[
            ("emoji_name", "whatever"),
            ("emoji_code", "1f419"),
            ("reaction_type", "unicode_emoji"),
        ],
    )
    .await;
    // A custom emoji of the realm.
    app.ok("POST", &path, OTHELLO, &[("emoji_name", "green_tick")])
        .await;
    let m = app
        .ok("GET", &format!("/api/v1/messages/{id}"), MEMBER, &[])
        .await;
    let reactions = m["message"]["reactions"].as_array().unwrap();
    assert_eq!(reactions.len(), 3);
    assert!(
        reactions.iter().all(|r| r["emoji_name"] != "whatever"),
        "{reactions:?}"
    );
    assert_eq!(reactions[2]["reaction_type"], "realm_emoji");
    let events = app.events(MEMBER, &queue).await;
    let e = events
        .iter()
        .find(|e| e["type"] == "reaction")
        .expect("reaction event");
    assert_eq!(e["op"], "add");
    assert_eq!(e["emoji_code"], "1f419");
    assert_eq!(e["message_id"], id);
    // Remove.
    app.ok("DELETE", &path, MEMBER, &[("emoji_name", "octopus")])
        .await;
    app.err(
        "DELETE",
        &path,
        MEMBER,
        &[("emoji_name", "octopus")],
        400,
        "BAD_REQUEST",
        "Reaction doesn't exist.",
    )
    .await;
    app.err(
        "DELETE",
        &path,
        MEMBER,
        &[],
        400,
        "BAD_REQUEST",
        "At least one of the following arguments must be present: emoji_name, emoji_code",
    )
    .await;
    let m = app
        .ok("GET", &format!("/api/v1/messages/{id}"), MEMBER, &[])
        .await;
    assert_eq!(m["message"]["reactions"].as_array().unwrap().len(), 2);
    // has:reaction narrow.
    let body = fetch(
        &app,
        MEMBER,
        &[
            ("anchor", "newest"),
            ("num_before", "5"),
            ("narrow", r#"[{"operator":"has","operand":"reaction"}]"#),
        ],
    )
    .await;
    assert_eq!(ids(&body), vec![id]);
    // Others' direct messages are out of reach.
    let othello = app.user_id(OTHELLO).await;
    let dm = app
        .ok(
            "POST",
            "/api/v1/messages",
            MEMBER,
            &[
                ("type", "direct"),
                ("to", &format!("[{othello}]")),
                ("content", "x"),
            ],
        )
        .await["id"]
        .as_u64()
        .unwrap();
    app.err(
        "POST",
        &format!("/api/v1/messages/{dm}/reactions"),
        IAGO,
        &[("emoji_name", "octopus")],
        400,
        "BAD_REQUEST",
        "Invalid message(s)",
    )
    .await;
}

#[actix_web::test]
async fn linkifiers_apply_to_messages_but_not_code() {
    let app = TestApp::spawn().await;
    let id = send_stream(
        &app,
        IAGO,
        "Verona",
        "links",
        "fixes zulip-mobile#1234 and `zulip-mobile#99`",
    )
    .await;
    let m = app
        .ok("GET", &format!("/api/v1/messages/{id}"), MEMBER, &[])
        .await;
    assert_eq!(
        m["message"]["content"],
        "<p>fixes <a href=\"https://github.com/zulip/zulip-mobile/pull/1234\">zulip-mobile#1234</a> and <code>zulip-mobile#99</code></p>"
    );
}

/// Who may edit, move and delete another user's channel message, by role (the
/// development realm's policies: content by its sender only; topics by everyone;
/// channels by members and up; deleting others' messages by administrators).
#[actix_web::test]
async fn message_rights_by_role() {
    struct Case {
        who: &'static str,
        action: &'static str,
        ok: bool,
        msg: &'static str,
    }
    let denied_edit = "You don't have permission to edit this message";
    let denied_delete = "You don't have permission to delete this message";
    let denied_move = "You don't have permission to move this message";
    let cases = [
        Case {
            who: OWNER,
            action: "content",
            ok: false,
            msg: denied_edit,
        },
        Case {
            who: ADMIN,
            action: "content",
            ok: false,
            msg: denied_edit,
        },
        Case {
            who: SHIVA,
            action: "content",
            ok: false,
            msg: denied_edit,
        },
        Case {
            who: MEMBER,
            action: "content",
            ok: true,
            msg: "",
        },
        Case {
            who: OWNER,
            action: "topic",
            ok: true,
            msg: "",
        },
        Case {
            who: SHIVA,
            action: "topic",
            ok: true,
            msg: "",
        },
        Case {
            who: GUEST,
            action: "topic",
            ok: true,
            msg: "",
        },
        Case {
            who: OTHELLO,
            action: "channel",
            ok: true,
            msg: "",
        },
        Case {
            who: GUEST,
            action: "channel",
            ok: false,
            msg: denied_move,
        },
        Case {
            who: OTHELLO,
            action: "delete",
            ok: false,
            msg: denied_delete,
        },
        Case {
            who: GUEST,
            action: "delete",
            ok: false,
            msg: denied_delete,
        },
        Case {
            who: SHIVA,
            action: "delete",
            ok: false,
            msg: denied_delete,
        },
        Case {
            who: ADMIN,
            action: "delete",
            ok: true,
            msg: "",
        },
        Case {
            who: OWNER,
            action: "delete",
            ok: true,
            msg: "",
        },
        Case {
            who: MEMBER,
            action: "delete",
            ok: true,
            msg: "",
        },
    ];
    let app = TestApp::spawn().await;
    let denmark = app.stream_id("Denmark").await.to_string();
    for (i, case) in cases.iter().enumerate() {
        // Hamlet's message in Verona (every role above is subscribed there but Othello,
        // who reads it as public history).
        let id = send_stream(&app, MEMBER, "Verona", "rights", &format!("case {i}")).await;
        let path = format!("/api/v1/messages/{id}");
        let topic = format!("moved {i}");
        let (method, params): (&str, Vec<(&str, &str)>) = match case.action {
            "content" => ("PATCH", vec![("content", "changed")]),
            "topic" => ("PATCH", vec![("topic", topic.as_str())]),
            "channel" => ("PATCH", vec![("stream_id", denmark.as_str())]),
            _ => ("DELETE", vec![]),
        };
        let (status, body) = app.call(method, &path, case.who, &params).await;
        if case.ok {
            assert_eq!(status, 200, "case {i} {} {}: {body}", case.who, case.action);
        } else {
            assert_eq!(
                (status, body["code"].as_str(), body["msg"].as_str()),
                (400, Some("BAD_REQUEST"), Some(case.msg)),
                "case {i} {} {}",
                case.who,
                case.action
            );
        }
    }
}
