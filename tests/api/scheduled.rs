//! Scheduled messages (seed 4.2): create, list, edit with Zulip's check order, delete,
//! delivery on time with an injected clock, failure, and restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use hearth::realm::ManualClock;
use serde_json::{json, Value};
use std::time::Duration;

/// Zulip's text for an unknown `type` (`check_string_in_validator` through
/// `typed_endpoint`'s "Invalid {var_name}: {msg}").
const INVALID_TYPE: &str = "Invalid type: Value error, Not in the list of possible values";

async fn schedule(app: &TestApp, who: &str, params: &[(&str, &str)]) -> u64 {
    let body = app
        .ok("POST", "/api/v1/scheduled_messages", who, params)
        .await;
    body["scheduled_message_id"].as_u64().expect("id")
}

async fn list(app: &TestApp, who: &str) -> Vec<Value> {
    let body = app.ok("GET", "/api/v1/scheduled_messages", who, &[]).await;
    body["scheduled_messages"].as_array().unwrap().clone()
}

#[actix_web::test]
async fn create_list_edit_delete() {
    let app = TestApp::spawn_with_clock(ManualClock::new(START_MS)).await;
    let verona = app.stream_id("Verona").await.to_string();
    let later = (START + 3600).to_string();
    let id = schedule(
        &app,
        MEMBER,
        &[
            ("type", "stream"),
            ("to", &verona),
            ("topic", "plans"),
            ("content", "**soon**"),
            ("scheduled_delivery_timestamp", &later),
        ],
    )
    .await;
    let mine = list(&app, MEMBER).await;
    assert_eq!(
        mine,
        vec![
            json!({"scheduled_message_id": id, "type": "stream", "to": verona.parse::<u64>().unwrap(),
                    "topic": "plans", "content": "**soon**", "rendered_content": "<p><strong>soon</strong></p>",
                    "scheduled_delivery_timestamp": START + 3600, "failed": false})
        ]
    );
    assert!(list(&app, OTHELLO).await.is_empty());
    let path = format!("/api/v1/scheduled_messages/{id}");
    // Zulip's check order: nothing, type without to, channel type without topic, past
    // time, then the lookup.
    app.err(
        "PATCH",
        &path,
        MEMBER,
        &[],
        400,
        "BAD_REQUEST",
        "Nothing to change",
    )
    .await;
    app.err(
        "PATCH",
        "/api/v1/scheduled_messages/9999",
        MEMBER,
        &[],
        400,
        "BAD_REQUEST",
        "Nothing to change",
    )
    .await;
    app.err(
        "PATCH",
        &path,
        MEMBER,
        &[("type", "direct")],
        400,
        "BAD_REQUEST",
        "Recipient required when updating type of scheduled message.",
    )
    .await;
    app.err(
        "PATCH",
        &path,
        MEMBER,
        &[("type", "channel"), ("to", &verona)],
        400,
        "BAD_REQUEST",
        "Topic required when updating scheduled message type to channel.",
    )
    .await;
    let past = (START - 10).to_string();
    app.err(
        "PATCH",
        &path,
        MEMBER,
        &[("scheduled_delivery_timestamp", &past)],
        400,
        "BAD_REQUEST",
        "Scheduled delivery time must be in the future.",
    )
    .await;
    app.err(
        "PATCH",
        "/api/v1/scheduled_messages/9999",
        MEMBER,
        &[("content", "x")],
        404,
        "BAD_REQUEST",
        "Scheduled message does not exist",
    )
    .await;
    // Another user's is as good as missing.
    app.err(
        "PATCH",
        &path,
        OTHELLO,
        &[("content", "x")],
        404,
        "BAD_REQUEST",
        "Scheduled message does not exist",
    )
    .await;
    let body = app
        .err(
            "PATCH",
            &path,
            MEMBER,
            &[("type", "stream"), ("to", "9999"), ("topic", "t")],
            400,
            "STREAM_DOES_NOT_EXIST",
            "Channel with ID '9999' does not exist",
        )
        .await;
    assert_eq!(body["stream_id"], 9999);
    app.err(
        "PATCH",
        &path,
        MEMBER,
        &[("type", "direct"), ("to", "[9999]")],
        400,
        "BAD_REQUEST",
        "Invalid user ID 9999",
    )
    .await;
    // Topic rules: "(no topic)" and the display name are the empty topic.
    app.ok("PATCH", &path, MEMBER, &[("topic", "(no topic)")])
        .await;
    assert_eq!(list(&app, MEMBER).await[0]["topic"], "general chat");
    // Switch to a direct message: the topic goes; a topic given later is ignored.
    let othello = app.user_id(OTHELLO).await;
    let queue = app.register(MEMBER, &[]).await;
    app.ok(
        "PATCH",
        &path,
        MEMBER,
        &[("type", "direct"), ("to", &format!("[{othello}]"))],
    )
    .await;
    app.ok("PATCH", &path, MEMBER, &[("topic", "ignored")])
        .await;
    let s = &list(&app, MEMBER).await[0];
    assert_eq!(s["type"], "private");
    assert_eq!(s["to"], json!([othello]));
    assert!(s.get("topic").is_none());
    let events = app.events(MEMBER, &queue).await;
    assert!(events
        .iter()
        .any(|e| e["type"] == "scheduled_messages" && e["op"] == "update"));
    // Delete.
    app.ok("DELETE", &path, MEMBER, &[]).await;
    app.err(
        "DELETE",
        &path,
        MEMBER,
        &[],
        404,
        "BAD_REQUEST",
        "Scheduled message does not exist",
    )
    .await;
    assert!(list(&app, MEMBER).await.is_empty());
    // Create errors.
    app.err(
        "POST",
        "/api/v1/scheduled_messages",
        MEMBER,
        &[
            ("type", "stream"),
            ("to", &verona),
            ("topic", "t"),
            ("content", "x"),
            ("scheduled_delivery_timestamp", &past),
        ],
        400,
        "BAD_REQUEST",
        "Scheduled delivery time must be in the future.",
    )
    .await;
}

#[actix_web::test]
async fn delivered_on_time_and_failed_when_impossible() {
    let clock = ManualClock::new(START_MS);
    let mut app = TestApp::spawn_with_clock(clock.clone()).await;
    let verona = app.stream_id("Verona").await.to_string();
    let at = (START + 60).to_string();
    let id = schedule(
        &app,
        MEMBER,
        &[
            ("type", "stream"),
            ("to", &verona),
            ("topic", "later"),
            ("content", "on time"),
            ("scheduled_delivery_timestamp", &at),
        ],
    )
    .await;
    // Not yet.
    clock.advance_ms(59_000);
    app.deliver_scheduled().await;
    assert_eq!(list(&app, MEMBER).await.len(), 1);
    // Due: delivered, and gone from the list.
    clock.advance_ms(1_000);
    app.deliver_scheduled().await;
    assert!(list(&app, MEMBER).await.is_empty());
    let body = app
        .ok(
            "GET",
            "/api/v1/messages",
            OTHELLO,
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("narrow", r#"[{"operator":"channel","operand":"Verona"}]"#),
            ],
        )
        .await;
    assert_eq!(body["messages"][0]["content"], "<p>on time</p>");
    assert_eq!(body["messages"][0]["timestamp"], START + 60);
    let _ = id;
    // A channel archived before delivery: the message fails, and editing it requires a
    // new time.
    let created = app
        .ok(
            "POST",
            "/api/v1/channels/create",
            IAGO,
            &[
                ("name", "ephemeral"),
                ("subscribers", &format!("[{}]", app.user_id(MEMBER).await)),
            ],
        )
        .await;
    let eph = created["id"].as_i64().unwrap().to_string();
    let at = (START + 120).to_string();
    let id = schedule(
        &app,
        MEMBER,
        &[
            ("type", "stream"),
            ("to", &eph),
            ("topic", "t"),
            ("content", "doomed"),
            ("scheduled_delivery_timestamp", &at),
        ],
    )
    .await;
    app.ok("DELETE", &format!("/api/v1/streams/{eph}"), IAGO, &[])
        .await;
    clock.advance_ms(60_000);
    app.deliver_scheduled().await;
    let s = &list(&app, MEMBER).await[0];
    assert_eq!(s["failed"], true);
    let path = format!("/api/v1/scheduled_messages/{id}");
    app.err(
        "PATCH",
        &path,
        MEMBER,
        &[("content", "retry")],
        400,
        "BAD_REQUEST",
        "Scheduled delivery time must be in the future.",
    )
    .await;
    // Pending ones survive a restart and are delivered when due after it.
    let at = (START + 600).to_string();
    schedule(
        &app,
        MEMBER,
        &[
            ("type", "stream"),
            ("to", &verona),
            ("topic", "later"),
            ("content", "after restart"),
            ("scheduled_delivery_timestamp", &at),
        ],
    )
    .await;
    app.restart().await;
    assert_eq!(list(&app, MEMBER).await.len(), 2);
    clock.advance_ms(600_000);
    app.deliver_scheduled().await;
    let body = app
        .ok(
            "GET",
            "/api/v1/messages",
            OTHELLO,
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("narrow", r#"[{"operator":"channel","operand":"Verona"}]"#),
            ],
        )
        .await;
    assert_eq!(body["messages"][0]["content"], "<p>after restart</p>");
    // The failed one stays, failed.
    let rest = list(&app, MEMBER).await;
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0]["failed"], true);
}

/// A delivery decided while the message writer thread is behind reads the rows of every
/// earlier commit, as any rule does (the actor's rows port waits for the writer): here a
/// direct conversation's first message, committed but still queued for the writer when
/// the scheduled answer in it falls due, under a rule that lets only administrators
/// start conversations. Read from the message store directly, the delivery finds the
/// conversation empty and fails the message.
#[actix_web::test]
async fn a_delivery_while_the_message_writer_is_behind_reads_the_earlier_rows() {
    let clock = ManualClock::new(START_MS);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let (hamlet, othello) = (app.user_id(MEMBER).await, app.user_id(OTHELLO).await);
    // Scheduled while anyone may start a conversation.
    let id = schedule(
        &app,
        MEMBER,
        &[
            ("type", "direct"),
            ("to", &format!("[{othello}]")),
            ("content", "the scheduled answer"),
            ("scheduled_delivery_timestamp", &(START + 60).to_string()),
        ],
    )
    .await;
    let (othello_key, iago_key) = (app.api_key(OTHELLO).await, app.api_key(IAGO).await);
    let db = app.server().message_db();
    db.hold_writer_for_tests(true);
    // Each write is committed by the actor, its rows (if any) queued behind the hold;
    // its answer waits for them, so it runs on a task of its own until the release.
    let (pushed, _) = db.writer_counts_for_tests();
    let first = tokio::spawn(send(
        app.request(
            reqwest::Method::POST,
            "/api/v1/messages",
            Auth::Basic(OTHELLO, &othello_key),
        )
        .form(&[
            ("type", "direct"),
            ("to", &format!("[{hamlet}]")),
            ("content", "the first message"),
        ]),
    ));
    queued_after(&db, pushed).await;
    let (pushed, _) = db.writer_counts_for_tests();
    let only_admins = tokio::spawn(send(
        app.request(
            reqwest::Method::PATCH,
            "/api/v1/realm",
            Auth::Basic(IAGO, &iago_key),
        )
        .form(&[(
            "direct_message_initiator_group",
            format!(r#"{{"new": {ADMINS}}}"#),
        )]),
    ));
    // Committed after the first message, so marked written only behind it.
    queued_after(&db, pushed).await;
    // Due now; the delivery is decided while the first message's rows are queued.
    clock.advance_ms(60_000);
    let delivery = app.deliver_scheduled();
    tokio::pin!(delivery);
    // The actor waits for the writer before it reads: nothing is delivered while held.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut delivery)
            .await
            .is_err(),
        "delivered while the writer was held"
    );
    db.hold_writer_for_tests(false);
    delivery.await;
    let (status, _, body) = first.await.expect("the first message's task");
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = only_admins.await.expect("the setting's task");
    assert_eq!(status, 200, "{body}");
    // Delivered, not failed: the conversation held the first message.
    assert!(
        list(&app, MEMBER).await.is_empty(),
        "scheduled message {id} not delivered: {:?}",
        list(&app, MEMBER).await
    );
    let body = app
        .ok(
            "GET",
            "/api/v1/messages",
            OTHELLO,
            &[
                ("anchor", "newest"),
                ("num_before", "2"),
                (
                    "narrow",
                    &format!(r#"[{{"operator":"dm","operand":[{hamlet}]}}]"#),
                ),
            ],
        )
        .await;
    let contents: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["content"])
        .collect();
    assert_eq!(
        contents,
        [
            &json!("<p>the first message</p>"),
            &json!("<p>the scheduled answer</p>")
        ]
    );
    // And the rule was in force: Hamlet starts no new conversation.
    let cordelia = app.user_id(CORDELIA).await;
    let (status, body) = app
        .call(
            "POST",
            "/api/v1/messages",
            MEMBER,
            &[
                ("type", "direct"),
                ("to", &format!("[{cordelia}]")),
                ("content", "a new one"),
            ],
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["msg"],
        "You are not allowed to start direct message conversations."
    );
}

/// Waits until the writer thread was handed more than `before` pieces of work.
async fn queued_after(db: &hearth::storage::messages::MessageDb, before: u64) {
    poll(
        Duration::from_secs(10),
        "a commit queued for the writer",
        || async move { (db.writer_counts_for_tests().0 > before).then_some(()) },
    )
    .await
}

/// Starts `app` again on its folder and manual clock with the 1 s ticker on (the
/// harness turns it off under a manual clock): deliveries then happen on their own.
async fn start_ticking(app: &mut TestApp) {
    let mut config = hearth::config::ServeConfig::for_tests(app.dir.path().to_path_buf());
    config.tick = true;
    let running = start_server_with(config, app.clock.as_ref()).await;
    app.url = running.url();
    app.running = Some(running);
}

/// The newest message of the Verona channel as Othello sees it.
async fn newest_in_verona(app: &TestApp) -> Value {
    let body = app
        .ok(
            "GET",
            "/api/v1/messages",
            OTHELLO,
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("narrow", r#"[{"operator":"channel","operand":"Verona"}]"#),
            ],
        )
        .await;
    body["messages"][0].clone()
}

#[actix_web::test]
async fn due_while_stopped_is_delivered_at_start() {
    let clock = ManualClock::new(START_MS);
    let mut app = TestApp::spawn_with_clock(clock.clone()).await;
    let verona = app.stream_id("Verona").await.to_string();
    let at = |secs: i64| (START + secs).to_string();
    let mut ids = Vec::new();
    for (content, due) in [("stale", 99), ("late", 100), ("pending", 3600)] {
        ids.push(
            schedule(
                &app,
                MEMBER,
                &[
                    ("type", "stream"),
                    ("to", &verona),
                    ("topic", "downtime"),
                    ("content", content),
                    ("scheduled_delivery_timestamp", &at(due)),
                ],
            )
            .await,
        );
    }
    let (stale, late, pending) = (ids[0], ids[1], ids[2]);
    // Down from START to START + 700: "late" is 600 s late at the start, Zulip's cutoff
    // exactly; "stale" is 601 s late.
    app.stop().await;
    clock.advance_ms(700_000);
    start_ticking(&mut app).await;
    // No manual delivery: the ticker's first checks after the start do it.
    let rest = poll(
        std::time::Duration::from_secs(10),
        "delivery at start",
        || {
            let app = &app;
            async move {
                let rest = list(app, MEMBER).await;
                (!rest.iter().any(|s| s["scheduled_message_id"] == late)).then_some(rest)
            }
        },
    )
    .await;
    let m = newest_in_verona(&app).await;
    assert_eq!(m["content"], "<p>late</p>");
    assert_eq!(m["subject"], "downtime");
    // Sent now, as Zulip's worker sends it: the time of delivery, not the due time.
    assert_eq!(m["timestamp"], START + 700);
    assert_eq!(m["client"], "Scheduled message");
    // Too late: failed, kept, not sent; the future one waits.
    let by_id = |id: u64| {
        rest.iter()
            .find(|s| s["scheduled_message_id"] == id)
            .cloned()
    };
    assert_eq!(rest.len(), 2, "{rest:?}");
    assert_eq!(by_id(stale).expect("stale kept")["failed"], true);
    assert_eq!(by_id(pending).expect("pending kept")["failed"], false);
    let body = app
        .ok(
            "GET",
            "/api/v1/messages",
            OTHELLO,
            &[
                ("anchor", "newest"),
                ("num_before", "10"),
                ("narrow", r#"[{"operator":"search","operand":"stale"}]"#),
            ],
        )
        .await;
    assert_eq!(body["messages"], json!([]));
    // And it stays so after another restart (the delivery was a committed write).
    app.stop().await;
    start_ticking(&mut app).await;
    assert_eq!(list(&app, MEMBER).await, rest);
    assert_eq!(newest_in_verona(&app).await["id"], m["id"]);
}

#[actix_web::test]
async fn the_ticker_delivers_on_time() {
    // The real clock and the real 1 s ticker.
    let app = TestApp::spawn().await;
    let verona = app.stream_id("Verona").await.to_string();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let due = now + 2;
    let id = schedule(
        &app,
        MEMBER,
        &[
            ("type", "stream"),
            ("to", &verona),
            ("topic", "ticking"),
            ("content", "on the tick"),
            ("scheduled_delivery_timestamp", &due.to_string()),
        ],
    )
    .await;
    let queue = app.register(MEMBER, &[]).await;
    let m = poll(
        std::time::Duration::from_secs(10),
        "the ticker's delivery",
        || {
            let app = &app;
            async move {
                let m = newest_in_verona(app).await;
                (m["content"] == "<p>on the tick</p>").then_some(m)
            }
        },
    )
    .await;
    assert!(m["timestamp"].as_i64().unwrap() >= due);
    assert!(list(&app, MEMBER).await.is_empty());
    let events = app.events(MEMBER, &queue).await;
    assert!(
        events.iter().any(|e| e["type"] == "scheduled_messages"
            && e["op"] == "remove"
            && e["scheduled_message_id"] == id),
        "{events:?}"
    );
    assert!(events
        .iter()
        .any(|e| e["type"] == "message" && e["message"]["id"] == m["id"]));
}

/// `POST /scheduled_messages` refusals, in Zulip's words, and the `scheduled_messages`
/// events of a create, a delete, a delivery and a failed delivery.
#[actix_web::test]
async fn create_errors_and_events() {
    let clock = ManualClock::new(START_MS);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let verona = app.stream_id("Verona").await;
    let othello = app.user_id(OTHELLO).await;
    let at = (START + 60).to_string();
    let create = |params: Vec<(&'static str, String)>| {
        let mut all = vec![
            ("type", "stream".to_owned()),
            ("to", verona.to_string()),
            ("topic", "t".to_owned()),
            ("content", "c".to_owned()),
            ("scheduled_delivery_timestamp", at.clone()),
        ];
        for (k, v) in params {
            all.retain(|(name, _)| *name != k);
            if !v.is_empty() || k == "content" {
                all.push((k, v));
            }
        }
        all
    };
    let drop = |k: &'static str| (k, String::new());
    type Refusal = (Vec<(&'static str, String)>, &'static str, String);
    let cases: Vec<Refusal> = vec![
        (
            create(vec![("type", "bogus".into())]),
            "BAD_REQUEST",
            INVALID_TYPE.into(),
        ),
        // The type is checked before anything else is read.
        (
            create(vec![("type", "bogus".into()), drop("to")]),
            "BAD_REQUEST",
            INVALID_TYPE.into(),
        ),
        (
            create(vec![drop("type")]),
            "REQUEST_VARIABLE_MISSING",
            "Missing 'type' argument".into(),
        ),
        (
            create(vec![drop("to")]),
            "REQUEST_VARIABLE_MISSING",
            "Missing 'to' argument".into(),
        ),
        (
            create(vec![("content", String::new())]),
            "BAD_REQUEST",
            "Message must not be empty".into(),
        ),
        (
            create(vec![("content", "  \n ".into())]),
            "BAD_REQUEST",
            "Message must not be empty".into(),
        ),
        (
            create(vec![("type", "private".into()), ("to", "[9999]".into())]),
            "BAD_REQUEST",
            "Invalid user ID 9999".into(),
        ),
        (
            create(vec![
                ("type", "direct".into()),
                ("to", format!("[{othello}, 9999]")),
            ]),
            "BAD_REQUEST",
            "Invalid user ID 9999".into(),
        ),
        (
            create(vec![("scheduled_delivery_timestamp", START.to_string())]),
            "BAD_REQUEST",
            "Scheduled delivery time must be in the future.".into(),
        ),
    ];
    for (params, code, msg) in &cases {
        let form: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        app.err(
            "POST",
            "/api/v1/scheduled_messages",
            MEMBER,
            &form,
            400,
            code,
            msg,
        )
        .await;
    }
    // An unknown channel names its id, for a number and for a list of one.
    for to in ["9999", "[9999]"] {
        let params = create(vec![("to", to.into())]);
        let form: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let body = app
            .err(
                "POST",
                "/api/v1/scheduled_messages",
                MEMBER,
                &form,
                400,
                "STREAM_DOES_NOT_EXIST",
                "Channel with ID '9999' does not exist",
            )
            .await;
        assert_eq!(body["stream_id"], 9999);
    }
    assert!(list(&app, MEMBER).await.is_empty());

    // Events, on a queue registered for them.
    let queue = app
        .register(MEMBER, &[("event_types", r#"["scheduled_messages"]"#)])
        .await;
    // `to` as a list of one channel id, and the legacy `private` type.
    let by_list = create(vec![("to", format!("[{verona}]"))]);
    let f: Vec<(&str, &str)> = by_list.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let a = schedule(&app, MEMBER, &f).await;
    let dm = create(vec![
        ("type", "private".into()),
        ("to", format!("[{othello}]")),
        ("topic", String::new()),
    ]);
    let f: Vec<(&str, &str)> = dm.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let b = schedule(&app, MEMBER, &f).await;
    let listed = list(&app, MEMBER).await;
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["to"], verona);
    assert_eq!(listed[1]["type"], "private");
    assert_eq!(listed[1]["to"], json!([othello]));
    let got = app.events(MEMBER, &queue).await;
    assert_eq!(got.len(), 2, "{got:?}");
    for (event, entry) in got.iter().zip(&listed) {
        let mut e = event.clone();
        e.as_object_mut().unwrap().remove("id");
        assert_eq!(
            e,
            json!({"type": "scheduled_messages", "op": "add", "scheduled_messages": [entry]})
        );
    }
    // Deleted: removed.
    app.ok(
        "DELETE",
        &format!("/api/v1/scheduled_messages/{b}"),
        MEMBER,
        &[],
    )
    .await;
    let got = app.events(MEMBER, &queue).await;
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(
        got[2],
        json!({"type": "scheduled_messages", "op": "remove", "scheduled_message_id": b, "id": 2})
    );
    // Delivered: removed too.
    clock.advance_ms(60_000);
    app.deliver_scheduled().await;
    let got = app.events(MEMBER, &queue).await;
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(
        got[3],
        json!({"type": "scheduled_messages", "op": "remove", "scheduled_message_id": a, "id": 3})
    );
    // Failed (its channel archived): updated, with `failed`.
    let created = app
        .ok(
            "POST",
            "/api/v1/channels/create",
            IAGO,
            &[
                ("name", "ephemeral"),
                ("subscribers", &format!("[{}]", app.user_id(MEMBER).await)),
            ],
        )
        .await;
    let eph = created["id"].as_i64().unwrap();
    let at = (START + 120).to_string();
    let c = schedule(
        &app,
        MEMBER,
        &[
            ("type", "channel"),
            ("to", &eph.to_string()),
            ("topic", "t"),
            ("content", "doomed"),
            ("scheduled_delivery_timestamp", &at),
        ],
    )
    .await;
    app.ok("DELETE", &format!("/api/v1/streams/{eph}"), IAGO, &[])
        .await;
    clock.advance_ms(60_000);
    app.deliver_scheduled().await;
    let got = app.events(MEMBER, &queue).await;
    assert_eq!(got.len(), 6, "{got:?}");
    assert_eq!(got[4]["op"], "add");
    assert_eq!(
        got[5],
        json!({"type": "scheduled_messages", "op": "update", "id": 5,
               "scheduled_message": {"scheduled_message_id": c, "type": "stream", "to": eph,
                   "topic": "t", "content": "doomed", "rendered_content": "<p>doomed</p>",
                   "scheduled_delivery_timestamp": START + 120, "failed": true}})
    );
    assert_eq!(
        list(&app, MEMBER).await,
        vec![got[5]["scheduled_message"].clone()]
    );
}

/// `PATCH /scheduled_messages/{id}` refuses an unknown `type` in the same words as
/// `POST /scheduled_messages`, before "Nothing to change"-style checks and the lookup.
#[actix_web::test]
async fn edit_with_unknown_type() {
    let app = TestApp::spawn_with_clock(ManualClock::new(START_MS)).await;
    let later = (START + 3600).to_string();
    app.err(
        "POST",
        "/api/v1/scheduled_messages",
        MEMBER,
        &[
            ("type", "bogus"),
            ("to", "[12]"),
            ("content", "x"),
            ("scheduled_delivery_timestamp", &later),
        ],
        400,
        "BAD_REQUEST",
        INVALID_TYPE,
    )
    .await;
    let id = schedule(
        &app,
        MEMBER,
        &[
            ("type", "direct"),
            ("to", "[12]"),
            ("content", "x"),
            ("scheduled_delivery_timestamp", &later),
        ],
    )
    .await;
    for path in [
        format!("/api/v1/scheduled_messages/{id}"),
        "/api/v1/scheduled_messages/9999".to_owned(),
    ] {
        for params in [
            &[("type", "bogus"), ("to", "[12]")][..],
            &[("type", "bogus")][..],
        ] {
            app.err(
                "PATCH",
                &path,
                MEMBER,
                params,
                400,
                "BAD_REQUEST",
                INVALID_TYPE,
            )
            .await;
        }
    }
}
