//! Outgoing-webhook bots (bot type 3): created and edited with their service, triggered
//! by a mention in a channel or a direct message, their service's answer posted back
//! by the bot, failures reported as Zulip reports them, private addresses refused, a
//! delivery pending at a `kill -9` made after the restart; and `/bot_storage`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use serde_json::{json, Value};

use crate::common::*;
use hearth::realm::ManualClock;

const OWNER: &str = "hamlet@zulip.com";
const OTHELLO: &str = "othello@zulip.com";

/// What the loopback bot service answers, and what it was sent.
#[derive(Default)]
struct Service {
    /// Answers in turn (status, body, delay before answering); then `fallback`.
    answers: VecDeque<(u16, String, u64)>,
    fallback: Option<(u16, String)>,
    /// Every request: content type and body.
    seen: Vec<(String, String)>,
}

type Shared = Arc<Mutex<Service>>;

async fn answer(req: HttpRequest, body: web::Bytes, state: web::Data<Shared>) -> HttpResponse {
    let (status, reply, delay) = {
        let mut s = state.lock().unwrap();
        let ct = req
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        s.seen
            .push((ct, String::from_utf8_lossy(&body).into_owned()));
        match s.answers.pop_front() {
            Some(a) => a,
            None => {
                let (st, b) = s
                    .fallback
                    .clone()
                    .unwrap_or((200, r#"{"response_not_required": true}"#.into()));
                (st, b, 0)
            }
        }
    };
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap())
        .content_type("application/json")
        .body(reply)
}

/// A bot service on loopback; its URL and state. Must run inside an actix System.
fn start_service() -> (String, Shared) {
    let state: Shared = Arc::new(Mutex::new(Service::default()));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let data = web::Data::new(state.clone());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .default_service(web::to(answer))
    })
    .workers(1)
    .listen(listener)
    .unwrap()
    .run();
    actix_web::rt::spawn(server);
    (format!("http://127.0.0.1:{port}/bot"), state)
}

/// An outgoing-webhook bot of `OWNER` posting to `url`: (id, email, token).
async fn outgoing_bot(s: &TestApp, url: &str, interface: &str) -> (i64, String, String) {
    let payload_url = serde_json::to_string(url).unwrap();
    let body = s
        .ok(
            "POST",
            "/api/v1/bots",
            OWNER,
            &[
                ("full_name", "Echo Bot"),
                ("short_name", "echo"),
                ("bot_type", "3"),
                ("payload_url", &payload_url),
                ("interface_type", interface),
            ],
        )
        .await;
    let id = body["user_id"].as_i64().unwrap();
    let state = s
        .ok(
            "POST",
            "/api/v1/register",
            OWNER,
            &[("fetch_event_types", r#"["realm_bot"]"#)],
        )
        .await;
    let bot = state["realm_bots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["user_id"] == id)
        .unwrap()
        .clone();
    let service = &bot["services"][0];
    assert_eq!(service["base_url"], url);
    assert_eq!(service["interface"], interface.parse::<i64>().unwrap());
    let token = service["token"].as_str().unwrap().to_owned();
    assert_eq!(token.len(), 32);
    (id, bot["email"].as_str().unwrap().to_owned(), token)
}

/// The newest messages of a narrow as `email` sees them.
async fn newest(s: &TestApp, email: &str, narrow: Value) -> Vec<Value> {
    let body = s
        .ok(
            "GET",
            "/api/v1/messages",
            email,
            &[
                ("anchor", "newest"),
                ("num_before", "20"),
                ("num_after", "0"),
                ("apply_markdown", "false"),
                ("narrow", &narrow.to_string()),
            ],
        )
        .await;
    body["messages"].as_array().unwrap().clone()
}

/// Waits for a message from `sender_id` in the narrow whose content contains `text`.
async fn wait_for_message(
    s: &TestApp,
    email: &str,
    narrow: Value,
    sender_id: i64,
    text: &str,
) -> Value {
    poll(Duration::from_secs(20), text, || {
        let narrow = narrow.clone();
        async move {
            newest(s, email, narrow).await.into_iter().find(|m| {
                m["sender_id"] == sender_id
                    && m["content"].as_str().is_some_and(|c| c.contains(text))
            })
        }
    })
    .await
}

async fn wait_for_requests(state: &Shared, n: usize) -> Vec<(String, String)> {
    poll(
        Duration::from_secs(20),
        "the service's requests",
        || async {
            let s = state.lock().unwrap();
            (s.seen.len() >= n).then(|| s.seen.clone())
        },
    )
    .await
}

fn topic_narrow(topic: &str) -> Value {
    json!([{"operator": "channel", "operand": "Verona"}, {"operator": "topic", "operand": topic}])
}

#[actix_web::test]
async fn an_outgoing_bot_is_created_with_its_service_and_checked_as_zulip_checks() {
    let s = TestApp::spawn().await;
    let base = [
        ("full_name", "Out Bot"),
        ("short_name", "out"),
        ("bot_type", "3"),
    ];
    let with = |extra: &'static [(&'static str, &'static str)]| {
        let mut p = base.to_vec();
        p.extend_from_slice(extra);
        p
    };
    s.bad(
        "POST",
        "/api/v1/bots",
        OWNER,
        &with(&[("payload_url", r#""not a url""#)]),
        "payload_url is not a URL",
    )
    .await;
    s.bad(
        "POST",
        "/api/v1/bots",
        OWNER,
        &with(&[
            ("payload_url", r#""https://bots.example/""#),
            ("interface_type", "3"),
        ]),
        "Invalid interface type",
    )
    .await;
    s.bad(
        "POST",
        "/api/v1/bots",
        OWNER,
        &[
            ("full_name", "Emb"),
            ("short_name", "emb"),
            ("bot_type", "4"),
        ],
        "Embedded bots are not enabled.",
    )
    .await;
    // Nothing was made by the refused requests.
    let bots = s.ok("GET", "/api/v1/bots", OWNER, &[]).await;
    assert_eq!(bots["bots"], json!([]));
    let queue = s.register(OWNER, &[]).await;
    let (id, _, token) = outgoing_bot(&s, "https://bots.example/hook", "2").await;
    // Editing the service: `realm_bot` `update` with the services.
    let r = s
        .ok(
            "PATCH",
            &format!("/api/v1/bots/{id}"),
            OWNER,
            &[
                ("service_payload_url", r#""https://bots.example/v2""#),
                ("service_interface", "1"),
            ],
        )
        .await;
    assert_eq!(r["service_payload_url"], "https://bots.example/v2");
    assert_eq!(r["service_interface"], 1);
    let me = s.ok("GET", "/api/v1/users/me", OWNER, &[]).await;
    assert_eq!(r["bot_owner"], me["email"]);
    let events = s.events(OWNER, &queue).await;
    let update = events
        .iter()
        .find(|e| e["type"] == "realm_bot" && e["op"] == "update")
        .expect("realm_bot update");
    assert_eq!(
        update["bot"],
        json!({"user_id": id, "services": [{"base_url": "https://bots.example/v2", "interface": 1, "token": token}]})
    );
    // Someone else's bot is not theirs to edit.
    s.bad(
        "PATCH",
        &format!("/api/v1/bots/{id}"),
        OTHELLO,
        &[("service_payload_url", r#""https://evil.example/""#)],
        "Insufficient permission",
    )
    .await;
    s.bad(
        "PATCH",
        "/api/v1/bots/999999",
        OWNER,
        &[("full_name", "X")],
        "No such bot",
    )
    .await;
}

#[actix_web::test]
async fn a_mention_is_delivered_in_zulips_format_and_the_answer_posted_by_the_bot() {
    let s = TestApp::spawn().await;
    let (url, service) = start_service();
    service.lock().unwrap().fallback = Some((200, r#"{"content": "pong **loud**"}"#.into()));
    let (bot_id, bot_email, token) = outgoing_bot(&s, &url, "1").await;
    let sent = s
        .ok(
            "POST",
            "/api/v1/messages",
            OWNER,
            &[
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", "bots"),
                ("content", "@**Echo Bot** ping <b>"),
            ],
        )
        .await;
    let message_id = sent["id"].as_i64().unwrap();
    let reply = wait_for_message(&s, OWNER, topic_narrow("bots"), bot_id, "pong").await;
    assert_eq!(reply["content"], "pong **loud**");
    assert_eq!(reply["client"], "OutgoingWebhookResponse");
    let seen = wait_for_requests(&service, 1).await;
    assert_eq!(seen.len(), 1, "one delivery: {seen:?}");
    assert_eq!(seen[0].0, "application/json");
    let p: Value = serde_json::from_str(&seen[0].1).unwrap();
    assert_eq!(p["bot_email"], bot_email);
    assert_eq!(p["bot_full_name"], "Echo Bot");
    assert_eq!(p["token"], token);
    assert_eq!(p["trigger"], "mention");
    assert_eq!(p["data"], "@**Echo Bot** ping <b>");
    let m = &p["message"];
    assert_eq!(m["id"], message_id);
    assert_eq!(m["content"], "@**Echo Bot** ping <b>");
    assert_eq!(m["content_type"], "text/x-markdown");
    assert_eq!(m["display_recipient"], "Verona");
    assert_eq!(m["subject"], "bots");
    assert_eq!(m["type"], "stream");
    let me = s.ok("GET", "/api/v1/users/me", OWNER, &[]).await;
    assert_eq!(m["sender_email"], me["email"]);
    assert!(m["rendered_content"]
        .as_str()
        .unwrap()
        .contains("&lt;b&gt;"));
    assert!(m["avatar_url"].is_string());
    // A message that does not mention the bot, and the bot's own reply, trigger nothing.
    s.ok(
        "POST",
        "/api/v1/messages",
        OWNER,
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "bots"),
            ("content", "no bot here, @_**Echo Bot** silently"),
        ],
    )
    .await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(service.lock().unwrap().seen.len(), 1);
}

#[actix_web::test]
async fn a_direct_message_triggers_it_and_the_answer_goes_to_the_conversation() {
    let s = TestApp::spawn().await;
    let (url, service) = start_service();
    {
        let mut st = service.lock().unwrap();
        st.answers
            .push_back((200, r#"{"response_not_required": true}"#.into(), 0));
        st.answers
            .push_back((200, r#"{"response_string": "old style"}"#.into(), 0));
    }
    let (bot_id, _, _) = outgoing_bot(&s, &url, "1").await;
    let dm = |text: &'static str| {
        let to = format!("[{bot_id}]");
        let s = &s;
        async move {
            s.ok(
                "POST",
                "/api/v1/messages",
                OWNER,
                &[("type", "direct"), ("to", &to), ("content", text)],
            )
            .await
        }
    };
    dm("first").await;
    let seen = wait_for_requests(&service, 1).await;
    let p: Value = serde_json::from_str(&seen[0].1).unwrap();
    assert_eq!(p["trigger"], "direct_message");
    assert_eq!(p["message"]["type"], "private");
    dm("second").await;
    let narrow = json!([{"operator": "dm", "operand": [bot_id]}]);
    let reply = wait_for_message(&s, OWNER, narrow.clone(), bot_id, "old style").await;
    assert_eq!(reply["type"], "private");
    // The first answer needed no reply: the bot said one thing only.
    let from_bot: Vec<Value> = newest(&s, OWNER, narrow)
        .await
        .into_iter()
        .filter(|m| m["sender_id"] == bot_id)
        .collect();
    assert_eq!(from_bot.len(), 1, "{from_bot:?}");
}

#[actix_web::test]
async fn failures_are_told_in_the_conversation_and_to_the_owner() {
    let s = TestApp::spawn().await;
    let (url, service) = start_service();
    {
        let mut st = service.lock().unwrap();
        st.answers.push_back((404, "nope".into(), 0));
        st.answers.push_back((200, "not json".into(), 0));
        // A 5xx is retried: three more 503s, then the last is reported.
        for _ in 0..4 {
            st.answers.push_back((503, "".into(), 0));
        }
    }
    let (bot_id, _, _) = outgoing_bot(&s, &url, "1").await;
    let owner_dm = json!([{"operator": "dm", "operand": [bot_id]}]);
    let mention = |topic: &'static str| {
        let s = &s;
        async move {
            s.ok(
                "POST",
                "/api/v1/messages",
                OWNER,
                &[
                    ("type", "stream"),
                    ("to", "Verona"),
                    ("topic", topic),
                    ("content", "@**Echo Bot** help"),
                ],
            )
            .await["id"]
                .as_i64()
                .unwrap()
        }
    };
    let first = mention("failing").await;
    wait_for_message(
        &s,
        OWNER,
        topic_narrow("failing"),
        bot_id,
        "Failure! Third party responded with 404",
    )
    .await;
    let notice = wait_for_message(&s, OWNER, owner_dm.clone(), bot_id, "status code *404*").await;
    let text = notice["content"].as_str().unwrap();
    assert!(
        text.starts_with("Your bot @_**Echo Bot** could not answer [a message](http"),
        "a link to the message: {text}"
    );
    assert!(
        text.contains(&format!(
            "/near/{first}): its service answered with status code *404*."
        )),
        "{text}"
    );
    assert!(
        text.ends_with("The answer was:\n```\nb'nope'\n```"),
        "{text}"
    );
    mention("garbled").await;
    wait_for_message(
        &s,
        OWNER,
        topic_narrow("garbled"),
        bot_id,
        "Failure! Invalid JSON in response",
    )
    .await;
    mention("down").await;
    wait_for_message(
        &s,
        OWNER,
        topic_narrow("down"),
        bot_id,
        "Failure! Third party responded with 503",
    )
    .await;
    // 1 (404) + 1 (not JSON) + 4 attempts of the last.
    assert_eq!(service.lock().unwrap().seen.len(), 6);
}

#[actix_web::test]
async fn an_address_on_a_private_network_is_refused() {
    let s = TestApp::spawn().await;
    // Cloud metadata: link-local, refused even on a development server.
    let (bot_id, _, _) = outgoing_bot(&s, "http://169.254.169.254/latest/meta-data", "1").await;
    s.ok(
        "POST",
        "/api/v1/messages",
        OWNER,
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "ssrf"),
            ("content", "@**Echo Bot** hello"),
        ],
    )
    .await;
    wait_for_message(
        &s,
        OWNER,
        topic_narrow("ssrf"),
        bot_id,
        "Failure! Third party responded with 407",
    )
    .await;
    wait_for_message(
        &s,
        OWNER,
        json!([{"operator": "dm", "operand": [bot_id]}]),
        bot_id,
        "its URL is on a private or disallowed network",
    )
    .await;
}

#[actix_web::test]
async fn the_slack_format_is_a_form_and_refuses_direct_messages() {
    let s = TestApp::spawn().await;
    let (url, service) = start_service();
    service.lock().unwrap().fallback = Some((200, r#"{"text": "slack says hi"}"#.into()));
    let (bot_id, _, token) = outgoing_bot(&s, &url, "2").await;
    s.ok(
        "POST",
        "/api/v1/messages",
        OWNER,
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "slack"),
            ("content", "@**Echo Bot** hi"),
        ],
    )
    .await;
    wait_for_message(&s, OWNER, topic_narrow("slack"), bot_id, "slack says hi").await;
    let seen = wait_for_requests(&service, 1).await;
    assert_eq!(seen[0].0, "application/x-www-form-urlencoded");
    let form: Vec<(String, String)> = serde_urlencoded::from_str(&seen[0].1).unwrap();
    let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(get("token"), Some(token));
    assert_eq!(get("channel_name").as_deref(), Some("Verona"));
    assert_eq!(get("text").as_deref(), Some("@**Echo Bot** hi"));
    assert_eq!(get("trigger_word").as_deref(), Some("mention"));
    assert!(get("channel_id").unwrap().starts_with('C'));
    s.ok(
        "POST",
        "/api/v1/messages",
        OWNER,
        &[
            ("type", "direct"),
            ("to", &format!("[{bot_id}]")),
            ("content", "hi"),
        ],
    )
    .await;
    wait_for_message(
        &s,
        OWNER,
        json!([{"operator": "dm", "operand": [bot_id]}]),
        bot_id,
        "Failure! Slack outgoing webhooks don't support direct messages.",
    )
    .await;
    assert_eq!(service.lock().unwrap().seen.len(), 1);
}

#[actix_web::test]
async fn bot_storage_keeps_strings_as_zulip_does() {
    let s = TestApp::spawn().await;
    s.ok(
        "PUT",
        "/api/v1/bot_storage",
        OWNER,
        &[("storage", r#"{"number": "1", "message_id": "null"}"#)],
    )
    .await;
    let got = s
        .ok(
            "GET",
            "/api/v1/bot_storage",
            OWNER,
            &[("keys", r#"["number"]"#)],
        )
        .await;
    assert_eq!(got["storage"], json!({"number": "1"}));
    let all = s.ok("GET", "/api/v1/bot_storage", OWNER, &[]).await;
    assert_eq!(all["storage"], json!({"message_id": "null", "number": "1"}));
    // Another user's storage is their own.
    let theirs = s.ok("GET", "/api/v1/bot_storage", OTHELLO, &[]).await;
    assert_eq!(theirs["storage"], json!({}));
    s.bad(
        "GET",
        "/api/v1/bot_storage",
        OWNER,
        &[("keys", r#"["missing"]"#)],
        "Key does not exist.",
    )
    .await;
    s.bad(
        "PUT",
        "/api/v1/bot_storage",
        OWNER,
        &[("storage", r#"{"number": 2}"#)],
        r#"storage["number"] is not a string"#,
    )
    .await;
    s.bad(
        "DELETE",
        "/api/v1/bot_storage",
        OWNER,
        &[("keys", r#"["number", "missing"]"#)],
        "Key does not exist.",
    )
    .await;
    // The refused removal removed nothing.
    let all = s.ok("GET", "/api/v1/bot_storage", OWNER, &[]).await;
    assert_eq!(all["storage"].as_object().unwrap().len(), 2);
    // Bodies are limited to 4 MiB: the limit is reached in three requests.
    let big = "x".repeat(3_400_000);
    for k in ["k1", "k2"] {
        let storage = serde_json::to_string(&json!({ k: big })).unwrap();
        s.ok(
            "PUT",
            "/api/v1/bot_storage",
            OWNER,
            &[("storage", &storage)],
        )
        .await;
    }
    let storage = serde_json::to_string(&json!({ "k3": big })).unwrap();
    // 6 + 1 + 10 + 4 stored, then 3 × 3,400,002: 200,027 over.
    let msg = s
        .err(
            "PUT",
            "/api/v1/bot_storage",
            OWNER,
            &[("storage", &storage)],
            400,
            "BAD_REQUEST",
            "Request exceeds storage limit by 200027 characters. The limit is 10000000 characters.",
        )
        .await;
    assert_eq!(msg["result"], "error");
    s.ok(
        "DELETE",
        "/api/v1/bot_storage",
        OWNER,
        &[("keys", r#"["number", "k1", "k2"]"#)],
    )
    .await;
    let all = s.ok("GET", "/api/v1/bot_storage", OWNER, &[]).await;
    assert_eq!(all["storage"], json!({"message_id": "null"}));
}

/// A delivery promised with its message survives a `kill -9` while its request is
/// in flight: the restarted server makes it again, and the bot's answer is posted.
#[actix_web::test]
async fn a_delivery_pending_at_kill_9_is_made_after_the_restart() {
    use crate::common::child::ChildServer;
    let (url, service) = start_service();
    {
        let mut st = service.lock().unwrap();
        // The first request is held past the kill; every later one answers.
        st.answers
            .push_back((200, r#"{"content": "too late"}"#.into(), 30_000));
        st.fallback = Some((200, r#"{"content": "answered after the restart"}"#.into()));
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap().to_owned();
    let server = ChildServer::up(&["--dev", "--data", &data], &[]);
    let http = client();
    let key = dev_key_at(&server.url, OWNER).await;
    let auth = basic(OWNER, &key);
    let payload_url = serde_json::to_string(&url).unwrap();
    let bot: Value = http
        .post(format!("{}/api/v1/bots", server.url))
        .header("authorization", &auth)
        .form(&[
            ("full_name", "Echo Bot"),
            ("short_name", "echo"),
            ("bot_type", "3"),
            ("payload_url", payload_url.as_str()),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let bot_id = bot["user_id"].as_i64().unwrap();
    let sent: Value = http
        .post(format!("{}/api/v1/messages", server.url))
        .header("authorization", &auth)
        .form(&[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "crash"),
            ("content", "@**Echo Bot** are you there"),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sent["result"], "success");
    wait_for_requests(&service, 1).await;
    server.kill_9();
    let server = ChildServer::up(&["--dev", "--data", &data], &[]);
    let seen = wait_for_requests(&service, 2).await;
    let first: Value = serde_json::from_str(&seen[0].1).unwrap();
    let again: Value = serde_json::from_str(&seen[1].1).unwrap();
    assert_eq!(first["message"]["id"], again["message"]["id"]);
    let found = poll(Duration::from_secs(20), "the bot's answer", || {
        let (http, url, auth) = (&http, &server.url, &auth);
        async move {
            let r: Value = http
                .get(format!("{url}/api/v1/messages"))
                .header("authorization", auth)
                .query(&[
                    ("anchor", "newest"),
                    ("num_before", "10"),
                    ("num_after", "0"),
                    ("apply_markdown", "false"),
                    ("narrow", &topic_narrow("crash").to_string()),
                ])
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            r["messages"]
                .as_array()?
                .iter()
                .find(|m| m["sender_id"] == bot_id)
                .cloned()
        }
    })
    .await;
    assert_eq!(found["content"], "answered after the restart");
    server.stop();
}

/// A scheduled message that mentions the bot triggers it when it is sent, as a send
/// does.
#[actix_web::test]
async fn a_scheduled_message_triggers_the_bot_when_it_is_sent() {
    const START_MS: i64 = 1_800_000_000_000;
    let clock = ManualClock::new(START_MS);
    let s = TestApp::spawn_with_clock(clock.clone()).await;
    let (url, service) = start_service();
    service.lock().unwrap().fallback = Some((200, r#"{"content": "on time"}"#.into()));
    let (bot_id, _, _) = outgoing_bot(&s, &url, "1").await;
    let stream_id = s.stream_id("Verona").await.to_string();
    let at = (START_MS / 1000 + 60).to_string();
    s.ok(
        "POST",
        "/api/v1/scheduled_messages",
        OWNER,
        &[
            ("type", "stream"),
            ("to", &stream_id),
            ("topic", "later"),
            ("content", "@**Echo Bot** wake up"),
            ("scheduled_delivery_timestamp", &at),
        ],
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        service.lock().unwrap().seen.is_empty(),
        "not before it is sent"
    );
    clock.advance_ms(60_000);
    s.deliver_scheduled().await;
    let seen = wait_for_requests(&service, 1).await;
    let p: Value = serde_json::from_str(&seen[0].1).unwrap();
    assert_eq!(p["data"], "@**Echo Bot** wake up");
    assert_eq!(p["message"]["client"], "Scheduled message");
    wait_for_message(&s, OWNER, topic_narrow("later"), bot_id, "on time").await;
}
