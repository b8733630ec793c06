//! Zulip fidelity of parameters and checks: parameters hearth does not act on are
//! reported as ignored, and validation texts and orders follow Zulip's.

use crate::common::*;
use serde_json::{json, Value};

fn ignored(body: &Value) -> Value {
    body["ignored_parameters_unsupported"].clone()
}

#[actix_web::test]
async fn notification_flags_are_reported_as_ignored() {
    let s = TestApp::spawn().await;
    let body = s
        .ok(
            "POST",
            "/api/v1/users/me/subscriptions",
            IAGO,
            &[
                ("subscriptions", r#"[{"name":"flags one"}]"#),
                ("announce", "true"),
                ("send_new_subscription_messages", "false"),
            ],
        )
        .await;
    assert_eq!(
        ignored(&body),
        json!(["announce", "send_new_subscription_messages"])
    );
    let body = s
        .ok(
            "POST",
            "/api/v1/channels/create",
            IAGO,
            &[
                ("name", "flags two"),
                ("announce", "false"),
                ("send_new_subscription_messages", "true"),
            ],
        )
        .await;
    assert_eq!(
        ignored(&body),
        json!(["announce", "send_new_subscription_messages"])
    );
    // Zulip still type-checks them.
    s.err(
        "POST",
        "/api/v1/users/me/subscriptions",
        IAGO,
        &[
            ("subscriptions", r#"[{"name":"flags three"}]"#),
            ("announce", "1"),
        ],
        400,
        "BAD_REQUEST",
        "announce is not a boolean",
    )
    .await;
    s.err(
        "POST",
        "/api/v1/channels/create",
        IAGO,
        &[
            ("name", "flags three"),
            ("send_new_subscription_messages", "x"),
        ],
        400,
        "BAD_REQUEST",
        "send_new_subscription_messages is not valid JSON",
    )
    .await;
    // Without them nothing is reported.
    let body = s
        .ok(
            "POST",
            "/api/v1/channels/create",
            IAGO,
            &[("name", "flags four")],
        )
        .await;
    assert_eq!(ignored(&body), Value::Null);
}

#[actix_web::test]
async fn register_reads_narrow() {
    let s = TestApp::spawn().await;
    let body = s
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[
                ("narrow", r#"[["channel","Verona"]]"#),
                ("fetch_event_types", r#"["realm_user"]"#),
            ],
        )
        .await;
    // The narrow filters the queue's message events (messages.rs): it is read.
    assert!(
        body.get("ignored_parameters_unsupported").is_none(),
        "{body}"
    );
    s.err(
        "POST",
        "/api/v1/register",
        HAMLET,
        &[("narrow", "nope")],
        400,
        "BAD_REQUEST",
        "narrow is not valid JSON",
    )
    .await;
}

#[actix_web::test]
async fn archived_channel_cannot_be_made_default() {
    let s = TestApp::spawn().await;
    let body = s
        .ok(
            "POST",
            "/api/v1/channels/create",
            IAGO,
            &[("name", "soon archived")],
        )
        .await;
    let id = body["id"].as_i64().unwrap().to_string();
    s.ok("DELETE", &format!("/api/v1/streams/{id}"), IAGO, &[])
        .await;
    s.err(
        "POST",
        "/api/v1/default_streams",
        IAGO,
        &[("stream_id", &id)],
        400,
        "BAD_REQUEST",
        "Invalid channel ID",
    )
    .await;
    let reg = s
        .ok(
            "POST",
            "/api/v1/register",
            IAGO,
            &[("fetch_event_types", r#"["default_streams"]"#)],
        )
        .await;
    let id: i64 = id.parse().unwrap();
    assert!(!reg["realm_default_streams"]
        .as_array()
        .unwrap()
        .contains(&json!(id)));
}

#[actix_web::test]
async fn message_retention_days_on_channel_update() {
    let mut s = TestApp::spawn().await;
    let verona = s.stream_id("Verona").await;
    let path = format!("/api/v1/streams/{verona}");
    // Owners only, checked before the value.
    s.err(
        "PATCH",
        &path,
        IAGO,
        &[("message_retention_days", "0")],
        400,
        "UNAUTHORIZED_PRINCIPAL",
        "Must be an organization owner",
    )
    .await;
    for (value, shown) in [("0", "0"), ("-3", "-3"), ("\"forever\"", "forever")] {
        s.err(
            "PATCH",
            &path,
            DESDEMONA,
            &[("message_retention_days", value)],
            400,
            "BAD_REQUEST",
            &format!("Bad value for 'message_retention_days': {shown}"),
        )
        .await;
    }
    s.err(
        "PATCH",
        &path,
        DESDEMONA,
        &[("message_retention_days", "forever")],
        400,
        "BAD_REQUEST",
        "message_retention_days is not valid JSON",
    )
    .await;

    let queue = s
        .register(HAMLET, &[("event_types", r#"["stream"]"#)])
        .await;
    let body = s
        .ok(
            "PATCH",
            &path,
            DESDEMONA,
            &[("message_retention_days", "30")],
        )
        .await;
    assert_eq!(body["ignored_parameters_unsupported"], Value::Null);
    s.ok(
        "PATCH",
        &path,
        DESDEMONA,
        &[("message_retention_days", "\"unlimited\"")],
    )
    .await;
    let events = s.events(HAMLET, &queue).await;
    let updates: Vec<(Value, Value)> = events
        .iter()
        .filter(|e| e["type"] == "stream" && e["op"] == "update")
        .map(|e| {
            assert_eq!(e["stream_id"], json!(verona));
            assert_eq!(e["name"], "Verona");
            (e["property"].clone(), e["value"].clone())
        })
        .collect();
    assert_eq!(
        updates,
        vec![
            (json!("message_retention_days"), json!(30)),
            (json!("message_retention_days"), json!(-1)),
        ]
    );
    let stream = s.ok("GET", &path, HAMLET, &[]).await;
    assert_eq!(stream["stream"]["message_retention_days"], json!(-1));

    // Kept across a restart (a WAL record, then a snapshot).
    s.restart().await;
    let stream = s.ok("GET", &path, HAMLET, &[]).await;
    assert_eq!(stream["stream"]["message_retention_days"], json!(-1));
    s.ok(
        "PATCH",
        &path,
        DESDEMONA,
        &[("message_retention_days", "\"realm_default\"")],
    )
    .await;
    s.restart().await;
    let stream = s.ok("GET", &path, HAMLET, &[]).await;
    assert_eq!(stream["stream"]["message_retention_days"], Value::Null);
}

#[actix_web::test]
async fn create_user_full_name_checks() {
    let s = TestApp::spawn().await;
    let cases = [
        ("", "Name must not be empty!"),
        ("   ", "Name must not be empty!"),
        ("A*B", "Invalid characters in name!"),
        ("Ann @home", "Invalid characters in name!"),
        ("Tab\u{7}Bell", "Invalid characters in name!"),
        ("Ann|15", "Invalid format!"),
    ];
    for (i, (name, msg)) in cases.iter().enumerate() {
        let email = format!("name{i}@zulip.com");
        s.err(
            "POST",
            "/api/v1/users",
            IAGO,
            &[
                ("email", &email),
                ("password", "abcd1234"),
                ("full_name", name),
            ],
            400,
            "BAD_REQUEST",
            msg,
        )
        .await;
    }
    let long = "x".repeat(101);
    s.err(
        "POST",
        "/api/v1/users",
        IAGO,
        &[
            ("email", "long@zulip.com"),
            ("password", "abcd1234"),
            ("full_name", &long),
        ],
        400,
        "BAD_REQUEST",
        "Name too long!",
    )
    .await;
    // Stripped before it is stored; two characters suffice.
    let body = s
        .ok(
            "POST",
            "/api/v1/users",
            IAGO,
            &[
                ("email", "short@zulip.com"),
                ("password", "abcd1234"),
                ("full_name", "  Al  "),
            ],
        )
        .await;
    let id = body["user_id"].as_i64().unwrap();
    let user = s.ok("GET", &format!("/api/v1/users/{id}"), IAGO, &[]).await;
    assert_eq!(user["user"]["full_name"], "Al");
}

#[actix_web::test]
async fn unsubscribe_principals_and_channel_administrators() {
    let s = TestApp::spawn().await;
    let hamlet = s.user_id(HAMLET).await;
    // `principals=[]` is the caller.
    let body = s
        .ok(
            "DELETE",
            "/api/v1/users/me/subscriptions",
            HAMLET,
            &[("subscriptions", r#"["Verona"]"#), ("principals", "[]")],
        )
        .await;
    assert_eq!(body["removed"], json!(["Verona"]));
    assert_eq!(body["not_removed"], json!([]));

    // Cordelia creates a channel (so administers it) with Hamlet in it.
    let hamlet_s = hamlet.to_string();
    s.ok(
        "POST",
        "/api/v1/channels/create",
        CORDELIA,
        &[
            ("name", "cordelia's"),
            ("subscribers", &format!("[{hamlet_s}]")),
        ],
    )
    .await;
    // Othello does not administer it.
    s.err(
        "DELETE",
        "/api/v1/users/me/subscriptions",
        OTHELLO,
        &[
            ("subscriptions", r#"["cordelia's"]"#),
            ("principals", &format!("[{hamlet_s}]")),
        ],
        400,
        "BAD_REQUEST",
        "Insufficient permission",
    )
    .await;
    let body = s
        .ok(
            "DELETE",
            "/api/v1/users/me/subscriptions",
            CORDELIA,
            &[
                ("subscriptions", r#"["cordelia's"]"#),
                ("principals", &format!("[{hamlet_s}]")),
            ],
        )
        .await;
    assert_eq!(body["removed"], json!(["cordelia's"]));
}

#[actix_web::test]
async fn subscription_property_value_types() {
    let s = TestApp::spawn().await;
    let path = "/api/v1/users/me/subscriptions/properties";
    let post = |data: &'static str, msg: &'static str| {
        let s = &s;
        async move {
            s.err(
                "POST",
                path,
                IAGO,
                &[("subscription_data", data)],
                400,
                "BAD_REQUEST",
                msg,
            )
            .await;
        }
    };
    // A boolean property given a string: the property's own check.
    post(
        r#"[{"stream_id":1,"property":"is_muted","value":"x"}]"#,
        "is_muted is not a boolean",
    )
    .await;
    post(
        r#"[{"stream_id":1,"property":"pin_to_top","value":"true"}]"#,
        "pin_to_top is not a boolean",
    )
    .await;
    // Neither boolean nor string: `value: bool | str` fails on its first member.
    post(
        r#"[{"stream_id":1,"property":"desktop_notifications","value":1}]"#,
        r#"subscription_data[0]["value"]["bool"] is not a boolean"#,
    )
    .await;
    post(
        r#"[{"stream_id":1,"property":"color","value":7}]"#,
        r#"subscription_data[0]["value"]["bool"] is not a boolean"#,
    )
    .await;
    post(
        r#"[{"stream_id":1,"property":"is_muted","value":true},{"stream_id":1,"property":"is_muted","value":null}]"#,
        r#"subscription_data[1]["value"]["bool"] is not a boolean"#,
    )
    .await;
    // `color` given a boolean: Zulip's check_color sees "True", not a colour.
    post(
        r#"[{"stream_id":1,"property":"color","value":false}]"#,
        "Invalid subscription_data[0]: Value error, color is not a valid hex color code",
    )
    .await;
    // stream_id as a string, or missing.
    post(
        r#"[{"stream_id":"1","property":"is_muted","value":true}]"#,
        r#"subscription_data[0]["stream_id"] is not an integer"#,
    )
    .await;
    post(
        r##"[{"property":"color","value":"#ffffff"}]"##,
        r#"subscription_data[0]["stream_id"] field is missing: Field required"#,
    )
    .await;
    post(
        r#"[{"stream_id":1,"property":"color"}]"#,
        r#"subscription_data[0]["value"] field is missing: Field required"#,
    )
    .await;
}

#[actix_web::test]
async fn unsubscribe_blank_name_and_mixed_principals() {
    let s = TestApp::spawn().await;
    let path = "/api/v1/users/me/subscriptions";
    for names in [
        r#"[""]"#,
        r#"["Verona","   "]"#,
        r#"["no such channel",""]"#,
    ] {
        s.err(
            "DELETE",
            path,
            IAGO,
            &[("subscriptions", names)],
            400,
            "BAD_REQUEST",
            "Channel name can't be empty.",
        )
        .await;
    }
    let hamlet = s.user_id(HAMLET).await;
    // The first entry that is not an email is named.
    for (mixed, at) in [
        (format!(r#"[{hamlet},"{CORDELIA}"]"#), 0),
        (format!(r#"["{CORDELIA}",{hamlet}]"#), 1),
    ] {
        s.err(
            "DELETE",
            path,
            IAGO,
            &[("subscriptions", r#"["Verona"]"#), ("principals", &mixed)],
            400,
            "BAD_REQUEST",
            &format!(r#"principals["list[str]"][{at}] is not a string"#),
        )
        .await;
    }
    // Nothing was removed.
    let body = s
        .ok(
            "DELETE",
            path,
            HAMLET,
            &[("subscriptions", r#"["Verona"]"#)],
        )
        .await;
    assert_eq!(body["removed"], json!(["Verona"]));
}

/// Peer events are batched as Zulip's `send_peer_subscriber_events`: public channels
/// with the same subscribing users share one `peer_add`, sent to every other active
/// non-guest user; a private channel gets its own, to those who may see its subscribers.
#[actix_web::test]
async fn peer_subscription_events_are_batched_as_zulip() {
    let app = TestApp::spawn().await;
    let queue = app
        .register(HAMLET, &[("event_types", r#"["subscription"]"#)])
        .await;
    let guest_queue = app
        .register(POLONIUS, &[("event_types", r#"["subscription"]"#)])
        .await;
    let names = ["batch a", "batch b", "batch c"];
    let subs: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
    app.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        IAGO,
        &[("subscriptions", &serde_json::to_string(&subs).unwrap())],
    )
    .await;
    let mut ids = Vec::new();
    for n in names {
        ids.push(app.stream_id(n).await);
    }
    ids.sort_unstable();
    let iago = app.user_id(IAGO).await;
    let peer: Vec<Value> = app
        .events(HAMLET, &queue)
        .await
        .into_iter()
        .filter(|e| e["op"] == "peer_add")
        .collect();
    assert_eq!(peer.len(), 1, "one event for the three channels: {peer:?}");
    assert_eq!(peer[0]["stream_ids"], json!(ids));
    assert_eq!(peer[0]["user_ids"], json!([iago]));
    // Guests are not told about public channels they are not in.
    let guest_peer = app
        .events(POLONIUS, &guest_queue)
        .await
        .into_iter()
        .filter(|e| e["op"] == "peer_add")
        .count();
    assert_eq!(guest_peer, 0);
}

/// A privacy change tells users who lose access that the channel is gone, and users
/// who gain it that it exists (Zulip's `do_change_stream_permission`).
#[actix_web::test]
async fn privacy_changes_create_and_delete_the_channel_for_who_gains_or_loses_access() {
    let app = TestApp::spawn().await;
    let body = app
        .ok(
            "POST",
            "/api/v1/channels/create",
            IAGO,
            &[("name", "turning"), ("subscribers", "[]")],
        )
        .await;
    let id = body["id"].as_i64().unwrap();
    let queue = app
        .register(HAMLET, &[("event_types", r#"["stream"]"#)])
        .await;
    let path = format!("/api/v1/streams/{id}");
    app.ok("PATCH", &path, IAGO, &[("is_private", "true")])
        .await;
    let events = app.events(HAMLET, &queue).await;
    let ops: Vec<&str> = events.iter().map(|e| e["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["delete"], "{events:?}");
    assert_eq!(events[0]["stream_ids"], json!([id]));

    app.ok("PATCH", &path, IAGO, &[("is_private", "false")])
        .await;
    let events: Vec<Value> = app
        .events(HAMLET, &queue)
        .await
        .into_iter()
        .skip(1)
        .collect();
    let ops: Vec<&str> = events.iter().map(|e| e["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["create", "update"], "{events:?}");
    assert_eq!(events[0]["streams"][0]["stream_id"], json!(id));
    assert_eq!(events[1]["property"], "invite_only");
    assert_eq!(events[1]["value"], false);
}
