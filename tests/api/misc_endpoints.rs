//! Smaller endpoints: typing while editing a message (`POST /messages/{id}/typing`),
//! deleting a topic (`POST /streams/{id}/delete_topic`), with their rules, error texts,
//! events, `/register` state and, for writes, the state after a kill -9 of the real
//! binary (`Crashable`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Mutex;

use crate::common::child::ChildServer;
use crate::common::*;
use hearth::realm::ManualClock;
use reqwest::Method;
use serde_json::{json, Value};

/// The real `hearth serve --dev --durability always` on a data folder, to be killed
/// with SIGKILL and started again on the same folder.
struct Crashable {
    dir: tempfile::TempDir,
    server: Option<ChildServer>,
    keys: Mutex<HashMap<String, String>>,
}

impl Crashable {
    fn start() -> Crashable {
        let mut me = Crashable {
            dir: tempfile::tempdir().unwrap(),
            server: None,
            keys: Mutex::new(HashMap::new()),
        };
        me.up();
        me
    }

    fn up(&mut self) {
        let data = self.dir.path().join("data");
        self.server = Some(ChildServer::up(
            &[
                "--dev",
                "--durability",
                "always",
                "--data",
                data.to_str().unwrap(),
            ],
            &[("HEARTH_METRICS_BIND", "off")],
        ));
    }

    /// SIGKILL, then a new start on the same folder.
    fn kill_9_and_restart(&mut self) {
        self.server.take().unwrap().kill_9();
        self.up();
    }

    fn url(&self) -> String {
        self.server.as_ref().unwrap().url.clone()
    }

    async fn key(&self, email: &str) -> String {
        if let Some(k) = self.keys.lock().unwrap().get(email) {
            return k.clone();
        }
        let (_, _, body) = send(
            client()
                .post(format!("{}/api/v1/dev_fetch_api_key", self.url()))
                .form(&[("username", email)]),
        )
        .await;
        let key = body["api_key"].as_str().expect("a key").to_owned();
        self.keys
            .lock()
            .unwrap()
            .insert(email.to_owned(), key.clone());
        key
    }

    /// A request that must succeed; its body.
    async fn ok(&self, method: &str, path: &str, email: &str, params: &[(&str, &str)]) -> Value {
        let key = self.key(email).await;
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let rb = client()
            .request(method.clone(), format!("{}{path}", self.url()))
            .basic_auth(email, Some(key));
        let rb = if method == Method::GET {
            rb.query(params)
        } else {
            rb.form(params)
        };
        let (status, _, body) = send(rb).await;
        assert_eq!(status.as_u16(), 200, "{path}: {body}");
        body
    }
}

/// The ids of a topic's messages, as `who` reads them.
async fn topic_ids(app: &TestApp, who: &str, channel: &str, topic: &str) -> Vec<i64> {
    let narrow = json!([{"operator": "channel", "operand": channel},
                        {"operator": "topic", "operand": topic}])
    .to_string();
    let body = app
        .ok(
            "GET",
            "/api/v1/messages",
            who,
            &[
                ("narrow", &narrow),
                ("anchor", "newest"),
                ("num_before", "100"),
                ("num_after", "0"),
            ],
        )
        .await;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect()
}

/// Events without their ids.
fn without_ids(events: Vec<Value>) -> Vec<Value> {
    events
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect()
}

/// The subscribers of a channel.
async fn members(app: &TestApp, channel: i64) -> Vec<i64> {
    let body = app
        .ok(
            "GET",
            &format!("/api/v1/streams/{channel}/members"),
            IAGO,
            &[],
        )
        .await;
    body["subscribers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect()
}

async fn send_direct(app: &TestApp, who: &str, to: &[i64], content: &str) -> u64 {
    let to = json!(to).to_string();
    let body = app
        .ok(
            "POST",
            "/api/v1/messages",
            who,
            &[("type", "direct"), ("to", &to), ("content", content)],
        )
        .await;
    body["id"].as_u64().unwrap()
}

// ---- POST /messages/{message_id}/typing ------------------------------------------------

const EDIT_TYPING: &[(&str, &str)] = &[("event_types", r#"["typing_edit_message"]"#)];

#[actix_web::test]
async fn edit_typing_in_a_channel_reaches_its_subscribers() {
    let app = TestApp::spawn().await;
    let verona = app.stream_id("Verona").await;
    app.ok(
        "DELETE",
        "/api/v1/users/me/subscriptions",
        POLONIUS,
        &[("subscriptions", r#"["Verona"]"#)],
    )
    .await;
    let subscribers = members(&app, verona).await;
    assert!(subscribers.contains(&HAMLET_ID) && subscribers.contains(&OTHELLO_ID));
    assert!(!subscribers.contains(&POLONIUS_ID));
    let id = send_stream(&app, HAMLET, "Verona", "edits", "first draft").await;
    let othello = app.register(OTHELLO, EDIT_TYPING).await;
    let hamlet = app.register(HAMLET, EDIT_TYPING).await;
    let polonius = app.register(POLONIUS, EDIT_TYPING).await;
    // Plain typing queues do not get these events.
    let plain = app
        .register(OTHELLO, &[("event_types", r#"["typing"]"#)])
        .await;

    let path = format!("/api/v1/messages/{id}/typing");
    let body = app.ok("POST", &path, HAMLET, &[("op", "start")]).await;
    assert_eq!(body, json!({"result": "success", "msg": ""}));
    app.ok("POST", &path, HAMLET, &[("op", "stop")]).await;

    let event = |op: &str| {
        json!({"type": "typing_edit_message", "op": op, "sender_id": HAMLET_ID,
               "message_id": id,
               "recipient": {"type": "channel", "channel_id": verona, "topic": "edits"}})
    };
    let want = vec![event("start"), event("stop")];
    assert_eq!(without_ids(app.events(OTHELLO, &othello).await), want);
    assert_eq!(without_ids(app.events(HAMLET, &hamlet).await), want);
    assert!(app.events(POLONIUS, &polonius).await.is_empty());
    assert!(app.events(OTHELLO, &plain).await.is_empty());
}

#[actix_web::test]
async fn edit_typing_in_direct_messages_names_the_participants() {
    let app = TestApp::spawn().await;
    let one = send_direct(&app, HAMLET, &[OTHELLO_ID], "to othello").await;
    let group = send_direct(&app, HAMLET, &[OTHELLO_ID, CORDELIA_ID], "to two").await;
    let own = send_direct(&app, HAMLET, &[HAMLET_ID], "a note").await;
    let othello = app.register(OTHELLO, EDIT_TYPING).await;
    let cordelia = app.register(CORDELIA, EDIT_TYPING).await;
    let hamlet = app.register(HAMLET, EDIT_TYPING).await;

    for id in [one, group, own] {
        app.ok(
            "POST",
            &format!("/api/v1/messages/{id}/typing"),
            HAMLET,
            &[("op", "start")],
        )
        .await;
    }
    let event = |id: u64, users: Value| {
        json!({"type": "typing_edit_message", "op": "start", "sender_id": HAMLET_ID,
               "message_id": id, "recipient": {"type": "direct", "user_ids": users}})
    };
    // A conversation of two lists the sender then the other; oneself twice (Zulip's
    // personal recipient); a group its members.
    let to_one = event(one, json!([HAMLET_ID, OTHELLO_ID]));
    let to_group = event(group, json!([CORDELIA_ID, HAMLET_ID, OTHELLO_ID]));
    let to_self = event(own, json!([HAMLET_ID, HAMLET_ID]));
    assert_eq!(
        without_ids(app.events(OTHELLO, &othello).await),
        vec![to_one.clone(), to_group.clone()]
    );
    assert_eq!(
        without_ids(app.events(CORDELIA, &cordelia).await),
        vec![to_group.clone()]
    );
    assert_eq!(
        without_ids(app.events(HAMLET, &hamlet).await),
        vec![to_one, to_group, to_self]
    );
}

#[actix_web::test]
async fn edit_typing_follows_the_edit_rules() {
    let clock = ManualClock::new(START_MS);
    let app = TestApp::spawn_with_clock(clock).await;
    let id = send_stream(&app, HAMLET, "Verona", "edits", "mine").await;
    let path = format!("/api/v1/messages/{id}/typing");
    let queue = app.register(OTHELLO, EDIT_TYPING).await;

    let missing_op = app
        .err(
            "POST",
            &path,
            HAMLET,
            &[],
            400,
            "REQUEST_VARIABLE_MISSING",
            "Missing 'op' argument",
        )
        .await;
    assert_eq!(missing_op["var_name"], "op");
    app.bad("POST", &path, HAMLET, &[("op", "begin")], "Invalid op")
        .await;
    // Someone else's message, a message one cannot read, one that does not exist.
    app.bad(
        "POST",
        &path,
        OTHELLO,
        &[("op", "start")],
        "You don't have permission to edit this message",
    )
    .await;
    let secret = app
        .ok(
            "POST",
            "/api/v1/channels/create",
            CORDELIA,
            &[
                ("name", "secret edits"),
                ("subscribers", &json!([CORDELIA_ID]).to_string()),
                ("invite_only", "true"),
            ],
        )
        .await;
    assert!(secret["id"].is_i64());
    let hidden = send_stream(&app, CORDELIA, "secret edits", "t", "hidden").await;
    for bad in [hidden, 999_999] {
        app.bad(
            "POST",
            &format!("/api/v1/messages/{bad}/typing"),
            HAMLET,
            &[("op", "start")],
            "Invalid message(s)",
        )
        .await;
    }
    app.bad(
        "POST",
        "/api/v1/messages/abc/typing",
        HAMLET,
        &[("op", "start")],
        "message_id is not an integer",
    )
    .await;

    // Zulip's limit, without the grace period an edit has.
    app.ok(
        "PATCH",
        "/api/v1/realm",
        DESDEMONA,
        &[("message_content_edit_limit_seconds", "600")],
    )
    .await;
    app.clock().advance_ms(600_000);
    app.ok("POST", &path, HAMLET, &[("op", "start")]).await;
    app.clock().advance_ms(1_000);
    app.bad(
        "POST",
        &path,
        HAMLET,
        &[("op", "start")],
        "The time limit for editing this message has passed",
    )
    .await;

    app.ok(
        "PATCH",
        "/api/v1/realm",
        DESDEMONA,
        &[("allow_message_editing", "false")],
    )
    .await;
    app.bad(
        "POST",
        &path,
        HAMLET,
        &[("op", "start")],
        "Your organization has turned off message editing",
    )
    .await;
    // Only the one accepted notification was sent.
    assert_eq!(app.events(OTHELLO, &queue).await.len(), 1);
}

// ---- POST /streams/{stream_id}/delete_topic ------------------------------------------

#[actix_web::test]
async fn delete_topic_refusals() {
    let app = TestApp::spawn().await;
    let verona = app.stream_id("Verona").await;
    let id = send_stream(&app, HAMLET, "Verona", "doomed", "one").await;
    let path = format!("/api/v1/streams/{verona}/delete_topic");
    let topic = p(&[("topic_name", "doomed")]);
    // Administrators only (`require_realm_admin`), before any parameter.
    for who in [HAMLET, POLONIUS, SHIVA, DEFAULT_BOT] {
        run_cases(&app, "POST", &path, &[not_admin(who, topic.clone())]).await;
    }
    run_cases(
        &app,
        "POST",
        "/api/v1/streams/abc/delete_topic",
        &[
            not_admin(HAMLET, topic.clone()),
            bad(IAGO, topic.clone(), "stream_id is not an integer"),
        ],
    )
    .await;
    run_cases(&app, "POST", &path, &[missing(IAGO, p(&[]), "topic_name")]).await;
    // A private channel the administrator is not in, one that does not exist, an
    // archived one.
    let secret = app
        .ok(
            "POST",
            "/api/v1/channels/create",
            CORDELIA,
            &[
                ("name", "secret topics"),
                ("subscribers", &json!([CORDELIA_ID]).to_string()),
                ("invite_only", "true"),
            ],
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let archived = app
        .ok(
            "POST",
            "/api/v1/channels/create",
            IAGO,
            &[
                ("name", "old topics"),
                ("subscribers", &json!([IAGO_ID]).to_string()),
            ],
        )
        .await["id"]
        .as_i64()
        .unwrap();
    app.ok("DELETE", &format!("/api/v1/streams/{archived}"), IAGO, &[])
        .await;
    for channel in [secret, archived, 99_999] {
        run_cases(
            &app,
            "POST",
            &format!("/api/v1/streams/{channel}/delete_topic"),
            &[bad(IAGO, topic.clone(), "Invalid channel ID")],
        )
        .await;
    }
    // Nothing was deleted.
    assert_eq!(
        topic_ids(&app, HAMLET, "Verona", "doomed").await,
        vec![id as i64]
    );
}

#[actix_web::test]
async fn delete_topic_deletes_what_the_administrator_may_read() {
    let app = TestApp::spawn().await;
    let verona = app.stream_id("Verona").await;
    let mut doomed = Vec::new();
    for (who, topic) in [(HAMLET, "doomed"), (OTHELLO, "DOOMED"), (HAMLET, "doomed")] {
        doomed.push(send_stream(&app, who, "Verona", topic, "bye").await as i64);
    }
    let kept = send_stream(&app, HAMLET, "Verona", "kept", "stays").await as i64;
    let bulk = app
        .register(
            OTHELLO,
            &[
                ("event_types", r#"["delete_message"]"#),
                ("client_capabilities", r#"{"bulk_message_deletion": true}"#),
            ],
        )
        .await;
    let one_by_one = app
        .register(CORDELIA, &[("event_types", r#"["delete_message"]"#)])
        .await;

    let path = format!("/api/v1/streams/{verona}/delete_topic");
    run_cases(
        &app,
        "POST",
        &path,
        &[ok(
            IAGO,
            p(&[("topic_name", "Doomed")]),
            json!({"complete": true}),
        )],
    )
    .await;
    assert!(topic_ids(&app, HAMLET, "Verona", "doomed").await.is_empty());
    assert_eq!(topic_ids(&app, HAMLET, "Verona", "kept").await, vec![kept]);
    // The topic's name as its messages had it (the first one's).
    let base = json!({"type": "delete_message", "message_type": "stream",
                      "stream_id": verona, "topic": "doomed"});
    let mut all = base.clone();
    all["message_ids"] = json!(doomed);
    assert_eq!(without_ids(app.events(OTHELLO, &bulk).await), vec![all]);
    let each: Vec<Value> = doomed
        .iter()
        .map(|id| {
            let mut e = base.clone();
            e["message_id"] = json!(id);
            e
        })
        .collect();
    assert_eq!(without_ids(app.events(CORDELIA, &one_by_one).await), each);
    // The topic is gone from the channel's topics.
    let topics = app
        .ok(
            "GET",
            &format!("/api/v1/users/me/{verona}/topics"),
            HAMLET,
            &[],
        )
        .await;
    assert!(!topics["topics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"].as_str().unwrap().eq_ignore_ascii_case("doomed")));
    // Again: nothing left, complete.
    run_cases(
        &app,
        "POST",
        &path,
        &[ok(
            IAGO,
            p(&[("topic_name", "doomed")]),
            json!({"complete": true}),
        )],
    )
    .await;

    // Protected history: an administrator who joined later deletes only what they
    // received; the rest stays.
    let private = app
        .ok(
            "POST",
            "/api/v1/channels/create",
            OTHELLO,
            &[
                ("name", "protected"),
                ("subscribers", &json!([OTHELLO_ID]).to_string()),
                ("invite_only", "true"),
                ("history_public_to_subscribers", "false"),
            ],
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let before = send_stream(&app, OTHELLO, "protected", "t", "before iago").await as i64;
    app.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        OTHELLO,
        &[
            ("subscriptions", r#"[{"name": "protected"}]"#),
            ("principals", &json!([IAGO_ID]).to_string()),
        ],
    )
    .await;
    send_stream(&app, OTHELLO, "protected", "t", "after iago").await;
    app.ok(
        "POST",
        &format!("/api/v1/streams/{private}/delete_topic"),
        IAGO,
        &[("topic_name", "t")],
    )
    .await;
    assert_eq!(
        topic_ids(&app, OTHELLO, "protected", "t").await,
        vec![before]
    );
}

#[actix_web::test]
async fn a_deleted_topic_stays_deleted_after_kill_9() {
    let mut server = Crashable::start();
    let verona = server
        .ok(
            "GET",
            "/api/v1/get_stream_id",
            HAMLET,
            &[("stream", "Verona")],
        )
        .await["stream_id"]
        .as_i64()
        .unwrap();
    for i in 0..3 {
        server
            .ok(
                "POST",
                "/api/v1/messages",
                HAMLET,
                &[
                    ("type", "stream"),
                    ("to", "Verona"),
                    ("topic", "doomed"),
                    ("content", &format!("m{i}")),
                ],
            )
            .await;
    }
    let body = server
        .ok(
            "POST",
            &format!("/api/v1/streams/{verona}/delete_topic"),
            IAGO,
            &[("topic_name", "doomed")],
        )
        .await;
    assert_eq!(body["complete"], true);
    server.kill_9_and_restart();
    let topics = server
        .ok(
            "GET",
            &format!("/api/v1/users/me/{verona}/topics"),
            HAMLET,
            &[],
        )
        .await;
    assert!(
        !topics["topics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "doomed"),
        "{topics}"
    );
    let narrow = json!([{"operator": "channel", "operand": "Verona"},
                        {"operator": "topic", "operand": "doomed"}])
    .to_string();
    let found = server
        .ok(
            "GET",
            "/api/v1/messages",
            HAMLET,
            &[
                ("narrow", &narrow),
                ("anchor", "newest"),
                ("num_before", "10"),
                ("num_after", "0"),
            ],
        )
        .await;
    assert_eq!(found["messages"], json!([]));
}
