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

// ---- PATCH /users/me/subscriptions -----------------------------------------------------

/// The names of `who`'s subscriptions.
async fn subscribed_names(app: &TestApp, who: &str) -> Vec<String> {
    let body = app
        .ok("GET", "/api/v1/users/me/subscriptions", who, &[])
        .await;
    let mut out = names(&body["subscriptions"]);
    out.sort();
    out
}

#[actix_web::test]
async fn bulk_subscription_update_refusals() {
    let app = TestApp::spawn().await;
    let before = subscribed_names(&app, HAMLET).await;
    let path = "/api/v1/users/me/subscriptions";
    let nothing = "Nothing to do. Specify at least one of \"add\" or \"delete\".";
    run_cases(
        &app,
        "PATCH",
        path,
        &[
            bad(HAMLET, p(&[]), nothing),
            bad(HAMLET, p(&[("add", "[]"), ("delete", "[]")]), nothing),
            bad(HAMLET, p(&[("add", "{}")]), "add is not a list"),
            bad(HAMLET, p(&[("add", "[1]")]), "add[0] is not a dict"),
            bad(
                HAMLET,
                p(&[("add", r##"[{"color": "#ffffff"}]"##)]),
                "add[0][\"name\"] field is missing: Field required",
            ),
            bad(
                HAMLET,
                p(&[("add", r#"[{"name": "Verona", "color": "blue"}]"#)]),
                "add.color is not a valid hex color code",
            ),
            bad(
                HAMLET,
                p(&[("delete", "\"Verona\"")]),
                "delete is not a list",
            ),
            bad(HAMLET, p(&[("delete", "[1]")]), "delete[0] is not a string"),
            // Guests: refused by the addition, even with nothing to add.
            bad(
                POLONIUS,
                p(&[("delete", r#"["Verona"]"#)]),
                "Not allowed for guest users",
            ),
            // One transaction: a bad removal undoes the addition.
            coded(
                HAMLET,
                p(&[
                    ("add", r#"[{"name": "bulk fresh"}]"#),
                    ("delete", r#"["no such channel"]"#),
                ]),
                "STREAM_DOES_NOT_EXIST",
                "Channel 'no such channel' does not exist",
            )
            .with_fields(json!({"stream": "no such channel"})),
            bad(
                HAMLET,
                p(&[("add", r#"[{"name": "Verona"}]"#), ("delete", r#"[""]"#)]),
                "Channel name can't be empty.",
            ),
        ],
    )
    .await;
    assert_eq!(subscribed_names(&app, HAMLET).await, before);
    let all = app
        .ok("GET", "/api/v1/streams", IAGO, &[("include_all", "true")])
        .await;
    assert!(!names(&all["streams"]).contains(&"bulk fresh".to_owned()));
}

#[actix_web::test]
async fn bulk_subscription_update_adds_then_removes() {
    let mut app = TestApp::spawn().await;
    let before = subscribed_names(&app, HAMLET).await;
    assert!(before.contains(&"Verona".to_owned()) && before.contains(&"design".to_owned()));
    assert!(!before.contains(&"Rome".to_owned()));
    let queue = app
        .register(HAMLET, &[("event_types", r#"["subscription"]"#)])
        .await;
    let path = "/api/v1/users/me/subscriptions";
    let hamlet = HAMLET_ID.to_string();
    // Joins a new channel and Verona (already), leaves design, a channel it has just
    // created (joined, then left), and one it is not in.
    let leave_unjoined = "Rome";
    let body = app
        .ok(
            "PATCH",
            path,
            HAMLET,
            &[
                (
                    "add",
                    r##"[{"name": "bulk new", "color": "#abcdef"}, {"name": "Verona"},
                         {"name": "bulk brief", "description": "here and gone"}]"##,
                ),
                (
                    "delete",
                    &json!(["design", "bulk brief", leave_unjoined]).to_string(),
                ),
            ],
        )
        .await;
    assert_eq!(
        body,
        json!({"result": "success", "msg": "",
               "subscribed": {hamlet.clone(): ["bulk new", "bulk brief"]},
               "already_subscribed": {hamlet: ["Verona"]},
               "removed": ["design", "bulk brief"],
               "not_removed": [leave_unjoined]})
    );
    let mut want: Vec<String> = before
        .iter()
        .filter(|n| *n != "design")
        .cloned()
        .chain(["bulk new".to_owned()])
        .collect();
    want.sort();
    assert_eq!(subscribed_names(&app, HAMLET).await, want);
    // The channel created and left still exists.
    let all = app
        .ok("GET", "/api/v1/streams", IAGO, &[("include_all", "true")])
        .await;
    assert!(names(&all["streams"]).contains(&"bulk brief".to_owned()));
    let events = app.events(HAMLET, &queue).await;
    let ops: Vec<(String, Vec<String>)> = events
        .iter()
        .map(|e| {
            let subs = e["subscriptions"].as_array().unwrap();
            let names = subs
                .iter()
                .map(|s| {
                    s.get("name")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or_else(|| s["stream_id"].to_string())
                })
                .collect();
            (e["op"].as_str().unwrap().to_owned(), names)
        })
        .collect();
    assert_eq!(ops[0].0, "add");
    assert_eq!(ops[0].1, vec!["bulk new", "bulk brief"]);
    assert_eq!(ops[1].0, "remove");
    assert_eq!(ops[1].1.len(), 2);
    // The color asked for.
    let subs = app
        .ok("GET", "/api/v1/users/me/subscriptions", HAMLET, &[])
        .await;
    let new = subs["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "bulk new")
        .unwrap()
        .clone();
    assert_eq!(new["color"], "#abcdef");
    // `/register` agrees, after a restart too.
    let reg = app
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("fetch_event_types", r#"["subscription"]"#)],
        )
        .await;
    let mut registered = names(&reg["subscriptions"]);
    registered.sort();
    assert_eq!(registered, want);
    app.restart().await;
    assert_eq!(subscribed_names(&app, HAMLET).await, want);
}

#[actix_web::test]
async fn a_bulk_subscription_update_survives_kill_9() {
    let mut server = Crashable::start();
    server
        .ok(
            "PATCH",
            "/api/v1/users/me/subscriptions",
            HAMLET,
            &[
                ("add", r#"[{"name": "kept after the crash"}]"#),
                ("delete", r#"["design"]"#),
            ],
        )
        .await;
    server.kill_9_and_restart();
    let body = server
        .ok("GET", "/api/v1/users/me/subscriptions", HAMLET, &[])
        .await;
    let names = names(&body["subscriptions"]);
    assert!(
        names.contains(&"kept after the crash".to_owned()),
        "{names:?}"
    );
    assert!(!names.contains(&"design".to_owned()), "{names:?}");
    assert!(names.contains(&"Verona".to_owned()), "{names:?}");
}

// ---- GET /users/{user_id}/channels -----------------------------------------------------

async fn create_channel(
    app: &TestApp,
    who: &str,
    name: &str,
    members: &[i64],
    private: bool,
) -> i64 {
    app.ok(
        "POST",
        "/api/v1/channels/create",
        who,
        &[
            ("name", name),
            ("subscribers", &json!(members).to_string()),
            ("invite_only", if private { "true" } else { "false" }),
        ],
    )
    .await["id"]
        .as_i64()
        .unwrap()
}

async fn new_bot(app: &TestApp, owner: &str, name: &str) -> (i64, String) {
    let body = app
        .ok(
            "POST",
            "/api/v1/bots",
            owner,
            &[
                ("full_name", name),
                ("short_name", &name.to_lowercase().replace(' ', "-")),
            ],
        )
        .await;
    (
        body["user_id"].as_i64().unwrap(),
        body["api_key"].as_str().unwrap().to_owned(),
    )
}

#[actix_web::test]
async fn a_users_channels_as_the_caller_may_see_them() {
    let app = TestApp::spawn().await;
    let public = create_channel(&app, OTHELLO, "othello public", &[OTHELLO_ID], false).await;
    let private = create_channel(&app, OTHELLO, "othello private", &[OTHELLO_ID], true).await;
    let gone = create_channel(&app, OTHELLO, "othello archived", &[OTHELLO_ID], false).await;
    app.ok("DELETE", &format!("/api/v1/streams/{gone}"), IAGO, &[])
        .await;
    let own = app
        .ok("GET", "/api/v1/users/me/subscriptions", OTHELLO, &[])
        .await;
    let mut all: Vec<i64> = own["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stream_id"].as_i64().unwrap())
        .collect();
    all.sort();
    // Archived channels keep their subscriptions.
    assert!(all.contains(&public) && all.contains(&private) && all.contains(&gone));
    let path = format!("/api/v1/users/{OTHELLO_ID}/channels");
    let without_private: Vec<i64> = all.iter().copied().filter(|c| *c != private).collect();
    run_cases(
        &app,
        "GET",
        &path,
        &[
            // Himself and administrators: every channel; others not the private one.
            ok(OTHELLO, p(&[]), json!({"subscribed_channel_ids": all})),
            ok(IAGO, p(&[]), json!({"subscribed_channel_ids": all})),
            ok(
                HAMLET,
                p(&[]),
                json!({"subscribed_channel_ids": without_private}),
            ),
        ],
    )
    .await;
    // A guest sees the subscribers of the channels it is in only (and web-public ones).
    let guest = app.ok("GET", &path, POLONIUS, &[]).await;
    let guest_sees = guest["subscribed_channel_ids"].as_array().unwrap();
    assert!(!guest_sees.contains(&json!(public)) && !guest_sees.contains(&json!(private)));
    // Bots have channels too (feature level 458).
    let (bot, _) = new_bot(&app, HAMLET, "Channel Bot").await;
    app.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        HAMLET,
        &[
            ("subscriptions", r#"[{"name": "Verona"}]"#),
            ("principals", &json!([bot]).to_string()),
        ],
    )
    .await;
    let verona = app.stream_id("Verona").await;
    run_cases(
        &app,
        "GET",
        &format!("/api/v1/users/{bot}/channels"),
        &[ok(
            HAMLET,
            p(&[]),
            json!({"subscribed_channel_ids": [verona]}),
        )],
    )
    .await;
    run_cases(
        &app,
        "GET",
        "/api/v1/users/99999/channels",
        &[bad(HAMLET, p(&[]), "No such user")],
    )
    .await;
    let (status, _) = app
        .call("GET", "/api/v1/users/me/channels", HAMLET, &[])
        .await;
    assert_eq!(status, 404);
}

// ---- GET /bots/{bot_id}/api_key ---------------------------------------------------------

#[actix_web::test]
async fn a_bots_api_key_for_its_owner_and_administrators() {
    let app = TestApp::spawn().await;
    let (bot, key) = new_bot(&app, HAMLET, "Key Bot").await;
    let path = format!("/api/v1/bots/{bot}/api_key");
    run_cases(
        &app,
        "GET",
        &path,
        &[
            ok(HAMLET, p(&[]), json!({"api_key": key})),
            ok(IAGO, p(&[]), json!({"api_key": key})),
            ok(DESDEMONA, p(&[]), json!({"api_key": key})),
            bad(OTHELLO, p(&[]), "Insufficient permission"),
            bad(POLONIUS, p(&[]), "Insufficient permission"),
        ],
    )
    .await;
    // Not a bot, no such user.
    for id in [HAMLET_ID, 99_999] {
        run_cases(
            &app,
            "GET",
            &format!("/api/v1/bots/{id}/api_key"),
            &[bad(IAGO, p(&[]), "No such bot")],
        )
        .await;
    }
}

// ---- POST /users/{user_id}/status -------------------------------------------------------

#[actix_web::test]
async fn administrators_set_another_users_status() {
    let mut app = TestApp::spawn().await;
    let path = format!("/api/v1/users/{HAMLET_ID}/status");
    let (bot, _) = new_bot(&app, HAMLET, "Status Bot").await;
    let queue = app
        .register(OTHELLO, &[("event_types", r#"["user_status"]"#)])
        .await;
    run_cases(
        &app,
        "POST",
        &path,
        &[
            // `access_user_by_id(for_admin=True)`: administrators only, not even oneself.
            bad(
                HAMLET,
                p(&[("status_text", "mine")]),
                "Insufficient permission",
            ),
            bad(
                OTHELLO,
                p(&[("status_text", "his")]),
                "Insufficient permission",
            ),
            bad(IAGO, p(&[]), "Client did not pass any new values."),
            // `away` is not a parameter here.
            bad(
                IAGO,
                p(&[("away", "true")]),
                "Client did not pass any new values.",
            ),
            bad(
                IAGO,
                p(&[("status_text", &"x".repeat(61))]),
                "status_text is too long (limit: 60 characters)",
            ),
            bad(
                IAGO,
                p(&[("status_text", "x"), ("emoji_code", "1f697")]),
                "Client must pass emoji_name if they pass either emoji_code or reaction_type.",
            ),
            ok(
                IAGO,
                p(&[("status_text", " on leave "), ("emoji_name", "car")]),
                json!({}),
            ),
        ],
    )
    .await;
    // Bots have no status; unknown users.
    run_cases(
        &app,
        "POST",
        &format!("/api/v1/users/{bot}/status"),
        &[bad(IAGO, p(&[("status_text", "x")]), "No such user")],
    )
    .await;
    run_cases(
        &app,
        "POST",
        "/api/v1/users/99999/status",
        &[bad(IAGO, p(&[("status_text", "x")]), "No such user")],
    )
    .await;
    let want = json!({"status_text": "on leave", "emoji_name": "car",
                      "emoji_code": "1f697", "reaction_type": "unicode_emoji"});
    let events = without_ids(app.events(OTHELLO, &queue).await);
    let mut event = want.clone();
    event["type"] = json!("user_status");
    event["user_id"] = json!(HAMLET_ID);
    assert_eq!(events.len(), 1, "{events:?}");
    for (k, v) in event.as_object().unwrap() {
        assert_eq!(&events[0][k], v, "{k} of {events:?}");
    }
    let reg = app
        .ok(
            "POST",
            "/api/v1/register",
            OTHELLO,
            &[("fetch_event_types", r#"["user_status"]"#)],
        )
        .await;
    assert_eq!(reg["user_status"][HAMLET_ID.to_string()], want);
    app.restart().await;
    let got = app.ok("GET", &path, OTHELLO, &[]).await;
    assert_eq!(got["status"], want);
}

// ---- GET /streams/{stream_id}/email_address ---------------------------------------------

#[actix_web::test]
async fn a_channels_email_address() {
    let mut app = TestApp::spawn().await;
    let verona = app.stream_id("Verona").await;
    let path = format!("/api/v1/streams/{verona}/email_address");
    let first = app.ok("GET", &path, HAMLET, &[]).await;
    let email = first["email"].as_str().unwrap().to_owned();
    let (local, host) = email.split_once('@').unwrap();
    let realm_url = app.ok("GET", "/api/v1/server_settings", HAMLET, &[]).await["realm_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let realm_host = realm_url
        .split("://")
        .nth(1)
        .unwrap()
        .split([':', '/'])
        .next()
        .unwrap();
    assert_eq!(host, realm_host);
    let parts: Vec<&str> = local.split('.').collect();
    assert_eq!(parts.len(), 3, "{email}");
    assert_eq!(parts[0], "verona");
    assert_eq!(parts[1].len(), 32);
    assert!(parts[1]
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_eq!(parts[2], "show-sender");
    // The same address each time, for this user and sender; another per sender and user.
    assert_eq!(app.ok("GET", &path, HAMLET, &[]).await["email"], email);
    let as_self = app
        .ok(
            "GET",
            &path,
            HAMLET,
            &[("sender_id", &HAMLET_ID.to_string())],
        )
        .await;
    assert_ne!(as_self["email"], email);
    assert_ne!(app.ok("GET", &path, OTHELLO, &[]).await["email"], email);
    let (bot, _) = new_bot(&app, HAMLET, "Mail Bot").await;
    let via_bot = app
        .ok("GET", &path, HAMLET, &[("sender_id", &bot.to_string())])
        .await;
    run_cases(
        &app,
        "GET",
        &path,
        &[
            bad(
                OTHELLO,
                p(&[("sender_id", &bot.to_string())]),
                "Insufficient permission",
            ),
            bad(
                HAMLET,
                p(&[("sender_id", &OTHELLO_ID.to_string())]),
                "No such bot",
            ),
            bad(
                HAMLET,
                p(&[("sender_id", "x")]),
                "sender_id is not valid JSON",
            ),
        ],
    )
    .await;
    // No content access, no permission to post.
    let private = create_channel(&app, OTHELLO, "mail private", &[OTHELLO_ID], true).await;
    run_cases(
        &app,
        "GET",
        &format!("/api/v1/streams/{private}/email_address"),
        &[bad(HAMLET, p(&[]), "Invalid channel ID")],
    )
    .await;
    let quiet = create_channel(&app, IAGO, "mail quiet", &[IAGO_ID, HAMLET_ID], false).await;
    app.ok(
        "PATCH",
        &format!("/api/v1/streams/{quiet}"),
        IAGO,
        &[(
            "can_send_message_group",
            &json!({"new": ADMINS}).to_string(),
        )],
    )
    .await;
    run_cases(
        &app,
        "GET",
        &format!("/api/v1/streams/{quiet}/email_address"),
        &[bad(
            HAMLET,
            p(&[]),
            "You do not have permission to post in this channel.",
        )],
    )
    .await;
    // Kept across a restart.
    app.restart().await;
    assert_eq!(app.ok("GET", &path, HAMLET, &[]).await["email"], email);
    assert_eq!(
        app.ok("GET", &path, HAMLET, &[("sender_id", &bot.to_string())])
            .await["email"],
        via_bot["email"]
    );
}

#[actix_web::test]
async fn statuses_and_email_tokens_survive_kill_9() {
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
    let path = format!("/api/v1/streams/{verona}/email_address");
    let email = server.ok("GET", &path, HAMLET, &[]).await["email"].clone();
    server
        .ok(
            "POST",
            &format!("/api/v1/users/{HAMLET_ID}/status"),
            IAGO,
            &[("status_text", "crashed")],
        )
        .await;
    server.kill_9_and_restart();
    assert_eq!(server.ok("GET", &path, HAMLET, &[]).await["email"], email);
    let status = server
        .ok(
            "GET",
            &format!("/api/v1/users/{HAMLET_ID}/status"),
            OTHELLO,
            &[],
        )
        .await;
    assert_eq!(status["status"]["status_text"], "crashed");
}

// ---- POST /messages/{message_id}/report and moderation_request_channel_id ---------------

/// The newest message of a channel's topic as `who` reads it.
async fn newest_in_topic(app: &TestApp, who: &str, channel: &str, topic: &str) -> Value {
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
                ("num_before", "1"),
                ("num_after", "0"),
                ("apply_markdown", "false"),
            ],
        )
        .await;
    body["messages"]
        .as_array()
        .unwrap()
        .last()
        .cloned()
        .unwrap_or(Value::Null)
}

/// `realm_moderation_request_channel_id` in hamlet's `/register`.
async fn moderation_channel(app: &TestApp) -> Value {
    app.ok(
        "POST",
        "/api/v1/register",
        HAMLET,
        &[("fetch_event_types", r#"["realm"]"#)],
    )
    .await["realm_moderation_request_channel_id"]
        .clone()
}

#[actix_web::test]
async fn the_moderation_request_channel_setting() {
    let mut app = TestApp::spawn().await;
    assert_eq!(moderation_channel(&app).await, -1);
    let private = create_channel(&app, IAGO, "moderators", &[IAGO_ID], true).await;
    let secret = create_channel(&app, OTHELLO, "not iagos", &[OTHELLO_ID], true).await;
    let verona = app.stream_id("Verona").await;
    let queue = app
        .register(HAMLET, &[("event_types", r#"["realm"]"#)])
        .await;
    let set = |id: i64| vec![("moderation_request_channel_id", id.to_string())];
    run_cases(
        &app,
        "PATCH",
        "/api/v1/realm",
        &[
            not_admin(HAMLET, set(private)),
            bad(
                IAGO,
                set(verona),
                "Moderation request channel must be private.",
            ),
            bad(IAGO, set(secret), "Invalid channel ID"),
            bad(IAGO, set(99_999), "Invalid channel ID"),
            bad(
                IAGO,
                p(&[("moderation_request_channel_id", "x")]),
                "moderation_request_channel_id is not valid JSON",
            ),
            ok(
                IAGO,
                set(private),
                json!({"moderation_request_channel_id": private}),
            ),
            // Unchanged: not reported.
            ok(IAGO, set(private), json!({})),
        ],
    )
    .await;
    // The channel stays private while it is the moderation request channel.
    run_cases(
        &app,
        "PATCH",
        &format!("/api/v1/streams/{private}"),
        &[bad(
            IAGO,
            p(&[("is_private", "false")]),
            "Moderation request channel must be private.",
        )],
    )
    .await;
    let events = without_ids(app.events(HAMLET, &queue).await);
    assert_eq!(
        events,
        vec![json!({"type": "realm", "op": "update",
                    "property": "moderation_request_channel_id", "value": private})]
    );
    assert_eq!(moderation_channel(&app).await, private);
    app.restart().await;
    assert_eq!(moderation_channel(&app).await, private);
    run_cases(
        &app,
        "PATCH",
        "/api/v1/realm",
        &[ok(
            IAGO,
            set(-1),
            json!({"moderation_request_channel_id": -1}),
        )],
    )
    .await;
    assert_eq!(moderation_channel(&app).await, -1);
}

#[actix_web::test]
async fn reporting_a_message() {
    let app = TestApp::spawn().await;
    let reported = send_stream(&app, OTHELLO, "Verona", "offtopic", "buy **cheap** things").await;
    let path = format!("/api/v1/messages/{reported}/report");
    let spam = p(&[("report_type", "spam")]);
    // Checked before the realm's setting.
    run_cases(
        &app,
        "POST",
        &path,
        &[
            missing(HAMLET, p(&[]), "report_type"),
            bad(HAMLET, p(&[("report_type", "rude")]), "Invalid report_type"),
            bad(
                HAMLET,
                p(&[("report_type", "spam"), ("description", &"d".repeat(1001))]),
                "description is too long (limit: 1000 characters)",
            ),
            bad(
                HAMLET,
                p(&[("report_type", "other")]),
                "An explanation is required.",
            ),
            bad(
                HAMLET,
                spam.clone(),
                "Message reporting is not enabled in this organization.",
            ),
        ],
    )
    .await;
    let moderators = create_channel(&app, IAGO, "moderators", &[IAGO_ID, DESDEMONA_ID], true).await;
    app.ok(
        "PATCH",
        "/api/v1/realm",
        IAGO,
        &[("moderation_request_channel_id", &moderators.to_string())],
    )
    .await;
    let queue = app
        .register(IAGO, &[("event_types", r#"["message"]"#)])
        .await;
    // A message the reporter cannot read.
    let hidden = create_channel(&app, CORDELIA, "hidden reports", &[CORDELIA_ID], true).await;
    assert!(hidden > 0);
    let secret = send_stream(&app, CORDELIA, "hidden reports", "t", "secret").await;
    run_cases(
        &app,
        "POST",
        &format!("/api/v1/messages/{secret}/report"),
        &[bad(HAMLET, spam.clone(), "Invalid message(s)")],
    )
    .await;
    run_cases(
        &app,
        "POST",
        &path,
        &[ok(
            HAMLET,
            p(&[("report_type", "spam"), ("description", "Not **again**.")]),
            json!({}),
        )],
    )
    .await;
    let report = newest_in_topic(
        &app,
        IAGO,
        "moderators",
        "Othello, the Moor of Venice's moderation requests",
    )
    .await;
    assert_eq!(
        report["sender_email"], "notification-bot@zulip.com",
        "{report}"
    );
    let content = report["content"].as_str().unwrap();
    // The facts: who, which message where, whose, why, the notes, the text.
    let verona = app.stream_id("Verona").await;
    assert!(verona > 0);
    for fact in [
        format!("@_**King Hamlet|{HAMLET_ID}**"),
        format!("#**Verona>offtopic@{reported}**"),
        format!("@_**Othello, the Moor of Venice|{OTHELLO_ID}**"),
        "**Spam**".to_owned(),
        "Not **again**.".to_owned(),
        "buy **cheap** things".to_owned(),
    ] {
        assert!(content.contains(&fact), "{fact} in {content}");
    }
    let events = app.events(IAGO, &queue).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["message"]["id"], report["id"]);
    // A direct message, reported by a recipient; `other` with notes.
    let dm = send_direct(&app, OTHELLO, &[HAMLET_ID, CORDELIA_ID], "psst").await;
    app.ok(
        "POST",
        &format!("/api/v1/messages/{dm}/report"),
        CORDELIA,
        &[("report_type", "other"), ("description", "odd")],
    )
    .await;
    let report = newest_in_topic(
        &app,
        IAGO,
        "moderators",
        "Othello, the Moor of Venice's moderation requests",
    )
    .await;
    let content = report["content"].as_str().unwrap();
    for fact in [
        format!("@_**Cordelia, Lear's daughter|{CORDELIA_ID}**"),
        format!("@_**King Hamlet|{HAMLET_ID}**"),
        "**Other reason**".to_owned(),
        "odd".to_owned(),
        "psst".to_owned(),
    ] {
        assert!(content.contains(&fact), "{fact} in {content}");
    }
    // Without the setting again: refused.
    app.ok(
        "PATCH",
        "/api/v1/realm",
        IAGO,
        &[("moderation_request_channel_id", "-1")],
    )
    .await;
    run_cases(
        &app,
        "POST",
        &path,
        &[bad(
            HAMLET,
            spam,
            "Message reporting is not enabled in this organization.",
        )],
    )
    .await;
}

#[actix_web::test]
async fn a_report_and_the_moderation_channel_survive_kill_9() {
    let mut server = Crashable::start();
    let id = server
        .ok(
            "POST",
            "/api/v1/channels/create",
            IAGO,
            &[
                ("name", "mods"),
                ("subscribers", &json!([IAGO_ID]).to_string()),
                ("invite_only", "true"),
            ],
        )
        .await["id"]
        .as_i64()
        .unwrap();
    server
        .ok(
            "PATCH",
            "/api/v1/realm",
            IAGO,
            &[("moderation_request_channel_id", &id.to_string())],
        )
        .await;
    let msg = server
        .ok(
            "POST",
            "/api/v1/messages",
            OTHELLO,
            &[
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", "t"),
                ("content", "bad"),
            ],
        )
        .await["id"]
        .as_i64()
        .unwrap();
    server
        .ok(
            "POST",
            &format!("/api/v1/messages/{msg}/report"),
            HAMLET,
            &[("report_type", "norms")],
        )
        .await;
    server.kill_9_and_restart();
    let reg = server
        .ok(
            "POST",
            "/api/v1/register",
            IAGO,
            &[("fetch_event_types", r#"["realm"]"#)],
        )
        .await;
    assert_eq!(reg["realm_moderation_request_channel_id"], id);
    let narrow = json!([{"operator": "channel", "operand": "mods"}]).to_string();
    let found = server
        .ok(
            "GET",
            "/api/v1/messages",
            IAGO,
            &[
                ("narrow", &narrow),
                ("anchor", "newest"),
                ("num_before", "5"),
                ("num_after", "0"),
            ],
        )
        .await;
    let messages = found["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{found}");
    assert!(messages[0]["content"]
        .as_str()
        .unwrap()
        .contains("Violates community norms"));
}

// ---- POST /realm/playgrounds, DELETE /realm/playgrounds/{playground_id} ------------------

fn playground(name: &str, language: &str, template: &str) -> Vec<(&'static str, String)> {
    vec![
        ("name", name.to_owned()),
        ("pygments_language", language.to_owned()),
        ("url_template", template.to_owned()),
    ]
}

async fn registered_playgrounds(app: &TestApp) -> Value {
    app.ok(
        "POST",
        "/api/v1/register",
        HAMLET,
        &[("fetch_event_types", r#"["realm_playgrounds"]"#)],
    )
    .await["realm_playgrounds"]
        .clone()
}

#[actix_web::test]
async fn playgrounds_are_added_and_removed_by_administrators() {
    let mut app = TestApp::spawn().await;
    assert_eq!(registered_playgrounds(&app).await, json!([]));
    let queue = app
        .register(HAMLET, &[("event_types", r#"["realm_playgrounds"]"#)])
        .await;
    let path = "/api/v1/realm/playgrounds";
    let good = playground(
        " Rust playground ",
        " Rust ",
        " https://play.example/?code={code} ",
    );
    let invalid = |field: &str, msg: &str| (json!({"errors": {field: [msg]}}), msg.to_owned());
    let mut cases = vec![
        not_admin(HAMLET, good.clone()),
        not_admin(POLONIUS, good.clone()),
        missing(
            IAGO,
            p(&[("url_template", "x"), ("pygments_language", "x")]),
            "name",
        ),
        missing(
            IAGO,
            p(&[("name", "x"), ("pygments_language", "x")]),
            "url_template",
        ),
        missing(
            IAGO,
            p(&[("name", "x"), ("url_template", "x")]),
            "pygments_language",
        ),
        bad(
            IAGO,
            playground("x", &"a".repeat(41), "https://e/{code}"),
            "pygments_language is too long (limit: 40 characters)",
        ),
        bad(
            IAGO,
            playground("x", "py<thon>", "https://e/{code}"),
            "Invalid characters in pygments language",
        ),
    ];
    for (params, (fields, msg)) in [
        (
            playground("x", "Python", "https://e/{code"),
            invalid("url_template", "Invalid URL template."),
        ),
        // Django's `full_clean` runs `clean` after a field failed: an empty template
        // is a valid one without "code".
        (
            playground("x", "Python", "  "),
            (
                json!({"errors": {
                    "url_template": ["This field cannot be blank."],
                    "__all__": ["Missing the required variable \"code\" in the URL template"],
                }}),
                "This field cannot be blank.".to_owned(),
            ),
        ),
        (
            playground(" ", "Python", "https://e/{code}"),
            invalid("name", "This field cannot be blank."),
        ),
        (
            playground("x", "Python", "https://e/{source}"),
            invalid(
                "__all__",
                "Missing the required variable \"code\" in the URL template",
            ),
        ),
        (
            playground("x", "Python", "https://e/{code}/{lang}"),
            invalid(
                "__all__",
                "\"code\" should be the only variable present in the URL template",
            ),
        ),
    ] {
        cases.push(bad(IAGO, params, msg).with_fields(fields));
    }
    cases.push(ok(IAGO, good.clone(), json!({"id": 1})));
    // Language and name are unique together (after stripping).
    cases.push(
        bad(
            IAGO,
            playground("Rust playground", "Rust", "https://other.example/{code}"),
            "Realm playground with this Realm, Pygments language and Name already exists.",
        )
        .with_fields(json!({"errors": {"__all__": [
            "Realm playground with this Realm, Pygments language and Name already exists."
        ]}})),
    );
    cases.push(ok(
        DESDEMONA,
        playground(
            "Rust playground",
            "rust-nightly",
            "https://play.example/n?c={code}",
        ),
        json!({"id": 2}),
    ));
    run_cases(&app, "POST", path, &cases).await;
    let first = json!({"id": 1, "name": "Rust playground", "pygments_language": "Rust",
                       "url_template": "https://play.example/?code={code}"});
    let second = json!({"id": 2, "name": "Rust playground", "pygments_language": "rust-nightly",
                        "url_template": "https://play.example/n?c={code}"});
    assert_eq!(registered_playgrounds(&app).await, json!([first, second]));

    run_cases(
        &app,
        "DELETE",
        "/api/v1/realm/playgrounds/1",
        &[not_admin(HAMLET, p(&[])), ok(IAGO, p(&[]), json!({}))],
    )
    .await;
    for gone in ["1", "99"] {
        run_cases(
            &app,
            "DELETE",
            &format!("/api/v1/realm/playgrounds/{gone}"),
            &[bad(IAGO, p(&[]), "Invalid playground")],
        )
        .await;
    }
    run_cases(
        &app,
        "DELETE",
        "/api/v1/realm/playgrounds/x",
        &[
            not_admin(HAMLET, p(&[])),
            bad(IAGO, p(&[]), "playground_id is not an integer"),
        ],
    )
    .await;
    let event = |list: Value| json!({"type": "realm_playgrounds", "realm_playgrounds": list});
    assert_eq!(
        without_ids(app.events(HAMLET, &queue).await),
        vec![
            event(json!([first])),
            event(json!([first, second])),
            event(json!([second])),
        ]
    );
    assert_eq!(registered_playgrounds(&app).await, json!([second]));
    // After a restart, new ids still do not reuse old ones.
    app.restart().await;
    assert_eq!(registered_playgrounds(&app).await, json!([second]));
    let body = app
        .ok(
            "POST",
            path,
            IAGO,
            &[
                ("name", "Go"),
                ("pygments_language", "Go"),
                ("url_template", "https://go.dev/play/{code}"),
            ],
        )
        .await;
    assert_eq!(body["id"], 3);
}

#[actix_web::test]
async fn playgrounds_survive_kill_9() {
    let mut server = Crashable::start();
    for lang in ["Rust", "Python"] {
        server
            .ok(
                "POST",
                "/api/v1/realm/playgrounds",
                IAGO,
                &[
                    ("name", "Play"),
                    ("pygments_language", lang),
                    ("url_template", "https://play.example/{code}"),
                ],
            )
            .await;
    }
    server
        .ok("DELETE", "/api/v1/realm/playgrounds/1", IAGO, &[])
        .await;
    server.kill_9_and_restart();
    let reg = server
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("fetch_event_types", r#"["realm_playgrounds"]"#)],
        )
        .await;
    assert_eq!(
        reg["realm_playgrounds"],
        json!([{"id": 2, "name": "Play", "pygments_language": "Python",
                "url_template": "https://play.example/{code}"}])
    );
}

// ---- video calls --------------------------------------------------------------------------

#[actix_web::test]
async fn video_calls_without_a_configured_provider() {
    let app = TestApp::spawn().await;
    run_cases(
        &app,
        "GET",
        "/api/v1/calls/bigbluebutton/create",
        &[
            missing(HAMLET, p(&[]), "meeting_name"),
            bad(
                HAMLET,
                p(&[("meeting_name", "standup"), ("voice_only", "maybe")]),
                "voice_only is not valid JSON",
            ),
            bad(
                HAMLET,
                p(&[("meeting_name", "standup"), ("voice_only", "true")]),
                "BigBlueButton is not configured.",
            ),
            bad(
                POLONIUS,
                p(&[("meeting_name", "standup")]),
                "BigBlueButton is not configured.",
            ),
        ],
    )
    .await;
    run_cases(
        &app,
        "POST",
        "/api/v1/calls/constructorgroups/create",
        &[
            bad(HAMLET, p(&[]), "Constructor Groups is not configured."),
            bad(IAGO, p(&[]), "Constructor Groups is not configured."),
        ],
    )
    .await;
    let (status, _) = app
        .call("POST", "/api/v1/calls/bigbluebutton/create", HAMLET, &[])
        .await;
    assert_eq!(status, 405);
}

// ---- POST /mobile_push/test_notification ---------------------------------------------------

const LEGACY_TEST: &str = "/api/v1/mobile_push/test_notification";

#[actix_web::test]
async fn legacy_test_notifications_go_through_the_relay() {
    let (url, relay, handle) = start_relay();
    let app = TestApp::spawn_configured(tempfile::tempdir().unwrap(), move |c| {
        c.push_relay_url = Some(url.clone())
    })
    .await;
    // No token: nothing to send, as Zulip.
    run_cases(&app, "POST", LEGACY_TEST, &[ok(HAMLET, p(&[]), json!({}))]).await;
    assert!(relay.lock().unwrap().seen.is_empty());
    app.ok(
        "POST",
        "/api/v1/users/me/android_gcm_reg_id",
        HAMLET,
        &[("token", "fcm-token-1")],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/users/me/apns_device_token",
        HAMLET,
        &[("token", "abcd1234"), ("appid", "org.zulip.Zulip")],
    )
    .await;
    run_cases(
        &app,
        "POST",
        LEGACY_TEST,
        &[
            coded(
                HAMLET,
                p(&[("token", "unknown")]),
                "INVALID_PUSH_DEVICE_TOKEN",
                "Device not recognized",
            ),
            // Another user's token is not the caller's.
            coded(
                OTHELLO,
                p(&[("token", "fcm-token-1")]),
                "INVALID_PUSH_DEVICE_TOKEN",
                "Device not recognized",
            ),
            bad(
                DEFAULT_BOT,
                p(&[]),
                "This endpoint does not accept bot requests.",
            ),
            ok(HAMLET, p(&[("token", "fcm-token-1")]), json!({})),
        ],
    )
    .await;
    let sent: Vec<Value> = relay
        .lock()
        .unwrap()
        .seen
        .iter()
        .map(|(path, auth, body)| {
            assert_eq!(path, "/api/v1/remotes/push/test_notification");
            assert!(auth.starts_with("Basic "), "{auth}");
            serde_json::from_str(body).unwrap()
        })
        .collect();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["token"], "fcm-token-1");
    assert_eq!(sent[0]["token_kind"], 2);
    assert_eq!(sent[0]["user_id"], HAMLET_ID);
    assert_eq!(sent[0]["base_payload"]["realm_name"], "Zulip Dev");
    assert_eq!(sent[0]["base_payload"]["user_id"], HAMLET_ID);
    // Every token of the caller.
    app.ok("POST", LEGACY_TEST, HAMLET, &[]).await;
    let kinds: Vec<Value> = relay.lock().unwrap().seen[1..]
        .iter()
        .map(|(_, _, b)| serde_json::from_str::<Value>(b).unwrap()["token_kind"].clone())
        .collect();
    assert_eq!(kinds.len(), 2);
    assert!(kinds.contains(&json!(1)) && kinds.contains(&json!(2)));
    // The relay's refusals.
    relay.lock().unwrap().notify = (
        400,
        json!({"result": "error", "code": "INVALID_REMOTE_PUSH_DEVICE_TOKEN",
               "msg": "Device not recognized by the push bouncer"}),
    );
    run_cases(
        &app,
        "POST",
        LEGACY_TEST,
        &[coded(
            HAMLET,
            p(&[("token", "abcd1234")]),
            "INVALID_REMOTE_PUSH_DEVICE_TOKEN",
            "Device not recognized by the push bouncer",
        )],
    )
    .await;
    relay.lock().unwrap().notify = (500, json!({}));
    app.err(
        "POST",
        LEGACY_TEST,
        HAMLET,
        &[("token", "abcd1234")],
        502,
        "INTERNAL_SERVER_ERROR_ON_BOUNCER",
        "Internal server error on Zulip push notification service, retry later.",
    )
    .await;
    handle.stop(true).await;
}

#[actix_web::test]
async fn legacy_test_notifications_without_a_relay() {
    let app = TestApp::spawn().await;
    app.ok(
        "POST",
        "/api/v1/users/me/android_gcm_reg_id",
        HAMLET,
        &[("token", "fcm-token-1")],
    )
    .await;
    run_cases(
        &app,
        "POST",
        LEGACY_TEST,
        &[
            // The token is looked up first.
            coded(
                HAMLET,
                p(&[("token", "unknown")]),
                "INVALID_PUSH_DEVICE_TOKEN",
                "Device not recognized",
            ),
            coded(
                HAMLET,
                p(&[]),
                "PUSH_SERVICE_NOT_CONFIGURED",
                "Server is not configured to use push notification service.",
            ),
        ],
    )
    .await;
}
