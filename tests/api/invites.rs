//! Invitations (`zerver/views/invite.py`, `zerver/actions/invites.py`): every rule and
//! text per role, `invites_changed` events, the state after a restart and a `kill -9`,
//! email delivery through a real SMTP receiver (Python's `aiosmtpd`, run by the test
//! from `HEARTH_PYTHON`), and the sign-up page as a browser without script drives it
//! (GET the form, read its token, POST, read the answer).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::child::ChildServer;
use crate::common::smtp::Receiver;
use crate::common::*;
use hearth::realm::ManualClock;
use reqwest::StatusCode;
use serde_json::{json, Value};

// ---- helpers -------------------------------------------------------------------------

/// `POST /invites` as `who` to `emails`, into Verona.
async fn invite(app: &TestApp, who: &str, emails: &str, extra: &[(&str, &str)]) -> (u16, Value) {
    let verona = app.stream_id("Verona").await.to_string();
    let ids = format!("[{verona}]");
    let mut params = vec![("invitee_emails", emails), ("stream_ids", ids.as_str())];
    params.extend_from_slice(extra);
    app.call("POST", "/api/v1/invites", who, &params).await
}

/// The invitations `who` sees.
async fn invites(app: &TestApp, who: &str) -> Vec<Value> {
    app.ok("GET", "/api/v1/invites", who, &[]).await["invites"]
        .as_array()
        .unwrap()
        .clone()
}

/// A reusable link made by `who` with these parameters.
async fn link(app: &TestApp, who: &str, params: &[(&str, &str)]) -> String {
    let body = app
        .ok("POST", "/api/v1/invites/multiuse", who, params)
        .await;
    body["invite_link"].as_str().unwrap().to_owned()
}

/// The path of a link (`/join/<key>/`), checked against Zulip's key shape.
fn join_path(link: &str) -> String {
    let at = link.find("/join/").expect("a /join/ link");
    let path = &link[at..];
    let key = path
        .strip_prefix("/join/")
        .and_then(|k| k.strip_suffix('/'))
        .unwrap();
    assert_eq!(key.len(), 24, "{link}");
    assert!(
        key.bytes()
            .all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b)),
        "{link}"
    );
    path.to_owned()
}

/// A page of the sign-up flow: status, headers, body.
async fn page(
    client: &reqwest::Client,
    url: &str,
    form: Option<&[(&str, &str)]>,
) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let rb = match form {
        None => client.get(url),
        Some(f) => client.post(url).form(f),
    };
    let resp = rb.send().await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.unwrap())
}

/// The form token of a sign-up page.
fn csrf(html: &str) -> String {
    let marker = "name=\"csrf_token\" value=\"";
    let at = html
        .find(marker)
        .unwrap_or_else(|| panic!("no token in {html}"))
        + marker.len();
    html[at..at + html[at..].find('"').unwrap()].to_owned()
}

/// The text of the element with this id (`<x id="name">text</x>`).
fn element(html: &str, id: &str) -> String {
    let marker = format!("id=\"{id}\">");
    let at = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no #{id} in {html}"))
        + marker.len();
    html[at..at + html[at..].find('<').unwrap()].to_owned()
}

/// Signs up on `url` (GET the form, POST it with its token); returns the answer page.
async fn sign_up(url: &str, fields: &[(&str, &str)]) -> (StatusCode, String) {
    let client = client();
    let (status, _, html) = page(&client, url, None).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    let token = csrf(&html);
    let mut form = vec![("csrf_token", token.as_str())];
    form.extend_from_slice(fields);
    let (status, _, html) = page(&client, url, Some(&form)).await;
    (status, html)
}

const STRONG: &str = "a long and unguessable passphrase";

/// The `invites_changed` events of a queue.
async fn invite_events(app: &TestApp, who: &str, queue: &str) -> usize {
    app.events(who, queue)
        .await
        .iter()
        .filter(|e| e["type"] == "invites_changed")
        .count()
}

// ---- rules and texts -------------------------------------------------------------------

#[actix_web::test]
async fn who_may_invite_and_as_what() {
    let app = TestApp::spawn().await;
    let verona = app.stream_id("Verona").await;
    let streams = format!("[{verona}]");
    // `require_member_or_admin` comes first, before any parameter.
    app.bad(
        "POST",
        "/api/v1/invites",
        GUEST,
        &[],
        "Not allowed for guest users",
    )
    .await;
    app.bad(
        "POST",
        "/api/v1/invites",
        DEFAULT_BOT,
        &[],
        "This endpoint does not accept bot requests.",
    )
    .await;
    // Then the parameters, in the view's order.
    app.err(
        "POST",
        "/api/v1/invites",
        HAMLET,
        &[("stream_ids", &streams)],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'invitee_emails' argument",
    )
    .await;
    app.err(
        "POST",
        "/api/v1/invites",
        HAMLET,
        &[("invitee_emails", "new@zulip.test")],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'stream_ids' argument",
    )
    .await;
    for (who, invite_as, msg) in [
        (HAMLET, "123", "Invalid invite_as"),
        (HAMLET, "\"x\"", "invite_as is not an integer"),
        (HAMLET, "300", "Must be an organization administrator"),
        (HAMLET, "200", "Must be an organization administrator"),
        (SHIVA, "300", "Must be an organization administrator"),
    ] {
        let (status, body) = invite(&app, who, "new@zulip.test", &[("invite_as", invite_as)]).await;
        assert_eq!(
            (status, body["msg"].as_str().unwrap()),
            (400, msg),
            "{who} {invite_as}"
        );
        assert_eq!(body["code"], "BAD_REQUEST");
    }
    // Owners are invited by owners only (`OrganizationOwnerRequiredError`).
    for who in [HAMLET, IAGO] {
        let (status, body) = invite(&app, who, "new@zulip.test", &[("invite_as", "100")]).await;
        assert_eq!(status, 400);
        assert_eq!(body["msg"], NOT_OWNER);
        assert_eq!(body["code"], "UNAUTHORIZED_PRINCIPAL");
    }
    let (status, body) = invite(&app, HAMLET, "", &[]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (400, json!("You must specify at least one email address."))
    );
    let (status, body) = app
        .call(
            "POST",
            "/api/v1/invites",
            HAMLET,
            &[
                ("invitee_emails", "new@zulip.test"),
                ("stream_ids", "[9999]"),
            ],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (400, json!("Invalid channel ID 9999. No invites were sent."))
    );
    // A private channel hamlet cannot see is no channel to him.
    let core = app.stream_id("core team").await;
    let (_, body) = app
        .call(
            "POST",
            "/api/v1/invites",
            HAMLET,
            &[
                ("invitee_emails", "new@zulip.test"),
                ("stream_ids", &format!("[{core}]")),
            ],
        )
        .await;
    assert_eq!(
        body["msg"],
        format!("Invalid channel ID {core}. No invites were sent.")
    );
    let (status, body) = invite(&app, HAMLET, "new@zulip.test", &[("group_ids", "[9999]")]).await;
    assert_eq!(
        (status, body["msg"].clone()),
        (400, json!("Invalid user group"))
    );
    // Who may invite at all: `can_invite_users_group` (members by default).
    let (status, body) = invite(&app, HAMLET, "new1@zulip.test", &[]).await;
    assert_eq!(status, 200, "{body}");
    app.ok(
        "PATCH",
        "/api/v1/realm",
        DESDEMONA,
        &[(
            "can_invite_users_group",
            &json!({"new": ADMINS}).to_string(),
        )],
    )
    .await;
    let (status, body) = invite(&app, HAMLET, "new2@zulip.test", &[]).await;
    assert_eq!((status, body["msg"].clone()), (400, json!(INSUFFICIENT)));
    for (who, invite_as) in [(IAGO, "200"), (IAGO, "600"), (DESDEMONA, "100")] {
        let (status, body) = invite(
            &app,
            who,
            &format!("as{invite_as}@zulip.test"),
            &[("invite_as", invite_as)],
        )
        .await;
        assert_eq!(status, 200, "{who} {invite_as}: {body}");
    }
    // An administrator subscribes invitees to any channel he sees; a member with the
    // right to invite but not to add subscribers only to default channels.
    app.ok(
        "PATCH",
        "/api/v1/realm",
        DESDEMONA,
        &[
            (
                "can_invite_users_group",
                &json!({"new": MEMBERS}).to_string(),
            ),
            (
                "can_add_subscribers_group",
                &json!({"new": ADMINS}).to_string(),
            ),
        ],
    )
    .await;
    let denmark = app.stream_id("Denmark").await;
    let (status, body) = app
        .call(
            "POST",
            "/api/v1/invites",
            HAMLET,
            &[
                ("invitee_emails", "new3@zulip.test"),
                ("stream_ids", &format!("[{denmark}]")),
            ],
        )
        .await;
    assert_eq!(
        (status, body["msg"].clone()),
        (
            400,
            json!("You do not have permission to subscribe other users to channels.")
        )
    );
    // Verona is a default channel of the development realm.
    let (status, body) = invite(&app, HAMLET, "new3@zulip.test", &[]).await;
    assert_eq!(status, 200, "{body}");
}

#[actix_web::test]
async fn addresses_that_do_not_validate_or_have_accounts() {
    let app = TestApp::spawn().await;
    // Any address that does not validate: nothing is sent, every problem is listed.
    let (status, body) = invite(
        &app,
        HAMLET,
        "bad-address, new@zulip.test, othello@zulip.com",
        &[],
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({
            "result": "error",
            "msg": "Some emails did not validate, so we didn't send any invitations.",
            "code": "INVITATION_FAILED",
            "errors": [["bad-address", "Invalid address.", false],
                       ["othello@zulip.com", "Already has an account.", false]],
            "sent_invitations": false,
            "license_limit_reached": false,
            "daily_limit_reached": false,
        })
    );
    assert!(invites(&app, IAGO).await.is_empty());
    // Everyone has an account already, one of them deactivated.
    let gone = app.create_user("gone@zulip.test", STRONG, "Gone").await;
    app.ok("DELETE", &format!("/api/v1/users/{gone}"), IAGO, &[])
        .await;
    let (status, body) = invite(
        &app,
        HAMLET,
        "Othello <othello@zulip.com>\ngone@zulip.test\nnotification-bot@zulip.com",
        &[],
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["msg"], "We weren't able to invite anyone.");
    assert_eq!(
        body["errors"],
        json!([
            ["othello@zulip.com", "Already has an account.", false],
            ["gone@zulip.test", "Account has been deactivated.", true],
            [
                "notification-bot@zulip.com",
                "Reserved for system bots.",
                false
            ]
        ])
    );
    assert_eq!(body["sent_invitations"], false);
    // Some have accounts: the others are invited, and the answer says so.
    let (status, body) = invite(&app, HAMLET, "othello@zulip.com,fresh@zulip.test", &[]).await;
    assert_eq!(status, 400);
    assert_eq!(body["code"], "INVITATION_FAILED");
    assert_eq!(
        body["msg"],
        "Some of those addresses are already using Zulip, so we didn't send them an \
         invitation. We did send invitations to everyone else!"
    );
    assert_eq!(body["sent_invitations"], true);
    let listed = invites(&app, HAMLET).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["email"], "fresh@zulip.test");
}

#[actix_web::test]
async fn listing_revoking_and_resending() {
    let clock = ManualClock::new(START_MS);
    let app = TestApp::spawn_with_clock(clock).await;
    let (status, body) = invite(
        &app,
        HAMLET,
        "a@zulip.test",
        &[("invite_expires_in_minutes", "60")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = invite(
        &app,
        IAGO,
        "b@zulip.test",
        &[
            ("invite_as", "300"),
            ("invite_expires_in_minutes", "null"),
            ("notify_referrer_on_join", "false"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    // Reusable links: administrators by default (`create_multiuse_invite_group`).
    app.bad(
        "POST",
        "/api/v1/invites/multiuse",
        HAMLET,
        &[],
        INSUFFICIENT,
    )
    .await;
    app.bad(
        "POST",
        "/api/v1/invites/multiuse",
        GUEST,
        &[],
        "Not allowed for guest users",
    )
    .await;
    app.err(
        "POST",
        "/api/v1/invites/multiuse",
        IAGO,
        &[("invite_as", "100")],
        400,
        "UNAUTHORIZED_PRINCIPAL",
        NOT_OWNER,
    )
    .await;
    let url = link(&app, IAGO, &[]).await;
    assert!(url.starts_with(&app.url), "{url} on {}", app.url);
    join_path(&url);
    let hamlet = invites(&app, HAMLET).await;
    assert_eq!(
        hamlet,
        vec![json!({
            "email": "a@zulip.test", "invited_by_user_id": HAMLET_ID, "invited": START,
            "expiry_date": START + 3600, "id": 1, "invited_as": 400, "is_multiuse": false,
            "notify_referrer_on_join": true,
        })]
    );
    let all = invites(&app, IAGO).await;
    assert_eq!(all.len(), 3);
    assert_eq!(
        all[1],
        json!({
            "email": "b@zulip.test", "invited_by_user_id": IAGO_ID, "invited": START,
            "expiry_date": null, "id": 2, "invited_as": 300, "is_multiuse": false,
            "notify_referrer_on_join": false,
        })
    );
    assert_eq!(
        all[2],
        json!({
            "invited_by_user_id": IAGO_ID, "invited": START,
            "expiry_date": START + 10 * 24 * 3600, "id": 1, "link_url": url,
            "invited_as": 400, "is_multiuse": true,
        })
    );
    app.bad(
        "GET",
        "/api/v1/invites",
        GUEST,
        &[],
        "Not allowed for guest users",
    )
    .await;
    // Expired invitations are not listed.
    app.clock().advance_ms(3601 * 1000);
    assert_eq!(invites(&app, HAMLET).await, Vec::<Value>::new());
    assert_eq!(invites(&app, IAGO).await.len(), 2);
    // Revoking: one's own, or as an administrator; owners' invitations by owners.
    app.bad(
        "DELETE",
        "/api/v1/invites/2",
        HAMLET,
        &[],
        "Must be an organization administrator",
    )
    .await;
    app.bad(
        "DELETE",
        "/api/v1/invites/99",
        HAMLET,
        &[],
        "No such invitation",
    )
    .await;
    app.bad(
        "DELETE",
        "/api/v1/invites/x",
        HAMLET,
        &[],
        "invite_id is not an integer",
    )
    .await;
    app.bad(
        "POST",
        "/api/v1/invites/2/resend",
        HAMLET,
        &[],
        "Must be an organization administrator",
    )
    .await;
    app.ok("POST", "/api/v1/invites/2/resend", IAGO, &[]).await;
    app.ok("POST", "/api/v1/invites/2/resend", DESDEMONA, &[])
        .await;
    app.ok("DELETE", "/api/v1/invites/2", DESDEMONA, &[]).await;
    assert_eq!(invites(&app, IAGO).await.len(), 1);
    app.bad(
        "DELETE",
        "/api/v1/invites/multiuse/1",
        HAMLET,
        &[],
        "Must be an organization administrator",
    )
    .await;
    app.bad(
        "DELETE",
        "/api/v1/invites/multiuse/7",
        IAGO,
        &[],
        "No such invitation",
    )
    .await;
    app.ok("DELETE", "/api/v1/invites/multiuse/1", IAGO, &[])
        .await;
    app.bad(
        "DELETE",
        "/api/v1/invites/multiuse/1",
        IAGO,
        &[],
        "Invitation has already been revoked",
    )
    .await;
    assert_eq!(invites(&app, IAGO).await, Vec::<Value>::new());
    // An owner's link is an owner's to revoke.
    let owner_link = link(&app, DESDEMONA, &[("invite_as", "100")]).await;
    join_path(&owner_link);
    app.err(
        "DELETE",
        "/api/v1/invites/multiuse/2",
        IAGO,
        &[],
        400,
        "UNAUTHORIZED_PRINCIPAL",
        NOT_OWNER,
    )
    .await;
}

#[actix_web::test]
async fn invites_changed_goes_to_administrators_and_the_creator() {
    let app = TestApp::spawn().await;
    let queues = [
        (IAGO, app.register(IAGO, &[]).await),
        (DESDEMONA, app.register(DESDEMONA, &[]).await),
        (HAMLET, app.register(HAMLET, &[]).await),
        (CORDELIA, app.register(CORDELIA, &[]).await),
        (SHIVA, app.register(SHIVA, &[]).await),
    ];
    let (status, _) = invite(&app, HAMLET, "ev@zulip.test", &[]).await;
    assert_eq!(status, 200);
    app.ok("DELETE", "/api/v1/invites/1", IAGO, &[]).await;
    let mut counts = Vec::new();
    for (who, q) in &queues {
        counts.push((*who, invite_events(&app, who, q).await));
    }
    // Created and revoked: two events each for the administrators and hamlet.
    assert_eq!(
        counts,
        vec![
            (IAGO, 2),
            (DESDEMONA, 2),
            (HAMLET, 2),
            (CORDELIA, 0),
            (SHIVA, 0)
        ]
    );
    let events = app.events(HAMLET, &queues[2].1).await;
    let e = events
        .iter()
        .find(|e| e["type"] == "invites_changed")
        .unwrap();
    assert_eq!(e.as_object().unwrap().len(), 2, "{e}: only type and id");
    // A refused request sends nothing.
    let (status, _) = invite(&app, HAMLET, "othello@zulip.com", &[]).await;
    assert_eq!(status, 400);
    assert_eq!(invite_events(&app, CORDELIA, &queues[3].1).await, 0);
    assert_eq!(invite_events(&app, IAGO, &queues[0].1).await, 2);
}

// ---- the sign-up page -------------------------------------------------------------------

#[actix_web::test]
async fn sign_up_through_a_link() {
    let app = TestApp::spawn().await;
    let queue = app.register(CORDELIA, &[]).await;
    let admin_queue = app.register(IAGO, &[]).await;
    let denmark = app.stream_id("Denmark").await;
    // A group iago may add members to (he manages all groups).
    let body = app
        .ok(
            "POST",
            "/api/v1/user_groups/create",
            IAGO,
            &[
                ("name", "newcomers"),
                ("description", "d"),
                ("members", "[]"),
            ],
        )
        .await;
    let group = body["group_id"].as_i64().unwrap();
    let url = link(
        &app,
        IAGO,
        &[
            ("invite_as", "300"),
            ("stream_ids", &format!("[{denmark}]")),
            ("group_ids", &format!("[{group}]")),
            ("include_realm_default_subscriptions", "true"),
        ],
    )
    .await;
    let before = invite_events(&app, IAGO, &admin_queue).await;
    let client = client();
    let (status, headers, html) = page(&client, &url, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("form-action 'self'"),
        "{csp}"
    );
    assert_eq!(headers["referrer-policy"], "no-referrer");
    assert_eq!(headers["cache-control"], "no-store");
    assert!(html.contains("Iago invited you."), "{html}");
    let token = csrf(&html);
    let xss = "<script>alert(1)</script>";
    let tampered = format!(
        "{}{}",
        if token.starts_with('0') { "1" } else { "0" },
        &token[1..]
    );
    // A token that is not this page's: refused, nothing made, nothing typed unescaped.
    let (status, _, html) = page(
        &client,
        &url,
        Some(&[
            ("csrf_token", tampered.as_str()),
            ("email", "new@zulip.test"),
            ("full_name", "New"),
            ("password", STRONG),
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        html.contains("This form has expired or was not sent from this page."),
        "{html}"
    );
    // A name that is markup comes back escaped (and is refused: Zulip's name rules).
    let (status, _, html) = page(
        &client,
        &url,
        Some(&[
            ("csrf_token", token.as_str()),
            ("email", "\"><img src=x onerror=alert(1)>"),
            ("full_name", xss),
            ("password", STRONG),
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(!html.contains("<script>alert"), "{html}");
    assert!(!html.contains("<img src=x"), "{html}");
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
    assert!(
        html.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"),
        "{html}"
    );
    assert_eq!(element(&html, "error"), "Invalid characters in name!");
    // The password rule of `realm create`, even on the development server.
    let (_, _, html) = page(
        &client,
        &url,
        Some(&[
            ("csrf_token", token.as_str()),
            ("email", "new@zulip.test"),
            ("full_name", "New Person"),
            ("password", "abcd1234"),
        ]),
    )
    .await;
    assert_eq!(element(&html, "error"), "The password is too weak.");
    let (_, _, html) = page(
        &client,
        &url,
        Some(&[
            ("csrf_token", token.as_str()),
            ("email", "not an address"),
            ("full_name", "New Person"),
            ("password", STRONG),
        ]),
    )
    .await;
    assert_eq!(element(&html, "error"), "Enter a valid email address.");
    let (_, _, html) = page(
        &client,
        &url,
        Some(&[
            ("csrf_token", token.as_str()),
            ("email", "Othello@zulip.com"),
            ("full_name", "New Person"),
            ("password", STRONG),
        ]),
    )
    .await;
    assert_eq!(
        element(&html, "error"),
        "Othello@zulip.com already has an account"
    );
    // Nothing so far made an account.
    let events = app.events(CORDELIA, &queue).await;
    assert!(
        !events.iter().any(|e| e["type"] == "realm_user"),
        "{events:?}"
    );
    // Now a good one.
    let (status, headers, html) = page(
        &client,
        &url,
        Some(&[
            ("csrf_token", token.as_str()),
            ("email", "new@zulip.test"),
            ("full_name", "  New Person "),
            ("password", STRONG),
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert_eq!(element(&html, "email"), "new@zulip.test");
    // The new account is logged in: its session opens the web client.
    let session = headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .find(|v| v.starts_with("sessionid="))
        .expect("a session cookie")
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    assert!(html.contains("<a id=\"open\" href=\"/\">"), "{html}");
    let opened = client
        .get(format!("{}/", app.url))
        .header("Cookie", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), StatusCode::OK);
    assert!(opened.text().await.unwrap().contains("<div id=\"app\">"));
    let key = element(&html, "api_key");
    assert_eq!(key.len(), 32);
    let zuliprc = format!("[api]\nemail=new@zulip.test\nkey={key}\nsite={}\n", app.url);
    assert!(html.contains(&format!("<pre>{zuliprc}</pre>")), "{html}");
    assert!(
        html.contains("download=\"zuliprc\" href=\"data:text/plain;charset=utf-8,%5Bapi%5D"),
        "{html}"
    );
    // The key works, with the invited role, channels and group.
    let me = send(
        client
            .get(format!("{}/api/v1/users/me", app.url))
            .header("Authorization", basic("new@zulip.test", &key)),
    )
    .await;
    let me = assert_success(&me).clone();
    assert_eq!(me["role"], 300);
    assert_eq!(me["full_name"], "New Person");
    let new_id = me["user_id"].as_i64().unwrap();
    let subs = send(
        client
            .get(format!("{}/api/v1/users/me/subscriptions", app.url))
            .header("Authorization", basic("new@zulip.test", &key)),
    )
    .await;
    let mut subs = names(&assert_success(&subs)["subscriptions"]);
    subs.sort();
    assert_eq!(
        subs,
        vec!["Denmark", "Verona", "Zulip", "design", "devel", "sandbox", "social", "support"]
    );
    let members = app
        .ok(
            "GET",
            &format!("/api/v1/user_groups/{group}/members"),
            IAGO,
            &[],
        )
        .await;
    assert_eq!(members["members"], json!([new_id]));
    // Everyone learns of the new user (`realm_user` `add`); the link's creator and the
    // administrators that the invitations changed.
    let events = app.events(CORDELIA, &queue).await;
    let add = events
        .iter()
        .find(|e| e["type"] == "realm_user" && e["op"] == "add")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(add["person"]["user_id"], new_id);
    assert_eq!(add["person"]["full_name"], "New Person");
    assert_eq!(invite_events(&app, IAGO, &admin_queue).await, before + 1);
    // The link's creator hears from the Notification Bot (`notify_referrer_on_join`).
    let events = app.events(IAGO, &admin_queue).await;
    let dm = events
        .iter()
        .find(|e| e["type"] == "message")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(dm["message"]["sender_email"], "notification-bot@zulip.com");
    assert_eq!(dm["message"]["type"], "private");
    assert_eq!(dm["flags"], json!([]));
    assert_eq!(
        dm["message"]["content"],
        format!("@_**New Person|{new_id}** accepted your invitation to join Zulip!")
    );
    let id = dm["message"]["id"].as_i64().unwrap();
    let read = app
        .ok("GET", &format!("/api/v1/messages/{id}"), IAGO, &[])
        .await;
    let html = read["message"]["content"].as_str().unwrap();
    assert!(
        html.contains(&format!("data-user-id=\"{new_id}\">New Person</span>")),
        "{html}"
    );
    let with: Vec<i64> = dm["message"]["display_recipient"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        with,
        vec![IAGO_ID, dm["message"]["sender_id"].as_i64().unwrap()]
    );
    // A reusable link stays usable, for another address.
    let (status, html) = sign_up(
        &url,
        &[
            ("email", "second@zulip.test"),
            ("full_name", "Second"),
            ("password", STRONG),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
    // A revoked one does not.
    app.ok("DELETE", "/api/v1/invites/multiuse/1", IAGO, &[])
        .await;
    let (status, _, html) = page(&client, &url, None).await;
    assert_eq!(status, StatusCode::GONE);
    assert!(
        html.contains("This invitation link has expired or been revoked."),
        "{html}"
    );
    let (status, _, html) = page(
        &client,
        &url,
        Some(&[
            ("csrf_token", token.as_str()),
            ("email", "third@zulip.test"),
            ("full_name", "Third"),
            ("password", STRONG),
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::GONE);
    assert!(html.contains("expired or been revoked"), "{html}");
    let (status, _, html) = page(
        &client,
        &format!("{}/join/abcdefghijklmnopqrstuvwx/", app.url),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        html.contains("This invitation link is not valid."),
        "{html}"
    );
    let (status, _, _) = page(&client, &format!("{}/join/%3Cscript%3E/", app.url), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[actix_web::test]
async fn expired_links_and_deactivated_creators_lead_nowhere() {
    let clock = ManualClock::new(START_MS);
    let app = TestApp::spawn_with_clock(clock).await;
    let short = link(&app, IAGO, &[("invite_expires_in_minutes", "1")]).await;
    let forever = link(&app, IAGO, &[("invite_expires_in_minutes", "null")]).await;
    let client = client();
    assert_eq!(page(&client, &short, None).await.0, StatusCode::OK);
    app.clock().advance_ms(61 * 1000);
    let (status, _, html) = page(&client, &short, None).await;
    assert_eq!(status, StatusCode::GONE);
    assert!(html.contains("expired or been revoked"), "{html}");
    app.clock().advance_ms(365 * 24 * 3600 * 1000);
    assert_eq!(page(&client, &forever, None).await.0, StatusCode::OK);
    // A deactivated creator's invitations are dead (Zulip revokes them).
    let (status, body) = invite(&app, HAMLET, "x@zulip.test", &[]).await;
    assert_eq!(status, 200, "{body}");
    app.ok(
        "DELETE",
        &format!("/api/v1/users/{IAGO_ID}"),
        DESDEMONA,
        &[],
    )
    .await;
    assert_eq!(page(&client, &forever, None).await.0, StatusCode::GONE);
    // And no longer listed; hamlet's is.
    let listed = invites(&app, DESDEMONA).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["email"], "x@zulip.test");
}

#[actix_web::test]
async fn sign_up_attempts_are_rate_limited_per_link() {
    let dir = tempfile::tempdir().unwrap();
    let app =
        TestApp::spawn_configured(dir, |c| c.rate_limit = Some(hearth::config::Switch::On)).await;
    let url = link(&app, IAGO, &[]).await;
    let client = client();
    let (_, _, html) = page(&client, &url, None).await;
    let token = csrf(&html);
    for _ in 0..5 {
        let (status, _, _) = page(
            &client,
            &url,
            Some(&[
                ("csrf_token", token.as_str()),
                ("email", "r@zulip.test"),
                ("full_name", "R"),
                ("password", "weak"),
            ]),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
    }
    let (status, headers, html) = page(
        &client,
        &url,
        Some(&[
            ("csrf_token", token.as_str()),
            ("email", "r@zulip.test"),
            ("full_name", "R"),
            ("password", STRONG),
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{html}");
    assert!(headers.contains_key("retry-after"));
    assert!(html.contains("Too many attempts."), "{html}");
    // Another link has attempts of its own.
    let other = link(&app, IAGO, &[]).await;
    let (status, html) = sign_up(
        &other,
        &[
            ("email", "r@zulip.test"),
            ("full_name", "R"),
            ("password", STRONG),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
}

// ---- persistence ----------------------------------------------------------------------

#[actix_web::test]
async fn invitations_survive_a_restart() {
    let mut app = TestApp::spawn().await;
    let (status, _) = invite(&app, HAMLET, "keep@zulip.test", &[]).await;
    assert_eq!(status, 200);
    let (status, _) = invite(&app, HAMLET, "drop@zulip.test", &[]).await;
    assert_eq!(status, 200);
    app.ok("DELETE", "/api/v1/invites/2", HAMLET, &[]).await;
    let url = link(&app, IAGO, &[]).await;
    let before = invites(&app, IAGO).await;
    app.restart().await;
    let after = invites(&app, IAGO).await;
    // The link's URL names the new port: compare the rest.
    let strip = |v: Vec<Value>| -> Vec<Value> {
        v.into_iter()
            .map(|mut i| {
                if let Some(l) = i.get("link_url").and_then(Value::as_str).map(join_path) {
                    i["link_url"] = l.into();
                }
                i
            })
            .collect()
    };
    assert_eq!(strip(after), strip(before));
    let path = join_path(&url);
    let (status, html) = sign_up(
        &format!("{}{path}", app.url),
        &[
            ("email", "later@zulip.test"),
            ("full_name", "Later"),
            ("password", STRONG),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
    // New ids continue after the stored ones.
    let (status, _) = invite(&app, HAMLET, "third@zulip.test", &[]).await;
    assert_eq!(status, 200);
    let ids: Vec<i64> = invites(&app, HAMLET)
        .await
        .iter()
        .map(|i| i["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![1, 3]);
}

#[actix_web::test]
async fn acknowledged_invitations_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let args = ["--dev", "--data", data, "--durability", "always"];
    let server = ChildServer::up(&args, &[]);
    let client = client();
    let key = dev_key_at(&server.url, IAGO).await;
    let auth = basic(IAGO, &key);
    let (status, _, body) = send(
        client
            .post(format!("{}/api/v1/invites", server.url))
            .header("Authorization", &auth)
            .form(&[
                ("invitee_emails", "k9@zulip.test"),
                ("stream_ids", "[]"),
                ("invite_as", "600"),
            ]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _, body) = send(
        client
            .post(format!("{}/api/v1/invites/multiuse", server.url))
            .header("Authorization", &auth),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let path = join_path(body["invite_link"].as_str().unwrap());
    let (status, html) = sign_up(
        &format!("{}{path}", server.url),
        &[
            ("email", "k9new@zulip.test"),
            ("full_name", "K Nine"),
            ("password", STRONG),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
    let (status, _, body) = send(
        client
            .delete(format!("{}/api/v1/invites/multiuse/1", server.url))
            .header("Authorization", &auth),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    server.kill_9();
    let server = ChildServer::up(&args, &[]);
    let key = dev_key_at(&server.url, IAGO).await;
    let (status, _, body) = send(
        client
            .get(format!("{}/api/v1/invites", server.url))
            .header("Authorization", basic(IAGO, &key)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let listed = body["invites"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{body}");
    assert_eq!(listed[0]["email"], "k9@zulip.test");
    assert_eq!(listed[0]["invited_as"], 600);
    // The account made through the link is there, and the revoked link is dead.
    let (status, _, _) = send(
        client
            .get(format!("{}/api/v1/users/k9new@zulip.test", server.url))
            .header("Authorization", basic(IAGO, &key)),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = page(&client, &format!("{}{path}", server.url), None).await;
    assert_eq!(status, StatusCode::GONE);
    server.stop();
}

// ---- email -------------------------------------------------------------------------------

/// The `/join/` link in an email (quoted-printable soft breaks undone).
fn link_in(mail: &str) -> String {
    let mail = mail
        .replace("=\r\n", "")
        .replace("=\n", "")
        .replace("=3D", "=");
    let at = mail
        .find("/join/")
        .and_then(|j| mail[..j].rfind("http://"))
        .unwrap_or_else(|| panic!("no link in {mail}"));
    let rest = &mail[at..];
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let link = rest[..end].to_owned();
    join_path(&link);
    link
}

#[actix_web::test]
async fn email_invitations_go_out_through_smtp_and_their_link_signs_up_once() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let url = smtp.url();
    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::spawn_configured(dir, move |c| {
        c.smtp_url = Some(url.clone());
        c.smtp_from = Some("Zulip <noreply@zulip.test>".into());
    })
    .await;
    let hamlet_queue = app
        .register(HAMLET, &[("event_types", "[\"message\"]")])
        .await;
    let (status, body) = invite(
        &app,
        HAMLET,
        "Pat <pat@zulip.test>, sam@zulip.test",
        &[("invite_as", "600"), ("notify_referrer_on_join", "false")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let mails = smtp.wait_for(2).await;
    let pat = mails
        .iter()
        .find(|m| m.contains("To: pat@zulip.test"))
        .expect("pat's email");
    assert!(pat.contains("From: Zulip <noreply@zulip.test>"), "{pat}");
    assert!(
        pat.contains("Subject: King Hamlet invited you to join"),
        "{pat}"
    );
    let pat_link = link_in(pat);
    // The invitation's link: pat's address, fixed.
    let client = client();
    let (status, _, html) = page(&client, &pat_link, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(element(&html, "email"), "pat@zulip.test");
    // A resend sends the same link again.
    app.ok("POST", "/api/v1/invites/1/resend", HAMLET, &[])
        .await;
    let mails = smtp.wait_for(3).await;
    assert_eq!(
        mails
            .iter()
            .filter(|m| m.contains("To: pat@zulip.test"))
            .count(),
        2
    );
    let (status, html) = sign_up(
        &pat_link,
        &[
            ("full_name", "Pat"),
            ("password", STRONG),
            ("email", "other@zulip.test"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
    // The address is the invitation's, whatever the form said; the role a guest.
    assert_eq!(element(&html, "email"), "pat@zulip.test");
    let user = app
        .ok("GET", "/api/v1/users/pat@zulip.test", IAGO, &[])
        .await;
    assert_eq!(user["user"]["role"], 600);
    // hamlet asked not to be told.
    assert_eq!(app.events(HAMLET, &hamlet_queue).await, Vec::<Value>::new());
    // Used: the link is refused, and the invitation is gone from the list.
    let (status, _, html) = page(&client, &pat_link, None).await;
    assert_eq!(status, StatusCode::GONE);
    assert!(
        html.contains("This invitation link has already been used."),
        "{html}"
    );
    let listed: Vec<Value> = invites(&app, HAMLET).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["email"], "sam@zulip.test");
}

#[test]
fn a_production_server_without_smtp_refuses_email_invitations_but_makes_links() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let zuliprc = dir.path().join("zuliprc");
    let out = hearth()
        .args(["realm", "create", "--subdomain", "", "--name", "Acme"])
        .args([
            "--owner-email",
            "boss@acme.test",
            "--owner-password",
            STRONG,
        ])
        .arg("--data")
        .arg(&data)
        .args(["--url", "https://chat.acme.test", "--zuliprc"])
        .arg(&zuliprc)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let key = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let server = ChildServer::up(&["--data", data.to_str().unwrap()], &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = client();
        let auth = basic("boss@acme.test", &key);
        let (status, _, body) = send(
            client
                .post(format!("{}/api/v1/invites", server.url))
                .header("Authorization", &auth)
                .form(&[("invitee_emails", "new@acme.test"), ("stream_ids", "[]")]),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            body["msg"],
            "Outgoing email not yet configured, see \
             https://zulip.readthedocs.io/en/latest/production/email.html"
        );
        let (status, _, body) = send(
            client
                .post(format!("{}/api/v1/invites/multiuse", server.url))
                .header("Authorization", &auth),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let link = body["invite_link"].as_str().unwrap();
        assert!(link.starts_with("https://chat.acme.test/join/"), "{link}");
        let (status, _, body) = send(
            client
                .get(format!("{}/api/v1/invites", server.url))
                .header("Authorization", &auth),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["invites"].as_array().unwrap().len(), 1, "{body}");
    });
    server.stop();
}

// ---- system bot addresses ------------------------------------------------------------------

#[actix_web::test]
async fn system_bot_addresses_are_reserved_everywhere() {
    let app = TestApp::spawn().await;
    let url = link(&app, IAGO, &[]).await;
    // Every one of Zulip's system bots, not only the two hearth runs.
    for bot in [
        "welcome-bot@zulip.com",
        "Reminder-Bot@zulip.com",
        "emailgateway@zulip.com",
    ] {
        let (status, html) = sign_up(
            &url,
            &[
                ("email", bot),
                ("full_name", "Not A Bot"),
                ("password", STRONG),
            ],
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{html}");
        assert_eq!(
            element(&html, "error"),
            format!("{bot} is reserved for system bots")
        );
    }
    let (status, body) = invite(
        &app,
        HAMLET,
        "welcome-bot@zulip.com, nagios-send-bot@zulip.com",
        &[],
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["msg"], "We weren't able to invite anyone.");
    assert_eq!(
        body["errors"],
        json!([
            ["welcome-bot@zulip.com", "Reserved for system bots.", false],
            [
                "nagios-send-bot@zulip.com",
                "Reserved for system bots.",
                false
            ]
        ])
    );
    app.bad(
        "POST",
        "/api/v1/users",
        IAGO,
        &[
            ("email", "welcome-bot@zulip.com"),
            ("password", STRONG),
            ("full_name", "Not A Bot"),
        ],
        "welcome-bot@zulip.com is reserved for system bots",
    )
    .await;
    // No account took any of them; the Welcome Bot is still itself.
    let (status, body) = app
        .call("GET", "/api/v1/users/welcome-bot@zulip.com", IAGO, &[])
        .await;
    assert!(
        status != 200 || body["user"]["is_bot"] == true,
        "{status} {body}"
    );
    let listed = invites(&app, IAGO).await;
    assert!(
        listed.iter().all(|i| i["is_multiuse"] == true),
        "{listed:?}"
    );
}

#[test]
fn realm_create_refuses_a_system_bot_address() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = hearth()
        .args(["realm", "create", "--subdomain", "", "--name", "Acme"])
        .args([
            "--owner-email",
            "welcome-bot@zulip.com",
            "--owner-password",
            STRONG,
        ])
        .arg("--data")
        .arg(&data)
        .args(["--url", "https://chat.acme.test"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("welcome-bot@zulip.com is reserved for system bots"),
        "{stderr}"
    );
    assert!(!data.exists(), "a refused command leaves no data folder");
}

// ---- a demoted creator -----------------------------------------------------------------------

#[actix_web::test]
async fn a_demoted_creator_s_link_no_longer_grants_its_role() {
    let app = TestApp::spawn().await;
    let admins = link(&app, IAGO, &[("invite_as", "200")]).await;
    let client = client();
    assert_eq!(page(&client, &admins, None).await.0, StatusCode::OK);
    let (_, _, html) = page(&client, &admins, None).await;
    let token = csrf(&html);
    let demote = |role: &'static str| {
        let app = &app;
        async move {
            app.ok(
                "PATCH",
                &format!("/api/v1/users/{IAGO_ID}"),
                DESDEMONA,
                &[("role", role)],
            )
            .await;
        }
    };
    demote("400").await;
    let cannot = "The person who sent this invitation can no longer invite users with this role.";
    let (status, _, html) = page(&client, &admins, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{html}");
    assert!(html.contains(cannot), "{html}");
    // A form fetched before the demotion is refused too, and makes no account.
    let (status, _, html) = page(
        &client,
        &admins,
        Some(&[
            ("csrf_token", token.as_str()),
            ("email", "climber@zulip.test"),
            ("full_name", "Climber"),
            ("password", STRONG),
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{html}");
    assert!(html.contains(cannot), "{html}");
    let (status, _) = app
        .call("GET", "/api/v1/users/climber@zulip.test", DESDEMONA, &[])
        .await;
    assert_ne!(status, 200);
    // The check is of the creator's role now: promoted again, the link works again.
    demote("200").await;
    let (status, html) = sign_up(
        &admins,
        &[
            ("email", "climber@zulip.test"),
            ("full_name", "Climber"),
            ("password", STRONG),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
    let user = app
        .ok("GET", "/api/v1/users/climber@zulip.test", DESDEMONA, &[])
        .await;
    assert_eq!(user["user"]["role"], 200);
}

// ---- form tokens and the attempt counter --------------------------------------------------

#[actix_web::test]
async fn posts_without_the_form_token_do_not_lock_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let app =
        TestApp::spawn_configured(dir, |c| c.rate_limit = Some(hearth::config::Switch::On)).await;
    let url = link(&app, IAGO, &[]).await;
    let client = client();
    for _ in 0..6 {
        let (status, _, html) = page(
            &client,
            &url,
            Some(&[
                ("csrf_token", "bogus"),
                ("email", "victim@zulip.test"),
                ("full_name", "Victim"),
                ("password", STRONG),
            ]),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{html}");
        assert!(html.contains("This form has expired"), "{html}");
    }
    let (status, html) = sign_up(
        &url,
        &[
            ("email", "victim@zulip.test"),
            ("full_name", "Victim"),
            ("password", STRONG),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
}

// ---- how many invitations ------------------------------------------------------------------

/// `n` addresses `prefix-<i>@zulip.test`, comma-separated.
fn addresses(prefix: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("{prefix}-{i}@zulip.test"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Asserts Zulip's `check_invite_limit` refusal.
fn assert_daily_limit(status: u16, body: &Value) {
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "INVITATION_FAILED");
    assert_eq!(
        body["msg"],
        "To protect users, Zulip limits the number of invitations you can send in one day. \
         Because you have reached the limit, no invitations were sent."
    );
    assert_eq!(body["daily_limit_reached"], true);
    assert_eq!(body["sent_invitations"], false);
    assert_eq!(body["errors"], json!([]));
}

#[actix_web::test]
async fn invitations_are_limited_per_day_and_survive_a_restart() {
    let clock = ManualClock::new(START_MS);
    let mut app = TestApp::spawn_configured_with_clock(clock, |_| {}).await;
    // One request of 2,000 addresses (Zulip's `max_invites` is 100): refused whole.
    let (status, body) = invite(&app, HAMLET, &addresses("many", 2000), &[]).await;
    assert_daily_limit(status, &body);
    let (status, body) = invite(&app, HAMLET, &addresses("over", 101), &[]).await;
    assert_daily_limit(status, &body);
    assert!(invites(&app, IAGO).await.is_empty());
    // 100 in a day, in any number of requests, by anyone.
    let (status, body) = invite(&app, HAMLET, &addresses("a", 60), &[]).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = invite(&app, IAGO, &addresses("b", 40), &[]).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = invite(&app, IAGO, "one-more@zulip.test", &[]).await;
    assert_daily_limit(status, &body);
    // A resend is one more email (`do_send_user_invite_email` checks for one).
    let (status, body) = app
        .call("POST", "/api/v1/invites/1/resend", IAGO, &[])
        .await;
    assert_daily_limit(status, &body);
    // The count is the stored invitations': a restart does not reset it.
    app.restart().await;
    let (status, body) = invite(&app, IAGO, "one-more@zulip.test", &[]).await;
    assert_daily_limit(status, &body);
    assert_eq!(invites(&app, IAGO).await.len(), 100);
    // A day later there is room again.
    app.clock().advance_ms(24 * 3600 * 1000 + 1000);
    let (status, body) = invite(&app, IAGO, "one-more@zulip.test", &[]).await;
    assert_eq!(status, 200, "{body}");
}

// ---- an address with its own invitation ----------------------------------------------------

#[actix_web::test]
async fn a_reusable_link_does_not_take_an_invited_address() {
    let mut app = TestApp::spawn().await;
    let (status, body) = invite(&app, IAGO, "alice@corp.test", &[("invite_as", "200")]).await;
    assert_eq!(status, 200, "{body}");
    let url = link(&app, IAGO, &[]).await;
    let (status, html) = sign_up(
        &url,
        &[
            ("email", "Alice@corp.test"),
            ("full_name", "Not Alice"),
            ("password", STRONG),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{html}");
    assert_eq!(
        element(&html, "error"),
        "This address has an invitation of its own: sign up through the link in the email \
         sent to it."
    );
    // Nothing changed: no account, and Alice's invitation is still open.
    let (status, _) = app
        .call("GET", "/api/v1/users/alice@corp.test", IAGO, &[])
        .await;
    assert_ne!(status, 200);
    let listed = invites(&app, IAGO).await;
    assert!(
        listed.iter().any(|i| i["email"] == "alice@corp.test"),
        "{listed:?}"
    );
    // Still so after a restart (the index of addresses is rebuilt).
    app.restart().await;
    let path = join_path(&url);
    let url = format!("{}{path}", app.url);
    let (status, html) = sign_up(
        &url,
        &[
            ("email", "alice@corp.test"),
            ("full_name", "Not Alice"),
            ("password", STRONG),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{html}");
    // Once the invitation is revoked the address is free for the link.
    app.ok("DELETE", "/api/v1/invites/1", IAGO, &[]).await;
    let (status, html) = sign_up(
        &url,
        &[
            ("email", "alice@corp.test"),
            ("full_name", "Alice"),
            ("password", STRONG),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
    let user = app
        .ok("GET", "/api/v1/users/alice@corp.test", IAGO, &[])
        .await;
    assert_eq!(user["user"]["role"], 400);
}

#[actix_web::test]
async fn with_email_a_reusable_link_confirms_the_address_first() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let url = smtp.url();
    let dir = tempfile::tempdir().unwrap();
    let mut app = TestApp::spawn_configured(dir, move |c| {
        c.smtp_url = Some(url.clone());
        c.smtp_from = Some("Zulip <noreply@zulip.test>".into());
    })
    .await;
    let (status, body) = invite(&app, IAGO, "alice@corp.test", &[("invite_as", "200")]).await;
    assert_eq!(status, 200, "{body}");
    smtp.wait_for(1).await;
    let members = link(&app, IAGO, &[]).await;
    let admin_queue = app.register(IAGO, &[]).await;
    // The link's page asks for the address only.
    let client = client();
    let (status, _, html) = page(&client, &members, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!html.contains("name=\"password\""), "{html}");
    let token = csrf(&html);
    let (status, _, html) = page(
        &client,
        &members,
        Some(&[
            ("csrf_token", token.as_str()),
            ("email", "alice@corp.test"),
            ("full_name", "Not Alice"),
            ("password", STRONG),
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(html.contains("Check your email"), "{html}");
    assert_eq!(element(&html, "email"), "alice@corp.test");
    // No account yet, and Alice's own invitation is still open.
    let (status, _) = app
        .call("GET", "/api/v1/users/alice@corp.test", IAGO, &[])
        .await;
    assert_ne!(status, 200);
    assert!(invites(&app, IAGO)
        .await
        .iter()
        .any(|i| i["email"] == "alice@corp.test"));
    // A confirmation is no invitation: not listed, no `invites_changed`.
    assert_eq!(invites(&app, IAGO).await.len(), 2);
    assert_eq!(invite_events(&app, IAGO, &admin_queue).await, 0);
    let mails = smtp.wait_for(2).await;
    let mail = mails
        .iter()
        .find(|m| m.contains("Subject: Activate your Zulip account"))
        .expect("the confirmation");
    assert!(mail.contains("To: alice@corp.test"), "{mail}");
    let confirm_path = join_path(&link_in(mail));
    // One confirmation an hour per address: a second sign-up sends nothing.
    let (_, _, html) = page(&client, &members, None).await;
    let again = csrf(&html);
    let (status, _, html) = page(
        &client,
        &members,
        Some(&[("csrf_token", again.as_str()), ("email", "ALICE@corp.test")]),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{html}");
    assert!(html.contains("less than an hour ago"), "{html}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(smtp.messages().len(), 2, "no second confirmation");
    // The confirmation is realm state: it outlives a restart.
    app.restart().await;
    let confirm = format!("{}{confirm_path}", app.url);
    let (status, _, html) = page(&client, &confirm, None).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert_eq!(element(&html, "email"), "alice@corp.test");
    let (status, html) = sign_up(&confirm, &[("full_name", "Alice"), ("password", STRONG)]).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert_eq!(element(&html, "email"), "alice@corp.test");
    // The link's role; the address's own invitation is spent with it.
    let user = app
        .ok("GET", "/api/v1/users/alice@corp.test", IAGO, &[])
        .await;
    assert_eq!(user["user"]["role"], 400);
    assert!(!invites(&app, IAGO)
        .await
        .iter()
        .any(|i| i["email"] == "alice@corp.test"));
    let (status, _, html) = page(&client, &confirm, None).await;
    assert_eq!(status, StatusCode::GONE);
    assert!(html.contains("already been used"), "{html}");
}

#[test]
fn a_confirmation_survives_kill_9() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let smtp_url = smtp.url();
    let args = [
        "--dev",
        "--data",
        data,
        "--durability",
        "always",
        "--smtp-url",
        smtp_url.as_str(),
    ];
    let server = ChildServer::up(&args, &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let confirm_path = rt.block_on(async {
        let client = client();
        let key = dev_key_at(&server.url, IAGO).await;
        let (status, _, body) = send(
            client
                .post(format!("{}/api/v1/invites/multiuse", server.url))
                .header("Authorization", basic(IAGO, &key)),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let link = format!(
            "{}{}",
            server.url,
            join_path(body["invite_link"].as_str().unwrap())
        );
        let (status, _, html) = page(&client, &link, None).await;
        assert_eq!(status, StatusCode::OK, "{html}");
        let token = csrf(&html);
        let (status, _, html) = page(
            &client,
            &link,
            Some(&[("csrf_token", token.as_str()), ("email", "k9c@zulip.test")]),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{html}");
        let mails = smtp.wait_for(1).await;
        join_path(&link_in(&mails[0]))
    });
    server.kill_9();
    let server = ChildServer::up(&args, &[]);
    rt.block_on(async {
        let (status, html) = sign_up(
            &format!("{}{confirm_path}", server.url),
            &[("full_name", "K Nine C"), ("password", STRONG)],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{html}");
        assert_eq!(element(&html, "email"), "k9c@zulip.test");
    });
    server.stop();
}

#[actix_web::test]
async fn a_demoted_creator_s_email_invitation_no_longer_grants_its_role() {
    let Some(smtp) = Receiver::start() else {
        return;
    };
    let url = smtp.url();
    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::spawn_configured(dir, move |c| {
        c.smtp_url = Some(url.clone());
    })
    .await;
    let (status, body) = invite(&app, IAGO, "boss@corp.test", &[("invite_as", "200")]).await;
    assert_eq!(status, 200, "{body}");
    let mails = smtp.wait_for(1).await;
    let invitation = link_in(&mails[0]);
    let client = client();
    assert_eq!(page(&client, &invitation, None).await.0, StatusCode::OK);
    app.ok(
        "PATCH",
        &format!("/api/v1/users/{IAGO_ID}"),
        DESDEMONA,
        &[("role", "400")],
    )
    .await;
    let (status, _, html) = page(&client, &invitation, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{html}");
    assert!(
        html.contains("can no longer invite users with this role"),
        "{html}"
    );
    let (status, _) = app
        .call("GET", "/api/v1/users/boss@corp.test", DESDEMONA, &[])
        .await;
    assert_ne!(status, 200);
}

/// A link cut before its last slash (as pasted) is sent on to its page, and the
/// request log names the route, never the key.
#[actix_web::test]
async fn a_link_without_its_last_slash_goes_to_its_page() {
    let app = TestApp::spawn().await;
    let link = link(&app, IAGO, &[]).await;
    let path = join_path(&link);
    let cut = path.trim_end_matches('/');
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let (status, headers, _) = page(&no_redirects, &format!("{}{cut}?x=1", app.url), None).await;
    assert_eq!(status, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(headers["location"], format!("{path}?x=1"));
    // Followed, it is the page.
    let (status, _, html) = page(&client(), &format!("{}{cut}", app.url), None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("csrf_token"), "{html}");
}
