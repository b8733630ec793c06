//! Account lifecycle: `DELETE /users/{user_id}`, `POST /users/{user_id}/reactivate`,
//! `PATCH /users/{user_id}`, `DELETE /users/me`, `DELETE /bots/{bot_id}`: role tables,
//! what a deactivated account can still do, events, and restart survival.
//!
//! Roles: owner desdemona (the only owner), administrator iago, moderator shiva,
//! members hamlet, othello, ZOE (owns webhook-bot), guest polonius.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::{json, Value};

/// A user as `GET /users/{id}` shows them.
async fn user(s: &TestApp, id: i64) -> Value {
    s.ok("GET", &format!("/api/v1/users/{id}"), IAGO, &[]).await["user"].clone()
}

async fn group_id(s: &TestApp, name: &str) -> i64 {
    let body = s.ok("GET", "/api/v1/user_groups", IAGO, &[]).await;
    body["user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == name)
        .and_then(|g| g["id"].as_i64())
        .expect("group")
}

#[actix_web::test]
async fn deactivate_user_by_role() {
    let mut s = TestApp::spawn().await;
    let hamlet = s.user_id(HAMLET).await;
    let desdemona = s.user_id(DESDEMONA).await;
    let bot = s.user_id(DEFAULT_BOT).await;
    let path = format!("/api/v1/users/{hamlet}");
    let long = "x".repeat(2001);
    run_cases(
        &s,
        "DELETE",
        &path,
        &[
            bad(HAMLET, vec![], INSUFFICIENT),
            bad(SHIVA, vec![], INSUFFICIENT),
            bad(POLONIUS, vec![], INSUFFICIENT),
            bad(ZOE, vec![], INSUFFICIENT),
            bad(
                IAGO,
                vec![("deactivation_notification_comment", long)],
                "deactivation_notification_comment is too long (limit: 2000 characters)",
            ),
            ok(
                IAGO,
                p(&[("deactivation_notification_comment", " Bye ")]),
                json!({}),
            ),
            bad(IAGO, vec![], "User is deactivated"),
        ],
    )
    .await;
    run_cases(
        &s,
        "DELETE",
        &format!("/api/v1/users/{desdemona}"),
        &[
            not_owner(IAGO, vec![]),
            bad(
                DESDEMONA,
                vec![],
                "Cannot deactivate the only organization owner",
            ),
        ],
    )
    .await;
    for (who, id) in [(IAGO, bot), (IAGO, 999_999)] {
        s.err(
            "DELETE",
            &format!("/api/v1/users/{id}"),
            who,
            &[],
            400,
            "BAD_REQUEST",
            "No such user",
        )
        .await;
    }
    s.err(
        "DELETE",
        "/api/v1/users/abc",
        IAGO,
        &[],
        404,
        "NOT_FOUND",
        "Not Found",
    )
    .await;

    // The deactivated key answers 401; the user stays listed, inactive.
    let (status, body) = s.call("GET", "/api/v1/users/me", HAMLET, &[]).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["msg"], "Account is deactivated");
    // Zulip's `UserDeactivatedError` (`validate_account_and_subdomain`).
    assert_eq!(body["code"], "USER_DEACTIVATED");
    let all = s.ok("GET", "/api/v1/users", IAGO, &[]).await;
    let listed = all["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["user_id"] == hamlet)
        .cloned()
        .expect("hamlet listed");
    assert_eq!(listed["is_active"], false);
    s.err(
        "POST",
        "/api/v1/dev_fetch_api_key",
        IAGO,
        &[("username", HAMLET)],
        401,
        "USER_DEACTIVATED",
        "Account is deactivated",
    )
    .await;
    // A deactivated user is no longer among the system groups' members.
    let members = group_id(&s, "role:members").await;
    let body = s
        .ok(
            "GET",
            &format!("/api/v1/user_groups/{members}/members"),
            IAGO,
            &[],
        )
        .await;
    assert!(!body["members"].as_array().unwrap().contains(&json!(hamlet)));
    s.err(
        "GET",
        &format!("/api/v1/user_groups/{members}/members/{hamlet}"),
        IAGO,
        &[],
        400,
        "BAD_REQUEST",
        "User is deactivated",
    )
    .await;

    s.restart().await;
    assert_eq!(user(&s, hamlet).await["is_active"], false);

    // Reactivation.
    let react = format!("/api/v1/users/{hamlet}/reactivate");
    run_cases(
        &s,
        "POST",
        &react,
        &[
            bad(OTHELLO, vec![], INSUFFICIENT),
            bad(SHIVA, vec![], INSUFFICIENT),
            ok(IAGO, vec![], json!({})),
        ],
    )
    .await;
    s.err(
        "POST",
        "/api/v1/users/999999/reactivate",
        IAGO,
        &[],
        400,
        "BAD_REQUEST",
        "No such user",
    )
    .await;
    s.ok("GET", "/api/v1/users/me", HAMLET, &[]).await;
    let body = s
        .ok(
            "GET",
            &format!("/api/v1/user_groups/{members}/members/{hamlet}"),
            IAGO,
            &[],
        )
        .await;
    assert_eq!(body["is_user_group_member"], true);
    s.restart().await;
    assert_eq!(user(&s, hamlet).await["is_active"], true);
}

#[actix_web::test]
async fn update_user_by_role() {
    let mut s = TestApp::spawn().await;
    let hamlet = s.user_id(HAMLET).await;
    let iago = s.user_id(IAGO).await;
    let desdemona = s.user_id(DESDEMONA).await;
    let path = format!("/api/v1/users/{hamlet}");
    run_cases(
        &s,
        "PATCH",
        &path,
        &[
            bad(HAMLET, p(&[("role", "200")]), INSUFFICIENT),
            bad(SHIVA, p(&[("role", "200")]), INSUFFICIENT),
            bad(POLONIUS, p(&[("full_name", "X Y")]), INSUFFICIENT),
            bad(IAGO, p(&[("role", "999")]), "Invalid role"),
            bad(IAGO, p(&[("role", "admin")]), "role is not valid JSON"),
            not_owner(IAGO, p(&[("role", "100")])),
            bad(
                IAGO,
                p(&[("full_name", "A*b")]),
                "Invalid characters in name!",
            ),
            ok(IAGO, p(&[("full_name", "A")]), json!({})),
            ok(IAGO, p(&[("full_name", "   ")]), json!({})),
            ok(
                IAGO,
                p(&[("role", "300"), ("full_name", " Hamlet, Prince ")]),
                json!({}),
            ),
            ok(IAGO, vec![], json!({})),
        ],
    )
    .await;
    let u = user(&s, hamlet).await;
    assert_eq!(u["role"], 300);
    assert_eq!(u["full_name"], "Hamlet, Prince");
    // Owners only by owners, and never the last one.
    run_cases(
        &s,
        "PATCH",
        &format!("/api/v1/users/{desdemona}"),
        &[
            not_owner(IAGO, p(&[("role", "200")])),
            bad(
                DESDEMONA,
                p(&[("role", "200")]),
                "The owner permission cannot be removed from the only organization owner.",
            ),
            ok(DESDEMONA, p(&[("role", "100")]), json!({})),
        ],
    )
    .await;
    s.ok(
        "PATCH",
        &format!("/api/v1/users/{iago}"),
        DESDEMONA,
        &[("role", "100")],
    )
    .await;
    let owners = group_id(&s, "role:owners").await;
    let body = s
        .ok(
            "GET",
            &format!("/api/v1/user_groups/{owners}/members"),
            IAGO,
            &[],
        )
        .await;
    let mut got: Vec<i64> = body["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    got.sort_unstable();
    let mut want = vec![iago, desdemona];
    want.sort_unstable();
    assert_eq!(got, want);
    // With two owners, one may step down and the other be deactivated by an owner.
    s.ok(
        "PATCH",
        &format!("/api/v1/users/{desdemona}"),
        DESDEMONA,
        &[("role", "200")],
    )
    .await;
    s.restart().await;
    assert_eq!(user(&s, desdemona).await["role"], 200);
    assert_eq!(user(&s, iago).await["role"], 100);
    assert_eq!(user(&s, hamlet).await["full_name"], "Hamlet, Prince");
}

/// `PATCH /users/{email}` (feature level 313): the user `GET /users/{email}` finds (the
/// API email, or the real address for those who may see it), then as by id; it lasts.
#[actix_web::test]
async fn update_user_by_email() {
    let mut s = TestApp::spawn().await;
    let hamlet = s.user_id(HAMLET).await;
    s.ok(
        "PATCH",
        "/api/v1/users/hamlet@zulip.com",
        IAGO,
        &[("full_name", "Prince Hamlet")],
    )
    .await;
    assert_eq!(user(&s, hamlet).await["full_name"], "Prince Hamlet");
    // The address everyone sees works too.
    let shown = user(&s, hamlet).await["email"].as_str().unwrap().to_owned();
    assert_ne!(shown, "hamlet@zulip.com");
    s.ok(
        "PATCH",
        &format!("/api/v1/users/{shown}"),
        IAGO,
        &[("role", "300")],
    )
    .await;
    assert_eq!(user(&s, hamlet).await["role"], 300);
    s.bad(
        "PATCH",
        "/api/v1/users/nobody@zulip.com",
        IAGO,
        &[("full_name", "X")],
        "No such user",
    )
    .await;
    // A member sees no real address, and may not update anyone.
    s.bad(
        "PATCH",
        "/api/v1/users/hamlet@zulip.com",
        OTHELLO,
        &[("full_name", "X")],
        "No such user",
    )
    .await;
    s.bad(
        "PATCH",
        &format!("/api/v1/users/{shown}"),
        OTHELLO,
        &[("full_name", "X")],
        "Insufficient permission",
    )
    .await;
    s.restart().await;
    let after = user(&s, hamlet).await;
    assert_eq!(
        (after["full_name"].clone(), after["role"].clone()),
        (json!("Prince Hamlet"), json!(300))
    );
}

#[actix_web::test]
async fn deactivate_own_account() {
    let mut s = TestApp::spawn().await;
    let (status, body) = s.call("DELETE", "/api/v1/users/me", DESDEMONA, &[]).await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"result": "error", "code": "CANNOT_DEACTIVATE_LAST_USER",
               "msg": "Cannot deactivate the only organization owner.",
               "is_last_owner": true, "entity": "organization owner"})
    );
    let othello = s.user_id(OTHELLO).await;
    s.ok("DELETE", "/api/v1/users/me", OTHELLO, &[]).await;
    let (status, _) = s.call("GET", "/api/v1/users/me", OTHELLO, &[]).await;
    assert_eq!(status, 401);
    s.restart().await;
    assert_eq!(user(&s, othello).await["is_active"], false);
}

#[actix_web::test]
async fn bots_follow_their_owner_and_owners_deactivate_bots() {
    let s = TestApp::spawn().await;
    let zoe = s.user_id(ZOE).await;
    let bot = s.user_id(WEBHOOK_BOT).await;
    let path = format!("/api/v1/bots/{bot}");
    run_cases(
        &s,
        "DELETE",
        &path,
        &[
            bad(HAMLET, vec![], INSUFFICIENT),
            ok(ZOE, vec![], json!({})),
        ],
    )
    .await;
    assert_eq!(user(&s, bot).await["is_active"], false);
    s.err(
        "DELETE",
        "/api/v1/bots/999999",
        ZOE,
        &[],
        400,
        "BAD_REQUEST",
        "No such bot",
    )
    .await;
    s.err(
        "DELETE",
        &format!("/api/v1/bots/{zoe}"),
        IAGO,
        &[],
        400,
        "BAD_REQUEST",
        "No such bot",
    )
    .await;
    // The owner may reactivate their bot.
    s.ok("POST", &format!("/api/v1/users/{bot}/reactivate"), ZOE, &[])
        .await;
    assert_eq!(user(&s, bot).await["is_active"], true);
    // Deactivating a user deactivates their bots first.
    let q = s.register(IAGO, &[]).await;
    s.ok("DELETE", &format!("/api/v1/users/{zoe}"), IAGO, &[])
        .await;
    assert_eq!(user(&s, bot).await["is_active"], false);
    let events = s.events(IAGO, &q).await;
    let updates: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "realm_user" || e["type"] == "realm_bot")
        .collect();
    assert_eq!(
        updates
            .iter()
            .map(|e| json!([e["type"], e["op"], e.get("person").or(e.get("bot"))]))
            .collect::<Vec<_>>(),
        vec![
            json!(["realm_user", "update", {"user_id": bot, "is_active": false}]),
            json!(["realm_bot", "update", {"user_id": bot, "is_active": false}]),
            json!(["realm_user", "update", {"user_id": zoe, "is_active": false}]),
        ]
    );
}

#[actix_web::test]
async fn events_and_queues() {
    let s = TestApp::spawn().await;
    let hamlet = s.user_id(HAMLET).await;
    let watcher = s.register(CORDELIA, &[]).await;
    let hamlet_queue = s.register(HAMLET, &[]).await;
    let members = group_id(&s, "role:members").await;
    let full = group_id(&s, "role:fullmembers").await;
    let moderators = group_id(&s, "role:moderators").await;

    s.ok(
        "PATCH",
        &format!("/api/v1/users/{hamlet}"),
        IAGO,
        &[("role", "300"), ("full_name", "Prince Hamlet")],
    )
    .await;
    let events = s.events(CORDELIA, &watcher).await;
    let shapes: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "realm_user" || e["type"] == "user_group")
        .map(|e| {
            let mut e = e.clone();
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect();
    assert_eq!(
        shapes,
        vec![
            json!({"type": "realm_user", "op": "update", "person": {"user_id": hamlet, "role": 300}}),
            json!({"type": "user_group", "op": "remove_members", "group_id": members, "user_ids": [hamlet]}),
            json!({"type": "user_group", "op": "add_members", "group_id": moderators, "user_ids": [hamlet]}),
            json!({"type": "user_group", "op": "remove_members", "group_id": full, "user_ids": [hamlet]}),
            json!({"type": "realm_user", "op": "update", "person": {"user_id": hamlet, "full_name": "Prince Hamlet"}}),
        ]
    );

    // Deactivation: peers learn it, the user's queues go away.
    let watcher = s.register(CORDELIA, &[]).await;
    s.ok("DELETE", &format!("/api/v1/users/{hamlet}"), IAGO, &[])
        .await;
    let events = s.events(CORDELIA, &watcher).await;
    assert!(events.iter().any(|e| e["type"] == "realm_user"
        && e["op"] == "update"
        && e["person"] == json!({"user_id": hamlet, "is_active": false})));
    assert!(events.iter().any(|e| e["type"] == "subscription"
        && e["op"] == "peer_remove"
        && e["user_ids"] == json!([hamlet])));

    let watcher = s.register(CORDELIA, &[]).await;
    s.ok(
        "POST",
        &format!("/api/v1/users/{hamlet}/reactivate"),
        IAGO,
        &[],
    )
    .await;
    let events = s.events(CORDELIA, &watcher).await;
    assert!(events.iter().any(|e| e["type"] == "realm_user"
        && e["person"] == json!({"user_id": hamlet, "is_active": true})));
    assert!(events.iter().any(|e| e["type"] == "user_group"
        && e["op"] == "add_members"
        && e["group_id"] == moderators
        && e["user_ids"] == json!([hamlet])));
    assert!(events.iter().any(|e| e["type"] == "subscription"
        && e["op"] == "peer_add"
        && e["user_ids"] == json!([hamlet])));
    // The queue registered before the deactivation is gone.
    s.err(
        "GET",
        "/api/v1/events",
        HAMLET,
        &[
            ("queue_id", &hamlet_queue),
            ("last_event_id", "-1"),
            ("dont_block", "true"),
        ],
        400,
        "BAD_EVENT_QUEUE_ID",
        &format!("Bad event queue ID: {hamlet_queue}"),
    )
    .await;
}
