//! Server-level endpoints: `GET /server_settings`, `POST /dev_fetch_api_key`,
//! `POST /fetch_api_key`, unknown paths and the `/json/` web API.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::json;

const SERVER_SETTINGS_KEYS: &[&str] = &[
    "result",
    "msg",
    "authentication_methods",
    "zulip_version",
    "zulip_merge_base",
    "zulip_feature_level",
    "push_notifications_enabled",
    "is_incompatible",
    "email_auth_enabled",
    "require_email_format_usernames",
    "realm_url",
    "realm_name",
    "realm_icon",
    "realm_description",
    "realm_web_public_access_enabled",
    "external_authentication_methods",
    "realm_uri",
];

#[track_caller]
fn check_server_settings(reply: &Reply) {
    let body = assert_success(reply);
    assert_eq!(keys(body), sorted(SERVER_SETTINGS_KEYS));
    assert_eq!(body["zulip_feature_level"], 420);
    assert_eq!(body["realm_name"], "Zulip Dev");
    let version = body["zulip_version"].as_str().unwrap();
    assert!(!version.is_empty());
    assert_eq!(body["zulip_merge_base"], "");
    assert_eq!(body["is_incompatible"], false);
    assert_eq!(body["email_auth_enabled"], true);
    assert_eq!(body["require_email_format_usernames"], true);
    assert!(body["push_notifications_enabled"].is_boolean());
    assert!(body["realm_web_public_access_enabled"].is_boolean());
    assert!(body["realm_description"].is_string());
    assert!(body["realm_icon"].as_str().unwrap().starts_with("http"));
    assert_eq!(body["realm_uri"], body["realm_url"]);
    assert!(body["external_authentication_methods"].is_array());
    let methods = &body["authentication_methods"];
    assert_eq!(
        keys(methods),
        sorted(&[
            "password",
            "dev",
            "email",
            "ldap",
            "remoteuser",
            "github",
            "azuread",
            "gitlab",
            "google",
            "apple",
            "saml",
            "openid connect",
        ])
    );
    assert_eq!(methods["dev"], true);
    assert_eq!(methods["password"], true);
    assert!(methods
        .as_object()
        .unwrap()
        .values()
        .all(|v| v.is_boolean()));
    assert!(body.get("ignored_parameters_unsupported").is_none());
}

#[actix_web::test]
async fn server_settings_needs_no_auth() {
    let app = TestApp::spawn().await;
    let reply = app.get("/api/v1/server_settings", Auth::None, &[]).await;
    check_server_settings(&reply);
    assert_eq!(reply.1.get("content-type").unwrap(), "application/json");
}

#[actix_web::test]
async fn server_settings_ignores_bad_credentials() {
    // The Python client sends its (possibly placeholder) credentials when it starts.
    let app = TestApp::spawn().await;
    let bogus = ["Basic Ym9ndXNAemVscC5jb206eHh4", "Bearer nope", "Basic !!!"];
    let bad_key = basic("nobody@zulip.com", "abcdefghijklmnopqrstuvwxyz012345");
    for header in bogus.iter().copied().chain([bad_key.as_str()]) {
        let reply = app
            .get("/api/v1/server_settings", Auth::Header(header), &[])
            .await;
        check_server_settings(&reply);
    }
    let reply = app
        .get("/api/v1/server_settings", Auth::Basic(ADMIN, "short"), &[])
        .await;
    check_server_settings(&reply);
}

#[actix_web::test]
async fn server_settings_realm_url_is_the_served_address() {
    let app = TestApp::spawn().await;
    let (_, _, body) = app.get("/api/v1/server_settings", Auth::None, &[]).await;
    assert_eq!(body["realm_url"], app.url.as_str());
}

#[actix_web::test]
async fn dev_fetch_api_key_success() {
    let app = TestApp::spawn().await;
    let reply = app
        .post(
            "/api/v1/dev_fetch_api_key",
            Auth::None,
            &[("username", ADMIN)],
        )
        .await;
    let body = assert_success(&reply);
    assert_eq!(
        keys(body),
        sorted(&["result", "msg", "api_key", "email", "user_id"])
    );
    assert_eq!(body["email"], ADMIN);
    assert!(body["user_id"].as_u64().unwrap() > 0);
    let key = body["api_key"].as_str().unwrap();
    assert_eq!(key.len(), 32);
    assert!(key.chars().all(|c| c.is_ascii_alphanumeric()));

    // The id is the one the user has.
    let (_, _, me) = app
        .get("/api/v1/users/me", Auth::Basic(ADMIN, key), &[])
        .await;
    assert_eq!(me["user_id"], body["user_id"]);
}

#[actix_web::test]
async fn dev_fetch_api_key_is_case_insensitive_and_returns_the_real_email() {
    let app = TestApp::spawn().await;
    let (_, _, lower) = app
        .post(
            "/api/v1/dev_fetch_api_key",
            Auth::None,
            &[("username", ADMIN)],
        )
        .await;
    let reply = app
        .post(
            "/api/v1/dev_fetch_api_key",
            Auth::None,
            &[("username", "IAGO@zulip.com")],
        )
        .await;
    let upper = assert_success(&reply);
    assert_eq!(upper["email"], ADMIN);
    assert_eq!(upper["user_id"], lower["user_id"]);
    assert_eq!(upper["api_key"], lower["api_key"]);

    // Stored in upper case, asked in lower case: the stored spelling comes back.
    let reply = app
        .post(
            "/api/v1/dev_fetch_api_key",
            Auth::None,
            &[("username", "aaron@zulip.com")],
        )
        .await;
    assert_eq!(assert_success(&reply)["email"], "AARON@zulip.com");
}

#[actix_web::test]
async fn dev_fetch_api_key_errors() {
    let app = TestApp::spawn().await;
    let reply = app
        .post(
            "/api/v1/dev_fetch_api_key",
            Auth::None,
            &[("username", "hamlet")],
        )
        .await;
    assert_error(&reply, 400, "BAD_REQUEST", "Enter a valid email address.");

    let reply = app
        .post(
            "/api/v1/dev_fetch_api_key",
            Auth::None,
            &[("username", "nobody@zulip.com")],
        )
        .await;
    assert_error(
        &reply,
        401,
        "AUTHENTICATION_FAILED",
        "Your username or password is incorrect",
    );

    let reply = app.post("/api/v1/dev_fetch_api_key", Auth::None, &[]).await;
    assert_error(
        &reply,
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'username' argument",
    );
    assert_eq!(reply.2["var_name"], "username");
    assert_eq!(
        keys(&reply.2),
        sorted(&["result", "msg", "code", "var_name"])
    );

    // Unknown parameters are reported on success only.
    let reply = app
        .post(
            "/api/v1/dev_fetch_api_key",
            Auth::None,
            &[("username", "hamlet"), ("zz", "1")],
        )
        .await;
    assert_error(&reply, 400, "BAD_REQUEST", "Enter a valid email address.");
    assert!(reply.2.get("ignored_parameters_unsupported").is_none());
    let reply = app
        .post(
            "/api/v1/dev_fetch_api_key",
            Auth::None,
            &[("username", MEMBER), ("zz", "1"), ("aa", "2")],
        )
        .await;
    assert_eq!(
        assert_success(&reply)["ignored_parameters_unsupported"],
        json!(["aa", "zz"])
    );
}

#[actix_web::test]
async fn dev_fetch_api_key_ignores_credentials() {
    let app = TestApp::spawn().await;
    let reply = app
        .post(
            "/api/v1/dev_fetch_api_key",
            Auth::Header("Bearer nope"),
            &[("username", MEMBER)],
        )
        .await;
    assert_eq!(assert_success(&reply)["email"], MEMBER);
}

#[actix_web::test]
async fn fetch_api_key_with_password() {
    let app = TestApp::spawn().await;
    let id = app
        .create_user("newbie@zulip.com", "s3cret-enough-pw", "New Bie")
        .await;
    let reply = app
        .post(
            "/api/v1/fetch_api_key",
            Auth::None,
            &[
                ("username", "newbie@zulip.com"),
                ("password", "s3cret-enough-pw"),
            ],
        )
        .await;
    let body = assert_success(&reply);
    assert_eq!(
        keys(body),
        sorted(&["result", "msg", "api_key", "email", "user_id"])
    );
    assert_eq!(body["email"], "newbie@zulip.com");
    assert_eq!(body["user_id"], id);
    let key = body["api_key"].as_str().unwrap().to_owned();
    assert_eq!(key.len(), 32);

    // The same key as the development fetch, and it authenticates.
    let (_, _, dev) = app
        .post(
            "/api/v1/dev_fetch_api_key",
            Auth::None,
            &[("username", "NEWBIE@zulip.com")],
        )
        .await;
    assert_eq!(dev["api_key"], key.as_str());
    let reply = app
        .get(
            "/api/v1/users/me",
            Auth::Basic("newbie@zulip.com", &key),
            &[],
        )
        .await;
    let me = assert_success(&reply);
    assert_eq!(me["user_id"], id);
    assert_eq!(me["full_name"], "New Bie");

    // The username is case-insensitive.
    let reply = app
        .post(
            "/api/v1/fetch_api_key",
            Auth::None,
            &[
                ("username", "NewBie@Zulip.com"),
                ("password", "s3cret-enough-pw"),
            ],
        )
        .await;
    assert_eq!(assert_success(&reply)["api_key"], key.as_str());
}

#[actix_web::test]
async fn fetch_api_key_failures() {
    let app = TestApp::spawn().await;
    app.create_user("newbie@zulip.com", "s3cret-enough-pw", "New Bie")
        .await;
    let failed = "Your username or password is incorrect";
    for (username, password) in [
        ("newbie@zulip.com", "wrong-password"),
        ("newbie@zulip.com", ""),
        ("nobody@zulip.com", "s3cret-enough-pw"),
        // Development users have no password.
        (MEMBER, ""),
        (MEMBER, "anything"),
    ] {
        let reply = app
            .post(
                "/api/v1/fetch_api_key",
                Auth::None,
                &[("username", username), ("password", password)],
            )
            .await;
        assert_error(&reply, 401, "AUTHENTICATION_FAILED", failed);
        assert!(reply.2.get("api_key").is_none());
    }
    let reply = app
        .post("/api/v1/fetch_api_key", Auth::None, &[("password", "x")])
        .await;
    assert_error(
        &reply,
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'username' argument",
    );
    assert_eq!(reply.2["var_name"], "username");
    let reply = app
        .post(
            "/api/v1/fetch_api_key",
            Auth::None,
            &[("username", "newbie@zulip.com")],
        )
        .await;
    assert_error(
        &reply,
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'password' argument",
    );
    assert_eq!(reply.2["var_name"], "password");
}

#[actix_web::test]
async fn unknown_paths_are_json_404() {
    let app = TestApp::spawn().await;
    let key = app.api_key(ADMIN).await;
    for (method, path) in [
        (Method::GET, "/api/v1/no_such_endpoint"),
        (Method::POST, "/api/v1/no_such_endpoint"),
        (Method::GET, "/api/v1/users/me/no_such_thing"),
        (Method::GET, "/api/v2/users"),
        (Method::GET, "/no_such_page"),
    ] {
        for auth in [Auth::None, Auth::Basic(ADMIN, &key)] {
            let reply = send(app.request(method.clone(), path, auth)).await;
            assert_eq!(reply.0, StatusCode::NOT_FOUND, "{method} {path}");
            assert_eq!(reply.1.get("content-type").unwrap(), "application/json");
            assert_eq!(reply.2["result"], "error", "{method} {path}");
            assert_eq!(reply.2["code"], "NOT_FOUND");
            assert_eq!(reply.2["msg"], "Not Found");
        }
    }
}

#[actix_web::test]
async fn wrong_method_is_405() {
    let app = TestApp::spawn().await;
    for (method, path) in [
        (Method::POST, "/api/v1/server_settings"),
        (Method::GET, "/api/v1/dev_fetch_api_key"),
        (Method::PUT, "/api/v1/users/me"),
    ] {
        let reply = send(app.request(method.clone(), path, Auth::None)).await;
        assert_eq!(reply.0, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        assert_eq!(reply.2["result"], "error");
        assert_eq!(reply.2["msg"], "Method Not Allowed");
    }
}

#[actix_web::test]
async fn json_api_answers_session_challenge() {
    let app = TestApp::spawn().await;
    for path in ["/json/users/me", "/json/users", "/json/server_settings"] {
        let reply = app.get(path, Auth::None, &[]).await;
        assert_error(&reply, 401, "UNAUTHORIZED", NOT_LOGGED_IN);
        assert_eq!(challenge(&reply), Some("Session realm=\"zulip\""), "{path}");
    }
}

/// The icon `/server_settings` and `/register` name is served (an image, not a 404),
/// and so is the browser's favicon.
#[actix_web::test]
async fn the_realm_icon_and_the_favicon_are_served() {
    let app = TestApp::spawn().await;
    let settings = app.get("/api/v1/server_settings", Auth::None, &[]).await;
    let icon = settings.2["realm_icon"].as_str().unwrap().to_owned();
    let path = &icon[icon.find("/static/").expect("a static path")..];
    for path in [path, "/favicon.ico"] {
        let resp = app
            .request(reqwest::Method::GET, path, Auth::None)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        assert_eq!(resp.headers()["content-type"], "image/png", "{path}");
        let bytes = resp.bytes().await.unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{path}");
        let (w, h) = (
            u32::from_be_bytes(bytes[16..20].try_into().unwrap()),
            u32::from_be_bytes(bytes[20..24].try_into().unwrap()),
        );
        assert_eq!((w, h), (128, 128));
    }
}
