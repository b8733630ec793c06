//! Users: `GET /users/me`, `GET /users`, `GET /users/{user_id}`, `GET /users/{email}`,
//! `POST /users`, and the parameter conventions they share (multipart bodies, query
//! strings on POST, `ignored_parameters_unsupported`, body size limit).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// Fields of the user object (seed 2.5) for a human, as Zulip sends them.
const HUMAN_KEYS: &[&str] = &[
    "email",
    "user_id",
    "avatar_version",
    "is_admin",
    "is_owner",
    "is_guest",
    "role",
    "is_bot",
    "full_name",
    "timezone",
    "is_active",
    "date_joined",
    "delivery_email",
    "is_imported_stub",
    "avatar_url",
];

/// Fields of `GET /users/me` (seed 2.7) for a human.
const OWN_KEYS: &[&str] = &[
    "result",
    "msg",
    "email",
    "user_id",
    "avatar_version",
    "is_admin",
    "is_owner",
    "is_guest",
    "role",
    "is_bot",
    "full_name",
    "timezone",
    "is_active",
    "date_joined",
    "delivery_email",
    "is_imported_stub",
    "avatar_url",
    "profile_data",
    "max_message_id",
];

/// Real email, full name, role, bot type, bot owner's real email.
type DevUser = (
    &'static str,
    &'static str,
    u64,
    Option<u64>,
    Option<&'static str>,
);

/// The 16 accounts of the development realm.
const DEV_USERS: &[DevUser] = &[
    ("AARON@zulip.com", "aaron", 400, None, None),
    ("ZOE@zulip.com", "Zoe", 400, None, None),
    (
        "cordelia@zulip.com",
        "Cordelia, Lear's daughter",
        400,
        None,
        None,
    ),
    ("desdemona@zulip.com", "Desdemona", 100, None, None),
    ("hamlet@zulip.com", "King Hamlet", 400, None, None),
    ("iago@zulip.com", "Iago", 200, None, None),
    (
        "othello@zulip.com",
        "Othello, the Moor of Venice",
        400,
        None,
        None,
    ),
    ("polonius@zulip.com", "Polonius", 600, None, None),
    (
        "prospero@zulip.com",
        "Prospero from The Tempest",
        400,
        None,
        None,
    ),
    ("shiva@zulip.com", "शिव", 300, None, None),
    (
        "default-bot@zulip.com",
        "Zulip Default Bot",
        400,
        Some(1),
        Some("desdemona@zulip.com"),
    ),
    (
        "webhook-bot@zulip.com",
        "Zulip Webhook Bot",
        400,
        Some(2),
        Some("ZOE@zulip.com"),
    ),
    (
        "outgoing-webhook@zulip.com",
        "Outgoing Webhook",
        400,
        Some(3),
        Some("AARON@zulip.com"),
    ),
    (
        "commit-bot@zulip.com",
        "Zulip Commit Bot",
        400,
        Some(1),
        Some("desdemona@zulip.com"),
    ),
    (
        "nagios-bot@zulip.com",
        "Zulip Nagios Bot",
        400,
        Some(1),
        Some("desdemona@zulip.com"),
    ),
    (
        "trac-bot@zulip.com",
        "Zulip Trac Bot",
        400,
        Some(1),
        Some("desdemona@zulip.com"),
    ),
];

fn gravatar(email: &str) -> String {
    use md5::{Digest, Md5};
    let hash = Md5::digest(email.to_lowercase().as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("https://secure.gravatar.com/avatar/{hex}?d=identicon&version=1")
}

/// `date_joined` is ISO 8601 at minute precision in UTC, and recent.
#[track_caller]
fn check_date_joined(v: &Value) {
    let s = v.as_str().expect("date_joined is a string");
    let t = chrono::DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M%:z")
        .unwrap_or_else(|e| panic!("date_joined {s:?}: {e}"));
    assert!(s.ends_with("+00:00"), "{s}");
    let age = chrono::Utc::now().signed_duration_since(t);
    assert!(
        age.num_minutes() >= 0 && age.num_minutes() < 60,
        "date_joined {s} is not recent"
    );
}

/// Ids of the development users, by real email.
async fn dev_ids(app: &TestApp) -> BTreeMap<String, u64> {
    let (_, _, body) = app.get_as(ADMIN, "/api/v1/users", &[]).await;
    body["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["delivery_email"].as_str().unwrap().to_owned(),
                m["user_id"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn member(members: &Value, user_id: u64) -> &Value {
    members
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["user_id"] == user_id)
        .unwrap_or_else(|| panic!("user {user_id} not in {members}"))
}

// ---------------------------------------------------------------- GET /users/me

#[actix_web::test]
async fn own_user_as_admin() {
    let app = TestApp::spawn().await;
    let reply = app.get_as(ADMIN, "/api/v1/users/me", &[]).await;
    let body = assert_success(&reply);
    assert_eq!(reply.1.get("content-type").unwrap(), "application/json");
    assert_eq!(keys(body), sorted(OWN_KEYS));
    let id = body["user_id"].as_u64().unwrap();
    assert_eq!(body["email"], format!("user{id}@zulipdev.com"));
    assert_eq!(body["delivery_email"], "iago@zulip.com");
    assert_eq!(body["full_name"], "Iago");
    assert_eq!(body["is_admin"], true);
    assert_eq!(body["is_owner"], false);
    assert_eq!(body["is_guest"], false);
    assert_eq!(body["is_bot"], false);
    assert_eq!(body["is_active"], true);
    assert_eq!(body["role"], 200);
    assert_eq!(body["timezone"], "America/New_York");
    assert_eq!(body["avatar_version"], 1);
    assert_eq!(body["is_imported_stub"], false);
    // client_gravatar is forced off for the own user: always a URL.
    assert_eq!(
        body["avatar_url"],
        "https://secure.gravatar.com/avatar/af4f06322c177ef4e1e9b2c424986b54?d=identicon&version=1"
    );
    assert!(body["profile_data"].is_object());
    assert!(body["max_message_id"].is_i64());
    check_date_joined(&body["date_joined"]);
}

#[actix_web::test]
async fn own_user_as_member_owner_guest_moderator() {
    let app = TestApp::spawn().await;
    let cases = [
        (MEMBER, "King Hamlet", 400, false, false, false, ""),
        (
            OWNER,
            "Desdemona",
            100,
            true,
            true,
            false,
            "America/St_Johns",
        ),
        (GUEST, "Polonius", 600, false, false, true, "Asia/Shanghai"),
        (
            "shiva@zulip.com",
            "शिव",
            300,
            false,
            false,
            false,
            "Asia/Kolkata",
        ),
    ];
    for (email, name, role, admin, owner, guest, tz) in cases {
        let reply = app.get_as(email, "/api/v1/users/me", &[]).await;
        let body = assert_success(&reply);
        assert_eq!(keys(body), sorted(OWN_KEYS), "{email}");
        let id = body["user_id"].as_u64().unwrap();
        assert_eq!(body["email"], format!("user{id}@zulipdev.com"), "{email}");
        assert_eq!(body["delivery_email"], email);
        assert_eq!(body["full_name"], name);
        assert_eq!(body["role"], role, "{email}");
        assert_eq!(body["is_admin"], admin, "{email}");
        assert_eq!(body["is_owner"], owner, "{email}");
        assert_eq!(body["is_guest"], guest, "{email}");
        assert_eq!(body["timezone"], tz, "{email}");
        assert_eq!(body["avatar_url"], gravatar(email));
        assert!(body["profile_data"].is_object());
        assert!(body["max_message_id"].is_i64());
    }
}

#[actix_web::test]
async fn own_user_as_bot() {
    let app = TestApp::spawn().await;
    let ids = dev_ids(&app).await;
    let reply = app.get_as(BOT, "/api/v1/users/me", &[]).await;
    let body = assert_success(&reply);
    assert_eq!(body["email"], BOT);
    assert_eq!(body["delivery_email"], BOT);
    assert_eq!(body["is_bot"], true);
    assert_eq!(body["bot_type"], 1);
    assert_eq!(body["bot_owner_id"], ids["desdemona@zulip.com"]);
    assert!(
        body.get("profile_data").is_none(),
        "bots have no profile_data: {body}"
    );
    assert!(body["max_message_id"].is_i64());
}

#[actix_web::test]
async fn own_user_reports_ignored_parameters() {
    let app = TestApp::spawn().await;
    let reply = app
        .get_as(
            ADMIN,
            "/api/v1/users/me",
            &[("bogus", "1"), ("client_gravatar", "true")],
        )
        .await;
    let body = assert_success(&reply);
    // Every success answer lists what it ignored (feature level 167): client_gravatar
    // does not apply here either.
    assert_eq!(
        body["ignored_parameters_unsupported"],
        serde_json::json!(["bogus", "client_gravatar"]),
        "{body}"
    );
    assert!(body["avatar_url"].is_string());
}

// ---------------------------------------------------------------- GET /users

#[actix_web::test]
async fn users_lists_all_sixteen_dev_accounts() {
    let app = TestApp::spawn().await;
    let reply = app.get_as(ADMIN, "/api/v1/users", &[]).await;
    let body = assert_success(&reply);
    assert_eq!(keys(body), sorted(&["result", "msg", "members"]));
    let members = &body["members"];
    assert_eq!(members.as_array().unwrap().len(), 16);
    let by_email: BTreeMap<&str, &Value> = members
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["delivery_email"].as_str().unwrap(), m))
        .collect();
    let ids: BTreeSet<u64> = members
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["user_id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids.len(), 16, "ids are unique");

    for &(email, name, role, bot_type, owner) in DEV_USERS {
        let m = by_email
            .get(email)
            .unwrap_or_else(|| panic!("{email} missing"));
        let id = m["user_id"].as_u64().unwrap();
        assert_eq!(m["full_name"], name);
        assert_eq!(m["role"], role, "{email}");
        assert_eq!(m["is_active"], true);
        assert_eq!(m["is_bot"], bot_type.is_some(), "{email}");
        assert_eq!(m["avatar_version"], 1);
        check_date_joined(&m["date_joined"]);
        match bot_type {
            Some(t) => {
                let mut k = HUMAN_KEYS.to_vec();
                k.extend(["bot_type", "bot_owner_id"]);
                assert_eq!(keys(m), sorted(&k), "{email}");
                assert_eq!(m["bot_type"], t);
                let owner_id = by_email[owner.unwrap()]["user_id"].clone();
                assert_eq!(m["bot_owner_id"], owner_id, "{email}");
                assert_eq!(m["email"], email, "a bot's API email is its real one");
                // client_gravatar defaults to true: the client computes it.
                assert_eq!(m["avatar_url"], Value::Null, "{email}");
            }
            None => {
                assert_eq!(keys(m), sorted(HUMAN_KEYS), "{email}");
                assert_eq!(m["email"], format!("user{id}@zulipdev.com"));
                // The real address is hidden from clients: they cannot compute gravatars.
                assert_eq!(m["avatar_url"], gravatar(email), "{email}");
            }
        }
        // The admin sees every real address.
        assert_eq!(m["delivery_email"], email);
        assert_eq!(m["is_admin"], role <= 200);
        assert_eq!(m["is_owner"], role == 100);
        assert_eq!(m["is_guest"], role == 600);
    }
}

#[actix_web::test]
async fn users_hides_other_humans_real_emails_from_members() {
    let app = TestApp::spawn().await;
    let reply = app.get_as(MEMBER, "/api/v1/users", &[]).await;
    let members = assert_success(&reply)["members"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(members.len(), 16);
    let mut seen_self = false;
    for m in &members {
        let id = m["user_id"].as_u64().unwrap();
        if m["is_bot"] == true {
            assert!(
                m["delivery_email"]
                    .as_str()
                    .unwrap()
                    .ends_with("@zulip.com"),
                "{m}"
            );
            assert_eq!(m["delivery_email"], m["email"]);
        } else if m["email"] == format!("user{id}@zulipdev.com") && m["full_name"] == "King Hamlet"
        {
            seen_self = true;
            assert_eq!(m["delivery_email"], MEMBER);
        } else {
            assert_eq!(m["delivery_email"], Value::Null, "{m}");
            assert_eq!(m["email"], format!("user{id}@zulipdev.com"));
            // The key is there, with null.
            assert!(m.as_object().unwrap().contains_key("delivery_email"));
        }
    }
    assert!(seen_self);
}

#[actix_web::test]
async fn users_client_gravatar_false_gives_every_avatar_url() {
    let app = TestApp::spawn().await;
    let reply = app
        .get_as(ADMIN, "/api/v1/users", &[("client_gravatar", "false")])
        .await;
    let members = assert_success(&reply)["members"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(members.len(), 16);
    for m in &members {
        let email = m["delivery_email"].as_str().unwrap();
        assert_eq!(m["avatar_url"], gravatar(email), "{email}");
    }
    // Explicit true is the default.
    let reply = app
        .get_as(ADMIN, "/api/v1/users", &[("client_gravatar", "true")])
        .await;
    let body = assert_success(&reply);
    let bot = body["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["email"] == BOT)
        .unwrap();
    assert_eq!(bot["avatar_url"], Value::Null);
}

#[actix_web::test]
async fn users_filtered_by_user_ids() {
    let app = TestApp::spawn().await;
    let ids = dev_ids(&app).await;
    let (hamlet, iago) = (ids[MEMBER], ids[ADMIN]);
    let filter = format!("[{hamlet},{iago}]");
    let reply = app
        .get_as(MEMBER, "/api/v1/users", &[("user_ids", &filter)])
        .await;
    let members = assert_success(&reply)["members"]
        .as_array()
        .unwrap()
        .clone();
    let got: BTreeSet<u64> = members
        .iter()
        .map(|m| m["user_id"].as_u64().unwrap())
        .collect();
    assert_eq!(got, BTreeSet::from([hamlet, iago]));

    let one = format!("[{iago}]");
    let reply = app
        .get_as(MEMBER, "/api/v1/users", &[("user_ids", &one)])
        .await;
    let members = &assert_success(&reply)["members"];
    assert_eq!(members.as_array().unwrap().len(), 1);
    assert_eq!(members[0]["full_name"], "Iago");
    assert_eq!(members[0]["delivery_email"], Value::Null);
}

#[actix_web::test]
async fn users_parameter_errors() {
    let app = TestApp::spawn().await;
    let cases = [
        ("user_ids", "nonsense", "user_ids is not valid JSON"),
        ("user_ids", "[1,", "user_ids is not valid JSON"),
        ("user_ids", "5", "user_ids is not a list"),
        ("user_ids", "[10,\"a\"]", "user_ids[1] is not an integer"),
        (
            "client_gravatar",
            "maybe",
            "client_gravatar is not valid JSON",
        ),
        ("client_gravatar", "1", "client_gravatar is not a boolean"),
        (
            "include_custom_profile_fields",
            "\"yes\"",
            "include_custom_profile_fields is not a boolean",
        ),
    ];
    for (name, value, msg) in cases {
        let reply = app
            .get_as(ADMIN, "/api/v1/users", &[(name, value), ("extra", "1")])
            .await;
        assert_error(&reply, 400, "BAD_REQUEST", msg);
        assert!(reply.2.get("ignored_parameters_unsupported").is_none());
    }
}

#[actix_web::test]
async fn users_with_custom_profile_fields() {
    let app = TestApp::spawn().await;
    let reply = app
        .get_as(
            MEMBER,
            "/api/v1/users",
            &[("include_custom_profile_fields", "true")],
        )
        .await;
    let members = assert_success(&reply)["members"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(members.len(), 16);
    for m in &members {
        if m["is_bot"] == true {
            assert!(
                m.get("profile_data").is_none(),
                "bot with profile_data: {m}"
            );
        } else {
            assert!(
                m["profile_data"].is_object(),
                "human without profile_data: {m}"
            );
        }
    }
    // Off by default and when false.
    for query in [vec![], vec![("include_custom_profile_fields", "false")]] {
        let reply = app.get_as(MEMBER, "/api/v1/users", &query).await;
        let members = assert_success(&reply)["members"]
            .as_array()
            .unwrap()
            .clone();
        assert!(members.iter().all(|m| m.get("profile_data").is_none()));
    }
}

#[actix_web::test]
async fn users_reports_ignored_parameters_sorted() {
    let app = TestApp::spawn().await;
    let reply = app
        .get_as(
            MEMBER,
            "/api/v1/users",
            &[("zeta", "1"), ("alpha", "2"), ("client_gravatar", "true")],
        )
        .await;
    let body = assert_success(&reply);
    assert_eq!(
        body["ignored_parameters_unsupported"],
        json!(["alpha", "zeta"])
    );
    // None sent, none reported.
    let reply = app
        .get_as(MEMBER, "/api/v1/users", &[("client_gravatar", "true")])
        .await;
    assert!(assert_success(&reply)
        .get("ignored_parameters_unsupported")
        .is_none());
}

// ---------------------------------------------------------------- GET /users/{id}, /users/{email}

#[actix_web::test]
async fn user_by_id() {
    let app = TestApp::spawn().await;
    let ids = dev_ids(&app).await;
    let hamlet = ids[MEMBER];
    let reply = app
        .get_as(ADMIN, &format!("/api/v1/users/{hamlet}"), &[])
        .await;
    let body = assert_success(&reply);
    assert_eq!(keys(body), sorted(&["result", "msg", "user"]));
    let user = &body["user"];
    assert_eq!(keys(user), sorted(HUMAN_KEYS));
    assert_eq!(user["user_id"], hamlet);
    assert_eq!(user["email"], format!("user{hamlet}@zulipdev.com"));
    assert_eq!(user["delivery_email"], MEMBER);
    assert_eq!(user["full_name"], "King Hamlet");
    assert_eq!(user["role"], 400);
    assert_eq!(user["timezone"], "");
    assert_eq!(user["avatar_url"], gravatar(MEMBER));

    // As a member: the real address is hidden.
    let iago = ids[ADMIN];
    let reply = app
        .get_as(MEMBER, &format!("/api/v1/users/{iago}"), &[])
        .await;
    let user = &assert_success(&reply)["user"];
    assert_eq!(user["delivery_email"], Value::Null);
    assert_eq!(user["email"], format!("user{iago}@zulipdev.com"));
    assert_eq!(user["is_admin"], true);

    // A bot, with the profile fields asked for: bots never carry them.
    let bot = ids[BOT];
    let reply = app
        .get_as(
            MEMBER,
            &format!("/api/v1/users/{bot}"),
            &[("include_custom_profile_fields", "true")],
        )
        .await;
    let user = &assert_success(&reply)["user"];
    assert_eq!(user["bot_type"], 1);
    assert_eq!(user["bot_owner_id"], ids[OWNER]);
    assert!(user.get("profile_data").is_none());
    assert_eq!(user["avatar_url"], Value::Null);

    let reply = app
        .get_as(
            MEMBER,
            &format!("/api/v1/users/{iago}"),
            &[
                ("include_custom_profile_fields", "true"),
                ("client_gravatar", "false"),
                ("x", "y"),
            ],
        )
        .await;
    let body = assert_success(&reply);
    assert!(body["user"]["profile_data"].is_object());
    assert_eq!(body["ignored_parameters_unsupported"], json!(["x"]));
}

#[actix_web::test]
async fn user_by_unknown_id() {
    let app = TestApp::spawn().await;
    for path in [
        "/api/v1/users/999999",
        "/api/v1/users/0",
        "/api/v1/users/99999999999999999999999",
    ] {
        let reply = app.get_as(ADMIN, path, &[]).await;
        assert_error(&reply, 400, "BAD_REQUEST", "No such user");
        assert_eq!(keys(&reply.2), sorted(&["result", "msg", "code"]));
    }
}

#[actix_web::test]
async fn user_by_email() {
    let app = TestApp::spawn().await;
    let ids = dev_ids(&app).await;
    let hamlet = ids[MEMBER];
    let api_email = format!("user{hamlet}@zulipdev.com");

    // The API email works for anyone.
    for viewer in [ADMIN, MEMBER, "othello@zulip.com", GUEST] {
        let reply = app
            .get_as(viewer, &format!("/api/v1/users/{api_email}"), &[])
            .await;
        let user = &assert_success(&reply)["user"];
        assert_eq!(user["user_id"], hamlet, "{viewer}");
        assert_eq!(user["email"], api_email.as_str());
    }

    // The real address works for an administrator.
    let reply = app
        .get_as(ADMIN, "/api/v1/users/hamlet@zulip.com", &[])
        .await;
    let user = &assert_success(&reply)["user"];
    assert_eq!(user["user_id"], hamlet);
    assert_eq!(user["delivery_email"], MEMBER);
    assert_eq!(user["email"], api_email.as_str());

    // A member cannot find another human by a real address they may not see.
    let reply = app
        .get_as("othello@zulip.com", "/api/v1/users/hamlet@zulip.com", &[])
        .await;
    assert_error(&reply, 400, "BAD_REQUEST", "No such user");

    // Bots' API email is their real one: anyone finds them.
    let reply = app
        .get_as(MEMBER, &format!("/api/v1/users/{BOT}"), &[])
        .await;
    assert_eq!(assert_success(&reply)["user"]["user_id"], ids[BOT]);

    let reply = app
        .get_as(ADMIN, "/api/v1/users/nobody@zulip.com", &[])
        .await;
    assert_error(&reply, 400, "BAD_REQUEST", "No such user");
}

// ---------------------------------------------------------------- POST /users

fn new_user_form(email: &str) -> Vec<(&str, &str)> {
    vec![
        ("email", email),
        ("password", "abcd1234"),
        ("full_name", "New Person"),
    ]
}

#[actix_web::test]
async fn create_user_needs_an_administrator_before_anything_else() {
    let app = TestApp::spawn().await;
    for form in [
        new_user_form("newperson@zulip.com"),
        vec![],
        vec![("email", "not-an-email")],
    ] {
        for who in [MEMBER, GUEST, "shiva@zulip.com", BOT] {
            let reply = app.post_as(who, "/api/v1/users", &form).await;
            assert_error(
                &reply,
                400,
                "UNAUTHORIZED_PRINCIPAL",
                "Must be an organization administrator",
            );
        }
    }
    // Nothing was created.
    let (_, _, body) = app.get_as(ADMIN, "/api/v1/users", &[]).await;
    assert_eq!(body["members"].as_array().unwrap().len(), 16);
}

#[actix_web::test]
async fn create_user_needs_can_create_users() {
    let app = TestApp::spawn().await;
    // Desdemona owns the realm but only Iago holds can_create_users.
    let reply = app
        .post_as(
            OWNER,
            "/api/v1/users",
            &new_user_form("newperson@zulip.com"),
        )
        .await;
    assert_error(
        &reply,
        400,
        "BAD_REQUEST",
        "User not authorized to create users",
    );
    // Parameters are parsed before that permission is checked.
    let reply = app.post_as(OWNER, "/api/v1/users", &[]).await;
    assert_error(
        &reply,
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'email' argument",
    );
}

#[actix_web::test]
async fn create_user_missing_parameters() {
    let app = TestApp::spawn().await;
    let cases: [(&[(&str, &str)], &str); 4] = [
        (&[], "email"),
        (&[("password", "abcd1234"), ("full_name", "X")], "email"),
        (&[("email", "a@zulip.com"), ("full_name", "X")], "password"),
        (
            &[("email", "a@zulip.com"), ("password", "abcd1234")],
            "full_name",
        ),
    ];
    for (form, var) in cases {
        let reply = app.post_as(ADMIN, "/api/v1/users", form).await;
        assert_error(
            &reply,
            400,
            "REQUEST_VARIABLE_MISSING",
            &format!("Missing '{var}' argument"),
        );
        assert_eq!(reply.2["var_name"], var);
        assert_eq!(
            keys(&reply.2),
            sorted(&["result", "msg", "code", "var_name"])
        );
    }
}

#[actix_web::test]
async fn create_user_validation() {
    let app = TestApp::spawn().await;
    for email in ["not-an-email", "a@", "@zulip.com", "two@@zulip.com"] {
        let reply = app
            .post_as(ADMIN, "/api/v1/users", &new_user_form(email))
            .await;
        assert_error(&reply, 400, "BAD_REQUEST", "Bad name or username");
    }
    for email in [
        "hamlet@zulip.com",
        "HAMLET@zulip.com",
        "Iago@Zulip.Com",
        "default-bot@zulip.com",
    ] {
        let reply = app
            .post_as(ADMIN, "/api/v1/users", &new_user_form(email))
            .await;
        assert_error(&reply, 400, "BAD_REQUEST", "Email is already in use.");
        assert!(reply.2.get("ignored_parameters_unsupported").is_none());
    }
    let reply = app
        .post_as(
            ADMIN,
            "/api/v1/users",
            &[
                ("email", "x@zulip.com"),
                ("password", "abcd1234"),
                ("full_name", "   "),
            ],
        )
        .await;
    assert_error(&reply, 400, "BAD_REQUEST", "Name must not be empty!");
    let long = "x".repeat(101);
    let reply = app
        .post_as(
            ADMIN,
            "/api/v1/users",
            &[
                ("email", "x@zulip.com"),
                ("password", "abcd1234"),
                ("full_name", &long),
            ],
        )
        .await;
    assert_error(&reply, 400, "BAD_REQUEST", "Name too long!");
    let (_, _, body) = app.get_as(ADMIN, "/api/v1/users", &[]).await;
    assert_eq!(
        body["members"].as_array().unwrap().len(),
        16,
        "nothing was created"
    );
}

/// Zulip's `check_full_name` answers "Name must not be empty!" for an empty name and
/// accepts a one-character one (the duplicate email is then what is refused).
#[actix_web::test]
async fn create_user_empty_and_one_character_names() {
    let app = TestApp::spawn().await;
    let form = |email, name| {
        vec![
            ("email", email),
            ("password", "abcd1234"),
            ("full_name", name),
        ]
    };
    let reply = app
        .post_as(ADMIN, "/api/v1/users", &form("empty@zulip.com", ""))
        .await;
    assert_error(&reply, 400, "BAD_REQUEST", "Name must not be empty!");
    let reply = app
        .post_as(ADMIN, "/api/v1/users", &form("hamlet@zulip.com", "A"))
        .await;
    assert_error(&reply, 400, "BAD_REQUEST", "Email is already in use.");
    let reply = app
        .post_as(ADMIN, "/api/v1/users", &form("single@zulip.com", " Q "))
        .await;
    let id = assert_success(&reply)["user_id"].as_u64().unwrap();
    let (_, _, body) = app.get_as(ADMIN, &format!("/api/v1/users/{id}"), &[]).await;
    assert_eq!(body["user"]["full_name"], "Q");
}

#[actix_web::test]
async fn create_user_success() {
    let app = TestApp::spawn().await;
    let reply = app
        .post_as(
            ADMIN,
            "/api/v1/users",
            &[
                ("email", "oracle-new@zulip.com"),
                ("password", "abcd1234"),
                ("full_name", "  Oracle New "),
            ],
        )
        .await;
    let body = assert_success(&reply);
    assert_eq!(keys(body), sorted(&["result", "msg", "user_id"]));
    let id = body["user_id"].as_u64().unwrap();
    let before = dev_ids(&app).await;
    assert!(
        before.values().filter(|&&v| v != id).all(|&v| v < id),
        "ids grow"
    );

    // Listed, as the admin sees it.
    let (_, _, list) = app.get_as(ADMIN, "/api/v1/users", &[]).await;
    assert_eq!(list["members"].as_array().unwrap().len(), 17);
    let m = member(&list["members"], id);
    assert_eq!(keys(m), sorted(HUMAN_KEYS));
    assert_eq!(m["delivery_email"], "oracle-new@zulip.com");
    assert_eq!(m["email"], format!("user{id}@zulipdev.com"));
    assert_eq!(m["full_name"], "Oracle New", "the name is trimmed");
    assert_eq!(m["role"], 400);
    assert_eq!(m["is_admin"], false);
    assert_eq!(m["is_bot"], false);
    assert_eq!(m["is_active"], true);
    assert_eq!(m["timezone"], "");
    assert_eq!(m["avatar_version"], 1);
    check_date_joined(&m["date_joined"]);

    // As a member sees it.
    let reply = app
        .get_as(MEMBER, &format!("/api/v1/users/{id}"), &[])
        .await;
    assert_eq!(
        assert_success(&reply)["user"]["delivery_email"],
        Value::Null
    );

    // The new user logs in with the password and uses the key.
    let reply = app
        .post(
            "/api/v1/fetch_api_key",
            Auth::None,
            &[
                ("username", "oracle-new@zulip.com"),
                ("password", "abcd1234"),
            ],
        )
        .await;
    let login = assert_success(&reply);
    assert_eq!(login["user_id"], id);
    assert_eq!(login["email"], "oracle-new@zulip.com");
    let key = login["api_key"].as_str().unwrap();
    let reply = app
        .get(
            "/api/v1/users/me",
            Auth::Basic("oracle-new@zulip.com", key),
            &[],
        )
        .await;
    let me = assert_success(&reply);
    assert_eq!(me["user_id"], id);
    assert_eq!(me["delivery_email"], "oracle-new@zulip.com");
    assert_eq!(me["role"], 400);

    // A wrong password does not.
    let reply = app
        .post(
            "/api/v1/fetch_api_key",
            Auth::None,
            &[
                ("username", "oracle-new@zulip.com"),
                ("password", "abcd12345"),
            ],
        )
        .await;
    assert_error(
        &reply,
        401,
        "AUTHENTICATION_FAILED",
        "Your username or password is incorrect",
    );

    // The address is now taken, in any case.
    let reply = app
        .post_as(
            ADMIN,
            "/api/v1/users",
            &new_user_form("ORACLE-NEW@zulip.com"),
        )
        .await;
    assert_error(&reply, 400, "BAD_REQUEST", "Email is already in use.");

    // The next user gets a new id.
    let next = app
        .create_user("second@zulip.com", "abcd1234", "Second")
        .await;
    assert!(next > id);
}

#[actix_web::test]
async fn create_user_reports_ignored_parameters_on_success_only() {
    let app = TestApp::spawn().await;
    let mut form = new_user_form("ignored@zulip.com");
    form.extend([("zzz", "1"), ("aaa", "2"), ("mmm", "[1]")]);
    let reply = app.post_as(ADMIN, "/api/v1/users", &form).await;
    assert_eq!(
        assert_success(&reply)["ignored_parameters_unsupported"],
        json!(["aaa", "mmm", "zzz"])
    );
    // The same request again fails (duplicate) and reports nothing.
    let reply = app.post_as(ADMIN, "/api/v1/users", &form).await;
    assert_error(&reply, 400, "BAD_REQUEST", "Email is already in use.");
    assert!(reply.2.get("ignored_parameters_unsupported").is_none());
    // And a success without extras has no such key.
    let reply = app
        .post_as(ADMIN, "/api/v1/users", &new_user_form("plain@zulip.com"))
        .await;
    assert!(assert_success(&reply)
        .get("ignored_parameters_unsupported")
        .is_none());
}

#[actix_web::test]
async fn create_user_with_multipart_body() {
    // zulip-js and browsers' FormData send multipart/form-data.
    let app = TestApp::spawn().await;
    let key = app.api_key(ADMIN).await;
    let form = reqwest::multipart::Form::new()
        .text("email", "multi@zulip.com")
        .text("password", "abcd1234")
        .text("full_name", "Multi Part")
        .text("unknown_field", "x");
    let rb = app
        .request(Method::POST, "/api/v1/users", Auth::Basic(ADMIN, &key))
        .multipart(form);
    let reply = send(rb).await;
    let body = assert_success(&reply);
    let id = body["user_id"].as_u64().unwrap();
    assert_eq!(
        body["ignored_parameters_unsupported"],
        json!(["unknown_field"])
    );
    let reply = app.get_as(ADMIN, &format!("/api/v1/users/{id}"), &[]).await;
    assert_eq!(assert_success(&reply)["user"]["full_name"], "Multi Part");

    // Missing parameters read the same from multipart.
    let form = reqwest::multipart::Form::new().text("email", "multi2@zulip.com");
    let rb = app
        .request(Method::POST, "/api/v1/users", Auth::Basic(ADMIN, &key))
        .multipart(form);
    let reply = send(rb).await;
    assert_error(
        &reply,
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'password' argument",
    );
}

#[actix_web::test]
async fn create_user_with_query_string_parameters() {
    // Zulip reads POST parameters from the body, then the query string.
    let app = TestApp::spawn().await;
    let key = app.api_key(ADMIN).await;
    let rb = app
        .request(Method::POST, "/api/v1/users", Auth::Basic(ADMIN, &key))
        .query(&[
            ("email", "query@zulip.com"),
            ("password", "abcd1234"),
            ("full_name", "Query String"),
        ]);
    let reply = send(rb).await;
    let id = assert_success(&reply)["user_id"].as_u64().unwrap();
    let reply = app.get_as(ADMIN, &format!("/api/v1/users/{id}"), &[]).await;
    assert_eq!(
        assert_success(&reply)["user"]["delivery_email"],
        "query@zulip.com"
    );

    // Mixed: some in the query string, some in the body; the body wins on a clash.
    let rb = app
        .request(Method::POST, "/api/v1/users", Auth::Basic(ADMIN, &key))
        .query(&[("email", "loser@zulip.com"), ("full_name", "Mixed")])
        .form(&[("email", "winner@zulip.com"), ("password", "abcd1234")]);
    let reply = send(rb).await;
    let id = assert_success(&reply)["user_id"].as_u64().unwrap();
    let reply = app.get_as(ADMIN, &format!("/api/v1/users/{id}"), &[]).await;
    let user = &assert_success(&reply)["user"];
    assert_eq!(user["delivery_email"], "winner@zulip.com");
    assert_eq!(user["full_name"], "Mixed");
    let reply = app
        .post(
            "/api/v1/dev_fetch_api_key",
            Auth::None,
            &[("username", "loser@zulip.com")],
        )
        .await;
    assert_error(
        &reply,
        401,
        "AUTHENTICATION_FAILED",
        "Your username or password is incorrect",
    );
}

#[actix_web::test]
async fn too_large_body_is_a_json_4xx() {
    let app = TestApp::spawn().await;
    let key = app.api_key(ADMIN).await;
    let big = "x".repeat(5 * 1024 * 1024);
    let rb = app
        .request(Method::POST, "/api/v1/users", Auth::Basic(ADMIN, &key))
        .form(&[
            ("email", "big@zulip.com"),
            ("password", "abcd1234"),
            ("full_name", big.as_str()),
        ]);
    let (status, headers, body) = send(rb).await;
    assert!(status.is_client_error(), "{status}");
    assert_eq!(headers.get("content-type").unwrap(), "application/json");
    assert_eq!(body["result"], "error");
    assert!(
        body["code"].is_string() && body["msg"].is_string(),
        "{body}"
    );

    let form = reqwest::multipart::Form::new()
        .text("email", "big@zulip.com")
        .text("full_name", big);
    let rb = app
        .request(Method::POST, "/api/v1/users", Auth::Basic(ADMIN, &key))
        .multipart(form);
    let (status, _, body) = send(rb).await;
    assert!(status.is_client_error(), "{status}");
    assert_eq!(body["result"], "error");

    // Nothing was created, and the server still answers.
    let (status, _, body) = app.get_as(ADMIN, "/api/v1/users", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["members"].as_array().unwrap().len(), 16);
}

#[actix_web::test]
async fn concurrent_creations_of_one_address_make_one_user() {
    let app = TestApp::spawn().await;
    let key = app.api_key(ADMIN).await;
    let tries = (0..6).map(|_| {
        app.post(
            "/api/v1/users",
            Auth::Basic(ADMIN, &key),
            &[
                ("email", "race@zulip.com"),
                ("password", "abcd1234"),
                ("full_name", "Race"),
            ],
        )
    });
    let replies = futures_util::future::join_all(tries).await;
    let ok = replies.iter().filter(|r| r.0 == StatusCode::OK).count();
    assert_eq!(
        ok,
        1,
        "{:?}",
        replies.iter().map(|r| &r.2).collect::<Vec<_>>()
    );
    for r in replies.iter().filter(|r| r.0 != StatusCode::OK) {
        assert_error(r, 400, "BAD_REQUEST", "Email is already in use.");
    }
    let (_, _, body) = app.get_as(ADMIN, "/api/v1/users", &[]).await;
    assert_eq!(body["members"].as_array().unwrap().len(), 17);
}

/// `PATCH /users/{user_id}` with `profile_data` (Zulip's `update_user_backend`): an
/// administrator sets and removes another user's values; `GET /users` and
/// `GET /users/{id}` with `include_custom_profile_fields` show them, with
/// `rendered_value` for the text types.
#[actix_web::test]
async fn admin_sets_profile_data_of_another_user() {
    let app = TestApp::spawn().await;
    let path = format!("/api/v1/users/{HAMLET_ID}");
    let data = json!([
        {"id": 1, "value": "+1-234"},
        {"id": 2, "value": "Prince of **Denmark**"},
        {"id": 4, "value": "1"},
    ])
    .to_string();
    app.ok("PATCH", &path, ADMIN, &[("profile_data", &data)])
        .await;
    let expected = json!({
        "1": {"value": "+1-234", "rendered_value": "<p>+1-234</p>"},
        "2": {"value": "Prince of **Denmark**",
              "rendered_value": "<p>Prince of <strong>Denmark</strong></p>"},
        "4": {"value": "1"},
    });
    let listed = |body: &Value| {
        body["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["user_id"] == HAMLET_ID)
            .unwrap()["profile_data"]
            .clone()
    };
    let with_fields = [("include_custom_profile_fields", "true")];
    let all = app.ok("GET", "/api/v1/users", OTHELLO, &with_fields).await;
    assert_eq!(listed(&all), expected);
    let one = app.ok("GET", &path, OTHELLO, &with_fields).await;
    assert_eq!(one["user"]["profile_data"], expected);

    // Empty values remove; an unknown field is refused and nothing changes.
    let data = json!([{"id": 1, "value": null}, {"id": 2, "value": ""}]).to_string();
    app.ok("PATCH", &path, ADMIN, &[("profile_data", &data)])
        .await;
    let one = app.ok("GET", &path, OTHELLO, &with_fields).await;
    assert_eq!(one["user"]["profile_data"], json!({"4": {"value": "1"}}));
    let data = json!([{"id": 1, "value": "+9"}, {"id": 99, "value": "x"}]).to_string();
    app.bad(
        "PATCH",
        &path,
        ADMIN,
        &[("profile_data", &data)],
        "Field id 99 not found.",
    )
    .await;
    let one = app.ok("GET", &path, OTHELLO, &with_fields).await;
    assert_eq!(one["user"]["profile_data"], json!({"4": {"value": "1"}}));
    // Only administrators edit other users.
    let data = json!([{"id": 1, "value": "+9"}]).to_string();
    app.bad(
        "PATCH",
        &format!("/api/v1/users/{OTHELLO_ID}"),
        MEMBER,
        &[("profile_data", &data)],
        "Insufficient permission",
    )
    .await;
}
