//! Sends whose message rows are written off the realm actor (the message database's
//! writer thread): what an answer acknowledges is readable at once by everyone, and
//! the next write on it (an edit, a reaction, a flag) finds it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::Value;

/// Many concurrent sends; as each is answered, another subscriber reads it (one
/// message, and the topic narrow), the sender edits it and the reader reacts to it.
async fn answered_sends_are_readable_at_once(app: &TestApp) {
    let writers = [ADMIN, OWNER, OTHELLO, CORDELIA];
    for w in writers {
        app.api_key(w).await;
    }
    app.api_key(MEMBER).await;
    let tasks = (0..48).map(|i| async move {
        let who = writers[i % writers.len()];
        let topic = format!("burst {}", i % 3);
        let content = format!("message {i}");
        let id = send_stream(app, who, "Verona", &topic, &content).await;
        let path = format!("/api/v1/messages/{id}");
        let one = app.ok("GET", &path, MEMBER, &[]).await;
        assert_eq!(one["message"]["id"].as_u64(), Some(id), "{one}");
        let narrow = format!(
            r#"[{{"operator":"channel","operand":"Verona"}},{{"operator":"topic","operand":"{topic}"}}]"#
        );
        let anchor = id.to_string();
        let fetched = app
            .ok(
                "GET",
                "/api/v1/messages",
                MEMBER,
                &[
                    ("anchor", anchor.as_str()),
                    ("num_before", "0"),
                    ("num_after", "0"),
                    ("narrow", narrow.as_str()),
                ],
            )
            .await;
        let m: &Value = &fetched["messages"][0];
        assert_eq!(m["id"].as_u64(), Some(id), "{fetched}");
        let flags: Vec<&str> = m["flags"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(!flags.contains(&"read"), "unread for a recipient: {flags:?}");
        let edited = format!("edited {i}");
        app.ok("PATCH", &path, who, &[("content", edited.as_str())])
            .await;
        app.ok(
            "POST",
            &format!("{path}/reactions"),
            MEMBER,
            &[("emoji_name", "smile")],
        )
        .await;
        let after = app.ok("GET", &path, MEMBER, &[]).await;
        assert_eq!(after["raw_content"], format!("edited {i}"));
        assert_eq!(after["message"]["reactions"].as_array().map(Vec::len), Some(1));
        id
    });
    let ids = futures_util::future::join_all(tasks).await;
    assert_eq!(ids.len(), 48);
}

#[actix_web::test]
async fn answered_sends_are_readable_at_once_in_always() {
    let app = TestApp::spawn_durable().await;
    answered_sends_are_readable_at_once(&app).await;
}

#[actix_web::test]
async fn answered_sends_are_readable_at_once_in_never() {
    let app = TestApp::spawn().await;
    answered_sends_are_readable_at_once(&app).await;
}

/// The rows written by the writer thread survive a clean restart and a second one
/// (the snapshot at shutdown syncs the message database after the writer's queue).
#[actix_web::test]
async fn sends_survive_restarts() {
    let mut app = TestApp::spawn_durable().await;
    let tasks = (0..30).map(|i| {
        let app = &app;
        async move { send_stream(app, ADMIN, "Verona", "kept", &format!("kept {i}")).await }
    });
    let ids = futures_util::future::join_all(tasks).await;
    app.restart().await;
    app.restart().await;
    for id in ids {
        let one = app
            .ok("GET", &format!("/api/v1/messages/{id}"), MEMBER, &[])
            .await;
        assert_eq!(one["message"]["id"].as_u64(), Some(id));
    }
}
