//! Message events beyond the recipients' own: `all_public_streams` queues, per-user
//! `flags` on `update_message`, and Notification Bot messages about moved messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::{json, Value};

/// The `message` events of a queue: (message id, flags).
async fn message_events(app: &TestApp, who: &str, queue: &str) -> Vec<(u64, Vec<String>)> {
    app.events(who, queue)
        .await
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| {
            let flags = e["flags"]
                .as_array()
                .expect("flags")
                .iter()
                .map(|f| f.as_str().expect("a flag").to_owned())
                .collect();
            (e["message"]["id"].as_u64().expect("id"), flags)
        })
        .collect()
}

#[actix_web::test]
async fn all_public_streams_queues_receive_every_public_channel_message() {
    let app = TestApp::spawn().await;
    let firehose = [("all_public_streams", "true")];
    let hamlet_all = app.register(HAMLET, &firehose).await;
    let hamlet_own = app.register(HAMLET, &[]).await;
    let bot_all = app.register(BOT, &firehose).await;
    let only_messages = app
        .register(
            HAMLET,
            &[
                ("all_public_streams", "true"),
                ("event_types", r#"["message"]"#),
            ],
        )
        .await;

    // "sandbox" is public and only Desdemona is subscribed.
    let sandbox = send_stream(&app, DESDEMONA, "sandbox", "t", "hello sandbox").await;
    // "core team" is private: never sent to queues of users outside it.
    send_stream(&app, DESDEMONA, "core team", "t", "secret").await;
    // Hamlet receives this one: once, with his own flags.
    let verona = send_stream(&app, DESDEMONA, "Verona", "t", "hi @**King Hamlet**").await;

    assert_eq!(
        message_events(&app, HAMLET, &hamlet_all).await,
        vec![(sandbox, vec![]), (verona, vec!["mentioned".to_owned()])]
    );
    assert_eq!(
        message_events(&app, HAMLET, &hamlet_own).await,
        vec![(verona, vec!["mentioned".to_owned()])]
    );
    assert_eq!(
        message_events(&app, HAMLET, &only_messages).await,
        vec![(sandbox, vec![]), (verona, vec!["mentioned".to_owned()])]
    );
    // The bot is in neither channel.
    assert_eq!(
        message_events(&app, BOT, &bot_all).await,
        vec![(sandbox, vec![]), (verona, vec![])]
    );
    let e = app
        .events(HAMLET, &hamlet_all)
        .await
        .into_iter()
        .find(|e| e["type"] == "message")
        .expect("a message event");
    assert_eq!(e["message"]["display_recipient"], "sandbox");
    assert_eq!(e["message"]["content"], "hello sandbox");

    // The queue's narrow still applies.
    let narrowed = app
        .register(
            HAMLET,
            &[
                ("all_public_streams", "true"),
                ("narrow", r#"[["stream", "sandbox"]]"#),
            ],
        )
        .await;
    send_stream(&app, DESDEMONA, "Verona", "t", "not in the narrow").await;
    let again = send_stream(&app, DESDEMONA, "sandbox", "t", "in the narrow").await;
    assert_eq!(
        message_events(&app, HAMLET, &narrowed).await,
        vec![(again, vec![])]
    );

    // Direct messages never reach a queue for their non-recipients.
    let dm_queue = app.register(OTHELLO, &firehose).await;
    let target = app.user_id(CORDELIA).await.to_string();
    app.ok(
        "POST",
        "/api/v1/messages",
        DESDEMONA,
        &[
            ("type", "direct"),
            ("to", &format!("[{target}]")),
            ("content", "psst"),
        ],
    )
    .await;
    assert!(message_events(&app, OTHELLO, &dm_queue).await.is_empty());
}

#[actix_web::test]
async fn guests_may_not_ask_for_all_public_streams() {
    let app = TestApp::spawn().await;
    let msg = "User not authorized for this query";
    let firehose = [("all_public_streams", "true")];
    app.err(
        "POST",
        "/api/v1/register",
        GUEST,
        &firehose,
        400,
        "BAD_REQUEST",
        msg,
    )
    .await;
    app.err(
        "GET",
        "/api/v1/events",
        GUEST,
        &[("all_public_streams", "true"), ("dont_block", "true")],
        400,
        "BAD_REQUEST",
        msg,
    )
    .await;
    // `false` is fine, for a guest too.
    app.register(GUEST, &[("all_public_streams", "false")])
        .await;

    // A user who becomes a guest stops receiving other channels' messages.
    let queue = app.register(HAMLET, &firehose).await;
    let hamlet = app.user_id(HAMLET).await;
    app.ok(
        "PATCH",
        &format!("/api/v1/users/{hamlet}"),
        ADMIN,
        &[("role", "600")],
    )
    .await;
    send_stream(&app, DESDEMONA, "sandbox", "t", "after the demotion").await;
    assert!(message_events(&app, HAMLET, &queue).await.is_empty());
}

/// The flags of each `update_message` event in a queue.
async fn update_flags(app: &TestApp, who: &str, queue: &str) -> Vec<Vec<String>> {
    app.events(who, queue)
        .await
        .iter()
        .filter(|e| e["type"] == "update_message")
        .map(|e| {
            e["flags"]
                .as_array()
                .unwrap_or_else(|| panic!("flags in {e}"))
                .iter()
                .map(|f| f.as_str().expect("a flag").to_owned())
                .collect()
        })
        .collect()
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[actix_web::test]
async fn update_message_events_carry_each_users_flags() {
    let app = TestApp::spawn().await;
    let id = send_stream(&app, IAGO, "Verona", "flags", "hi @**King Hamlet**").await;
    app.ok(
        "POST",
        "/api/v1/messages/flags",
        HAMLET,
        &[
            ("messages", &format!("[{id}]")),
            ("op", "add"),
            ("flag", "starred"),
        ],
    )
    .await;
    // Subscribed after the message was sent: no row for it, yet told as a subscriber.
    app.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        BOT,
        &[("subscriptions", r#"[{"name": "Verona"}]"#)],
    )
    .await;
    let queues = [
        (HAMLET, app.register(HAMLET, &[]).await),
        (OTHELLO, app.register(OTHELLO, &[]).await),
        (IAGO, app.register(IAGO, &[]).await),
        (BOT, app.register(BOT, &[]).await),
    ];
    let path = format!("/api/v1/messages/{id}");
    app.ok("PATCH", &path, IAGO, &[("content", "hi @**King Hamlet**!")])
        .await;
    app.ok(
        "PATCH",
        &path,
        IAGO,
        &[
            ("topic", "flags moved"),
            ("send_notification_to_new_thread", "false"),
        ],
    )
    .await;
    let expected = [
        (HAMLET, strings(&["starred", "mentioned"])),
        (OTHELLO, strings(&[])),
        // The sender's message is unread for them (an API client's default).
        (IAGO, strings(&[])),
        (BOT, strings(&["read"])),
    ];
    for ((who, queue), (_, flags)) in queues.iter().zip(expected) {
        assert_eq!(
            update_flags(&app, who, queue).await,
            vec![flags.clone(), flags],
            "{who}"
        );
    }

    // Direct messages too.
    let hamlet = app.user_id(HAMLET).await;
    let body = app
        .ok(
            "POST",
            "/api/v1/messages",
            IAGO,
            &[
                ("type", "direct"),
                ("to", &format!("[{hamlet}]")),
                ("content", "a direct one"),
            ],
        )
        .await;
    let dm = body["id"].as_u64().expect("id");
    let queue = app.register(HAMLET, &[]).await;
    app.ok(
        "PATCH",
        &format!("/api/v1/messages/{dm}"),
        IAGO,
        &[("content", "a direct one, edited")],
    )
    .await;
    assert_eq!(update_flags(&app, HAMLET, &queue).await, vec![strings(&[])]);
}

/// The newest messages of a channel topic, oldest first: (sender email, content).
async fn topic_messages(app: &TestApp, who: &str, channel: &str, topic: &str) -> Vec<Value> {
    let narrow = serde_json::json!([
        {"operator": "channel", "operand": channel},
        {"operator": "topic", "operand": topic},
    ])
    .to_string();
    let body = app
        .ok(
            "GET",
            "/api/v1/messages",
            who,
            &[
                ("anchor", "newest"),
                ("num_before", "20"),
                ("num_after", "0"),
                ("narrow", &narrow),
                ("apply_markdown", "false"),
            ],
        )
        .await;
    body["messages"].as_array().expect("messages").clone()
}

fn from_bot(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["sender_email"] == "notification-bot@zulip.com")
        .map(|m| m["content"].as_str().expect("content").to_owned())
        .collect()
}

#[actix_web::test]
async fn moving_messages_leaves_notification_bot_messages() {
    let mut app = TestApp::spawn().await;
    let iago = app.user_id(IAGO).await;
    let me = format!("@_**Iago|{iago}**");
    let verona = app.stream_id("Verona").await;
    let hamlet_queue = app.register(HAMLET, &[]).await;

    // A whole topic, with the defaults: only the new thread is told.
    let first = send_stream(&app, HAMLET, "Verona", "old", "one").await;
    send_stream(&app, HAMLET, "Verona", "old", "two").await;
    let reply = app
        .ok(
            "PATCH",
            &format!("/api/v1/messages/{first}"),
            IAGO,
            &[("topic", "new"), ("propagate_mode", "change_all")],
        )
        .await;
    assert!(
        reply.get("ignored_parameters_unsupported").is_none(),
        "{reply}"
    );
    let new = topic_messages(&app, IAGO, "Verona", "new").await;
    assert_eq!(
        from_bot(&new),
        vec![format!(
            "This topic was moved here from #**Verona>old** by {me}."
        )]
    );
    let notice = new.last().expect("the notice");
    assert_eq!(notice["sender_full_name"], "Notification Bot");
    assert_eq!(notice["sender_realm_str"], "zulipinternal");
    assert_eq!(notice["client"], "Internal");
    // Read for the mover, unread for the others.
    assert!(notice["flags"].as_array().unwrap().contains(&"read".into()));
    let hamlet_view = topic_messages(&app, HAMLET, "Verona", "new").await;
    assert_eq!(hamlet_view.last().unwrap()["flags"], serde_json::json!([]));
    let rendered = app
        .ok(
            "GET",
            &format!("/api/v1/messages/{}", notice["id"]),
            HAMLET,
            &[],
        )
        .await;
    let html = rendered["message"]["content"].as_str().unwrap();
    assert!(html.contains("class=\"stream-topic\""), "{html}");
    assert!(html.contains("user-mention silent"), "{html}");
    // The `message` event follows the `update_message` one.
    let kinds: Vec<String> = app
        .events(HAMLET, &hamlet_queue)
        .await
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kinds,
        vec!["message", "message", "update_message", "message"]
    );

    // One message of two, both threads told.
    let a = send_stream(&app, HAMLET, "Verona", "old2", "a").await;
    send_stream(&app, HAMLET, "Verona", "old2", "b").await;
    app.ok(
        "PATCH",
        &format!("/api/v1/messages/{a}"),
        IAGO,
        &[
            ("topic", "new2"),
            ("send_notification_to_old_thread", "true"),
        ],
    )
    .await;
    let body = app.ok("GET", "/api/v1/server_settings", IAGO, &[]).await;
    let realm_url = body["realm_url"].as_str().unwrap().to_owned();
    assert_eq!(
        from_bot(&topic_messages(&app, IAGO, "Verona", "new2").await),
        vec![format!(
            "[A message]({realm_url}/#narrow/channel/{verona}-Verona/topic/new2/near/{a}) \
             was moved here from #**Verona>old2** by {me}."
        )]
    );
    assert_eq!(
        from_bot(&topic_messages(&app, IAGO, "Verona", "old2").await),
        vec![format!(
            "A message was moved from this topic to #**Verona>new2** by {me}."
        )]
    );

    // Two of three, into a topic that has messages, across channels.
    send_stream(&app, IAGO, "Verona", "old3", "x").await;
    let y = send_stream(&app, IAGO, "Verona", "old3", "y").await;
    send_stream(&app, IAGO, "Verona", "old3", "z").await;
    send_stream(&app, IAGO, "Denmark", "there", "already").await;
    app.ok(
        "PATCH",
        &format!("/api/v1/messages/{y}"),
        IAGO,
        &[
            ("topic", "there"),
            ("stream_id", &app.stream_id("Denmark").await.to_string()),
            ("propagate_mode", "change_later"),
            ("send_notification_to_old_thread", "true"),
        ],
    )
    .await;
    assert_eq!(
        from_bot(&topic_messages(&app, IAGO, "Denmark", "there").await),
        vec![format!(
            "2 messages were moved here from #**Verona>old3** by {me}."
        )]
    );
    assert_eq!(
        from_bot(&topic_messages(&app, IAGO, "Verona", "old3").await),
        vec![format!(
            "2 messages were moved from this topic to #**Denmark>there** by {me}."
        )]
    );

    // Resolving a topic is no move for the new thread (only the resolve notice is
    // sent there); opting out sends nothing.
    let r = send_stream(&app, IAGO, "Verona", "bug", "broken").await;
    app.ok(
        "PATCH",
        &format!("/api/v1/messages/{r}"),
        IAGO,
        &[("topic", "✔ bug"), ("propagate_mode", "change_all")],
    )
    .await;
    assert_eq!(
        from_bot(&topic_messages(&app, IAGO, "Verona", "✔ bug").await),
        vec![format!("{me} has marked this topic as resolved.")]
    );
    let q = send_stream(&app, IAGO, "Verona", "quiet", "hush").await;
    app.ok(
        "PATCH",
        &format!("/api/v1/messages/{q}"),
        IAGO,
        &[
            ("topic", "quieter"),
            ("send_notification_to_new_thread", "false"),
        ],
    )
    .await;
    assert!(from_bot(&topic_messages(&app, IAGO, "Verona", "quieter").await).is_empty());
    app.err(
        "PATCH",
        &format!("/api/v1/messages/{q}"),
        IAGO,
        &[("topic", "x"), ("send_notification_to_old_thread", "5")],
        400,
        "BAD_REQUEST",
        "send_notification_to_old_thread is not a boolean",
    )
    .await;

    // The notices are messages like any other: they survive a restart.
    app.restart().await;
    assert_eq!(
        from_bot(&topic_messages(&app, IAGO, "Verona", "new").await),
        vec![format!(
            "This topic was moved here from #**Verona>old** by {me}."
        )]
    );
}

#[actix_web::test]
async fn register_lists_the_notification_bot_among_cross_realm_bots() {
    let app = TestApp::spawn().await;
    let body = app.ok("POST", "/api/v1/register", HAMLET, &[]).await;
    let bots = body["cross_realm_bots"]
        .as_array()
        .expect("cross_realm_bots");
    // The Notification Bot and the Welcome Bot, by full name (`onboarding.rs`).
    assert_eq!(bots.len(), 2, "{bots:?}");
    assert_eq!(bots[0]["email"], "notification-bot@zulip.com");
    assert_eq!(bots[0]["full_name"], "Notification Bot");
    assert_eq!(bots[0]["is_bot"], true);
    assert_eq!(bots[0]["is_system_bot"], true);
    // Not a user of the realm.
    let users = app.ok("GET", "/api/v1/users", HAMLET, &[]).await;
    assert!(!users["members"]
        .as_array()
        .unwrap()
        .iter()
        .any(|u| u["email"] == "notification-bot@zulip.com"));
}

/// A content edit recomputes the mention flags of every recipient (Zulip's
/// `update_user_message_flags`): a user mentioned by the edit gets `mentioned` (in the
/// message, in `update_message`'s flags and in `/register`'s unread mentions), a user
/// no longer mentioned loses it, and their other flags stay.
#[actix_web::test]
async fn a_content_edit_recomputes_mention_flags() {
    let app = TestApp::spawn().await;
    let id = send_stream(&app, IAGO, "Verona", "mentions", "hello").await;
    app.ok(
        "POST",
        "/api/v1/messages/flags",
        OTHELLO,
        &[
            ("messages", &format!("[{id}]")),
            ("op", "add"),
            ("flag", "starred"),
        ],
    )
    .await;
    let flags_of = |body: &Value| -> Vec<String> {
        body["message"]["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_owned())
            .collect()
    };
    let path = format!("/api/v1/messages/{id}");
    assert_eq!(
        flags_of(&app.ok("GET", &path, OTHELLO, &[]).await),
        ["starred"]
    );
    let queue = app.register(OTHELLO, &[]).await;
    app.ok(
        "PATCH",
        &path,
        IAGO,
        &[("content", "hello @**Othello, the Moor of Venice**")],
    )
    .await;
    assert_eq!(
        flags_of(&app.ok("GET", &path, OTHELLO, &[]).await),
        ["starred", "mentioned"]
    );
    assert_eq!(
        update_flags(&app, OTHELLO, &queue).await,
        vec![strings(&["starred", "mentioned"])]
    );
    let reg = app.ok("POST", "/api/v1/register", OTHELLO, &[]).await;
    assert!(
        reg["unread_msgs"]["mentions"]
            .as_array()
            .unwrap()
            .contains(&json!(id)),
        "{}",
        reg["unread_msgs"]
    );
    // Hamlet, not mentioned, keeps his flags.
    assert_eq!(
        flags_of(&app.ok("GET", &path, HAMLET, &[]).await),
        Vec::<String>::new()
    );
    // A wildcard that comes concerns every recipient; with it unchanged, only the
    // users mentioned before or after change.
    app.ok("PATCH", &path, IAGO, &[("content", "@**all** hello")])
        .await;
    let wildcard = ["stream_wildcard_mentioned", "wildcard_mentioned"];
    assert_eq!(flags_of(&app.ok("GET", &path, HAMLET, &[]).await), wildcard);
    let mut starred_wildcard = vec!["starred"];
    starred_wildcard.extend(wildcard);
    assert_eq!(
        flags_of(&app.ok("GET", &path, OTHELLO, &[]).await),
        starred_wildcard
    );
    app.ok(
        "PATCH",
        &path,
        IAGO,
        &[("content", "@**all** hi @**King Hamlet**")],
    )
    .await;
    let mut mentioned_wildcard = vec!["mentioned"];
    mentioned_wildcard.extend(wildcard);
    assert_eq!(
        flags_of(&app.ok("GET", &path, HAMLET, &[]).await),
        mentioned_wildcard
    );
    assert_eq!(
        flags_of(&app.ok("GET", &path, OTHELLO, &[]).await),
        starred_wildcard
    );
    app.ok("PATCH", &path, IAGO, &[("content", "bye")]).await;
    assert_eq!(
        flags_of(&app.ok("GET", &path, HAMLET, &[]).await),
        Vec::<String>::new()
    );
    assert_eq!(
        flags_of(&app.ok("GET", &path, OTHELLO, &[]).await),
        ["starred"]
    );
    let reg = app.ok("POST", "/api/v1/register", OTHELLO, &[]).await;
    assert!(!reg["unread_msgs"]["mentions"]
        .as_array()
        .unwrap()
        .contains(&json!(id)));
}

/// PATCH a message's topic (the whole topic), as `who`, with extra parameters.
async fn retopic(app: &TestApp, who: &str, id: u64, topic: &str, extra: &[(&str, &str)]) {
    let mut params = vec![("topic", topic), ("propagate_mode", "change_all")];
    params.extend_from_slice(extra);
    app.ok("PATCH", &format!("/api/v1/messages/{id}"), who, &params)
        .await;
}

#[actix_web::test]
async fn resolving_a_topic_sends_a_notice_that_a_quick_undo_deletes() {
    let clock = hearth::realm::ManualClock::new(1_795_238_601_000);
    let mut app = TestApp::spawn_with_clock(clock.clone()).await;
    let iago = app.user_id(IAGO).await;
    let me = format!("@_**Iago|{iago}**");
    let first = send_stream(&app, HAMLET, "Verona", "bug", "broken").await;
    let hamlet = app.register(HAMLET, &[]).await;

    // Resolved: a notice in the resolved topic, read for every recipient (no one
    // follows the topic), sent in the same `message` event with its flags.
    retopic(&app, IAGO, first, "✔ bug", &[]).await;
    let resolved = topic_messages(&app, HAMLET, "Verona", "✔ bug").await;
    assert_eq!(
        from_bot(&resolved),
        vec![format!("{me} has marked this topic as resolved.")]
    );
    let notice = resolved.last().unwrap();
    assert_eq!(notice["flags"], json!(["read"]));
    let notice_id = notice["id"].as_u64().unwrap();
    let events = app.events(HAMLET, &hamlet).await;
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["update_message", "message"]);
    assert_eq!(events[1]["flags"], json!(["read"]));
    assert_eq!(events[1]["message"]["id"], notice_id);
    let state = app
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[(
                "fetch_event_types",
                r#"["message", "update_message_flags"]"#,
            )],
        )
        .await;
    let unread: Vec<&Value> = state["unread_msgs"]["streams"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["unread_message_ids"].as_array().unwrap())
        .collect();
    assert!(!unread.contains(&&json!(notice_id)), "{state}");
    assert!(unread.contains(&&json!(first)), "{state}");

    // Unresolved within the grace period: the notice is deleted, none is sent.
    clock.advance_ms(59_000);
    retopic(&app, IAGO, first, "bug", &[]).await;
    let back = topic_messages(&app, HAMLET, "Verona", "bug").await;
    assert!(from_bot(&back).is_empty(), "{back:?}");
    assert_eq!(back.len(), 1);
    let events = app.events(HAMLET, &hamlet).await;
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        vec![
            "update_message",
            "message",
            "update_message",
            "delete_message"
        ]
    );
    assert_eq!(events[2]["message_ids"], json!([first, notice_id]));
    assert_eq!(events[3]["message_id"], notice_id);
    app.err(
        "GET",
        &format!("/api/v1/messages/{notice_id}"),
        HAMLET,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid message(s)",
    )
    .await;

    // Later than the grace period, each toggle is told.
    retopic(&app, IAGO, first, "✔ bug", &[]).await;
    clock.advance_ms(61_000);
    retopic(&app, IAGO, first, "bug", &[]).await;
    assert_eq!(
        from_bot(&topic_messages(&app, HAMLET, "Verona", "bug").await),
        vec![
            format!("{me} has marked this topic as resolved."),
            format!("{me} has marked this topic as unresolved."),
        ]
    );
    // The topic's newest message is the last notice.
    let topics = app
        .ok(
            "GET",
            &format!("/api/v1/users/me/{}/topics", app.stream_id("Verona").await),
            HAMLET,
            &[],
        )
        .await;
    let newest = topic_messages(&app, HAMLET, "Verona", "bug").await;
    let bug = topics["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "bug")
        .expect("the topic");
    assert_eq!(bug["max_id"], newest.last().unwrap()["id"]);

    // No notice with a content edit or a channel move (the move is told instead).
    let second = send_stream(&app, IAGO, "Verona", "typo", "oops").await;
    app.ok(
        "PATCH",
        &format!("/api/v1/messages/{second}"),
        IAGO,
        &[("topic", "✔ typo"), ("content", "fixed")],
    )
    .await;
    assert!(from_bot(&topic_messages(&app, IAGO, "Verona", "✔ typo").await).is_empty());
    let denmark = app.stream_id("Denmark").await.to_string();
    let third = send_stream(&app, IAGO, "Verona", "leak", "drip").await;
    retopic(&app, IAGO, third, "✔ leak", &[("stream_id", &denmark)]).await;
    assert_eq!(
        from_bot(&topic_messages(&app, IAGO, "Denmark", "✔ leak").await),
        vec![format!(
            "This topic was moved here from #**Verona>leak** by {me}."
        )]
    );

    // The notices and their read flags survive a restart.
    app.restart().await;
    let after = topic_messages(&app, HAMLET, "Verona", "bug").await;
    assert_eq!(from_bot(&after).len(), 2);
    assert!(after
        .iter()
        .filter(|m| m["sender_email"] == "notification-bot@zulip.com")
        .all(|m| m["flags"] == json!(["read"])));
}
