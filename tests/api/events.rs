//! Event queues against a real server: register, long-poll, heartbeats, expiry.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::*;
use hearth::hub::{HEARTBEAT_MS, QUEUE_TIMEOUT_MS};
use hearth::realm::ManualClock;
use reqwest::Method;
use serde_json::Value;

/// A development server on a manual clock: heartbeats and expiry happen when the test
/// advances the clock and ticks.
async fn start() -> TestApp {
    TestApp::spawn_with_clock(ManualClock::new(1_800_000_000_000)).await
}

/// `GET /events` with `dont_block`: the queue's events now.
async fn poll_now(app: &TestApp, email: &str, queue: &str, last: &str) -> (u16, Value) {
    app.call(
        "GET",
        "/api/v1/events",
        email,
        &[
            ("queue_id", queue),
            ("last_event_id", last),
            ("dont_block", "true"),
        ],
    )
    .await
}

/// Starts a long-poll on `queue` in the background.
async fn spawn_poll(
    app: &TestApp,
    email: &str,
    queue: &str,
    last: &str,
) -> tokio::task::JoinHandle<Value> {
    let key = app.api_key(email).await;
    let poll = app
        .request(Method::GET, "/api/v1/events", Auth::Basic(email, &key))
        .query(&[("queue_id", queue), ("last_event_id", last)]);
    tokio::spawn(async move { send(poll).await.2 })
}

/// A new member made by the administrator; its id.
async fn create_user(app: &TestApp, email: &str) -> u64 {
    app.create_user(email, "abcd1234", "New Person").await
}

#[actix_web::test]
async fn register_answers_queue_and_initial_state() {
    let app = start().await;
    let body = app
        .ok("POST", "/api/v1/register", "hamlet@zulip.com", &[])
        .await;
    assert!(!body["queue_id"].as_str().expect("queue_id").is_empty());
    assert_eq!(body["last_event_id"], -1);
    assert_eq!(body["zulip_feature_level"], 420);
    assert_eq!(body["max_message_length"], 10000);
    assert_eq!(body["max_topic_length"], 60);
    assert_eq!(body["realm_empty_topic_display_name"], "general chat");
    assert_eq!(body["server_presence_ping_interval_seconds"], 60);
    assert_eq!(body["server_presence_offline_threshold_seconds"], 200);
    assert_eq!(body["event_queue_longpoll_timeout_seconds"], 90);
    assert_eq!(body["user_id"], 10);
    assert_eq!(body["delivery_email"], "hamlet@zulip.com");
    let users = body["realm_users"].as_array().unwrap();
    assert_eq!(users.len(), 16);
    let iago = users.iter().find(|u| u["full_name"] == "Iago").unwrap();
    assert!(
        iago["delivery_email"].is_null(),
        "a member cannot see an admin's real email"
    );
    for key in [
        "realm_non_active_users",
        "realm_bots",
        "subscriptions",
        "unsubscribed",
        "never_subscribed",
        "streams",
        "realm_user_groups",
        "custom_profile_fields",
        "user_status",
        "presences",
        "navigation_views",
        "realm_linkifiers",
        "realm_default_streams",
        "channel_folders",
        "scheduled_messages",
        "max_message_id",
        "user_settings",
    ] {
        assert!(body.get(key).is_some(), "register lacks {key}");
    }
    assert!(body.get("ignored_parameters_unsupported").is_none());
}

#[actix_web::test]
async fn register_limits_state_to_fetch_event_types() {
    let app = start().await;
    let body = app
        .ok(
            "POST",
            "/api/v1/register",
            "hamlet@zulip.com",
            &[("fetch_event_types", r#"["message"]"#)],
        )
        .await;
    assert_eq!(body["max_message_id"], -1);
    assert!(body.get("realm_users").is_none());
    assert!(body.get("zulip_version").is_some());
    let (status, body) = app
        .call(
            "POST",
            "/api/v1/register",
            "hamlet@zulip.com",
            &[("event_types", "notjson")],
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["msg"], "event_types is not valid JSON");
}

/// Zulip's `fetch_initial_state_data` (`zerver/lib/events.py`): with the
/// `user_settings_object` client capability the settings come once, in `user_settings`;
/// without it the legacy `update_display_settings` / `update_global_notifications`
/// types add them at the top level too.
#[actix_web::test]
async fn register_user_settings_object_gives_one_copy() {
    let app = start().await;
    let fetch = (
        "fetch_event_types",
        r#"["user_settings","update_display_settings","update_global_notifications"]"#,
    );
    let legacy = [
        "twenty_four_hour_time",
        "enter_sends",
        "enable_sounds",
        "presence_enabled",
    ];
    let body = app
        .ok(
            "POST",
            "/api/v1/register",
            "hamlet@zulip.com",
            &[
                fetch,
                ("client_capabilities", r#"{"user_settings_object": true}"#),
            ],
        )
        .await;
    for key in legacy {
        assert!(body.get(key).is_none(), "{key} at the top level");
        assert!(
            body["user_settings"].get(key).is_some(),
            "{key} in user_settings"
        );
    }
    let body = app
        .ok("POST", "/api/v1/register", "hamlet@zulip.com", &[fetch])
        .await;
    for key in legacy {
        assert!(body.get(key).is_some(), "legacy {key} at the top level");
        assert!(
            body["user_settings"].get(key).is_some(),
            "{key} in user_settings"
        );
    }
}

/// The start-up register of zulip-terminal: 10 event types, 14 fetch types, and the
/// keys it reads from the answer.
#[actix_web::test]
async fn terminal_client_register_has_every_key_it_reads() {
    let app = start().await;
    let event_types = r#"["message","update_message","reaction","subscription","typing","update_message_flags","update_global_notifications","update_display_settings","user_settings","realm_emoji"]"#;
    let fetch = r#"["realm","presence","subscription","message","starred_messages","update_message_flags","muted_topics","realm_user","realm_user_groups","update_global_notifications","update_display_settings","user_settings","realm_emoji","zulip_version"]"#;
    let body = app
        .ok(
            "POST",
            "/api/v1/register",
            "hamlet@zulip.com",
            &[
                ("event_types", event_types),
                ("fetch_event_types", fetch),
                ("client_gravatar", "true"),
                ("apply_markdown", "true"),
            ],
        )
        .await;
    for key in [
        "queue_id",
        "last_event_id",
        "zulip_version",
        "zulip_feature_level",
        "user_id",
        "email",
        "full_name",
        "realm_name",
        "presences",
        "realm_users",
        "cross_realm_bots",
        "subscriptions",
        "muted_topics",
        "realm_user_groups",
        "realm_emoji",
        "user_settings",
        "twenty_four_hour_time",
        "pm_content_in_desktop_notifications",
        "unread_msgs",
        "starred_messages",
        "realm_message_retention_days",
        "max_stream_name_length",
        "max_topic_length",
        "max_message_length",
    ] {
        assert!(body.get(key).is_some(), "terminal client reads {key}");
    }
    assert_eq!(
        body["user_settings"]["send_private_typing_notifications"],
        true
    );
    for key in ["pms", "streams", "huddles", "mentions"] {
        assert!(body["unread_msgs"][key].is_array());
    }
}

#[actix_web::test]
async fn long_poll_wakes_when_another_user_changes_state() {
    let app = start().await;
    let queue = app
        .register("hamlet@zulip.com", &[("event_types", r#"["realm_user"]"#)])
        .await;
    let admin_queue = app.register("iago@zulip.com", &[]).await;

    let poll = spawn_poll(&app, "hamlet@zulip.com", &queue, "-1").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!poll.is_finished(), "the poll parks while nothing happens");
    let new_id = create_user(&app, "newbie@zulip.com").await;
    let body = tokio::time::timeout(Duration::from_secs(10), poll)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body["result"], "success");
    let events = body["events"].as_array().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["type"], "realm_user");
    assert_eq!(events[0]["op"], "add");
    assert_eq!(events[0]["id"], 0);
    assert_eq!(events[0]["person"]["user_id"], new_id);
    assert_eq!(
        events[0]["person"]["email"],
        format!("user{new_id}@zulipdev.com")
    );
    assert!(events[0]["person"]["delivery_email"].is_null());
    assert!(
        body.get("queue_id").is_none(),
        "queue_id is echoed only for a queue the call created"
    );

    // The administrator's queue gets the real address.
    let (_, body) = poll_now(&app, "iago@zulip.com", &admin_queue, "-1").await;
    assert_eq!(
        body["events"][0]["person"]["delivery_email"],
        "newbie@zulip.com"
    );

    // Acknowledged events are dropped.
    let (_, body) = poll_now(&app, "hamlet@zulip.com", &queue, "0").await;
    assert_eq!(body["events"], serde_json::json!([]));
}

#[actix_web::test]
async fn dont_block_answers_at_once_and_missing_arguments_are_named() {
    let app = start().await;
    let queue = app.register("hamlet@zulip.com", &[]).await;
    let (status, body) = poll_now(&app, "hamlet@zulip.com", &queue, "-1").await;
    assert_eq!(
        (status, body["events"].clone()),
        (200, serde_json::json!([]))
    );

    let (status, body) = app
        .call(
            "GET",
            "/api/v1/events",
            "hamlet@zulip.com",
            &[("queue_id", &queue)],
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["code"], "REQUEST_VARIABLE_MISSING");
    assert_eq!(body["msg"], "Missing 'last_event_id' argument");
    assert_eq!(body["var_name"], "last_event_id");

    let (status, body) = app
        .call("GET", "/api/v1/events", "hamlet@zulip.com", &[])
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["msg"], "Missing 'queue_id' argument");

    // Without a queue but with dont_block, the call creates one and names it.
    let (status, body) = app
        .call(
            "GET",
            "/api/v1/events",
            "hamlet@zulip.com",
            &[("dont_block", "true")],
        )
        .await;
    assert_eq!(status, 200);
    assert!(body["queue_id"].is_string());
    assert_eq!(body["events"], serde_json::json!([]));
}

#[actix_web::test]
async fn unknown_queue_and_other_users_queue() {
    let app = start().await;
    let (status, body) = app
        .call(
            "GET",
            "/api/v1/events",
            "hamlet@zulip.com",
            &[("queue_id", "nope:1"), ("last_event_id", "-1")],
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["code"], "BAD_EVENT_QUEUE_ID");
    assert_eq!(body["msg"], "Bad event queue ID: nope:1");
    assert_eq!(body["queue_id"], "nope:1");

    let queue = app.register("hamlet@zulip.com", &[]).await;
    let (status, body) = app
        .call(
            "GET",
            "/api/v1/events",
            "cordelia@zulip.com",
            &[("queue_id", &queue), ("last_event_id", "-1")],
        )
        .await;
    // Another user's queue answers as an unknown one.
    assert_eq!(status, 400);
    assert_eq!(body["code"], "BAD_EVENT_QUEUE_ID");
    assert_eq!(body["msg"], format!("Bad event queue ID: {queue}"));

    let (status, _, body) = app
        .get(
            "/api/v1/events",
            Auth::None,
            &[("queue_id", &queue), ("last_event_id", "-1")],
        )
        .await;
    assert_eq!(status.as_u16(), 401);
    assert_eq!(body["code"], "UNAUTHORIZED");
}

#[actix_web::test]
async fn heartbeat_after_a_minute_of_silence() {
    let app = start().await;
    let queue = app.register("hamlet@zulip.com", &[]).await;
    let poll = spawn_poll(&app, "hamlet@zulip.com", &queue, "-1").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    app.clock().advance_ms(HEARTBEAT_MS - 1000);
    app.tick();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!poll.is_finished(), "no heartbeat before a minute");
    app.clock().advance_ms(1000);
    app.tick();
    let body = tokio::time::timeout(Duration::from_secs(10), poll)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        body["events"],
        serde_json::json!([{"type": "heartbeat", "id": 0}])
    );
}

#[actix_web::test]
async fn idle_queues_expire_and_delete_removes_a_queue() {
    let app = start().await;
    let idle = app.register("hamlet@zulip.com", &[]).await;
    app.clock().advance_ms(QUEUE_TIMEOUT_MS - 1000);
    app.tick();
    let (status, _) = poll_now(&app, "hamlet@zulip.com", &idle, "-1").await;
    assert_eq!(
        status, 200,
        "still alive just before ten minutes (and the poll refreshes it)"
    );
    app.clock().advance_ms(QUEUE_TIMEOUT_MS);
    app.tick();
    let (status, body) = poll_now(&app, "hamlet@zulip.com", &idle, "-1").await;
    assert_eq!(status, 400);
    assert_eq!(body["code"], "BAD_EVENT_QUEUE_ID");

    let queue = app.register("hamlet@zulip.com", &[]).await;
    let (status, body) = app
        .call(
            "DELETE",
            "/api/v1/events",
            "hamlet@zulip.com",
            &[("queue_id", &queue)],
        )
        .await;
    assert_eq!(
        (status, body["result"].clone()),
        (200, Value::from("success"))
    );
    let (status, body) = app
        .call(
            "DELETE",
            "/api/v1/events",
            "hamlet@zulip.com",
            &[("queue_id", &queue)],
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["msg"], format!("Bad event queue ID: {queue}"));
}

#[actix_web::test]
async fn queues_do_not_survive_a_restart() {
    let mut app = TestApp::spawn().await;
    let key = app.api_key("hamlet@zulip.com").await;
    let queue = app.register("hamlet@zulip.com", &[]).await;
    app.restart().await;
    let (status, _, body) = app
        .get(
            "/api/v1/events",
            Auth::Basic("hamlet@zulip.com", &key),
            &[("queue_id", queue.as_str()), ("last_event_id", "-1")],
        )
        .await;
    assert_eq!(status.as_u16(), 400);
    assert!(body["msg"]
        .as_str()
        .unwrap()
        .to_lowercase()
        .starts_with("bad event queue id:"));
}
