//! Password reset (`api::password_reset`): the link by email, the new password, what
//! the link stops working for; and the abuse cases (CSRF, forged and reused links,
//! the answer for unknown addresses, injection into the address, rate limits).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use reqwest::Method;

use crate::common::child::ChildServer;
use crate::common::smtp::Receiver;
use crate::common::*;
use crate::web_sessions::{Browser, Page, PASSWORD};

const NEW_PASSWORD: &str = "another long passphrase, freshly set";

/// A server sending email to `smtp`, with rate limits when `limited`.
async fn app_with(smtp: &Receiver, limited: bool) -> TestApp {
    let url = smtp.url();
    TestApp::spawn_configured(tempfile::tempdir().unwrap(), move |c| {
        c.smtp_url = Some(url.clone());
        c.smtp_from = Some("Zulip <noreply@zulip.test>".into());
        if limited {
            c.rate_limit = Some(hearth::config::Switch::On);
            c.rate_limit_per_ip = 1000;
        }
    })
    .await
}

/// Asks for a link for `address` through the form, as a browser does.
async fn ask(b: &mut Browser, address: &str) -> Page {
    let form = b.get("/accounts/password/reset/").await;
    assert_eq!(form.status, 200, "{}", form.text);
    let token = form.hidden("csrfmiddlewaretoken");
    b.call(
        Method::POST,
        "/accounts/password/reset/",
        &[("email", address), ("csrfmiddlewaretoken", &token)],
        &[],
    )
    .await
}

/// An email's text with quoted-printable soft breaks undone.
fn text(mail: &str) -> String {
    mail.replace("=\r\n", "")
        .replace("=\n", "")
        .replace("=3D", "=")
}

/// The reset link's path in an email, if it has one.
fn link_in(mail: &str) -> Option<String> {
    let mail = text(mail);
    let at = mail.find("/accounts/password/reset/")?;
    let rest = &mail[at..];
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    Some(rest[..end].to_owned())
}

/// Posts the new-password form of `link`.
async fn set(b: &mut Browser, link: &str, one: &str, two: &str) -> Page {
    let form = b.get(link).await;
    assert_eq!(form.status, 200, "{}", form.text);
    let token = form.hidden("csrfmiddlewaretoken");
    b.call(
        Method::POST,
        link,
        &[
            ("new_password1", one),
            ("new_password2", two),
            ("csrfmiddlewaretoken", &token),
        ],
        &[],
    )
    .await
}

#[actix_web::test]
async fn a_link_by_email_sets_the_password_once_ends_sessions_and_outlives_a_restart() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let mut app = app_with(&smtp, false).await;
    app.create_user("web@zulip.com", PASSWORD, "Web User").await;
    let mut logged_in = Browser::new(&app);
    assert_eq!(
        logged_in.log_in("web@zulip.com", PASSWORD).await.status,
        302
    );
    assert_eq!(logged_in.get("/json/users/me").await.status, 200);

    // The login page offers the reset.
    let mut b = Browser::new(&app);
    let login = b.get("/login/").await;
    assert!(login.text.contains("href=\"/accounts/password/reset/\""));
    let r = ask(&mut b, "WEB@zulip.com").await;
    assert_eq!(r.status, 302, "{}", r.text);
    assert_eq!(r.location(), "/accounts/password/reset/done/");
    let done = b.get(r.location()).await;
    assert_eq!(done.status, 200);
    assert!(done.text.contains("Check your email"), "{}", done.text);
    let mails = smtp.wait_for(1).await;
    let mail = text(&mails[0]);
    assert!(mail.contains("To: web@zulip.com"), "{mail}");
    let link = link_in(&mails[0]).expect("a link");

    // The link outlives a restart (its key is in the data folder).
    app.restart().await;
    b.url = app.url.clone();
    logged_in.url = app.url.clone();

    // Two passwords that differ, then a weak one: the form again, nothing set.
    let r = set(&mut b, &link, NEW_PASSWORD, "something else entirely").await;
    assert_eq!(r.status, 400);
    assert!(r.text.contains("do not match"), "{}", r.text);
    let r = set(&mut b, &link, "short", "short").await;
    assert_eq!(r.status, 400);
    assert!(r.text.contains("too weak"), "{}", r.text);
    assert_eq!(logged_in.get("/json/users/me").await.status, 200);

    let r = set(&mut b, &link, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.contains("Your password is set"), "{}", r.text);
    // Sessions end with the old password; the new one logs in, the old one not.
    assert_eq!(logged_in.get("/json/users/me").await.status, 401);
    let mut fresh = Browser::new(&app);
    assert_eq!(fresh.log_in("web@zulip.com", PASSWORD).await.status, 200);
    assert_eq!(
        fresh.log_in("web@zulip.com", NEW_PASSWORD).await.status,
        302
    );
    // The link worked once.
    let again = b.get(&link).await;
    assert_eq!(again.status, 404);
    assert!(again.text.contains("not valid"), "{}", again.text);
}

#[actix_web::test]
async fn a_password_set_through_a_link_survives_a_kill_9() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap().to_owned();
    let smtp_url = smtp.url();
    let args = [
        "--dev",
        "--data",
        &data,
        "--durability",
        "always",
        "--smtp-url",
        &smtp_url,
    ];
    let server = ChildServer::up(&args, &[]);

    // A user of the development realm, who has no password yet.
    let mut b = Browser::at(&server.url);
    assert_eq!(b.log_in("hamlet@zulip.com", PASSWORD).await.status, 200);
    let r = ask(&mut b, "hamlet@zulip.com").await;
    assert_eq!(r.status, 302, "{}", r.text);
    let link = link_in(&smtp.wait_for(1).await[0]).expect("a link");
    let r = set(&mut b, &link, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Answered: the new password is durable, whatever happens next.
    server.kill_9();

    let server = ChildServer::up(&args, &[]);
    let mut fresh = Browser::at(&server.url);
    assert_eq!(fresh.log_in("hamlet@zulip.com", PASSWORD).await.status, 200);
    assert_eq!(
        fresh.log_in("hamlet@zulip.com", NEW_PASSWORD).await.status,
        302
    );
    // And the link stays used.
    assert_eq!(fresh.get(&link).await.status, 404);
    server.stop();
}

#[actix_web::test]
async fn unknown_and_deactivated_addresses_get_the_same_answer_and_no_link() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let app = app_with(&smtp, false).await;
    let id = app.create_user("gone@zulip.com", PASSWORD, "Gone").await;
    app.ok("DELETE", &format!("/api/v1/users/{id}"), IAGO, &[])
        .await;
    let mut b = Browser::new(&app);
    let mut answers = Vec::new();
    for address in ["nobody@zulip.com", "gone@zulip.com", HAMLET] {
        let r = ask(&mut b, address).await;
        answers.push((r.status, r.location().to_owned()));
    }
    assert!(answers.iter().all(|a| a == &answers[0]), "{answers:?}");
    let mails = smtp.wait_for(3).await;
    let to = |who: &str| {
        mails
            .iter()
            .map(|m| text(m))
            .find(|m| m.contains(&format!("To: {who}")))
            .unwrap_or_else(|| panic!("no email to {who}"))
    };
    let nobody = to("nobody@zulip.com");
    assert!(
        nobody.contains("no account there uses this address"),
        "{nobody}"
    );
    assert!(link_in(&nobody).is_none());
    let gone = to("gone@zulip.com");
    assert!(gone.contains("deactivated"), "{gone}");
    assert!(link_in(&gone).is_none());
    assert!(link_in(&to(HAMLET)).is_some());
}

#[actix_web::test]
async fn forged_links_and_posts_without_the_token_are_refused() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let app = app_with(&smtp, false).await;
    let mut b = Browser::new(&app);
    assert_eq!(ask(&mut b, HAMLET).await.status, 302);
    let link = link_in(&smtp.wait_for(1).await[0]).unwrap();
    // The same link for another user, a changed expiry or MAC, junk: refused alike.
    let parts: Vec<&str> = link.trim_matches('/').split('/').collect();
    let (user, token) = (parts[3], parts[4]);
    let (expires, mac) = token.split_once('-').unwrap();
    let other_mac = format!(
        "{}{}",
        &mac[..63],
        if mac.ends_with('0') { '1' } else { '0' }
    );
    for forged in [
        format!("/accounts/password/reset/{OTHELLO_ID}/{token}/"),
        format!(
            "/accounts/password/reset/{user}/{}-{mac}/",
            expires.parse::<i64>().unwrap() + 60
        ),
        format!("/accounts/password/reset/{user}/{expires}-{other_mac}/"),
        format!("/accounts/password/reset/{user}/{expires}/"),
        "/accounts/password/reset/x/1-2/".to_owned(),
    ] {
        let r = b.get(&forged).await;
        assert_eq!(r.status, 404, "{forged}: {}", r.text);
        let r = b
            .call(
                Method::POST,
                &forged,
                &[
                    ("new_password1", NEW_PASSWORD),
                    ("new_password2", NEW_PASSWORD),
                    ("csrfmiddlewaretoken", &b.cookie("csrftoken").unwrap()),
                ],
                &[],
            )
            .await;
        assert_eq!(r.status, 404, "{forged}: {}", r.text);
    }
    // Without the page's CSRF token, or from another site: refused, nothing set.
    let form = b.get(&link).await;
    assert_eq!(form.status, 200);
    let post = [
        ("new_password1", NEW_PASSWORD),
        ("new_password2", NEW_PASSWORD),
    ];
    let r = b.call(Method::POST, &link, &post, &[]).await;
    assert_eq!(r.status, 403, "{}", r.text);
    let token = b.cookie("csrftoken").unwrap();
    let with_token = [post[0], post[1], ("csrfmiddlewaretoken", &token)];
    let r = b
        .call(
            Method::POST,
            &link,
            &with_token,
            &[("Origin", "https://evil.example")],
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    let r = b
        .call(
            Method::POST,
            "/accounts/password/reset/",
            &[("email", HAMLET)],
            &[],
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(smtp.messages().len(), 1, "no second email");
    // The link still works: none of the above used it.
    assert_eq!(b.get(&link).await.status, 200);
}

#[actix_web::test]
async fn addresses_are_checked_and_never_echoed_into_the_page_or_the_headers() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let app = app_with(&smtp, false).await;
    let mut b = Browser::new(&app);
    for bad in [
        "",
        "not an address",
        "<script>alert(1)</script>@zulip.com",
        "hamlet@zulip.com\r\nBcc: everyone@evil.example",
        "hamlet@zulip.com, othello@zulip.com",
        &format!("{}@zulip.com", "a".repeat(260)),
    ] {
        let r = ask(&mut b, bad).await;
        assert_eq!(r.status, 400, "{bad:?}: {}", r.text);
        assert!(
            r.text.contains("Enter a valid email address."),
            "{}",
            r.text
        );
        assert!(!r.text.contains("<script>alert"), "{}", r.text);
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(smtp.messages().is_empty(), "no email for a bad address");
}

#[actix_web::test]
async fn reset_emails_are_two_an_hour_for_one_address() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let app = app_with(&smtp, true).await;
    let mut b = Browser::new(&app);
    assert_eq!(ask(&mut b, HAMLET).await.status, 302);
    assert_eq!(ask(&mut b, &HAMLET.to_uppercase()).await.status, 302);
    let r = ask(&mut b, HAMLET).await;
    assert_eq!(r.status, 429, "{}", r.text);
    assert!(r.headers.get("retry-after").is_some());
    // Another address is its own count.
    assert_eq!(ask(&mut b, "nobody@zulip.com").await.status, 302);
    assert_eq!(smtp.wait_for(3).await.len(), 3);
}

#[actix_web::test]
async fn a_server_without_email_says_so() {
    let (app, other) = TestApp::spawn_two_realms("acme", "owner@acme.example", |c| {
        c.dev = false;
    })
    .await;
    let mut b = Browser::on(&app, Some(&other.host));
    let r = ask(&mut b, "owner@acme.example").await;
    assert_eq!(r.status, 503, "{}", r.text);
    assert!(r.text.contains("sends no email"), "{}", r.text);
}
