//! Personal settings (`PATCH /settings` and its legacy aliases), the realm's defaults
//! for new users (`PATCH /realm/user_settings_defaults`) and read receipts
//! (`GET /messages/{id}/read_receipts`): every rule and error text, the events in both
//! capability modes, `/register`, restarts and `kill -9`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::child::ChildServer;
use crate::common::*;
use hearth::realm::ManualClock;
use serde_json::{json, Value};

const SETTINGS: &str = "/api/v1/settings";
const DEFAULTS: &str = "/api/v1/realm/user_settings_defaults";
const REALM: &str = "/api/v1/realm";

/// `user_settings` of `/register` for `who`.
async fn settings_of(s: &TestApp, who: &str) -> Value {
    s.ok(
        "POST",
        "/api/v1/register",
        who,
        &[("fetch_event_types", r#"["user_settings"]"#)],
    )
    .await["user_settings"]
        .clone()
}

/// `realm_user_settings_defaults` of `/register`.
async fn defaults_of(s: &TestApp, who: &str) -> Value {
    s.ok(
        "POST",
        "/api/v1/register",
        who,
        &[("fetch_event_types", r#"["realm_user_settings_defaults"]"#)],
    )
    .await["realm_user_settings_defaults"]
        .clone()
}

/// Zulip's defaults, before anyone changes anything.
#[actix_web::test]
async fn register_answers_zulips_defaults() {
    let s = TestApp::spawn().await;
    let mine = settings_of(&s, HAMLET).await;
    for (k, v) in [
        ("twenty_four_hour_time", json!(false)),
        ("color_scheme", json!(1)),
        ("web_font_size_px", json!(16)),
        ("emojiset", json!("google")),
        ("user_list_style", json!(3)),
        ("web_home_view", json!("inbox")),
        ("default_language", json!("en")),
        ("notification_sound", json!("zulip")),
        ("email_notifications_batching_period_seconds", json!(120)),
        (
            "resolved_topic_notice_auto_read_policy",
            json!("except_followed"),
        ),
        ("send_read_receipts", json!(true)),
        ("presence_enabled", json!(true)),
        ("timezone", json!("")),
        ("available_notification_sounds", json!(["zulip"])),
    ] {
        assert_eq!(mine[k], v, "{k}");
    }
    assert_eq!(mine["emojiset_choices"].as_array().unwrap().len(), 4);
    let defaults = defaults_of(&s, HAMLET).await;
    assert!(defaults.get("timezone").is_none());
    assert_eq!(defaults["emojiset"], "google");
    assert_eq!(defaults["send_read_receipts"], true);
    // Every personal setting but the time zone has a realm default.
    let mut a = keys(&mine);
    a.retain(|k| k != "timezone");
    assert_eq!(a, keys(&defaults));
    let realm = s
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("fetch_event_types", r#"["realm"]"#)],
        )
        .await;
    assert_eq!(realm["realm_enable_read_receipts"], true);
    assert_eq!(realm["realm_name_changes_disabled"], false);
    assert_eq!(realm["realm_email_changes_disabled"], false);
}

/// Every kind of setting is stored and `/register` answers it, in `user_settings` and
/// (without `user_settings_object`) in the legacy top-level copies; parameters that
/// are no setting are reported as ignored; an unchanged value changes nothing.
#[actix_web::test]
async fn settings_are_stored_per_user() {
    let s = TestApp::spawn().await;
    let body = s
        .ok(
            "PATCH",
            SETTINGS,
            HAMLET,
            &[
                ("twenty_four_hour_time", "true"),
                ("color_scheme", "2"),
                ("web_font_size_px", "20"),
                ("emojiset", "text"),
                ("web_home_view", "recent_topics"),
                ("web_animate_image_previews", "never"),
                ("default_language", "de"),
                ("timezone", "Europe/Paris"),
                ("notification_sound", "none"),
                ("email_notifications_batching_period_seconds", "600"),
                ("resolved_topic_notice_auto_read_policy", "never"),
                ("desktop_icon_count_display", "4"),
                ("email_address_visibility", "5"),
                ("bogus", "1"),
            ],
        )
        .await;
    assert_eq!(body["ignored_parameters_unsupported"], json!(["bogus"]));
    assert_eq!(
        keys(&body),
        sorted(&["ignored_parameters_unsupported", "msg", "result"])
    );
    let mine = settings_of(&s, HAMLET).await;
    for (k, v) in [
        ("twenty_four_hour_time", json!(true)),
        ("color_scheme", json!(2)),
        ("web_font_size_px", json!(20)),
        ("emojiset", json!("text")),
        ("web_home_view", json!("recent_topics")),
        ("web_animate_image_previews", json!("never")),
        ("default_language", json!("de")),
        ("timezone", json!("Europe/Paris")),
        ("notification_sound", json!("none")),
        ("email_notifications_batching_period_seconds", json!(600)),
        ("resolved_topic_notice_auto_read_policy", json!("never")),
        ("desktop_icon_count_display", json!(4)),
        ("email_address_visibility", json!(5)),
    ] {
        assert_eq!(mine[k], v, "{k}");
    }
    // Only hamlet's changed.
    assert_eq!(settings_of(&s, OTHELLO).await["color_scheme"], 1);
    // The time zone is part of his user data.
    let me = s.ok("GET", "/api/v1/users/me", HAMLET, &[]).await;
    assert_eq!(me["timezone"], "Europe/Paris");
    // Legacy copies at the top level.
    let legacy = s
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[(
                "fetch_event_types",
                r#"["update_display_settings","update_global_notifications"]"#,
            )],
        )
        .await;
    assert_eq!(legacy["emojiset"], "text");
    assert_eq!(legacy["timezone"], "Europe/Paris");
    assert_eq!(legacy["notification_sound"], "none");
    assert_eq!(legacy["desktop_icon_count_display"], 4);
    assert!(legacy.get("user_list_style").is_none(), "a modern setting");
    assert!(legacy["emojiset_choices"].is_array());
    assert_eq!(legacy["available_notification_sounds"], json!(["zulip"]));
    // Setting a value back to Zulip's default works too.
    s.ok("PATCH", SETTINGS, HAMLET, &[("color_scheme", "1")])
        .await;
    assert_eq!(settings_of(&s, HAMLET).await["color_scheme"], 1);
}

/// The type and value checks, with Zulip's texts, for every role (the parameters are
/// checked before anything else, in alphabetical order, then `check_settings_values`).
#[actix_web::test]
async fn every_refusal_has_zulips_text() {
    let s = TestApp::spawn().await;
    let not_in_list =
        |k: &str| format!("Invalid {k}: Value error, Not in the list of possible values");
    let cases: Vec<(Vec<(&str, &str)>, String)> = vec![
        (
            vec![("enter_sends", "yes")],
            "enter_sends is not valid JSON".into(),
        ),
        (
            vec![("enter_sends", "1")],
            "enter_sends is not a boolean".into(),
        ),
        (
            vec![("web_font_size_px", "\"big\"")],
            "web_font_size_px is not an integer".into(),
        ),
        (vec![("color_scheme", "7")], not_in_list("color_scheme")),
        (
            vec![("demote_inactive_streams", "0")],
            not_in_list("demote_inactive_streams"),
        ),
        (
            vec![("user_list_style", "4")],
            not_in_list("user_list_style"),
        ),
        (
            vec![("web_channel_default_view", "5")],
            not_in_list("web_channel_default_view"),
        ),
        (
            vec![("desktop_icon_count_display", "5")],
            not_in_list("desktop_icon_count_display"),
        ),
        (
            vec![("email_address_visibility", "6")],
            not_in_list("email_address_visibility"),
        ),
        (vec![("emojiset", "apple")], not_in_list("emojiset")),
        (
            vec![("web_home_view", "feed")],
            not_in_list("web_home_view"),
        ),
        (
            vec![("web_animate_image_previews", "sometimes")],
            not_in_list("web_animate_image_previews"),
        ),
        (
            vec![("timezone", "Mars/Olympus")],
            "Invalid timezone: Value error, Not a recognized time zone".into(),
        ),
        (
            vec![("resolved_topic_notice_auto_read_policy", "sometimes")],
            "Invalid resolved_topic_notice_auto_read_policy".into(),
        ),
        (
            vec![("default_language", "xx")],
            "Invalid default_language".into(),
        ),
        (
            vec![("notification_sound", "ding")],
            "Invalid notification sound 'ding'".into(),
        ),
        (
            vec![("email_notifications_batching_period_seconds", "-1")],
            "Invalid email batching period: -1 seconds".into(),
        ),
        (
            vec![("email_notifications_batching_period_seconds", "604810")],
            "Invalid email batching period: 604810 seconds".into(),
        ),
        // Two bad parameters: the first in alphabetical order wins.
        (
            vec![("user_list_style", "9"), ("color_scheme", "9")],
            not_in_list("color_scheme"),
        ),
        // The parser's checks come before `check_settings_values`.
        (
            vec![("default_language", "xx"), ("web_home_view", "x")],
            not_in_list("web_home_view"),
        ),
        // `check_settings_values`' own order: language, sound, batching period.
        (
            vec![("notification_sound", "ding"), ("default_language", "xx")],
            "Invalid default_language".into(),
        ),
    ];
    for who in [GUEST, MEMBER, ADMIN, OWNER] {
        for (params, msg) in &cases {
            s.bad("PATCH", SETTINGS, who, params, msg).await;
        }
    }
    // Nothing changed.
    assert_eq!(settings_of(&s, HAMLET).await["color_scheme"], 1);
    // Bots are refused before their parameters are read.
    s.bad(
        "PATCH",
        SETTINGS,
        BOT,
        &[("color_scheme", "9")],
        "This endpoint does not accept bot requests.",
    )
    .await;
}

/// `full_name`: Zulip's `check_full_name`; with `name_changes_disabled`, a member's
/// change is ignored (silently, as Zulip), an administrator's is made.
#[actix_web::test]
async fn full_name_changes_follow_the_realm() {
    let s = TestApp::spawn().await;
    let q = s
        .register(OTHELLO, &[("event_types", r#"["realm_user"]"#)])
        .await;
    s.ok(
        "PATCH",
        SETTINGS,
        HAMLET,
        &[("full_name", "  Prince Hamlet ")],
    )
    .await;
    let me = s.ok("GET", "/api/v1/users/me", HAMLET, &[]).await;
    assert_eq!(me["full_name"], "Prince Hamlet");
    let events = s.events(OTHELLO, &q).await;
    assert_eq!(
        events[0]["person"],
        json!({"user_id": HAMLET_ID, "full_name": "Prince Hamlet"})
    );
    s.bad(
        "PATCH",
        SETTINGS,
        HAMLET,
        &[("full_name", &"x".repeat(101))],
        "Name too long!",
    )
    .await;
    s.bad(
        "PATCH",
        SETTINGS,
        HAMLET,
        &[("full_name", "   ")],
        "Name must not be empty!",
    )
    .await;
    s.bad(
        "PATCH",
        SETTINGS,
        HAMLET,
        &[("full_name", "a*b")],
        "Invalid characters in name!",
    )
    .await;
    // An administrator turns name changes off.
    let r = s
        .ok("PATCH", REALM, ADMIN, &[("name_changes_disabled", "true")])
        .await;
    assert_eq!(r["name_changes_disabled"], true);
    s.ok("PATCH", SETTINGS, HAMLET, &[("full_name", "Ignored")])
        .await;
    let me = s.ok("GET", "/api/v1/users/me", HAMLET, &[]).await;
    assert_eq!(me["full_name"], "Prince Hamlet");
    // Even an invalid name is not looked at.
    s.ok("PATCH", SETTINGS, HAMLET, &[("full_name", "a*b")])
        .await;
    s.ok("PATCH", SETTINGS, ADMIN, &[("full_name", "Iago the Admin")])
        .await;
    let me = s.ok("GET", "/api/v1/users/me", ADMIN, &[]).await;
    assert_eq!(me["full_name"], "Iago the Admin");
}

/// `email`: Zulip's checks in its order; a valid new address needs a confirmation
/// email, which hearth cannot send, so it is refused saying so.
#[actix_web::test]
async fn email_changes_are_checked_then_refused() {
    let s = TestApp::spawn().await;
    // The current address (spaces stripped) is no change.
    s.ok(
        "PATCH",
        SETTINGS,
        HAMLET,
        &[("email", " hamlet@zulip.com ")],
    )
    .await;
    s.bad(
        "PATCH",
        SETTINGS,
        HAMLET,
        &[("email", "not an address")],
        "Invalid address.",
    )
    .await;
    s.bad(
        "PATCH",
        SETTINGS,
        HAMLET,
        &[("email", OTHELLO)],
        "Already has an account.",
    )
    .await;
    s.ok(
        "DELETE",
        &format!("/api/v1/users/{PROSPERO_ID}"),
        ADMIN,
        &[],
    )
    .await;
    s.bad(
        "PATCH",
        SETTINGS,
        HAMLET,
        &[("email", "prospero@zulip.com")],
        "Account has been deactivated.",
    )
    .await;
    s.bad(
        "PATCH",
        SETTINGS,
        HAMLET,
        &[("email", "prince@zulip.com")],
        "Email address changes need a confirmation email, and this server does not send email.",
    )
    .await;
    s.ok("PATCH", REALM, ADMIN, &[("email_changes_disabled", "true")])
        .await;
    s.bad(
        "PATCH",
        SETTINGS,
        HAMLET,
        &[("email", "prince@zulip.com")],
        "Email address changes are disabled in this organization.",
    )
    .await;
    // Administrators are not held by it.
    s.bad(
        "PATCH",
        SETTINGS,
        ADMIN,
        &[("email", OTHELLO)],
        "Already has an account.",
    )
    .await;
    let me = s.ok("GET", "/api/v1/users/me", HAMLET, &[]).await;
    assert_eq!(me["delivery_email"], HAMLET);
}

async fn fetch_key(s: &TestApp, username: &str, password: &str) -> (u16, Value) {
    let (status, _, body) = s
        .post(
            "/api/v1/fetch_api_key",
            Auth::None,
            &[("username", username), ("password", password)],
        )
        .await;
    (status.as_u16(), body)
}

/// `old_password` / `new_password`: "Wrong password!", then the strength rule of
/// `POST /users`; the new password logs in, the old one no longer does, and a refusal
/// of another parameter changes nothing.
#[actix_web::test]
async fn passwords_change_as_zulip() {
    let s = TestApp::spawn().await;
    let old = "an old and long passphrase";
    let new = "a brand new long passphrase";
    s.create_user("poet@zulip.com", old, "Poet").await;
    s.bad(
        "PATCH",
        SETTINGS,
        "poet@zulip.com",
        &[("old_password", "wrong"), ("new_password", new)],
        "Wrong password!",
    )
    .await;
    s.bad(
        "PATCH",
        SETTINGS,
        "poet@zulip.com",
        &[("new_password", new)],
        "Wrong password!",
    )
    .await;
    s.bad(
        "PATCH",
        SETTINGS,
        "poet@zulip.com",
        &[("old_password", old), ("new_password", "abc")],
        "New password is too weak!",
    )
    .await;
    // A bad setting is refused before the password is looked at.
    s.bad(
        "PATCH",
        SETTINGS,
        "poet@zulip.com",
        &[
            ("old_password", "wrong"),
            ("new_password", new),
            ("color_scheme", "9"),
        ],
        "Invalid color_scheme: Value error, Not in the list of possible values",
    )
    .await;
    // A user without a password (the development realm's) has no old one to give.
    s.bad(
        "PATCH",
        SETTINGS,
        HAMLET,
        &[("old_password", ""), ("new_password", new)],
        "Wrong password!",
    )
    .await;
    assert_eq!(fetch_key(&s, "poet@zulip.com", old).await.0, 200);
    s.ok(
        "PATCH",
        SETTINGS,
        "poet@zulip.com",
        &[("old_password", old), ("new_password", new)],
    )
    .await;
    assert_eq!(fetch_key(&s, "poet@zulip.com", new).await.0, 200);
    assert_eq!(fetch_key(&s, "poet@zulip.com", old).await.0, 401);
}

/// `PATCH /settings/display` and `PATCH /settings/notifications` are the same
/// endpoint, as in Zulip since feature level 80.
#[actix_web::test]
async fn legacy_aliases_are_the_same_endpoint() {
    let s = TestApp::spawn().await;
    s.ok(
        "PATCH",
        "/api/v1/settings/display",
        HAMLET,
        &[("enable_sounds", "false")],
    )
    .await;
    s.ok(
        "PATCH",
        "/api/v1/settings/notifications",
        HAMLET,
        &[("emojiset", "twitter")],
    )
    .await;
    let mine = settings_of(&s, HAMLET).await;
    assert_eq!(mine["enable_sounds"], false);
    assert_eq!(mine["emojiset"], "twitter");
    s.bad(
        "PATCH",
        "/api/v1/settings/notifications",
        HAMLET,
        &[("notification_sound", "ding")],
        "Invalid notification sound 'ding'",
    )
    .await;
    s.bad(
        "PATCH",
        "/api/v1/settings/display",
        BOT,
        &[],
        "This endpoint does not accept bot requests.",
    )
    .await;
}

/// The events of `do_change_user_setting`: `user_settings` always; the legacy
/// `update_display_settings` / `update_global_notifications` only for queues without
/// `user_settings_object` and only for the legacy groups; `language_name` with the
/// language; the time zone also as a `realm_user` update to everyone.
#[actix_web::test]
async fn events_in_both_capability_modes() {
    let s = TestApp::spawn().await;
    let types = (
        "event_types",
        r#"["user_settings","update_display_settings","update_global_notifications","realm_user"]"#,
    );
    let modern = s
        .register(
            HAMLET,
            &[
                types,
                ("client_capabilities", r#"{"user_settings_object": true}"#),
            ],
        )
        .await;
    let legacy = s.register(HAMLET, &[types]).await;
    let other = s.register(OTHELLO, &[types]).await;
    // The development realm shows fake addresses (`user<ID>@...`).
    let me = s.ok("GET", "/api/v1/users/me", HAMLET, &[]).await;
    let email = me["email"].as_str().unwrap().to_owned();
    let email = email.as_str();
    s.ok(
        "PATCH",
        SETTINGS,
        HAMLET,
        &[
            ("default_language", "fr"),
            ("enable_sounds", "false"),
            ("user_list_style", "1"),
            ("timezone", "Asia/Tokyo"),
            // Unchanged: no event.
            ("emojiset", "google"),
        ],
    )
    .await;
    let got = s.events(HAMLET, &modern).await;
    let bodies: Vec<Value> = got
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect();
    // Alphabetical order of the parameters, the time zone last.
    assert_eq!(
        bodies,
        vec![
            json!({"type": "user_settings", "op": "update", "property": "default_language", "value": "fr", "language_name": "Français"}),
            json!({"type": "user_settings", "op": "update", "property": "enable_sounds", "value": false}),
            json!({"type": "user_settings", "op": "update", "property": "user_list_style", "value": 1}),
            json!({"type": "user_settings", "op": "update", "property": "timezone", "value": "Asia/Tokyo"}),
            json!({"type": "realm_user", "op": "update", "person": {"email": email, "user_id": HAMLET_ID, "timezone": "Asia/Tokyo"}}),
        ]
    );
    let got: Vec<Value> = s
        .events(HAMLET, &legacy)
        .await
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect();
    assert_eq!(
        got,
        vec![
            json!({"type": "user_settings", "op": "update", "property": "default_language", "value": "fr", "language_name": "Français"}),
            json!({"type": "update_display_settings", "user": email, "setting_name": "default_language", "setting": "fr", "language_name": "Français"}),
            json!({"type": "user_settings", "op": "update", "property": "enable_sounds", "value": false}),
            json!({"type": "update_global_notifications", "user": email, "notification_name": "enable_sounds", "setting": false}),
            json!({"type": "user_settings", "op": "update", "property": "user_list_style", "value": 1}),
            json!({"type": "user_settings", "op": "update", "property": "timezone", "value": "Asia/Tokyo"}),
            json!({"type": "update_display_settings", "user": email, "setting_name": "timezone", "setting": "Asia/Tokyo"}),
            json!({"type": "realm_user", "op": "update", "person": {"email": email, "user_id": HAMLET_ID, "timezone": "Asia/Tokyo"}}),
        ]
    );
    // Others see only the time zone.
    let got = s.events(OTHELLO, &other).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["person"]["timezone"], "Asia/Tokyo");
}

/// `presence_enabled` keeps its behaviour: the setting `away` changes, and a change
/// shows the user offline at once.
#[actix_web::test]
async fn presence_enabled_is_the_same_setting_as_away() {
    // A still clock: the ping and the change happen at the same second.
    let s = TestApp::spawn_with_clock(ManualClock::new(START_MS)).await;
    s.ok(
        "POST",
        "/api/v1/users/me/presence",
        HAMLET,
        &[("status", "active")],
    )
    .await;
    let types = (
        "event_types",
        r#"["user_settings","update_global_notifications","presence"]"#,
    );
    let modern = s
        .register(
            HAMLET,
            &[
                types,
                (
                    "client_capabilities",
                    r#"{"user_settings_object": true, "simplified_presence_events": true}"#,
                ),
            ],
        )
        .await;
    let legacy = s.register(HAMLET, &[types]).await;
    s.ok("PATCH", SETTINGS, HAMLET, &[("presence_enabled", "false")])
        .await;
    assert_eq!(settings_of(&s, HAMLET).await["presence_enabled"], false);
    // As `do_change_user_setting`: the setting's events, then a presence update that
    // shows the user idle long enough ago to be offline.
    let kinds = |events: &[Value]| -> Vec<String> {
        events
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .collect()
    };
    let events = s.events(HAMLET, &modern).await;
    assert_eq!(kinds(&events), ["user_settings", "presence"]);
    let entry = &events[1]["presences"][HAMLET_ID.to_string()];
    // `OFFLINE_THRESHOLD_SECS` (200) + 120 before the change.
    assert_eq!(entry["active_timestamp"], START, "{entry}");
    assert_eq!(entry["idle_timestamp"], START - 200 - 120, "{entry}");
    let events = s.events(HAMLET, &legacy).await;
    assert_eq!(
        kinds(&events),
        ["user_settings", "update_global_notifications", "presence"]
    );
    assert_eq!(events[1]["notification_name"], "presence_enabled");
    assert_eq!(events[1]["setting"], false);
    s.ok(
        "POST",
        "/api/v1/users/me/status",
        HAMLET,
        &[("away", "false")],
    )
    .await;
    assert_eq!(settings_of(&s, HAMLET).await["presence_enabled"], true);
    s.ok(
        "POST",
        "/api/v1/users/me/status",
        HAMLET,
        &[("away", "true")],
    )
    .await;
    assert_eq!(settings_of(&s, HAMLET).await["presence_enabled"], false);
    s.ok("PATCH", SETTINGS, HAMLET, &[("presence_enabled", "true")])
        .await;
    assert_eq!(settings_of(&s, HAMLET).await["presence_enabled"], true);
}

/// The presence a change of `presence_enabled` refreshes is made by the hub in the
/// realm's order, whether or not any event queue listens, and is there when the change
/// is answered: by the setting and by a status with `away`.
#[actix_web::test]
async fn presence_is_refreshed_with_no_queue_listening() {
    let s = TestApp::spawn_with_clock(ManualClock::new(START_MS)).await;
    let entry = || {
        s.server()
            .hub("localhost")
            .unwrap()
            .presence()
            .get(HAMLET_ID as u64)
    };
    s.ok(
        "POST",
        "/api/v1/users/me/presence",
        HAMLET,
        &[("status", "active")],
    )
    .await;
    let pinged = entry().unwrap();
    assert_eq!(pinged.last_connected, START);
    s.ok("PATCH", SETTINGS, HAMLET, &[("presence_enabled", "false")])
        .await;
    let off = entry().unwrap();
    assert_eq!(off.last_connected, START - 200 - 120, "{off:?}");
    assert!(off.update_id > pinged.update_id);
    // Setting it to what it is refreshes nothing.
    s.ok("PATCH", SETTINGS, HAMLET, &[("presence_enabled", "false")])
        .await;
    assert_eq!(entry().unwrap().update_id, off.update_id);
    // A status with `away: false` turns it back on, and the user is active at once.
    s.ok(
        "POST",
        "/api/v1/users/me/status",
        HAMLET,
        &[("away", "false")],
    )
    .await;
    let on = entry().unwrap();
    assert_eq!(on.last_active, Some(START), "{on:?}");
    assert_eq!(on.last_connected, START, "{on:?}");
}

/// `PATCH /realm/user_settings_defaults`: administrators only; the realm-level subset
/// (others are ignored); its texts; its event; and new users start from it.
#[actix_web::test]
async fn realm_defaults_shape_new_users() {
    let s = TestApp::spawn().await;
    for who in [GUEST, MEMBER, "shiva@zulip.com", BOT] {
        s.err(
            "PATCH",
            DEFAULTS,
            who,
            &[("color_scheme", "9")],
            400,
            "UNAUTHORIZED_PRINCIPAL",
            NOT_ADMIN,
        )
        .await;
    }
    let not_in_list =
        |k: &str| format!("Invalid {k}: Value error, Not in the list of possible values");
    for (params, msg) in [
        (vec![("color_scheme", "9")], not_in_list("color_scheme")),
        (vec![("emojiset", "apple")], not_in_list("emojiset")),
        // Pydantic `Literal`s at the realm level.
        (
            vec![("web_home_view", "feed")],
            "Invalid web_home_view".to_owned(),
        ),
        (
            vec![("web_animate_image_previews", "x")],
            "Invalid web_animate_image_previews".to_owned(),
        ),
        (
            vec![("notification_sound", "ding")],
            "Invalid notification sound 'ding'".to_owned(),
        ),
        (
            vec![("email_notifications_batching_period_seconds", "0")],
            "Invalid email batching period: 0 seconds".to_owned(),
        ),
        (
            vec![("enter_sends", "2")],
            "enter_sends is not a boolean".to_owned(),
        ),
    ] {
        s.bad("PATCH", DEFAULTS, ADMIN, &params, &msg).await;
    }
    let q = s
        .register(
            HAMLET,
            &[("event_types", r#"["realm_user_settings_defaults"]"#)],
        )
        .await;
    let body = s
        .ok(
            "PATCH",
            DEFAULTS,
            ADMIN,
            &[
                ("emojiset", "text"),
                ("send_read_receipts", "false"),
                ("presence_enabled", "false"),
                ("web_home_view", "all_messages"),
                // Not a realm default: ignored.
                ("default_language", "xx"),
                ("timezone", "Mars/Olympus"),
                // Unchanged: no event.
                ("color_scheme", "1"),
            ],
        )
        .await;
    assert_eq!(
        body["ignored_parameters_unsupported"],
        json!(["default_language", "timezone"])
    );
    let events: Vec<Value> = s
        .events(HAMLET, &q)
        .await
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect();
    assert_eq!(
        events,
        vec![
            json!({"type": "realm_user_settings_defaults", "op": "update", "property": "emojiset", "value": "text"}),
            json!({"type": "realm_user_settings_defaults", "op": "update", "property": "presence_enabled", "value": false}),
            json!({"type": "realm_user_settings_defaults", "op": "update", "property": "send_read_receipts", "value": false}),
            json!({"type": "realm_user_settings_defaults", "op": "update", "property": "web_home_view", "value": "all_messages"}),
        ]
    );
    let d = defaults_of(&s, HAMLET).await;
    assert_eq!(d["emojiset"], "text");
    assert_eq!(d["web_home_view"], "all_messages");
    // Existing users keep theirs; new ones start from the defaults.
    assert_eq!(settings_of(&s, HAMLET).await["emojiset"], "google");
    s.create_user("newbie@zulip.com", "a long enough passphrase", "Newbie")
        .await;
    let theirs = settings_of(&s, "newbie@zulip.com").await;
    assert_eq!(theirs["emojiset"], "text");
    assert_eq!(theirs["send_read_receipts"], false);
    assert_eq!(theirs["presence_enabled"], false);
    assert_eq!(theirs["web_home_view"], "all_messages");
    assert_eq!(theirs["color_scheme"], 1);
    // The owner may too.
    s.ok("PATCH", DEFAULTS, OWNER, &[("emojiset", "twitter")])
        .await;
    assert_eq!(defaults_of(&s, HAMLET).await["emojiset"], "twitter");
}

/// `enable_read_receipts` on `PATCH /realm`: administrators; `realm` `update` event.
#[actix_web::test]
async fn read_receipts_setting_of_the_realm() {
    let s = TestApp::spawn().await;
    s.err(
        "PATCH",
        REALM,
        MEMBER,
        &[("enable_read_receipts", "false")],
        400,
        "UNAUTHORIZED_PRINCIPAL",
        NOT_ADMIN,
    )
    .await;
    s.bad(
        "PATCH",
        REALM,
        ADMIN,
        &[("enable_read_receipts", "no")],
        "enable_read_receipts is not valid JSON",
    )
    .await;
    let q = s.register(HAMLET, &[("event_types", r#"["realm"]"#)]).await;
    let body = s
        .ok(
            "PATCH",
            REALM,
            ADMIN,
            &[
                ("enable_read_receipts", "false"),
                ("name_changes_disabled", "true"),
                ("email_changes_disabled", "true"),
                ("name", "Renamed"),
            ],
        )
        .await;
    // Reported in `update_realm`'s (alphabetical) order.
    let order: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(
        order,
        [
            "result",
            "msg",
            "email_changes_disabled",
            "enable_read_receipts",
            "name",
            "name_changes_disabled"
        ]
    );
    let events = s.events(HAMLET, &q).await;
    let props: Vec<(&str, &Value)> = events
        .iter()
        .map(|e| (e["property"].as_str().unwrap(), &e["value"]))
        .collect();
    assert_eq!(
        props,
        vec![
            ("email_changes_disabled", &json!(true)),
            ("enable_read_receipts", &json!(false)),
            ("name", &json!("Renamed")),
            ("name_changes_disabled", &json!(true)),
        ]
    );
    // Unchanged: not reported.
    let body = s
        .ok("PATCH", REALM, ADMIN, &[("enable_read_receipts", "false")])
        .await;
    assert!(body.get("enable_read_receipts").is_none());
}

async fn send_to_verona(s: &TestApp, who: &str, content: &str) -> i64 {
    s.ok(
        "POST",
        "/api/v1/messages",
        who,
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "receipts"),
            ("content", content),
        ],
    )
    .await["id"]
        .as_i64()
        .unwrap()
}

async fn mark_read(s: &TestApp, who: &str, id: i64) {
    s.ok(
        "POST",
        "/api/v1/messages/flags",
        who,
        &[
            ("messages", &format!("[{id}]")),
            ("op", "add"),
            ("flag", "read"),
        ],
    )
    .await;
}

fn receipts(id: i64) -> String {
    format!("/api/v1/messages/{id}/read_receipts")
}

/// Zulip's `read_receipts`: the users who read the message, without the sender,
/// deactivated users and those who turned `send_read_receipts` off; message access
/// first, then the realm setting.
#[actix_web::test]
async fn read_receipts_list_the_readers() {
    let s = TestApp::spawn().await;
    let id = send_to_verona(&s, HAMLET, "read me").await;
    let r = s.ok("GET", &receipts(id), HAMLET, &[]).await;
    assert_eq!(r["user_ids"], json!([]));
    for who in [OTHELLO, IAGO, CORDELIA, HAMLET, "prospero@zulip.com"] {
        mark_read(&s, who, id).await;
    }
    s.ok("PATCH", SETTINGS, IAGO, &[("send_read_receipts", "false")])
        .await;
    s.ok(
        "DELETE",
        &format!("/api/v1/users/{PROSPERO_ID}"),
        ADMIN,
        &[],
    )
    .await;
    let r = s.ok("GET", &receipts(id), OTHELLO, &[]).await;
    assert_eq!(r["user_ids"], json!([CORDELIA_ID, OTHELLO_ID]));
    assert_eq!(keys(&r), sorted(&["msg", "result", "user_ids"]));
    // A bot may ask as well.
    s.ok("GET", &receipts(id), BOT, &[]).await;
    // Marking it unread takes the reader off.
    s.ok(
        "POST",
        "/api/v1/messages/flags",
        CORDELIA,
        &[
            ("messages", &format!("[{id}]")),
            ("op", "remove"),
            ("flag", "read"),
        ],
    )
    .await;
    let r = s.ok("GET", &receipts(id), HAMLET, &[]).await;
    assert_eq!(r["user_ids"], json!([OTHELLO_ID]));
    // Muting, either way, hides the reader from the asker only.
    let mute = |who: i64| format!("/api/v1/users/me/muted_users/{who}");
    s.ok("POST", &mute(HAMLET_ID), OTHELLO, &[]).await;
    let r = s.ok("GET", &receipts(id), HAMLET, &[]).await;
    assert_eq!(r["user_ids"], json!([]));
    let r = s.ok("GET", &receipts(id), CORDELIA, &[]).await;
    assert_eq!(r["user_ids"], json!([OTHELLO_ID]));
    s.ok("DELETE", &mute(HAMLET_ID), OTHELLO, &[]).await;
    s.ok("POST", &mute(OTHELLO_ID), HAMLET, &[]).await;
    let r = s.ok("GET", &receipts(id), HAMLET, &[]).await;
    assert_eq!(r["user_ids"], json!([]));
    s.ok("DELETE", &mute(OTHELLO_ID), HAMLET, &[]).await;
    let r = s.ok("GET", &receipts(id), HAMLET, &[]).await;
    assert_eq!(r["user_ids"], json!([OTHELLO_ID]));
    // Direct messages: the participants.
    let dm = s
        .ok(
            "POST",
            "/api/v1/messages",
            HAMLET,
            &[
                ("type", "direct"),
                ("to", &format!("[{OTHELLO_ID}]")),
                ("content", "psst"),
            ],
        )
        .await["id"]
        .as_i64()
        .unwrap();
    mark_read(&s, OTHELLO, dm).await;
    let r = s.ok("GET", &receipts(dm), HAMLET, &[]).await;
    assert_eq!(r["user_ids"], json!([OTHELLO_ID]));
    s.bad("GET", &receipts(dm), CORDELIA, &[], "Invalid message(s)")
        .await;
    s.bad("GET", &receipts(999_999), HAMLET, &[], "Invalid message(s)")
        .await;
    s.bad(
        "GET",
        "/api/v1/messages/abc/read_receipts",
        HAMLET,
        &[],
        "message_id is not an integer",
    )
    .await;
    // Turned off in the realm: after the access check.
    s.ok("PATCH", REALM, ADMIN, &[("enable_read_receipts", "false")])
        .await;
    for who in [HAMLET, OTHELLO, ADMIN, OWNER] {
        s.bad(
            "GET",
            &receipts(id),
            who,
            &[],
            "Read receipts are disabled in this organization.",
        )
        .await;
    }
    s.bad("GET", &receipts(dm), CORDELIA, &[], "Invalid message(s)")
        .await;
}

/// A guest reads receipts of what they may read only.
#[actix_web::test]
async fn guests_see_receipts_of_what_they_can_read() {
    let s = TestApp::spawn().await;
    s.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        HAMLET,
        &[("subscriptions", r#"[{"name": "Elsinore"}]"#)],
    )
    .await;
    let id = s
        .ok(
            "POST",
            "/api/v1/messages",
            HAMLET,
            &[
                ("type", "stream"),
                ("to", "Elsinore"),
                ("topic", "t"),
                ("content", "not for guests"),
            ],
        )
        .await["id"]
        .as_i64()
        .unwrap();
    s.bad("GET", &receipts(id), GUEST, &[], "Invalid message(s)")
        .await;
    let dm = s
        .ok(
            "POST",
            "/api/v1/messages",
            HAMLET,
            &[
                ("type", "direct"),
                ("to", &format!("[{POLONIUS_ID}]")),
                ("content", "hi"),
            ],
        )
        .await["id"]
        .as_i64()
        .unwrap();
    mark_read(&s, GUEST, dm).await;
    let r = s.ok("GET", &receipts(dm), GUEST, &[]).await;
    assert_eq!(r["user_ids"], json!([POLONIUS_ID]));
}

/// Settings, realm defaults and passwords survive a restart.
#[actix_web::test]
async fn settings_survive_a_restart() {
    let mut s = TestApp::spawn().await;
    s.ok(
        "PATCH",
        SETTINGS,
        HAMLET,
        &[
            ("emojiset", "text"),
            ("timezone", "Asia/Tokyo"),
            ("presence_enabled", "false"),
        ],
    )
    .await;
    s.ok("PATCH", DEFAULTS, ADMIN, &[("color_scheme", "3")])
        .await;
    s.ok("PATCH", REALM, ADMIN, &[("enable_read_receipts", "false")])
        .await;
    s.restart().await;
    let mine = settings_of(&s, HAMLET).await;
    assert_eq!(mine["emojiset"], "text");
    assert_eq!(mine["timezone"], "Asia/Tokyo");
    assert_eq!(mine["presence_enabled"], false);
    assert_eq!(defaults_of(&s, HAMLET).await["color_scheme"], 3);
    let realm = s
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("fetch_event_types", r#"["realm"]"#)],
        )
        .await;
    assert_eq!(realm["realm_enable_read_receipts"], false);
}

/// Every acknowledged write of this slice is in the log: `kill -9` loses none.
#[actix_web::test]
async fn settings_survive_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let data = data.to_str().unwrap();
    let args = ["--dev", "--durability", "always", "--data", data];
    let envs = [("HEARTH_METRICS_BIND", "off")];
    let http = client();
    let key = |url: String, who: &'static str| {
        let http = http.clone();
        async move {
            let (_, _, body) = send(
                http.post(format!("{url}/api/v1/dev_fetch_api_key"))
                    .form(&[("username", who)]),
            )
            .await;
            body["api_key"].as_str().unwrap().to_owned()
        }
    };
    let server = ChildServer::up(&args, &envs);
    let url = server.url.clone();
    let hamlet = key(url.clone(), HAMLET).await;
    let iago = key(url.clone(), IAGO).await;
    let patch = |path: &str, who: &str, k: &str, form: &[(&str, &str)]| {
        http.patch(format!("{url}{path}"))
            .header("Authorization", basic(who, k))
            .form(form)
    };
    for (rb, what) in [
        (
            patch(
                "/api/v1/settings",
                HAMLET,
                &hamlet,
                &[("user_list_style", "1"), ("full_name", "Hamlet K")],
            ),
            "settings",
        ),
        (
            patch(
                "/api/v1/realm/user_settings_defaults",
                IAGO,
                &iago,
                &[("enter_sends", "true")],
            ),
            "defaults",
        ),
        (
            patch(
                "/api/v1/realm",
                IAGO,
                &iago,
                &[("enable_read_receipts", "false")],
            ),
            "realm",
        ),
    ] {
        let (status, _, body) = send(rb).await;
        assert_eq!(status.as_u16(), 200, "{what}: {body}");
    }
    server.kill_9();
    let server = ChildServer::up(&args, &envs);
    let url = server.url.clone();
    let (_, _, body) = send(
        http.post(format!("{url}/api/v1/register"))
            .header("Authorization", basic(HAMLET, &hamlet))
            .form(&[(
                "fetch_event_types",
                r#"["user_settings","realm_user_settings_defaults","realm","realm_user"]"#,
            )]),
    )
    .await;
    assert_eq!(body["user_settings"]["user_list_style"], 1, "{body}");
    assert_eq!(body["full_name"], "Hamlet K");
    assert_eq!(body["realm_user_settings_defaults"]["enter_sends"], true);
    assert_eq!(body["realm_enable_read_receipts"], false);
    drop(server);
}
