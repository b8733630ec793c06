//! Message rules beyond the basics of `messages.rs`: length limits, the empty topic and
//! its display name, edit history after moves, Markdown through the API, the remaining
//! send and edit errors, flags (remove, narrow), the `first_unread` anchor, reaction
//! emoji checks, `client_gravatar`, and deletions across a restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use hearth::realm::ManualClock;
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

/// `GET /messages/{id}` as `who`: the `message` object and `raw_content`.
async fn one(app: &TestApp, who: &str, id: u64, params: &[(&str, &str)]) -> (Value, String) {
    let body = app
        .ok("GET", &format!("/api/v1/messages/{id}"), who, params)
        .await;
    (
        body["message"].clone(),
        body["raw_content"]
            .as_str()
            .expect("raw_content")
            .to_owned(),
    )
}

/// The edit history of a message, as `who` sees it.
async fn history(app: &TestApp, who: &str, id: u64, params: &[(&str, &str)]) -> Value {
    app.ok(
        "GET",
        &format!("/api/v1/messages/{id}/history"),
        who,
        params,
    )
    .await["message_history"]
        .clone()
}

/// The unread count of `who` (from `/register`).
async fn unread_count(app: &TestApp, who: &str) -> u64 {
    let reg = app
        .ok(
            "POST",
            "/api/v1/register",
            who,
            &[("fetch_event_types", r#"["message","update_message_flags"]"#)],
        )
        .await;
    reg["unread_msgs"]["count"].as_u64().expect("count")
}

// ---------------------------------------------------------------- length limits

#[actix_web::test]
async fn over_long_content_and_topic_are_truncated() {
    let app = TestApp::spawn_with_clock(ManualClock::new(START_MS)).await;
    // Exactly at the limits: kept as they are.
    let content = "a".repeat(10_000);
    let topic = "t".repeat(60);
    let id = send_stream(&app, IAGO, "Verona", &topic, &content).await;
    let (m, raw) = one(&app, IAGO, id, &[]).await;
    assert_eq!(raw, content);
    assert_eq!(m["subject"], topic.as_str());
    // One over: Zulip's `truncate_content`, counted in characters.
    let long = format!("{}b", "é".repeat(10_000));
    let truncated = format!("{}\n[message truncated]", "é".repeat(10_000 - 20));
    assert_eq!(truncated.chars().count(), 10_000);
    let long_topic = "ü".repeat(61);
    let cut_topic = format!("{}...", "ü".repeat(57));
    let id = send_stream(&app, IAGO, "Verona", &long_topic, &long).await;
    let (m, raw) = one(&app, IAGO, id, &[]).await;
    assert_eq!(raw, truncated);
    assert_eq!(m["subject"], cut_topic.as_str());
    assert!(m["content"]
        .as_str()
        .unwrap()
        .ends_with("<br>\n[message truncated]</p>"));
    // Direct messages too.
    let othello = app.user_id(OTHELLO).await;
    let dm = send_direct(&app, IAGO, &[othello], &long).await;
    assert_eq!(one(&app, OTHELLO, dm, &[]).await.1, truncated);

    // Edits: content and topic.
    let id = send_stream(&app, IAGO, "Verona", "short", "short").await;
    let path = format!("/api/v1/messages/{id}");
    app.ok("PATCH", &path, IAGO, &[("content", &long)]).await;
    app.ok("PATCH", &path, IAGO, &[("topic", &long_topic)])
        .await;
    let (m, raw) = one(&app, IAGO, id, &[]).await;
    assert_eq!(raw, truncated);
    assert_eq!(m["subject"], cut_topic.as_str());
    assert!(m["content"]
        .as_str()
        .unwrap()
        .ends_with("<br>\n[message truncated]</p>"));
    let h = history(&app, IAGO, id, &[]).await;
    assert_eq!(h[1]["content"], truncated.as_str());
    assert_eq!(h[2]["topic"], cut_topic.as_str());

    // Scheduled messages (seed 4.2): create and edit.
    let verona = app.stream_id("Verona").await.to_string();
    let later = (START + 3600).to_string();
    let sid = app
        .ok(
            "POST",
            "/api/v1/scheduled_messages",
            IAGO,
            &[
                ("type", "stream"),
                ("to", &verona),
                ("topic", &long_topic),
                ("content", &long),
                ("scheduled_delivery_timestamp", &later),
            ],
        )
        .await["scheduled_message_id"]
        .as_u64()
        .unwrap();
    let listed = app.ok("GET", "/api/v1/scheduled_messages", IAGO, &[]).await["scheduled_messages"]
        [0]
    .clone();
    assert_eq!(listed["content"], truncated.as_str());
    assert_eq!(listed["topic"], cut_topic.as_str());
    let spath = format!("/api/v1/scheduled_messages/{sid}");
    app.ok(
        "PATCH",
        &spath,
        IAGO,
        &[("content", "short"), ("topic", "short")],
    )
    .await;
    app.ok("PATCH", &spath, IAGO, &[("topic", &long_topic)])
        .await;
    app.ok("PATCH", &spath, IAGO, &[("content", &long)]).await;
    let listed = app.ok("GET", "/api/v1/scheduled_messages", IAGO, &[]).await["scheduled_messages"]
        [0]
    .clone();
    assert_eq!(listed["content"], truncated.as_str());
    assert_eq!(listed["topic"], cut_topic.as_str());
}

// ---------------------------------------------------------------- the empty topic

#[actix_web::test]
async fn no_topic_and_display_name_are_the_empty_topic() {
    let app = TestApp::spawn_with_clock(ManualClock::new(START_MS)).await;
    let verona = app.stream_id("Verona").await;
    let queue = app.register(HAMLET, &[]).await;
    let mut sent = Vec::new();
    for topic in ["(no topic)", "general chat", "", "  "] {
        sent.push(send_stream(&app, IAGO, "Verona", topic, &format!("in {topic:?}")).await);
    }
    let named = send_stream(&app, IAGO, "Verona", "named", "named").await;
    // One topic, shown by its display name unless the client handles empty topics.
    let n = r#"[{"operator":"channel","operand":"Verona"}]"#;
    let body = fetch(
        &app,
        IAGO,
        &[("anchor", "oldest"), ("num_after", "10"), ("narrow", n)],
    )
    .await;
    assert_eq!(ids(&body)[..4], sent[..]);
    for m in &body["messages"].as_array().unwrap()[..4] {
        assert_eq!(m["subject"], "general chat", "{m}");
    }
    let body = fetch(
        &app,
        IAGO,
        &[
            ("anchor", "oldest"),
            ("num_after", "10"),
            ("narrow", n),
            ("allow_empty_topic_name", "true"),
        ],
    )
    .await;
    for m in &body["messages"].as_array().unwrap()[..4] {
        assert_eq!(m["subject"], "", "{m}");
    }
    // Events name it so too (no client here declares `empty_topic_name`).
    app.tick();
    let events = app.events(HAMLET, &queue).await;
    let subjects: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| &e["message"]["subject"])
        .collect();
    assert_eq!(subjects.len(), 5);
    assert!(
        subjects[..4].iter().all(|s| *s == "general chat"),
        "{subjects:?}"
    );
    // A topic narrow by the display name, or by "", finds them (Zulip's
    // `update_narrow_terms_containing_empty_topic_fallback_name`).
    for topic in ["general chat", ""] {
        let n = json!([{"operator": "channel", "operand": "Verona"},
                       {"operator": "topic", "operand": topic}])
        .to_string();
        let body = fetch(
            &app,
            IAGO,
            &[("anchor", "oldest"), ("num_after", "10"), ("narrow", &n)],
        )
        .await;
        assert_eq!(ids(&body), sent, "topic {topic:?}");
    }
    let (m, _) = one(&app, IAGO, sent[0], &[]).await;
    assert_eq!(m["subject"], "general chat");
    let (m, _) = one(&app, IAGO, sent[0], &[("allow_empty_topic_name", "true")]).await;
    assert_eq!(m["subject"], "");
    // The topic list has it once.
    let path = format!("/api/v1/users/me/{verona}/topics");
    let topics = app.ok("GET", &path, IAGO, &[]).await;
    assert_eq!(
        topics["topics"],
        json!([{"name": "named", "max_id": named}, {"name": "general chat", "max_id": sent[3]}])
    );
    let topics = app
        .ok("GET", &path, IAGO, &[("allow_empty_topic_name", "true")])
        .await;
    assert_eq!(topics["topics"][1]["name"], "");

    // An edit to "(no topic)" moves the message into the empty topic.
    let path = format!("/api/v1/messages/{named}");
    app.ok("PATCH", &path, IAGO, &[("topic", "(no topic)")])
        .await;
    let (m, _) = one(&app, IAGO, named, &[("allow_empty_topic_name", "true")]).await;
    assert_eq!(m["subject"], "");
    // Moving it back from the display name counts as no change.
    app.err(
        "PATCH",
        &path,
        IAGO,
        &[("topic", "general chat")],
        400,
        "BAD_REQUEST",
        "Nothing to change",
    )
    .await;
    app.ok("PATCH", &path, IAGO, &[("topic", "named again")])
        .await;
    // Seed 4.6: the history shows the empty topic as the display name unless asked.
    let h = history(&app, IAGO, named, &[]).await;
    assert_eq!(h[1]["prev_topic"], "named");
    assert_eq!(h[1]["topic"], "general chat");
    assert_eq!(h[2]["prev_topic"], "general chat");
    assert_eq!(h[2]["topic"], "named again");
    let h = history(&app, IAGO, named, &[("allow_empty_topic_name", "true")]).await;
    assert_eq!(h[1]["topic"], "");
    assert_eq!(h[2]["prev_topic"], "");
    // The display name is the realm's: what a client sees is what it may send back.
    let reg = app
        .ok(
            "POST",
            "/api/v1/register",
            IAGO,
            &[("fetch_event_types", r#"["realm"]"#)],
        )
        .await;
    assert_eq!(reg["realm_empty_topic_display_name"], "general chat");
}

// ---------------------------------------------------------------- edit history

#[actix_web::test]
async fn history_records_channel_moves_and_topic_edits() {
    let clock = ManualClock::new(START_MS);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let iago = app.user_id(IAGO).await;
    let hamlet = app.user_id(HAMLET).await;
    let verona = app.stream_id("Verona").await;
    let denmark = app.stream_id("Denmark").await;
    let id = send_stream(&app, IAGO, "Verona", "start", "the content").await;
    let path = format!("/api/v1/messages/{id}");
    let first = json!({"content": "the content", "rendered_content": "<p>the content</p>",
                       "timestamp": START, "topic": "start", "user_id": iago});
    // Never edited: the message as sent, alone.
    assert_eq!(history(&app, HAMLET, id, &[]).await, json!([first]));
    // A channel move: `prev_stream` and `stream`, nothing about content.
    clock.advance_ms(10_000);
    app.ok(
        "PATCH",
        &path,
        IAGO,
        &[
            ("stream_id", &denmark.to_string()),
            ("send_notification_to_old_thread", "false"),
            ("send_notification_to_new_thread", "false"),
        ],
    )
    .await;
    let moved = json!({"content": "the content", "rendered_content": "<p>the content</p>",
                       "timestamp": START + 10, "topic": "start", "user_id": iago,
                       "prev_stream": verona, "stream": denmark});
    assert_eq!(history(&app, IAGO, id, &[]).await, json!([first, moved]));
    // A topic-only edit by someone else: `prev_topic`, no content fields.
    clock.advance_ms(10_000);
    app.ok("PATCH", &path, HAMLET, &[("topic", "renamed")])
        .await;
    let renamed = json!({"content": "the content", "rendered_content": "<p>the content</p>",
                         "timestamp": START + 20, "topic": "renamed", "user_id": hamlet,
                         "prev_topic": "start"});
    assert_eq!(
        history(&app, IAGO, id, &[]).await,
        json!([first, moved, renamed])
    );
    // A move of channel and topic at once carries both.
    clock.advance_ms(10_000);
    app.ok(
        "PATCH",
        &path,
        IAGO,
        &[
            ("stream_id", &verona.to_string()),
            ("topic", "home"),
            ("send_notification_to_old_thread", "false"),
            ("send_notification_to_new_thread", "false"),
        ],
    )
    .await;
    let h = history(&app, IAGO, id, &[]).await;
    assert_eq!(
        h[3],
        json!({"content": "the content", "rendered_content": "<p>the content</p>",
               "timestamp": START + 30, "topic": "home", "user_id": iago,
               "prev_topic": "renamed", "prev_stream": denmark, "stream": verona})
    );
    // A direct message's history has no topic to name: "" even without
    // `allow_empty_topic_name` (Zulip's `fill_edit_history_entries`).
    let dm = send_direct(&app, IAGO, &[hamlet], "private words").await;
    app.ok(
        "PATCH",
        &format!("/api/v1/messages/{dm}"),
        IAGO,
        &[("content", "other words")],
    )
    .await;
    let h = history(&app, HAMLET, dm, &[]).await;
    assert_eq!(h[0]["topic"], "");
    assert_eq!(h[1]["topic"], "");
    assert_eq!(h[1]["prev_content"], "private words");
}

// ---------------------------------------------------------------- Markdown

#[actix_web::test]
async fn markdown_renders_as_zulip() {
    let app = TestApp::spawn().await;
    let verona = app.stream_id("Verona").await;
    let iago = app.user_id(IAGO).await;
    let emoji = app.ok("GET", "/api/v1/realm/emoji", IAGO, &[]).await;
    let tick = emoji["emoji"]
        .as_object()
        .unwrap()
        .values()
        .find(|e| e["name"] == "green_tick")
        .expect("green_tick")
        .clone();
    let cases: Vec<(&str, String)> = vec![
        (
            "#**Verona**",
            format!(
                "<p><a class=\"stream\" data-stream-id=\"{verona}\" href=\"/#narrow/channel/{verona}-Verona\">#Verona</a></p>"
            ),
        ),
        (
            ":green_tick:",
            format!(
                "<p><img alt=\":green_tick:\" class=\"emoji\" src=\"{}\" title=\"green tick\"></p>",
                tick["source_url"].as_str().unwrap()
            ),
        ),
        (
            "<script>x</script>",
            "<p>&lt;script&gt;x&lt;/script&gt;</p>".to_owned(),
        ),
        // Zulip's `sanitize_url`: a link it refuses is not a link at all.
        (
            "[a](javascript:alert(1))",
            "<p>[a](javascript:alert(1))</p>".to_owned(),
        ),
        (
            "@**all**",
            "<p><span class=\"user-mention channel-wildcard-mention\" data-user-id=\"*\">@all</span></p>"
                .to_owned(),
        ),
        (
            "@_**Iago**",
            format!("<p><span class=\"user-mention silent\" data-user-id=\"{iago}\">Iago</span></p>"),
        ),
    ];
    for (source, html) in cases {
        let id = send_stream(&app, IAGO, "Verona", "markdown", source).await;
        let (m, raw) = one(&app, HAMLET, id, &[]).await;
        assert_eq!(raw, source);
        assert_eq!(m["content"], html.as_str(), "{source}");
    }
}

// ---------------------------------------------------------------- send and edit errors

#[actix_web::test]
async fn send_and_edit_error_texts() {
    let app = TestApp::spawn().await;
    let path = "/api/v1/messages";
    let bad = |params: Vec<(&'static str, &'static str)>, msg: &'static str| (params, msg);
    let send_cases = [
        bad(
            vec![
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", "t"),
                ("content", "a\0b"),
            ],
            "Message must not contain null bytes",
        ),
        bad(
            vec![
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", " a\u{7}b "),
                ("content", "x"),
            ],
            "Invalid character in topic, at position 2!",
        ),
        bad(
            vec![
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", "a\u{FFFE}"),
                ("content", "x"),
            ],
            "Invalid character in topic, at position 2!",
        ),
        bad(
            vec![
                ("type", "stream"),
                ("to", r#"["Verona", "Denmark"]"#),
                ("topic", "t"),
                ("content", "x"),
            ],
            "Expected exactly one channel",
        ),
        bad(
            vec![
                ("type", "stream"),
                ("to", "[true]"),
                ("topic", "t"),
                ("content", "x"),
            ],
            "Invalid data type for channel",
        ),
        bad(
            vec![("type", "stream"), ("topic", "t"), ("content", "x")],
            "Missing channel",
        ),
        bad(
            vec![("type", "direct"), ("to", "{}"), ("content", "x")],
            "Invalid data type for recipients",
        ),
        bad(
            vec![("type", "direct"), ("to", "[null]"), ("content", "x")],
            "Invalid data type for recipients",
        ),
        // A bare id is not a list (Zulip's `extract_private_recipients`).
        bad(
            vec![("type", "direct"), ("to", "10"), ("content", "x")],
            "Invalid data type for recipients",
        ),
        // The first item decides: ids, so the rest must be ids.
        bad(
            vec![("type", "direct"), ("to", "[10, null]"), ("content", "x")],
            "Recipient lists may contain emails or user IDs, but not both.",
        ),
        bad(
            vec![
                ("type", "direct"),
                ("to", r#"["iago@zulip.com", 10]"#),
                ("content", "x"),
            ],
            "Recipient lists may contain emails or user IDs, but not both.",
        ),
        bad(
            vec![("type", "direct"), ("to", r#"["", " "]"#), ("content", "x")],
            "Message must have recipients",
        ),
        bad(
            vec![("type", "direct"), ("to", "[]"), ("content", "x")],
            "Message must have recipients",
        ),
        bad(
            vec![("type", "direct"), ("content", "x")],
            "Message must have recipients",
        ),
        bad(
            vec![("type", "bogus"), ("to", "Verona"), ("content", "x")],
            "Invalid type",
        ),
    ];
    for (params, msg) in send_cases {
        let (status, body) = app.call("POST", path, HAMLET, &params).await;
        assert_eq!(
            (status, body["code"].as_str(), body["msg"].as_str()),
            (400, Some("BAD_REQUEST"), Some(msg)),
            "{params:?}: {body}"
        );
    }
    // A channel named as a JSON list of one, by name or id.
    let verona = app.stream_id("Verona").await;
    for to in [r#"["Verona"]"#.to_owned(), format!("[{verona}]")] {
        app.ok(
            "POST",
            path,
            HAMLET,
            &[
                ("type", "stream"),
                ("to", &to),
                ("topic", "list"),
                ("content", "x"),
            ],
        )
        .await;
    }

    // A deactivated recipient: named by its API email.
    let othello = app.user_id(OTHELLO).await;
    app.ok("DELETE", &format!("/api/v1/users/{othello}"), IAGO, &[])
        .await;
    let api_email = app
        .ok("GET", &format!("/api/v1/users/{othello}"), HAMLET, &[])
        .await["user"]["email"]
        .as_str()
        .unwrap()
        .to_owned();
    app.err(
        "POST",
        path,
        HAMLET,
        &[
            ("type", "direct"),
            ("to", &format!("[{othello}]")),
            ("content", "x"),
        ],
        400,
        "BAD_REQUEST",
        &format!("'{api_email}' is no longer using Zulip."),
    )
    .await;

    // The channel's `can_send_message_group`: administrators only.
    let denmark = app.stream_id("Denmark").await;
    let in_denmark = send_stream(&app, IAGO, "Denmark", "t", "movable").await;
    app.ok(
        "PATCH",
        &format!("/api/v1/streams/{verona}"),
        IAGO,
        &[("can_send_message_group", r#"{"new": 3}"#)],
    )
    .await;
    app.err(
        "POST",
        path,
        HAMLET,
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "t"),
            ("content", "x"),
        ],
        400,
        "BAD_REQUEST",
        "You do not have permission to post in this channel.",
    )
    .await;
    send_stream(&app, IAGO, "Verona", "t", "administrators may").await;
    // ... and as the target of a move.
    app.err(
        "PATCH",
        &format!("{path}/{in_denmark}"),
        HAMLET,
        &[("stream_id", &verona.to_string())],
        400,
        "BAD_REQUEST",
        "You do not have permission to post in this channel.",
    )
    .await;
    let _ = denmark;

    // Edits.
    let mine = send_stream(&app, HAMLET, "Denmark", "edits", "mine").await;
    let mine_path = format!("{path}/{mine}");
    app.err(
        "PATCH",
        &mine_path,
        HAMLET,
        &[("content", "new"), ("propagate_mode", "change_all")],
        400,
        "BAD_REQUEST",
        "Invalid propagate_mode without topic edit",
    )
    .await;
    // Zulip compares the stripped topic with exactly these two.
    for resolved in ["✔ general chat", "✔ "] {
        app.err(
            "PATCH",
            &mine_path,
            HAMLET,
            &[("topic", resolved)],
            400,
            "BAD_REQUEST",
            "General chat cannot be marked as resolved",
        )
        .await;
    }
    app.err(
        "PATCH",
        &mine_path,
        HAMLET,
        &[("topic", "a\u{0}b")],
        400,
        "BAD_REQUEST",
        "Invalid character in topic, at position 2!",
    )
    .await;
    app.err(
        "PATCH",
        &mine_path,
        HAMLET,
        &[("content", "a\0b")],
        400,
        "BAD_REQUEST",
        "Message must not contain null bytes",
    )
    .await;
    // Emptied content becomes "(deleted)".
    app.ok("PATCH", &mine_path, HAMLET, &[("content", " \n ")])
        .await;
    let (m, raw) = one(&app, HAMLET, mine, &[]).await;
    assert_eq!(raw, "(deleted)");
    assert_eq!(m["content"], "<p>(deleted)</p>");

    // An archived channel's messages can be neither edited nor deleted.
    let created = app
        .ok(
            "POST",
            "/api/v1/channels/create",
            IAGO,
            &[
                ("name", "closing"),
                ("subscribers", &format!("[{}]", app.user_id(HAMLET).await)),
            ],
        )
        .await;
    let closing = created["id"].as_u64().unwrap();
    let doomed = send_stream(&app, HAMLET, "closing", "t", "doomed").await;
    app.ok("DELETE", &format!("/api/v1/streams/{closing}"), IAGO, &[])
        .await;
    for (who, method, params) in [
        (HAMLET, "PATCH", vec![("content", "changed")]),
        (HAMLET, "PATCH", vec![("topic", "moved")]),
        (HAMLET, "DELETE", vec![]),
        (IAGO, "DELETE", vec![]),
    ] {
        app.err(
            method,
            &format!("{path}/{doomed}"),
            who,
            &params,
            400,
            "BAD_REQUEST",
            "Invalid message(s)",
        )
        .await;
    }

    // Typing.
    app.err(
        "POST",
        "/api/v1/typing",
        HAMLET,
        &[("op", "start"), ("to", "[]")],
        400,
        "BAD_REQUEST",
        "Empty 'to' list",
    )
    .await;
    app.err(
        "POST",
        "/api/v1/typing",
        HAMLET,
        &[
            ("op", "start"),
            ("type", "stream"),
            ("stream_id", &denmark.to_string()),
        ],
        400,
        "BAD_REQUEST",
        "Missing topic",
    )
    .await;
}

// ---------------------------------------------------------------- flags

#[actix_web::test]
async fn flag_removal_and_narrowed_flags() {
    let app = TestApp::spawn().await;
    let mut sent = Vec::new();
    for i in 0..5 {
        sent.push(send_stream(&app, IAGO, "Verona", "flagged", &format!("m{i}")).await);
    }
    let other = send_stream(&app, IAGO, "Verona", "elsewhere", "other").await;
    let queue = app.register(HAMLET, &[]).await;
    let star = format!("[{}, {}]", sent[0], sent[1]);
    app.ok(
        "POST",
        "/api/v1/messages/flags",
        HAMLET,
        &[("messages", &star), ("op", "add"), ("flag", "starred")],
    )
    .await;
    let body = app
        .ok(
            "POST",
            "/api/v1/messages/flags",
            HAMLET,
            &[
                ("messages", &format!("[{}]", sent[0])),
                ("op", "remove"),
                ("flag", "starred"),
            ],
        )
        .await;
    assert_eq!(body["messages"], json!([sent[0]]));
    let events = app.events(HAMLET, &queue).await;
    let flag_events: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "update_message_flags")
        .collect();
    assert_eq!(flag_events.len(), 2, "{events:?}");
    assert_eq!(flag_events[1]["op"], "remove");
    assert_eq!(flag_events[1]["flag"], "starred");
    assert_eq!(flag_events[1]["messages"], json!([sent[0]]));
    assert_eq!(flag_events[1]["all"], false);
    let (m, _) = one(&app, HAMLET, sent[0], &[]).await;
    assert_eq!(m["flags"], json!([]));
    let (m, _) = one(&app, HAMLET, sent[1], &[]).await;
    assert_eq!(m["flags"], json!(["starred"]));

    // Marking read through a narrow, a page at a time.
    assert_eq!(unread_count(&app, HAMLET).await, 6);
    let narrow =
        r#"[{"operator":"channel","operand":"Verona"},{"operator":"topic","operand":"flagged"}]"#;
    let flags_narrow = "/api/v1/messages/flags/narrow";
    let body = app
        .ok(
            "POST",
            flags_narrow,
            HAMLET,
            &[
                ("anchor", "oldest"),
                ("num_before", "0"),
                ("num_after", "3"),
                ("narrow", narrow),
                ("op", "add"),
                ("flag", "read"),
            ],
        )
        .await;
    assert_eq!(
        body,
        json!({"result": "success", "msg": "", "processed_count": 3, "updated_count": 3,
               "first_processed_id": sent[0], "last_processed_id": sent[2],
               "found_oldest": true, "found_newest": false})
    );
    let events = app.events(HAMLET, &queue).await;
    let e = events
        .iter()
        .rfind(|e| e["type"] == "update_message_flags")
        .expect("flags event");
    assert_eq!(e["op"], "add");
    assert_eq!(e["flag"], "read");
    assert_eq!(e["messages"], json!(&sent[..3]));
    assert_eq!(unread_count(&app, HAMLET).await, 3);
    // The next page, from the last processed id, without it.
    let anchor = sent[2].to_string();
    let body = app
        .ok(
            "POST",
            flags_narrow,
            HAMLET,
            &[
                ("anchor", &anchor),
                ("include_anchor", "false"),
                ("num_before", "0"),
                ("num_after", "3"),
                ("narrow", narrow),
                ("op", "add"),
                ("flag", "read"),
            ],
        )
        .await;
    assert_eq!(body["processed_count"], 2);
    assert_eq!(body["updated_count"], 2);
    assert_eq!(body["first_processed_id"], sent[3]);
    assert_eq!(body["last_processed_id"], sent[4]);
    assert_eq!(body["found_newest"], true);
    assert_eq!(unread_count(&app, HAMLET).await, 1);
    // Again: nothing left to update.
    let body = app
        .ok(
            "POST",
            flags_narrow,
            HAMLET,
            &[
                ("anchor", "newest"),
                ("num_before", "10"),
                ("num_after", "0"),
                ("narrow", narrow),
                ("op", "add"),
                ("flag", "read"),
            ],
        )
        .await;
    assert_eq!(body["processed_count"], 5);
    assert_eq!(body["updated_count"], 0);
    // Removing through an empty narrow (all messages) touches the other topic too.
    let body = app
        .ok(
            "POST",
            flags_narrow,
            HAMLET,
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("num_after", "0"),
                ("narrow", "[]"),
                ("op", "remove"),
                ("flag", "read"),
            ],
        )
        .await;
    assert_eq!(body["first_processed_id"], other);
    assert_eq!(body["updated_count"], 0, "it was unread already");

    // Errors, in Zulip's order: required parameters first, then their values.
    let full = [
        ("anchor", "newest"),
        ("num_before", "1"),
        ("num_after", "0"),
        ("narrow", "[]"),
        ("op", "add"),
        ("flag", "read"),
    ];
    for missing in ["anchor", "num_before", "num_after", "narrow", "op", "flag"] {
        let params: Vec<(&str, &str)> = full
            .iter()
            .copied()
            .filter(|(k, _)| *k != missing)
            .collect();
        let body = app
            .err(
                "POST",
                flags_narrow,
                HAMLET,
                &params,
                400,
                "REQUEST_VARIABLE_MISSING",
                &format!("Missing '{missing}' argument"),
            )
            .await;
        assert_eq!(body["var_name"], missing);
    }
    let with = |key: &'static str, value: &'static str| -> Vec<(&'static str, &'static str)> {
        full.iter()
            .map(|(k, v)| if *k == key { (*k, value) } else { (*k, *v) })
            .collect()
    };
    for (params, msg) in [
        (with("anchor", "sideways"), "Invalid anchor"),
        (with("flag", "bogus"), "Invalid flag: 'bogus'"),
        (
            vec![
                ("anchor", "newest"),
                ("include_anchor", "false"),
                ("num_before", "1"),
                ("num_after", "1"),
                ("narrow", "[]"),
                ("op", "add"),
                ("flag", "read"),
            ],
            "The anchor can only be excluded at an end of the range",
        ),
    ] {
        app.err(
            "POST",
            flags_narrow,
            HAMLET,
            &params,
            400,
            "BAD_REQUEST",
            msg,
        )
        .await;
    }
    // Too large a range is cut to 5000 messages, not refused.
    let body = app
        .ok(
            "POST",
            flags_narrow,
            HAMLET,
            &[
                ("anchor", "newest"),
                ("num_before", "6000"),
                ("num_after", "0"),
                ("narrow", narrow),
                ("op", "add"),
                ("flag", "starred"),
            ],
        )
        .await;
    assert_eq!(body["processed_count"], 5);
    // GET /messages without an anchor.
    app.err(
        "GET",
        "/api/v1/messages",
        HAMLET,
        &[("num_before", "1")],
        400,
        "BAD_REQUEST",
        "Missing 'anchor' argument.",
    )
    .await;
    app.err(
        "GET",
        "/api/v1/messages",
        HAMLET,
        &[("anchor", "sideways")],
        400,
        "BAD_REQUEST",
        "Invalid anchor",
    )
    .await;
}

// ---------------------------------------------------------------- first_unread

#[actix_web::test]
async fn first_unread_anchor() {
    let app = TestApp::spawn().await;
    let a = send_stream(&app, IAGO, "Verona", "fu", "a").await;
    let b = send_stream(&app, IAGO, "Verona", "fu", "b").await;
    let c = send_stream(&app, IAGO, "Verona", "fu", "c").await;
    app.ok(
        "POST",
        "/api/v1/messages/flags",
        HAMLET,
        &[
            ("messages", &format!("[{a}]")),
            ("op", "add"),
            ("flag", "read"),
        ],
    )
    .await;
    let n = r#"[{"operator":"channel","operand":"Verona"}]"#;
    for params in [
        vec![("anchor", "first_unread")],
        vec![("use_first_unread_anchor", "true"), ("anchor", "oldest")],
    ] {
        let mut params = params;
        params.extend([("num_before", "1"), ("num_after", "1"), ("narrow", n)]);
        let body = fetch(&app, HAMLET, &params).await;
        assert_eq!(ids(&body), vec![a, b, c], "{params:?}");
        assert_eq!(body["anchor"], b);
        assert_eq!(body["found_anchor"], true);
        assert_eq!(body["found_oldest"], false);
        assert_eq!(body["found_newest"], false);
    }
    // The first unread of the narrow, not of everything.
    let d = send_stream(&app, IAGO, "Denmark", "fu", "not in the narrow").await;
    let _ = d;
    // Nothing unread: as `newest`.
    app.ok(
        "POST",
        "/api/v1/messages/flags",
        HAMLET,
        &[
            ("messages", &format!("[{b}, {c}]")),
            ("op", "add"),
            ("flag", "read"),
        ],
    )
    .await;
    let body = fetch(
        &app,
        HAMLET,
        &[
            ("anchor", "first_unread"),
            ("num_before", "2"),
            ("num_after", "2"),
            ("narrow", n),
        ],
    )
    .await;
    assert_eq!(ids(&body), vec![b, c]);
    assert_eq!(body["anchor"], json!(10_000_000_000_000_000u64));
    assert_eq!(body["found_anchor"], false);
    assert_eq!(body["found_newest"], true);
}

// ---------------------------------------------------------------- reactions

#[actix_web::test]
async fn reaction_emoji_checks_and_removal_events() {
    let app = TestApp::spawn().await;
    let id = send_stream(&app, IAGO, "Verona", "r", "react").await;
    let path = format!("/api/v1/messages/{id}/reactions");
    let queue = app.register(HAMLET, &[]).await;
    // Name and code must agree when both are given for a new reaction.
    app.err(
        "POST",
        &path,
        HAMLET,
        &[
            ("emoji_name", "octopus"),
            ("emoji_code", "1f600"),
            ("reaction_type", "unicode_emoji"),
        ],
        400,
        "BAD_REQUEST",
        "Invalid emoji name.",
    )
    .await;
    app.err(
        "POST",
        &path,
        HAMLET,
        &[
            ("emoji_name", "octopus"),
            ("emoji_code", "nope"),
            ("reaction_type", "unicode_emoji"),
        ],
        400,
        "BAD_REQUEST",
        "Invalid emoji code.",
    )
    .await;
    app.err(
        "POST",
        &path,
        HAMLET,
        &[
            ("emoji_name", "green_tick"),
            ("emoji_code", "999"),
            ("reaction_type", "realm_emoji"),
        ],
        400,
        "BAD_REQUEST",
        "Invalid custom emoji.",
    )
    .await;
    let tick_code = app.ok("GET", "/api/v1/realm/emoji", IAGO, &[]).await["emoji"]
        .as_object()
        .unwrap()
        .values()
        .find(|e| e["name"] == "green_tick")
        .expect("green_tick")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.err(
        "POST",
        &path,
        HAMLET,
        &[
            ("emoji_name", "red_tick"),
            ("emoji_code", &tick_code),
            ("reaction_type", "realm_emoji"),
        ],
        400,
        "BAD_REQUEST",
        "Invalid custom emoji name.",
    )
    .await;
    // A realm emoji in use, then deactivated: existing reactions can still be voted
    // for; new ones are refused.
    app.ok("POST", &path, OTHELLO, &[("emoji_name", "green_tick")])
        .await;
    let code = {
        let (m, _) = one(&app, HAMLET, id, &[]).await;
        m["reactions"][0]["emoji_code"].as_str().unwrap().to_owned()
    };
    app.ok("DELETE", "/api/v1/realm/emoji/green_tick", IAGO, &[])
        .await;
    app.err(
        "POST",
        &path,
        HAMLET,
        &[("emoji_name", "green_tick")],
        400,
        "BAD_REQUEST",
        "Emoji 'green_tick' does not exist",
    )
    .await;
    let other = send_stream(&app, IAGO, "Verona", "r", "no tick here").await;
    app.err(
        "POST",
        &format!("/api/v1/messages/{other}/reactions"),
        HAMLET,
        &[
            ("emoji_name", "green_tick"),
            ("emoji_code", &code),
            ("reaction_type", "realm_emoji"),
        ],
        400,
        "BAD_REQUEST",
        "This custom emoji has been deactivated.",
    )
    .await;
    app.ok(
        "POST",
        &path,
        HAMLET,
        &[
            ("emoji_name", "green_tick"),
            ("emoji_code", &code),
            ("reaction_type", "realm_emoji"),
        ],
    )
    .await;
    // Removal by code alone (with its type), and its event.
    app.ok("POST", &path, HAMLET, &[("emoji_name", "octopus")])
        .await;
    app.ok("DELETE", &path, HAMLET, &[("emoji_code", "1f419")])
        .await;
    app.ok(
        "DELETE",
        &path,
        HAMLET,
        &[("emoji_code", &code), ("reaction_type", "realm_emoji")],
    )
    .await;
    app.err(
        "DELETE",
        &path,
        HAMLET,
        &[("emoji_code", &code)],
        400,
        "BAD_REQUEST",
        "Reaction doesn't exist.",
    )
    .await;
    let hamlet = app.user_id(HAMLET).await;
    let events = app.events(HAMLET, &queue).await;
    let removes: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "reaction" && e["op"] == "remove")
        .collect();
    assert_eq!(removes.len(), 2, "{events:?}");
    let e = removes[0];
    assert_eq!(e["message_id"], id);
    assert_eq!(e["emoji_name"], "octopus");
    assert_eq!(e["emoji_code"], "1f419");
    assert_eq!(e["reaction_type"], "unicode_emoji");
    assert_eq!(e["user_id"], hamlet);
    assert_eq!(e["user"]["user_id"], hamlet);
    assert_eq!(removes[1]["reaction_type"], "realm_emoji");
    let (m, _) = one(&app, HAMLET, id, &[]).await;
    assert_eq!(m["reactions"].as_array().unwrap().len(), 1);
    assert_eq!(m["reactions"][0]["user_id"], app.user_id(OTHELLO).await);
}

// ---------------------------------------------------------------- client_gravatar

#[actix_web::test]
async fn client_gravatar_nulls_public_gravatars() {
    // In the development realm human users' emails are hidden (no client can compute
    // their gravatar); bots' emails are public.
    let app = TestApp::spawn().await;
    let computed = app.register(HAMLET, &[("client_gravatar", "true")]).await;
    let sent_urls = app.register(HAMLET, &[("client_gravatar", "false")]).await;
    let by_bot = send_stream(&app, BOT, "Verona", "avatars", "from a bot").await;
    let by_human = send_stream(&app, IAGO, "Verona", "avatars", "from a human").await;
    let n = r#"[{"operator":"topic","operand":"avatars"}]"#;
    let avatars = |body: &Value| -> Vec<Value> {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["avatar_url"].clone())
            .collect()
    };
    let default = fetch(
        &app,
        HAMLET,
        &[("anchor", "oldest"), ("num_after", "5"), ("narrow", n)],
    )
    .await;
    assert_eq!(ids(&default), vec![by_bot, by_human]);
    let urls = avatars(&default);
    assert_eq!(
        urls[0],
        Value::Null,
        "the bot's gravatar is left to the client"
    );
    assert!(urls[1]
        .as_str()
        .unwrap()
        .starts_with("https://secure.gravatar.com/avatar/"));
    let explicit = fetch(
        &app,
        HAMLET,
        &[
            ("anchor", "oldest"),
            ("num_after", "5"),
            ("narrow", n),
            ("client_gravatar", "false"),
        ],
    )
    .await;
    let urls = avatars(&explicit);
    assert!(urls[0]
        .as_str()
        .unwrap()
        .starts_with("https://secure.gravatar.com/avatar/"));
    assert_eq!(urls[1], avatars(&default)[1]);
    // GET /messages/{id} always computes for the client (Zulip: client_gravatar=True).
    let (m, _) = one(&app, HAMLET, by_bot, &[]).await;
    assert_eq!(m["avatar_url"], Value::Null);
    // Events follow each queue's choice.
    let event_avatar = |events: Vec<Value>, id: u64| -> Value {
        events
            .iter()
            .find(|e| e["type"] == "message" && e["message"]["id"] == id)
            .map(|e| e["message"]["avatar_url"].clone())
            .expect("message event")
    };
    assert_eq!(
        event_avatar(app.events(HAMLET, &computed).await, by_bot),
        Value::Null
    );
    assert_eq!(
        event_avatar(app.events(HAMLET, &sent_urls).await, by_bot),
        urls[0]
    );
    assert_eq!(
        event_avatar(app.events(HAMLET, &computed).await, by_human),
        urls[1]
    );
}

// ---------------------------------------------------------------- restart

#[actix_web::test]
async fn deleted_messages_stay_deleted_after_restart() {
    let mut app = TestApp::spawn_durable().await;
    let verona = app.stream_id("Verona").await;
    let kept = send_stream(&app, IAGO, "Verona", "kept", "kept").await;
    let gone = send_stream(&app, IAGO, "Verona", "gone", "gone").await;
    let also_gone = send_stream(&app, IAGO, "Verona", "kept", "also gone").await;
    app.ok(
        "POST",
        "/api/v1/messages/flags",
        HAMLET,
        &[
            ("messages", &format!("[{kept}]")),
            ("op", "add"),
            ("flag", "read"),
        ],
    )
    .await;
    assert_eq!(unread_count(&app, HAMLET).await, 2);
    for id in [gone, also_gone] {
        app.ok("DELETE", &format!("/api/v1/messages/{id}"), IAGO, &[])
            .await;
    }
    app.restart().await;
    for id in [gone, also_gone] {
        app.err(
            "GET",
            &format!("/api/v1/messages/{id}"),
            HAMLET,
            &[],
            400,
            "BAD_REQUEST",
            "Invalid message(s)",
        )
        .await;
    }
    let body = fetch(&app, HAMLET, &[("anchor", "newest"), ("num_before", "10")]).await;
    assert_eq!(ids(&body), vec![kept]);
    let topics = app
        .ok(
            "GET",
            &format!("/api/v1/users/me/{verona}/topics"),
            HAMLET,
            &[],
        )
        .await;
    assert_eq!(topics["topics"], json!([{"name": "kept", "max_id": kept}]));
    assert_eq!(unread_count(&app, HAMLET).await, 0);
    let reg = app
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("fetch_event_types", r#"["message"]"#)],
        )
        .await;
    assert_eq!(reg["max_message_id"], kept);
    // Ids are not reused.
    let next = send_stream(&app, IAGO, "Verona", "kept", "after").await;
    assert!(next > also_gone);
}

/// Narrow operators are read as Zulip's `NarrowBuilder` reads them, `-` as `_`: the
/// terminal client asks for `pm_with`, others for `pm-with`, `dm`, `group_pm_with` or
/// `dm-including`, all the same narrows; an unknown one is named as given.
#[actix_web::test]
async fn narrow_operators_read_dashes_as_underscores() {
    let app = TestApp::spawn().await;
    let hamlet = app.user_id(HAMLET).await;
    let othello = app.user_id(OTHELLO).await;
    let one = send_direct(&app, IAGO, &[hamlet], "to hamlet").await;
    let group = send_direct(&app, IAGO, &[hamlet, othello], "to both").await;
    for op in ["dm", "pm-with", "pm_with"] {
        let narrow = json!([[op, [hamlet]]]).to_string();
        let body = fetch(
            &app,
            IAGO,
            &[
                ("anchor", "newest"),
                ("num_before", "10"),
                ("num_after", "0"),
                ("narrow", &narrow),
            ],
        )
        .await;
        assert_eq!(ids(&body), [one], "{op}");
    }
    for op in [
        "dm-including",
        "dm_including",
        "group-pm-with",
        "group_pm_with",
    ] {
        let narrow = json!([[op, othello]]).to_string();
        let body = fetch(
            &app,
            IAGO,
            &[
                ("anchor", "newest"),
                ("num_before", "10"),
                ("num_after", "0"),
                ("narrow", &narrow),
            ],
        )
        .await;
        assert_eq!(ids(&body), [group], "{op}");
    }
    let narrow = json!([["pm_whom", [hamlet]]]).to_string();
    app.err(
        "GET",
        "/api/v1/messages",
        IAGO,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", &narrow),
        ],
        400,
        "BAD_NARROW",
        "Invalid narrow operator: unknown operator pm_whom",
    )
    .await;
}
