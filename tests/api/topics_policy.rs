//! Topics policies (Zulip's `topics_policy`, feature levels 392 and 404): the realm's
//! default (`PATCH /realm`), each channel's (at creation and by `PATCH /streams/{id}`),
//! who may set them by role, their events, `/register` fields and the Notification
//! Bot's notice, and their enforcement on sends, scheduled messages (created, edited,
//! delivered) and edits that move messages; both survive a restart.
//!
//! Roles: owner desdemona, administrator iago, moderator shiva, members hamlet and
//! cordelia, guest polonius. Channels of the development realm used here: Verona
//! (everyone but the bots subscribed, no channel administrators), design (hamlet
//! administers it), Denmark (hamlet is not subscribed).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use hearth::realm::ManualClock;
use serde_json::{json, Value};

const INVALID: &str = "Invalid topics_policy";
const NO_EMPTY_TOPIC: &str = "Sending messages to the general chat is not allowed in this channel.";
const ONLY_EMPTY_TOPIC: &str = "Only the general chat topic is allowed in this channel.";
const NAMED_TOPICS: &str = "To enable this configuration, all messages in this channel must be \
                            in the general chat topic. Consider renaming or deleting other topics.";
const NOT_CHANNEL_ADMIN: &str = "You do not have permission to administer this channel.";

/// `PATCH /realm` with `topics_policy`, as an administrator.
async fn set_realm(app: &TestApp, value: &str) {
    app.ok("PATCH", "/api/v1/realm", IAGO, &[("topics_policy", value)])
        .await;
}

/// `PATCH /streams/{id}` with `topics_policy`, as an administrator.
async fn set_channel(app: &TestApp, channel: &str, value: &str) {
    let id = app.stream_id(channel).await;
    app.ok(
        "PATCH",
        &format!("/api/v1/streams/{id}"),
        IAGO,
        &[("topics_policy", value)],
    )
    .await;
}

/// The channel object of `GET /streams/{id}`.
async fn channel(app: &TestApp, name: &str) -> Value {
    let id = app.stream_id(name).await;
    app.ok("GET", &format!("/api/v1/streams/{id}"), IAGO, &[])
        .await["stream"]
        .clone()
}

/// The realm section of `/register`.
async fn realm_state(app: &TestApp, who: &str) -> Value {
    app.ok(
        "POST",
        "/api/v1/register",
        who,
        &[("fetch_event_types", r#"["realm"]"#)],
    )
    .await
}

/// `POST /messages` to `channel` and `topic` as `who`: status and body.
async fn send(app: &TestApp, who: &str, channel: &str, topic: &str) -> (u16, Value) {
    app.call(
        "POST",
        "/api/v1/messages",
        who,
        &[
            ("type", "stream"),
            ("to", channel),
            ("topic", topic),
            ("content", "hello"),
        ],
    )
    .await
}

/// The newest message of `channel` as `who` reads it (raw content, empty topic as is).
async fn newest(app: &TestApp, who: &str, channel: &str) -> Value {
    let narrow = json!([{"operator": "channel", "operand": channel}]).to_string();
    let body = app
        .ok(
            "GET",
            "/api/v1/messages",
            who,
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("num_after", "0"),
                ("narrow", &narrow),
                ("apply_markdown", "false"),
                ("allow_empty_topic_name", "true"),
            ],
        )
        .await;
    body["messages"][0].clone()
}

/// A message by id, as `who` reads it (empty topic as is).
async fn message(app: &TestApp, who: &str, id: u64) -> Value {
    app.ok(
        "GET",
        &format!("/api/v1/messages/{id}"),
        who,
        &[("allow_empty_topic_name", "true")],
    )
    .await["message"]
        .clone()
}

fn assert_refused(reply: (u16, Value), msg: &str) {
    assert_eq!(reply.0, 400, "{}", reply.1);
    assert_eq!(
        reply.1,
        json!({"result": "error", "code": "BAD_REQUEST", "msg": msg})
    );
}

fn assert_sent(reply: (u16, Value)) -> u64 {
    assert_eq!(reply.0, 200, "{}", reply.1);
    reply.1["id"].as_u64().expect("id")
}

// ---- PATCH /realm ------------------------------------------------------------------

#[actix_web::test]
async fn the_realm_policy_by_role_with_its_values_events_and_register_fields() {
    let app = TestApp::spawn().await;
    let state = realm_state(&app, HAMLET).await;
    assert_eq!(state["realm_topics_policy"], "allow_empty_topic");
    assert_eq!(state["realm_mandatory_topics"], false);
    let queue = app
        .register(HAMLET, &[("event_types", r#"["realm"]"#)])
        .await;
    let disable = [("topics_policy", "disable_empty_topic")];
    let allow = [("topics_policy", "allow_empty_topic")];
    let table = [
        // `@require_realm_admin` comes before the value.
        not_admin(POLONIUS, p(&disable)),
        not_admin(HAMLET, p(&disable)),
        not_admin(SHIVA, p(&[("topics_policy", "bogus")])),
        // The realm has two of the channel's four values; a plain string, not JSON.
        bad(IAGO, p(&[("topics_policy", "inherit")]), INVALID),
        bad(IAGO, p(&[("topics_policy", "empty_topic_only")]), INVALID),
        bad(IAGO, p(&[("topics_policy", "bogus")]), INVALID),
        bad(
            IAGO,
            p(&[("topics_policy", "\"disable_empty_topic\"")]),
            INVALID,
        ),
        // Zulip answers the value given as its stored number, changed or not.
        ok(IAGO, p(&disable), json!({"topics_policy": 3})),
        ok(DESDEMONA, p(&disable), json!({"topics_policy": 3})),
    ];
    run_cases(&app, "PATCH", "/api/v1/realm", &table).await;
    let state = realm_state(&app, HAMLET).await;
    assert_eq!(state["realm_topics_policy"], "disable_empty_topic");
    assert_eq!(state["realm_mandatory_topics"], true);
    // One event for the one change, with the deprecated `mandatory_topics`.
    let events = app.events(HAMLET, &queue).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let mut event = events[0].clone();
    event.as_object_mut().unwrap().remove("id");
    assert_eq!(
        event,
        json!({"type": "realm", "op": "update_dict", "property": "default",
               "data": {"topics_policy": "disable_empty_topic", "mandatory_topics": true}})
    );
    // The owner sets it back.
    run_cases(
        &app,
        "PATCH",
        "/api/v1/realm",
        &[ok(DESDEMONA, p(&allow), json!({"topics_policy": 2}))],
    )
    .await;
    let state = realm_state(&app, POLONIUS).await;
    assert_eq!(state["realm_topics_policy"], "allow_empty_topic");
    assert_eq!(state["realm_mandatory_topics"], false);
    let events = app.events(HAMLET, &queue).await;
    assert_eq!(
        events.last().unwrap()["data"],
        json!({"topics_policy": "allow_empty_topic", "mandatory_topics": false})
    );
}

#[actix_web::test]
async fn can_set_topics_policy_group_is_a_realm_setting() {
    let app = TestApp::spawn().await;
    assert_eq!(
        realm_state(&app, HAMLET).await["realm_can_set_topics_policy_group"],
        6
    );
    let admins = format!(r#"{{"new": {ADMINS}}}"#);
    let table = [
        not_admin(
            HAMLET,
            p(&[("can_set_topics_policy_group", admins.as_str())]),
        ),
        ok(
            IAGO,
            p(&[("can_set_topics_policy_group", admins.as_str())]),
            json!({"can_set_topics_policy_group": ADMINS}),
        ),
    ];
    run_cases(&app, "PATCH", "/api/v1/realm", &table).await;
    assert_eq!(
        realm_state(&app, HAMLET).await["realm_can_set_topics_policy_group"],
        ADMINS
    );
}

// ---- PATCH /streams/{id} -----------------------------------------------------------

#[actix_web::test]
async fn a_channel_policy_by_role() {
    let app = TestApp::spawn().await;
    let design = app.stream_id("design").await;
    let verona = app.stream_id("Verona").await;
    let design_path = format!("/api/v1/streams/{design}");
    let verona_path = format!("/api/v1/streams/{verona}");
    let policy = |v: &'static str| [("topics_policy", v)];
    // Channel administrators who are in `can_set_topics_policy_group` (members), and
    // organization administrators.
    run_cases(
        &app,
        "PATCH",
        &design_path,
        &[
            ok(HAMLET, p(&policy("disable_empty_topic")), json!({})),
            ok(IAGO, p(&policy("allow_empty_topic")), json!({})),
            ok(DESDEMONA, p(&policy("inherit")), json!({})),
            // The same value again is no change.
            ok(DESDEMONA, p(&policy("inherit")), json!({})),
            bad(HAMLET, p(&policy("bogus")), INVALID),
            // A plain string here, not JSON.
            bad(HAMLET, p(&policy("\"inherit\"")), INVALID),
            // Not its administrators: the channel check comes first.
            bad(
                CORDELIA,
                p(&policy("disable_empty_topic")),
                NOT_CHANNEL_ADMIN,
            ),
            bad(SHIVA, p(&policy("disable_empty_topic")), NOT_CHANNEL_ADMIN),
        ],
    )
    .await;
    run_cases(
        &app,
        "PATCH",
        &verona_path,
        &[
            bad(HAMLET, p(&policy("disable_empty_topic")), NOT_CHANNEL_ADMIN),
            bad(
                POLONIUS,
                p(&policy("disable_empty_topic")),
                NOT_CHANNEL_ADMIN,
            ),
            ok(IAGO, p(&policy("empty_topic_only")), json!({})),
        ],
    )
    .await;
    assert_eq!(
        channel(&app, "Verona").await["topics_policy"],
        "empty_topic_only"
    );
    // Only administrators once the realm's setting says so; `inherit` needs nothing.
    app.ok(
        "PATCH",
        "/api/v1/realm",
        IAGO,
        &[(
            "can_set_topics_policy_group",
            &format!(r#"{{"new": {ADMINS}}}"#),
        )],
    )
    .await;
    run_cases(
        &app,
        "PATCH",
        &design_path,
        &[
            bad(HAMLET, p(&policy("disable_empty_topic")), INSUFFICIENT),
            bad(HAMLET, p(&policy("empty_topic_only")), INSUFFICIENT),
            ok(HAMLET, p(&policy("inherit")), json!({})),
            ok(IAGO, p(&policy("disable_empty_topic")), json!({})),
        ],
    )
    .await;
    assert_eq!(
        channel(&app, "design").await["topics_policy"],
        "disable_empty_topic"
    );
}

#[actix_web::test]
async fn empty_topic_only_needs_every_message_in_the_empty_topic() {
    let app = TestApp::spawn().await;
    let body = app
        .ok(
            "POST",
            "/api/v1/channels/create",
            HAMLET,
            &[("name", "lounge")],
        )
        .await;
    let id = body["id"].as_i64().unwrap();
    let path = format!("/api/v1/streams/{id}");
    let only = [("topics_policy", "empty_topic_only")];
    let inherit = [("topics_policy", "inherit")];
    // Empty, or only messages in the empty topic: allowed (its notice goes to the empty
    // topic too).
    assert_sent(send(&app, HAMLET, "lounge", "").await);
    app.ok("PATCH", &path, HAMLET, &only).await;
    // Back to `inherit`: that notice goes to "channel events", a named topic, so the
    // channel cannot go back at once (as in Zulip).
    app.ok("PATCH", &path, HAMLET, &inherit).await;
    let events = newest(&app, HAMLET, "lounge").await;
    assert_eq!(events["subject"], "channel events");
    let chatter = assert_sent(send(&app, HAMLET, "lounge", "chatter").await);
    app.err(
        "PATCH",
        &path,
        HAMLET,
        &only,
        400,
        "BAD_REQUEST",
        NAMED_TOPICS,
    )
    .await;
    app.err(
        "PATCH",
        &path,
        IAGO,
        &only,
        400,
        "BAD_REQUEST",
        NAMED_TOPICS,
    )
    .await;
    // Every named topic moved into the empty one: allowed again.
    for id in [chatter, events["id"].as_u64().unwrap()] {
        app.ok(
            "PATCH",
            &format!("/api/v1/messages/{id}"),
            HAMLET,
            &[("topic", ""), ("propagate_mode", "change_all")],
        )
        .await;
    }
    app.ok("PATCH", &path, HAMLET, &only).await;
    assert_eq!(
        channel(&app, "lounge").await["topics_policy"],
        "empty_topic_only"
    );
}

#[actix_web::test]
async fn a_channel_change_sends_an_event_and_a_notice() {
    let app = TestApp::spawn().await;
    let design = app.stream_id("design").await;
    let hamlet = app.user_id(HAMLET).await;
    let name = app.ok("GET", "/api/v1/users/me", HAMLET, &[]).await["full_name"]
        .as_str()
        .unwrap()
        .to_owned();
    let queue = app
        .register(CORDELIA, &[("event_types", r#"["stream", "message"]"#)])
        .await;
    let path = format!("/api/v1/streams/{design}");
    app.ok(
        "PATCH",
        &path,
        HAMLET,
        &[("topics_policy", "disable_empty_topic")],
    )
    .await;
    let events = app.events(CORDELIA, &queue).await;
    assert_eq!(events.len(), 2, "{events:?}");
    let mut update = events[0].clone();
    update.as_object_mut().unwrap().remove("id");
    assert_eq!(
        update,
        json!({"type": "stream", "op": "update", "stream_id": design, "name": "design",
               "property": "topics_policy", "value": "disable_empty_topic"})
    );
    assert_eq!(events[1]["type"], "message");
    let notice = newest(&app, CORDELIA, "design").await;
    assert_eq!(notice["sender_email"], "notification-bot@zulip.com");
    assert_eq!(notice["subject"], "channel events");
    assert_eq!(
        notice["content"],
        format!(
            "@_**{name}|{hamlet}** changed the \"Allow posting to the *general chat* topic?\" \
             setting from **Automatic** to **No *general chat* topic**."
        )
    );
    assert_eq!(events[1]["message"]["id"], notice["id"]);
    // No change, no event and no notice.
    app.ok(
        "PATCH",
        &path,
        HAMLET,
        &[("topics_policy", "disable_empty_topic")],
    )
    .await;
    assert_eq!(app.events(CORDELIA, &queue).await.len(), 2);
    // Into a general-chat-only channel the notice goes to the empty topic.
    app.ok("PATCH", &path, IAGO, &[("topics_policy", "inherit")])
        .await;
    let body = app
        .ok(
            "POST",
            "/api/v1/channels/create",
            IAGO,
            &[("name", "quiet")],
        )
        .await;
    let quiet = body["id"].as_i64().unwrap();
    app.ok(
        "PATCH",
        &format!("/api/v1/streams/{quiet}"),
        IAGO,
        &[("topics_policy", "empty_topic_only")],
    )
    .await;
    let notice = newest(&app, IAGO, "quiet").await;
    assert_eq!(notice["subject"], "");
    assert!(notice["content"]
        .as_str()
        .unwrap()
        .ends_with("from **Automatic** to **Only *general chat* topic allowed**."));
    // The realm's value shows as the channel's only through `inherit`.
    let state = app
        .ok(
            "POST",
            "/api/v1/register",
            IAGO,
            &[("fetch_event_types", r#"["subscription"]"#)],
        )
        .await;
    let sub = state["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "quiet")
        .unwrap()
        .clone();
    assert_eq!(sub["topics_policy"], "empty_topic_only");
}

// ---- creation ----------------------------------------------------------------------

#[actix_web::test]
async fn a_policy_set_at_creation() {
    let app = TestApp::spawn().await;
    // JSON-encoded on both creation endpoints.
    let quoted = |v: &str| format!("\"{v}\"");
    let only = quoted("empty_topic_only");
    let disable = quoted("disable_empty_topic");
    app.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        HAMLET,
        &[
            ("subscriptions", r#"[{"name": "made by subscribing"}]"#),
            ("topics_policy", &only),
        ],
    )
    .await;
    assert_eq!(
        channel(&app, "made by subscribing").await["topics_policy"],
        "empty_topic_only"
    );
    app.ok(
        "POST",
        "/api/v1/channels/create",
        HAMLET,
        &[("name", "made directly"), ("topics_policy", &disable)],
    )
    .await;
    assert_eq!(
        channel(&app, "made directly").await["topics_policy"],
        "disable_empty_topic"
    );
    // Not given, or null: `inherit`.
    app.ok(
        "POST",
        "/api/v1/channels/create",
        HAMLET,
        &[("name", "plain"), ("topics_policy", "null")],
    )
    .await;
    assert_eq!(channel(&app, "plain").await["topics_policy"], "inherit");
    for path in ["/api/v1/users/me/subscriptions", "/api/v1/channels/create"] {
        let params = |name: &'static str, v: &str| -> Vec<(&'static str, String)> {
            vec![
                ("name", name.to_owned()),
                ("subscriptions", format!(r#"[{{"name": "{name}"}}]"#)),
                ("topics_policy", v.to_owned()),
            ]
        };
        let table = [
            bad(HAMLET, params("x1", &quoted("bogus")), INVALID),
            bad(
                HAMLET,
                params("x2", "empty_topic_only"),
                "topics_policy is not valid JSON",
            ),
            bad(HAMLET, params("x3", "7"), "topics_policy is not a string"),
            bad(POLONIUS, params("x4", &only), "Not allowed for guest users"),
        ];
        let mut table = table.to_vec();
        for c in &mut table {
            // Each endpoint reads its own parameter and reports the other as ignored.
            let unused = if path.ends_with("create") {
                "subscriptions"
            } else {
                "name"
            };
            c.params.retain(|(k, _)| *k != unused);
        }
        run_cases(&app, "POST", path, &table).await;
    }
    // Only the realm's `can_set_topics_policy_group` may choose one (`inherit` is free).
    app.ok(
        "PATCH",
        "/api/v1/realm",
        IAGO,
        &[(
            "can_set_topics_policy_group",
            &format!(r#"{{"new": {ADMINS}}}"#),
        )],
    )
    .await;
    app.err(
        "POST",
        "/api/v1/channels/create",
        HAMLET,
        &[("name", "refused"), ("topics_policy", &disable)],
        400,
        "BAD_REQUEST",
        INSUFFICIENT,
    )
    .await;
    // Also when subscribing to a channel that exists (Zulip checks every item).
    app.err(
        "POST",
        "/api/v1/users/me/subscriptions",
        HAMLET,
        &[
            ("subscriptions", r#"[{"name": "Verona"}]"#),
            ("topics_policy", &disable),
        ],
        400,
        "BAD_REQUEST",
        INSUFFICIENT,
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/channels/create",
        HAMLET,
        &[
            ("name", "inheriting"),
            ("topics_policy", &quoted("inherit")),
        ],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/channels/create",
        IAGO,
        &[("name", "by an admin"), ("topics_policy", &disable)],
    )
    .await;
    assert_eq!(
        channel(&app, "by an admin").await["topics_policy"],
        "disable_empty_topic"
    );
}

// ---- enforcement -------------------------------------------------------------------

#[actix_web::test]
async fn sends_follow_the_channel_policy_or_the_realm_one() {
    let app = TestApp::spawn().await;
    // Allowed everywhere by default.
    assert_sent(send(&app, HAMLET, "Verona", "").await);
    set_realm(&app, "disable_empty_topic").await;
    // `(no topic)` and the realm's display name are the empty topic too.
    for topic in ["", "  ", "(no topic)", "general chat"] {
        assert_refused(send(&app, HAMLET, "Verona", topic).await, NO_EMPTY_TOPIC);
    }
    assert_sent(send(&app, HAMLET, "Verona", "named").await);
    // Direct messages have no topics.
    let othello = app.user_id(OTHELLO).await.to_string();
    app.ok(
        "POST",
        "/api/v1/messages",
        HAMLET,
        &[
            ("type", "direct"),
            ("to", &format!("[{othello}]")),
            ("content", "hi"),
        ],
    )
    .await;
    // A channel's own policy wins over the realm's.
    set_channel(&app, "Verona", "allow_empty_topic").await;
    assert_sent(send(&app, HAMLET, "Verona", "").await);
    set_realm(&app, "allow_empty_topic").await;
    set_channel(&app, "Verona", "disable_empty_topic").await;
    assert_refused(send(&app, HAMLET, "Verona", "").await, NO_EMPTY_TOPIC);
    assert_sent(send(&app, IAGO, "Verona", "named").await);
    // General chat only.
    set_channel(&app, "design", "empty_topic_only").await;
    assert_refused(
        send(&app, HAMLET, "design", "named").await,
        ONLY_EMPTY_TOPIC,
    );
    let id = assert_sent(send(&app, HAMLET, "design", "(no topic)").await);
    let m = newest(&app, HAMLET, "design").await;
    assert_eq!((m["id"].as_u64(), &m["subject"]), (Some(id), &json!("")));
    // Access comes first: a channel the sender cannot post to says so.
    let (status, body) = send(&app, HAMLET, "nonexistent", "").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("STREAM_DOES_NOT_EXIST"))
    );
}

#[actix_web::test]
async fn moves_follow_the_target_channel_policy() {
    let app = TestApp::spawn().await;
    let edit = |id: u64, params: Vec<(&'static str, String)>| {
        let app = &app;
        async move {
            let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
            app.call("PATCH", &format!("/api/v1/messages/{id}"), HAMLET, &params)
                .await
        }
    };
    let in_empty = assert_sent(send(&app, HAMLET, "Verona", "").await);
    let named = assert_sent(send(&app, HAMLET, "Verona", "named").await);
    set_channel(&app, "Verona", "disable_empty_topic").await;
    // Into the empty topic: refused, whatever spelling.
    for topic in ["", "(no topic)", "general chat"] {
        assert_refused(
            edit(named, vec![("topic", topic.into())]).await,
            NO_EMPTY_TOPIC,
        );
    }
    // A message already there may still be edited, and moved out.
    let (status, body) = edit(in_empty, vec![("content", "edited".into())]).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = edit(in_empty, vec![("topic", "moved out".into())]).await;
    assert_eq!(status, 200, "{body}");
    // Into another channel: its policy counts, also when only the channel changes.
    let design = app.stream_id("design").await.to_string();
    let verona = app.stream_id("Verona").await.to_string();
    let devel_empty = assert_sent(send(&app, HAMLET, "devel", "").await);
    assert_refused(
        edit(devel_empty, vec![("stream_id", verona.clone())]).await,
        NO_EMPTY_TOPIC,
    );
    // design takes the empty topic (it inherits the realm's default).
    let (status, body) = edit(
        named,
        vec![("stream_id", design.clone()), ("topic", "".into())],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Back to Verona: the empty topic it is in now is refused there.
    assert_refused(
        edit(named, vec![("stream_id", verona.clone())]).await,
        NO_EMPTY_TOPIC,
    );
    let (status, body) = edit(
        named,
        vec![("stream_id", verona.clone()), ("topic", "back".into())],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // A general-chat-only channel takes only the empty topic.
    set_channel(&app, "design", "empty_topic_only").await;
    assert_refused(
        edit(named, vec![("stream_id", design.clone())]).await,
        ONLY_EMPTY_TOPIC,
    );
    assert_refused(
        edit(
            named,
            vec![("stream_id", design.clone()), ("topic", "other".into())],
        )
        .await,
        ONLY_EMPTY_TOPIC,
    );
    let (status, body) = edit(
        named,
        vec![("stream_id", design.clone()), ("topic", "".into())],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(message(&app, HAMLET, named).await["subject"], "");
    assert_refused(
        edit(named, vec![("topic", "named again".into())]).await,
        ONLY_EMPTY_TOPIC,
    );
    // The realm's policy for channels that inherit it.
    set_realm(&app, "disable_empty_topic").await;
    let social = assert_sent(send(&app, HAMLET, "social", "t").await);
    assert_refused(
        edit(social, vec![("topic", "".into())]).await,
        NO_EMPTY_TOPIC,
    );
}

#[actix_web::test]
async fn scheduled_messages_follow_the_policy_when_scheduled_edited_and_delivered() {
    let clock = ManualClock::new(START_MS);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let verona = app.stream_id("Verona").await.to_string();
    let design = app.stream_id("design").await.to_string();
    let at = (START + 60).to_string();
    let schedule = |to: &str, topic: &str| {
        vec![
            ("type", "stream".to_owned()),
            ("to", to.to_owned()),
            ("topic", topic.to_owned()),
            ("content", "later".to_owned()),
            ("scheduled_delivery_timestamp", at.clone()),
        ]
    };
    let call = |method: &'static str, path: String, params: Vec<(&'static str, String)>| {
        let app = &app;
        async move {
            let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
            app.call(method, &path, HAMLET, &params).await
        }
    };
    let create = "/api/v1/scheduled_messages".to_owned();
    // Scheduled while allowed; then the channel refuses the empty topic.
    let (status, body) = call("POST", create.clone(), schedule(&verona, "")).await;
    assert_eq!(status, 200, "{body}");
    let doomed = body["scheduled_message_id"].as_u64().unwrap();
    set_channel(&app, "Verona", "disable_empty_topic").await;
    assert_refused(
        call("POST", create.clone(), schedule(&verona, "")).await,
        NO_EMPTY_TOPIC,
    );
    assert_refused(
        call("POST", create.clone(), schedule(&verona, "(no topic)")).await,
        NO_EMPTY_TOPIC,
    );
    let (status, body) = call("POST", create.clone(), schedule(&verona, "named")).await;
    assert_eq!(status, 200, "{body}");
    let fine = body["scheduled_message_id"].as_u64().unwrap();
    // Edits are checked as creations are.
    assert_refused(
        call(
            "PATCH",
            format!("/api/v1/scheduled_messages/{fine}"),
            vec![("topic", "".into())],
        )
        .await,
        NO_EMPTY_TOPIC,
    );
    set_channel(&app, "design", "empty_topic_only").await;
    assert_refused(
        call(
            "PATCH",
            format!("/api/v1/scheduled_messages/{fine}"),
            vec![
                ("type", "stream".into()),
                ("to", design.clone()),
                ("topic", "named".into()),
            ],
        )
        .await,
        ONLY_EMPTY_TOPIC,
    );
    // Delivery: the one the channel now refuses fails; the other is sent.
    clock.advance_ms(60_000);
    app.deliver_scheduled().await;
    let left = app
        .ok("GET", "/api/v1/scheduled_messages", HAMLET, &[])
        .await;
    let left = left["scheduled_messages"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["scheduled_message_id"], doomed);
    assert_eq!(left[0]["failed"], true);
    let m = newest(&app, HAMLET, "Verona").await;
    assert_eq!(
        (&m["subject"], &m["content"]),
        (&json!("named"), &json!("later"))
    );
}

// ---- restart -----------------------------------------------------------------------

#[actix_web::test]
async fn both_policies_survive_a_restart() {
    let mut app = TestApp::spawn_durable().await;
    set_realm(&app, "disable_empty_topic").await;
    set_channel(&app, "design", "empty_topic_only").await;
    app.ok(
        "POST",
        "/api/v1/channels/create",
        IAGO,
        &[
            ("name", "strict"),
            ("topics_policy", "\"allow_empty_topic\""),
        ],
    )
    .await;
    for round in 0..2 {
        let state = realm_state(&app, HAMLET).await;
        assert_eq!(
            state["realm_topics_policy"], "disable_empty_topic",
            "round {round}"
        );
        assert_eq!(state["realm_mandatory_topics"], true, "round {round}");
        assert_eq!(
            channel(&app, "design").await["topics_policy"],
            "empty_topic_only"
        );
        assert_eq!(
            channel(&app, "strict").await["topics_policy"],
            "allow_empty_topic"
        );
        assert_eq!(channel(&app, "Verona").await["topics_policy"], "inherit");
        assert_refused(send(&app, HAMLET, "Verona", "").await, NO_EMPTY_TOPIC);
        assert_refused(send(&app, HAMLET, "design", "x").await, ONLY_EMPTY_TOPIC);
        if round == 0 {
            app.restart().await;
        }
    }
}
