//! Channels, subscriptions, default channels, channel folders and bots against a real
//! server on the development realm.

use crate::common::*;
use serde_json::{json, Value};

fn find<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list.as_array()?.iter().find(|s| s["name"] == name)
}

#[actix_web::test]
async fn dev_realm_state_and_reads() {
    let mut s = TestApp::spawn().await;
    let hamlet = s.user_id(HAMLET).await;
    let reg = s
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("include_subscribers", "true")],
        )
        .await;
    let subs = &reg["subscriptions"];
    assert!(names(subs).contains(&"Verona".to_owned()));
    assert!(!names(subs).contains(&"Denmark".to_owned()));
    let verona = find(subs, "Verona").unwrap();
    assert_eq!(verona["description"], "A city in Italy");
    assert_eq!(verona["rendered_description"], "<p>A city in Italy</p>");
    assert_eq!(verona["in_home_view"], true);
    assert_eq!(verona["is_muted"], false);
    assert!(verona["color"].as_str().unwrap().starts_with('#'));
    assert!(verona["subscribers"]
        .as_array()
        .unwrap()
        .contains(&json!(hamlet)));
    assert_eq!(verona["can_remove_subscribers_group"], json!(3));
    let never = &reg["never_subscribed"];
    assert!(names(never).contains(&"Denmark".to_owned()));
    assert!(!names(never).contains(&"core team".to_owned()));
    assert!(!names(&reg["streams"]).contains(&"core team".to_owned()));
    assert_eq!(reg["realm_default_streams"].as_array().unwrap().len(), 7);
    let folders = reg["channel_folders"].as_array().unwrap();
    assert_eq!(folders.len(), 2);
    assert_eq!(folders[0]["name"], "Engineering");
    assert_eq!(folders[0]["is_archived"], false);
    let groups = reg["realm_user_groups"].as_array().unwrap();
    let admins = groups
        .iter()
        .find(|g| g["name"] == "role:administrators")
        .unwrap();
    assert_eq!(admins["members"], json!([11]));
    assert_eq!(admins["is_system_group"], true);
    let devel = find(subs, "devel").unwrap();
    assert_eq!(devel["folder_id"], json!(1));

    // Administrators see the private channel's metadata, not as a subscription.
    let reg = s.ok("POST", "/api/v1/register", IAGO, &[]).await;
    assert!(names(&reg["never_subscribed"]).contains(&"core team".to_owned()));

    // GET /users/me/subscriptions.
    let body = s
        .ok(
            "GET",
            "/api/v1/users/me/subscriptions",
            CORDELIA,
            &[("include_subscribers", "true")],
        )
        .await;
    let core = find(&body["subscriptions"], "core team").unwrap();
    assert_eq!(core["invite_only"], true);
    assert_eq!(core["subscribers"], json!([7, 8, 9]));
    let body = s
        .ok("GET", "/api/v1/users/me/subscriptions", CORDELIA, &[])
        .await;
    assert!(find(&body["subscriptions"], "core team").unwrap()["subscribers"].is_null());

    // GET /streams per role.
    let body = s.ok("GET", "/api/v1/streams", HAMLET, &[]).await;
    let hamlet_streams = names(&body["streams"]);
    assert!(hamlet_streams.contains(&"Denmark".to_owned()));
    assert!(!hamlet_streams.contains(&"core team".to_owned()));
    // `is_default` only with `include_default`.
    assert!(find(&body["streams"], "Verona").unwrap()["is_default"].is_null());
    let body = s
        .ok(
            "GET",
            "/api/v1/streams",
            HAMLET,
            &[("include_default", "true")],
        )
        .await;
    assert_eq!(
        find(&body["streams"], "Verona").unwrap()["is_default"],
        true
    );
    let body = s.ok("GET", "/api/v1/streams", POLONIUS, &[]).await;
    let guest_streams = names(&body["streams"]);
    assert!(guest_streams.contains(&"Verona".to_owned()));
    assert!(!guest_streams.contains(&"Rome".to_owned()));
    assert!(!guest_streams.contains(&"sandbox".to_owned()));
    let body = s
        .ok(
            "GET",
            "/api/v1/streams",
            POLONIUS,
            &[("include_web_public", "true")],
        )
        .await;
    assert!(names(&body["streams"]).contains(&"Rome".to_owned()));
    let body = s
        .ok("GET", "/api/v1/streams", IAGO, &[("include_all", "true")])
        .await;
    assert!(names(&body["streams"]).contains(&"core team".to_owned()));
    s.err(
        "GET",
        "/api/v1/streams",
        HAMLET,
        &[("include_all_active", "true")],
        400,
        "BAD_REQUEST",
        "User not authorized for this query",
    )
    .await;

    // GET /streams/{id}.
    let body = s.ok("GET", "/api/v1/streams/4", HAMLET, &[]).await;
    assert_eq!(body["stream"]["name"], "Denmark");
    assert!(
        body["stream"]["is_default"].is_null(),
        "a basic channel object"
    );
    assert_eq!(body["stream"]["subscriber_count"], 8);
    s.err(
        "GET",
        "/api/v1/streams/8",
        HAMLET,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid channel ID",
    )
    .await;
    s.err(
        "GET",
        "/api/v1/streams/1",
        POLONIUS,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid channel ID",
    )
    .await;
    s.ok("GET", "/api/v1/streams/8", IAGO, &[]).await;
    s.ok("GET", "/api/v1/streams/8", DESDEMONA, &[]).await;
    s.err(
        "GET",
        "/api/v1/streams/999",
        IAGO,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid channel ID",
    )
    .await;

    // GET /get_stream_id.
    let body = s
        .ok(
            "GET",
            "/api/v1/get_stream_id",
            HAMLET,
            &[("stream", "verona")],
        )
        .await;
    assert_eq!(body["stream_id"], 3);
    s.err(
        "GET",
        "/api/v1/get_stream_id",
        HAMLET,
        &[("stream", "core team")],
        400,
        "BAD_REQUEST",
        "Invalid channel name 'core team'",
    )
    .await;
    s.err(
        "GET",
        "/api/v1/get_stream_id",
        HAMLET,
        &[],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'stream' argument",
    )
    .await;

    // GET /streams/{id}/members.
    let body = s.ok("GET", "/api/v1/streams/8/members", IAGO, &[]).await;
    assert_eq!(body["subscribers"], json!([7, 8, 9]));
    s.err(
        "GET",
        "/api/v1/streams/8/members",
        HAMLET,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid channel ID",
    )
    .await;

    // GET /users/{user_id}/subscriptions/{stream_id}.
    let body = s
        .ok("GET", "/api/v1/users/10/subscriptions/3", IAGO, &[])
        .await;
    assert_eq!(body["is_subscribed"], true);
    let body = s
        .ok("GET", "/api/v1/users/10/subscriptions/4", IAGO, &[])
        .await;
    assert_eq!(body["is_subscribed"], false);
    s.err(
        "GET",
        "/api/v1/users/999/subscriptions/3",
        IAGO,
        &[],
        400,
        "BAD_REQUEST",
        "No such user",
    )
    .await;
    s.err(
        "GET",
        "/api/v1/users/10/subscriptions/8",
        HAMLET,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid channel ID",
    )
    .await;
    s.stop().await;
}

#[actix_web::test]
async fn subscription_properties_seed_4_1() {
    let mut s = TestApp::spawn().await;
    let q = s.register(IAGO, &[]).await;
    let other = s.register(HAMLET, &[]).await;
    // Errors, as recorded.
    let (st, body) = s
        .call(
            "POST",
            "/api/v1/users/me/subscriptions/properties",
            IAGO,
            &[(
                "subscription_data",
                r#"[{"stream_id":3,"property":"bogus_property","value":true}]"#,
            )],
        )
        .await;
    assert_eq!(
        (st, &body["msg"]),
        (400, &json!("Unknown subscription property: bogus_property"))
    );
    assert_eq!(body["code"], "BAD_REQUEST");
    s.err(
        "POST",
        "/api/v1/users/me/subscriptions/properties",
        IAGO,
        &[(
            "subscription_data",
            r#"[{"stream_id":3,"property":"color","value":"notacolor"}]"#,
        )],
        400,
        "BAD_REQUEST",
        "Invalid subscription_data[0]: Value error, color is not a valid hex color code",
    )
    .await;
    s.err(
        "POST",
        "/api/v1/users/me/subscriptions/properties",
        IAGO,
        &[(
            "subscription_data",
            r#"[{"stream_id":3,"property":"is_muted","value":"bad"}]"#,
        )],
        400,
        "BAD_REQUEST",
        "is_muted is not a boolean",
    )
    .await;
    s.err(
        "POST",
        "/api/v1/users/me/subscriptions/properties",
        IAGO,
        &[(
            "subscription_data",
            r#"[{"stream_id":4,"property":"pin_to_top","value":true}]"#,
        )],
        400,
        "BAD_REQUEST",
        "Not subscribed to channel ID 4",
    )
    .await;
    s.err(
        "POST",
        "/api/v1/users/me/subscriptions/properties",
        IAGO,
        &[(
            "subscription_data",
            r#"[{"stream_id":8,"property":"pin_to_top","value":true}]"#,
        )],
        400,
        "BAD_REQUEST",
        "Invalid channel ID",
    )
    .await;
    s.err(
        "POST",
        "/api/v1/users/me/subscriptions/properties",
        IAGO,
        &[(
            "subscription_data",
            r#"[{"property":"pin_to_top","value":true}]"#,
        )],
        400,
        "BAD_REQUEST",
        r#"subscription_data[0]["stream_id"] field is missing: Field required"#,
    )
    .await;
    s.err(
        "POST",
        "/api/v1/users/me/subscriptions/properties",
        IAGO,
        &[],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'subscription_data' argument",
    )
    .await;
    // The whole list is validated first: a bad later item leaves the first unapplied.
    s.err(
        "POST",
        "/api/v1/users/me/subscriptions/properties",
        IAGO,
        &[(
            "subscription_data",
            r##"[{"stream_id":3,"property":"color","value":"#123456"},{"stream_id":3,"property":"nope","value":true}]"##,
        )],
        400,
        "BAD_REQUEST",
        "Unknown subscription property: nope",
    )
    .await;
    assert!(s.events(IAGO, &q).await.is_empty());

    // All nine properties, with ignored parameters reported.
    let data = r##"[{"stream_id":3,"property":"color","value":"#abcdef"},
        {"stream_id":3,"property":"is_muted","value":true},
        {"stream_id":3,"property":"in_home_view","value":true},
        {"stream_id":3,"property":"pin_to_top","value":true},
        {"stream_id":3,"property":"desktop_notifications","value":true},
        {"stream_id":3,"property":"audible_notifications","value":false},
        {"stream_id":3,"property":"push_notifications","value":true},
        {"stream_id":3,"property":"email_notifications","value":false},
        {"stream_id":3,"property":"wildcard_mentions_notify","value":true}]"##;
    let body = s
        .ok(
            "POST",
            "/api/v1/users/me/subscriptions/properties",
            IAGO,
            &[("subscription_data", data), ("bogus", "1")],
        )
        .await;
    assert_eq!(
        body,
        json!({"result": "success", "msg": "", "ignored_parameters_unsupported": ["bogus"]})
    );
    let ev = s.events(IAGO, &q).await;
    let got: Vec<(Value, Value)> = ev
        .iter()
        .map(|e| {
            assert_eq!(e["type"], "subscription");
            assert_eq!(e["op"], "update");
            assert_eq!(e["stream_id"], 3);
            (e["property"].clone(), e["value"].clone())
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (json!("color"), json!("#abcdef")),
            (json!("in_home_view"), json!(false)),
            (json!("is_muted"), json!(true)),
            (json!("in_home_view"), json!(true)),
            (json!("is_muted"), json!(false)),
            (json!("pin_to_top"), json!(true)),
            (json!("desktop_notifications"), json!(true)),
            (json!("audible_notifications"), json!(false)),
            (json!("push_notifications"), json!(true)),
            (json!("email_notifications"), json!(false)),
            (json!("wildcard_mentions_notify"), json!(true)),
        ]
    );
    assert!(s.events(HAMLET, &other).await.is_empty());
    // A guest sets a property on a subscribed channel.
    s.ok(
        "POST",
        "/api/v1/users/me/subscriptions/properties",
        POLONIUS,
        &[(
            "subscription_data",
            r#"[{"stream_id":3,"property":"is_muted","value":true}]"#,
        )],
    )
    .await;

    s.restart().await;
    let body = s
        .ok("GET", "/api/v1/users/me/subscriptions", IAGO, &[])
        .await;
    let verona = find(&body["subscriptions"], "Verona").unwrap();
    assert_eq!(verona["color"], "#abcdef");
    assert_eq!(verona["is_muted"], false);
    assert_eq!(verona["in_home_view"], true);
    assert_eq!(verona["pin_to_top"], true);
    assert_eq!(verona["desktop_notifications"], true);
    assert_eq!(verona["audible_notifications"], false);
    assert_eq!(verona["email_notifications"], false);
    assert_eq!(verona["wildcard_mentions_notify"], true);
    let body = s
        .ok("GET", "/api/v1/users/me/subscriptions", POLONIUS, &[])
        .await;
    assert_eq!(
        find(&body["subscriptions"], "Verona").unwrap()["is_muted"],
        true
    );
    s.stop().await;
}

/// Zulip's `bulk_principals_to_user_profiles` (`zerver/views/streams.py`): every
/// principal must exist ("No such user") before any is refused as deactivated by
/// `access_user_common` ("User is deactivated").
#[actix_web::test]
async fn unsubscribe_deactivated_principal() {
    let s = TestApp::spawn().await;
    s.ok("DELETE", &format!("/api/v1/users/{OTHELLO_ID}"), IAGO, &[])
        .await;
    for principals in ["[12]", r#"["user12@zulipdev.com"]"#, "[12, 10]"] {
        s.err(
            "DELETE",
            "/api/v1/users/me/subscriptions",
            IAGO,
            &[
                ("subscriptions", r#"["Verona"]"#),
                ("principals", principals),
            ],
            400,
            "BAD_REQUEST",
            "User is deactivated",
        )
        .await;
    }
    s.err(
        "DELETE",
        "/api/v1/users/me/subscriptions",
        IAGO,
        &[
            ("subscriptions", r#"["Verona"]"#),
            ("principals", "[12, 999]"),
        ],
        400,
        "BAD_REQUEST",
        "No such user",
    )
    .await;
}

#[actix_web::test]
async fn unsubscribe_seed_4_5() {
    let mut s = TestApp::spawn().await;
    // Missing channel: the seed's STREAM_DOES_NOT_EXIST with `stream`; nothing removed.
    let (st, body) = s
        .call(
            "DELETE",
            "/api/v1/users/me/subscriptions",
            IAGO,
            &[("subscriptions", r#"["Verona","no such channel"]"#)],
        )
        .await;
    assert_eq!(st, 400);
    assert_eq!(
        body,
        json!({"result": "error", "msg": "Channel 'no such channel' does not exist",
               "code": "STREAM_DOES_NOT_EXIST", "stream": "no such channel"})
    );
    let body = s
        .ok("GET", "/api/v1/users/10/subscriptions/3", IAGO, &[])
        .await;
    assert_eq!(body["is_subscribed"], true);

    let q_hamlet = s.register(HAMLET, &[]).await;
    let q_othello = s.register(OTHELLO, &[]).await;
    // Self: removed and not_removed.
    let body = s
        .ok(
            "DELETE",
            "/api/v1/users/me/subscriptions",
            HAMLET,
            &[("subscriptions", r#"["Verona","Denmark"]"#)],
        )
        .await;
    assert_eq!(body["removed"], json!(["Verona"]));
    assert_eq!(body["not_removed"], json!(["Denmark"]));
    let ev = s.events(HAMLET, &q_hamlet).await;
    assert_eq!(
        ev[0],
        json!({"type": "subscription", "op": "remove", "id": 0,
               "subscriptions": [{"name": "Verona", "stream_id": 3}]})
    );
    let ev = s.events(OTHELLO, &q_othello).await;
    assert_eq!(
        ev[0],
        json!({"type": "subscription", "op": "peer_remove", "id": 0,
               "stream_ids": [3], "user_ids": [10]})
    );

    // Principals: API emails, not real ones; user ids; unknown users.
    s.err(
        "DELETE",
        "/api/v1/users/me/subscriptions",
        IAGO,
        &[
            ("subscriptions", r#"["Verona"]"#),
            ("principals", r#"["othello@zulip.com"]"#),
        ],
        400,
        "BAD_REQUEST",
        "No such user",
    )
    .await;
    s.err(
        "DELETE",
        "/api/v1/users/me/subscriptions",
        IAGO,
        &[("subscriptions", r#"["Verona"]"#), ("principals", "[999]")],
        400,
        "BAD_REQUEST",
        "No such user",
    )
    .await;
    let body = s
        .ok(
            "DELETE",
            "/api/v1/users/me/subscriptions",
            IAGO,
            &[
                ("subscriptions", r#"["Verona"]"#),
                ("principals", r#"["user12@zulipdev.com"]"#),
            ],
        )
        .await;
    assert_eq!(body["removed"], json!(["Verona"]));
    // (a) administrators: any user, any channel (core team is private, iago not in it).
    let body = s
        .ok(
            "DELETE",
            "/api/v1/users/me/subscriptions",
            IAGO,
            &[("subscriptions", r#"["core team"]"#), ("principals", "[7]")],
        )
        .await;
    assert_eq!(body["removed"], json!(["core team"]));
    // Members, moderators and guests may not remove others ...
    for who in [CORDELIA, SHIVA, POLONIUS] {
        s.err(
            "DELETE",
            "/api/v1/users/me/subscriptions",
            who,
            &[("subscriptions", r#"["Denmark"]"#), ("principals", "[6]")],
            400,
            "BAD_REQUEST",
            "Insufficient permission",
        )
        .await;
    }
    // ... (c) unless in can_remove_subscribers_group and with access.
    s.ok(
        "PATCH",
        "/api/v1/streams/4",
        IAGO,
        &[("can_remove_subscribers_group", r#"{"new": 4}"#)],
    )
    .await;
    let body = s
        .ok(
            "DELETE",
            "/api/v1/users/me/subscriptions",
            SHIVA,
            &[("subscriptions", r#"["Denmark"]"#), ("principals", "[6]")],
        )
        .await;
    assert_eq!(body["removed"], json!(["Denmark"]));
    s.err(
        "DELETE",
        "/api/v1/users/me/subscriptions",
        CORDELIA,
        &[("subscriptions", r#"["Denmark"]"#), ("principals", "[7]")],
        400,
        "BAD_REQUEST",
        "Insufficient permission",
    )
    .await;
    // (b) the owner of a bot; not someone else's bot.
    let bot = s
        .ok(
            "POST",
            "/api/v1/bots",
            HAMLET,
            &[("full_name", "Hamlet's bot"), ("short_name", "hamlets")],
        )
        .await;
    let bot_id = bot["user_id"].as_i64().unwrap().to_string();
    s.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        HAMLET,
        &[
            ("subscriptions", r#"[{"name":"Denmark"}]"#),
            ("principals", &format!("[{bot_id}]")),
        ],
    )
    .await;
    s.err(
        "DELETE",
        "/api/v1/users/me/subscriptions",
        CORDELIA,
        &[
            ("subscriptions", r#"["Denmark"]"#),
            ("principals", &format!("[{bot_id}]")),
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
            HAMLET,
            &[
                ("subscriptions", r#"["Denmark"]"#),
                ("principals", &format!("[{bot_id}]")),
            ],
        )
        .await;
    assert_eq!(body["removed"], json!(["Denmark"]));
    // Archived channels can be modified.
    s.ok("DELETE", "/api/v1/streams/13", IAGO, &[]).await;
    let body = s
        .ok(
            "DELETE",
            "/api/v1/users/me/subscriptions",
            CORDELIA,
            &[("subscriptions", r#"["social"]"#)],
        )
        .await;
    assert_eq!(body["removed"], json!(["social"]));
    // A private channel: the removed user loses sight of it.
    let q_cordelia = s.register(CORDELIA, &[]).await;
    s.ok(
        "DELETE",
        "/api/v1/users/me/subscriptions",
        CORDELIA,
        &[("subscriptions", r#"["core team"]"#)],
    )
    .await;
    let ev = s.events(CORDELIA, &q_cordelia).await;
    assert_eq!(ev[0]["op"], "remove");
    assert_eq!(
        ev.last().unwrap(),
        &json!({"type": "stream", "op": "delete", "id": ev.len() - 1,
                "streams": [{"stream_id": 8}], "stream_ids": [8]})
    );

    s.restart().await;
    for (user, sid) in [(10, 3), (12, 3), (7, 8), (6, 4), (8, 13), (8, 8)] {
        let body = s
            .ok(
                "GET",
                &format!("/api/v1/users/{user}/subscriptions/{sid}"),
                IAGO,
                &[],
            )
            .await;
        assert_eq!(body["is_subscribed"], false, "user {user} channel {sid}");
    }
    s.stop().await;
}

#[actix_web::test]
async fn default_channels_seed_4_20() {
    let mut s = TestApp::spawn().await;
    for who in [HAMLET, SHIVA, POLONIUS] {
        s.err(
            "POST",
            "/api/v1/default_streams",
            who,
            &[],
            400,
            "UNAUTHORIZED_PRINCIPAL",
            "Must be an organization administrator",
        )
        .await;
    }
    s.err(
        "POST",
        "/api/v1/default_streams",
        IAGO,
        &[("stream_id", "99999")],
        400,
        "BAD_REQUEST",
        "Invalid channel ID",
    )
    .await;
    s.err(
        "POST",
        "/api/v1/default_streams",
        IAGO,
        &[("stream_id", "8")],
        400,
        "BAD_REQUEST",
        "Invalid channel ID",
    )
    .await;
    s.err(
        "POST",
        "/api/v1/default_streams",
        IAGO,
        &[],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'stream_id' argument",
    )
    .await;
    s.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        IAGO,
        &[
            ("subscriptions", r#"[{"name":"oracle-private"}]"#),
            ("invite_only", "true"),
        ],
    )
    .await;
    let private = s.stream_id("oracle-private").await.to_string();
    let (st, body) = s
        .call(
            "POST",
            "/api/v1/default_streams",
            IAGO,
            &[("stream_id", &private)],
        )
        .await;
    assert_eq!(
        (st, body["msg"].clone()),
        (400, json!("Private channels cannot be made default."))
    );

    let q = s.register(HAMLET, &[]).await;
    let q_guest = s.register(POLONIUS, &[]).await;
    let (st, body) = s
        .call(
            "POST",
            "/api/v1/default_streams",
            DESDEMONA,
            &[("stream_id", "4")],
        )
        .await;
    assert_eq!((st, body), (200, json!({"result": "success", "msg": ""})));
    let ev = s.events(HAMLET, &q).await;
    assert_eq!(
        ev,
        vec![
            json!({"type": "default_streams", "default_streams": [1, 2, 3, 4, 10, 11, 13, 14], "id": 0})
        ]
    );
    assert!(s.events(POLONIUS, &q_guest).await.is_empty());
    // Repeat: success, no event.
    s.ok(
        "POST",
        "/api/v1/default_streams",
        IAGO,
        &[("stream_id", "4")],
    )
    .await;
    assert_eq!(s.events(HAMLET, &q).await.len(), 1);
    let body = s
        .ok(
            "GET",
            "/api/v1/streams",
            HAMLET,
            &[("include_default", "true")],
        )
        .await;
    assert_eq!(
        find(&body["streams"], "Denmark").unwrap()["is_default"],
        true
    );
    // A new user joins the default channels.
    let body = s
        .ok(
            "POST",
            "/api/v1/users",
            IAGO,
            &[
                ("email", "newbie@zulip.com"),
                ("password", "a strong pass phrase"),
                ("full_name", "Newbie"),
            ],
        )
        .await;
    let newbie = body["user_id"].as_i64().unwrap();
    let body = s
        .ok(
            "GET",
            &format!("/api/v1/users/{newbie}/subscriptions/4"),
            IAGO,
            &[],
        )
        .await;
    assert_eq!(body["is_subscribed"], true);
    let body = s
        .ok(
            "GET",
            &format!("/api/v1/users/{newbie}/subscriptions/5"),
            IAGO,
            &[],
        )
        .await;
    assert_eq!(body["is_subscribed"], false);
    // Removal.
    s.err(
        "DELETE",
        "/api/v1/default_streams",
        HAMLET,
        &[("stream_id", "4")],
        400,
        "UNAUTHORIZED_PRINCIPAL",
        "Must be an organization administrator",
    )
    .await;
    s.ok(
        "DELETE",
        "/api/v1/default_streams",
        IAGO,
        &[("stream_id", "3")],
    )
    .await;
    s.restart().await;
    let reg = s.ok("POST", "/api/v1/register", HAMLET, &[]).await;
    assert_eq!(
        reg["realm_default_streams"],
        json!([1, 2, 4, 10, 11, 13, 14])
    );
    let body = s.ok("GET", "/api/v1/streams/3", HAMLET, &[]).await;
    assert!(
        body["stream"]["is_default"].is_null(),
        "a basic channel object"
    );
    s.stop().await;
}

#[actix_web::test]
async fn channel_folders_seed_4_19() {
    let mut s = TestApp::spawn().await;
    for who in [HAMLET, SHIVA, POLONIUS] {
        s.err(
            "PATCH",
            "/api/v1/channel_folders",
            who,
            &[],
            400,
            "UNAUTHORIZED_PRINCIPAL",
            "Must be an organization administrator",
        )
        .await;
        s.err(
            "POST",
            "/api/v1/channel_folders/create",
            who,
            &[],
            400,
            "UNAUTHORIZED_PRINCIPAL",
            "Must be an organization administrator",
        )
        .await;
    }
    let body = s.ok("GET", "/api/v1/channel_folders", HAMLET, &[]).await;
    assert_eq!(body["channel_folders"][1]["name"], "Information");
    assert_eq!(
        body["channel_folders"][1]["rendered_description"],
        "<p>For user-facing information and questions</p>"
    );
    let q = s.register(HAMLET, &[]).await;
    let body = s
        .ok(
            "POST",
            "/api/v1/channel_folders/create",
            IAGO,
            &[("name", "Archive me"), ("description", "Old *stuff*")],
        )
        .await;
    assert_eq!(body["channel_folder_id"], 3);
    s.err(
        "POST",
        "/api/v1/channel_folders/create",
        IAGO,
        &[("name", "archive ME")],
        400,
        "BAD_REQUEST",
        "Channel folder name already in use",
    )
    .await;
    s.err(
        "POST",
        "/api/v1/channel_folders/create",
        IAGO,
        &[("name", "  ")],
        400,
        "BAD_REQUEST",
        "Channel folder name can't be empty.",
    )
    .await;
    let ev = s.events(HAMLET, &q).await;
    assert_eq!(ev[0]["type"], "channel_folder");
    assert_eq!(ev[0]["op"], "add");
    assert_eq!(ev[0]["channel_folder"]["name"], "Archive me");
    assert_eq!(
        ev[0]["channel_folder"]["rendered_description"],
        "<p>Old <em>stuff</em></p>"
    );
    assert_eq!(ev[0]["channel_folder"]["order"], 3);
    // Update and archive.
    s.err(
        "PATCH",
        "/api/v1/channel_folders/99",
        IAGO,
        &[("name", "x")],
        400,
        "BAD_REQUEST",
        "Invalid channel folder ID",
    )
    .await;
    s.err(
        "PATCH",
        "/api/v1/channel_folders/1",
        IAGO,
        &[("is_archived", "true")],
        400,
        "BAD_REQUEST",
        "You need to remove all the channels from this folder to archive it.",
    )
    .await;
    s.ok(
        "PATCH",
        "/api/v1/channel_folders/3",
        IAGO,
        &[("name", "Archived"), ("is_archived", "true")],
    )
    .await;
    let ev = s.events(HAMLET, &q).await;
    assert_eq!(
        ev[1..],
        [
            json!({"type": "channel_folder", "op": "update", "channel_folder_id": 3, "data": {"name": "Archived"}, "id": 1}),
            json!({"type": "channel_folder", "op": "update", "channel_folder_id": 3, "data": {"is_archived": true}, "id": 2}),
        ]
    );
    let body = s.ok("GET", "/api/v1/channel_folders", HAMLET, &[]).await;
    assert_eq!(body["channel_folders"].as_array().unwrap().len(), 2);
    let body = s
        .ok(
            "GET",
            "/api/v1/channel_folders",
            HAMLET,
            &[("include_archived", "true")],
        )
        .await;
    assert_eq!(body["channel_folders"][2]["is_archived"], true);
    // Reorder: every folder, archived ones included.
    // A folder missing, one twice, the archived one left out.
    for order in ["[1]", "[1,1]", "[2,1]"] {
        s.err(
            "PATCH",
            "/api/v1/channel_folders",
            IAGO,
            &[("order", order)],
            400,
            "BAD_REQUEST",
            "Invalid order mapping.",
        )
        .await;
    }
    s.err(
        "PATCH",
        "/api/v1/channel_folders",
        IAGO,
        &[("order", "notjson")],
        400,
        "BAD_REQUEST",
        "order is not valid JSON",
    )
    .await;
    let (st, body) = s
        .call(
            "PATCH",
            "/api/v1/channel_folders",
            IAGO,
            &[("order", "[3,2,1,999]")],
        )
        .await;
    assert_eq!((st, body), (200, json!({"result": "success", "msg": ""})));
    s.ok(
        "PATCH",
        "/api/v1/channel_folders",
        IAGO,
        &[("order", "[2,1,3,2]")],
    )
    .await;
    let ev = s.events(HAMLET, &q).await;
    assert_eq!(
        ev[3..],
        [
            json!({"type": "channel_folder", "op": "reorder", "order": [3, 2, 1, 999], "id": 3}),
            json!({"type": "channel_folder", "op": "reorder", "order": [2, 1, 3, 2], "id": 4}),
        ]
    );
    s.restart().await;
    let body = s
        .ok(
            "GET",
            "/api/v1/channel_folders",
            HAMLET,
            &[("include_archived", "true")],
        )
        .await;
    let order: Vec<(i64, i64)> = body["channel_folders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["id"].as_i64().unwrap(), f["order"].as_i64().unwrap()))
        .collect();
    assert_eq!(order, vec![(1, 1), (3, 2), (2, 3)]);
    assert_eq!(body["channel_folders"][1]["name"], "Archived");
    s.stop().await;
}

#[actix_web::test]
async fn create_patch_archive_channels() {
    let mut s = TestApp::spawn().await;
    let q = s.register(HAMLET, &[]).await;
    // POST /channels/create.
    let body = s
        .ok(
            "POST",
            "/api/v1/channels/create",
            HAMLET,
            &[
                ("name", "new-channel"),
                ("description", "A *new* one"),
                ("subscribers", "[10, 8]"),
                ("folder_id", "2"),
            ],
        )
        .await;
    let id = body["id"].as_i64().unwrap();
    assert_eq!(id, 18);
    let (st, body) = s
        .call(
            "POST",
            "/api/v1/channels/create",
            IAGO,
            &[("name", "NEW-channel")],
        )
        .await;
    assert_eq!(st, 409);
    assert_eq!(body["code"], "CHANNEL_ALREADY_EXISTS");
    assert_eq!(body["msg"], "Channel 'new-channel' already exists");
    s.err(
        "POST",
        "/api/v1/channels/create",
        POLONIUS,
        &[("name", "guest-channel")],
        400,
        "BAD_REQUEST",
        "Not allowed for guest users",
    )
    .await;
    s.err(
        "POST",
        "/api/v1/channels/create",
        HAMLET,
        &[("name", "x"), ("folder_id", "99")],
        400,
        "BAD_REQUEST",
        "Invalid channel folder ID",
    )
    .await;
    s.err(
        "POST",
        "/api/v1/channels/create",
        HAMLET,
        &[("name", "web"), ("is_web_public", "true")],
        400,
        "BAD_REQUEST",
        "Insufficient permission",
    )
    .await;
    let ev = s.events(HAMLET, &q).await;
    assert_eq!(ev[0]["type"], "stream");
    assert_eq!(ev[0]["op"], "create");
    assert_eq!(ev[0]["streams"][0]["name"], "new-channel");
    assert_eq!(ev[0]["streams"][0]["folder_id"], 2);
    assert_eq!(
        ev[0]["streams"][0]["can_administer_channel_group"],
        json!({"direct_members": [10], "direct_subgroups": []})
    );
    assert_eq!(ev[1]["type"], "subscription");
    assert_eq!(ev[1]["op"], "add");
    assert_eq!(ev[1]["subscriptions"][0]["subscribers"], json!([8, 10]));
    assert_eq!(
        ev[1]["subscriptions"][0]["rendered_description"],
        "<p>A <em>new</em> one</p>"
    );

    // POST /users/me/subscriptions: create, already subscribed, unauthorized.
    let body = s
        .ok(
            "POST",
            "/api/v1/users/me/subscriptions",
            IAGO,
            &[
                (
                    "subscriptions",
                    r#"[{"name":"oracle-private","description":"Secret"},{"name":"Verona"}]"#,
                ),
                ("invite_only", "true"),
            ],
        )
        .await;
    assert_eq!(body["subscribed"], json!({"11": ["oracle-private"]}));
    assert_eq!(body["already_subscribed"], json!({"11": ["Verona"]}));
    s.err(
        "POST",
        "/api/v1/users/me/subscriptions",
        HAMLET,
        &[("subscriptions", r#"[{"name":"core team"}]"#)],
        400,
        "BAD_REQUEST",
        "Unable to access channel (core team).",
    )
    .await;
    let body = s
        .ok(
            "POST",
            "/api/v1/users/me/subscriptions",
            HAMLET,
            &[
                (
                    "subscriptions",
                    r#"[{"name":"core team"},{"name":"Denmark"}]"#,
                ),
                ("authorization_errors_fatal", "false"),
            ],
        )
        .await;
    assert_eq!(body["subscribed"], json!({"10": ["Denmark"]}));
    assert_eq!(body["unauthorized"], json!(["core team"]));
    s.err(
        "POST",
        "/api/v1/users/me/subscriptions",
        POLONIUS,
        &[
            ("subscriptions", r#"[{"name":"Verona"}]"#),
            ("principals", "[10]"),
        ],
        400,
        "BAD_REQUEST",
        "Not allowed for guest users",
    )
    .await;
    // A private channel made visible to a new subscriber.
    let q_cordelia = s.register(CORDELIA, &[]).await;
    s.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        IAGO,
        &[
            ("subscriptions", r#"[{"name":"oracle-private"}]"#),
            ("principals", "[8]"),
        ],
    )
    .await;
    let ev = s.events(CORDELIA, &q_cordelia).await;
    assert_eq!(ev[0]["type"], "stream");
    assert_eq!(ev[0]["op"], "create");
    assert_eq!(ev[1]["op"], "add");
    assert_eq!(ev[1]["subscriptions"][0]["subscribers"], json!([8, 11]));

    // PATCH /streams/{id}.
    let q = s.register(HAMLET, &[]).await;
    s.err(
        "PATCH",
        "/api/v1/streams/4",
        CORDELIA,
        &[("description", "x")],
        400,
        "BAD_REQUEST",
        "You do not have permission to administer this channel.",
    )
    .await;
    s.err(
        "PATCH",
        "/api/v1/streams/8",
        HAMLET,
        &[("description", "x")],
        400,
        "BAD_REQUEST",
        "Invalid channel ID",
    )
    .await;
    s.ok(
        "PATCH",
        &format!("/api/v1/streams/{id}"),
        HAMLET,
        &[("new_name", "renamed"), ("description", "**Bold**")],
    )
    .await;
    s.err(
        "PATCH",
        &format!("/api/v1/streams/{id}"),
        HAMLET,
        &[("new_name", "verona")],
        409,
        "CHANNEL_ALREADY_EXISTS",
        "Channel 'Verona' already exists",
    )
    .await;
    s.err(
        "PATCH",
        "/api/v1/streams/3",
        IAGO,
        &[("is_private", "true")],
        400,
        "BAD_REQUEST",
        "A default channel cannot be made private.",
    )
    .await;
    s.ok("PATCH", "/api/v1/streams/4", IAGO, &[("folder_id", "1")])
        .await;
    let ev = s.events(HAMLET, &q).await;
    assert_eq!(
        ev[0],
        json!({"type": "stream", "op": "update", "stream_id": id, "name": "new-channel",
               "property": "description", "value": "**Bold**",
               "rendered_description": "<p><strong>Bold</strong></p>", "id": 0})
    );
    assert_eq!(
        ev[1],
        json!({"type": "stream", "op": "update", "stream_id": id, "name": "new-channel",
               "property": "name", "value": "renamed", "id": 1})
    );
    assert_eq!(
        ev[2],
        json!({"type": "stream", "op": "update", "stream_id": 4, "name": "Denmark",
               "property": "folder_id", "value": 1, "id": 2})
    );

    // Archive and unarchive.
    let q_cap = s
        .register(
            HAMLET,
            &[("client_capabilities", r#"{"archived_channels": true}"#)],
        )
        .await;
    s.err(
        "DELETE",
        "/api/v1/streams/4",
        HAMLET,
        &[],
        400,
        "BAD_REQUEST",
        "You do not have permission to administer this channel.",
    )
    .await;
    s.ok("DELETE", "/api/v1/streams/4", IAGO, &[]).await;
    s.err(
        "DELETE",
        "/api/v1/streams/4",
        IAGO,
        &[],
        400,
        "BAD_REQUEST",
        "Channel is already deactivated",
    )
    .await;
    let ev = s.events(HAMLET, &q).await;
    assert_eq!(
        ev[3],
        json!({"type": "stream", "op": "delete", "streams": [{"stream_id": 4}], "stream_ids": [4], "id": 3})
    );
    let ev = s.events(HAMLET, &q_cap).await;
    assert_eq!(
        ev[0],
        json!({"type": "stream", "op": "update", "stream_id": 4, "name": "Denmark",
               "property": "is_archived", "value": true, "id": 0})
    );
    let body = s.ok("GET", "/api/v1/streams", HAMLET, &[]).await;
    assert!(!names(&body["streams"]).contains(&"Denmark".to_owned()));
    let body = s
        .ok(
            "GET",
            "/api/v1/streams",
            HAMLET,
            &[("exclude_archived", "false")],
        )
        .await;
    assert_eq!(
        find(&body["streams"], "Denmark").unwrap()["is_archived"],
        true
    );

    s.restart().await;
    let body = s.ok("GET", "/api/v1/streams/4", IAGO, &[]).await;
    assert_eq!(body["stream"]["is_archived"], true);
    assert_eq!(body["stream"]["folder_id"], 1);
    let body = s
        .ok("GET", &format!("/api/v1/streams/{id}"), HAMLET, &[])
        .await;
    assert_eq!(body["stream"]["name"], "renamed");
    assert_eq!(body["stream"]["description"], "**Bold**");
    let body = s
        .ok(
            "GET",
            "/api/v1/get_stream_id",
            IAGO,
            &[("stream", "oracle-private")],
        )
        .await;
    assert_eq!(body["stream_id"], 19);
    s.ok(
        "PATCH",
        "/api/v1/streams/4",
        IAGO,
        &[("is_archived", "false")],
    )
    .await;
    let body = s.ok("GET", "/api/v1/streams/4", IAGO, &[]).await;
    assert_eq!(body["stream"]["is_archived"], false);
    s.stop().await;
}

#[actix_web::test]
async fn bots() {
    let mut s = TestApp::spawn().await;
    let q_owner = s.register(HAMLET, &[]).await;
    let q_admin = s.register(IAGO, &[]).await;
    let q_other = s.register(CORDELIA, &[]).await;
    let body = s
        .ok(
            "POST",
            "/api/v1/bots",
            HAMLET,
            &[("full_name", "Helper Bot"), ("short_name", "helper")],
        )
        .await;
    let bot_id = body["user_id"].as_i64().unwrap();
    assert_eq!(body["api_key"].as_str().unwrap().len(), 32);
    s.err(
        "POST",
        "/api/v1/bots",
        CORDELIA,
        &[("full_name", "Again"), ("short_name", "helper")],
        400,
        "BAD_REQUEST",
        "Username already in use",
    )
    .await;
    s.err(
        "POST",
        "/api/v1/bots",
        POLONIUS,
        &[("full_name", "Guest bot"), ("short_name", "guesty")],
        400,
        "BAD_REQUEST",
        // `@require_member_or_admin`, before `can_create_bots_group` is consulted.
        "Not allowed for guest users",
    )
    .await;
    let ev = s.events(HAMLET, &q_owner).await;
    assert_eq!(ev[0]["type"], "realm_user");
    assert_eq!(ev[0]["person"]["is_bot"], true);
    assert_eq!(ev[1]["type"], "realm_bot");
    assert_eq!(ev[1]["bot"]["email"], "helper-bot@zulipdev.com");
    assert_eq!(ev[1]["bot"]["owner_id"], 10);
    assert_eq!(s.events(IAGO, &q_admin).await[1]["type"], "realm_bot");
    let ev = s.events(CORDELIA, &q_other).await;
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["type"], "realm_user");
    let body = s.ok("GET", "/api/v1/bots", HAMLET, &[]).await;
    assert_eq!(body["bots"].as_array().unwrap().len(), 1);
    assert_eq!(body["bots"][0]["user_id"], bot_id);
    s.restart().await;
    let body = s
        .ok("GET", &format!("/api/v1/users/{bot_id}"), CORDELIA, &[])
        .await;
    assert_eq!(body["user"]["is_bot"], true);
    assert_eq!(body["user"]["bot_type"], 1);
    assert_eq!(body["user"]["bot_owner_id"], 10);
    assert_eq!(body["user"]["email"], "helper-bot@zulipdev.com");
    // Everyone lists their own bots, administrators too.
    let body = s.ok("GET", "/api/v1/bots", IAGO, &[]).await;
    assert_eq!(body["bots"], json!([]));
    let body = s.ok("GET", "/api/v1/bots", HAMLET, &[]).await;
    assert_eq!(body["bots"][0]["user_id"], bot_id);
    s.stop().await;
}
