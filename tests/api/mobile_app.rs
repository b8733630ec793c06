//! What the official mobile app (zulip-flutter) reads beyond the other clients: the
//! empty topic as `""` everywhere once it declares `empty_topic_name`, the direct-message
//! list from `recent_private_conversations`, `message_details` when a message is
//! marked unread, the emoji data `server_emoji_data_url` names, and every `/register`
//! field its parser cannot do without (`APP_REQUIRES`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::Value;

const EMPTY_TOPIC: &str = r#"{"empty_topic_name": true}"#;

async fn send_to(app: &TestApp, who: &str, params: &[(&str, &str)]) -> u64 {
    app.ok("POST", "/api/v1/messages", who, params).await["id"]
        .as_u64()
        .unwrap()
}

/// The events of `kind` in a queue.
async fn events_of(app: &TestApp, who: &str, queue: &str, kind: &str) -> Vec<Value> {
    app.events(who, queue)
        .await
        .into_iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

/// The `unread_msgs.streams` entry of a channel, as `/register` gives it.
async fn unread_topic(app: &TestApp, who: &str, capabilities: &str, stream_id: i64) -> Value {
    let body = app
        .ok(
            "POST",
            "/api/v1/register",
            who,
            &[
                ("fetch_event_types", r#"["message","update_message_flags"]"#),
                ("client_capabilities", capabilities),
            ],
        )
        .await;
    body["unread_msgs"]["streams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stream_id"] == stream_id)
        .map(|s| s["topic"].clone())
        .unwrap_or(Value::Null)
}

/// A client with `empty_topic_name` sees the empty topic as `""` in `message` events,
/// in `unread_msgs` and in `GET /messages` alike; one without it sees the realm's
/// display name in all three: one conversation either way.
#[actix_web::test]
async fn empty_topic_is_one_conversation_everywhere() {
    let app = TestApp::spawn().await;
    let verona = app.stream_id("Verona").await;
    let capable = app
        .register(HAMLET, &[("client_capabilities", EMPTY_TOPIC)])
        .await;
    let plain = app.register(HAMLET, &[]).await;
    let id = send_to(
        &app,
        IAGO,
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", ""),
            ("content", "hello"),
        ],
    )
    .await;

    let event = &events_of(&app, HAMLET, &capable, "message").await[0];
    assert_eq!(event["message"]["id"], id);
    assert_eq!(event["message"]["subject"], "");
    let event = &events_of(&app, HAMLET, &plain, "message").await[0];
    assert_eq!(event["message"]["subject"], "general chat");

    assert_eq!(unread_topic(&app, HAMLET, EMPTY_TOPIC, verona).await, "");
    assert_eq!(
        unread_topic(&app, HAMLET, "{}", verona).await,
        "general chat"
    );

    let narrow = format!(r#"[{{"operator": "stream", "operand": {verona}}}]"#);
    let fetched = app
        .ok(
            "GET",
            "/api/v1/messages",
            HAMLET,
            &[
                ("anchor", "newest"),
                ("num_before", "5"),
                ("num_after", "0"),
                ("narrow", &narrow),
                ("allow_empty_topic_name", "true"),
            ],
        )
        .await;
    let message = fetched["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .expect("the message")
        .clone();
    assert_eq!(message["subject"], "");

    // Marked unread: the details name the topic as each queue asked.
    let ids = format!("[{id}]");
    for op in ["add", "remove"] {
        app.ok(
            "POST",
            "/api/v1/messages/flags",
            HAMLET,
            &[("messages", &ids), ("op", op), ("flag", "read")],
        )
        .await;
    }
    let details = |events: Vec<Value>| {
        events
            .into_iter()
            .find(|e| e["op"] == "remove")
            .expect("the unread event")["message_details"][id.to_string()]
        .clone()
    };
    let capable_details = details(events_of(&app, HAMLET, &capable, "update_message_flags").await);
    assert_eq!(capable_details["topic"], "");
    let plain_details = details(events_of(&app, HAMLET, &plain, "update_message_flags").await);
    assert_eq!(plain_details["topic"], "general chat");
}

/// Zulip's `get_recent_private_conversations`: each conversation once, newest first,
/// with its newest message and the others in it, whichever way the messages went.
#[actix_web::test]
async fn recent_private_conversations_come_from_the_messages() {
    let app = TestApp::spawn().await;
    let dm = |to: String, content: &'static str| {
        vec![
            ("type", "direct".to_owned()),
            ("to", to),
            ("content", content.to_owned()),
        ]
    };
    let send = |who: &'static str, p: Vec<(&'static str, String)>| {
        let app = &app;
        async move {
            let p: Vec<(&str, &str)> = p.iter().map(|(k, v)| (*k, v.as_str())).collect();
            send_to(app, who, &p).await
        }
    };
    let first = send(HAMLET, dm(format!("[{IAGO_ID}]"), "to iago")).await;
    let reply = send(IAGO, dm(format!("[{HAMLET_ID}]"), "to hamlet")).await;
    let group = send(HAMLET, dm(format!("[{IAGO_ID},{OTHELLO_ID}]"), "to both")).await;
    let myself = send(HAMLET, dm(format!("[{HAMLET_ID}]"), "a note")).await;
    send_to(
        &app,
        HAMLET,
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "t"),
            ("content", "not a DM"),
        ],
    )
    .await;
    assert!(first < reply);

    let recent = |who: &'static str| {
        let app = &app;
        async move {
            app.ok(
                "POST",
                "/api/v1/register",
                who,
                &[("fetch_event_types", r#"["recent_private_conversations"]"#)],
            )
            .await["recent_private_conversations"]
                .clone()
        }
    };
    assert_eq!(
        recent(HAMLET).await,
        serde_json::json!([
            {"max_message_id": myself, "user_ids": []},
            {"max_message_id": group, "user_ids": [IAGO_ID, OTHELLO_ID]},
            {"max_message_id": reply, "user_ids": [IAGO_ID]},
        ])
    );
    assert_eq!(
        recent(IAGO).await,
        serde_json::json!([
            {"max_message_id": group, "user_ids": [HAMLET_ID, OTHELLO_ID]},
            {"max_message_id": reply, "user_ids": [HAMLET_ID]},
        ])
    );
    assert_eq!(recent(CORDELIA).await, serde_json::json!([]));
}

/// Zulip's `do_update_message_flags`: marking messages unread tells the client, per
/// message, what it needs for its unread counts.
#[actix_web::test]
async fn marking_unread_carries_message_details() {
    let app = TestApp::spawn().await;
    let verona = app.stream_id("Verona").await;
    let queue = app
        .register(
            HAMLET,
            &[
                ("event_types", r#"["update_message_flags"]"#),
                ("client_capabilities", EMPTY_TOPIC),
            ],
        )
        .await;
    let direct = send_to(
        &app,
        IAGO,
        &[
            ("type", "direct"),
            ("to", &format!("[{HAMLET_ID},{OTHELLO_ID}]")),
            ("content", "hi"),
        ],
    )
    .await;
    let mention = send_to(
        &app,
        IAGO,
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "plans"),
            ("content", "@**King Hamlet** look"),
        ],
    )
    .await;
    let ids = format!("[{direct},{mention}]");
    for op in ["add", "remove"] {
        app.ok(
            "POST",
            "/api/v1/messages/flags",
            HAMLET,
            &[("messages", &ids), ("op", op), ("flag", "read")],
        )
        .await;
    }
    let events = events_of(&app, HAMLET, &queue, "update_message_flags").await;
    let read = events.iter().find(|e| e["op"] == "add").unwrap();
    assert!(read.get("message_details").is_none(), "{read}");
    let unread = events.iter().find(|e| e["op"] == "remove").unwrap();
    let details = &unread["message_details"];
    assert_eq!(
        details[direct.to_string()],
        serde_json::json!({"type": "private", "user_ids": [IAGO_ID, OTHELLO_ID]})
    );
    let stream = &details[mention.to_string()];
    assert_eq!(stream["type"], "stream");
    assert_eq!(stream["stream_id"], verona);
    assert_eq!(stream["topic"], "plans");
    assert_eq!(stream["mentioned"], true);
}

/// `server_emoji_data_url` names emoji data on the same server, served without
/// credentials and cacheable, in the shape zulip-flutter's `ServerEmojiData` reads.
#[actix_web::test]
async fn server_emoji_data_is_served() {
    let app = TestApp::spawn().await;
    let body = app
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("fetch_event_types", r#"["realm"]"#)],
        )
        .await;
    let url = body["server_emoji_data_url"].as_str().unwrap();
    let path = url.split_once("://").unwrap().1;
    let path = &path[path.find('/').unwrap()..];
    assert_eq!(path, "/static/generated/emoji/emoji_api.json");
    let (status, headers, data) = send(app.request(reqwest::Method::GET, path, Auth::None)).await;
    assert_eq!(status, 200);
    assert!(headers["cache-control"]
        .to_str()
        .unwrap()
        .contains("public"));
    assert_eq!(data["code_to_names"]["1f44d"][0], "+1");
    assert_eq!(data["code_to_names"]["1f697"][0], "car");
    assert!(data["code_to_names"].as_object().unwrap().len() > 1000);
}

/// Zulip's `notification_settings_null`: with it, a channel's notification settings
/// left to the user's defaults are `null`; without it, they are those defaults.
#[actix_web::test]
async fn notification_settings_follow_the_capability() {
    let app = TestApp::spawn().await;
    let subscription = |capabilities: &'static str| {
        let app = &app;
        async move {
            let body = app
                .ok(
                    "POST",
                    "/api/v1/register",
                    HAMLET,
                    &[
                        ("fetch_event_types", r#"["subscription"]"#),
                        ("client_capabilities", capabilities),
                    ],
                )
                .await;
            body["subscriptions"][0].clone()
        }
    };
    let modern = subscription(r#"{"notification_settings_null": true}"#).await;
    let legacy = subscription("{}").await;
    for field in [
        "desktop_notifications",
        "audible_notifications",
        "push_notifications",
        "email_notifications",
        "wildcard_mentions_notify",
    ] {
        assert!(modern[field].is_null(), "{field}: {modern}");
        assert!(legacy[field].is_boolean(), "{field}: {legacy}");
    }
}

/// Scheduled messages to the empty topic: `""` in `/register` and events for a client
/// with `empty_topic_name`, the realm's display name for one without.
#[actix_web::test]
async fn scheduled_messages_name_the_empty_topic_by_capability() {
    let app = TestApp::spawn().await;
    let verona = app.stream_id("Verona").await.to_string();
    let capable = app
        .register(HAMLET, &[("client_capabilities", EMPTY_TOPIC)])
        .await;
    let plain = app.register(HAMLET, &[]).await;
    app.ok(
        "POST",
        "/api/v1/scheduled_messages",
        HAMLET,
        &[
            ("type", "stream"),
            ("to", &verona),
            ("topic", ""),
            ("content", "later"),
            ("scheduled_delivery_timestamp", "4000000000"),
        ],
    )
    .await;
    let topic_in = |events: Vec<Value>| events[0]["scheduled_messages"][0]["topic"].clone();
    assert_eq!(
        topic_in(events_of(&app, HAMLET, &capable, "scheduled_messages").await),
        ""
    );
    assert_eq!(
        topic_in(events_of(&app, HAMLET, &plain, "scheduled_messages").await),
        "general chat"
    );
    for (capabilities, want) in [(EMPTY_TOPIC, ""), ("{}", "general chat")] {
        let body = app
            .ok(
                "POST",
                "/api/v1/register",
                HAMLET,
                &[
                    ("fetch_event_types", r#"["scheduled_messages"]"#),
                    ("client_capabilities", capabilities),
                ],
            )
            .await;
        assert_eq!(
            body["scheduled_messages"][0]["topic"], want,
            "{capabilities}"
        );
    }
}

/// Fields zulip-flutter reads as non-nullable and without a default (its
/// `lib/api/model/initial_snapshot.dart` and `model.dart`): a `/register` answer that
/// lacks one, or has it `null`, does not parse and the app cannot load the account.
/// Each path names objects in the answer: `a[]` the items of list `a`, `a{}` the values
/// of map `a`.
const APP_REQUIRES: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "queue_id",
            "last_event_id",
            "zulip_feature_level",
            "zulip_version",
            "zulip_merge_base",
            "alert_words",
            "custom_profile_fields",
            "max_stream_name_length",
            "max_topic_length",
            "server_presence_ping_interval_seconds",
            "server_presence_offline_threshold_seconds",
            "muted_users",
            "presences",
            "realm_emoji",
            "realm_user_groups",
            "recent_private_conversations",
            "subscriptions",
            "unread_msgs",
            "starred_messages",
            "streams",
            "user_status",
            "user_settings",
            "user_topics",
            "realm_wildcard_mention_policy",
            "realm_name",
            "realm_waiting_period_threshold",
            "realm_allow_message_editing",
            "realm_enable_read_receipts",
            "realm_icon_url",
            "realm_presence_disabled",
            "realm_default_external_accounts",
            "max_file_upload_size_mib",
            "server_emoji_data_url",
            "event_queue_longpoll_timeout_seconds",
            "realm_users",
            "realm_non_active_users",
            "cross_realm_bots",
        ],
    ),
    ("realm_users[]", APP_USER),
    ("realm_non_active_users[]", APP_USER),
    ("cross_realm_bots[]", APP_USER),
    ("realm_users[].profile_data{}", &["value"]),
    (
        "subscriptions[]",
        &[
            "stream_id",
            "name",
            "description",
            "rendered_description",
            "date_created",
            "invite_only",
            "is_web_public",
            "history_public_to_subscribers",
            "pin_to_top",
            "is_muted",
            "color",
        ],
    ),
    (
        "streams[]",
        &[
            "stream_id",
            "name",
            "description",
            "rendered_description",
            "date_created",
            "invite_only",
            "is_web_public",
            "history_public_to_subscribers",
        ],
    ),
    (
        "realm_user_groups[]",
        &[
            "id",
            "members",
            "direct_subgroup_ids",
            "name",
            "description",
            "is_system_group",
        ],
    ),
    (
        "unread_msgs",
        &[
            "count",
            "pms",
            "streams",
            "huddles",
            "mentions",
            "old_unreads_missing",
        ],
    ),
    (
        "unread_msgs.pms[]",
        &["other_user_id", "unread_message_ids"],
    ),
    (
        "unread_msgs.streams[]",
        &["topic", "stream_id", "unread_message_ids"],
    ),
    (
        "unread_msgs.huddles[]",
        &["user_ids_string", "unread_message_ids"],
    ),
    (
        "recent_private_conversations[]",
        &["max_message_id", "user_ids"],
    ),
    (
        "user_settings",
        &[
            "starred_message_counts",
            "display_emoji_reaction_users",
            "emojiset",
            "presence_enabled",
        ],
    ),
    (
        "user_topics[]",
        &[
            "stream_id",
            "topic_name",
            "last_updated",
            "visibility_policy",
        ],
    ),
    (
        "custom_profile_fields[]",
        &["id", "type", "order", "name", "hint", "field_data"],
    ),
    ("muted_users[]", &["id"]),
    ("presences{}", &["active_timestamp", "idle_timestamp"]),
    (
        "realm_emoji{}",
        &["id", "name", "source_url", "deactivated"],
    ),
    (
        "saved_snippets[]",
        &["id", "title", "content", "date_created"],
    ),
    (
        "channel_folders[]",
        &[
            "id",
            "name",
            "description",
            "rendered_description",
            "is_archived",
        ],
    ),
];

/// zulip-flutter's `User`: what it cannot do without.
const APP_USER: &[&str] = &[
    "user_id",
    "email",
    "full_name",
    "date_joined",
    "is_active",
    "is_bot",
    "role",
    "timezone",
    "avatar_version",
];

/// The objects `path` names in `body` (see `APP_REQUIRES`).
fn objects_at<'a>(body: &'a Value, path: &str) -> Vec<&'a Value> {
    let mut found = vec![body];
    for step in path.split('.').filter(|s| !s.is_empty()) {
        let (name, each) = match (step.strip_suffix("[]"), step.strip_suffix("{}")) {
            (Some(name), _) | (_, Some(name)) => (name, true),
            _ => (step, false),
        };
        found = found
            .into_iter()
            .filter_map(|v| v.get(name))
            .flat_map(|v| -> Vec<&Value> {
                match (each, v) {
                    (false, v) => vec![v],
                    (true, Value::Array(items)) => items.iter().collect(),
                    (true, Value::Object(map)) => map.values().collect(),
                    (true, _) => Vec::new(),
                }
            })
            .collect();
    }
    found
}

/// The mobile app's `/register` (its parameters and capabilities) after the state that
/// fills each list it parses: every field it cannot do without is there, not `null`, in
/// every object of each kind.
#[actix_web::test]
async fn register_has_every_field_the_app_requires() {
    let app = TestApp::spawn().await;
    let verona = app.stream_id("Verona").await.to_string();
    for (who, to) in [
        (IAGO, format!("[{HAMLET_ID}]")),
        (IAGO, format!("[{HAMLET_ID},{OTHELLO_ID}]")),
    ] {
        send_to(
            &app,
            who,
            &[("type", "direct"), ("to", &to), ("content", "hi")],
        )
        .await;
    }
    send_to(
        &app,
        IAGO,
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "plans"),
            ("content", "@**King Hamlet** look"),
        ],
    )
    .await;
    let topic = [
        ("stream_id", verona.as_str()),
        ("topic", "plans"),
        ("visibility_policy", "1"),
    ];
    app.ok("POST", "/api/v1/user_topics", HAMLET, &topic).await;
    let muted = format!("/api/v1/users/me/muted_users/{OTHELLO_ID}");
    app.ok("POST", &muted, HAMLET, &[]).await;
    let presence = [("status", "active")];
    app.ok("POST", "/api/v1/users/me/presence", HAMLET, &presence)
        .await;
    let snippet = [("title", "hi"), ("content", "hello")];
    app.ok("POST", "/api/v1/saved_snippets", HAMLET, &snippet)
        .await;
    let profile = [("data", r#"[{"id": 1, "value": "+1 555"}]"#)];
    app.ok("PATCH", "/api/v1/users/me/profile_data", HAMLET, &profile)
        .await;
    let status = [("status_text", "out")];
    app.ok("POST", "/api/v1/users/me/status", HAMLET, &status)
        .await;
    app.ok(
        "POST",
        "/api/v1/channel_folders/create",
        IAGO,
        &[("name", "Work"), ("description", "")],
    )
    .await;
    app.ok("DELETE", &format!("/api/v1/users/{POLONIUS_ID}"), IAGO, &[])
        .await;

    let body = app
        .ok("POST", "/api/v1/register", HAMLET, &MOBILE_REGISTER)
        .await;
    let mut missing = Vec::new();
    for (path, fields) in APP_REQUIRES {
        let objects = objects_at(&body, path);
        assert!(!objects.is_empty(), "nothing at {path:?}");
        for (i, object) in objects.iter().enumerate() {
            for field in *fields {
                if object.get(field).is_none_or(Value::is_null) {
                    missing.push(format!("{path}#{i}.{field}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "the app cannot parse: {missing:?}");
}

/// zulip-flutter's `registerQueue` parameters (`lib/api/route/events.dart`).
const MOBILE_REGISTER: [(&str, &str); 5] = [
    ("apply_markdown", "true"),
    ("client_gravatar", "false"),
    ("slim_presence", "true"),
    ("idle_queue_timeout", "1209600"),
    (
        "client_capabilities",
        r#"{"notification_settings_null": true, "bulk_message_deletion": true, "user_avatar_url_field_optional": true, "stream_typing_notifications": true, "user_settings_object": true, "include_deactivated_groups": true, "empty_topic_name": true, "user_list_incomplete": true}"#,
    ),
];
