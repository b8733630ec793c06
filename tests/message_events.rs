//! Message events beyond the recipients' own: `all_public_streams` queues, per-user
//! `flags` on `update_message`, and Notification Bot messages about moved messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

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
