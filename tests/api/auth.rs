//! HTTP Basic authentication of `/api/v1/` endpoints: Zulip's 401 and 400 answers, their
//! texts and challenge headers, and the order of the checks.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use reqwest::{Method, StatusCode};

/// A well-formed key (32 alphanumeric characters) that belongs to nobody.
const WRONG_KEY: &str = "abcdefghijklmnopqrstuvwxyz012345";

#[actix_web::test]
async fn no_credentials_is_401_with_basic_challenge() {
    let app = TestApp::spawn().await;
    for (method, path) in [
        (Method::GET, "/api/v1/users/me"),
        (Method::GET, "/api/v1/users"),
        (Method::GET, "/api/v1/users/10"),
        (Method::GET, "/api/v1/users/hamlet@zulip.com"),
        (Method::POST, "/api/v1/users"),
    ] {
        let reply = send(app.request(method.clone(), path, Auth::None)).await;
        assert_error(&reply, 401, "UNAUTHORIZED", NOT_LOGGED_IN);
        assert_eq!(challenge(&reply), Some(BASIC_CHALLENGE), "{method} {path}");
        assert_eq!(
            reply.1.get("content-type").unwrap(),
            "application/json",
            "{method} {path}"
        );
        assert_eq!(keys(&reply.2), sorted(&["code", "msg", "result"]));
    }
}

#[actix_web::test]
async fn credentials_are_checked_before_parameters() {
    let app = TestApp::spawn().await;
    // A POST without credentials whose parameters are also wrong: 401, not 400.
    let reply = app
        .post("/api/v1/users", Auth::None, &[("email", "not-an-email")])
        .await;
    assert_error(&reply, 401, "UNAUTHORIZED", NOT_LOGGED_IN);
    let reply = app
        .get("/api/v1/users", Auth::None, &[("user_ids", "nonsense")])
        .await;
    assert_error(&reply, 401, "UNAUTHORIZED", NOT_LOGGED_IN);
    let reply = app
        .get(
            "/api/v1/users",
            Auth::Basic(ADMIN, "short"),
            &[("user_ids", "nonsense")],
        )
        .await;
    assert_error(&reply, 401, "UNAUTHORIZED", "Malformed API key");
}

#[actix_web::test]
async fn key_of_wrong_length_is_malformed() {
    let app = TestApp::spawn().await;
    let key = app.api_key(ADMIN).await;
    for bad in ["", "short", &key[..31], &format!("{key}x")] {
        let reply = app
            .get("/api/v1/users/me", Auth::Basic(ADMIN, bad), &[])
            .await;
        assert_error(&reply, 401, "UNAUTHORIZED", "Malformed API key");
        assert_eq!(challenge(&reply), Some(BASIC_CHALLENGE));
    }
    // The length is checked before the user is looked up.
    let reply = app
        .get(
            "/api/v1/users/me",
            Auth::Basic("nobody@zulip.com", "x"),
            &[],
        )
        .await;
    assert_error(&reply, 401, "UNAUTHORIZED", "Malformed API key");
}

#[actix_web::test]
async fn unknown_email_or_wrong_key_is_invalid() {
    let app = TestApp::spawn().await;
    let admin_key = app.api_key(ADMIN).await;
    let member_key = app.api_key(MEMBER).await;
    assert_eq!(WRONG_KEY.len(), 32);
    let cases = [
        ("nobody@zulip.com", WRONG_KEY),
        ("nobody@zulip.com", admin_key.as_str()),
        (ADMIN, WRONG_KEY),
        // Someone else's valid key.
        (ADMIN, member_key.as_str()),
        // The API email is not the login: Zulip matches the real (delivery) address.
        ("user11@zulipdev.com", admin_key.as_str()),
    ];
    for (email, key) in cases {
        let reply = app
            .get("/api/v1/users/me", Auth::Basic(email, key), &[])
            .await;
        assert_error(&reply, 401, "UNAUTHORIZED", "Invalid API key");
        assert_eq!(challenge(&reply), Some(BASIC_CHALLENGE), "{email}");
    }
    // The key's case matters.
    let flipped: String = admin_key
        .chars()
        .map(|c| {
            if c.is_ascii_uppercase() {
                c.to_ascii_lowercase()
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect();
    if flipped != admin_key {
        let reply = app
            .get("/api/v1/users/me", Auth::Basic(ADMIN, &flipped), &[])
            .await;
        assert_error(&reply, 401, "UNAUTHORIZED", "Invalid API key");
    }
}

#[actix_web::test]
async fn valid_credentials_work_and_email_is_case_insensitive() {
    let app = TestApp::spawn().await;
    let key = app.api_key(ADMIN).await;
    for email in [ADMIN, "IAGO@zulip.com", "Iago@Zulip.Com"] {
        let reply = app
            .get("/api/v1/users/me", Auth::Basic(email, &key), &[])
            .await;
        let body = assert_success(&reply);
        assert_eq!(body["delivery_email"], ADMIN);
        assert!(challenge(&reply).is_none());
    }
    // The scheme name is case-insensitive too.
    let header = basic(ADMIN, &key).replacen("Basic", "basic", 1);
    let reply = app
        .get("/api/v1/users/me", Auth::Header(&header), &[])
        .await;
    assert_eq!(assert_success(&reply)["delivery_email"], ADMIN);
}

#[actix_web::test]
async fn non_basic_scheme_is_400() {
    let app = TestApp::spawn().await;
    for header in ["Bearer abcdef", "Token xyz", "Digest username=\"iago\""] {
        let reply = app.get("/api/v1/users/me", Auth::Header(header), &[]).await;
        assert_error(
            &reply,
            400,
            "BAD_REQUEST",
            "This endpoint requires HTTP basic authentication.",
        );
    }
}

#[actix_web::test]
async fn undecodable_basic_header_is_401() {
    let app = TestApp::spawn().await;
    // Not base64; base64 of text without a colon; base64 of invalid UTF-8; nothing.
    for header in [
        "Basic !!!not-base64!!!",
        "Basic aWFnb0B6dWxpcC5jb20=",
        "Basic //79",
        "Basic",
    ] {
        let reply = app.get("/api/v1/users/me", Auth::Header(header), &[]).await;
        assert_error(
            &reply,
            401,
            "UNAUTHORIZED",
            "Invalid authorization header for basic auth",
        );
        assert_eq!(challenge(&reply), Some(BASIC_CHALLENGE), "{header}");
    }
}

#[actix_web::test]
async fn every_dev_user_authenticates_with_its_key() {
    let app = TestApp::spawn().await;
    for email in [
        ADMIN,
        MEMBER,
        OWNER,
        GUEST,
        BOT,
        "AARON@zulip.com",
        "shiva@zulip.com",
    ] {
        let reply = app.get_as(email, "/api/v1/users/me", &[]).await;
        let body = assert_success(&reply);
        assert_eq!(body["delivery_email"], email);
    }
    // Keys are distinct.
    let a = app.api_key(ADMIN).await;
    let b = app.api_key(MEMBER).await;
    assert_ne!(a, b);
}

#[actix_web::test]
async fn json_api_takes_no_basic_credentials() {
    let app = TestApp::spawn().await;
    let key = app.api_key(ADMIN).await;
    for auth in [Auth::None, Auth::Basic(ADMIN, &key)] {
        let reply = app.get("/json/users/me", auth, &[]).await;
        assert_error(&reply, 401, "UNAUTHORIZED", NOT_LOGGED_IN);
        assert_eq!(challenge(&reply), Some("Session realm=\"zulip\""));
    }
}

#[actix_web::test]
async fn fetched_key_is_stable() {
    let app = TestApp::spawn().await;
    let (_, _, first) = app
        .post(
            "/api/v1/dev_fetch_api_key",
            Auth::None,
            &[("username", ADMIN)],
        )
        .await;
    let (_, _, second) = app
        .post(
            "/api/v1/dev_fetch_api_key",
            Auth::None,
            &[("username", ADMIN)],
        )
        .await;
    assert_eq!(first["api_key"], second["api_key"]);
    let key = first["api_key"].as_str().unwrap();
    assert_eq!(key.len(), 32);
    assert!(key.chars().all(|c| c.is_ascii_alphanumeric()), "{key}");
    let reply = app
        .get("/api/v1/users/me", Auth::Basic(ADMIN, key), &[])
        .await;
    assert_eq!(reply.0, StatusCode::OK);
}

/// `POST /fetch_api_key` needs no account, and each attempt costs an argon2 hash: a
/// burst is hashed a few at a time, the overflow answered Zulip's 429 at once, and the
/// server keeps answering.
#[actix_web::test]
async fn concurrent_wrong_password_fetches_are_401_or_429() {
    let app = TestApp::spawn().await;
    app.create_user("burst@zulip.com", "correct horse battery staple 9", "Burst")
        .await;
    let failed = "Your username or password is incorrect";
    let attempts = [
        ("burst@zulip.com", "wrong horse"),
        ("nobody@zulip.com", "correct horse battery staple 9"),
        // Development users have no password.
        (MEMBER, "anything"),
    ];
    let replies = futures_util::future::join_all((0..120).map(|i| {
        let (username, password) = attempts[i % attempts.len()];
        send(
            app.request(Method::POST, "/api/v1/fetch_api_key", Auth::None)
                .form(&[("username", username), ("password", password)]),
        )
    }))
    .await;
    let mut limited = 0;
    for reply in &replies {
        if reply.0 == StatusCode::TOO_MANY_REQUESTS {
            limited += 1;
            assert_error(
                reply,
                429,
                "RATE_LIMIT_HIT",
                "API usage exceeded rate limit",
            );
            let retry_after = reply.2["retry-after"].as_f64().unwrap();
            assert!(retry_after > 0.0, "{}", reply.2);
            let header = reply.1.get("retry-after").unwrap().to_str().unwrap();
            assert!(header.parse::<u64>().unwrap() >= 1, "{header}");
        } else {
            assert_error(reply, 401, "AUTHENTICATION_FAILED", failed);
            assert!(reply.2.get("api_key").is_none());
        }
    }
    assert!(limited < replies.len(), "every attempt was turned away");

    // The server still answers, and the right password still logs in.
    let reply = app
        .post(
            "/api/v1/fetch_api_key",
            Auth::None,
            &[
                ("username", "burst@zulip.com"),
                ("password", "correct horse battery staple 9"),
            ],
        )
        .await;
    assert_eq!(assert_success(&reply)["email"], "burst@zulip.com");
}

/// A `--dev` server may serve a realm made by `realm create` beside the development
/// realm: its keys are never handed out without a password, and its
/// `/server_settings` does not offer the development login.
#[actix_web::test]
async fn dev_fetch_api_key_serves_the_development_realm_only() {
    let (app, other) = TestApp::spawn_two_realms("acme", "boss@acme.test", |_| {}).await;
    let reply = send(
        app.request_on(
            &other.host,
            Method::POST,
            "/api/v1/dev_fetch_api_key",
            Auth::None,
        )
        .form(&[("username", other.owner_email.as_str())]),
    )
    .await;
    assert_error(&reply, 400, "BAD_REQUEST", "DevAuthBackend not enabled.");
    assert!(
        !reply.2.to_string().contains(&other.owner_key),
        "the owner's key"
    );
    let settings = send(app.request_on(
        &other.host,
        Method::GET,
        "/api/v1/server_settings",
        Auth::None,
    ))
    .await;
    assert_eq!(settings.2["authentication_methods"]["dev"], false);
    // The development realm's still works.
    let dev = app
        .post(
            "/api/v1/dev_fetch_api_key",
            Auth::None,
            &[("username", ADMIN)],
        )
        .await;
    assert_eq!(dev.0, StatusCode::OK, "{:?}", dev.2);
    let settings = app.get("/api/v1/server_settings", Auth::None, &[]).await;
    assert_eq!(settings.2["authentication_methods"]["dev"], true);
}
