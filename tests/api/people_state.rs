//! Topics and people: topic visibility policies (`POST /user_topics`, the legacy
//! `PATCH /users/me/subscriptions/muted_topics`), muted users and alert words. Every
//! rule and error text, the events, `/register`, the flags they give delivered
//! messages, and a restart and a `kill -9`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::child::ChildServer;
use crate::common::*;
use hearth::realm::ManualClock;
use serde_json::{json, Value};

const USER_TOPICS: &str = "/api/v1/user_topics";
const MUTED_TOPICS: &str = "/api/v1/users/me/subscriptions/muted_topics";
const ALERT_WORDS: &str = "/api/v1/users/me/alert_words";

async fn start() -> TestApp {
    TestApp::spawn_with_clock(ManualClock::new(START_MS)).await
}

fn muted_user(id: i64) -> String {
    format!("/api/v1/users/me/muted_users/{id}")
}

async fn state(s: &TestApp, who: &str, types: &str) -> Value {
    s.ok(
        "POST",
        "/api/v1/register",
        who,
        &[("fetch_event_types", types)],
    )
    .await
}

async fn set_topic(s: &TestApp, who: &str, channel: i64, topic: &str, policy: i64) {
    s.ok(
        "POST",
        USER_TOPICS,
        who,
        &[
            ("stream_id", &channel.to_string()),
            ("topic", topic),
            ("visibility_policy", &policy.to_string()),
        ],
    )
    .await;
}

async fn send_to(s: &TestApp, who: &str, channel: &str, topic: &str, content: &str) -> i64 {
    s.ok(
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
    .await["id"]
        .as_i64()
        .unwrap()
}

async fn dm(s: &TestApp, who: &str, to: i64, content: &str) -> i64 {
    s.ok(
        "POST",
        "/api/v1/messages",
        who,
        &[
            ("type", "direct"),
            ("to", &json!([to]).to_string()),
            ("content", content),
        ],
    )
    .await["id"]
        .as_i64()
        .unwrap()
}

async fn flags_of(s: &TestApp, who: &str, id: i64) -> Vec<String> {
    let body = s
        .ok("GET", &format!("/api/v1/messages/{id}"), who, &[])
        .await;
    body["message"]["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect()
}

/// The events of one type in a queue.
async fn events_of(s: &TestApp, who: &str, queue: &str, kind: &str) -> Vec<Value> {
    s.events(who, queue)
        .await
        .into_iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

/// The `flags` the `message` event of message `id` carried to `who`.
async fn delivered_flags(s: &TestApp, who: &str, queue: &str, id: i64) -> Vec<String> {
    let ev = events_of(s, who, queue, "message").await;
    let e = ev
        .iter()
        .find(|e| e["message"]["id"] == id)
        .unwrap_or_else(|| panic!("no message event for {id}: {ev:?}"));
    e["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect()
}

async fn create_channel(s: &TestApp, name: &str, private: bool, subscribers: &[i64]) -> i64 {
    s.ok(
        "POST",
        "/api/v1/channels/create",
        IAGO,
        &[
            ("name", name),
            ("invite_only", if private { "true" } else { "false" }),
            ("subscribers", &json!(subscribers).to_string()),
        ],
    )
    .await["id"]
        .as_i64()
        .unwrap()
}

// ---------------------------------------------------------------- topic policies

#[actix_web::test]
async fn user_topic_parameters_are_checked_in_zulips_order() {
    let s = start().await;
    let verona = s.stream_id("Verona").await.to_string();
    let v = verona.as_str();
    s.err(
        "POST",
        USER_TOPICS,
        HAMLET,
        &[("topic", "t"), ("visibility_policy", "1")],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'stream_id' argument",
    )
    .await;
    s.bad(
        "POST",
        USER_TOPICS,
        HAMLET,
        &[
            ("stream_id", "Verona"),
            ("topic", "t"),
            ("visibility_policy", "1"),
        ],
        "stream_id is not valid JSON",
    )
    .await;
    s.err(
        "POST",
        USER_TOPICS,
        HAMLET,
        &[("stream_id", v), ("visibility_policy", "1")],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'topic' argument",
    )
    .await;
    let long = "x".repeat(61);
    s.bad(
        "POST",
        USER_TOPICS,
        HAMLET,
        &[
            ("stream_id", v),
            ("topic", &long),
            ("visibility_policy", "1"),
        ],
        "topic is too long (limit: 60 characters)",
    )
    .await;
    // Sixty characters (not bytes) are fine.
    set_topic(&s, HAMLET, v.parse().unwrap(), &"é".repeat(60), 1).await;
    s.err(
        "POST",
        USER_TOPICS,
        HAMLET,
        &[("stream_id", v), ("topic", "t")],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'visibility_policy' argument",
    )
    .await;
    for bad in ["4", "-1"] {
        s.bad(
            "POST",
            USER_TOPICS,
            HAMLET,
            &[("stream_id", v), ("topic", "t"), ("visibility_policy", bad)],
            "Invalid visibility_policy: Value error, Not in the list of possible values",
        )
        .await;
    }
    s.bad(
        "POST",
        USER_TOPICS,
        HAMLET,
        &[
            ("stream_id", v),
            ("topic", "t"),
            ("visibility_policy", "\"muted\""),
        ],
        "visibility_policy is not an integer",
    )
    .await;
    // No such channel, whatever the policy.
    for policy in ["0", "1", "3"] {
        s.bad(
            "POST",
            USER_TOPICS,
            HAMLET,
            &[
                ("stream_id", "9999"),
                ("topic", "t"),
                ("visibility_policy", policy),
            ],
            "Invalid channel ID",
        )
        .await;
    }
}

#[actix_web::test]
async fn user_topic_channel_access() {
    let s = start().await;
    let secret = create_channel(&s, "secret", true, &[IAGO_ID]).await;
    let open = create_channel(&s, "open", false, &[IAGO_ID]).await;
    let archived = create_channel(&s, "old", false, &[IAGO_ID, HAMLET_ID]).await;
    set_topic(&s, HAMLET, archived, "kept", 1).await;
    s.ok("DELETE", &format!("/api/v1/streams/{archived}"), IAGO, &[])
        .await;
    let try_set = |who: &'static str, channel: i64, policy: &'static str| {
        let s = &s;
        async move {
            s.call(
                "POST",
                USER_TOPICS,
                who,
                &[
                    ("stream_id", &channel.to_string()),
                    ("topic", "t"),
                    ("visibility_policy", policy),
                ],
            )
            .await
        }
    };
    let invalid = json!({"result": "error", "msg": "Invalid channel ID", "code": "BAD_REQUEST"});
    // A private channel the caller is not in: refused, administrators too (no content
    // access); a public one: every member, but not a guest outside it.
    assert_eq!(try_set(HAMLET, secret, "1").await, (400, invalid.clone()));
    assert_eq!(
        try_set(DESDEMONA, secret, "3").await,
        (400, invalid.clone())
    );
    assert_eq!(try_set(POLONIUS, open, "1").await, (400, invalid.clone()));
    assert_eq!(try_set(HAMLET, open, "2").await.0, 200);
    assert_eq!(try_set(DEFAULT_BOT, open, "3").await.0, 200);
    // An archived channel takes no new policy.
    assert_eq!(try_set(HAMLET, archived, "3").await, (400, invalid.clone()));
    // Removing a policy needs no access at all (`access_stream_to_remove_visibility_
    // policy_by_id`): any channel of the realm, archived or private.
    assert_eq!(try_set(HAMLET, secret, "0").await.0, 200);
    assert_eq!(try_set(POLONIUS, open, "0").await.0, 200);
    // The archived channel's row is not listed, and removing it works.
    let st = state(&s, HAMLET, r#"["user_topic"]"#).await;
    assert_eq!(st["user_topics"].as_array().unwrap().len(), 1, "{st}");
    assert_eq!(try_set(HAMLET, archived, "0").await.0, 200);
}

#[actix_web::test]
async fn user_topic_rules_events_and_register() {
    let mut s = start().await;
    let verona = s.stream_id("Verona").await;
    let all = s.register(HAMLET, &[]).await;
    let modern = s
        .register(
            HAMLET,
            &[("event_types", r#"["user_topic", "muted_topics"]"#)],
        )
        .await;
    let legacy = s
        .register(HAMLET, &[("event_types", r#"["muted_topics"]"#)])
        .await;

    set_topic(&s, HAMLET, verona, "Lunch", 1).await;
    let row = json!({"stream_id": verona, "topic_name": "Lunch", "last_updated": START, "visibility_policy": 1});
    let ev = events_of(&s, HAMLET, &all, "user_topic").await;
    assert_eq!(ev.len(), 1);
    let mut e = ev[0].clone();
    e.as_object_mut().unwrap().remove("id");
    let mut want = row.clone();
    want["type"] = json!("user_topic");
    assert_eq!(e, want);
    // The legacy list, to queues that did not ask for `user_topic`.
    let legacy_list = json!([["Verona", "Lunch", START]]);
    let ev = events_of(&s, HAMLET, &all, "muted_topics").await;
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["muted_topics"], legacy_list);
    assert_eq!(
        events_of(&s, HAMLET, &legacy, "muted_topics").await.len(),
        1
    );
    assert!(events_of(&s, HAMLET, &modern, "muted_topics")
        .await
        .is_empty());
    assert_eq!(events_of(&s, HAMLET, &modern, "user_topic").await.len(), 1);
    assert!(events_of(&s, HAMLET, &legacy, "user_topic")
        .await
        .is_empty());
    // Nobody else hears of it.
    let othello = s.register(OTHELLO, &[]).await;

    // The policy it already has: success, no event.
    set_topic(&s, HAMLET, verona, "lunch", 1).await;
    assert_eq!(events_of(&s, HAMLET, &all, "user_topic").await.len(), 1);
    // Topics compare case-insensitively: following "LUNCH" updates the row, which
    // keeps its spelling; the event names the topic as the request did.
    s.clock().advance_ms(5_000);
    set_topic(&s, HAMLET, verona, "LUNCH", 3).await;
    let ev = events_of(&s, HAMLET, &all, "user_topic").await;
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[1]["topic_name"], "LUNCH");
    assert_eq!(ev[1]["visibility_policy"], 3);
    assert_eq!(ev[1]["last_updated"], START + 5);
    // Not muted any more: the legacy list is empty.
    let ev = events_of(&s, HAMLET, &all, "muted_topics").await;
    assert_eq!(ev[1]["muted_topics"], json!([]));

    // `/register`: `user_topics`; `muted_topics` only without `user_topic`.
    set_topic(&s, HAMLET, verona, "dinner", 2).await;
    set_topic(&s, HAMLET, verona, "breakfast", 1).await;
    let rows = json!([
        {"stream_id": verona, "topic_name": "Lunch", "last_updated": START + 5, "visibility_policy": 3},
        {"stream_id": verona, "topic_name": "dinner", "last_updated": START + 5, "visibility_policy": 2},
        {"stream_id": verona, "topic_name": "breakfast", "last_updated": START + 5, "visibility_policy": 1},
    ]);
    let st = state(&s, HAMLET, r#"["user_topic", "muted_topics"]"#).await;
    assert_eq!(st["user_topics"], rows);
    assert!(st.get("muted_topics").is_none(), "{st}");
    let st = state(&s, HAMLET, r#"["muted_topics"]"#).await;
    assert_eq!(
        st["muted_topics"],
        json!([["Verona", "breakfast", START + 5]])
    );
    assert!(st.get("user_topics").is_none());
    let st = s.ok("POST", "/api/v1/register", HAMLET, &[]).await;
    assert_eq!(st["user_topics"], rows);
    assert_eq!(
        st["muted_topics"],
        json!([["Verona", "breakfast", START + 5]])
    );
    // Per user.
    let st = state(&s, OTHELLO, r#"["user_topic"]"#).await;
    assert_eq!(st["user_topics"], json!([]));
    assert!(s.events(OTHELLO, &othello).await.is_empty());

    // Inherit removes the row; inherit without a row is a success without event.
    set_topic(&s, HAMLET, verona, "DINNER", 0).await;
    let ev = events_of(&s, HAMLET, &all, "user_topic").await;
    assert_eq!(ev.len(), 5);
    assert_eq!(ev[4]["visibility_policy"], 0);
    assert_eq!(ev[4]["topic_name"], "DINNER");
    set_topic(&s, HAMLET, verona, "never set", 0).await;
    assert_eq!(events_of(&s, HAMLET, &all, "user_topic").await.len(), 5);
    // The realm's empty-topic name is the empty topic, named so to a queue without the
    // `empty_topic_name` capability.
    set_topic(&s, HAMLET, verona, "general chat", 1).await;
    let ev = events_of(&s, HAMLET, &all, "user_topic").await;
    assert_eq!(ev[5]["topic_name"], "general chat");

    // A clean restart keeps every row.
    let before = state(&s, HAMLET, r#"["user_topic"]"#).await["user_topics"].clone();
    assert_eq!(before.as_array().unwrap().len(), 3);
    s.restart().await;
    assert_eq!(
        state(&s, HAMLET, r#"["user_topic"]"#).await["user_topics"],
        before
    );
}

#[actix_web::test]
async fn legacy_muted_topics() {
    let s = start().await;
    let verona = s.stream_id("Verona").await;
    let q = s.register(HAMLET, &[]).await;
    let mute = |params: Vec<(&'static str, String)>| {
        let s = &s;
        async move {
            let pairs: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
            s.call("PATCH", MUTED_TOPICS, HAMLET, &pairs).await
        }
    };
    // Parameters: `op` (a literal), `topic`, then exactly one of `stream`/`stream_id`.
    let (st, body) = mute(p(&[("topic", "t"), ("stream", "Verona")])).await;
    assert_eq!(
        (st, body["msg"].as_str().unwrap()),
        (400, "Missing 'op' argument")
    );
    let (st, body) = mute(p(&[("op", "toggle"), ("topic", "t"), ("stream", "Verona")])).await;
    assert_eq!((st, body["msg"].as_str().unwrap()), (400, "Invalid op"));
    let (st, body) = mute(p(&[("op", "add"), ("stream", "Verona")])).await;
    assert_eq!(
        (st, body["msg"].as_str().unwrap()),
        (400, "Missing 'topic' argument")
    );
    let (st, body) = mute(p(&[("op", "add"), ("topic", "t")])).await;
    assert_eq!(st, 400);
    assert_eq!(
        body,
        json!({"result": "error", "msg": "Missing 'stream_id' argument", "code": "BAD_REQUEST"})
    );
    let (st, body) = mute(vec![
        ("op", "add".into()),
        ("topic", "t".into()),
        ("stream", "Verona".into()),
        ("stream_id", verona.to_string()),
    ])
    .await;
    assert_eq!(st, 400);
    assert_eq!(
        body,
        json!({"result": "error", "msg": "Unsupported parameter combination: stream_id, stream", "code": "BAD_REQUEST", "parameters": "stream_id, stream"})
    );
    let (st, body) = mute(p(&[("op", "add"), ("topic", "t"), ("stream", "Nowhere")])).await;
    assert_eq!(
        (st, body["msg"].as_str().unwrap()),
        (400, "Invalid channel name 'Nowhere'")
    );
    let (st, body) = mute(p(&[("op", "add"), ("topic", "t"), ("stream_id", "9999")])).await;
    assert_eq!(
        (st, body["msg"].as_str().unwrap()),
        (400, "Invalid channel ID")
    );
    // Removal from a channel that does not exist: "Topic is not muted".
    for ch in [("stream", "Nowhere"), ("stream_id", "9999")] {
        let (st, body) = mute(p(&[("op", "remove"), ("topic", "t"), ch])).await;
        assert_eq!(
            (st, body["msg"].as_str().unwrap()),
            (400, "Topic is not muted")
        );
    }
    assert!(events_of(&s, HAMLET, &q, "user_topic").await.is_empty());

    // Muting by name (case-insensitively) maps onto the same rows and events.
    let (st, body) = mute(p(&[("op", "add"), ("topic", "Tea"), ("stream", "verona")])).await;
    assert_eq!(st, 200, "{body}");
    let ev = events_of(&s, HAMLET, &q, "user_topic").await;
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["stream_id"], verona);
    assert_eq!(ev[0]["visibility_policy"], 1);
    assert_eq!(
        events_of(&s, HAMLET, &q, "muted_topics").await[0]["muted_topics"],
        json!([["Verona", "Tea", START]])
    );
    // Since feature level 170 muting twice or unmuting a topic that is not muted
    // succeeds (no event).
    let (st, _) = mute(p(&[("op", "add"), ("topic", "TEA"), ("stream", "Verona")])).await;
    assert_eq!(st, 200);
    let (st, _) = mute(p(&[
        ("op", "remove"),
        ("topic", "coffee"),
        ("stream", "Verona"),
    ]))
    .await;
    assert_eq!(st, 200);
    assert_eq!(events_of(&s, HAMLET, &q, "user_topic").await.len(), 1);
    let (st, _) = mute(vec![
        ("op", "remove".into()),
        ("topic", "tea".into()),
        ("stream_id", verona.to_string()),
    ])
    .await;
    assert_eq!(st, 200);
    let ev = events_of(&s, HAMLET, &q, "user_topic").await;
    assert_eq!(ev[1]["visibility_policy"], 0);
    assert_eq!(
        state(&s, HAMLET, r#"["user_topic"]"#).await["user_topics"],
        json!([])
    );
}

#[actix_web::test]
async fn muted_topic_messages_stay_unread_and_listed() {
    // Zulip lists muted topics' unread messages in `unread_msgs` (clients filter) and
    // delivers them unread.
    let s = start().await;
    let verona = s.stream_id("Verona").await;
    set_topic(&s, HAMLET, verona, "noise", 1).await;
    let q = s.register(HAMLET, &[]).await;
    let id = send_to(&s, OTHELLO, "Verona", "noise", "blah").await;
    assert!(delivered_flags(&s, HAMLET, &q, id).await.is_empty());
    let st = state(&s, HAMLET, r#"["message", "update_message_flags"]"#).await;
    let streams = st["unread_msgs"]["streams"].as_array().unwrap();
    assert!(
        streams
            .iter()
            .any(|t| t["topic"] == "noise" && t["unread_message_ids"] == json!([id])),
        "{st}"
    );
}

// ---------------------------------------------------------------- muted users

#[actix_web::test]
async fn muted_user_rules() {
    let s = start().await;
    s.bad(
        "POST",
        &muted_user(HAMLET_ID),
        HAMLET,
        &[],
        "Cannot mute self",
    )
    .await;
    s.bad("POST", &muted_user(9999), HAMLET, &[], "No such user")
        .await;
    s.bad("DELETE", &muted_user(9999), HAMLET, &[], "No such user")
        .await;
    s.bad(
        "DELETE",
        &muted_user(OTHELLO_ID),
        HAMLET,
        &[],
        "User is not muted",
    )
    .await;
    // Unmuting oneself is only "not muted".
    s.bad(
        "DELETE",
        &muted_user(HAMLET_ID),
        HAMLET,
        &[],
        "User is not muted",
    )
    .await;
    s.err(
        "POST",
        "/api/v1/users/me/muted_users/abc",
        HAMLET,
        &[],
        404,
        "NOT_FOUND",
        "Not Found",
    )
    .await;

    let q = s.register(HAMLET, &[]).await;
    // Bots and deactivated users may be muted.
    s.clock().advance_ms(1_000);
    s.ok("POST", &muted_user(BOT_ID), HAMLET, &[]).await;
    let gone = s.create_user("gone@zulip.com", "pw-gone-1", "Gone").await as i64;
    s.ok("DELETE", &format!("/api/v1/users/{gone}"), IAGO, &[])
        .await;
    s.clock().advance_ms(1_000);
    // No `ignored_parameters_unsupported` (not a typed endpoint).
    let body = s
        .ok("POST", &muted_user(gone), HAMLET, &[("extra", "1")])
        .await;
    assert_eq!(body, json!({"result": "success", "msg": ""}));
    s.bad(
        "POST",
        &muted_user(BOT_ID),
        HAMLET,
        &[],
        "User already muted",
    )
    .await;
    let list =
        json!([{"id": BOT_ID, "timestamp": START + 1}, {"id": gone, "timestamp": START + 2}]);
    let ev = events_of(&s, HAMLET, &q, "muted_users").await;
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[1]["muted_users"], list);
    assert_eq!(
        state(&s, HAMLET, r#"["muted_users"]"#).await["muted_users"],
        list
    );
    // Per user.
    assert_eq!(
        state(&s, OTHELLO, r#"["muted_users"]"#).await["muted_users"],
        json!([])
    );

    s.ok("DELETE", &muted_user(BOT_ID), HAMLET, &[]).await;
    let ev = events_of(&s, HAMLET, &q, "muted_users").await;
    assert_eq!(
        ev[2]["muted_users"],
        json!([{"id": gone, "timestamp": START + 2}])
    );
    s.bad(
        "DELETE",
        &muted_user(BOT_ID),
        HAMLET,
        &[],
        "User is not muted",
    )
    .await;
}

#[actix_web::test]
async fn muting_reads_the_muted_users_messages() {
    let mut s = start().await;
    let q = s.register(HAMLET, &[]).await;
    let old_channel = send_to(&s, OTHELLO, "Verona", "t", "one").await;
    let old_dm = dm(&s, OTHELLO, HAMLET_ID, "two").await;
    let other = send_to(&s, CORDELIA, "Verona", "t", "three").await;
    for id in [old_channel, old_dm, other] {
        assert!(!flags_of(&s, HAMLET, id).await.contains(&"read".to_owned()));
    }
    s.ok("POST", &muted_user(OTHELLO_ID), HAMLET, &[]).await;
    // Othello's unread messages are read now (one flags event), cordelia's are not.
    let ev = events_of(&s, HAMLET, &q, "update_message_flags").await;
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["flag"], "read");
    assert_eq!(ev[0]["op"], "add");
    let mut ids: Vec<i64> = ev[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![old_channel, old_dm]);
    assert!(flags_of(&s, HAMLET, old_dm)
        .await
        .contains(&"read".to_owned()));
    assert!(!flags_of(&s, HAMLET, other)
        .await
        .contains(&"read".to_owned()));
    // The muted_users event follows the flags.
    let all = s.events(HAMLET, &q).await;
    let kinds: Vec<&str> = all.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let at = |k: &str| kinds.iter().rposition(|x| *x == k).unwrap();
    assert!(at("update_message_flags") < at("muted_users"), "{kinds:?}");

    // New messages from him arrive read, to hamlet only; the sender's own flags and
    // other recipients' are untouched.
    let new_channel = send_to(&s, OTHELLO, "Verona", "t", "four").await;
    let new_dm = dm(&s, OTHELLO, HAMLET_ID, "five").await;
    assert_eq!(
        delivered_flags(&s, HAMLET, &q, new_channel).await,
        vec!["read"]
    );
    assert_eq!(delivered_flags(&s, HAMLET, &q, new_dm).await, vec!["read"]);
    assert!(!flags_of(&s, CORDELIA, new_channel)
        .await
        .contains(&"read".to_owned()));
    let st = state(&s, HAMLET, r#"["message", "update_message_flags"]"#).await;
    assert_eq!(st["unread_msgs"]["count"], 1, "{st}");

    // After a restart (the WAL replayed), the same; unmuting leaves read messages read
    // and new ones arrive unread again.
    s.restart().await;
    assert!(flags_of(&s, HAMLET, new_dm)
        .await
        .contains(&"read".to_owned()));
    s.ok("DELETE", &muted_user(OTHELLO_ID), HAMLET, &[]).await;
    assert!(flags_of(&s, HAMLET, new_dm)
        .await
        .contains(&"read".to_owned()));
    let later = dm(&s, OTHELLO, HAMLET_ID, "six").await;
    assert!(!flags_of(&s, HAMLET, later)
        .await
        .contains(&"read".to_owned()));
}

// ---------------------------------------------------------------- alert words

#[actix_web::test]
async fn alert_word_rules() {
    let s = start().await;
    let q = s.register(HAMLET, &[]).await;
    let body = s.ok("GET", ALERT_WORDS, HAMLET, &[]).await;
    assert_eq!(
        body,
        json!({"result": "success", "msg": "", "alert_words": []})
    );
    s.err(
        "POST",
        ALERT_WORDS,
        HAMLET,
        &[],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'alert_words' argument",
    )
    .await;
    s.bad(
        "POST",
        ALERT_WORDS,
        HAMLET,
        &[("alert_words", "foo")],
        "alert_words is not valid JSON",
    )
    .await;
    s.bad(
        "POST",
        ALERT_WORDS,
        HAMLET,
        &[("alert_words", "\"foo\"")],
        "alert_words is not a list",
    )
    .await;
    s.bad(
        "POST",
        ALERT_WORDS,
        HAMLET,
        &[("alert_words", "[\"a\", 1]")],
        "alert_words[1] is not a string",
    )
    .await;
    let long = json!(["ok", "y".repeat(101)]).to_string();
    s.bad(
        "POST",
        ALERT_WORDS,
        HAMLET,
        &[("alert_words", &long)],
        "alert_words[1] is too long (limit: 100 characters)",
    )
    .await;
    // The limit is on the word as sent, before it is stripped.
    let padded = json!([format!(" {} ", "y".repeat(99))]).to_string();
    s.bad(
        "POST",
        ALERT_WORDS,
        HAMLET,
        &[("alert_words", &padded)],
        "alert_words[0] is too long (limit: 100 characters)",
    )
    .await;
    assert!(events_of(&s, HAMLET, &q, "alert_words").await.is_empty());

    // Stripped, blanks dropped, unique case-insensitively (the request's last
    // spelling of a new word wins; an existing word keeps its own).
    let body = s
        .ok(
            "POST",
            ALERT_WORDS,
            HAMLET,
            &[("alert_words", r#"[" Foo ", "", "  ", "foo", "BAR"]"#)],
        )
        .await;
    assert_eq!(body["alert_words"], json!(["foo", "BAR"]));
    let body = s
        .ok(
            "POST",
            ALERT_WORDS,
            HAMLET,
            &[("alert_words", r#"["FOO", "baz qux"]"#)],
        )
        .await;
    assert_eq!(body["alert_words"], json!(["foo", "BAR", "baz qux"]));
    // Removal matches case-insensitively, words as sent (not stripped); unknown words
    // are ignored.
    let body = s
        .ok(
            "DELETE",
            ALERT_WORDS,
            HAMLET,
            &[("alert_words", r#"["bar", " baz qux", "nope"]"#)],
        )
        .await;
    assert_eq!(body["alert_words"], json!(["foo", "baz qux"]));
    s.err(
        "DELETE",
        ALERT_WORDS,
        HAMLET,
        &[],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'alert_words' argument",
    )
    .await;
    // A change that changes nothing still sends the list (`notify_alert_words`).
    s.ok("DELETE", ALERT_WORDS, HAMLET, &[("alert_words", "[]")])
        .await;
    let ev = events_of(&s, HAMLET, &q, "alert_words").await;
    let lists: Vec<Value> = ev.iter().map(|e| e["alert_words"].clone()).collect();
    assert_eq!(
        lists,
        vec![
            json!(["foo", "BAR"]),
            json!(["foo", "BAR", "baz qux"]),
            json!(["foo", "baz qux"]),
            json!(["foo", "baz qux"]),
        ]
    );
    assert_eq!(
        s.ok("GET", ALERT_WORDS, HAMLET, &[]).await["alert_words"],
        json!(["foo", "baz qux"])
    );
    assert_eq!(
        state(&s, HAMLET, r#"["alert_words"]"#).await["alert_words"],
        json!(["foo", "baz qux"])
    );
    assert_eq!(
        s.ok("GET", ALERT_WORDS, OTHELLO, &[]).await["alert_words"],
        json!([])
    );
}

#[actix_web::test]
async fn alert_words_flag_delivered_messages() {
    let s = start().await;
    s.ok(
        "POST",
        ALERT_WORDS,
        HAMLET,
        &[("alert_words", r#"["Pizza", "ice cream"]"#)],
    )
    .await;
    s.ok(
        "POST",
        ALERT_WORDS,
        OTHELLO,
        &[("alert_words", r#"["pizza"]"#)],
    )
    .await;
    let hamlet = s.register(HAMLET, &[]).await;
    let cordelia = s.register(CORDELIA, &[]).await;
    let othello = s.register(OTHELLO, &[]).await;
    let cases = [
        ("I like PIZZA!", true),
        ("(pizza)", true),
        ("some ice cream, please", true),
        ("pizzas", false),
        ("pepperoni pizza\"", false),
        ("icecream", false),
    ];
    for (content, alerted) in cases {
        let id = send_to(&s, IAGO, "Verona", "food", content).await;
        let flags = delivered_flags(&s, HAMLET, &hamlet, id).await;
        assert_eq!(
            flags.contains(&"has_alert_word".to_owned()),
            alerted,
            "{content}: {flags:?}"
        );
        assert_eq!(
            flags_of(&s, HAMLET, id)
                .await
                .contains(&"has_alert_word".to_owned()),
            alerted,
            "{content}"
        );
        assert!(delivered_flags(&s, CORDELIA, &cordelia, id)
            .await
            .is_empty());
    }
    // The sender's own alert words count too, as in Zulip's renderer.
    let id = send_to(&s, OTHELLO, "Verona", "food", "pizza time").await;
    assert!(flags_of(&s, OTHELLO, id)
        .await
        .contains(&"has_alert_word".to_owned()));
    assert!(delivered_flags(&s, OTHELLO, &othello, id)
        .await
        .contains(&"has_alert_word".to_owned()));
    // Direct messages too; a removed word no longer alerts.
    let id = dm(&s, IAGO, HAMLET_ID, "ice cream?").await;
    assert!(flags_of(&s, HAMLET, id)
        .await
        .contains(&"has_alert_word".to_owned()));
    s.ok(
        "DELETE",
        ALERT_WORDS,
        HAMLET,
        &[("alert_words", r#"["ICE CREAM"]"#)],
    )
    .await;
    let id = dm(&s, IAGO, HAMLET_ID, "ice cream?").await;
    assert!(!flags_of(&s, HAMLET, id)
        .await
        .contains(&"has_alert_word".to_owned()));
}

/// An edit recomputes `has_alert_word` for the new content (Zulip's
/// `update_user_message_flags`): set when a word comes, cleared when it goes, others'
/// flags untouched; it lasts across a restart.
#[actix_web::test]
async fn an_edit_recomputes_alert_word_flags() {
    let mut s = start().await;
    s.ok(
        "POST",
        ALERT_WORDS,
        HAMLET,
        &[("alert_words", r#"["pizza"]"#)],
    )
    .await;
    s.ok(
        "POST",
        ALERT_WORDS,
        OTHELLO,
        &[("alert_words", r#"["pasta"]"#)],
    )
    .await;
    let id = send_to(&s, IAGO, "Verona", "food", "pasta tonight").await;
    let alerted = |flags: Vec<String>| flags.contains(&"has_alert_word".to_owned());
    assert!(!alerted(flags_of(&s, HAMLET, id).await));
    assert!(alerted(flags_of(&s, OTHELLO, id).await));
    let path = format!("/api/v1/messages/{id}");
    s.ok("PATCH", &path, IAGO, &[("content", "pizza tonight")])
        .await;
    assert!(alerted(flags_of(&s, HAMLET, id).await));
    assert!(!alerted(flags_of(&s, OTHELLO, id).await));
    s.ok(
        "PATCH",
        &path,
        IAGO,
        &[("content", "pizza or pasta tonight")],
    )
    .await;
    assert!(alerted(flags_of(&s, HAMLET, id).await));
    assert!(alerted(flags_of(&s, OTHELLO, id).await));
    s.restart().await;
    assert!(alerted(flags_of(&s, HAMLET, id).await));
    s.ok("PATCH", &path, IAGO, &[("content", "soup tonight")])
        .await;
    assert!(!alerted(flags_of(&s, HAMLET, id).await));
    assert!(!alerted(flags_of(&s, OTHELLO, id).await));
}

/// A user's policies for the topics, as `(channel, topic, policy)`, sorted.
async fn policies(s: &TestApp, who: &str) -> Vec<(i64, String, i64)> {
    let mut out: Vec<(i64, String, i64)> = state(s, who, r#"["user_topic"]"#).await["user_topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["stream_id"].as_i64().unwrap(),
                t["topic_name"].as_str().unwrap().to_owned(),
                t["visibility_policy"].as_i64().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Moving a whole topic moves its visibility policies (Zulip's `do_update_message`
/// with `moved_all_visible_messages`): to a topic without messages the old policy goes
/// as it was; into a topic with messages the more visible of the two stays; a user who
/// cannot read the new channel just loses the old row; a partial move moves none.
#[actix_web::test]
async fn topic_moves_carry_visibility_policies() {
    let mut s = start().await;
    let verona = s.stream_id("Verona").await;
    let (muted, unmuted, followed) = (1, 2, 3);
    let first = send_to(&s, IAGO, "Verona", "old", "one").await;
    send_to(&s, IAGO, "Verona", "old", "two").await;
    set_topic(&s, HAMLET, verona, "old", muted).await;
    set_topic(&s, OTHELLO, verona, "old", followed).await;
    set_topic(&s, CORDELIA, verona, "new", unmuted).await;
    let path = format!("/api/v1/messages/{first}");
    // A partial move (one message of two) moves no policy.
    s.ok(
        "PATCH",
        &path,
        IAGO,
        &[("topic", "elsewhere"), ("propagate_mode", "change_one")],
    )
    .await;
    assert_eq!(policies(&s, HAMLET).await, [(verona, "old".into(), muted)]);
    // The whole topic (its remaining message) to a topic without messages.
    let second = send_to(&s, IAGO, "Verona", "old", "three").await;
    s.ok(
        "PATCH",
        &format!("/api/v1/messages/{second}"),
        IAGO,
        &[("topic", "new"), ("propagate_mode", "change_all")],
    )
    .await;
    assert_eq!(policies(&s, HAMLET).await, [(verona, "new".into(), muted)]);
    assert_eq!(
        policies(&s, OTHELLO).await,
        [(verona, "new".into(), followed)]
    );
    // Cordelia's row on the empty target takes the old topic's policy: none.
    assert_eq!(policies(&s, CORDELIA).await, []);
    // Into a topic with messages: the more visible policy stays.
    send_to(&s, IAGO, "Verona", "busy", "already here").await;
    set_topic(&s, HAMLET, verona, "busy", unmuted).await;
    set_topic(&s, OTHELLO, verona, "busy", muted).await;
    s.ok(
        "PATCH",
        &format!("/api/v1/messages/{second}"),
        IAGO,
        &[("topic", "busy"), ("propagate_mode", "change_all")],
    )
    .await;
    assert_eq!(
        policies(&s, HAMLET).await,
        [(verona, "busy".into(), unmuted)]
    );
    assert_eq!(
        policies(&s, OTHELLO).await,
        [(verona, "busy".into(), followed)]
    );
    // To a private channel Hamlet is not in: his row goes, Othello's moves.
    let private = create_channel(&s, "policy room", true, &[OTHELLO_ID, IAGO_ID]).await;
    s.ok(
        "PATCH",
        &format!("/api/v1/messages/{second}"),
        IAGO,
        &[
            ("stream_id", &private.to_string()),
            ("propagate_mode", "change_all"),
        ],
    )
    .await;
    assert_eq!(policies(&s, HAMLET).await, []);
    assert_eq!(
        policies(&s, OTHELLO).await,
        [(private, "busy".into(), followed)]
    );
    s.restart().await;
    assert_eq!(
        policies(&s, OTHELLO).await,
        [(private, "busy".into(), followed)]
    );
    assert_eq!(policies(&s, HAMLET).await, []);
}

// ---------------------------------------------------------------- kill -9

async fn call(
    url: &str,
    method: reqwest::Method,
    path: &str,
    key: &str,
    form: &[(&str, &str)],
) -> Value {
    let (status, _, body) = send(
        client()
            .request(method, format!("{url}{path}"))
            .basic_auth(HAMLET, Some(key))
            .form(form),
    )
    .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{path}: {body}");
    body
}

#[actix_web::test]
async fn topics_mutes_and_alert_words_survive_kill_9() {
    use reqwest::Method;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let args = [
        "--dev",
        "--durability",
        "always",
        "--data",
        data.to_str().unwrap(),
    ];
    let envs = [("HEARTH_METRICS_BIND", "off")];
    let server = ChildServer::up(&args, &envs);
    let url = server.url.clone();
    let key = dev_key_at(&url, HAMLET).await;
    let fetch = r#"["user_topic", "muted_users", "alert_words"]"#;
    let (_, _, verona) = send(
        client()
            .get(format!("{url}/api/v1/get_stream_id"))
            .basic_auth(HAMLET, Some(&key))
            .query(&[("stream", "Verona")]),
    )
    .await;
    let verona = verona["stream_id"].to_string();
    call(
        &url,
        Method::POST,
        USER_TOPICS,
        &key,
        &[
            ("stream_id", &verona),
            ("topic", "crash"),
            ("visibility_policy", "3"),
        ],
    )
    .await;
    call(
        &url,
        Method::PATCH,
        MUTED_TOPICS,
        &key,
        &[("stream", "Verona"), ("topic", "quiet"), ("op", "add")],
    )
    .await;
    call(&url, Method::POST, &muted_user(OTHELLO_ID), &key, &[]).await;
    call(
        &url,
        Method::POST,
        ALERT_WORDS,
        &key,
        &[("alert_words", r#"["durable"]"#)],
    )
    .await;
    let before = call(
        &url,
        Method::POST,
        "/api/v1/register",
        &key,
        &[("fetch_event_types", fetch)],
    )
    .await;
    assert_eq!(
        before["user_topics"].as_array().unwrap().len(),
        2,
        "{before}"
    );
    server.kill_9();

    let server = ChildServer::up(&args, &envs);
    let url = server.url.clone();
    let after = call(
        &url,
        Method::POST,
        "/api/v1/register",
        &key,
        &[("fetch_event_types", fetch)],
    )
    .await;
    for k in ["user_topics", "muted_users", "alert_words"] {
        assert_eq!(after[k], before[k], "{k}");
    }
    assert_eq!(after["muted_users"][0]["id"], OTHELLO_ID);
    assert_eq!(after["alert_words"], json!(["durable"]));
    server.kill_9();
}
