//! `PATCH /realm` (Zulip's `update_realm`) and the places its settings are enforced:
//! table-driven cases (who, request, status, code, msg, body fields) for every role
//! against every editable setting, Zulip's value rules and check order, the realm
//! events, `/register`, what survives a restart, and a before/after check of each
//! enforced setting (channel creation, adding subscribers, bots, custom emoji, direct
//! messages, wildcard mentions, message edit, move and delete policies and limits).
//! Also `GET /users` with `user_ids`.
//!
//! Roles: owner desdemona, administrator iago, moderator shiva, members hamlet and
//! cordelia, guest polonius. System groups of the development realm: 1 nobody,
//! 2 owners, 3 administrators, 4 moderators, 5 full members, 6 members, 7 everyone,
//! 8 internet; named groups that tests create come next.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use hearth::realm::ManualClock;
use reqwest::Method;
use serde_json::{json, Value};

/// The first group a test creates.
const NAMED: i64 = HAMLET_CHARACTERS + 1;

/// Every role, lowest first (the order the tables use).
const ROLES: [&str; 5] = [POLONIUS, HAMLET, SHIVA, IAGO, DESDEMONA];

/// The group settings `PATCH /realm` changes: name, a first and a second value (both
/// valid, neither the default), and whether only owners may change it.
const SETTINGS: [(&str, i64, i64, bool); 20] = [
    ("create_multiuse_invite_group", MODERATORS, OWNERS, true),
    ("can_add_subscribers_group", MODERATORS, ADMINS, false),
    ("can_add_custom_emoji_group", MODERATORS, ADMINS, false),
    ("can_create_bots_group", MODERATORS, ADMINS, false),
    ("can_create_groups", MODERATORS, ADMINS, true),
    ("can_create_public_channel_group", MODERATORS, ADMINS, false),
    (
        "can_create_private_channel_group",
        MODERATORS,
        ADMINS,
        false,
    ),
    (
        "can_create_web_public_channel_group",
        MODERATORS,
        ADMINS,
        false,
    ),
    (
        "can_create_write_only_bots_group",
        MODERATORS,
        ADMINS,
        false,
    ),
    ("can_delete_any_message_group", MODERATORS, OWNERS, false),
    ("can_delete_own_message_group", MODERATORS, ADMINS, false),
    ("can_invite_users_group", MODERATORS, ADMINS, true),
    ("can_manage_all_groups", MODERATORS, ADMINS, true),
    ("can_mention_many_users_group", MODERATORS, OWNERS, false),
    (
        "can_move_messages_between_channels_group",
        MODERATORS,
        ADMINS,
        false,
    ),
    (
        "can_move_messages_between_topics_group",
        MODERATORS,
        ADMINS,
        false,
    ),
    ("can_resolve_topics_group", MODERATORS, ADMINS, false),
    ("can_set_topics_policy_group", MODERATORS, ADMINS, false),
    ("direct_message_initiator_group", MODERATORS, ADMINS, false),
    ("direct_message_permission_group", MODERATORS, ADMINS, false),
];

/// Zulip's defaults of those settings (the development realm's values).
const DEFAULTS: [(&str, i64); 20] = [
    ("create_multiuse_invite_group", ADMINS),
    ("can_add_subscribers_group", MEMBERS),
    ("can_add_custom_emoji_group", MEMBERS),
    ("can_create_bots_group", MEMBERS),
    ("can_create_groups", MEMBERS),
    ("can_create_public_channel_group", MEMBERS),
    ("can_create_private_channel_group", MEMBERS),
    ("can_create_web_public_channel_group", OWNERS),
    ("can_create_write_only_bots_group", MEMBERS),
    ("can_delete_any_message_group", ADMINS),
    ("can_delete_own_message_group", EVERYONE),
    ("can_invite_users_group", MEMBERS),
    ("can_manage_all_groups", OWNERS),
    ("can_mention_many_users_group", ADMINS),
    ("can_move_messages_between_channels_group", MEMBERS),
    ("can_move_messages_between_topics_group", EVERYONE),
    ("can_resolve_topics_group", EVERYONE),
    ("can_set_topics_policy_group", MEMBERS),
    ("direct_message_initiator_group", EVERYONE),
    ("direct_message_permission_group", EVERYONE),
];

/// `{"new": value}`.
fn new(value: impl std::fmt::Display) -> String {
    format!(r#"{{"new": {value}}}"#)
}

/// `PATCH /realm`, which must succeed; returns the body.
async fn patch(s: &TestApp, who: &str, params: &[(&str, &str)]) -> Value {
    s.ok("PATCH", "/api/v1/realm", who, params).await
}

/// The `realm` part of `/register` for `who`.
async fn realm_state(s: &TestApp, who: &str) -> Value {
    s.ok(
        "POST",
        "/api/v1/register",
        who,
        &[("fetch_event_types", r#"["realm", "realm_user"]"#)],
    )
    .await
}

/// A queue receiving realm events only.
async fn realm_queue(s: &TestApp, who: &str) -> String {
    s.register(who, &[("event_types", r#"["realm"]"#)]).await
}

/// The events of a queue without their ids.
async fn events(s: &TestApp, who: &str, queue: &str) -> Vec<Value> {
    s.events(who, queue)
        .await
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect()
}

/// Sends a channel message; returns its id.
async fn post(s: &TestApp, who: &str, channel: &str, topic: &str, content: &str) -> i64 {
    let body = s
        .ok(
            "POST",
            "/api/v1/messages",
            who,
            &[
                ("type", "stream"),
                ("to", channel),
                ("topic", topic),
                ("content", content),
            ],
        )
        .await;
    body["id"].as_i64().unwrap()
}

/// Sends a channel message: status and body.
async fn send_in(
    s: &TestApp,
    who: &str,
    channel: &str,
    topic: &str,
    content: &str,
) -> (u16, Value) {
    s.call(
        "POST",
        "/api/v1/messages",
        who,
        &[
            ("type", "stream"),
            ("to", channel),
            ("topic", topic),
            ("content", content),
        ],
    )
    .await
}

/// `PATCH /messages/{id}` as `who`: status and body.
async fn edit_as(s: &TestApp, who: &str, id: i64, params: &[(&str, &str)]) -> (u16, Value) {
    s.call("PATCH", &format!("/api/v1/messages/{id}"), who, params)
        .await
}

/// `DELETE /messages/{id}` as `who`: status and body.
async fn delete_as(s: &TestApp, who: &str, id: i64) -> (u16, Value) {
    s.call("DELETE", &format!("/api/v1/messages/{id}"), who, &[])
        .await
}

/// Sends a direct message to `to` (user ids): status and body.
async fn dm(s: &TestApp, who: &str, to: &[i64], content: &str) -> (u16, Value) {
    let to = serde_json::to_string(to).unwrap();
    s.call(
        "POST",
        "/api/v1/messages",
        who,
        &[("type", "direct"), ("to", &to), ("content", content)],
    )
    .await
}

fn assert_refused(reply: (u16, Value), code: &str, msg: &str) {
    assert_eq!(reply.0, 400, "{}", reply.1);
    assert_eq!(reply.1["result"], "error", "{}", reply.1);
    assert_eq!(reply.1["code"], code, "{}", reply.1);
    assert_eq!(reply.1["msg"], msg, "{}", reply.1);
}

fn assert_ok(reply: (u16, Value)) -> Value {
    assert_eq!(reply.0, 200, "{}", reply.1);
    assert_eq!(reply.1["result"], "success", "{}", reply.1);
    reply.1
}

/// Subscribes `who` (or `principals`) to `names`, creating missing channels.
async fn subscribe(s: &TestApp, who: &str, names: &[&str], extra: &[(&str, &str)]) -> (u16, Value) {
    let subs: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
    let subs = serde_json::to_string(&subs).unwrap();
    let mut params = vec![("subscriptions", subs.as_str())];
    params.extend_from_slice(extra);
    s.call("POST", "/api/v1/users/me/subscriptions", who, &params)
        .await
}

// ---- PATCH /realm ---------------------------------------------------------------

#[actix_web::test]
async fn every_role_against_every_group_setting() {
    let mut s = TestApp::spawn().await;
    let mut table = Vec::new();
    for who in ROLES {
        // The role check comes before the parameters.
        if who != IAGO && who != DESDEMONA {
            table.push(not_admin(who, vec![]));
            table.push(not_admin(who, p(&[("can_create_bots_group", "nonsense")])));
        }
    }
    for (name, first, second, owner_only) in SETTINGS {
        for who in [POLONIUS, HAMLET, SHIVA] {
            table.push(not_admin(who, vec![(name, new(first))]));
        }
        if owner_only {
            table.push(not_owner(IAGO, vec![(name, new(first))]));
            table.push(ok(
                DESDEMONA,
                vec![(name, new(first))],
                json!({name: first}),
            ));
        } else {
            table.push(ok(IAGO, vec![(name, new(first))], json!({name: first})));
            table.push(ok(
                DESDEMONA,
                vec![(name, new(second))],
                json!({name: second}),
            ));
        }
        // The same value again changes nothing and reports nothing.
        let now = if owner_only { first } else { second };
        table.push(ok(DESDEMONA, vec![(name, new(now))], json!({})));
    }
    run_cases(&s, "PATCH", "/api/v1/realm", &table).await;

    let expect = |body: &Value| {
        for (name, first, second, owner_only) in SETTINGS {
            let want = if owner_only { first } else { second };
            assert_eq!(body[format!("realm_{name}")], want, "{name}");
        }
    };
    expect(&realm_state(&s, HAMLET).await);
    s.restart().await;
    expect(&realm_state(&s, HAMLET).await);
}

#[actix_web::test]
async fn every_role_against_a_bad_value_of_every_group_setting() {
    let s = TestApp::spawn().await;
    let mut table = Vec::new();
    for (name, _, _, owner_only) in SETTINGS {
        let internet = format!("'{name}' setting cannot be set to 'role:internet' group.");
        for who in [POLONIUS, HAMLET, SHIVA] {
            table.push(not_admin(who, vec![(name, new(INTERNET))]));
        }
        if owner_only {
            // The owner check comes before the value's.
            table.push(not_owner(IAGO, vec![(name, new(INTERNET))]));
        } else {
            table.push(bad(IAGO, vec![(name, new(INTERNET))], internet.clone()));
        }
        table.push(bad(DESDEMONA, vec![(name, new(INTERNET))], internet));
        table.push(bad(DESDEMONA, vec![(name, new(999))], "Invalid user group"));
        table.push(bad(
            DESDEMONA,
            vec![(name, "nonsense".into())],
            format!("{name} is not valid JSON"),
        ));
        table.push(bad(
            DESDEMONA,
            vec![(name, r#"{"old": 1}"#.into())],
            format!("{name}[\"new\"] field is missing: Field required"),
        ));
    }
    run_cases(&s, "PATCH", "/api/v1/realm", &table).await;
    // Nothing changed.
    let body = realm_state(&s, HAMLET).await;
    for (name, value) in DEFAULTS {
        assert_eq!(body[format!("realm_{name}")], value, "{name}");
    }
}

#[actix_web::test]
async fn group_setting_value_rules() {
    let s = TestApp::spawn().await;
    let hamlet = s.user_id(HAMLET).await;
    let members = format!("[{hamlet}]");
    let body = s
        .ok(
            "POST",
            "/api/v1/user_groups/create",
            HAMLET,
            &[
                ("name", "testers"),
                ("description", "t"),
                ("members", &members),
            ],
        )
        .await;
    assert_eq!(body["group_id"], NAMED);
    let everyone = |name: &str| format!("'{name}' setting cannot be set to 'role:everyone' group.");
    let web = "can_create_web_public_channel_group";
    let mut table = Vec::new();
    // `allow_everyone_group=False`.
    for name in [
        "create_multiuse_invite_group",
        "can_add_subscribers_group",
        "can_add_custom_emoji_group",
        "can_create_bots_group",
        "can_create_groups",
        "can_create_public_channel_group",
        "can_create_private_channel_group",
        "can_create_web_public_channel_group",
        "can_create_write_only_bots_group",
        "can_delete_any_message_group",
        "can_invite_users_group",
        "can_manage_all_groups",
        "can_move_messages_between_channels_group",
    ] {
        table.push(bad(DESDEMONA, vec![(name, new(EVERYONE))], everyone(name)));
    }
    // `allow_everyone_group=True`: role:everyone is fine (changed, then back).
    for name in [
        "can_delete_own_message_group",
        "can_mention_many_users_group",
        "can_move_messages_between_topics_group",
        "can_resolve_topics_group",
        "can_set_topics_policy_group",
        "direct_message_initiator_group",
        "direct_message_permission_group",
    ] {
        table.push(ok(
            DESDEMONA,
            vec![(name, new(NOBODY))],
            json!({name: NOBODY}),
        ));
        table.push(ok(
            DESDEMONA,
            vec![(name, new(EVERYONE))],
            json!({name: EVERYONE}),
        ));
    }
    table.extend([
        // `allow_nobody_group=False`.
        bad(
            DESDEMONA,
            p(&[("can_manage_all_groups", &new(NOBODY))]),
            "'can_manage_all_groups' setting cannot be set to 'role:nobody' group.",
        ),
        ok(
            DESDEMONA,
            p(&[("can_create_bots_group", &new(NOBODY))]),
            json!({"can_create_bots_group": NOBODY}),
        ),
        // Web-public channels: a system group among moderators, administrators, owners
        // and nobody.
        bad(
            DESDEMONA,
            p(&[(web, &new(MEMBERS))]),
            format!("'{web}' setting cannot be set to 'role:members' group."),
        ),
        bad(
            DESDEMONA,
            p(&[(web, &new(NAMED))]),
            format!("'{web}' must be a system user group."),
        ),
        bad(
            DESDEMONA,
            p(&[(
                web,
                &new(format!(
                    r#"{{"direct_members": [{hamlet}], "direct_subgroups": []}}"#
                )),
            )]),
            format!("'{web}' must be a system user group."),
        ),
        ok(DESDEMONA, p(&[(web, &new(NOBODY))]), json!({web: NOBODY})),
        // A set of users and groups.
        ok(
            DESDEMONA,
            p(&[(
                "direct_message_permission_group",
                &new(format!(
                    r#"{{"direct_members": [{hamlet}], "direct_subgroups": [{MODERATORS}]}}"#
                )),
            )]),
            json!({"direct_message_permission_group":
                {"direct_members": [hamlet], "direct_subgroups": [MODERATORS]}}),
        ),
        // One subgroup and no member is that group.
        ok(
            DESDEMONA,
            p(&[(
                "direct_message_permission_group",
                &new(format!(
                    r#"{{"direct_members": [], "direct_subgroups": [{EVERYONE}]}}"#
                )),
            )]),
            json!({"direct_message_permission_group": EVERYONE}),
        ),
        bad(
            DESDEMONA,
            p(&[(
                "can_add_custom_emoji_group",
                r#"{"new": {"direct_members": [999], "direct_subgroups": []}}"#,
            )]),
            "Invalid user ID: 999",
        ),
        bad(
            DESDEMONA,
            p(&[(
                "can_add_custom_emoji_group",
                r#"{"new": {"direct_members": [], "direct_subgroups": [998, 999]}}"#,
            )]),
            "Invalid user group ID: 998",
        ),
        // The expected old value.
        coded(
            DESDEMONA,
            p(&[("can_add_custom_emoji_group", r#"{"new": 3, "old": 5}"#)]),
            "EXPECTATION_MISMATCH",
            "'old' value does not match the expected value.",
        ),
        ok(
            IAGO,
            p(&[("can_add_custom_emoji_group", r#"{"new": 3, "old": 6}"#)]),
            json!({"can_add_custom_emoji_group": ADMINS}),
        ),
        // Parameter errors come in the order of the parameters' names, before the
        // owner check.
        bad(
            IAGO,
            p(&[
                ("can_invite_users_group", "x"),
                ("can_add_subscribers_group", "y"),
            ]),
            "can_add_subscribers_group is not valid JSON",
        ),
        bad(
            IAGO,
            p(&[("can_create_groups", "x")]),
            "can_create_groups is not valid JSON",
        ),
        // The owner check comes before the time limits, which come before the groups.
        not_owner(
            IAGO,
            p(&[
                ("can_invite_users_group", &new(ADMINS)),
                ("message_content_edit_limit_seconds", "0"),
            ]),
        ),
        coded(
            DESDEMONA,
            p(&[
                ("can_add_subscribers_group", &new(EVERYONE)),
                ("message_content_edit_limit_seconds", "0"),
            ]),
            "REQUEST_VARIABLE_INVALID",
            "Bad value for 'message_content_edit_limit_seconds': 0",
        )
        .with_fields(json!({"var_name": "message_content_edit_limit_seconds", "bad_value": 0})),
        // Settings are checked in Zulip's order; one bad value changes nothing.
        bad(
            DESDEMONA,
            p(&[
                ("can_create_bots_group", &new(EVERYONE)),
                ("can_add_custom_emoji_group", &new(MODERATORS)),
                ("name", "Not kept"),
            ]),
            everyone("can_create_bots_group"),
        ),
        // Unknown parameters are reported.
        ok(
            IAGO,
            p(&[
                ("can_add_custom_emoji_group", &new(MEMBERS)),
                ("can_access_all_users_group", &new(MEMBERS)),
                ("bogus", "1"),
            ]),
            json!({"can_add_custom_emoji_group": MEMBERS,
                "ignored_parameters_unsupported": ["bogus", "can_access_all_users_group"]}),
        ),
    ]);
    run_cases(&s, "PATCH", "/api/v1/realm", &table).await;
    let body = realm_state(&s, HAMLET).await;
    assert_eq!(body["realm_name"], "Zulip Dev");
    assert_eq!(body["realm_can_add_custom_emoji_group"], MEMBERS);
    assert_eq!(body["realm_can_access_all_users_group"], EVERYONE);
    assert_eq!(body["realm_can_create_bots_group"], NOBODY);
}

#[actix_web::test]
async fn name_description_and_message_policies() {
    let mut s = TestApp::spawn().await;
    let long_name = "n".repeat(41);
    let long_description = "d".repeat(1001);
    let edit = "message_content_edit_limit_seconds";
    let delete = "message_content_delete_limit_seconds";
    let bad_value = |who, name: &'static str, raw: &str, shown: &str, value: Value| {
        coded(
            who,
            p(&[(name, raw)]),
            "REQUEST_VARIABLE_INVALID",
            format!("Bad value for '{name}': {shown}"),
        )
        .with_fields(json!({"var_name": name, "bad_value": value}))
    };
    let mut table = Vec::new();
    for who in [POLONIUS, HAMLET, SHIVA] {
        table.push(not_admin(who, p(&[("name", "Theirs")])));
        table.push(not_admin(who, p(&[(edit, "\"unlimited\"")])));
        table.push(not_admin(who, p(&[("allow_message_editing", "false")])));
    }
    table.extend([
        bad(
            IAGO,
            p(&[("name", &long_name)]),
            "name is too long (limit: 40 characters)",
        ),
        bad(
            IAGO,
            p(&[("description", &long_description)]),
            "description is too long (limit: 1000 characters)",
        ),
        bad(
            IAGO,
            p(&[("allow_message_editing", "maybe")]),
            "allow_message_editing is not valid JSON",
        ),
        bad(
            IAGO,
            p(&[("allow_message_editing", "1")]),
            "allow_message_editing is not a boolean",
        ),
        bad_value(IAGO, edit, "0", "0", json!(0)),
        bad_value(IAGO, delete, "-5", "-5", json!(-5)),
        bad_value(IAGO, edit, "\"forever\"", "forever", json!("forever")),
        bad(
            IAGO,
            p(&[(edit, "1.5")]),
            format!("{edit}[\"int\"] is not an integer"),
        ),
        bad(
            IAGO,
            p(&[(edit, "unlimited")]),
            format!("{edit} is not valid JSON"),
        ),
        // The name is checked as a parameter, before the time limits.
        bad(
            IAGO,
            p(&[("name", &long_name), (edit, "0")]),
            "name is too long (limit: 40 characters)",
        ),
        // A bad time limit changes nothing.
        bad_value(IAGO, edit, "0", "0", json!(0)),
        ok(
            IAGO,
            p(&[("name", "Hearth Dev"), ("description", "A **warm** place")]),
            json!({"name": "updated", "description": "updated"}),
        ),
        ok(
            DESDEMONA,
            p(&[("name", "Hearth Dev"), ("description", "A **warm** place")]),
            json!({}),
        ),
        // The empty name is accepted, as Zulip does.
        ok(IAGO, p(&[("name", "")]), json!({"name": "updated"})),
        ok(
            DESDEMONA,
            p(&[("name", &"é".repeat(40))]),
            json!({"name": "updated"}),
        ),
        ok(
            IAGO,
            p(&[
                (edit, "300"),
                (delete, "\"unlimited\""),
                ("move_messages_within_stream_limit_seconds", "60"),
                (
                    "move_messages_between_streams_limit_seconds",
                    "\"unlimited\"",
                ),
                ("allow_message_editing", "false"),
            ]),
            json!({edit: 300, delete: null,
                "move_messages_within_stream_limit_seconds": 60,
                "move_messages_between_streams_limit_seconds": null,
                "allow_message_editing": false}),
        ),
        ok(
            IAGO,
            p(&[(edit, "300"), (delete, "\"unlimited\"")]),
            json!({}),
        ),
    ]);
    run_cases(&s, "PATCH", "/api/v1/realm", &table).await;

    let check = |body: &Value| {
        assert_eq!(body["realm_name"], "é".repeat(40));
        assert_eq!(body["realm_description"], "A **warm** place");
        assert_eq!(body["realm_allow_message_editing"], false);
        assert_eq!(body["realm_message_content_edit_limit_seconds"], 300);
        assert_eq!(
            body["realm_message_content_delete_limit_seconds"],
            Value::Null
        );
        assert_eq!(body["realm_move_messages_within_stream_limit_seconds"], 60);
        assert_eq!(
            body["realm_move_messages_between_streams_limit_seconds"],
            Value::Null
        );
    };
    check(&realm_state(&s, HAMLET).await);
    let settings = s.ok("GET", "/api/v1/server_settings", HAMLET, &[]).await;
    assert_eq!(settings["realm_name"], "é".repeat(40));
    assert_eq!(
        settings["realm_description"],
        "<p>A <strong>warm</strong> place</p>"
    );
    s.restart().await;
    check(&realm_state(&s, HAMLET).await);
}

#[actix_web::test]
async fn the_development_realm_description() {
    let s = TestApp::spawn().await;
    let body = realm_state(&s, HAMLET).await;
    assert_eq!(
        body["realm_description"],
        "The Zulip development environment default organization.  It's great for testing!"
    );
    assert_eq!(body["realm_message_content_edit_limit_seconds"], 600);
    assert_eq!(body["realm_message_content_delete_limit_seconds"], 600);
    assert_eq!(
        body["realm_move_messages_within_stream_limit_seconds"],
        259_200
    );
    assert_eq!(
        body["realm_move_messages_between_streams_limit_seconds"],
        259_200
    );
    assert_eq!(body["realm_allow_message_editing"], true);
    // As a running development server answers (`GET /server_settings`).
    let settings = s.ok("GET", "/api/v1/server_settings", HAMLET, &[]).await;
    assert_eq!(
        settings["realm_description"],
        "<p>The Zulip development environment default organization.  It's great for testing!</p>"
    );
    // A blank description shows Zulip's placeholder.
    patch(&s, IAGO, &[("description", "")]).await;
    let settings = s.ok("GET", "/api/v1/server_settings", HAMLET, &[]).await;
    assert_eq!(
        settings["realm_description"],
        "<p>The coolest place in the universe.</p>"
    );
    assert_eq!(realm_state(&s, HAMLET).await["realm_description"], "");
}

#[actix_web::test]
async fn realm_events() {
    let s = TestApp::spawn().await;
    let queues = [
        (HAMLET, realm_queue(&s, HAMLET).await),
        (POLONIUS, realm_queue(&s, POLONIUS).await),
        (DESDEMONA, realm_queue(&s, DESDEMONA).await),
    ];
    let hamlet = s.user_id(HAMLET).await;
    let body = patch(
        &s,
        DESDEMONA,
        &[
            ("can_create_groups", &new(ADMINS)),
            ("can_create_public_channel_group", &new(MODERATORS)),
            (
                "direct_message_permission_group",
                &new(format!(
                    r#"{{"direct_members": [{hamlet}], "direct_subgroups": [{ADMINS}]}}"#
                )),
            ),
            ("message_content_delete_limit_seconds", "\"unlimited\""),
            ("message_content_edit_limit_seconds", "120"),
            ("move_messages_within_stream_limit_seconds", "\"unlimited\""),
            ("move_messages_between_streams_limit_seconds", "30"),
            ("allow_message_editing", "false"),
            ("name", "Renamed"),
            ("description", "Described"),
        ],
    )
    .await;
    assert_eq!(
        body,
        json!({"result": "success", "msg": "",
            "can_create_groups": ADMINS,
            "can_create_public_channel_group": MODERATORS,
            "direct_message_permission_group":
                {"direct_members": [hamlet], "direct_subgroups": [ADMINS]},
            "message_content_delete_limit_seconds": null,
            "message_content_edit_limit_seconds": 120,
            "move_messages_within_stream_limit_seconds": null,
            "move_messages_between_streams_limit_seconds": 30,
            "allow_message_editing": false,
            "name": "updated",
            "description": "updated"})
    );
    let update = |property: &str, value: Value| json!({"type": "realm", "op": "update", "property": property, "value": value});
    let dict = |name: &str, value: Value| json!({"type": "realm", "op": "update_dict", "property": "default", "data": {name: value}});
    // Zulip's order: "unlimited" limits, then the plain properties, then the groups.
    let want = vec![
        update("message_content_delete_limit_seconds", Value::Null),
        update("move_messages_within_stream_limit_seconds", Value::Null),
        dict("allow_message_editing", json!(false)),
        update("description", json!("Described")),
        update("name", json!("Renamed")),
        dict("message_content_edit_limit_seconds", json!(120)),
        update("move_messages_between_streams_limit_seconds", json!(30)),
        dict("can_create_groups", json!(ADMINS)),
        dict("can_create_public_channel_group", json!(MODERATORS)),
        dict(
            "direct_message_permission_group",
            json!({"direct_members": [hamlet], "direct_subgroups": [ADMINS]}),
        ),
    ];
    for (who, queue) in &queues {
        assert_eq!(events(&s, who, queue).await, want, "{who}");
    }
    // No change, no event.
    patch(&s, DESDEMONA, &[("name", "Renamed")]).await;
    assert!(events(&s, HAMLET, &queues[0].1).await.len() == want.len());
}

#[actix_web::test]
async fn register_reports_what_callers_may_do() {
    let s = TestApp::spawn().await;
    let flags = [
        "can_create_streams",
        "can_create_public_streams",
        "can_create_private_streams",
        "can_create_web_public_streams",
        "can_subscribe_other_users",
        "can_invite_others_to_realm",
    ];
    let of = |body: &Value| -> Vec<bool> {
        flags
            .iter()
            .map(|f| body[*f].as_bool().unwrap_or_else(|| panic!("{f}")))
            .collect()
    };
    let before = [
        (DESDEMONA, [true, true, true, true, true, true]),
        (IAGO, [true, true, true, false, true, true]),
        (HAMLET, [true, true, true, false, true, true]),
        (POLONIUS, [false, false, false, false, false, false]),
    ];
    for (who, want) in before {
        assert_eq!(of(&realm_state(&s, who).await), want, "{who}");
    }
    patch(
        &s,
        DESDEMONA,
        &[
            ("can_create_public_channel_group", &new(ADMINS)),
            ("can_create_private_channel_group", &new(MODERATORS)),
            ("can_create_web_public_channel_group", &new(ADMINS)),
            ("can_add_subscribers_group", &new(NOBODY)),
            ("can_invite_users_group", &new(OWNERS)),
        ],
    )
    .await;
    let after = [
        (DESDEMONA, [true, true, true, true, false, true]),
        (IAGO, [true, true, true, true, false, false]),
        (SHIVA, [true, false, true, false, false, false]),
        (HAMLET, [false, false, false, false, false, false]),
    ];
    for (who, want) in after {
        assert_eq!(of(&realm_state(&s, who).await), want, "{who}");
    }
}

// ---- where the settings are enforced ------------------------------------------

#[actix_web::test]
async fn channel_creation() {
    let mut s = TestApp::spawn().await;
    // Zulip's defaults: members create public and private channels, owners web-public
    // ones, administrators default ones.
    assert_ok(subscribe(&s, HAMLET, &["hamlet-public"], &[]).await);
    assert_ok(subscribe(&s, HAMLET, &["hamlet-private"], &[("invite_only", "true")]).await);
    // Guests never reach the channel settings: `@require_non_guest_user`.
    assert_refused(
        subscribe(&s, POLONIUS, &["guest-public"], &[]).await,
        "BAD_REQUEST",
        "Not allowed for guest users",
    );
    assert_refused(
        subscribe(&s, IAGO, &["web"], &[("is_web_public", "true")]).await,
        "BAD_REQUEST",
        INSUFFICIENT,
    );
    assert_ok(subscribe(&s, DESDEMONA, &["web"], &[("is_web_public", "true")]).await);
    assert_refused(
        subscribe(&s, HAMLET, &["default"], &[("is_default_stream", "true")]).await,
        "BAD_REQUEST",
        INSUFFICIENT,
    );
    assert_refused(
        subscribe(
            &s,
            IAGO,
            &["default"],
            &[("is_default_stream", "true"), ("invite_only", "true")],
        )
        .await,
        "BAD_REQUEST",
        "A default channel cannot be private.",
    );
    assert_ok(subscribe(&s, IAGO, &["default"], &[("is_default_stream", "true")]).await);

    patch(
        &s,
        IAGO,
        &[
            ("can_create_public_channel_group", &new(ADMINS)),
            ("can_create_private_channel_group", &new(MODERATORS)),
            ("can_create_web_public_channel_group", &new(ADMINS)),
        ],
    )
    .await;
    s.restart().await;
    assert_refused(
        subscribe(&s, HAMLET, &["hamlet-public-2"], &[]).await,
        "BAD_REQUEST",
        INSUFFICIENT,
    );
    assert_refused(
        subscribe(&s, SHIVA, &["shiva-public"], &[]).await,
        "BAD_REQUEST",
        INSUFFICIENT,
    );
    assert_ok(subscribe(&s, IAGO, &["iago-public"], &[]).await);
    assert_refused(
        subscribe(
            &s,
            HAMLET,
            &["hamlet-private-2"],
            &[("invite_only", "true")],
        )
        .await,
        "BAD_REQUEST",
        INSUFFICIENT,
    );
    assert_ok(subscribe(&s, SHIVA, &["shiva-private"], &[("invite_only", "true")]).await);
    assert_ok(subscribe(&s, IAGO, &["web-2"], &[("is_web_public", "true")]).await);
    // Existing channels are still joined.
    assert_ok(subscribe(&s, HAMLET, &["iago-public"], &[]).await);
    // `POST /channels/create` follows the same settings.
    let (status, body) = s
        .call(
            "POST",
            "/api/v1/channels/create",
            HAMLET,
            &[("name", "created")],
        )
        .await;
    assert_refused((status, body), "BAD_REQUEST", INSUFFICIENT);
    assert_ok(
        s.call(
            "POST",
            "/api/v1/channels/create",
            SHIVA,
            &[("name", "created"), ("invite_only", "true")],
        )
        .await,
    );

    // Changing a channel's privacy needs the permission to create that kind.
    let id = s.stream_id("hamlet-public").await;
    let path = format!("/api/v1/streams/{id}");
    assert_refused(
        s.call("PATCH", &path, HAMLET, &[("is_private", "true")])
            .await,
        "BAD_REQUEST",
        INSUFFICIENT,
    );
    assert_refused(
        s.call("PATCH", &path, HAMLET, &[("is_web_public", "true")])
            .await,
        "BAD_REQUEST",
        INSUFFICIENT,
    );
    assert_ok(
        s.call("PATCH", &path, IAGO, &[("is_web_public", "true")])
            .await,
    );
}

#[actix_web::test]
async fn adding_subscribers() {
    let mut s = TestApp::spawn().await;
    let cordelia = s.user_id(CORDELIA).await.to_string();
    let principals = format!("[{cordelia}]");
    let to_cordelia = [("principals", principals.as_str())];
    // Zulip's default: members add others to channels they can access.
    assert_ok(subscribe(&s, HAMLET, &["Verona"], &to_cordelia).await);
    patch(&s, IAGO, &[("can_add_subscribers_group", &new(ADMINS))]).await;
    s.restart().await;
    for who in [HAMLET, SHIVA] {
        assert_refused(
            subscribe(&s, who, &["Denmark"], &to_cordelia).await,
            "BAD_REQUEST",
            INSUFFICIENT,
        );
    }
    assert_ok(subscribe(&s, IAGO, &["Denmark"], &to_cordelia).await);
    // Subscribing oneself is unaffected, and a channel's creator fills it.
    assert_ok(subscribe(&s, HAMLET, &["Scotland"], &[]).await);
    assert_ok(subscribe(&s, HAMLET, &["hamlet-made"], &to_cordelia).await);
    // The channel's administrators (its creator) may still add subscribers.
    assert_ok(
        subscribe(
            &s,
            HAMLET,
            &["hamlet-made"],
            &[("principals", &format!("[{}]", s.user_id(OTHELLO).await))],
        )
        .await,
    );
}

#[actix_web::test]
async fn bots() {
    let mut s = TestApp::spawn().await;
    let create = |short: &'static str, kind: &'static str| {
        p(&[
            ("full_name", short),
            ("short_name", short),
            ("bot_type", kind),
        ])
    };
    let table = vec![
        // Zulip's defaults: members create any bot.
        ok(
            HAMLET,
            create("generic-one", "1"),
            json!({"user_id": 22, "api_key": "<any>"}),
        ),
        bad(
            POLONIUS,
            create("guest-one", "1"),
            "Not allowed for guest users",
        ),
        bad(
            DEFAULT_BOT,
            create("bot-one", "1"),
            "This endpoint does not accept bot requests.",
        ),
        bad(IAGO, create("odd-type", "9"), "Invalid bot type"),
    ];
    run_bots(&s, &table).await;
    patch(&s, IAGO, &[("can_create_bots_group", &new(ADMINS))]).await;
    s.restart().await;
    let table = vec![
        bad(HAMLET, create("generic-two", "1"), INSUFFICIENT),
        // `can_create_write_only_bots_group` (members) still allows incoming webhooks.
        ok(
            HAMLET,
            create("webhook-two", "2"),
            json!({"user_id": 23, "api_key": "<any>"}),
        ),
        ok(
            IAGO,
            create("generic-three", "1"),
            json!({"user_id": 24, "api_key": "<any>"}),
        ),
        // Names are checked first.
        bad(
            HAMLET,
            create("generic-one", "1"),
            "Username already in use",
        ),
    ];
    run_bots(&s, &table).await;
    patch(
        &s,
        IAGO,
        &[("can_create_write_only_bots_group", &new(ADMINS))],
    )
    .await;
    let table = vec![
        bad(HAMLET, create("webhook-three", "2"), INSUFFICIENT),
        ok(
            SHIVA,
            create("webhook-four", "2"),
            json!({"user_id": 25, "api_key": "<any>"}),
        ),
    ];
    patch(
        &s,
        IAGO,
        &[("can_create_write_only_bots_group", &new(MODERATORS))],
    )
    .await;
    run_bots(&s, &table).await;
}

/// `POST /bots` cases; an `api_key` of `<any>` matches any key, and the other
/// fields of a success are not compared.
async fn run_bots(s: &TestApp, table: &[Case]) {
    for (i, c) in table.iter().enumerate() {
        let params: Vec<(&str, &str)> = c.params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body) = s.call("POST", "/api/v1/bots", c.who, &params).await;
        let label = format!("case {i}: as {} {:?}: {body}", c.who, c.params);
        assert_eq!(status, c.status, "{label}");
        if c.code.is_empty() {
            assert_eq!(body["result"], "success", "{label}");
            assert_eq!(body["user_id"], c.fields["user_id"], "{label}");
            assert_eq!(body["api_key"].as_str().unwrap().len(), 32, "{label}");
        } else {
            assert_eq!(
                body,
                json!({"result": "error", "code": c.code, "msg": c.msg}),
                "{label}"
            );
        }
    }
}

#[actix_web::test]
async fn custom_emoji() {
    let mut s = TestApp::spawn().await;
    assert_eq!(upload(&s, HAMLET, "first").await.0, 200);
    patch(&s, IAGO, &[("can_add_custom_emoji_group", &new(ADMINS))]).await;
    s.restart().await;
    let (status, body) = upload(&s, HAMLET, "second").await;
    assert_refused((status, body), "BAD_REQUEST", INSUFFICIENT);
    let (status, body) = upload(&s, SHIVA, "second").await;
    assert_refused((status, body), "BAD_REQUEST", INSUFFICIENT);
    assert_eq!(upload(&s, IAGO, "second").await.0, 200);
}

/// A multipart `POST /realm/emoji/{name}` of a small PNG.
async fn upload(s: &TestApp, who: &str, name: &str) -> (u16, Value) {
    let key = s.api_key(who).await;
    let png = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/img.png"
    ))
    .unwrap();
    let part = reqwest::multipart::Part::bytes(png)
        .file_name("img.png")
        .mime_str("image/png")
        .unwrap();
    let form = reqwest::multipart::Form::new().part("f1", part);
    let rb = s.request(
        Method::POST,
        &format!("/api/v1/realm/emoji/{name}"),
        Auth::Basic(who, &key),
    );
    let (status, _, body) = send(rb.multipart(form)).await;
    (status.as_u16(), body)
}

#[actix_web::test]
async fn direct_messages() {
    let mut s = TestApp::spawn().await;
    let [hamlet, cordelia, othello, iago, bot] = [
        s.user_id(HAMLET).await,
        s.user_id(CORDELIA).await,
        s.user_id(OTHELLO).await,
        s.user_id(IAGO).await,
        s.user_id(DEFAULT_BOT).await,
    ];
    let unauthorized = "This conversation does not include any users who can authorize it.";
    let disabled = "Direct messages are disabled in this organization.";
    let not_initiator = "You are not allowed to start direct message conversations.";

    assert_ok(dm(&s, HAMLET, &[cordelia], "before").await);
    patch(
        &s,
        IAGO,
        &[("direct_message_permission_group", &new(ADMINS))],
    )
    .await;
    s.restart().await;
    assert_refused(
        dm(&s, HAMLET, &[cordelia], "x").await,
        "BAD_REQUEST",
        unauthorized,
    );
    assert_refused(
        dm(&s, HAMLET, &[cordelia, othello], "x").await,
        "BAD_REQUEST",
        unauthorized,
    );
    // An administrator among the participants authorizes the conversation.
    assert_ok(dm(&s, HAMLET, &[iago], "to an admin").await);
    assert_ok(dm(&s, HAMLET, &[cordelia, iago], "with an admin").await);
    assert_ok(dm(&s, IAGO, &[cordelia], "from an admin").await);
    // Oneself and bots are exempt.
    assert_ok(dm(&s, HAMLET, &[hamlet], "note to self").await);
    assert_ok(dm(&s, HAMLET, &[bot], "to a bot").await);
    assert_ok(dm(&s, DEFAULT_BOT, &[cordelia], "from a bot").await);
    // Scheduled messages are checked as sends.
    let (status, body) = s
        .call(
            "POST",
            "/api/v1/scheduled_messages",
            HAMLET,
            &[
                ("type", "direct"),
                ("to", &format!("[{cordelia}]")),
                ("content", "later"),
                ("scheduled_delivery_timestamp", "4000000000"),
            ],
        )
        .await;
    assert_refused((status, body), "BAD_REQUEST", unauthorized);

    patch(
        &s,
        IAGO,
        &[("direct_message_permission_group", &new(NOBODY))],
    )
    .await;
    assert_refused(
        dm(&s, IAGO, &[cordelia], "x").await,
        "BAD_REQUEST",
        disabled,
    );
    assert_ok(dm(&s, IAGO, &[bot], "still to a bot").await);

    // Only administrators start conversations; others may answer in existing ones.
    patch(
        &s,
        IAGO,
        &[
            ("direct_message_permission_group", &new(EVERYONE)),
            ("direct_message_initiator_group", &new(ADMINS)),
        ],
    )
    .await;
    s.restart().await;
    assert_ok(dm(&s, HAMLET, &[cordelia], "an old conversation").await);
    assert_ok(dm(&s, CORDELIA, &[iago], "an old conversation too").await);
    assert_refused(
        dm(&s, HAMLET, &[othello], "a new one").await,
        "BAD_REQUEST",
        not_initiator,
    );
    assert_refused(
        dm(&s, HAMLET, &[othello, cordelia], "a new group").await,
        "BAD_REQUEST",
        not_initiator,
    );
    assert_ok(dm(&s, IAGO, &[othello], "started by an admin").await);
    assert_ok(dm(&s, OTHELLO, &[iago], "answered").await);
    assert_ok(dm(&s, HAMLET, &[hamlet], "note to self").await);
    // The permission check comes first.
    patch(
        &s,
        IAGO,
        &[("direct_message_permission_group", &new(ADMINS))],
    )
    .await;
    assert_refused(
        dm(&s, HAMLET, &[othello], "a new one").await,
        "BAD_REQUEST",
        unauthorized,
    );
}

#[actix_web::test]
async fn wildcard_mentions() {
    let mut s = TestApp::spawn().await;
    let members = s.ok("GET", "/api/v1/users", IAGO, &[]).await["members"].clone();
    let members = members.as_array().unwrap();
    let everyone: Vec<String> = members
        .iter()
        .map(|u| u["delivery_email"].as_str().unwrap().to_owned())
        .collect();
    let ids: Vec<i64> = members
        .iter()
        .map(|u| u["user_id"].as_i64().unwrap())
        .collect();
    assert_eq!(everyone.len(), 16);
    // 16 subscribers: more than Zulip's threshold of 15.
    let principals = serde_json::to_string(&ids).unwrap();
    assert_ok(subscribe(&s, IAGO, &["crowd"], &[("principals", &principals)]).await);
    assert_ok(subscribe(&s, HAMLET, &["small"], &[]).await);
    let channel_refusal =
        "You do not have permission to use channel wildcard mentions in this channel.";
    let topic_refusal = "You do not have permission to use topic wildcard mentions in this topic.";
    // Zulip's default: administrators mention many users.
    assert_refused(
        send_in(&s, HAMLET, "crowd", "t", "@**all** hello").await,
        "STREAM_WILDCARD_MENTION_NOT_ALLOWED",
        channel_refusal,
    );
    assert_refused(
        send_in(&s, SHIVA, "crowd", "t", "@**everyone** hello").await,
        "STREAM_WILDCARD_MENTION_NOT_ALLOWED",
        channel_refusal,
    );
    assert_ok(send_in(&s, IAGO, "crowd", "t", "@**all** hello").await);
    assert_ok(send_in(&s, HAMLET, "small", "t", "@**all** hello").await);
    // Silent mentions notify nobody.
    assert_ok(send_in(&s, HAMLET, "crowd", "t", "@_**all** hello").await);
    // An edit adding a wildcard is checked too.
    let id = post(&s, HAMLET, "crowd", "t", "plain").await;
    assert_refused(
        edit_as(&s, HAMLET, id, &[("content", "@**channel** plain")]).await,
        "STREAM_WILDCARD_MENTION_NOT_ALLOWED",
        channel_refusal,
    );

    // A topic with 16 participants.
    for who in &everyone {
        post(&s, who, "crowd", "busy", "here").await;
    }
    assert_refused(
        send_in(&s, HAMLET, "crowd", "busy", "@**topic** hello").await,
        "TOPIC_WILDCARD_MENTION_NOT_ALLOWED",
        topic_refusal,
    );
    assert_ok(send_in(&s, HAMLET, "crowd", "quiet", "@**topic** hello").await);
    assert_ok(send_in(&s, IAGO, "crowd", "busy", "@**topic** hello").await);

    patch(&s, IAGO, &[("can_mention_many_users_group", &new(MEMBERS))]).await;
    s.restart().await;
    assert_ok(send_in(&s, HAMLET, "crowd", "t", "@**all** now allowed").await);
    assert_ok(send_in(&s, HAMLET, "crowd", "busy", "@**topic** now allowed").await);
    assert_refused(
        send_in(&s, POLONIUS, "crowd", "t", "@**all** a guest").await,
        "STREAM_WILDCARD_MENTION_NOT_ALLOWED",
        channel_refusal,
    );
}

#[actix_web::test]
async fn message_edits_follow_the_realm() {
    let mut s = TestApp::spawn_with_clock(ManualClock::new(START_MS)).await;
    let late = "The time limit for editing this message has passed";

    // Zulip's default: content edits for 600 seconds (and 20 of grace).
    let id = post(&s, HAMLET, "Verona", "edits", "first").await;
    s.clock().advance_ms(619_000);
    assert_ok(edit_as(&s, HAMLET, id, &[("content", "second")]).await);
    s.clock().advance_ms(2_000);
    assert_refused(
        edit_as(&s, HAMLET, id, &[("content", "third")]).await,
        "BAD_REQUEST",
        late,
    );

    patch(&s, IAGO, &[("message_content_edit_limit_seconds", "100")]).await;
    let id = post(&s, HAMLET, "Verona", "edits", "first").await;
    s.clock().advance_ms(121_000);
    assert_refused(
        edit_as(&s, HAMLET, id, &[("content", "second")]).await,
        "BAD_REQUEST",
        late,
    );
    patch(
        &s,
        IAGO,
        &[("message_content_edit_limit_seconds", "\"unlimited\"")],
    )
    .await;
    s.restart().await;
    s.clock().advance_ms(10_000_000);
    assert_ok(edit_as(&s, HAMLET, id, &[("content", "much later")]).await);

    patch(&s, IAGO, &[("allow_message_editing", "false")]).await;
    assert_refused(
        edit_as(&s, HAMLET, id, &[("content", "not at all")]).await,
        "BAD_REQUEST",
        "Your organization has turned off message editing",
    );
    // Topics still move.
    assert_ok(edit_as(&s, HAMLET, id, &[("topic", "moved")]).await);
}

#[actix_web::test]
async fn message_moves_follow_the_realm() {
    let mut s = TestApp::spawn_with_clock(ManualClock::new(START_MS)).await;
    let denmark = s.stream_id("Denmark").await.to_string();
    let no_edit = "You don't have permission to edit this message";

    // Zulip's defaults: everyone moves topics and resolves them, members move
    // between channels, for three days (moderators and up without limit).
    let id = post(&s, HAMLET, "Verona", "a", "x").await;
    assert_ok(edit_as(&s, CORDELIA, id, &[("topic", "b")]).await);
    assert_ok(edit_as(&s, CORDELIA, id, &[("topic", "✔ b")]).await);
    assert_ok(edit_as(&s, CORDELIA, id, &[("stream_id", &denmark)]).await);
    s.clock().advance_ms((259_200 + 21) * 1000);
    assert_refused(
        edit_as(&s, CORDELIA, id, &[("topic", "c")]).await,
        "BAD_REQUEST",
        "The time limit for editing this message's topic has passed.",
    );
    assert_ok(edit_as(&s, SHIVA, id, &[("topic", "c")]).await);

    patch(
        &s,
        IAGO,
        &[
            ("can_move_messages_between_topics_group", &new(MODERATORS)),
            ("can_resolve_topics_group", &new(ADMINS)),
            ("can_move_messages_between_channels_group", &new(ADMINS)),
            ("move_messages_within_stream_limit_seconds", "\"unlimited\""),
            ("move_messages_between_streams_limit_seconds", "100"),
        ],
    )
    .await;
    s.restart().await;
    let id = post(&s, HAMLET, "Verona", "d", "x").await;
    assert_refused(
        edit_as(&s, HAMLET, id, &[("topic", "e")]).await,
        "BAD_REQUEST",
        no_edit,
    );
    assert_ok(edit_as(&s, SHIVA, id, &[("topic", "e")]).await);
    assert_refused(
        edit_as(&s, SHIVA, id, &[("topic", "✔ e")]).await,
        "BAD_REQUEST",
        "You don't have permission to resolve topics in this channel.",
    );
    assert_ok(edit_as(&s, IAGO, id, &[("topic", "✔ e")]).await);
    let verona = s.stream_id("Verona").await.to_string();
    assert_refused(
        edit_as(&s, SHIVA, id, &[("stream_id", &denmark)]).await,
        "BAD_REQUEST",
        "You don't have permission to move this message",
    );
    assert_ok(edit_as(&s, IAGO, id, &[("stream_id", &denmark)]).await);
    // No limit on topics any more; the channel limit spares administrators.
    s.clock().advance_ms(1_000_000_000);
    assert_ok(edit_as(&s, SHIVA, id, &[("topic", "f")]).await);
    assert_ok(edit_as(&s, IAGO, id, &[("stream_id", &verona)]).await);
    patch(
        &s,
        IAGO,
        &[("can_move_messages_between_channels_group", &new(MEMBERS))],
    )
    .await;
    assert_refused(
        edit_as(&s, HAMLET, id, &[("stream_id", &denmark)]).await,
        "BAD_REQUEST",
        "The time limit for editing this message's channel has passed",
    );
}

#[actix_web::test]
async fn message_deletion_follows_the_realm() {
    let mut s = TestApp::spawn_with_clock(ManualClock::new(START_MS)).await;
    let denied = "You don't have permission to delete this message";

    // Zulip's defaults: one's own messages for 600 seconds, any for administrators.
    let a = post(&s, HAMLET, "Verona", "t", "a").await;
    let b = post(&s, HAMLET, "Verona", "t", "b").await;
    assert_refused(delete_as(&s, CORDELIA, a).await, "BAD_REQUEST", denied);
    assert_refused(delete_as(&s, SHIVA, a).await, "BAD_REQUEST", denied);
    assert_ok(delete_as(&s, HAMLET, a).await);
    s.clock().advance_ms(601_000);
    assert_refused(
        delete_as(&s, HAMLET, b).await,
        "BAD_REQUEST",
        "The time limit for deleting this message has passed",
    );
    assert_ok(delete_as(&s, IAGO, b).await);

    patch(
        &s,
        IAGO,
        &[
            ("message_content_delete_limit_seconds", "\"unlimited\""),
            ("can_delete_own_message_group", &new(MODERATORS)),
            ("can_delete_any_message_group", &new(MODERATORS)),
        ],
    )
    .await;
    s.restart().await;
    let c = post(&s, HAMLET, "Verona", "t", "c").await;
    let d = post(&s, SHIVA, "Verona", "t", "d").await;
    let e = post(&s, HAMLET, "Verona", "t", "e").await;
    s.clock().advance_ms(10_000_000);
    assert_refused(delete_as(&s, HAMLET, c).await, "BAD_REQUEST", denied);
    assert_ok(delete_as(&s, SHIVA, d).await);
    assert_ok(delete_as(&s, SHIVA, c).await);
    assert_ok(delete_as(&s, IAGO, e).await);
    // A direct message of one's own, without the realm's permission.
    let cordelia = s.user_id(CORDELIA).await;
    let dm_id = assert_ok(dm(&s, HAMLET, &[cordelia], "private").await)["id"]
        .as_i64()
        .unwrap();
    assert_refused(delete_as(&s, HAMLET, dm_id).await, "BAD_REQUEST", denied);
}

// ---- GET /users with user_ids ---------------------------------------------------

#[actix_web::test]
async fn users_with_unknown_ids_are_left_out() {
    let s = TestApp::spawn().await;
    let hamlet = s.user_id(HAMLET).await;
    let iago = s.user_id(IAGO).await;
    for who in ROLES {
        let filter = format!("[{iago}, 9999, -1, {hamlet}, {iago}]");
        let body = s
            .ok("GET", "/api/v1/users", who, &[("user_ids", &filter)])
            .await;
        let got: Vec<i64> = body["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["user_id"].as_i64().unwrap())
            .collect();
        assert_eq!(got, vec![hamlet, iago], "{who}");
        let body = s
            .ok("GET", "/api/v1/users", who, &[("user_ids", "[9999]")])
            .await;
        assert_eq!(body["members"], json!([]), "{who}");
        let body = s
            .ok("GET", "/api/v1/users", who, &[("user_ids", "[]")])
            .await;
        assert_eq!(body["members"], json!([]), "{who}");
    }
    // A deactivated user is still listed.
    let cordelia = s.user_id(CORDELIA).await;
    s.ok("DELETE", &format!("/api/v1/users/{cordelia}"), IAGO, &[])
        .await;
    let filter = format!("[{cordelia}]");
    let body = s
        .ok("GET", "/api/v1/users", HAMLET, &[("user_ids", &filter)])
        .await;
    assert_eq!(body["members"][0]["user_id"], cordelia);
    assert_eq!(body["members"][0]["is_active"], false);
}
