//! Every role against the channel operations of seed 4.1, 4.5, 4.19 and 4.20:
//! table-driven cases (who, request, status, code, msg, body fields) against a fresh
//! development realm, each successful write checked again after a restart.
//!
//! Roles: owner desdemona, administrator iago, moderator shiva, members hamlet,
//! cordelia, othello, prospero, AARON, ZOE (ZOE owns webhook-bot, AARON owns
//! outgoing-webhook, desdemona owns default-bot), guest polonius.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use crate::common::*;
use hearth::realm::ManualClock;
use serde_json::{json, Value};

/// The roles of the issue that can call an operation, with a label for messages.
const ROLES: [(&str, &str); 6] = [
    (DESDEMONA, "owner"),
    (IAGO, "administrator"),
    (SHIVA, "moderator"),
    (HAMLET, "member"),
    (POLONIUS, "guest"),
    (ZOE, "bot owner"),
];

/// Every user's id and API email, by real (delivery) email in lower case.
async fn users(s: &TestApp) -> HashMap<String, (i64, String)> {
    let body = s.ok("GET", "/api/v1/users", IAGO, &[]).await;
    body["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|u| {
            let real = u["delivery_email"]
                .as_str()
                .or(u["email"].as_str())
                .expect("email")
                .to_lowercase();
            let id = u["user_id"].as_i64().expect("user_id");
            (real, (id, u["email"].as_str().expect("email").to_owned()))
        })
        .collect()
}

fn id_of(users: &HashMap<String, (i64, String)>, email: &str) -> i64 {
    users[&email.to_lowercase()].0
}

fn api_email(users: &HashMap<String, (i64, String)>, email: &str) -> String {
    users[&email.to_lowercase()].1.clone()
}

/// A user's subscription to the channel named `name`, from `GET /users/me/subscriptions`.
async fn subscription(s: &TestApp, who: &str, name: &str) -> Value {
    let body = s
        .ok("GET", "/api/v1/users/me/subscriptions", who, &[])
        .await;
    body["subscriptions"]
        .as_array()
        .expect("subscriptions")
        .iter()
        .find(|x| x["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{who} is not subscribed to {name}"))
}

async fn is_subscribed(s: &TestApp, user: i64, stream: i64) -> bool {
    let body = s
        .ok(
            "GET",
            &format!("/api/v1/users/{user}/subscriptions/{stream}"),
            IAGO,
            &[],
        )
        .await;
    body["is_subscribed"].as_bool().expect("is_subscribed")
}

fn one_property(stream_id: i64, property: &str, value: Value) -> Vec<(&'static str, String)> {
    vec![(
        "subscription_data",
        json!([{"stream_id": stream_id, "property": property, "value": value}]).to_string(),
    )]
}

// ---- POST /users/me/subscriptions/properties (seed 4.1) ----------------------------

#[actix_web::test]
async fn subscription_properties_every_role() {
    let mut s = TestApp::spawn().await;
    // A public channel the owner is not in, a private one the owner is not in.
    for (name, private) in [("roles-open", "false"), ("roles-closed", "true")] {
        s.ok(
            "POST",
            "/api/v1/users/me/subscriptions",
            IAGO,
            &[
                ("subscriptions", &json!([{ "name": name }]).to_string()),
                ("invite_only", private),
            ],
        )
        .await;
    }
    let open = s.stream_id("roles-open").await;
    let closed = s.stream_id("roles-closed").await;
    let (verona, denmark, core_team, unknown) = (3, 4, 8, 99999);
    let pin = |sid: i64| one_property(sid, "pin_to_top", json!(true));
    let not_subscribed = |sid: i64| format!("Not subscribed to channel ID {sid}");

    let mut table = Vec::new();
    // Subscribed: every role may change its own subscription.
    for (who, _) in ROLES {
        table.push(ok(who, pin(verona), json!({})));
    }
    // The private channel, for its subscribers (owner, bot owner) only.
    table.push(ok(DESDEMONA, pin(core_team), json!({})));
    table.push(ok(ZOE, pin(core_team), json!({})));
    for who in [IAGO, SHIVA, HAMLET, POLONIUS] {
        table.push(bad(who, pin(core_team), "Invalid channel ID"));
    }
    table.push(bad(DESDEMONA, pin(closed), "Invalid channel ID"));
    // Accessible but not subscribed (the non-subscriber of each role).
    for (who, sid) in [
        (DESDEMONA, open),
        (IAGO, denmark),
        (SHIVA, 2),
        (HAMLET, denmark),
        (POLONIUS, 5),
        (ZOE, 1),
    ] {
        table.push(bad(who, pin(sid), not_subscribed(sid)));
    }
    // A guest cannot access a public channel it is not in.
    table.push(bad(POLONIUS, pin(1), "Invalid channel ID"));
    // Unknown channel.
    for (who, _) in ROLES {
        table.push(bad(who, pin(unknown), "Invalid channel ID"));
    }
    run_cases(
        &s,
        "POST",
        "/api/v1/users/me/subscriptions/properties",
        &table,
    )
    .await;

    // Effects, and again after a restart.
    for round in 0..2 {
        for (who, role) in ROLES {
            let sub = subscription(&s, who, "Verona").await;
            assert_eq!(sub["pin_to_top"], true, "{role}, round {round}");
        }
        for who in [DESDEMONA, ZOE] {
            let sub = subscription(&s, who, "core team").await;
            assert_eq!(sub["pin_to_top"], true, "{who}, round {round}");
        }
        let sub = subscription(&s, IAGO, "roles-open").await;
        assert_eq!(sub["pin_to_top"], false);
        if round == 0 {
            s.restart().await;
        }
    }
    s.stop().await;
}

#[actix_web::test]
async fn subscription_properties_value_types() {
    let mut s = TestApp::spawn().await;
    let verona = 3;
    let before = subscription(&s, HAMLET, "Verona").await;
    let booleans = [
        "is_muted",
        "in_home_view",
        "pin_to_top",
        "desktop_notifications",
        "audible_notifications",
        "push_notifications",
        "email_notifications",
        "wildcard_mentions_notify",
    ];
    let mut table = vec![
        bad(
            HAMLET,
            one_property(verona, "color", json!(true)),
            // Zulip's check_color tests `str(value)`, "True".
            "Invalid subscription_data[0]: Value error, color is not a valid hex color code",
        ),
        // Recorded (10b).
        bad(
            HAMLET,
            one_property(verona, "color", json!("notacolor")),
            "Invalid subscription_data[0]: Value error, color is not a valid hex color code",
        ),
        // Recorded (10).
        bad(
            HAMLET,
            one_property(verona, "bogus_property", json!(true)),
            "Unknown subscription property: bogus_property",
        ),
        bad(
            HAMLET,
            p(&[("subscription_data", "notjson")]),
            "subscription_data is not valid JSON",
        ),
    ];
    for prop in booleans {
        for who in [HAMLET, POLONIUS] {
            table.push(bad(
                who,
                one_property(verona, prop, json!("yes")),
                format!("{prop} is not a boolean"),
            ));
        }
    }
    // The value type is checked before the channel: even an unknown channel says so.
    table.push(bad(
        HAMLET,
        one_property(99999, "pin_to_top", json!("yes")),
        "pin_to_top is not a boolean",
    ));
    run_cases(
        &s,
        "POST",
        "/api/v1/users/me/subscriptions/properties",
        &table,
    )
    .await;
    // Nothing changed.
    assert_eq!(subscription(&s, HAMLET, "Verona").await, before);

    // The right type for each of the nine, as one request.
    let mut data: Vec<Value> = booleans
        .iter()
        .filter(|p| **p != "in_home_view" && **p != "is_muted")
        .map(|p| json!({"stream_id": verona, "property": p, "value": true}))
        .collect();
    data.push(json!({"stream_id": verona, "property": "color", "value": "#c0ffee"}));
    run_cases(
        &s,
        "POST",
        "/api/v1/users/me/subscriptions/properties",
        &[ok(
            HAMLET,
            vec![("subscription_data", Value::from(data).to_string())],
            json!({}),
        )],
    )
    .await;
    for round in 0..2 {
        let sub = subscription(&s, HAMLET, "Verona").await;
        assert_eq!(sub["color"], "#c0ffee", "round {round}");
        for prop in booleans
            .iter()
            .filter(|p| **p != "in_home_view" && **p != "is_muted")
        {
            assert_eq!(sub[*prop], true, "{prop}, round {round}");
        }
        if round == 0 {
            s.restart().await;
        }
    }
    s.stop().await;
}

#[actix_web::test]
async fn subscription_properties_muting_inverse() {
    let mut s = TestApp::spawn().await;
    let verona = 3;
    // (who, property, value) then the (in_home_view, is_muted) that GET shows.
    let steps = [
        (HAMLET, "in_home_view", false, (false, true)),
        (HAMLET, "in_home_view", true, (true, false)),
        (HAMLET, "is_muted", true, (false, true)),
        (HAMLET, "is_muted", false, (true, false)),
        (POLONIUS, "in_home_view", false, (false, true)),
        (DESDEMONA, "is_muted", true, (false, true)),
        (HAMLET, "in_home_view", false, (false, true)),
    ];
    for (who, prop, value, (home, muted)) in steps {
        run_cases(
            &s,
            "POST",
            "/api/v1/users/me/subscriptions/properties",
            &[ok(who, one_property(verona, prop, json!(value)), json!({}))],
        )
        .await;
        let sub = subscription(&s, who, "Verona").await;
        assert_eq!(
            (sub["in_home_view"].clone(), sub["is_muted"].clone()),
            (json!(home), json!(muted)),
            "{who} {prop}={value}"
        );
    }
    // Two events per change, in_home_view first (seed 6.1).
    let q = s.register(IAGO, &[]).await;
    run_cases(
        &s,
        "POST",
        "/api/v1/users/me/subscriptions/properties",
        &[ok(
            IAGO,
            one_property(verona, "in_home_view", json!(false)),
            json!({}),
        )],
    )
    .await;
    let ev: Vec<(Value, Value)> = s
        .events(IAGO, &q)
        .await
        .iter()
        .map(|e| (e["property"].clone(), e["value"].clone()))
        .collect();
    assert_eq!(
        ev,
        vec![
            (json!("in_home_view"), json!(false)),
            (json!("is_muted"), json!(true))
        ]
    );
    s.restart().await;
    for who in [HAMLET, POLONIUS, DESDEMONA, IAGO] {
        let sub = subscription(&s, who, "Verona").await;
        assert_eq!(sub["is_muted"], true, "{who}");
        assert_eq!(sub["in_home_view"], false, "{who}");
    }
    let sub = subscription(&s, SHIVA, "Verona").await;
    assert_eq!(
        (&sub["is_muted"], &sub["in_home_view"]),
        (&json!(false), &json!(true))
    );
    s.stop().await;
}

// ---- DELETE /users/me/subscriptions (seed 4.5) --------------------------------------

fn unsub(names: Value, principals: Option<Value>) -> Vec<(&'static str, String)> {
    let mut v = vec![("subscriptions", names.to_string())];
    if let Some(p) = principals {
        v.push(("principals", p.to_string()));
    }
    v
}

fn removed(r: &[&str], n: &[&str]) -> Value {
    json!({"removed": r, "not_removed": n})
}

#[actix_web::test]
async fn unsubscribe_others_every_role() {
    let mut s = TestApp::spawn().await;
    let u = users(&s).await;
    let id = |e: &str| json!(id_of(&u, e));
    // A private channel with ZOE's bot in it, which ZOE cannot access.
    s.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        IAGO,
        &[
            ("subscriptions", r#"[{"name":"roles-secret"}]"#),
            ("invite_only", "true"),
            (
                "principals",
                &json!([id(WEBHOOK_BOT), id(IAGO)]).to_string(),
            ),
        ],
    )
    .await;
    let denied = "Insufficient permission";
    let table = vec![
        // Owner and administrator: anyone, any channel (ids or API emails).
        ok(
            DESDEMONA,
            unsub(json!(["Denmark"]), Some(json!([id(PROSPERO)]))),
            removed(&["Denmark"], &[]),
        ),
        ok(
            IAGO,
            unsub(json!(["Scotland"]), Some(json!([api_email(&u, PROSPERO)]))),
            removed(&["Scotland"], &[]),
        ),
        // iago is not in the private channel.
        ok(
            IAGO,
            unsub(json!(["core team"]), Some(json!([id(DESDEMONA)]))),
            removed(&["core team"], &[]),
        ),
        // Moderator, member, guest: not others (the channels' group is administrators).
        bad(
            SHIVA,
            unsub(json!(["devel"]), Some(json!([id(OTHELLO)]))),
            denied,
        ),
        bad(
            HAMLET,
            unsub(json!(["devel"]), Some(json!([id(OTHELLO)]))),
            denied,
        ),
        bad(
            HAMLET,
            unsub(json!(["devel"]), Some(json!([api_email(&u, OTHELLO)]))),
            denied,
        ),
        bad(
            POLONIUS,
            unsub(json!(["devel"]), Some(json!([id(OTHELLO)]))),
            denied,
        ),
        // Not even together with themselves.
        bad(
            HAMLET,
            unsub(json!(["devel"]), Some(json!([id(HAMLET), id(OTHELLO)]))),
            denied,
        ),
        // Bot owner: their own bot from a channel they can access ...
        ok(
            ZOE,
            unsub(json!(["devel"]), Some(json!([id(WEBHOOK_BOT)]))),
            removed(&["devel"], &[]),
        ),
        ok(
            AARON,
            unsub(json!(["errors"]), Some(json!([OUTGOING_BOT]))),
            removed(&["errors"], &[]),
        ),
        // ... not someone else's bot ...
        bad(
            ZOE,
            unsub(json!(["design"]), Some(json!([id(OUTGOING_BOT)]))),
            denied,
        ),
        bad(
            ZOE,
            unsub(json!(["design"]), Some(json!([DEFAULT_BOT]))),
            denied,
        ),
        // Hamlet administers design (its can_administer_channel_group): channel
        // administrators may remove anyone, bots of others included.
        ok(
            HAMLET,
            unsub(json!(["design"]), Some(json!([id(WEBHOOK_BOT)]))),
            removed(&["design"], &[]),
        ),
        // ... and not from a channel they cannot access.
        bad(
            ZOE,
            unsub(json!(["roles-secret"]), Some(json!([id(WEBHOOK_BOT)]))),
            denied,
        ),
        // Themselves: without principals or naming themselves, every role.
        ok(
            POLONIUS,
            unsub(json!(["Verona"]), None),
            removed(&["Verona"], &[]),
        ),
        ok(
            SHIVA,
            unsub(json!(["test"]), Some(json!([id(SHIVA)]))),
            removed(&["test"], &[]),
        ),
        ok(
            HAMLET,
            unsub(
                json!(["Verona", "Denmark"]),
                Some(json!([api_email(&u, HAMLET)])),
            ),
            removed(&["Verona"], &["Denmark"]),
        ),
        ok(ZOE, unsub(json!(["Rome"]), None), removed(&["Rome"], &[])),
        ok(
            DESDEMONA,
            unsub(json!(["sandbox"]), None),
            removed(&["sandbox"], &[]),
        ),
        ok(
            IAGO,
            unsub(json!(["Denmark"]), None),
            removed(&[], &["Denmark"]),
        ),
        // One target subscribed, one not.
        ok(
            IAGO,
            unsub(json!(["Denmark"]), Some(json!([id(CORDELIA), id(HAMLET)]))),
            removed(&["Denmark"], &["Denmark"]),
        ),
    ];
    run_cases(&s, "DELETE", "/api/v1/users/me/subscriptions", &table).await;

    // (user, channel, subscribed) after the table, and again after a restart.
    let expected = [
        (PROSPERO, "Denmark", false),
        (PROSPERO, "Scotland", false),
        (DESDEMONA, "core team", false),
        (OTHELLO, "devel", true),
        (HAMLET, "devel", true),
        (WEBHOOK_BOT, "devel", false),
        (OUTGOING_BOT, "errors", false),
        (OUTGOING_BOT, "design", true),
        (DEFAULT_BOT, "design", true),
        (WEBHOOK_BOT, "design", false),
        (WEBHOOK_BOT, "roles-secret", true),
        (POLONIUS, "Verona", false),
        (SHIVA, "test", false),
        (HAMLET, "Verona", false),
        (ZOE, "Rome", false),
        (DESDEMONA, "sandbox", false),
        (CORDELIA, "Denmark", false),
    ];
    for round in 0..2 {
        for (who, name, want) in expected {
            let sid = s.stream_id(name).await;
            assert_eq!(
                is_subscribed(&s, id_of(&u, who), sid).await,
                want,
                "{who} in {name}, round {round}"
            );
        }
        if round == 0 {
            s.restart().await;
        }
    }
    s.stop().await;
}

#[actix_web::test]
async fn unsubscribe_principals_and_channel_names() {
    let mut s = TestApp::spawn().await;
    let u = users(&s).await;
    let othello = id_of(&u, OTHELLO);
    let no_user = "No such user";
    let mut table = vec![
        // Unknown ids and emails, real addresses of humans (API emails only).
        bad(
            IAGO,
            unsub(json!(["Verona"]), Some(json!([999999]))),
            no_user,
        ),
        bad(
            IAGO,
            unsub(json!(["Verona"]), Some(json!(["nobody@zulipdev.com"]))),
            no_user,
        ),
        bad(
            IAGO,
            unsub(json!(["Verona"]), Some(json!([OTHELLO]))),
            no_user,
        ),
        bad(
            DESDEMONA,
            unsub(json!(["Verona"]), Some(json!([othello, 999999]))),
            no_user,
        ),
        // Principals are resolved before permission is checked.
        bad(
            HAMLET,
            unsub(json!(["Verona"]), Some(json!([999999]))),
            no_user,
        ),
        bad(
            POLONIUS,
            unsub(json!(["Verona"]), Some(json!(["nobody@zulipdev.com"]))),
            no_user,
        ),
    ];
    // A channel name that does not exist: the seed's STREAM_DOES_NOT_EXIST with
    // `stream`, for every role, and nothing removed.
    for (who, _) in ROLES {
        for names in [
            json!(["no such channel"]),
            json!(["Verona", "no such channel"]),
        ] {
            table.push(Case {
                who,
                params: unsub(names, None),
                status: 400,
                code: "STREAM_DOES_NOT_EXIST",
                msg: "Channel 'no such channel' does not exist".into(),
                fields: json!({"stream": "no such channel"}),
            });
        }
    }
    table.push(Case {
        who: IAGO,
        params: unsub(json!(["Verona", "nowhere"]), Some(json!([othello]))),
        status: 400,
        code: "STREAM_DOES_NOT_EXIST",
        msg: "Channel 'nowhere' does not exist".into(),
        fields: json!({"stream": "nowhere"}),
    });
    run_cases(&s, "DELETE", "/api/v1/users/me/subscriptions", &table).await;
    for (who, _) in ROLES {
        assert!(is_subscribed(&s, id_of(&u, who), 3).await, "{who}");
    }
    assert!(is_subscribed(&s, othello, 3).await);
    s.stop().await;
}

#[actix_web::test]
async fn unsubscribe_remove_subscribers_group() {
    let mut s = TestApp::spawn().await;
    let u = users(&s).await;
    let id = |e: &str| json!(id_of(&u, e));
    let reg = s.ok("POST", "/api/v1/register", IAGO, &[]).await;
    let members = reg["realm_user_groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["name"] == "role:members")
        .expect("role:members")["id"]
        .as_i64()
        .expect("id");
    // The private channel and Denmark let members remove subscribers.
    for sid in [8, 4] {
        s.ok(
            "PATCH",
            &format!("/api/v1/streams/{sid}"),
            IAGO,
            &[(
                "can_remove_subscribers_group",
                &json!({ "new": members }).to_string(),
            )],
        )
        .await;
    }
    let denied = "Insufficient permission";
    let table = vec![
        // In the group and subscribed to the private channel: allowed.
        ok(
            CORDELIA,
            unsub(json!(["core team"]), Some(json!([id(ZOE)]))),
            removed(&["core team"], &[]),
        ),
        // In the group, cannot access the private channel: refused.
        bad(
            HAMLET,
            unsub(json!(["core team"]), Some(json!([id(CORDELIA)]))),
            denied,
        ),
        bad(
            SHIVA,
            unsub(json!(["core team"]), Some(json!([id(CORDELIA)]))),
            denied,
        ),
        // In the group, public channel, not subscribed: allowed.
        ok(
            HAMLET,
            unsub(json!(["Denmark"]), Some(json!([id(AARON)]))),
            removed(&["Denmark"], &[]),
        ),
        // Moderators are members too.
        ok(
            SHIVA,
            unsub(json!(["Denmark"]), Some(json!([api_email(&u, PROSPERO)]))),
            removed(&["Denmark"], &[]),
        ),
        // A guest is not in role:members, even subscribed.
        bad(
            POLONIUS,
            unsub(json!(["Denmark"]), Some(json!([id(OTHELLO)]))),
            denied,
        ),
        // Other channels keep the administrators-only group.
        bad(
            HAMLET,
            unsub(json!(["Verona"]), Some(json!([id(OTHELLO)]))),
            denied,
        ),
        // One refused channel refuses the whole request.
        bad(
            HAMLET,
            unsub(json!(["Denmark", "Verona"]), Some(json!([id(CORDELIA)]))),
            denied,
        ),
    ];
    run_cases(&s, "DELETE", "/api/v1/users/me/subscriptions", &table).await;
    let expected = [
        (ZOE, 8, false),
        (CORDELIA, 8, true),
        (AARON, 4, false),
        (PROSPERO, 4, false),
        (OTHELLO, 3, true),
        (CORDELIA, 4, true),
        (CORDELIA, 3, true),
    ];
    for round in 0..2 {
        for (who, sid, want) in expected {
            assert_eq!(
                is_subscribed(&s, id_of(&u, who), sid).await,
                want,
                "{who} in {sid}, round {round}"
            );
        }
        if round == 0 {
            s.restart().await;
        }
    }
    s.stop().await;
}

// ---- POST / DELETE /default_streams (seed 4.20) -------------------------------------

async fn default_ids(s: &TestApp) -> Value {
    let reg = s.ok("POST", "/api/v1/register", HAMLET, &[]).await;
    reg["realm_default_streams"].clone()
}

#[actix_web::test]
async fn default_streams_every_role() {
    let mut s = TestApp::spawn().await;
    assert_eq!(default_ids(&s).await, json!([1, 2, 3, 10, 11, 13, 14]));
    let sid = |id: &str| p(&[("stream_id", id)]);
    let mut add = Vec::new();
    let mut remove = Vec::new();
    // Administrators only; the role check comes before any parameter check.
    for who in [SHIVA, HAMLET, POLONIUS, ZOE, CORDELIA] {
        for params in [sid("6"), sid("99999"), sid("notjson"), vec![]] {
            add.push(not_admin(who, params.clone()));
            remove.push(not_admin(who, params));
        }
    }
    for who in [DESDEMONA, IAGO] {
        for table in [&mut add, &mut remove] {
            // Recorded (18d).
            table.push(bad(who, sid("99999"), "Invalid channel ID"));
            table.push(bad(who, sid("notjson"), "stream_id is not valid JSON"));
            table.push(bad(who, sid("\"4\""), "stream_id is not an integer"));
            table.push(missing(who, vec![], "stream_id"));
        }
    }
    // Private, subscribed (recorded 18) and unsubscribed (recorded 18c).
    add.push(bad(
        DESDEMONA,
        sid("8"),
        "Private channels cannot be made default.",
    ));
    add.push(bad(IAGO, sid("8"), "Invalid channel ID"));
    // Successes: owner and administrator; a repeat is a no-op.
    add.push(ok(DESDEMONA, sid("4"), json!({})));
    add.push(ok(IAGO, sid("5"), json!({})));
    add.push(ok(IAGO, sid("4"), json!({})));
    remove.push(ok(DESDEMONA, sid("1"), json!({})));
    remove.push(ok(IAGO, sid("2"), json!({})));
    remove.push(ok(IAGO, sid("2"), json!({})));
    // A private channel is never default: removing it is a no-op for a subscriber.
    remove.push(ok(DESDEMONA, sid("8"), json!({})));
    run_cases(&s, "POST", "/api/v1/default_streams", &add).await;
    run_cases(&s, "DELETE", "/api/v1/default_streams", &remove).await;

    for round in 0..2 {
        assert_eq!(
            default_ids(&s).await,
            json!([3, 4, 5, 10, 11, 13, 14]),
            "round {round}"
        );
        let body = s
            .ok(
                "GET",
                "/api/v1/streams",
                IAGO,
                &[("include_default", "true"), ("include_all", "true")],
            )
            .await;
        for (stream, want) in [(1, false), (2, false), (4, true), (5, true), (6, false)] {
            let got = body["streams"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["stream_id"] == stream)
                .map(|c| c["is_default"].clone());
            assert_eq!(got, Some(json!(want)), "{stream}, round {round}");
        }
        if round == 0 {
            s.restart().await;
        }
    }
    s.stop().await;
}

// ---- PATCH /channel_folders, POST /channel_folders/create (seed 4.19) ---------------

async fn folder_order(s: &TestApp) -> Vec<(i64, i64, bool)> {
    let body = s
        .ok(
            "GET",
            "/api/v1/channel_folders",
            HAMLET,
            &[("include_archived", "true")],
        )
        .await;
    let mut v: Vec<(i64, i64, bool)> = body["channel_folders"]
        .as_array()
        .expect("channel_folders")
        .iter()
        .map(|f| {
            (
                f["id"].as_i64().expect("id"),
                f["order"].as_i64().expect("order"),
                f["is_archived"].as_bool().expect("is_archived"),
            )
        })
        .collect();
    v.sort_by_key(|f| f.1);
    v
}

#[actix_web::test]
async fn channel_folders_every_role() {
    let mut s = TestApp::spawn().await;
    let order = |o: &str| p(&[("order", o)]);
    let name = |n: &str| p(&[("name", n), ("description", "Made by a role test")]);

    let mut create = Vec::new();
    for who in [SHIVA, HAMLET, POLONIUS, ZOE] {
        create.push(not_admin(who, name("Not mine")));
        create.push(not_admin(who, vec![]));
    }
    create.push(ok(
        DESDEMONA,
        name("Owner folder"),
        json!({"channel_folder_id": 3}),
    ));
    create.push(ok(
        IAGO,
        name("Admin folder"),
        json!({"channel_folder_id": 4}),
    ));
    run_cases(&s, "POST", "/api/v1/channel_folders/create", &create).await;
    // Folder 3 is archived: it still has to be in every order.
    s.ok(
        "PATCH",
        "/api/v1/channel_folders/3",
        IAGO,
        &[("is_archived", "true")],
    )
    .await;

    let invalid = "Invalid order mapping.";
    let mut reorder = Vec::new();
    for who in [SHIVA, HAMLET, POLONIUS, ZOE] {
        for params in [order("[4,3,2,1]"), order("notjson"), vec![]] {
            reorder.push(not_admin(who, params));
        }
    }
    for who in [DESDEMONA, IAGO] {
        // Missing a folder (recorded 17), the archived one omitted, duplicates
        // hiding a missing folder (recorded 17c), only unknown ids.
        for bad_order in [
            "[1]",
            "[1,2,4]",
            "[1,1]",
            "[1,1,2,3]",
            "[999,998,997,996]",
            "[]",
        ] {
            reorder.push(bad(who, order(bad_order), invalid));
        }
        // Recorded (17d).
        reorder.push(bad(who, order("notjson"), "order is not valid JSON"));
        reorder.push(bad(who, order("{}"), "order is not a list"));
        reorder.push(missing(who, vec![], "order"));
        // Unknown extra ids pass (recorded 17b); so do duplicates when every folder
        // is there.
        reorder.push(ok(who, order("[1,2,3,4,999]"), json!({})));
        reorder.push(ok(who, order("[1,2,3,4,4]"), json!({})));
    }
    reorder.push(ok(DESDEMONA, order("[3,1,4,2]"), json!({})));
    reorder.push(ok(IAGO, order("[4,2,3,1]"), json!({})));
    run_cases(&s, "PATCH", "/api/v1/channel_folders", &reorder).await;

    for round in 0..2 {
        assert_eq!(
            folder_order(&s).await,
            vec![(4, 0, false), (2, 1, false), (3, 2, true), (1, 3, false)],
            "round {round}"
        );
        let body = s
            .ok(
                "GET",
                "/api/v1/channel_folders",
                CORDELIA,
                &[("include_archived", "true")],
            )
            .await;
        let names: Vec<&str> = body["channel_folders"]
            .as_array()
            .expect("channel_folders")
            .iter()
            .map(|f| f["name"].as_str().expect("name"))
            .collect();
        assert!(names.contains(&"Owner folder") && names.contains(&"Admin folder"));
        if round == 0 {
            s.restart().await;
        }
    }
    s.stop().await;
}

// ---- PATCH / DELETE /messages/{id}: the channel's message permissions --------------

const NO_EDIT: &str = "You don't have permission to edit this message";
const NO_DELETE: &str = "You don't have permission to delete this message";
const NO_RESOLVE: &str = "You don't have permission to resolve topics in this channel.";
const NO_MOVE: &str = "You don't have permission to move this message";

/// A successful edit: its answer lists no detached upload.
fn edited(who: &'static str, params: Vec<(&'static str, String)>) -> Case {
    ok(who, params, json!({ "detached_uploads": [] }))
}

fn new_group(value: Value) -> String {
    json!({ "new": value }).to_string()
}

/// A case on a message of its own, which `sender` posts to `channel`, topic `topic`,
/// before any case of its table runs.
struct OnMessage {
    sender: &'static str,
    channel: &'static str,
    topic: String,
    case: Case,
}

fn on(sender: &'static str, channel: &'static str, topic: String, case: Case) -> OnMessage {
    OnMessage {
        sender,
        channel,
        topic,
        case,
    }
}

/// Posts every row's message; their ids, in row order.
async fn post_all(s: &TestApp, rows: &[OnMessage]) -> Vec<u64> {
    let mut ids = Vec::new();
    for r in rows {
        ids.push(send_stream(s, r.sender, r.channel, &r.topic, "role check").await);
    }
    ids
}

/// Runs each row's case on its message, then checks the message as an administrator
/// sees it: gone after a successful delete, moved after a successful move, untouched
/// after a refusal.
async fn run_on_messages(s: &TestApp, method: &str, rows: &[OnMessage], ids: &[u64]) {
    for (r, id) in rows.iter().zip(ids) {
        run_cases(
            s,
            method,
            &format!("/api/v1/messages/{id}"),
            std::slice::from_ref(&r.case),
        )
        .await;
    }
    check_messages(s, method, rows, ids).await;
}

async fn check_messages(s: &TestApp, method: &str, rows: &[OnMessage], ids: &[u64]) {
    for (r, id) in rows.iter().zip(ids) {
        let label = format!(
            "{method} message {id} as {} {:?}",
            r.case.who, r.case.params
        );
        let (status, body) = s
            .call("GET", &format!("/api/v1/messages/{id}"), IAGO, &[])
            .await;
        let done = r.case.status == 200;
        if method == "DELETE" && done {
            assert_eq!(status, 400, "{label}: {body}");
            assert_eq!(body["msg"], "Invalid message(s)", "{label}");
            continue;
        }
        assert_eq!(status, 200, "{label}: {body}");
        let m = &body["message"];
        let param = |k: &str| r.case.params.iter().find(|(p, _)| *p == k).map(|(_, v)| v);
        let topic = param("topic").filter(|_| done).unwrap_or(&r.topic);
        assert_eq!(m["subject"], topic.as_str(), "{label}");
        let channel = match param("stream_id").filter(|_| done) {
            Some(id) => id.parse::<i64>().unwrap(),
            None => s.stream_id(r.channel).await,
        };
        assert_eq!(m["stream_id"], channel, "{label}");
        let content = param("content").filter(|_| done);
        assert_eq!(
            m["content"],
            format!("<p>{}</p>", content.map_or("role check", |c| c.as_str())),
            "{label}"
        );
    }
}

/// Verona's message permissions are given to groups and to a channel administrator
/// (Cordelia, a member); the realm's own are narrowed to administrators, and Denmark
/// keeps its defaults (nobody). Every role deletes, edits, moves within the channel,
/// resolves and moves out of it, in both channels (Zulip's
/// `validate_can_delete_message`, `check_update_message`, `can_edit_topic`,
/// `can_resolve_topics`, `can_move_messages_out_of_channel`).
#[actix_web::test]
async fn message_moves_and_deletes_by_channel_groups() {
    let mut s = TestApp::spawn_with_clock(ManualClock::new(1_800_000_000_000)).await;
    let u = users(&s).await;
    let (verona, denmark) = (3, 4);

    // Zulip's defaults first: a guest edits and deletes its own message, a bot's
    // owner deletes the bot's message but may not edit its content.
    let outgoing_bot = OUTGOING_BOT;
    let rows = vec![
        on(
            POLONIUS,
            "Verona",
            "guest".into(),
            edited(POLONIUS, p(&[("content", "edited by a guest")])),
        ),
        on(
            POLONIUS,
            "Verona",
            "guest".into(),
            bad(OTHELLO, p(&[("content", "not mine")]), NO_EDIT),
        ),
        on(
            outgoing_bot,
            "Verona",
            "bot".into(),
            bad(AARON, p(&[("content", "by the owner")]), NO_EDIT),
        ),
        on(
            outgoing_bot,
            "Verona",
            "bot".into(),
            edited(AARON, p(&[("topic", "bot moved")])),
        ),
    ];
    let ids = post_all(&s, &rows).await;
    run_on_messages(&s, "PATCH", &rows, &ids).await;
    let rows = vec![
        on(
            POLONIUS,
            "Verona",
            "guest".into(),
            ok(POLONIUS, vec![], json!({})),
        ),
        on(
            outgoing_bot,
            "Verona",
            "bot".into(),
            ok(AARON, vec![], json!({})),
        ),
        on(
            outgoing_bot,
            "Verona",
            "bot".into(),
            bad(HAMLET, vec![], NO_DELETE),
        ),
        on(
            outgoing_bot,
            "Verona",
            "bot".into(),
            bad(ZOE, vec![], NO_DELETE),
        ),
    ];
    let ids = post_all(&s, &rows).await;
    run_on_messages(&s, "DELETE", &rows, &ids).await;

    // The realm's permissions go to administrators only; Verona gives its own.
    s.ok(
        "PATCH",
        "/api/v1/realm",
        IAGO,
        &[
            (
                "can_move_messages_between_topics_group",
                &new_group(json!(ADMINS)),
            ),
            ("can_resolve_topics_group", &new_group(json!(ADMINS))),
            (
                "can_move_messages_between_channels_group",
                &new_group(json!(ADMINS)),
            ),
            ("can_delete_own_message_group", &new_group(json!(ADMINS))),
            ("can_delete_any_message_group", &new_group(json!(ADMINS))),
        ],
    )
    .await;
    let cordelia = id_of(&u, CORDELIA);
    s.ok(
        "PATCH",
        &format!("/api/v1/streams/{verona}"),
        IAGO,
        &[
            (
                "can_delete_any_message_group",
                &new_group(json!(MODERATORS)),
            ),
            ("can_delete_own_message_group", &new_group(json!(EVERYONE))),
            (
                "can_move_messages_within_channel_group",
                &new_group(json!(MODERATORS)),
            ),
            (
                "can_move_messages_out_of_channel_group",
                &new_group(json!(MEMBERS)),
            ),
            ("can_resolve_topics_group", &new_group(json!(MODERATORS))),
            (
                "can_administer_channel_group",
                &new_group(json!({"direct_members": [cordelia], "direct_subgroups": []})),
            ),
        ],
    )
    .await;

    // (who, label) of the roles, the channel administrator last.
    let roles = [
        (DESDEMONA, "owner"),
        (IAGO, "administrator"),
        (SHIVA, "moderator"),
        (HAMLET, "member"),
        (POLONIUS, "guest"),
        (CORDELIA, "Verona's administrator"),
    ];
    // Whether each role may, in Verona and in Denmark: delete another's message,
    // delete its own, move a topic, resolve it, move a message out of the channel.
    let allowed: [(&str, [(bool, bool); 5]); 6] = [
        ("owner", [(true, true); 5]),
        ("administrator", [(true, true); 5]),
        (
            "moderator",
            [
                (true, false),
                (true, false),
                (true, false),
                (true, false),
                (true, false),
            ],
        ),
        (
            "member",
            [
                (false, false),
                (true, false),
                (false, false),
                (false, false),
                (true, false),
            ],
        ),
        (
            "guest",
            [
                (false, false),
                (true, false),
                (false, false),
                (false, false),
                (false, false),
            ],
        ),
        (
            "Verona's administrator",
            [
                (false, false),
                (true, false),
                (true, false),
                (false, false),
                (true, false),
            ],
        ),
    ];
    let may = |label: &str, action: usize, in_verona: bool| {
        let (_, a) = allowed.iter().find(|(l, _)| *l == label).unwrap();
        if in_verona {
            a[action].0
        } else {
            a[action].1
        }
    };
    let channels = [("Verona", verona, denmark), ("Denmark", denmark, verona)];

    let mut deletes = Vec::new();
    let mut edits = Vec::new();
    for (i, (who, label)) in roles.into_iter().enumerate() {
        for (name, _, other) in channels {
            let v = name == "Verona";
            let t = |what: &str| format!("{what} {i} {name}");
            let case = |allowed: bool, params: Vec<(&'static str, String)>, msg: &str| {
                if allowed && params.is_empty() {
                    ok(who, params, json!({}))
                } else if allowed {
                    edited(who, params)
                } else {
                    bad(who, params, msg)
                }
            };
            // Another's message, then one's own.
            deletes.push(on(
                OTHELLO,
                name,
                t("delete"),
                case(may(label, 0, v), vec![], NO_DELETE),
            ));
            deletes.push(on(
                who,
                name,
                t("own"),
                case(may(label, 1, v), vec![], NO_DELETE),
            ));
            // Content: one's own only, whatever the role.
            edits.push(on(
                who,
                name,
                t("content"),
                edited(who, p(&[("content", "mine, edited")])),
            ));
            edits.push(on(
                OTHELLO,
                name,
                t("content"),
                bad(who, p(&[("content", "not mine")]), NO_EDIT),
            ));
            let to = t("moved");
            edits.push(on(
                OTHELLO,
                name,
                t("topic"),
                case(may(label, 2, v), vec![("topic", to)], NO_EDIT),
            ));
            let resolved = format!("✔ {}", t("resolve"));
            edits.push(on(
                OTHELLO,
                name,
                t("resolve"),
                case(may(label, 3, v), vec![("topic", resolved)], NO_RESOLVE),
            ));
            edits.push(on(
                OTHELLO,
                name,
                t("out"),
                case(
                    may(label, 4, v),
                    vec![("stream_id", other.to_string())],
                    NO_MOVE,
                ),
            ));
        }
    }
    // Moving out with a new topic needs both permissions; the topic's is checked first.
    edits.push(on(
        OTHELLO,
        "Verona",
        "both".into(),
        edited(
            CORDELIA,
            vec![
                ("stream_id", denmark.to_string()),
                ("topic", "both moved".into()),
            ],
        ),
    ));
    edits.push(on(
        OTHELLO,
        "Verona",
        "both".into(),
        bad(
            HAMLET,
            vec![
                ("stream_id", denmark.to_string()),
                ("topic", "both moved".into()),
            ],
            NO_EDIT,
        ),
    ));
    // The permission to move topics in the target channel is enough for a topic.
    edits.push(on(
        OTHELLO,
        "Denmark",
        "into".into(),
        bad(
            SHIVA,
            vec![
                ("stream_id", verona.to_string()),
                ("topic", "into Verona".into()),
            ],
            NO_MOVE,
        ),
    ));
    let delete_ids = post_all(&s, &deletes).await;
    let edit_ids = post_all(&s, &edits).await;
    run_on_messages(&s, "DELETE", &deletes, &delete_ids).await;
    run_on_messages(&s, "PATCH", &edits, &edit_ids).await;

    // Time limits: moderators (and administrators) are spared, a channel's
    // administrator is not; resolving has no limit.
    s.ok(
        "PATCH",
        "/api/v1/realm",
        IAGO,
        &[
            ("move_messages_within_stream_limit_seconds", "100"),
            ("move_messages_between_streams_limit_seconds", "100"),
        ],
    )
    .await;
    let channel_late = "The time limit for editing this message's channel has passed";
    let topic_late = "The time limit for editing this message's topic has passed.";
    let out = || vec![("stream_id", denmark.to_string())];
    let topic = |t: &str| vec![("topic", t.to_owned())];
    let late = vec![
        on(OTHELLO, "Verona", "late 1".into(), edited(DESDEMONA, out())),
        on(OTHELLO, "Verona", "late 2".into(), edited(IAGO, out())),
        on(OTHELLO, "Verona", "late 3".into(), edited(SHIVA, out())),
        on(
            OTHELLO,
            "Verona",
            "late 4".into(),
            bad(HAMLET, out(), channel_late),
        ),
        on(
            OTHELLO,
            "Verona",
            "late 5".into(),
            bad(CORDELIA, out(), channel_late),
        ),
        on(
            OTHELLO,
            "Verona",
            "late 6".into(),
            edited(SHIVA, topic("late 6 moved")),
        ),
        on(
            OTHELLO,
            "Verona",
            "late 7".into(),
            bad(CORDELIA, topic("late 7 moved"), topic_late),
        ),
        on(
            OTHELLO,
            "Verona",
            "late 8".into(),
            edited(SHIVA, topic("✔ late 8")),
        ),
        on(
            OTHELLO,
            "Verona",
            "late 9".into(),
            edited(DESDEMONA, topic("late 9 moved")),
        ),
    ];
    let late_ids = post_all(&s, &late).await;
    s.clock().advance_ms(121_000);
    run_on_messages(&s, "PATCH", &late, &late_ids).await;

    // Every outcome, again after a restart.
    s.restart().await;
    check_messages(&s, "DELETE", &deletes, &delete_ids).await;
    check_messages(&s, "PATCH", &edits, &edit_ids).await;
    check_messages(&s, "PATCH", &late, &late_ids).await;
    s.stop().await;
}
