//! A first start that works for every client (`realm::onboarding`,
//! `realm::dev_history`): the Welcome Bot as a system bot, its direct message to every
//! new human user (and the realm's `welcome_message_custom_text` after it), `POST
//! /realm/test_welcome_bot_custom_message`, a `hearth realm create` realm's first
//! channels and conversations, the development realm's "hamletcharacters" group and
//! message history, and real clients on a first start: the terminal client zulip-term
//! 0.7.0 on both (`HEARTH_ZULIP_TERM` names its executable; `.ci/run` installs it), the
//! Python client and zulip-js as a created realm's owner.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::child::ChildServer;
use crate::common::*;
use hearth::realm::ManualClock;
use reqwest::blocking::Client;
use serde_json::{json, Value};

/// The Welcome Bot's user id (`messages::moves::WELCOME_BOT_ID`).
const WELCOME_BOT_ID: i64 = i32::MAX as i64 - 1;
const WELCOME_BOT_EMAIL: &str = "welcome-bot@zulip.com";
const TOO_LONG: &str = "welcome_message_custom_text is too long (limit: 8000 characters)";

/// The newest messages `email` can see (Markdown, not HTML).
async fn newest(app: &TestApp, email: &str, narrow: &str) -> Vec<Value> {
    let body = app
        .ok(
            "GET",
            "/api/v1/messages",
            email,
            &[
                ("anchor", "newest"),
                ("num_before", "200"),
                ("num_after", "0"),
                ("narrow", narrow),
                ("apply_markdown", "false"),
            ],
        )
        .await;
    body["messages"].as_array().unwrap().clone()
}

/// The messages from the Welcome Bot `email` received.
async fn from_welcome_bot(app: &TestApp, email: &str) -> Vec<Value> {
    newest(app, email, "[]")
        .await
        .into_iter()
        .filter(|m| m["sender_id"] == WELCOME_BOT_ID)
        .collect()
}

fn texts(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

#[actix_web::test]
async fn the_welcome_bot_is_a_cross_realm_bot() {
    let app = TestApp::spawn().await;
    let body = app
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("fetch_event_types", "[\"realm_user\"]")],
        )
        .await;
    let bots = body["cross_realm_bots"].as_array().unwrap();
    let emails: Vec<&str> = bots.iter().map(|b| b["email"].as_str().unwrap()).collect();
    assert_eq!(emails, ["notification-bot@zulip.com", WELCOME_BOT_EMAIL]);
    let welcome = &bots[1];
    assert_eq!(welcome["user_id"], WELCOME_BOT_ID);
    assert_eq!(welcome["full_name"], "Welcome Bot");
    assert_eq!(welcome["is_bot"], true);
    assert_eq!(welcome["is_system_bot"], true);
    // Not a user of the realm.
    let users = body["realm_users"].as_array().unwrap();
    assert!(users.iter().all(|u| u["user_id"] != WELCOME_BOT_ID));
    // Yet `GET /users/{id}` and `GET /users/{email}` find it, as Zulip's
    // `access_user_by_id_including_cross_realm` and `get_user_including_cross_realm` do.
    for path in [
        format!("/api/v1/users/{WELCOME_BOT_ID}"),
        format!("/api/v1/users/{WELCOME_BOT_EMAIL}"),
    ] {
        let user = app.ok("GET", &path, HAMLET, &[]).await["user"].clone();
        assert_eq!(user["user_id"], WELCOME_BOT_ID, "{path}");
        assert_eq!(user["full_name"], "Welcome Bot");
        assert_eq!(user["email"], WELCOME_BOT_EMAIL);
        assert_eq!(user["is_bot"], true);
    }
    // It is no one an administrator can update.
    app.bad(
        "PATCH",
        &format!("/api/v1/users/{WELCOME_BOT_ID}"),
        IAGO,
        &[("full_name", "Someone")],
        "No such user",
    )
    .await;
}

/// A direct message to the Welcome Bot gets its answer (Zulip's
/// `send_welcome_bot_response`): matched on the whole message, case-insensitively, the
/// list of what it understands otherwise; unread, in the same conversation. A group
/// conversation with it gets none.
#[actix_web::test]
async fn the_welcome_bot_answers_direct_messages() {
    let mut app = TestApp::spawn().await;
    let dm = |to: String, content: &'static str| {
        let app = &app;
        async move {
            app.ok(
                "POST",
                "/api/v1/messages",
                HAMLET,
                &[("type", "direct"), ("to", &to), ("content", content)],
            )
            .await["id"]
                .as_i64()
                .unwrap()
        }
    };
    let to_bot = format!("[{WELCOME_BOT_ID}]");
    let mut answers = Vec::new();
    for (content, expect) in [
        ("HELP", "Messages I understand: `apps`"),
        ("apps", "[mobile and desktop apps](/apps/)"),
        ("Keyboard Shortcuts", "(#keyboard-shortcuts)"),
        ("hello there", "send one of these: `apps`"),
    ] {
        let id = dm(to_bot.clone(), content).await;
        let bot = from_welcome_bot(&app, HAMLET).await;
        let reply = bot.last().expect("a reply");
        assert_eq!(reply["id"].as_i64(), Some(id + 1), "{content}");
        let text = reply["content"].as_str().unwrap();
        assert!(text.contains(expect), "{content}: {text}");
        assert!(!reply["flags"].as_array().unwrap().contains(&json!("read")));
        answers.push(reply["id"].clone());
    }
    let before = from_welcome_bot(&app, HAMLET).await.len();
    dm(format!("[{WELCOME_BOT_ID}, {OTHELLO_ID}]"), "help").await;
    assert_eq!(from_welcome_bot(&app, HAMLET).await.len(), before);
    app.restart().await;
    let ids: Vec<Value> = from_welcome_bot(&app, HAMLET)
        .await
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    assert!(answers.iter().all(|a| ids.contains(a)));
}

/// A scheduled direct message to the Welcome Bot gets its answer when it is delivered,
/// as a send does.
#[actix_web::test]
async fn the_welcome_bot_answers_a_scheduled_message() {
    let clock = ManualClock::new(START_MS);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let at = (START_MS / 1000 + 60).to_string();
    app.ok(
        "POST",
        "/api/v1/scheduled_messages",
        HAMLET,
        &[
            ("type", "direct"),
            ("to", &format!("[{WELCOME_BOT_ID}]")),
            ("content", "topics"),
            ("scheduled_delivery_timestamp", &at),
        ],
    )
    .await;
    clock.advance_ms(61_000);
    app.deliver_scheduled().await;
    let narrow = json!([{"operator": "dm", "operand": WELCOME_BOT_EMAIL}]).to_string();
    let dm = newest(&app, HAMLET, &narrow).await;
    let texts = texts(&dm);
    assert_eq!(texts.len(), 2, "{texts:#?}");
    assert_eq!(texts[0], "topics");
    assert!(
        texts[1].contains("/help/introduction-to-topics"),
        "{}",
        texts[1]
    );
    assert_eq!(dm[1]["id"].as_i64(), dm[0]["id"].as_i64().map(|i| i + 1));
}

#[actix_web::test]
async fn a_new_user_gets_one_unread_welcome_dm_and_a_bot_none() {
    let app = TestApp::spawn().await;
    let queue = app
        .register(IAGO, &[("event_types", "[\"message\"]")])
        .await;
    let id = app
        .create_user("newcomer@zulip.com", "a long passphrase", "Newcomer")
        .await as i64;
    let messages = newest(&app, "newcomer@zulip.com", "[]").await;
    assert_eq!(messages.len(), 1, "{messages:#?}");
    let m = &messages[0];
    assert_eq!(m["sender_id"], WELCOME_BOT_ID);
    assert_eq!(m["sender_email"], WELCOME_BOT_EMAIL);
    assert_eq!(m["sender_full_name"], "Welcome Bot");
    assert_eq!(m["sender_realm_str"], "zulipinternal");
    assert_eq!(m["type"], "private");
    assert_eq!(m["client"], "Internal");
    assert_eq!(m["flags"], json!([]), "unread, nothing else");
    let shown: Vec<(i64, &str, &str)> = m["display_recipient"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["id"].as_i64().unwrap(),
                u["email"].as_str().unwrap(),
                u["full_name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            (id, format!("user{id}@zulipdev.com").as_str(), "Newcomer"),
            (WELCOME_BOT_ID, WELCOME_BOT_EMAIL, "Welcome Bot"),
        ]
    );
    let text = m["content"].as_str().unwrap();
    assert!(text.contains("/help/getting-started-with-zulip"), "{text}");
    // The administrators' guide is for administrators; the realm has no conversation
    // to point to (no history here).
    assert!(!text.contains("/help/moving-to-zulip"), "{text}");
    assert!(!text.contains("/#inbox"), "{text}");
    // The conversation with the bot, by its email.
    let narrow = json!([{"operator": "dm", "operand": WELCOME_BOT_EMAIL}]).to_string();
    let dm = newest(&app, "newcomer@zulip.com", &narrow).await;
    assert_eq!(dm.len(), 1, "{dm:#?}");
    // A reply goes to the bot, by email or by id, as to anyone.
    for to in [WELCOME_BOT_EMAIL.to_owned(), format!("[{WELCOME_BOT_ID}]")] {
        app.ok(
            "POST",
            "/api/v1/messages",
            "newcomer@zulip.com",
            &[
                ("type", "direct"),
                ("to", &to),
                ("content", "help"),
                ("read_by_sender", "true"),
            ],
        )
        .await;
    }
    // Each "help" gets the bot's answer in the same conversation.
    let dm = newest(&app, "newcomer@zulip.com", &narrow).await;
    assert_eq!(dm.len(), 5, "{dm:#?}");
    assert!(dm[1..]
        .iter()
        .all(|m| m["display_recipient"] == dm[0]["display_recipient"]));
    let senders: Vec<bool> = dm
        .iter()
        .map(|m| m["sender_id"] == WELCOME_BOT_ID)
        .collect();
    assert_eq!(senders, [true, false, true, false, true]);
    let state = app
        .ok(
            "POST",
            "/api/v1/register",
            "newcomer@zulip.com",
            &[(
                "fetch_event_types",
                "[\"message\", \"update_message_flags\"]",
            )],
        )
        .await;
    let unread = &state["unread_msgs"];
    // The welcome and the bot's two answers are unread (the user's own are read).
    assert_eq!(unread["count"], 3, "{unread}");
    assert_eq!(
        unread["pms"][0]["other_user_id"], WELCOME_BOT_ID,
        "{unread}"
    );
    // Nobody else is told.
    assert!(app.events(IAGO, &queue).await.is_empty());
    // A bot gets nothing: the next message id follows the welcome.
    app.ok(
        "POST",
        "/api/v1/bots",
        HAMLET,
        &[("full_name", "Helper"), ("short_name", "helper")],
    )
    .await;
    let sent = app
        .ok(
            "POST",
            "/api/v1/realm/test_welcome_bot_custom_message",
            IAGO,
            &[("welcome_message_custom_text", "hi")],
        )
        .await;
    // (After the welcome: two messages to the bot and its two answers.)
    assert_eq!(sent["message_id"], m["id"].as_i64().unwrap() + 5);
}

#[actix_web::test]
async fn the_realm_custom_text_follows_the_welcome() {
    let app = TestApp::spawn().await;
    let queue = app
        .register(HAMLET, &[("event_types", "[\"realm\"]")])
        .await;
    let set = |text: String| [("welcome_message_custom_text", text)];
    let path = "/api/v1/realm";
    let long = "x".repeat(8001);
    // Administrators only, before the parameter is read.
    app.err(
        "PATCH",
        path,
        HAMLET,
        &[("welcome_message_custom_text", &long)],
        400,
        "UNAUTHORIZED_PRINCIPAL",
        NOT_ADMIN,
    )
    .await;
    app.bad(
        "PATCH",
        path,
        IAGO,
        &[("welcome_message_custom_text", &long)],
        TOO_LONG,
    )
    .await;
    let longest = "y".repeat(8000);
    let body = app
        .ok(
            "PATCH",
            path,
            IAGO,
            &[("welcome_message_custom_text", &longest)],
        )
        .await;
    assert_eq!(body["welcome_message_custom_text"], "updated");
    let text = "Read the **handbook** first.".to_owned();
    let s = set(text.clone());
    let body = app
        .ok("PATCH", path, IAGO, &[(s[0].0, s[0].1.as_str())])
        .await;
    assert_eq!(body["welcome_message_custom_text"], "updated");
    // The same value again changes nothing and reports nothing.
    let body = app
        .ok("PATCH", path, IAGO, &[(s[0].0, s[0].1.as_str())])
        .await;
    assert!(body.get("welcome_message_custom_text").is_none(), "{body}");
    let events = app.events(HAMLET, &queue).await;
    assert_eq!(
        events
            .iter()
            .map(
                |e| json!({"type": e["type"], "op": e["op"], "property": e["property"],
                            "value": e["value"]})
            )
            .collect::<Vec<_>>(),
        [
            json!({"type": "realm", "op": "update", "property": "welcome_message_custom_text",
                   "value": longest}),
            json!({"type": "realm", "op": "update", "property": "welcome_message_custom_text",
                   "value": text}),
        ]
    );
    let state = app
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("fetch_event_types", "[\"realm\"]")],
        )
        .await;
    assert_eq!(state["realm_welcome_message_custom_text"], text);
    // A new user gets the welcome, then the custom text.
    app.create_user("second@zulip.com", "a long passphrase", "Second")
        .await;
    let got = from_welcome_bot(&app, "second@zulip.com").await;
    assert_eq!(got.len(), 2, "{got:#?}");
    assert!(texts(&got)[1].contains(&text), "{got:#?}");
    assert_eq!(got[1]["flags"], json!([]));
    let html = app
        .ok(
            "GET",
            &format!("/api/v1/messages/{}", got[1]["id"]),
            "second@zulip.com",
            &[],
        )
        .await;
    assert!(
        html["message"]["content"]
            .as_str()
            .unwrap()
            .contains("<strong>handbook</strong>"),
        "{html}"
    );
    // Emptied: the welcome alone.
    app.ok("PATCH", path, IAGO, &[("welcome_message_custom_text", "")])
        .await;
    app.create_user("third@zulip.com", "a long passphrase", "Third")
        .await;
    assert_eq!(from_welcome_bot(&app, "third@zulip.com").await.len(), 1);
}

#[actix_web::test]
async fn testing_the_custom_message_sends_it_alone_to_the_administrator() {
    let app = TestApp::spawn().await;
    let path = "/api/v1/realm/test_welcome_bot_custom_message";
    for who in [HAMLET, POLONIUS, SHIVA, DEFAULT_BOT] {
        // `require_realm_admin` comes first, even for an empty text.
        app.err(
            "POST",
            path,
            who,
            &[("welcome_message_custom_text", "")],
            400,
            "UNAUTHORIZED_PRINCIPAL",
            NOT_ADMIN,
        )
        .await;
    }
    let body = app
        .err(
            "POST",
            path,
            IAGO,
            &[],
            400,
            "REQUEST_VARIABLE_MISSING",
            "Missing 'welcome_message_custom_text' argument",
        )
        .await;
    assert_eq!(body["var_name"], "welcome_message_custom_text");
    app.bad(
        "POST",
        path,
        IAGO,
        &[("welcome_message_custom_text", "")],
        "Message must not be empty",
    )
    .await;
    app.bad(
        "POST",
        path,
        IAGO,
        &[("welcome_message_custom_text", &"z".repeat(8001))],
        TOO_LONG,
    )
    .await;
    let queue = app
        .register(IAGO, &[("event_types", "[\"message\"]")])
        .await;
    let other = app
        .register(HAMLET, &[("event_types", "[\"message\"]")])
        .await;
    let text = "Welcome Bot custom message for testing";
    let body = app
        .ok(
            "POST",
            path,
            DESDEMONA,
            &[("welcome_message_custom_text", text)],
        )
        .await;
    let id = body["message_id"].as_i64().unwrap();
    assert_eq!(body.as_object().unwrap().len(), 3, "{body}");
    let got = from_welcome_bot(&app, DESDEMONA).await;
    assert_eq!(got.len(), 1, "only the custom message: {got:#?}");
    assert_eq!(got[0]["id"], id);
    assert!(texts(&got)[0].contains(text));
    // The administrator who asked is not told (not a recipient); the owner's message
    // is the owner's. Iago's own test reaches Iago as a normal DM event.
    assert!(app.events(IAGO, &queue).await.is_empty());
    let body = app
        .ok("POST", path, IAGO, &[("welcome_message_custom_text", text)])
        .await;
    let events = app.events(IAGO, &queue).await;
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0]["type"], "message");
    assert_eq!(events[0]["flags"], json!([]));
    assert_eq!(events[0]["message"]["id"], body["message_id"]);
    assert_eq!(events[0]["message"]["sender_email"], WELCOME_BOT_EMAIL);
    assert_eq!(events[0]["message"]["sender_full_name"], "Welcome Bot");
    assert!(app.events(HAMLET, &other).await.is_empty());
}

#[actix_web::test]
async fn the_dev_realm_has_the_hamlet_characters_group() {
    let app = TestApp::spawn().await;
    let body = app.ok("GET", "/api/v1/user_groups", HAMLET, &[]).await;
    let group = body["user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "hamletcharacters")
        .cloned()
        .expect("hamletcharacters");
    assert_eq!(group["description"], "Characters of Hamlet");
    assert_eq!(group["is_system_group"], false);
    assert_eq!(group["members"], json!([CORDELIA_ID, HAMLET_ID]));
    assert_eq!(group["can_join_group"], NOBODY);
    assert_eq!(group["can_leave_group"], EVERYONE);
    assert_eq!(
        group["can_manage_group"],
        json!({"direct_members": [CORDELIA_ID], "direct_subgroups": []})
    );
}

/// Hamlet's unread counts in `/register`.
async fn hamlet_unread(app: &TestApp) -> Value {
    let state = app
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[(
                "fetch_event_types",
                "[\"message\", \"update_message_flags\"]",
            )],
        )
        .await;
    state["unread_msgs"].clone()
}

#[actix_web::test]
async fn the_dev_realm_starts_with_a_history() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = TestApp::spawn_configured(dir, |c| c.dev_without_history = false).await;
    for _ in 0..2 {
        let unread = hamlet_unread(&app).await;
        assert_eq!(unread["count"], 5, "{unread}");
        assert_eq!(unread["mentions"].as_array().unwrap().len(), 1, "{unread}");
        assert_eq!(unread["pms"].as_array().unwrap().len(), 1, "{unread}");
        assert_eq!(unread["huddles"].as_array().unwrap().len(), 1, "{unread}");
        assert_eq!(unread["streams"].as_array().unwrap().len(), 3, "{unread}");
        let messages = newest(&app, HAMLET, "[]").await;
        let channels: std::collections::BTreeSet<&str> = messages
            .iter()
            .filter_map(|m| m["display_recipient"].as_str())
            .collect();
        assert_eq!(
            channels.into_iter().collect::<Vec<_>>(),
            ["Verona", "design", "devel", "social"]
        );
        assert!(messages.iter().any(|m| m["display_recipient"]
            .as_array()
            .is_some_and(|r| r.len() == 3)));
        assert!(messages
            .iter()
            .any(|m| !m["reactions"].as_array().unwrap().is_empty()));
        let ids: Vec<i64> = messages.iter().map(|m| m["id"].as_i64().unwrap()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        // Everyone else has read everything.
        let state = app
            .ok(
                "POST",
                "/api/v1/register",
                IAGO,
                &[(
                    "fetch_event_types",
                    "[\"message\", \"update_message_flags\"]",
                )],
            )
            .await;
        assert_eq!(state["unread_msgs"]["count"], 0);
        // The Welcome Bot's conversations in the Zulip and sandbox channels.
        let zulip = newest(
            &app,
            CORDELIA,
            &json!([{"operator": "channel", "operand": "Zulip"}]).to_string(),
        )
        .await;
        let topics: Vec<&str> = zulip
            .iter()
            .map(|m| m["subject"].as_str().unwrap())
            .collect();
        assert_eq!(
            topics,
            [
                "moving messages",
                "moving messages",
                "welcome to Zulip!",
                "welcome to Zulip!",
                "welcome to Zulip!"
            ]
        );
        assert!(zulip.iter().all(|m| m["sender_full_name"] == "Welcome Bot"));
        app.restart().await;
    }
}

// ---- child processes: kill -9, realm create, real clients -----------------------

fn http() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn dev_key(url: &str, email: &str) -> String {
    let body: Value = http()
        .post(format!("{url}/api/v1/dev_fetch_api_key"))
        .form(&[("username", email)])
        .send()
        .unwrap()
        .json()
        .unwrap();
    body["api_key"].as_str().expect("api_key").to_owned()
}

/// A request with Basic credentials; answers (status, body).
fn call(
    url: &str,
    method: reqwest::Method,
    path: &str,
    (email, key): (&str, &str),
    params: &[(&str, &str)],
) -> (u16, Value) {
    let rb = http().request(method.clone(), format!("{url}{path}"));
    let rb = if method == reqwest::Method::GET {
        rb.query(params)
    } else {
        rb.form(params)
    };
    let resp = rb.basic_auth(email, Some(key)).send().unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().unwrap())
}

fn get_ok(url: &str, path: &str, who: (&str, &str), params: &[(&str, &str)]) -> Value {
    let (status, body) = call(url, reqwest::Method::GET, path, who, params);
    assert_eq!(status, 200, "{path}: {body}");
    body
}

fn all_messages(url: &str, who: (&str, &str)) -> Vec<Value> {
    let body = get_ok(
        url,
        "/api/v1/messages",
        who,
        &[
            ("anchor", "oldest"),
            ("num_before", "0"),
            ("num_after", "1000"),
            ("apply_markdown", "false"),
        ],
    );
    body["messages"].as_array().unwrap().clone()
}

#[test]
fn the_welcome_dm_and_the_custom_text_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_arg = data.to_str().unwrap();
    let args = ["--dev", "--data", data_arg, "--durability", "always"];
    let server = ChildServer::up(&args, &[]);
    let iago = dev_key(&server.url, IAGO);
    let (status, body) = call(
        &server.url,
        reqwest::Method::PATCH,
        "/api/v1/realm",
        (IAGO, &iago),
        &[("welcome_message_custom_text", "Kept across a crash.")],
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(
        &server.url,
        reqwest::Method::POST,
        "/api/v1/users",
        (IAGO, &iago),
        &[
            ("email", "survivor@zulip.com"),
            ("password", "a long passphrase"),
            ("full_name", "Survivor"),
        ],
    );
    assert_eq!(status, 200, "{body}");
    let before = {
        let key = dev_key(&server.url, "survivor@zulip.com");
        all_messages(&server.url, ("survivor@zulip.com", &key))
    };
    server.kill_9();
    let server = ChildServer::up(&args, &[]);
    let key = dev_key(&server.url, "survivor@zulip.com");
    let after = all_messages(&server.url, ("survivor@zulip.com", &key));
    assert_eq!(before, after);
    let welcome: Vec<&Value> = after
        .iter()
        .filter(|m| m["sender_id"] == WELCOME_BOT_ID)
        .collect();
    assert_eq!(welcome.len(), 2, "{after:#?}");
    assert!(welcome[1]["content"]
        .as_str()
        .unwrap()
        .contains("Kept across a crash."));
    assert_eq!(welcome[0]["flags"], json!([]));
    let iago = dev_key(&server.url, IAGO);
    let (_, state) = call(
        &server.url,
        reqwest::Method::POST,
        "/api/v1/register",
        (IAGO, &iago),
        &[("fetch_event_types", "[\"realm\"]")],
    );
    assert_eq!(
        state["realm_welcome_message_custom_text"],
        "Kept across a crash."
    );
    server.kill_9();
}

/// A realm made by `hearth realm create` in `dir` ("Acme", owner boss@acme.test);
/// answers the data folder and the zuliprc.
fn created_realm(dir: &Path, url: &str) -> (PathBuf, PathBuf) {
    let data = dir.join("data");
    let rc = dir.join("zuliprc");
    let out = hearth()
        .args([
            "realm",
            "create",
            "--subdomain",
            "",
            "--name",
            "Acme",
            "--owner-email",
            "boss@acme.test",
            "--owner-name",
            "Boss",
            "--owner-password",
            "a long passphrase",
            "--data",
            data.to_str().unwrap(),
            "--url",
            url,
            "--zuliprc",
            rc.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    (data, rc)
}

/// The key in a zuliprc.
fn rc_key(rc: &Path) -> String {
    std::fs::read_to_string(rc)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("key=").map(str::to_owned))
        .expect("key=")
}

/// A name no other tmux server of these tests uses.
fn tmux_socket() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "hearth-onboarding-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

#[test]
fn a_created_realm_starts_with_conversations_and_the_owners_welcome() {
    let dir = tempfile::tempdir().unwrap();
    let (data, rc) = created_realm(dir.path(), "http://127.0.0.1:9");
    let server = ChildServer::up(&["--data", data.to_str().unwrap()], &[]);
    let key = rc_key(&rc);
    let boss = ("boss@acme.test", key.as_str());
    let subs = get_ok(&server.url, "/api/v1/users/me/subscriptions", boss, &[]);
    assert_eq!(
        names(&subs["subscriptions"]),
        ["Zulip", "sandbox", "general"]
    );
    let state = {
        let (status, body) = call(
            &server.url,
            reqwest::Method::POST,
            "/api/v1/register",
            boss,
            &[(
                "fetch_event_types",
                "[\"default_streams\", \"message\", \"update_message_flags\"]",
            )],
        );
        assert_eq!(status, 200, "{body}");
        body
    };
    let ids: Vec<&Value> = subs["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["stream_id"])
        .collect();
    let defaults: Vec<&Value> = state["realm_default_streams"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(defaults, ids, "the three are default channels");
    let messages = all_messages(&server.url, boss);
    assert_eq!(state["unread_msgs"]["count"], messages.len());
    let shape: Vec<(String, String)> = messages
        .iter()
        .map(|m| {
            (
                m["display_recipient"]
                    .as_str()
                    .unwrap_or("(direct)")
                    .to_owned(),
                m["subject"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("Zulip", "moving messages"),
        ("Zulip", "moving messages"),
        ("sandbox", "experiments"),
        ("sandbox", "experiments"),
        ("sandbox", "start a conversation"),
        ("sandbox", "start a conversation"),
        ("sandbox", "start a conversation"),
        ("general", "greetings"),
        ("general", "greetings"),
        ("Zulip", "welcome to Zulip!"),
        ("Zulip", "welcome to Zulip!"),
        ("Zulip", "welcome to Zulip!"),
        ("(direct)", ""),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    assert_eq!(shape, expected);
    assert!(messages.iter().all(|m| m["sender_id"] == WELCOME_BOT_ID));
    // The first message of each topic is starred; all are unread.
    let starred: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m["flags"] == json!(["starred"]))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(starred, [0, 2, 4, 7, 9]);
    assert!(messages
        .iter()
        .all(|m| m["flags"] == json!([]) || m["flags"] == json!(["starred"])));
    // The Welcome Bot waves at the first greeting.
    assert_eq!(
        messages[7]["reactions"],
        json!([{"emoji_name": "wave", "emoji_code": "1f44b",
                "reaction_type": "unicode_emoji", "user_id": WELCOME_BOT_ID}])
    );
    // The owner is an administrator: the welcome says how to set up.
    let welcome = messages[12]["content"].as_str().unwrap();
    assert!(welcome.contains("/help/moving-to-zulip"), "{welcome}");
    assert!(welcome.contains("(/#inbox)"), "{welcome}");
    // A user the owner creates joins the three channels and gets a welcome of their own.
    let (status, body) = call(
        &server.url,
        reqwest::Method::POST,
        "/api/v1/users",
        boss,
        &[
            ("email", "new@acme.test"),
            ("password", "another long passphrase"),
            ("full_name", "New"),
        ],
    );
    assert_eq!(status, 200, "{body}");
    let body: Value = http()
        .post(format!("{}/api/v1/fetch_api_key", server.url))
        .form(&[
            ("username", "new@acme.test"),
            ("password", "another long passphrase"),
        ])
        .send()
        .unwrap()
        .json()
        .unwrap();
    let new_key = body["api_key"].as_str().unwrap().to_owned();
    let theirs = all_messages(&server.url, ("new@acme.test", &new_key));
    let dms: Vec<&Value> = theirs.iter().filter(|m| m["type"] == "private").collect();
    assert_eq!(dms.len(), 1, "{theirs:#?}");
    assert_eq!(dms[0]["sender_full_name"], "Welcome Bot");
    assert_eq!(dms[0]["flags"], json!([]));
    server.stop();
}

// ---- zulip-term and the Python client ------------------------------------------------

/// Writes a 0600 zuliprc.
fn write_zuliprc(path: &Path, email: &str, key: &str, site: &str) {
    std::fs::write(
        path,
        format!("[api]\nemail={email}\nkey={key}\nsite={site}\n"),
    )
    .unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Runs zulip-term on `rc` in a detached tmux session of its own server and answers
/// the screen once it shows `want` (or whatever it shows after 90 s).
fn zulip_term_screen(zulip_term: &str, rc: &Path, want: &[&str]) -> String {
    let socket = tmux_socket();
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .expect("tmux runs")
    };
    let cmd = format!(
        "{zulip_term} -c {} ; echo EXITED $?; sleep 600",
        rc.to_str().unwrap()
    );
    let out = tmux(&[
        "new-session",
        "-d",
        "-s",
        "zt",
        "-x",
        "160",
        "-y",
        "48",
        &cmd,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut screen = String::new();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
        screen = text(&tmux(&["capture-pane", "-p", "-t", "zt"]).stdout);
        if screen.contains("EXITED") || want.iter().all(|w| screen.contains(w)) {
            break;
        }
    }
    tmux(&["kill-server"]);
    screen
}

/// `HEARTH_ZULIP_TERM`, or `None` with a SKIPPED line (a failure under CI).
fn zulip_term() -> Option<String> {
    match std::env::var("HEARTH_ZULIP_TERM") {
        Ok(path) => Some(path),
        Err(_) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "HEARTH_ZULIP_TERM must name zulip-term 0.7.0 under CI"
            );
            eprintln!(
                "SKIPPED zulip-term: HEARTH_ZULIP_TERM is not set. Make a Python 3.10 venv \
                 with `pip install zulip-term==0.7.0` and set it to its bin/zulip-term."
            );
            None
        }
    }
}

#[test]
fn zulip_term_shows_the_dev_realm_to_hamlet() {
    let Some(zt) = zulip_term() else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = ChildServer::up(
        &["--dev", "--data", data.to_str().unwrap()],
        &[("HEARTH_DEV_WITHOUT_HISTORY", "false")],
    );
    let rc = dir.path().join("zuliprc");
    write_zuliprc(&rc, HAMLET, &dev_key(&server.url, HAMLET), &server.url);
    // Hamlet's channels, and his conversations up to the first he has not read.
    let want = ["I approve.", "Verona", "devel"];
    let screen = zulip_term_screen(&zt, &rc, &want);
    assert!(!screen.contains("ListBox is empty"), "{screen}");
    assert!(!screen.contains("EXITED"), "zulip-term exited:\n{screen}");
    for w in want {
        assert!(screen.contains(w), "no {w:?} on the screen:\n{screen}");
    }
    server.stop();
}

#[test]
fn zulip_term_shows_a_created_realm_to_its_owner() {
    let Some(zt) = zulip_term() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (data, rc) = created_realm(dir.path(), "http://127.0.0.1:9991");
    let mode = std::fs::metadata(&rc).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let server = ChildServer::up(&["--data", data.to_str().unwrap()], &[]);
    // The server's port is known once it listens: the zuliprc points there.
    write_zuliprc(&rc, "boss@acme.test", &rc_key(&rc), &server.url);
    let want = ["Welcome Bot", "general", "sandbox"];
    let screen = zulip_term_screen(&zt, &rc, &want);
    assert!(!screen.contains("ListBox is empty"), "{screen}");
    assert!(!screen.contains("EXITED"), "zulip-term exited:\n{screen}");
    for w in want {
        assert!(screen.contains(w), "no {w:?} on the screen:\n{screen}");
    }
    server.stop();
}

#[test]
fn the_python_client_reads_a_created_realm_as_its_owner() {
    let Some(python) = std::env::var_os("HEARTH_PYTHON") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "HEARTH_PYTHON must name a Python with zulip==0.9.1 under CI"
        );
        eprintln!("SKIPPED the_python_client_reads_a_created_realm_as_its_owner: HEARTH_PYTHON is not set");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (data, rc) = created_realm(dir.path(), "http://127.0.0.1:9991");
    let server = ChildServer::up(&["--data", data.to_str().unwrap()], &[]);
    write_zuliprc(&rc, "boss@acme.test", &rc_key(&rc), &server.url);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/first_start.py");
    let out = Command::new(python).arg(script).arg(&rc).output().unwrap();
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{said}");
    server.stop();
}

#[test]
fn zulip_js_reads_a_created_realm_as_its_owner() {
    let Some(node) = std::env::var_os("HEARTH_NODE") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "HEARTH_NODE must name a node (20 or later) under CI"
        );
        eprintln!("SKIPPED zulip_js_reads_a_created_realm_as_its_owner: HEARTH_NODE is not set");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (data, rc) = created_realm(dir.path(), "http://127.0.0.1:9991");
    let server = ChildServer::up(&["--data", data.to_str().unwrap()], &[]);
    write_zuliprc(&rc, "boss@acme.test", &rc_key(&rc), &server.url);
    let js = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js");
    let out = Command::new(node)
        .arg(js.join("first_start.js"))
        .arg(&rc)
        .current_dir(&js)
        .output()
        .unwrap();
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{said}");
    assert!(said.contains("zulip-js first_start: ok"), "{said}");
    server.stop();
}
