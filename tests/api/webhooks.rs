//! Incoming webhooks (`POST /api/v1/external/<integration>`): the services' documented
//! example payloads (`tests/fixtures/webhooks/<integration>/`, copies of the examples
//! in each service's documentation, some trimmed of URL templates no integration
//! reads) posted as the services post them, and the messages they become read back;
//! Zulip's answers for what goes wrong; what an incoming webhook bot may do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use crate::common::*;
use reqwest::Method;
use serde_json::{json, Value};

const OWNER: &str = "hamlet@zulip.com";

/// An incoming webhook bot of `OWNER`: its email and key.
async fn webhook_bot(s: &TestApp) -> (String, String) {
    let (email, key, _) = webhook_bot_with_id(s).await;
    (email, key)
}

/// `webhook_bot`, and the bot's id.
async fn webhook_bot_with_id(s: &TestApp) -> (String, String, i64) {
    let body = s
        .ok(
            "POST",
            "/api/v1/bots",
            OWNER,
            &[
                ("full_name", "Hook Bot"),
                ("short_name", "hook"),
                ("bot_type", "2"),
            ],
        )
        .await;
    let key = body["api_key"].as_str().unwrap().to_owned();
    let id = body["user_id"].as_i64().unwrap();
    let user = s
        .ok("GET", &format!("/api/v1/users/{id}"), OWNER, &[])
        .await;
    (user["user"]["email"].as_str().unwrap().to_owned(), key, id)
}

fn fixture(integration: &str, name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/webhooks")
        .join(integration)
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One post to a webhook URL.
struct Hook<'a> {
    integration: &'a str,
    query: Vec<(&'a str, String)>,
    headers: Vec<(&'a str, &'a str)>,
    content_type: &'a str,
    body: Vec<u8>,
}

impl<'a> Hook<'a> {
    /// A JSON body for `integration`, to channel Verona, with the bot's key.
    fn json(integration: &'a str, key: &str, body: Vec<u8>) -> Hook<'a> {
        Hook {
            integration,
            query: vec![("api_key", key.to_owned()), ("stream", "Verona".to_owned())],
            headers: Vec::new(),
            content_type: "application/json",
            body,
        }
    }

    fn header(mut self, name: &'a str, value: &'a str) -> Self {
        self.headers.push((name, value));
        self
    }

    fn param(mut self, name: &'a str, value: &str) -> Self {
        self.query.push((name, value.to_owned()));
        self
    }

    async fn post(self, s: &TestApp) -> Reply {
        let path = format!("/api/v1/external/{}", self.integration);
        let mut rb = s
            .request(Method::POST, &path, Auth::None)
            .query(&self.query)
            .header("Content-Type", self.content_type)
            .body(self.body);
        for (name, value) in self.headers {
            rb = rb.header(name, value);
        }
        send(rb).await
    }
}

/// The newest message of channel Verona as `OWNER` reads it: topic and raw content.
async fn newest_in_verona(s: &TestApp) -> (i64, String, String) {
    newest(s, json!([{"operator": "channel", "operand": "Verona"}])).await
}

async fn newest(s: &TestApp, narrow: Value) -> (i64, String, String) {
    let narrow = narrow.to_string();
    let body = s
        .ok(
            "GET",
            "/api/v1/messages",
            OWNER,
            &[
                ("narrow", &narrow),
                ("anchor", "newest"),
                ("num_before", "1"),
                ("num_after", "0"),
                ("apply_markdown", "false"),
            ],
        )
        .await;
    let m = &body["messages"][0];
    (
        m["id"].as_i64().unwrap_or(-1),
        m["subject"].as_str().unwrap_or_default().to_owned(),
        m["content"].as_str().unwrap_or_default().to_owned(),
    )
}

/// An integration's example, what it is posted with, and the message it becomes.
struct Case {
    integration: &'static str,
    fixture: &'static str,
    /// The event header and its value, if the service sends one.
    header: Option<(&'static str, &'static str)>,
    topic: &'static str,
    content: &'static str,
}

/// Posts each case's example to Verona and checks the message it became.
async fn run(s: &TestApp, key: &str, cases: &[Case]) {
    for c in cases {
        let mut hook = Hook::json(c.integration, key, fixture(c.integration, c.fixture));
        if let Some((name, value)) = c.header {
            hook = hook.header(name, value);
        }
        let reply = hook.post(s).await;
        let label = format!("{} {}", c.integration, c.fixture);
        assert_eq!(reply.0.as_u16(), 200, "{label}: {}", reply.2);
        assert_eq!(reply.2, json!({"result": "success", "msg": ""}), "{label}");
        let (_, topic, content) = newest_in_verona(s).await;
        assert_eq!(topic, c.topic, "{label}");
        assert_eq!(content, c.content, "{label}");
    }
}

// ---- json and slack_incoming -------------------------------------------------------

#[actix_web::test]
async fn json_posts_any_body_as_a_code_block() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    // As `curl -X POST -H 'Content-Type: application/json' -d '{...}'` posts it.
    let reply = Hook::json(
        "json",
        &key,
        br#"{"deploy": {"app": "web", "ok": true}}"#.to_vec(),
    )
    .post(&s)
    .await;
    assert_success(&reply);
    let (_, topic, content) = newest_in_verona(&s).await;
    assert_eq!(topic, "JSON");
    assert_eq!(
        content,
        "```json\n{\n  \"deploy\": {\n    \"app\": \"web\",\n    \"ok\": true\n  }\n}\n```"
    );
    // `topic=` names the topic.
    let reply = Hook::json("json", &key, b"[1, 2]".to_vec())
        .param("topic", "deploys")
        .post(&s)
        .await;
    assert_success(&reply);
    let (_, topic, content) = newest_in_verona(&s).await;
    assert_eq!(topic, "deploys");
    assert_eq!(content, "```json\n[\n  1,\n  2\n]\n```");
}

#[actix_web::test]
async fn slack_incoming_takes_json_bodies_and_payload_forms() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    // As a script posts to a Slack URL: `curl -d '{"text": "..."}'`.
    let reply = Hook::json(
        "slack_incoming",
        &key,
        br#"{"text": "Build *passed* on <https://ci.example.com/7|run 7>"}"#.to_vec(),
    )
    .param("topic", "ci")
    .post(&s)
    .await;
    assert_success(&reply);
    let (_, topic, content) = newest_in_verona(&s).await;
    assert_eq!(topic, "ci");
    assert_eq!(
        content,
        "Build **passed** on [run 7](https://ci.example.com/7)"
    );

    run(
        &s,
        &key,
        &[
            Case {
                integration: "slack_incoming",
                fixture: "text.json",
                header: None,
                topic: "general chat",
                content: "Hello, world.",
            },
            Case {
                integration: "slack_incoming",
                fixture: "attachment_fields.json",
                header: None,
                topic: "general chat",
                content: "Build bla bla succeeded\n\n\
                          **Requested by**: Some user\n**Duration**: 00:02:03\n\
                          **Build pipeline**: ConsumerAddressModule\n\
                          **Title without value**\nValue without title",
            },
            Case {
                integration: "slack_incoming",
                fixture: "blocks.json",
                header: None,
                topic: "general chat",
                content: "Danny Torrence left the following review for your property:\n\n\
                          [Overlook Hotel](https://example.com) \n :star: \n Doors had too many \
                          axe holes, guest in room 237 was far too rowdy, whole place felt stuck \
                          in the 1920s.\n\n\
                          [Haunted hotel image](https://is5-ssl.mzstatic.com/image/thumb/Purple3/\
                          v4/d3/72/5c/d3725c8f-c642-5d69-1904-aa36e4297885/source/256x256bb.jpg)\n\n\
                          **Average Rating**\n1.0",
            },
        ],
    )
    .await;

    // A form whose `payload` holds the JSON; the topic is its `channel`.
    let mut form = Hook::json(
        "slack_incoming",
        &key,
        fixture("slack_incoming", "urlencoded_text.txt"),
    );
    form.content_type = "application/x-www-form-urlencoded";
    assert_success(&form.post(&s).await);
    let (_, topic, content) = newest_in_verona(&s).await;
    assert_eq!(topic, "devops");
    assert_eq!(
        content,
        ":zap: chris has started deploying project tag v0.0.2rc10 to staging"
    );

    // A form without `payload`.
    let mut form = Hook::json("slack_incoming", &key, b"text=hi".to_vec());
    form.content_type = "application/x-www-form-urlencoded";
    let reply = form.post(&s).await;
    assert_error(
        &reply,
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'payload' argument",
    );
    assert_eq!(reply.2["var_name"], "payload");
}

// ---- GitHub --------------------------------------------------------------------------

#[actix_web::test]
async fn github_examples_become_their_messages() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    run(
        &s,
        &key,
        &[
            Case {
                integration: "github",
                fixture: "push__force_1_commit.json",
                header: Some(("X-GitHub-Event", "push")),
                topic: "zulip / temp",
                content:
                    "sbansal1999 [force pushed 1 commit](https://github.com/sbansal1999/zulip/\
                          compare/b6de8891fc10...971d76ca3094) to branch temp.\n\n\
                          * log: Add important.txt which is useful for logging errors. \
                          ([971d76ca309](https://github.com/sbansal1999/zulip/commit/\
                          971d76ca309446a9c20381f6271cea8a59b4e40a))",
            },
            Case {
                integration: "github",
                fixture: "push__delete_branch.json",
                header: Some(("X-GitHub-Event", "push")),
                topic: "public-repo / feature",
                content: "eeshangarg [deleted](https://github.com/eeshangarg/public-repo/compare/\
                          2e8cf535fb38...000000000000) the branch feature.",
            },
            Case {
                integration: "github",
                fixture: "pull_request__opened.json",
                header: Some(("X-GitHub-Event", "pull_request")),
                topic: "public-repo / PR #1 Update the README with new information",
                content: "baxterthehacker opened [PR #1](https://github.com/baxterthehacker/\
                          public-repo/pull/1) from `baxterthehacker:changes` to \
                          `baxterthehacker:master`:\n\n~~~ quote\nThis is a pretty simple change \
                          that we need to pull into master.\n~~~",
            },
            Case {
                integration: "github",
                fixture: "pull_request__closed.json",
                header: Some(("X-GitHub-Event", "pull_request")),
                topic: "public-repo / PR #1 Update the README with new information",
                content: "baxterthehacker merged [PR #1](https://github.com/baxterthehacker/\
                          public-repo/pull/1).",
            },
            Case {
                integration: "github",
                fixture: "ping.json",
                header: Some(("X-GitHub-Event", "ping")),
                topic: "Hello-World",
                content: "Codertocat connected this GitHub webhook: its notifications arrive here.",
            },
            Case {
                integration: "github",
                fixture: "issues__opened.json",
                header: Some(("X-GitHub-Event", "issues")),
                // Cut at 60 characters, as every topic is.
                topic: "zulip-test / issue #33 This is a very long Issue title to...",
                content: "DhruvShetty22 opened [issue #33](https://github.com/DhruvShetty22/\
                          zulip-test/issues/33):\n\n~~~ quote\nIt looks like you accidentally \
                          spelled 'commit' with two 't's.\n~~~",
            },
            Case {
                integration: "github",
                fixture: "issue_comment.json",
                header: Some(("X-GitHub-Event", "issue_comment")),
                topic: "public-repo / issue #2 Spelling error in the README file",
                content: "baxterthehacker [commented](https://github.com/baxterthehacker/\
                          public-repo/issues/2#issuecomment-99262140) on [issue #2](https://\
                          github.com/baxterthehacker/public-repo/issues/2):\n\n~~~ quote\n\
                          You are totally right! I'll get this fixed right away.\n~~~",
            },
        ],
    )
    .await;
}

#[actix_web::test]
async fn github_topics_filters_and_errors() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    let issue = || fixture("github", "issue_comment.json");

    // A topic named in the URL: the message names the issue's title.
    let reply = Hook::json("github", &key, issue())
        .header("X-GitHub-Event", "issue_comment")
        .param("topic", "triage")
        .post(&s)
        .await;
    assert_success(&reply);
    let (before, topic, content) = newest_in_verona(&s).await;
    assert_eq!(topic, "triage");
    assert!(
        content.contains("[issue #2 Spelling error in the README file]("),
        "{content}"
    );

    // Filters: `only_events` and `exclude_events` take shell patterns of event types;
    // a filtered event, a branch left out and an ignored action answer success and
    // send nothing.
    let quiet: Vec<Hook<'_>> = vec![
        Hook::json("github", &key, issue())
            .header("X-GitHub-Event", "issue_comment")
            .param("only_events", r#"["push_*", "issues"]"#),
        Hook::json("github", &key, issue())
            .header("X-GitHub-Event", "issue_comment")
            .param("exclude_events", r#"["issue_*"]"#),
        Hook::json(
            "github",
            &key,
            fixture("github", "push__force_1_commit.json"),
        )
        .header("X-GitHub-Event", "push")
        .param("branches", "main,release"),
        Hook::json(
            "github",
            &key,
            br#"{"action": "labeled", "pull_request": {}}"#.to_vec(),
        )
        .header("X-GitHub-Event", "pull_request"),
        Hook::json("github", &key, br#"{"action": "created"}"#.to_vec())
            .header("X-GitHub-Event", "milestone"),
    ];
    for hook in quiet {
        let reply = hook.post(&s).await;
        assert_eq!(reply.2, json!({"result": "success", "msg": ""}));
    }
    assert_eq!(newest_in_verona(&s).await.0, before, "nothing was sent");
    // A pattern that matches lets the event through.
    let reply = Hook::json("github", &key, issue())
        .header("X-GitHub-Event", "issue_comment")
        .param("only_events", r#"["issue_*"]"#)
        .post(&s)
        .await;
    assert_success(&reply);
    assert_ne!(newest_in_verona(&s).await.0, before);

    // Without the event header.
    let reply = Hook::json("github", &key, issue()).post(&s).await;
    assert_error(
        &reply,
        400,
        "MISSING_HTTP_EVENT_HEADER",
        "Missing the HTTP event header 'X-GitHub-Event'",
    );
    assert_eq!(reply.2["header"], "X-GitHub-Event");
    // An event GitHub sends that has no message (answered with 200, so GitHub does not
    // retry it).
    let reply = Hook::json("github", &key, br#"{"action": "requested"}"#.to_vec())
        .header("X-GitHub-Event", "workflow_run")
        .post(&s)
        .await;
    assert_error(
        &reply,
        200,
        "UNSUPPORTED_WEBHOOK_EVENT_TYPE",
        "The 'workflow_run:requested' event isn't currently supported by the GitHub webhook; ignoring",
    );
    assert_eq!(reply.2["webhook_name"], "GitHub");
    assert_eq!(reply.2["event_type"], "workflow_run:requested");
    // A body that is not JSON.
    let reply = Hook::json("github", &key, b"ref=refs/heads/main".to_vec())
        .header("X-GitHub-Event", "push")
        .post(&s)
        .await;
    assert_error(&reply, 400, "INVALID_JSON", "Malformed JSON");
    // JSON that is not GitHub's.
    let reply = Hook::json("github", &key, br#"{"action": "opened"}"#.to_vec())
        .header("X-GitHub-Event", "issues")
        .post(&s)
        .await;
    assert_error(
        &reply,
        400,
        "ANOMALOUS_WEBHOOK_PAYLOAD",
        "Unable to parse request: Did GitHub generate this event?",
    );
    assert_eq!(reply.2["webhook_name"], "GitHub");
    assert_eq!(newest_in_verona(&s).await.0, before + 1);
}

// ---- the URL: credentials, channel, errors ---------------------------------------------

#[actix_web::test]
async fn webhook_urls_answer_as_zulip() {
    let s = TestApp::spawn().await;
    let (bot_email, key, bot_id) = webhook_bot_with_id(&s).await;
    let body = || br#"{"a": 1}"#.to_vec();

    // An unknown integration is an unknown URL.
    let reply = Hook::json("nonexistent", &key, body()).post(&s).await;
    assert_error(&reply, 404, "NOT_FOUND", "Not Found");

    // Credentials: the key in the URL, else Basic credentials, else none.
    let mut no_key = Hook::json("json", &key, body());
    no_key.query.retain(|(name, _)| *name != "api_key");
    let reply = no_key.post(&s).await;
    assert_error(
        &reply,
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'api_key' argument",
    );
    assert_eq!(reply.2["var_name"], "api_key");
    for (bad_key, code, msg) in [
        ("short", "INVALID_API_KEY", "Malformed API key"),
        (
            "abcdefghijklmnopqrstuvwxyz012345",
            "INVALID_API_KEY",
            "Invalid API key",
        ),
    ] {
        let reply = Hook::json("json", bad_key, body()).post(&s).await;
        assert_error(&reply, 401, code, msg);
    }
    let basic = send(
        s.request(
            Method::POST,
            "/api/v1/external/json?stream=Verona&topic=basic",
            Auth::Basic(&bot_email, &key),
        )
        .header("Content-Type", "application/json")
        .body(body()),
    )
    .await;
    assert_success(&basic);
    assert_eq!(newest_in_verona(&s).await.1, "basic");

    // A channel by id.
    let verona = s.stream_id("Verona").await.to_string();
    let mut by_id = Hook::json("json", &key, body()).param("topic", "by id");
    by_id.query.retain(|(name, _)| *name != "stream");
    let reply = by_id.param("stream", &verona).post(&s).await;
    assert_success(&reply);
    assert_eq!(newest_in_verona(&s).await.1, "by id");

    // A channel that does not exist: success, and nothing is sent (the service could
    // not fix it by retrying).
    let before = newest_in_verona(&s).await.0;
    for channel in ["no such channel", "987654"] {
        let mut missing = Hook::json("json", &key, body());
        missing.query.retain(|(name, _)| *name != "stream");
        let reply = missing.param("stream", channel).post(&s).await;
        assert_eq!(
            reply.2,
            json!({"result": "success", "msg": ""}),
            "{channel}"
        );
    }
    assert_eq!(newest_in_verona(&s).await.0, before);

    // No channel: a direct message to the bot's owner, unread for the owner.
    let mut direct = Hook::json("json", &key, br#"{"to": "owner"}"#.to_vec());
    direct.query.retain(|(name, _)| *name != "stream");
    assert_success(&direct.post(&s).await);
    let (id, _, content) = newest(&s, json!([{"operator": "dm", "operand": [bot_id]}])).await;
    assert!(id > 0, "no direct message");
    assert_eq!(content, "```json\n{\n  \"to\": \"owner\"\n}\n```");
    let flags = s
        .ok("GET", &format!("/api/v1/messages/{id}"), OWNER, &[])
        .await;
    assert_eq!(flags["message"]["flags"], json!([]), "unread for the owner");
}

#[actix_web::test]
async fn incoming_webhook_bots_may_only_send_messages() {
    let s = TestApp::spawn().await;
    let (bot_email, key) = webhook_bot(&s).await;
    let as_bot = |method: Method, path: &'static str, params: Vec<(&'static str, String)>| {
        let rb = s.request(method.clone(), path, Auth::Basic(&bot_email, &key));
        if method == Method::GET {
            rb.query(&params)
        } else {
            rb.form(&params)
        }
    };
    for (method, path) in [
        (Method::GET, "/api/v1/users/me"),
        (Method::GET, "/api/v1/messages"),
        (Method::POST, "/api/v1/register"),
        (Method::POST, "/api/v1/users/me/subscriptions"),
    ] {
        let reply = send(as_bot(method.clone(), path, Vec::new())).await;
        assert_error(
            &reply,
            400,
            "BAD_REQUEST",
            "This API is not available to incoming webhook bots.",
        );
    }
    let reply = send(as_bot(
        Method::POST,
        "/api/v1/messages",
        vec![
            ("type", "stream".to_owned()),
            ("to", "Verona".to_owned()),
            ("topic", "from the bot".to_owned()),
            ("content", "sent through the API".to_owned()),
        ],
    ))
    .await;
    assert_success(&reply);
    let (_, topic, content) = newest_in_verona(&s).await;
    assert_eq!(
        (topic.as_str(), content.as_str()),
        ("from the bot", "sent through the API")
    );
}

#[actix_web::test]
async fn a_webhook_message_is_durable_and_sends_events() {
    let mut s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    let queue = s
        .register(OWNER, &[("event_types", r#"["message"]"#)])
        .await;
    let reply = Hook::json("github", &key, fixture("github", "issue_comment.json"))
        .header("X-GitHub-Event", "issue_comment")
        .post(&s)
        .await;
    assert_success(&reply);
    let events = s.events(OWNER, &queue).await;
    let sent: Vec<&Value> = events.iter().filter(|e| e["type"] == "message").collect();
    assert_eq!(sent.len(), 1, "{events:?}");
    assert_eq!(
        sent[0]["message"]["subject"],
        "public-repo / issue #2 Spelling error in the README file"
    );
    assert_eq!(sent[0]["message"]["client"], "ZulipGitHubWebhook");
    let before = newest_in_verona(&s).await;
    s.restart().await;
    assert_eq!(newest_in_verona(&s).await, before);
}

/// A webhook message answered `success` survives a `kill -9` of the process right
/// after the answer (durability `always`, the default).
#[actix_web::test]
async fn a_webhook_message_survives_kill_9() {
    use crate::common::child::ChildServer;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap().to_owned();
    let server = ChildServer::up(&["--dev", "--data", &data], &[]);
    let owner_key = dev_key_at(&server.url, OWNER).await;
    let http = client();
    let bot: Value = http
        .post(format!("{}/api/v1/bots", server.url))
        .header("authorization", basic(OWNER, &owner_key))
        .form(&[
            ("full_name", "Hook Bot"),
            ("short_name", "hook"),
            ("bot_type", "2"),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let key = bot["api_key"].as_str().unwrap().to_owned();
    let r = http
        .post(format!("{}/api/v1/external/json", server.url))
        .query(&[
            ("api_key", key.as_str()),
            ("stream", "Verona"),
            ("topic", "crash"),
        ])
        .header("content-type", "application/json")
        .body(r#"{"build": "green", "id": 4242}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    server.kill_9();
    let server = ChildServer::up(&["--dev", "--data", &data], &[]);
    let found: Value = http
        .get(format!("{}/api/v1/messages", server.url))
        .header("authorization", basic(OWNER, &owner_key))
        .query(&[
            ("anchor", "newest"),
            ("num_before", "1"),
            ("num_after", "0"),
            ("apply_markdown", "false"),
            (
                "narrow",
                r#"[{"operator": "channel", "operand": "Verona"}, {"operator": "topic", "operand": "crash"}]"#,
            ),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let m = &found["messages"][0];
    assert_eq!(m["sender_id"], bot["user_id"]);
    assert!(m["content"].as_str().unwrap().contains("4242"), "{m}");
    server.stop();
}

/// A webhook (or any send of a bot) to a channel that does not exist: the service is
/// answered success, and the bot's owner is told by the Notification Bot, at most once
/// a minute per bot.
#[actix_web::test]
async fn the_owner_is_told_when_a_bot_names_a_missing_channel() {
    let s = TestApp::spawn().await;
    let (email, key) = webhook_bot(&s).await;
    let notification_bot = json!([{"operator": "dm", "operand": ["notification-bot@zulip.com"]}]);
    let before = newest(&s, notification_bot.clone()).await.0;
    for _ in 0..2 {
        let mut hook = Hook::json("json", &key, br#"{"a": 1}"#.to_vec());
        hook.query = vec![("api_key", key.clone()), ("stream", "Nowhere".to_owned())];
        assert_success(&hook.post(&s).await);
    }
    let (id, _, content) = poll(Duration::from_secs(10), "the owner's notice", || {
        let (s, narrow) = (&s, notification_bot.clone());
        async move { Some(newest(s, narrow).await).filter(|m| m.0 > before) }
    })
    .await;
    assert_eq!(
        content,
        format!(
            "Your bot `{email}` sent a message to the channel #**Nowhere**, which does not \
             exist, so it was not sent. Create the channel, or change where the bot sends."
        )
    );
    // The second failure within the minute told no one again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(newest(&s, notification_bot.clone()).await.0, id);
    // Another bot's send by id through `POST /messages`: its own notice.
    let body = s
        .ok(
            "POST",
            "/api/v1/bots",
            OWNER,
            &[("full_name", "Poster Bot"), ("short_name", "poster")],
        )
        .await;
    let poster_key = body["api_key"].as_str().unwrap().to_owned();
    let poster = s
        .ok(
            "GET",
            &format!("/api/v1/users/{}", body["user_id"]),
            OWNER,
            &[],
        )
        .await["user"]["email"]
        .as_str()
        .unwrap()
        .to_owned();
    let reply = send(
        s.request(
            Method::POST,
            "/api/v1/messages",
            Auth::Basic(&poster, &poster_key),
        )
        .form(&[
            ("type", "stream"),
            ("to", "9999"),
            ("topic", "t"),
            ("content", "hi"),
        ]),
    )
    .await;
    assert_error(
        &reply,
        400,
        "STREAM_DOES_NOT_EXIST",
        "Channel with ID '9999' does not exist",
    );
    let (_, _, content) = poll(Duration::from_secs(10), "the second notice", || {
        let (s, narrow) = (&s, notification_bot.clone());
        async move { Some(newest(s, narrow).await).filter(|m| m.0 > id) }
    })
    .await;
    assert!(content.contains("the channel with ID 9999"), "{content}");
    let second = newest(&s, notification_bot.clone()).await.0;
    // A post without the service's event header: refused, and the owner told.
    let body = s
        .ok(
            "POST",
            "/api/v1/bots",
            OWNER,
            &[
                ("full_name", "Git Bot"),
                ("short_name", "git"),
                ("bot_type", "2"),
            ],
        )
        .await;
    let git_key = body["api_key"].as_str().unwrap().to_owned();
    let reply = Hook::json("github", &git_key, fixture("github", "issue_comment.json"))
        .post(&s)
        .await;
    assert_error(
        &reply,
        400,
        "MISSING_HTTP_EVENT_HEADER",
        "Missing the HTTP event header 'X-GitHub-Event'",
    );
    let (_, _, content) = poll(Duration::from_secs(10), "the header notice", || {
        let (s, narrow) = (&s, notification_bot.clone());
        async move { Some(newest(s, narrow).await).filter(|m| m.0 > second) }
    })
    .await;
    assert!(
        content.contains("at `/api/v1/external/github` without the HTTP header `X-GitHub-Event`, which is how GitHub names its events"),
        "{content}"
    );
}

// ---- GitLab --------------------------------------------------------------------------

#[actix_web::test]
async fn gitlab_examples_become_their_messages() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    let gitlab = "https://gitlab.com/tomaszkolek0/my-awesome-project";
    let push = format!(
        "Tomasz Kolek [pushed 2 commits]({gitlab}/-/compare/\
         5fcdd5551fc3085df79bece2c32b1400802ac407...eb6ae1e591e0819dc5bf187c6bfe18ec065a80e9) \
         to branch tomek.\n\n\
         * b ([66abd2da288]({gitlab}/commit/66abd2da28809ffa128ed0447965cf11d7f863a7))\n\
         * c ([eb6ae1e591e]({gitlab}/commit/eb6ae1e591e0819dc5bf187c6bfe18ec065a80e9))"
    );
    let push: &'static str = Box::leak(push.into_boxed_str());
    let header = |value| Some(("X-Gitlab-Event", value));
    run(
        &s,
        &key,
        &[
            Case {
                integration: "gitlab",
                fixture: "push_hook.json",
                header: header("Push Hook"),
                topic: "my-awesome-project / tomek",
                content: push,
            },
            Case {
                integration: "gitlab",
                fixture: "issue_hook__issue_reopened.json",
                header: header("Issue Hook"),
                topic: "my-awesome-project / issue #1 Issue title_new",
                content: "Tomasz Kolek reopened [issue #1](https://gitlab.com/tomaszkolek0/\
                          my-awesome-project/issues/1).",
            },
            Case {
                integration: "gitlab",
                fixture: "merge_request_hook__opened.json",
                header: header("Merge Request Hook"),
                topic: "Gitlab Test / MR #1 MS-Viewport",
                content: "Administrator created [MR #1](http://example.com/diaspora/\
                          merge_requests/1) from `ms-viewport` to `master` (assigned to User1).",
            },
            Case {
                integration: "gitlab",
                fixture: "note_hook__merge_request_note.json",
                header: header("Note Hook"),
                topic: "Gitlab Test / MR #1 Tempora et eos debitis quae laborum et.",
                content: "Administrator [commented](http://example.com/gitlab-org/gitlab-test/\
                          merge_requests/1#note_1244) on [MR #1](http://example.com/gitlab-org/\
                          gitlab-test/-/merge_requests/1):\n\n~~~ quote\nThis MR needs work.\n~~~",
            },
            Case {
                integration: "gitlab",
                fixture: "pipeline_hook__success.json",
                header: header("Pipeline Hook"),
                topic: "Gitlab Test / master",
                content: "[Pipeline (#31)](http://192.168.64.1:3005/gitlab-org/gitlab-test/-/\
                          pipelines/31) changed status to success with build(s):\n\
                          * [production](http://192.168.64.1:3005/gitlab-org/gitlab-test/-/jobs/\
                          380) - skipped\n\
                          * [test-image](http://192.168.64.1:3005/gitlab-org/gitlab-test/-/jobs/\
                          377) - success\n\
                          * [test-build](http://192.168.64.1:3005/gitlab-org/gitlab-test/-/jobs/\
                          378) - success",
            },
        ],
    )
    .await;

    // A topic named in the URL: the message names the project and the issue's title.
    let reply = Hook::json(
        "gitlab",
        &key,
        fixture("gitlab", "issue_hook__issue_reopened.json"),
    )
    .header("X-Gitlab-Event", "Issue Hook")
    .param("topic", "gitlab")
    .post(&s)
    .await;
    assert_success(&reply);
    let (_, topic, content) = newest_in_verona(&s).await;
    assert_eq!(topic, "gitlab");
    assert_eq!(
        content,
        format!("[[my-awesome-project]({gitlab})] Tomasz Kolek reopened [issue #1 Issue title_new]({gitlab}/issues/1).")
    );
    // Pushes to other branches than `branches` names send nothing.
    let before = newest_in_verona(&s).await.0;
    let reply = Hook::json("gitlab", &key, fixture("gitlab", "push_hook.json"))
        .header("X-Gitlab-Event", "Push Hook")
        .param("branches", "master")
        .post(&s)
        .await;
    assert_success(&reply);
    // `only_events` with GitLab's event names.
    let reply = Hook::json("gitlab", &key, fixture("gitlab", "push_hook.json"))
        .header("X-Gitlab-Event", "Push Hook")
        .param("only_events", r#"["Merge Request Hook *"]"#)
        .post(&s)
        .await;
    assert_success(&reply);
    assert_eq!(newest_in_verona(&s).await.0, before);

    let reply = Hook::json("gitlab", &key, br#"{"object_kind": "wiki_page"}"#.to_vec())
        .header("X-Gitlab-Event", "Wiki Page Hook")
        .post(&s)
        .await;
    assert_error(
        &reply,
        200,
        "UNSUPPORTED_WEBHOOK_EVENT_TYPE",
        "The 'Wiki Page Hook' event isn't currently supported by the GitLab webhook; ignoring",
    );
    assert_eq!(reply.2["event_type"], "Wiki Page Hook");
    let reply = Hook::json("gitlab", &key, fixture("gitlab", "push_hook.json"))
        .post(&s)
        .await;
    assert_error(
        &reply,
        400,
        "MISSING_HTTP_EVENT_HEADER",
        "Missing the HTTP event header 'X-Gitlab-Event'",
    );
}

// ---- Gitea and Forgejo -------------------------------------------------------------

#[actix_web::test]
async fn gitea_and_forgejo_examples_become_their_messages() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    for (integration, header) in [("gitea", "X-Gitea-Event"), ("forgejo", "X-Forgejo-Event")] {
        for (fixture_name, event, topic, content) in [
            (
                "push.json",
                "push",
                "webhooks / develop",
                "gitea [pushed 1 commit](http://localhost:3000/gitea/webhooks/compare/\
                 28e1879d029cb852e4844d9c718537df08844e03...\
                 bffeb74224043ba2feb48d137756c8a9331c449a) to branch develop.\n\n\
                 * Webhooks Yay! ([bffeb742240](http://localhost:3000/gitea/webhooks/commit/\
                 bffeb74224043ba2feb48d137756c8a9331c449a))",
            ),
            (
                "pull_request__opened.json",
                "pull_request",
                // Zulip's Gitea topics name a pull request by its `id`.
                "test / PR #1905 New pr",
                "kostekIV opened [PR #4](https://try.gitea.io/kostekIV/test/pulls/4) from \
                 `test-branch` to `master`:\n\n~~~ quote\nBody\n~~~",
            ),
            (
                "issue_comment__new.json",
                "issue_comment",
                "test / issue #3 Test issue",
                "kostekIV [commented](https://try.gitea.io/kostekIV/test/issues/3\
                 #issuecomment-24400) on [issue #3](https://try.gitea.io/kostekIV/test/issues/3):\
                 \n\n~~~ quote\ntest comment\n~~~",
            ),
        ] {
            // Forgejo sends Gitea's header too; its own is the one it is read by.
            let mut hook =
                Hook::json(integration, &key, fixture("gitea", fixture_name)).header(header, event);
            if integration == "forgejo" {
                hook = hook.header("X-Gitea-Event", event);
            }
            let reply = hook.post(&s).await;
            assert_success(&reply);
            let (_, got_topic, got_content) = newest_in_verona(&s).await;
            assert_eq!(got_topic, topic, "{integration} {fixture_name}");
            assert_eq!(got_content, content, "{integration} {fixture_name}");
        }
    }
    let reply = Hook::json("forgejo", &key, fixture("gitea", "push.json"))
        .header("X-Gitea-Event", "push")
        .post(&s)
        .await;
    assert_error(
        &reply,
        400,
        "MISSING_HTTP_EVENT_HEADER",
        "Missing the HTTP event header 'X-Forgejo-Event'",
    );
    let reply = Hook::json("gitea", &key, fixture("gitea", "push.json"))
        .header("X-Gitea-Event", "wiki")
        .post(&s)
        .await;
    assert_error(
        &reply,
        200,
        "UNSUPPORTED_WEBHOOK_EVENT_TYPE",
        "The 'wiki' event isn't currently supported by the Gitea webhook; ignoring",
    );
}

/// The `n` newest messages of channel Verona, oldest first: (topic, content).
async fn newest_n_in_verona(s: &TestApp, n: usize) -> Vec<(String, String)> {
    let narrow = json!([{"operator": "channel", "operand": "Verona"}]).to_string();
    let n = n.to_string();
    let body = s
        .ok(
            "GET",
            "/api/v1/messages",
            OWNER,
            &[
                ("narrow", &narrow),
                ("anchor", "newest"),
                ("num_before", &n),
                ("num_after", "0"),
                ("apply_markdown", "false"),
            ],
        )
        .await;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["subject"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

// ---- Alertmanager and Grafana ------------------------------------------------------------

#[actix_web::test]
async fn alertmanager_groups_alerts_by_topic_and_state() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    let graph = "http://cobalt:9090/graph?g0.expr=avg+by%28host%29+%28sensors_temp_input\
                 %7Bfeature%3D~%22core_%5B0-9%5D%2B%22%7D%29+%3E+15&g0.tab=0";
    // Two firing alerts of one host: one message listing both.
    let reply = Hook::json("alertmanager", &key, fixture("alertmanager", "alert.json"))
        .param("name", "topic")
        .param("desc", "description")
        .post(&s)
        .await;
    assert_success(&reply);
    assert_eq!(
        newest_n_in_verona(&s, 1).await,
        vec![(
            "andromeda".to_owned(),
            format!(
                ":alert: **Firing**\n* CPU core temperature is 34.75C ([graph]({graph}))\n\
                 * CPU core temperature is 17.625C ([graph]({graph}))"
            )
        )]
    );
    // One resolved and one firing alert, of two instances (the default topic field),
    // named by `alertname` (the default description field): two messages.
    let up = "http://prometheus:9090/graph?g0.expr=up+%3D%3D+0&g0.tab=0";
    let reply = Hook::json(
        "alertmanager",
        &key,
        fixture("alertmanager", "resolved.json"),
    )
    .post(&s)
    .await;
    assert_success(&reply);
    assert_eq!(
        newest_n_in_verona(&s, 2).await,
        vec![
            (
                "web-1:9100".to_owned(),
                format!(":squared_ok: **Resolved** InstanceDown ([graph]({up}))")
            ),
            (
                "web-2:9100".to_owned(),
                format!(":alert: **Firing** InstanceDown ([graph]({up}))")
            ),
        ]
    );
    // `only_events` keeps the resolved one.
    let reply = Hook::json(
        "alertmanager",
        &key,
        fixture("alertmanager", "resolved.json"),
    )
    .param("only_events", r#"["resolved"]"#)
    .param("topic", "resolutions")
    .post(&s)
    .await;
    assert_success(&reply);
    let newest = newest_n_in_verona(&s, 2).await;
    assert_eq!(newest[0].0, "web-2:9100");
    assert_eq!(newest[1].0, "resolutions");
    assert!(
        newest[1].1.starts_with(":squared_ok: **Resolved**"),
        "{newest:?}"
    );
    // Not an Alertmanager notification.
    let reply = Hook::json("alertmanager", &key, br#"{"status": "firing"}"#.to_vec())
        .post(&s)
        .await;
    assert_error(
        &reply,
        400,
        "ANOMALOUS_WEBHOOK_PAYLOAD",
        "Unable to parse request: Did Alertmanager generate this event?",
    );
}

#[actix_web::test]
async fn grafana_examples_become_their_messages() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    run(
        &s,
        &key,
        &[
            Case {
                integration: "grafana",
                fixture: "alert_firing.json",
                header: None,
                topic: "[High memory usage]",
                content: ":alert: **FIRING**\n\n**High memory usage**\n\n\
                          Fired at <time:2021-10-12T09:51:03.157076+02:00>.\n\n\
                          Labels:\n- alertname: High memory usage\n- team: blue\n- zone: us-1\n\n\
                          Values:\n- B: 44.23943737541908\n- C: 1\n\n\
                          Annotations:\n- description: The system has high memory usage\n\
                          - runbook_url: https://myrunbook.com/runbook/1234\n\
                          - summary: This alert was triggered for zone us-1\n\n\
                          [Generator](https://play.grafana.org/alerting/1afz29v7z/edit)\n\
                          [Silence](https://play.grafana.org/alerting/silence/new?\
                          alertmanager=grafana&matchers=alertname%3DT2%2Cteam%3Dblue%2Czone%3Dus-1)",
            },
            Case {
                integration: "grafana",
                fixture: "alert_resolved.json",
                header: None,
                topic: "[High CPU usage]",
                content: ":checkbox: **RESOLVED**\n\n**High CPU usage**\n\n\
                          Fired at <time:2021-10-12T09:56:03.157076+02:00>.\n\n\
                          Resolved at <time:2021-10-12T10:06:03.157076+02:00>.\n\n\
                          Labels:\n- alertname: High CPU usage\n- team: blue\n- zone: eu-1\n\n\
                          Annotations:\n- summary: This alert was triggered for zone eu-1\n\n\
                          [Generator](https://play.grafana.org/alerting/d1rdpdv7k/edit)",
            },
            Case {
                integration: "grafana",
                fixture: "legacy_alerting.json",
                header: None,
                topic: "[Alerting] Panel Title alert",
                content: ":alert: **ALERTING**\n\n[Panel Title alert](http://localhost:3000/d/\
                          hZ7BuVbWz/test-dashboard?fullscreen&edit&tab=alert&panelId=2&orgId=1)\
                          \n\nNotification Message\n\n**Count:** 1\n\n\
                          [Click to view visualization](https://grafana.com/assets/img/blog/\
                          mixed_styles.png)",
            },
        ],
    )
    .await;
}

// ---- UptimeRobot ---------------------------------------------------------------------------

#[actix_web::test]
async fn uptimerobot_examples_become_their_messages() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    run(
        &s,
        &key,
        &[
            Case {
                integration: "uptimerobot",
                fixture: "uptimerobot_monitor_down.json",
                header: None,
                topic: "Web Server",
                content: ":red_circle: Web Server (server1.example.com) is **DOWN**: \
                          Host Is Unreachable.",
            },
            Case {
                integration: "uptimerobot",
                fixture: "uptimerobot_monitor_up.json",
                header: None,
                topic: "Mail Server",
                content: ":check: Mail Server (server2.example.com) is back **UP**: Host Is \
                          Reachable. It was down for 44 minutes and 37 seconds.",
            },
        ],
    )
    .await;
    // A body set up without UptimeRobot's fields.
    let reply = Hook::json(
        "uptimerobot",
        &key,
        br#"{"monitor_friendly_name": "Web Server"}"#.to_vec(),
    )
    .post(&s)
    .await;
    assert_error(&reply, 400, "BAD_REQUEST", "Invalid payload");
    // `exclude_events` leaves the recoveries out.
    let before = newest_in_verona(&s).await.0;
    let reply = Hook::json(
        "uptimerobot",
        &key,
        fixture("uptimerobot", "uptimerobot_monitor_up.json"),
    )
    .param("exclude_events", r#"["up"]"#)
    .post(&s)
    .await;
    assert_success(&reply);
    assert_eq!(newest_in_verona(&s).await.0, before);
}

// ---- Sentry ----------------------------------------------------------------------------------

#[actix_web::test]
async fn sentry_examples_become_their_messages() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    let issue = "[Error #1: This is a test error!](https://sentry.io/organizations/example/\
                 issues/1170820242/)";
    let created = format!(
        "New issue {issue} in front-end:\n```quote\n**level:** error\n\
         **culprit:** SentryCustomError(frontend/src/util)\n\
         **first seen:** 2019-08-19 20:58:37\n**assignee:** No one\n```"
    );
    let resolved = format!("Issue {issue} was resolved by **Meredith**.");
    let assigned = format!("Issue {issue} was assigned to **Hamlet** by **Meredith**.");
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    // The issue examples are Sentry's one documented issue payload, with the
    // action (and what it changes) of each kind of change.
    run(
        &s,
        &key,
        &[
            Case {
                integration: "sentry",
                fixture: "issue__created.json",
                header: None,
                topic: "Error #1: This is a test error!",
                content: leak(created),
            },
            Case {
                integration: "sentry",
                fixture: "issue__resolved.json",
                header: None,
                topic: "Error #1: This is a test error!",
                content: leak(resolved),
            },
            Case {
                integration: "sentry",
                fixture: "issue__assigned.json",
                header: None,
                topic: "Error #1: This is a test error!",
                content: leak(assigned),
            },
            Case {
                integration: "sentry",
                fixture: "event_alert__exception.json",
                header: None,
                topic: "ZeroDivisionError: division by zero",
                content: "**New exception:** [ZeroDivisionError: division by zero](https://\
                          sentry.io/organizations/example/issues/1569186542/events/\
                          e4874d664c3540c1a32eab185f12c5ab/)\n```quote\n**level:** error\n\
                          **timestamp:** 2020-02-21 05:08:26\n**filename:** sentry_test.py\n\
                          **culprit:** __main__ in <module>\n```\n\
                          Alert rule: Send a notification for new errors",
            },
            Case {
                integration: "sentry",
                fixture: "legacy_webhooks_plugin.json",
                header: None,
                topic: "Project Name",
                content: "New [issue](https://sentry.io/acme/project-slug/issues/27379932/\
                          ?referrer=webhooks_plugin) (level: ERROR):\n\n``` quote\n\
                          This is an example Python exception\n```",
            },
        ],
    )
    .await;
    let reply = Hook::json(
        "sentry",
        &key,
        br#"{"action": "created", "data": {"installation": {}}}"#.to_vec(),
    )
    .post(&s)
    .await;
    assert_error(
        &reply,
        200,
        "UNSUPPORTED_WEBHOOK_EVENT_TYPE",
        "The '['installation']' event isn't currently supported by the Sentry webhook; ignoring",
    );
}

// ---- Jira ------------------------------------------------------------------------------------

#[actix_web::test]
async fn jira_examples_become_their_messages() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    let issue = "[TEST-4: Test Created](https://zulipbot.atlassian.net/browse/TEST-4)";
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    run(
        &s,
        &key,
        &[
            Case {
                integration: "jira",
                fixture: "created_v2.json",
                header: None,
                topic: "TEST-4: Test Created",
                content: leak(format!(
                    "Leonardo Franchi created {issue}:\n\n* **Priority**: Medium\n\
                     * **Assignee**: no one"
                )),
            },
            Case {
                integration: "jira",
                fixture: "updated_status_v2.json",
                header: None,
                topic: "TEST-4: Test Created",
                content: leak(format!(
                    "Leonardo Franchi updated {issue} (assigned to **Leonardo Franchi**):\n\n\
                     * Changed status from **To Do** to **In Progress**"
                )),
            },
            Case {
                integration: "jira",
                fixture: "comment_created.json",
                header: None,
                topic: "TEST-4: Test Created",
                content: leak(format!(
                    "Leo Franchi commented on {issue}:\n\n``` quote\nWelcome to **Jira**! See \
                     [the docs](https://confluence.atlassian.com/jira) and ask **admin**.\n```"
                )),
            },
        ],
    )
    .await;
    // Jira escapes the URL's parameters once more than it should.
    let reply = Hook::json("jira", &key, fixture("jira", "created_v2.json"))
        .param("topic", "jira%20issues")
        .post(&s)
        .await;
    assert_success(&reply);
    assert_eq!(newest_in_verona(&s).await.1, "jira issues");
    // Ignored and unknown events; a body without an event.
    let before = newest_in_verona(&s).await.0;
    let reply = Hook::json(
        "jira",
        &key,
        br#"{"webhookEvent": "sprint_started"}"#.to_vec(),
    )
    .post(&s)
    .await;
    assert_eq!(reply.2, json!({"result": "success", "msg": ""}));
    assert_eq!(newest_in_verona(&s).await.0, before);
    let reply = Hook::json(
        "jira",
        &key,
        br#"{"webhookEvent": "board_created"}"#.to_vec(),
    )
    .post(&s)
    .await;
    assert_error(
        &reply,
        200,
        "UNSUPPORTED_WEBHOOK_EVENT_TYPE",
        "The 'board_created' event isn't currently supported by the Jira webhook; ignoring",
    );
    let reply = Hook::json("jira", &key, br#"{"issue": {}}"#.to_vec())
        .post(&s)
        .await;
    assert_error(
        &reply,
        400,
        "ANOMALOUS_WEBHOOK_PAYLOAD",
        "Unable to parse request: Did Jira generate this event?",
    );
}

#[actix_web::test]
async fn a_large_payload_is_read_for_a_valid_key_only() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    // Larger than what is read before credentials are checked (64 KiB).
    let large = serde_json::to_vec(&json!({ "log": "x".repeat(100 * 1024) })).unwrap();
    let reply = Hook::json("json", "abcdefghijklmnopqrstuvwxyz012345", large.clone())
        .post(&s)
        .await;
    assert_error(&reply, 401, "INVALID_API_KEY", "Invalid API key");
    let reply = Hook::json("json", &key, large).post(&s).await;
    assert_success(&reply);
    let (_, topic, content) = newest_in_verona(&s).await;
    assert_eq!(topic, "JSON");
    assert!(
        content.starts_with("```json\n{\n  \"log\": \"xxx"),
        "{}",
        &content[..40]
    );
    // Cut to the longest message, as every message is.
    assert!(
        content.ends_with("\n[message truncated]"),
        "{}",
        &content[content.len() - 40..]
    );
}

#[actix_web::test]
async fn webhooks_count_against_their_bots_rate_limit() {
    use hearth::config::Switch;
    let dir = tempfile::tempdir().unwrap();
    let s = TestApp::spawn_configured(dir, |c| {
        c.rate_limit = Some(Switch::On);
        c.rate_limit_per_user = 3;
        // The tests' address stays well within its own allowance.
        c.rate_limit_per_ip = 1000;
    })
    .await;
    let (_, key) = webhook_bot(&s).await;
    for left in (0..3).rev() {
        let reply = Hook::json("json", &key, b"{}".to_vec()).post(&s).await;
        assert_success(&reply);
        let remaining = reply.1.get("x-ratelimit-remaining").unwrap();
        assert_eq!(remaining.to_str().unwrap(), left.to_string());
    }
    let reply = Hook::json("json", &key, b"{}".to_vec()).post(&s).await;
    assert_error(
        &reply,
        429,
        "RATE_LIMIT_HIT",
        "API usage exceeded rate limit",
    );
    // The bot's owner has an allowance of their own.
    let (status, _) = s.call("GET", "/api/v1/users/me", OWNER, &[]).await;
    assert_eq!(status, 200);
}

#[test]
fn the_readme_lists_every_integration() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = &readme[readme
        .find("## Integrations")
        .expect("an Integrations section")..];
    for integration in hearth::integrations::INTEGRATIONS {
        assert!(
            section.contains(&format!("| `{}` |", integration.name)),
            "README: no row for {}",
            integration.name
        );
        assert!(!integration.events.is_empty(), "{}", integration.name);
    }
}

// ---- the services' own documented examples ---------------------------------------------
//
// `tests/fixtures/webhooks/README.md` names the document each `docs__*` payload is
// copied from, unchanged.

#[actix_web::test]
async fn github_documented_payloads_become_their_messages() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    let repo = "https://github.com/Codertocat/Hello-World";
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let header = |value| Some(("X-GitHub-Event", value));
    let pr_topic = "Hello-World / PR #2 Update the README with new information.";
    let issue_topic = "Hello-World / issue #1 Spelling error in the README file";
    run(
        &s,
        &key,
        &[
            // The documented push removes a tag.
            Case {
                integration: "github",
                fixture: "docs__push.json",
                header: header("push"),
                topic: "Hello-World",
                content: "Codertocat removed tag simple-tag.",
            },
            Case {
                integration: "github",
                fixture: "docs__pull_request_opened.json",
                header: header("pull_request"),
                topic: pr_topic,
                content: leak(format!(
                    "Codertocat opened [PR #2]({repo}/pull/2) from `Codertocat:changes` to \
                     `Codertocat:master`:\n\n~~~ quote\nThis is a pretty simple change that we \
                     need to pull into master.\n~~~"
                )),
            },
            Case {
                integration: "github",
                fixture: "docs__pull_request_closed.json",
                header: header("pull_request"),
                topic: pr_topic,
                content: leak(format!(
                    "Codertocat closed without merge [PR #2]({repo}/pull/2)."
                )),
            },
            Case {
                integration: "github",
                fixture: "docs__pull_request_review_requested.json",
                header: header("pull_request"),
                topic: pr_topic,
                content: leak(format!(
                    "Codertocat requested [octocat](http://github.com/octocat) for a review on \
                     [PR #2]({repo}/pull/2)."
                )),
            },
            Case {
                integration: "github",
                fixture: "docs__ping.json",
                header: header("ping"),
                topic: "Hello-World",
                content: "Codertocat connected this GitHub webhook: its notifications arrive here.",
            },
            Case {
                integration: "github",
                fixture: "docs__issues_opened.json",
                header: header("issues"),
                topic: issue_topic,
                content: leak(format!(
                    "Codertocat opened [issue #1]({repo}/issues/1):\n\n~~~ quote\nIt looks like \
                     you accidently spelled 'commit' with two 't's.\n~~~"
                )),
            },
            Case {
                integration: "github",
                fixture: "docs__issue_comment_created.json",
                header: header("issue_comment"),
                topic: issue_topic,
                content: leak(format!(
                    "Codertocat [commented]({repo}/issues/1#issuecomment-492700400) on \
                     [issue #1]({repo}/issues/1):\n\n~~~ quote\nYou are totally right! I'll get \
                     this fixed right away.\n~~~"
                )),
            },
        ],
    )
    .await;
}

#[actix_web::test]
async fn gitlab_documented_payloads_become_their_messages() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let header = |value| Some(("X-Gitlab-Event", value));
    let diaspora = "http://example.com/mike/diaspora";
    let test = "http://example.com/gitlab-org/gitlab-test";
    run(
        &s,
        &key,
        &[
            // Two commits sent of the four the push holds (`total_commits_count`).
            Case {
                integration: "gitlab",
                fixture: "docs__push.json",
                header: header("Push Hook"),
                topic: "Diaspora / master",
                content: leak(format!(
                    "John Smith [pushed 2 commits]({diaspora}/-/compare/\
                     95790bf891e76fee5e1747ab589903a6a1f80f22...\
                     da1560886d4f094c3e6c9ef40349f7d38b5d27d7) to branch master. Commits by \
                     GitLab dev user (1) and Jordi Mallach (1).\n\n\
                     * Update Catalan translation to e38cb41. ([b6568db1bc1]({diaspora}/commit/\
                     b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327))\n\
                     * fixed readme ([da1560886d4]({diaspora}/commit/\
                     da1560886d4f094c3e6c9ef40349f7d38b5d27d7))\n\
                     [and 2 more commit(s)]"
                )),
            },
            Case {
                integration: "gitlab",
                fixture: "docs__merge_request.json",
                header: header("Merge Request Hook"),
                topic: "Gitlab Test / MR #1 MS-Viewport",
                content: "Administrator created [MR #1](http://example.com/diaspora/\
                          merge_requests/1) from `ms-viewport` to `master` (assigned to User1).",
            },
            Case {
                integration: "gitlab",
                fixture: "docs__pipeline.json",
                header: header("Pipeline Hook"),
                topic: "Gitlab Test / master",
                // The jobs' links are built on the project's `web_url`.
                content: "[Pipeline (#31)](http://example.com/gitlab-org/gitlab-test/-/pipelines/\
                          31) changed status to success with build(s):\n\
                          * [production](http://192.168.64.1:3005/gitlab-org/gitlab-test/-/jobs/\
                          380) - skipped\n\
                          * [test-image](http://192.168.64.1:3005/gitlab-org/gitlab-test/-/jobs/\
                          377) - success\n\
                          * [test-build](http://192.168.64.1:3005/gitlab-org/gitlab-test/-/jobs/\
                          378) - failed\n\
                          * [build-image](http://192.168.64.1:3005/gitlab-org/gitlab-test/-/jobs/\
                          376) - success\n\
                          * [staging](http://192.168.64.1:3005/gitlab-org/gitlab-test/-/jobs/\
                          379) - created",
            },
            Case {
                integration: "gitlab",
                fixture: "docs__tag_push.json",
                header: header("Tag Push Hook"),
                topic: "Example",
                content: "John Smith pushed tag v1.0.0.",
            },
            Case {
                integration: "gitlab",
                fixture: "docs__issue.json",
                header: header("Issue Hook"),
                topic: "Gitlab Test / issue #23 New API: create/update/delete file",
                content:
                    "Administrator created [issue #23](http://example.com/diaspora/issues/23) \
                          (assigned to User1):\n\n~~~ quote\nCreate new API for manipulations \
                          with repository\n~~~",
            },
            Case {
                integration: "gitlab",
                fixture: "docs__note_commit.json",
                header: header("Note Hook"),
                topic: "Gitlab Test",
                content: leak(format!(
                    "Administrator [commented]({test}/commit/\
                     cfe32cf61b73a0d5e9f13e774abde7ff789b1660#note_1243) on [cfe32cf61b7]({test}/\
                     commit/cfe32cf61b73a0d5e9f13e774abde7ff789b1660):\n\n~~~ quote\nThis is a \
                     commit comment. How does this work?\n~~~"
                )),
            },
            Case {
                integration: "gitlab",
                fixture: "docs__note_issue.json",
                header: header("Note Hook"),
                topic: "Gitlab Test / issue #17 test",
                content: leak(format!(
                    "Administrator [commented]({test}/issues/17#note_1241) on [issue #17]({test}/\
                     -/issues/17):\n\n~~~ quote\nHello world\n~~~"
                )),
            },
        ],
    )
    .await;
}

#[actix_web::test]
async fn sentry_documented_payloads_become_their_messages() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    run(
        &s,
        &key,
        &[
            // The documented issue has no `web_url`: its title is not linked.
            Case {
                integration: "sentry",
                fixture: "docs__issue_created.json",
                header: None,
                topic: "ReferenceError: blooopy is not defined",
                content: "New issue **ReferenceError: blooopy is not defined** in front-end:\n\
                          ```quote\n**level:** error\n**culprit:** ?(runner)\n\
                          **first seen:** 2019-08-19 20:58:37\n**assignee:** No one\n```",
            },
            Case {
                integration: "sentry",
                fixture: "docs__event_alert_triggered.json",
                header: None,
                topic: "ReferenceError: heck is not defined",
                content: "**New exception:** [ReferenceError: heck is not defined](https://\
                          sentry.io/organizations/test-org/issues/1117540176/events/\
                          e4874d664c3540c1a32eab185f12c5ab/)\n```quote\n**level:** error\n\
                          **timestamp:** 2019-08-19 21:06:17\n**filename:** <anonymous>\n\
                          **culprit:** ?(<anonymous>)\n```\nAlert rule: Very Important Alert Rule!",
            },
        ],
    )
    .await;
    // A metric alert is not an event Zulip's Sentry integration handles: named by the
    // data's keys, as Zulip names it.
    let reply = Hook::json(
        "sentry",
        &key,
        fixture("sentry", "docs__metric_alert_resolved.json"),
    )
    .post(&s)
    .await;
    assert_error(
        &reply,
        200,
        "UNSUPPORTED_WEBHOOK_EVENT_TYPE",
        "The '['description_text', 'description_title', 'metric_alert', 'web_url']' event \
         isn't currently supported by the Sentry webhook; ignoring",
    );
    assert_eq!(reply.2["webhook_name"], "Sentry");
}

#[actix_web::test]
async fn grafana_documented_payload_sends_one_message_per_alert() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    let reply = Hook::json(
        "grafana",
        &key,
        fixture("grafana", "docs__webhook_firing.json"),
    )
    .post(&s)
    .await;
    assert_success(&reply);
    let alert = |name: &str, zone: &str, what: &str, generator: &str, silence: &str| {
        format!(
            ":alert: **FIRING**\n\n**{name}**\n\nFired at <time:2021-10-12T09:{}:03.157076+02:00>.\
             \n\nLabels:\n- alertname: {name}\n- team: blue\n- zone: {zone}\n\n\
             Values:\n- B: 44.23943737541908\n- C: 1\n\n\
             Annotations:\n- description: The system has high {what} usage\n\
             - runbook_url: https://myrunbook.com/runbook/1234\n\
             - summary: This alert was triggered for zone {zone}\n\n\
             [Generator](https://play.grafana.org/alerting/{generator}/edit)\n\
             [Silence](https://play.grafana.org/alerting/silence/new?alertmanager=grafana&\
             matchers=alertname%3D{silence}%2Cteam%3Dblue%2Czone%3D{zone})",
            if zone == "us-1" { "51" } else { "56" }
        )
    };
    for (name, zone, what, generator, silence) in [
        ("High memory usage", "us-1", "memory", "1afz29v7z", "T2"),
        ("High CPU usage", "eu-1", "CPU", "d1rdpdv7k", "T1"),
    ] {
        let topic = format!("[{name}]");
        let (_, got_topic, content) = newest(
            &s,
            json!([
                {"operator": "channel", "operand": "Verona"},
                {"operator": "topic", "operand": topic},
            ]),
        )
        .await;
        assert_eq!(got_topic, topic);
        assert_eq!(
            content,
            alert(name, zone, what, generator, silence),
            "{name}"
        );
    }
}

#[actix_web::test]
async fn jira_documented_payload_becomes_its_message() {
    let s = TestApp::spawn().await;
    let (_, key) = webhook_bot(&s).await;
    // Atlassian's example is an issue update carrying both a changelog and a comment
    // (without `issue_event_type_name`): the comment is the message, as in Zulip, and
    // the changelog is left out.
    run(
        &s,
        &key,
        &[Case {
            integration: "jira",
            fixture: "docs__issue_updated.json",
            header: None,
            topic: "JRA-20002: I feel the need for speed",
            content: "Bryan Rollins [Atlassian] commented on [JRA-20002: I feel the need for \
                      speed](https://jira.atlassian.com/browse/JRA-20002):\n\n``` quote\nJust \
                      in time for AtlasCamp!\n```",
        }],
    )
    .await;
    // Filtered by its event type, `jira:issue_updated`.
    let before = newest_in_verona(&s).await.0;
    let reply = Hook::json("jira", &key, fixture("jira", "docs__issue_updated.json"))
        .param("exclude_events", r#"["jira:issue_updated"]"#)
        .post(&s)
        .await;
    assert_success(&reply);
    assert_eq!(newest_in_verona(&s).await.0, before);
}
