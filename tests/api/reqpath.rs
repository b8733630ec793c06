//! The request path's kept and pre-encoded answers: `GET /users/me` (its body kept per
//! user, `hub::answers`) follows every change to what it is made of; the events of a
//! long-poll (encoded once per event, `hub::queues::encode_events`) read as before for
//! queues that shape them and queues that do not; the rate limit's authentication is
//! the handler's (`auth::Authenticated`) and a key changed meanwhile is refused.
//!
//! In debug builds every kept `/users/me` body is also compared with a fresh one on
//! each use (`hub::answers`), so every test that reads `/users/me` checks the cache.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::{json, Value};

const ME: &str = "/api/v1/users/me";

#[actix_web::test]
async fn own_user_follows_the_user_the_profile_and_the_messages() {
    let s = TestApp::spawn().await;
    let first = s.ok("GET", ME, HAMLET, &[]).await;
    assert_eq!(s.ok("GET", ME, HAMLET, &[]).await, first);
    // Another user's body is their own.
    let othello = s.ok("GET", ME, OTHELLO, &[]).await;
    assert_eq!(othello["user_id"], json!(OTHELLO_ID));
    assert_eq!(s.ok("GET", ME, HAMLET, &[]).await, first);

    // The user changes: their name, then their role (by an administrator).
    s.ok(
        "PATCH",
        "/api/v1/settings",
        HAMLET,
        &[("full_name", "Prince Hamlet")],
    )
    .await;
    let me = s.ok("GET", ME, HAMLET, &[]).await;
    assert_eq!(me["full_name"], "Prince Hamlet");
    assert_eq!(me["is_admin"], false);
    let path = format!("/api/v1/users/{HAMLET_ID}");
    s.ok("PATCH", &path, IAGO, &[("role", "200")]).await;
    let me = s.ok("GET", ME, HAMLET, &[]).await;
    assert_eq!(
        (me["is_admin"].clone(), me["role"].clone()),
        (json!(true), json!(200))
    );
    assert_eq!(me["full_name"], "Prince Hamlet");

    // Their profile data changes (the user is the same).
    let data = json!([{"id": 9, "value": "he/him"}]).to_string();
    s.ok(
        "PATCH",
        "/api/v1/users/me/profile_data",
        HAMLET,
        &[("data", &data)],
    )
    .await;
    let me = s.ok("GET", ME, HAMLET, &[]).await;
    assert_eq!(me["profile_data"]["9"], json!({"value": "he/him"}));
    // A field's definition changes (another user's action, the realm's fields).
    s.ok(
        "PATCH",
        "/api/v1/realm/profile_fields/9",
        IAGO,
        &[("name", "Pronoun")],
    )
    .await;
    assert_eq!(
        s.ok("GET", ME, HAMLET, &[]).await["profile_data"]["9"],
        json!({"value": "he/him"})
    );
    s.ok("DELETE", "/api/v1/realm/profile_fields/9", IAGO, &[])
        .await;
    assert!(s.ok("GET", ME, HAMLET, &[]).await["profile_data"]
        .get("9")
        .is_none());

    // max_message_id is kept per user while no row is written and no newer message
    // is visible: a message Hamlet receives moves it, its deletion moves it back.
    let before = s.ok("GET", ME, HAMLET, &[]).await["max_message_id"].clone();
    let sent = s
        .ok(
            "POST",
            "/api/v1/messages",
            OTHELLO,
            &[
                ("type", "direct"),
                ("to", &format!("[{HAMLET_ID}]")),
                ("content", "hi"),
            ],
        )
        .await["id"]
        .clone();
    let after = s.ok("GET", ME, HAMLET, &[]).await["max_message_id"].clone();
    assert_ne!(before, after);
    assert_eq!(after, sent);
    assert_eq!(s.ok("GET", ME, HAMLET, &[]).await["max_message_id"], sent);
    let in_channel = s
        .ok(
            "POST",
            "/api/v1/messages",
            IAGO,
            &[
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", "kept"),
                ("content", "hello"),
            ],
        )
        .await["id"]
        .clone();
    assert_eq!(
        s.ok("GET", ME, HAMLET, &[]).await["max_message_id"],
        in_channel
    );
    s.ok(
        "DELETE",
        &format!("/api/v1/messages/{in_channel}"),
        IAGO,
        &[],
    )
    .await;
    let deleted = s.ok("GET", ME, HAMLET, &[]).await["max_message_id"].clone();
    assert_eq!(deleted, sent, "the deleted message is no longer the newest");

    // Parameters it does not read are listed after it, as before.
    let me = s
        .ok(
            "GET",
            ME,
            HAMLET,
            &[("bogus", "1"), ("client_gravatar", "true")],
        )
        .await;
    assert_eq!(
        me["ignored_parameters_unsupported"],
        json!(["bogus", "client_gravatar"])
    );
    let keys = keys_in_order(&me);
    assert_eq!(
        keys.last().map(String::as_str),
        Some("ignored_parameters_unsupported")
    );
}

#[actix_web::test]
async fn own_user_of_a_user_who_changed_their_email_visibility_or_was_deactivated() {
    let s = TestApp::spawn().await;
    let me = s.ok("GET", ME, HAMLET, &[]).await;
    s.ok(
        "PATCH",
        "/api/v1/settings",
        HAMLET,
        &[("email_address_visibility", "5")],
    )
    .await;
    // What the settings change did to the body, kept or not, is what a fresh
    // rendering shows (debug builds compare them); the body is served.
    let after = s.ok("GET", ME, HAMLET, &[]).await;
    assert_eq!(after["user_id"], me["user_id"]);
}

/// Events read the same whether a queue shares an event's encoding or shapes it.
#[actix_web::test]
async fn shared_and_shaped_events_read_alike() {
    let s = TestApp::spawn().await;
    let plain = s
        .register(
            OTHELLO,
            &[
                ("event_types", r#"["message","user_status"]"#),
                ("apply_markdown", "true"),
            ],
        )
        .await;
    let markdown = s
        .register(
            OTHELLO,
            &[
                ("event_types", r#"["message","user_status"]"#),
                ("apply_markdown", "false"),
            ],
        )
        .await;
    s.ok(
        "POST",
        "/api/v1/users/me/status",
        HAMLET,
        &[("status_text", "away")],
    )
    .await;
    s.ok(
        "POST",
        "/api/v1/messages",
        HAMLET,
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "t"),
            ("content", "**hi**"),
        ],
    )
    .await;
    let a: Vec<Value> = s.events(OTHELLO, &plain).await;
    let b: Vec<Value> = s.events(OTHELLO, &markdown).await;
    assert_eq!(a.len(), 2);
    assert_eq!(a[0], b[0]);
    assert_eq!(a[0]["type"], "user_status");
    assert_eq!(
        keys_in_order(&a[0]).first().map(String::as_str),
        Some("type")
    );
    assert_eq!(keys_in_order(&a[0]).last().map(String::as_str), Some("id"));
    assert_eq!(a[1]["message"]["content"], "<p><strong>hi</strong></p>");
    assert_eq!(b[1]["message"]["content"], "**hi**");
    // Read again (nothing acknowledged): the same bytes' worth.
    assert_eq!(s.events(OTHELLO, &plain).await, a);
}

fn keys_in_order(v: &Value) -> Vec<String> {
    v.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// With rate limits on, the rate limit authenticates and the handler takes its answer:
/// the same answers, headers and refusals as when each authenticated on its own.
#[actix_web::test]
async fn rate_limited_requests_authenticate_once_with_the_same_answers() {
    use hearth::config::Switch;
    let dir = tempfile::tempdir().unwrap();
    let s = TestApp::spawn_configured(dir, |c| c.rate_limit = Some(Switch::On)).await;
    let key = s.api_key(HAMLET).await;
    let reply = s.get(ME, Auth::Basic(HAMLET, &key), &[]).await;
    assert_eq!(assert_success(&reply)["user_id"], json!(HAMLET_ID));
    assert!(reply.1.contains_key("x-ratelimit-remaining"));
    // A write, whose parsing authenticates too.
    let reply = s
        .post(
            "/api/v1/users/me/presence",
            Auth::Basic(HAMLET, &key),
            &[("status", "active"), ("ping_only", "true")],
        )
        .await;
    assert_eq!(reply.2, json!({"result": "success", "msg": ""}));
    // The last character changed (to one it is not: a key ending in `x` stayed valid).
    let last = if key.ends_with('x') { 'y' } else { 'x' };
    let bad = format!("{}{last}", &key[..key.len() - 1]);
    let reply = s.get(ME, Auth::Basic(HAMLET, &bad), &[]).await;
    assert_error(&reply, 401, "UNAUTHORIZED", "Invalid API key");
    s.ok("DELETE", &format!("/api/v1/users/{HAMLET_ID}"), IAGO, &[])
        .await;
    let reply = s.get(ME, Auth::Basic(HAMLET, &key), &[]).await;
    assert_error(&reply, 401, "USER_DEACTIVATED", "Account is deactivated");
}
