//! The web client's sessions (`api::session`): the login pages, the session and CSRF
//! cookies, `/json/<path>` as `/api/v1/<path>`, logout, and what ends a session; and
//! their abuse cases (CSRF, fixation, another realm's host, injection into the pages,
//! login rate limits).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use reqwest::header::{HeaderMap, COOKIE, LOCATION, SET_COOKIE};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::common::*;

/// A browser: a cookie jar for one host, no redirects followed.
pub(crate) struct Browser {
    pub(crate) url: String,
    host: Option<String>,
    jar: BTreeMap<String, String>,
    client: reqwest::Client,
}

/// An answer: status, headers, body text.
pub(crate) struct Page {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) text: String,
}

impl Page {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }

    pub(crate) fn location(&self) -> &str {
        self.headers
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// The `Set-Cookie` line of `name`.
    pub(crate) fn set_cookie(&self, name: &str) -> Option<String> {
        self.headers
            .get_all(SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.starts_with(&format!("{name}=")))
            .map(str::to_owned)
    }

    /// The value of the hidden input `name` of the page's form.
    pub(crate) fn hidden(&self, name: &str) -> String {
        let at = self
            .text
            .find(&format!("name=\"{name}\" value=\""))
            .unwrap_or_else(|| panic!("no {name} in {}", self.text))
            + name.len()
            + 15;
        self.text[at..at + self.text[at..].find('"').unwrap()].to_owned()
    }
}

impl Browser {
    pub(crate) fn new(app: &TestApp) -> Browser {
        Browser::on(app, None)
    }

    pub(crate) fn on(app: &TestApp, host: Option<&str>) -> Browser {
        let mut b = Browser::at(&app.url);
        b.host = host.map(str::to_owned);
        b
    }

    /// A browser of a server at `url` (a child process, say).
    pub(crate) fn at(url: &str) -> Browser {
        Browser {
            url: url.to_owned(),
            host: None,
            jar: BTreeMap::new(),
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(std::time::Duration::from_secs(60))
                .build()
                .unwrap(),
        }
    }

    pub(crate) fn cookie(&self, name: &str) -> Option<String> {
        self.jar.get(name).cloned()
    }

    pub(crate) async fn call(
        &mut self,
        method: Method,
        path: &str,
        form: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> Page {
        let mut rb = self
            .client
            .request(method.clone(), format!("{}{path}", self.url));
        if let Some(host) = &self.host {
            rb = rb.header(reqwest::header::HOST, host);
        }
        if !self.jar.is_empty() {
            let cookies: Vec<String> = self.jar.iter().map(|(k, v)| format!("{k}={v}")).collect();
            rb = rb.header(COOKIE, cookies.join("; "));
        }
        for (k, v) in headers {
            rb = rb.header(*k, *v);
        }
        if method != Method::GET {
            rb = rb.form(form);
        } else if !form.is_empty() {
            rb = rb.query(form);
        }
        let resp = rb.send().await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        for line in headers.get_all(SET_COOKIE).iter() {
            let line = line.to_str().unwrap();
            let pair = line.split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            let removed = line.to_ascii_lowercase().contains("max-age=0");
            if removed || value.is_empty() {
                self.jar.remove(name);
            } else {
                self.jar.insert(name.to_owned(), value.to_owned());
            }
        }
        let text = resp.text().await.unwrap();
        Page {
            status,
            headers,
            text,
        }
    }

    pub(crate) async fn get(&mut self, path: &str) -> Page {
        self.call(Method::GET, path, &[], &[]).await
    }

    /// A `/json` call with the CSRF header, as the web client makes it.
    async fn json(&mut self, method: Method, path: &str, form: &[(&str, &str)]) -> Page {
        let token = self.cookie("csrftoken").unwrap_or_default();
        self.call(method, path, form, &[("X-CSRFToken", &token)])
            .await
    }

    /// Opens the login page and logs in with a password.
    pub(crate) async fn log_in(&mut self, email: &str, password: &str) -> Page {
        let login = self.get("/login/").await;
        assert_eq!(login.status, 200, "{}", login.text);
        let token = login.hidden("csrfmiddlewaretoken");
        self.call(
            Method::POST,
            "/accounts/login/",
            &[
                ("username", email),
                ("password", password),
                ("csrfmiddlewaretoken", &token),
                ("next", "/#narrow/is/starred"),
            ],
            &[],
        )
        .await
    }

    /// Logs in through the development login page.
    pub(crate) async fn dev_log_in(&mut self, email: &str) -> Page {
        let page = self.get("/devlogin/").await;
        assert_eq!(page.status, 200, "{}", page.text);
        assert!(page.text.contains(email), "{}", page.text);
        let token = page.hidden("csrfmiddlewaretoken");
        self.call(
            Method::POST,
            "/accounts/login/local/",
            &[("direct_email", email), ("csrfmiddlewaretoken", &token)],
            &[],
        )
        .await
    }
}

pub(crate) const PASSWORD: &str = "a-long-password-for-tests-42";

#[actix_web::test]
async fn a_password_login_starts_a_session_that_json_answers_for() {
    let app = TestApp::spawn().await;
    let id = app.create_user("web@zulip.com", PASSWORD, "Web User").await;
    let mut b = Browser::new(&app);
    // Not logged in: `/json` answers 401 with the session challenge.
    let r = b.get("/json/users/me").await;
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["code"], "UNAUTHORIZED");
    assert_eq!(
        r.headers.get("www-authenticate").unwrap(),
        "Session realm=\"zulip\""
    );
    let page = b.get("/login/?next=/%23narrow/is/starred").await;
    assert_eq!(page.status, 200);
    let csrf = page.set_cookie("csrftoken").expect("a CSRF cookie");
    assert!(
        csrf.contains("SameSite=Lax") && !csrf.contains("HttpOnly"),
        "{csrf}"
    );
    assert!(page
        .headers
        .get("content-security-policy")
        .unwrap()
        .to_str()
        .unwrap()
        .contains("frame-ancestors 'none'"));
    assert_eq!(page.hidden("next"), "/#narrow/is/starred");
    let before = b.cookie("csrftoken").unwrap();
    let r = b.log_in("web@zulip.com", PASSWORD).await;
    assert_eq!(r.status, 302, "{}", r.text);
    assert_eq!(r.location(), "/#narrow/is/starred");
    let session = r.set_cookie("sessionid").expect("a session cookie");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=1209600"] {
        assert!(session.contains(attribute), "{session}");
    }
    assert!(!session.contains("Secure"), "http realm: {session}");
    // The login gave a new CSRF token.
    assert_ne!(b.cookie("csrftoken").unwrap(), before);
    // `/json` is `/api/v1` with the session as the credential.
    let me = b.get("/json/users/me").await;
    assert_eq!(me.status, 200, "{}", me.text);
    assert_eq!(me.json()["user_id"], id);
    let key = app.api_key("web@zulip.com").await;
    let api = app
        .get("/api/v1/users/me", Auth::Basic("web@zulip.com", &key), &[])
        .await;
    assert_eq!(me.json(), api.2);
    // A write with the token.
    let sent = b
        .json(
            Method::POST,
            "/json/messages",
            &[
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", "from the browser"),
                ("content", "hello"),
            ],
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.text);
    assert!(sent.json()["id"].is_u64());
    // An open login page with a session goes on to `next`.
    let again = b.get("/login/?next=/").await;
    assert_eq!(again.status, 302);
    assert_eq!(again.location(), "/");
}

#[actix_web::test]
async fn a_wrong_password_and_an_unknown_address_get_one_answer() {
    let app = TestApp::spawn().await;
    app.create_user("web@zulip.com", PASSWORD, "Web User").await;
    let mut answers = Vec::new();
    for (email, password) in [
        ("web@zulip.com", "wrong password"),
        ("nobody@zulip.com", PASSWORD),
        ("hamlet@zulip.com", PASSWORD),
    ] {
        let mut b = Browser::new(&app);
        let r = b.log_in(email, password).await;
        assert_eq!(r.status, 200, "{email}");
        assert!(r.set_cookie("sessionid").is_none());
        let error = r.text.find("id=\"error\"").map(|at| {
            let rest = &r.text[at..];
            rest[..rest.find("</p>").unwrap()].to_owned()
        });
        answers.push(error.expect("an error"));
    }
    assert!(answers[0].contains("Please enter a correct email and password."));
    assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
}

#[actix_web::test]
async fn json_writes_need_the_csrf_token_and_this_origin() {
    let app = TestApp::spawn().await;
    let mut b = Browser::new(&app);
    assert_eq!(b.dev_log_in(HAMLET).await.status, 302);
    let token = b.cookie("csrftoken").unwrap();
    let id = send_stream(&app, HAMLET, "Verona", "csrf", "star me").await;
    let messages = format!("[{id}]");
    let form = [
        ("op", "add"),
        ("flag", "starred"),
        ("messages", messages.as_str()),
    ];
    let host = app.url.trim_start_matches("http://").to_owned();
    let evil = "http://evil.example".to_owned();
    let mut other = token.clone();
    other.replace_range(0..1, if token.starts_with('A') { "B" } else { "A" });
    let refused: Vec<(Vec<(&str, &str)>, String)> = vec![
        (vec![], "CSRF token missing.".into()),
        (
            vec![("X-CSRFToken", &other)],
            "CSRF token incorrect.".into(),
        ),
        (
            vec![("X-CSRFToken", &token), ("Origin", &evil)],
            format!("Origin checking failed - {evil} does not match any trusted origins."),
        ),
    ];
    for (headers, reason) in refused {
        let r = b
            .call(Method::POST, "/json/messages/flags", &form, &headers)
            .await;
        assert_eq!(r.status, 403, "{headers:?}: {}", r.text);
        let body = r.json();
        assert_eq!(body["code"], "CSRF_FAILED");
        assert_eq!(body["msg"], format!("CSRF error: {reason}"));
        assert_eq!(body["reason"], reason);
    }
    // Without the cookie, the header alone is nothing.
    let mut bare = Browser::new(&app);
    bare.jar
        .insert("sessionid".into(), b.cookie("sessionid").unwrap());
    let r = bare
        .call(
            Method::POST,
            "/json/messages/flags",
            &form,
            &[("X-CSRFToken", &token)],
        )
        .await;
    assert_eq!(r.json()["reason"], "CSRF cookie not set.");
    // This origin and the token: done; a GET needs no token.
    let origin = format!("http://{host}");
    let r = b
        .call(
            Method::POST,
            "/json/messages/flags",
            &form,
            &[("X-CSRFToken", &token), ("Origin", &origin)],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = b
        .get("/json/messages?anchor=newest&num_before=1&num_after=0")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Nothing was starred by the refused writes.
    let key = app.api_key(HAMLET).await;
    let starred = app
        .get(
            "/api/v1/messages",
            Auth::Basic(HAMLET, &key),
            &[
                ("anchor", "newest"),
                ("num_before", "100"),
                ("num_after", "0"),
                ("narrow", r#"[{"operator":"is","operand":"starred"}]"#),
            ],
        )
        .await;
    assert_eq!(starred.2["messages"].as_array().unwrap().len(), 1);
}

#[actix_web::test]
async fn json_takes_no_api_key() {
    let app = TestApp::spawn().await;
    let key = app.api_key(HAMLET).await;
    let r = app
        .get("/json/users/me", Auth::Basic(HAMLET, &key), &[])
        .await;
    assert_error(
        &r,
        401,
        "UNAUTHORIZED",
        "Not logged in: API authentication or user session required",
    );
    assert_eq!(challenge(&r), Some("Session realm=\"zulip\""));
}

#[actix_web::test]
async fn logout_ends_the_session_and_needs_the_token() {
    let app = TestApp::spawn().await;
    let mut b = Browser::new(&app);
    b.dev_log_in(HAMLET).await;
    let session = b.cookie("sessionid").unwrap();
    // A page elsewhere cannot log the browser out.
    let r = b.call(Method::POST, "/accounts/logout/", &[], &[]).await;
    assert_eq!(r.status, 403);
    assert!(r.text.contains("CSRF verification failed"), "{}", r.text);
    assert_eq!(b.get("/json/users/me").await.status, 200);
    let token = b.cookie("csrftoken").unwrap();
    let r = b
        .call(
            Method::POST,
            "/accounts/logout/",
            &[("csrfmiddlewaretoken", &token)],
            &[],
        )
        .await;
    assert_eq!(r.status, 302);
    assert_eq!(r.location(), "/login/");
    assert!(b.cookie("sessionid").is_none(), "the cookie is removed");
    // The old cookie, replayed, is nothing.
    b.jar.insert("sessionid".into(), session);
    assert_eq!(b.get("/json/users/me").await.status, 401);
}

#[actix_web::test]
async fn each_login_is_a_new_session_and_ends_the_one_before() {
    let app = TestApp::spawn().await;
    let mut b = Browser::new(&app);
    b.dev_log_in(HAMLET).await;
    let first = b.cookie("sessionid").unwrap();
    b.dev_log_in(OTHELLO).await;
    let second = b.cookie("sessionid").unwrap();
    assert_ne!(first, second);
    let me = b.get("/json/users/me").await.json();
    assert_eq!(me["user_id"], app.user_id(OTHELLO).await);
    let mut old = Browser::new(&app);
    old.jar.insert("sessionid".into(), first);
    assert_eq!(old.get("/json/users/me").await.status, 401);
}

#[actix_web::test]
async fn a_password_change_ends_the_other_sessions_and_keeps_the_browser() {
    let app = TestApp::spawn().await;
    app.create_user("web@zulip.com", PASSWORD, "Web User").await;
    let (mut a, mut other) = (Browser::new(&app), Browser::new(&app));
    a.log_in("web@zulip.com", PASSWORD).await;
    other.log_in("web@zulip.com", PASSWORD).await;
    let old = a.cookie("sessionid").unwrap();
    let r = a
        .json(
            Method::PATCH,
            "/json/settings",
            &[
                ("old_password", PASSWORD),
                ("new_password", "another-long-password-43"),
            ],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.set_cookie("sessionid").is_some());
    assert_ne!(a.cookie("sessionid").unwrap(), old);
    assert_eq!(a.get("/json/users/me").await.status, 200);
    assert_eq!(other.get("/json/users/me").await.status, 401);
    let mut replay = Browser::new(&app);
    replay.jar.insert("sessionid".into(), old);
    assert_eq!(replay.get("/json/users/me").await.status, 401);
}

#[actix_web::test]
async fn deactivation_ends_sessions_and_reactivation_does_not_bring_them_back() {
    let app = TestApp::spawn().await;
    let mut b = Browser::new(&app);
    b.dev_log_in(HAMLET).await;
    assert_eq!(b.get("/json/users/me").await.status, 200);
    app.ok("DELETE", &format!("/api/v1/users/{HAMLET_ID}"), IAGO, &[])
        .await;
    assert_eq!(b.get("/json/users/me").await.status, 401);
    app.ok(
        "POST",
        &format!("/api/v1/users/{HAMLET_ID}/reactivate"),
        IAGO,
        &[],
    )
    .await;
    assert_eq!(b.get("/json/users/me").await.status, 401);
}

#[actix_web::test]
async fn sessions_survive_a_restart_and_expire_two_weeks_after_the_last_page_load() {
    const DAY_MS: i64 = 24 * 3600 * 1000;
    let clock = hearth::realm::ManualClock::new(1_800_000_000_000);
    let mut app = TestApp::spawn_with_clock(clock.clone()).await;
    let mut b = Browser::new(&app);
    b.dev_log_in(HAMLET).await;
    app.restart().await;
    b.url = app.url.clone();
    assert_eq!(b.get("/json/users/me").await.status, 200);
    // A page load within a day of the login renews nothing.
    let page = b.get("/").await;
    assert_eq!(page.status, 200);
    assert!(page.set_cookie("sessionid").is_none());
    // Ten days on, a page load renews it for two weeks from then...
    clock.advance_ms(10 * DAY_MS);
    let page = b.get("/").await;
    let renewed = page.set_cookie("sessionid").expect("renewed");
    assert!(renewed.contains("Max-Age=1209600"), "{renewed}");
    // ...as durably as the login: past the first two weeks, after a restart, it holds.
    app.restart().await;
    b.url = app.url.clone();
    clock.advance_ms(13 * DAY_MS);
    assert_eq!(b.get("/json/users/me").await.status, 200);
    // API calls do not renew it: two weeks after the last page load it ends.
    clock.advance_ms(DAY_MS + 1000);
    assert_eq!(b.get("/json/users/me").await.status, 401);
    let r = b.get("/").await;
    assert_eq!(r.status, 302);
}

#[actix_web::test]
async fn a_session_of_one_realm_is_nothing_on_another_realms_host() {
    let (app, other) = TestApp::spawn_two_realms("acme", "owner@acme.example", |_| {}).await;
    let mut dev = Browser::on(&app, Some(DEV_HOST));
    assert_eq!(dev.dev_log_in(HAMLET).await.status, 302);
    assert_eq!(dev.get("/json/users/me").await.status, 200);
    let mut acme = Browser::on(&app, Some(&other.host));
    acme.jar = dev.jar.clone();
    assert_eq!(acme.get("/json/users/me").await.status, 401);
    // And the development login serves the development realm only.
    let page = acme.get("/devlogin/").await;
    assert_eq!(page.status, 404);
    assert!(page.text.contains("DevAuthBackend not enabled."));
    let token = acme.cookie("csrftoken").unwrap();
    let r = acme
        .call(
            Method::POST,
            "/accounts/login/local/",
            &[
                ("direct_email", other.owner_email.as_str()),
                ("csrfmiddlewaretoken", &token),
            ],
            &[],
        )
        .await;
    assert_eq!(r.status, 404);
    assert!(r.set_cookie("sessionid").is_none());
}

#[actix_web::test]
async fn the_development_login_lists_people_by_role_and_needs_the_token() {
    let app = TestApp::spawn().await;
    let mut b = Browser::new(&app);
    let page = b.get("/devlogin/").await;
    assert_eq!(page.status, 200);
    let owners = page.text.find("<h2>Owners</h2>").unwrap();
    let members = page.text.find("<h2>Normal users</h2>").unwrap();
    assert!(owners < members);
    assert!(page.text[members..].contains(HAMLET));
    assert!(!page.text.contains("welcome-bot@zulip.com"), "no bots");
    let r = b
        .call(
            Method::POST,
            "/accounts/login/local/",
            &[("direct_email", HAMLET)],
            &[],
        )
        .await;
    assert_eq!(r.status, 403);
    assert!(r.set_cookie("sessionid").is_none());
    let r = b.dev_log_in(HAMLET).await;
    assert_eq!(r.status, 302);
    assert_eq!(r.location(), "/");
}

#[actix_web::test]
async fn next_never_leaves_the_site_and_pages_escape_what_they_show() {
    let app = TestApp::spawn().await;
    app.ok(
        "PATCH",
        "/api/v1/realm",
        IAGO,
        &[("name", "\"<script>alert(1)</script>")],
    )
    .await;
    let mut b = Browser::new(&app);
    let page = b
        .get("/login/?next=%22%3E%3Cscript%3Ealert(2)%3C/script%3E")
        .await;
    assert!(!page.text.contains("<script>"), "{}", page.text);
    assert!(page.text.contains("&lt;script&gt;alert(1)"));
    assert_eq!(page.hidden("next"), "/");
    let token = page.hidden("csrfmiddlewaretoken");
    let r = b
        .call(
            Method::POST,
            "/accounts/login/local/",
            &[
                ("direct_email", HAMLET),
                ("csrfmiddlewaretoken", &token),
                ("next", "//evil.example/"),
            ],
            &[],
        )
        .await;
    assert_eq!(r.location(), "/");
    let r = Browser::new(&app)
        .log_in("\"><img src=x onerror=alert(3)>@zulip.com", "x")
        .await;
    assert!(!r.text.contains("<img src=x"), "{}", r.text);
}

#[actix_web::test]
async fn logins_are_rate_limited_as_fetch_api_key() {
    use hearth::config::Switch;
    let app = TestApp::spawn_configured(tempfile::tempdir().unwrap(), |c| {
        c.rate_limit = Some(Switch::On);
        c.rate_limit_per_ip = 1000;
    })
    .await;
    app.create_user("web@zulip.com", PASSWORD, "Web User").await;
    let mut b = Browser::new(&app);
    for _ in 0..5 {
        assert_eq!(b.log_in("web@zulip.com", "wrong").await.status, 200);
    }
    let r = b.log_in("web@zulip.com", PASSWORD).await;
    assert_eq!(r.status, 429, "{}", r.text);
    assert!(r.headers.get("retry-after").is_some());
    assert!(r.set_cookie("sessionid").is_none());
}

/// A session started is durable as any write: a process killed right after the
/// login's answer still knows it when started again.
#[test]
fn a_session_survives_kill_9() {
    use crate::common::child::ChildServer;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let server = ChildServer::up(&["--dev", "--data", data], &[]);
    let url = server.url.clone();
    let client = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = client.get(format!("{url}/devlogin/")).send().unwrap();
    let csrf = page
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|v| v.starts_with("csrftoken="))
        .unwrap();
    let token = csrf["csrftoken=".len()..csrf.find(';').unwrap()].to_owned();
    let r = client
        .post(format!("{url}/accounts/login/local/"))
        .header(COOKIE, format!("csrftoken={token}"))
        .form(&[("direct_email", HAMLET), ("csrfmiddlewaretoken", &token)])
        .send()
        .unwrap();
    assert_eq!(r.status(), 302);
    let session = r
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|v| v.starts_with("sessionid="))
        .unwrap();
    let session = session[..session.find(';').unwrap()].to_owned();
    server.kill_9();
    let server = ChildServer::up(&["--dev", "--data", data], &[]);
    let me = client
        .get(format!("{}/json/users/me", server.url))
        .header(COOKIE, &session)
        .send()
        .unwrap();
    assert_eq!(me.status(), 200);
    let me: Value = me.json().unwrap();
    assert_eq!(me["user_id"], HAMLET_ID);
    server.stop();
}

/// The asset names of the embedded client's page, in order (`/static/app/...`).
fn asset_paths(index: &str) -> Vec<String> {
    index
        .match_indices("/static/app/")
        .map(|(at, _)| {
            let rest = &index[at..];
            rest[..rest.find('"').unwrap()].to_owned()
        })
        .collect()
}

#[actix_web::test]
async fn the_client_page_is_for_a_session_and_its_assets_are_cached_and_precompressed() {
    let app = TestApp::spawn().await;
    let mut b = Browser::new(&app);
    let r = b.get("/").await;
    assert_eq!(r.status, 302);
    assert_eq!(r.location(), "/login/?next=/");
    b.dev_log_in(HAMLET).await;
    let page = b.get("/").await;
    assert_eq!(page.status, 200);
    let header = |name: &str| {
        page.headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(header("cache-control"), "no-cache");
    let csp = header("content-security-policy");
    for directive in [
        "script-src 'self'",
        "frame-ancestors 'none'",
        "object-src 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"));
    // No inline script: every script is a file of this origin.
    assert_eq!(
        page.text.matches("<script").count(),
        page.text
            .matches("<script type=\"module\" crossorigin src=\"/static/app/")
            .count()
    );
    let assets = asset_paths(&page.text);
    let script = assets
        .iter()
        .find(|a| a.ends_with(".js"))
        .expect("a script");
    let plain = b.get(script).await;
    assert_eq!(plain.status, 200);
    assert!(plain.headers.get("content-encoding").is_none());
    assert_eq!(
        plain.headers.get("cache-control").unwrap(),
        "public, max-age=31536000, immutable"
    );
    assert!(plain.headers["content-type"]
        .to_str()
        .unwrap()
        .contains("javascript"));
    for (accept, encoding) in [
        ("gzip", "gzip"),
        ("gzip, br", "br"),
        ("br;q=0, gzip", "gzip"),
    ] {
        let r = b
            .call(Method::GET, script, &[], &[("Accept-Encoding", accept)])
            .await;
        assert_eq!(
            r.headers
                .get("content-encoding")
                .map(|v| v.to_str().unwrap()),
            Some(encoding),
            "{accept}"
        );
        assert_eq!(r.headers.get("vary").unwrap(), "Accept-Encoding");
    }
    // The same bytes, once decoded.
    let gz = b
        .client
        .get(format!("{}{script}", app.url))
        .header("Accept-Encoding", "gzip")
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let mut decoded = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut decoded)
        .unwrap();
    assert_eq!(decoded, plain.text);
    assert_eq!(b.get("/static/app/assets/nothing.js").await.status, 404);
    assert_eq!(b.get("/static/app/../Cargo.toml").await.status, 404);
}
