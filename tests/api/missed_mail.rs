//! Missed-message emails, received by a real SMTP server (Python's `aiosmtpd`, from
//! `HEARTH_PYTHON`): each trigger (a direct message, a mention, a wildcard mention, a
//! followed topic, a channel with emails on) after the batching period, one email per
//! conversation, nothing for what was read, deleted, muted or turned off in time,
//! nothing for someone online, the content and realm-name settings, and a pending
//! email across a `kill -9`, sent once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::child::ChildServer;
use crate::common::smtp::Receiver;
use crate::common::*;
use hearth::realm::ManualClock;
use serde_json::json;

/// One received email, decoded.
#[derive(Debug)]
struct Mail {
    to: String,
    subject: String,
    message_id: String,
    text: String,
    html: String,
}

fn parse(raw: &str) -> Mail {
    let parsed = mailparse::parse_mail(raw.as_bytes()).expect("an email");
    let header = |name: &str| {
        parsed
            .headers
            .iter()
            .find(|h| h.get_key_ref().eq_ignore_ascii_case(name))
            .map(|h| h.get_value())
            .unwrap_or_default()
    };
    let part = |mime: &str| {
        parsed
            .subparts
            .iter()
            .find(|p| p.ctype.mimetype == mime)
            .map(|p| p.get_body().unwrap())
            .unwrap_or_default()
    };
    Mail {
        to: header("To"),
        subject: header("Subject"),
        message_id: header("Message-ID"),
        text: part("text/plain"),
        html: part("text/html"),
    }
}

/// The emails received so far, for `to` (a delivery address).
fn mails_to(smtp: &Receiver, to: &str) -> Vec<Mail> {
    let mut out: Vec<Mail> = smtp
        .messages()
        .iter()
        .map(|raw| parse(raw))
        .filter(|m| m.to.contains(to))
        .collect();
    out.sort_by(|a, b| a.subject.cmp(&b.subject));
    out
}

/// Waits until `to` has `n` emails, then a little longer, and checks no more came.
async fn exactly(smtp: &Receiver, to: &str, n: usize) -> Vec<Mail> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while mails_to(smtp, to).len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "{} of {n} emails to {to} arrived",
            mails_to(smtp, to).len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The worker reads the schedule twice a second: three more readings send nothing.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let got = mails_to(smtp, to);
    assert_eq!(got.len(), n, "{got:#?}");
    got
}

/// The development realm with a manual clock and email through `smtp`.
async fn app(smtp: &Receiver) -> TestApp {
    let url = smtp.url();
    TestApp::spawn_configured_with_clock(ManualClock::new(START_MS), move |c| {
        c.smtp_url = Some(url.clone());
    })
    .await
}

const OTHELLO_EMAIL: &str = OTHELLO;

async fn set(app: &TestApp, who: &str, pairs: &[(&str, &str)]) {
    app.ok("PATCH", "/api/v1/settings", who, pairs).await;
}

async fn sub_property(app: &TestApp, who: &str, channel: &str, property: &str, value: bool) {
    let id = app.stream_id(channel).await;
    let data = json!([{"stream_id": id, "property": property, "value": value}]).to_string();
    app.ok(
        "POST",
        "/api/v1/users/me/subscriptions/properties",
        who,
        &[("subscription_data", &data)],
    )
    .await;
}

async fn topic_policy(app: &TestApp, who: &str, channel: &str, topic: &str, policy: &str) {
    let id = app.stream_id(channel).await.to_string();
    app.ok(
        "POST",
        "/api/v1/user_topics",
        who,
        &[
            ("stream_id", &id),
            ("topic", topic),
            ("visibility_policy", policy),
        ],
    )
    .await;
}

/// Moves the clock past the default batching period (120 s).
fn past_the_period(app: &TestApp) {
    app.clock().advance_ms(121_000);
}

#[actix_web::test]
async fn a_direct_message_to_someone_away_is_emailed_after_the_batching_period() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let app = app(&smtp).await;
    let id = send_direct(
        &app,
        HAMLET,
        &[OTHELLO_ID],
        "Are you coming to **rehearsal**?",
    )
    .await;
    // Not before the period: the worker has read the schedule several times.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    app.clock().advance_ms(60_000);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(mails_to(&smtp, OTHELLO_EMAIL).is_empty());
    app.clock().advance_ms(61_000);
    let mails = exactly(&smtp, OTHELLO_EMAIL, 1).await;
    let m = &mails[0];
    assert_eq!(m.subject, "Direct messages from King Hamlet");
    assert!(
        m.text.contains("King Hamlet sent you a direct message."),
        "{}",
        m.text
    );
    assert!(
        m.text.contains("> Are you coming to **rehearsal**?"),
        "{}",
        m.text
    );
    assert!(
        m.text.contains(&format!(
            "/#narrow/dm/{HAMLET_ID},{OTHELLO_ID}-dm/near/{id}"
        )),
        "{}",
        m.text
    );
    assert!(m.text.contains("/#settings/notifications"), "{}", m.text);
    assert!(m.html.contains("<strong>rehearsal</strong>"), "{}", m.html);
    assert!(
        m.html.contains("<strong>King Hamlet</strong>"),
        "{}",
        m.html
    );
    assert!(m.message_id.contains("missed."), "{}", m.message_id);
    // The sender is never emailed, and nothing more comes later.
    app.clock().advance_ms(600_000);
    exactly(&smtp, OTHELLO_EMAIL, 1).await;
    assert!(mails_to(&smtp, HAMLET).is_empty());
}

#[actix_web::test]
async fn each_trigger_gives_one_email_per_conversation() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let app = app(&smtp).await;
    // Othello follows a topic, and asks for email about Denmark.
    topic_policy(&app, OTHELLO, "Verona", "followed", "3").await;
    sub_property(&app, OTHELLO, "Denmark", "email_notifications", true).await;
    send_stream(
        &app,
        HAMLET,
        "Verona",
        "mention",
        "@**Othello, the Moor of Venice** look",
    )
    .await;
    send_stream(
        &app,
        HAMLET,
        "Verona",
        "mention",
        "@**Othello, the Moor of Venice** and this too",
    )
    .await;
    send_stream(
        &app,
        HAMLET,
        "Verona",
        "wildcard",
        "@**all** the play starts",
    )
    .await;
    send_stream(
        &app,
        HAMLET,
        "Verona",
        "followed",
        "news in a followed topic",
    )
    .await;
    send_stream(&app, CORDELIA, "Denmark", "castle", "news in Denmark").await;
    // Nothing for a plain message in a topic Othello does not follow.
    send_stream(&app, HAMLET, "Verona", "other", "nothing to see").await;
    past_the_period(&app);
    let mails = exactly(&smtp, OTHELLO_EMAIL, 4).await;
    let subjects: Vec<&str> = mails.iter().map(|m| m.subject.as_str()).collect();
    assert_eq!(
        subjects,
        [
            "#Denmark > castle",
            "#Verona > followed",
            "#Verona > mention",
            "#Verona > wildcard"
        ]
    );
    assert!(
        mails[0]
            .text
            .contains("Cordelia, Lear's daughter wrote in #Denmark > castle."),
        "{}",
        mails[0].text
    );
    assert!(
        mails[1].text.contains("a topic you follow"),
        "{}",
        mails[1].text
    );
    // One email for the conversation, both messages in it (the second joined the
    // batch of the first).
    let mention = &mails[2];
    assert!(
        mention
            .text
            .contains("King Hamlet mentioned you in #Verona > mention."),
        "{}",
        mention.text
    );
    assert!(mention.text.contains("and this too"), "{}", mention.text);
    assert!(
        mention
            .text
            .contains("> @**Othello, the Moor of Venice** look"),
        "{}",
        mention.text
    );
    assert!(
        mails[3].text.contains("mentioned everyone"),
        "{}",
        mails[3].text
    );
}

#[actix_web::test]
async fn nothing_is_sent_for_what_was_read_deleted_muted_or_turned_off_in_time() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let app = app(&smtp).await;
    // Read in time.
    let read = send_direct(&app, HAMLET, &[OTHELLO_ID], "read me").await;
    app.ok(
        "POST",
        "/api/v1/messages/flags",
        OTHELLO,
        &[
            ("messages", &format!("[{read}]")),
            ("op", "add"),
            ("flag", "read"),
        ],
    )
    .await;
    // Deleted in time.
    let gone = send_stream(
        &app,
        HAMLET,
        "Verona",
        "gone",
        "@**Othello, the Moor of Venice** oops",
    )
    .await;
    app.ok("DELETE", &format!("/api/v1/messages/{gone}"), IAGO, &[])
        .await;
    // A muted sender.
    app.ok(
        "POST",
        &format!("/api/v1/users/me/muted_users/{CORDELIA_ID}"),
        OTHELLO,
        &[],
    )
    .await;
    send_direct(&app, CORDELIA, &[OTHELLO_ID], "from someone muted").await;
    // A muted topic stops the channel's emails.
    sub_property(&app, OTHELLO, "Denmark", "email_notifications", true).await;
    topic_policy(&app, OTHELLO, "Denmark", "quiet", "1").await;
    send_stream(&app, PROSPERO, "Denmark", "quiet", "in a muted topic").await;
    // The channel's emails turned off after the message came.
    send_stream(&app, PROSPERO, "Denmark", "loud", "soon turned off").await;
    sub_property(&app, OTHELLO, "Denmark", "email_notifications", false).await;
    // Shiva turns direct-message emails off after the message came.
    send_direct(&app, HAMLET, &[SHIVA_ID], "for shiva").await;
    set(
        &app,
        SHIVA,
        &[("enable_offline_email_notifications", "false")],
    )
    .await;
    // The one that is sent.
    send_direct(&app, PROSPERO, &[OTHELLO_ID], "the one email").await;
    past_the_period(&app);
    let mails = exactly(&smtp, OTHELLO_EMAIL, 1).await;
    assert!(mails[0].text.contains("the one email"), "{}", mails[0].text);
    assert!(mails_to(&smtp, SHIVA).is_empty());
}

#[actix_web::test]
async fn someone_online_gets_no_email() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let app = app(&smtp).await;
    // Othello has the app open and is active; Cordelia is away.
    app.register(OTHELLO, &[("event_types", "[\"message\"]")])
        .await;
    app.ok(
        "POST",
        "/api/v1/users/me/presence",
        OTHELLO,
        &[("status", "active")],
    )
    .await;
    send_direct(&app, HAMLET, &[OTHELLO_ID], "you are here").await;
    send_direct(&app, HAMLET, &[CORDELIA_ID], "you are away").await;
    past_the_period(&app);
    exactly(&smtp, CORDELIA, 1).await;
    assert!(mails_to(&smtp, OTHELLO_EMAIL).is_empty());
}

#[actix_web::test]
async fn content_and_realm_name_follow_the_settings() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let app = app(&smtp).await;
    set(
        &app,
        OTHELLO,
        &[
            ("message_content_in_email_notifications", "false"),
            ("realm_name_in_email_notifications_policy", "2"),
        ],
    )
    .await;
    send_direct(&app, HAMLET, &[OTHELLO_ID], "a secret plan").await;
    send_direct(&app, HAMLET, &[OTHELLO_ID, CORDELIA_ID], "for both of you").await;
    past_the_period(&app);
    let mails = exactly(&smtp, OTHELLO_EMAIL, 2).await;
    assert_eq!(
        mails[0].subject,
        "[Zulip Dev] Direct messages from King Hamlet"
    );
    assert_eq!(
        mails[1].subject,
        "[Zulip Dev] Group direct messages with Cordelia, Lear's daughter and King Hamlet"
    );
    for m in &mails {
        assert!(
            !m.text.contains("secret") && !m.text.contains("both of you"),
            "{}",
            m.text
        );
        assert!(
            !m.html.contains("secret") && !m.html.contains("both of you"),
            "{}",
            m.html
        );
        assert!(
            m.text.contains("leave the message itself out"),
            "{}",
            m.text
        );
    }
    // Cordelia keeps the defaults: the content, no realm name (one account).
    let cordelia = exactly(&smtp, CORDELIA, 1).await;
    assert!(
        cordelia[0]
            .subject
            .starts_with("Group direct messages with "),
        "{}",
        cordelia[0].subject
    );
    assert!(
        cordelia[0].text.contains("> for both of you"),
        "{}",
        cordelia[0].text
    );
}

#[actix_web::test]
async fn names_and_topics_are_escaped_in_the_html_part() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let app = app(&smtp).await;
    app.ok(
        "PATCH",
        "/api/v1/settings",
        HAMLET,
        &[("full_name", "Hamlet & Sons")],
    )
    .await;
    send_stream(
        &app,
        HAMLET,
        "Verona",
        "<script>alert(1)</script>",
        "@**Othello, the Moor of Venice** <img src=x onerror=alert(1)>",
    )
    .await;
    past_the_period(&app);
    let mails = exactly(&smtp, OTHELLO_EMAIL, 1).await;
    let html = &mails[0].html;
    assert!(
        !html.contains("<script>") && !html.contains("<b>bold"),
        "{html}"
    );
    assert!(!html.contains("<img src=x"), "{html}");
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
    assert!(
        html.contains("<strong>Hamlet &amp; Sons</strong>"),
        "{html}"
    );
}

/// A pending email survives a `kill -9` and is sent once after the restart; once
/// sent, another `kill -9` does not send it again.
#[actix_web::test]
async fn a_pending_email_survives_kill_9_and_is_sent_once() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap().to_owned();
    let smtp_url = smtp.url();
    let args = ["--dev", "--data", &data, "--smtp-url", &smtp_url];
    let server = ChildServer::up(&args, &[]);
    let http = client();
    let othello_key = dev_key_at(&server.url, OTHELLO).await;
    let hamlet_key = dev_key_at(&server.url, HAMLET).await;
    let r = http
        .patch(format!("{}/api/v1/settings", server.url))
        .header("authorization", basic(OTHELLO, &othello_key))
        .form(&[("email_notifications_batching_period_seconds", "4")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = http
        .post(format!("{}/api/v1/messages", server.url))
        .header("authorization", basic(HAMLET, &hamlet_key))
        .form(&[
            ("type", "direct"),
            ("to", &format!("[{OTHELLO_ID}]")),
            ("content", "sent just before the crash"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    server.kill_9();
    assert!(mails_to(&smtp, OTHELLO_EMAIL).is_empty());
    let server = ChildServer::up(&args, &[]);
    let mails = exactly(&smtp, OTHELLO_EMAIL, 1).await;
    assert!(
        mails[0].text.contains("sent just before the crash"),
        "{}",
        mails[0].text
    );
    server.kill_9();
    let _server = ChildServer::up(&args, &[]);
    tokio::time::sleep(Duration::from_secs(3)).await;
    exactly(&smtp, OTHELLO_EMAIL, 1).await;
}

/// A group mention mentions the group's members (their `mentioned` flag, and an
/// email for one who is away), and needs the group's `can_mention_group`.
#[actix_web::test]
async fn a_group_mention_mentions_its_members_and_needs_the_permission() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let app = app(&smtp).await;
    let groups = app.ok("GET", "/api/v1/user_groups", IAGO, &[]).await;
    let group = groups["user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "hamletcharacters")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let id = send_stream(
        &app,
        OTHELLO,
        "Verona",
        "cast",
        "@*hamletcharacters* to the stage",
    )
    .await;
    let msg = app
        .ok("GET", &format!("/api/v1/messages/{id}"), CORDELIA, &[])
        .await;
    assert!(
        msg["message"]["flags"]
            .as_array()
            .unwrap()
            .contains(&json!("mentioned")),
        "{msg}"
    );
    assert!(
        msg["message"]["content"]
            .as_str()
            .unwrap()
            .contains(&format!("data-user-group-id=\"{group}\"")),
        "{msg}"
    );
    past_the_period(&app);
    let mails = exactly(&smtp, CORDELIA, 1).await;
    assert!(
        mails[0].text.contains("mentioned you in #Verona > cast"),
        "{}",
        mails[0].text
    );
    // Only moderators may mention the group now: Othello may not, though a silent
    // mention is still allowed.
    app.ok(
        "PATCH",
        &format!("/api/v1/user_groups/{group}"),
        DESDEMONA,
        &[("can_mention_group", &format!(r#"{{"new": {MODERATORS}}}"#))],
    )
    .await;
    app.err(
        "POST",
        "/api/v1/messages",
        OTHELLO,
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "cast"),
            ("content", "@*hamletcharacters* again"),
        ],
        400,
        "BAD_REQUEST",
        "You are not allowed to mention user group 'hamletcharacters'.",
    )
    .await;
    send_stream(
        &app,
        OTHELLO,
        "Verona",
        "cast",
        "@_*hamletcharacters* quietly",
    )
    .await;
    send_stream(
        &app,
        SHIVA,
        "Verona",
        "cast",
        "@*hamletcharacters* from a moderator",
    )
    .await;
}
