//! Password reset pages (`/accounts/password/reset/`), as Zulip's web app has them:
//! server-rendered forms, no script, CSRF-protected like the login page.
//!
//! 1. `GET /accounts/password/reset/`: a form asking for the account's email.
//! 2. `POST` of it: an email goes to the address, whatever it is, so the answer never
//!    tells whether an account uses it (Zulip writes to an address without an account
//!    too, saying so). An active account's email holds a link
//!    (`realm::password_reset`); then the browser goes to the `done/` page. At most two
//!    emails an hour and five a day for one address, and the per-address limit of
//!    unauthenticated calls (`limits`). The email is handed to the SMTP server before
//!    the answer: a page that says it was sent is never followed by a lost email.
//! 3. `GET /accounts/password/reset/{user_id}/{token}/`: the new-password form, for a
//!    link that works.
//! 4. `POST` of it: the password (as strong as a sign-up's, typed twice) is set by a
//!    system write that ends the user's browser sessions, and the page offers the
//!    login. The form carries the link, so a used or expired one fails here too.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use super::origin;
use super::session::{
    csrf_failure, csrf_page, message_page, no_realm, realm_of, redirect, respond, secure, token_of,
    too_many,
};
use crate::limits::RateKey;
use crate::mail::Email;
use crate::realm::messages::content::escape;
use crate::realm::password_reset::{ResetLink, ResetPassword, LINK_INVALID};
use crate::realm::users::{email_is_valid, password_is_strong, MAX_EMAIL_LENGTH};
use crate::realm::Realm;
use crate::registry::RealmHandle;

/// The data folder's file holding the key that signs reset links.
const KEY_FILE: &str = "password-reset.key";
/// The field of the forms' CSRF token (Django's name, as the login form's).
const CSRF_FIELD: &str = "csrfmiddlewaretoken";
const TITLE: &str = "Reset your password";
const WEAK: &str = "The password is too weak: use a longer one, or more varied words.";
const MISMATCH: &str = "The two passwords do not match.";
const BAD_ADDRESS: &str = "Enter a valid email address.";

/// The form asking for the address.
#[derive(Debug, Default, Deserialize)]
pub struct RequestForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    csrfmiddlewaretoken: String,
}

/// The form setting the new password.
#[derive(Debug, Default, Deserialize)]
pub struct SetForm {
    #[serde(default)]
    new_password1: String,
    #[serde(default)]
    new_password2: String,
    #[serde(default)]
    csrfmiddlewaretoken: String,
}

/// The reset key of the data folder `handle`'s realm lives in.
fn key(handle: &RealmHandle) -> Option<[u8; 32]> {
    handle
        .client
        .server_key(KEY_FILE)
        .map_err(|e| tracing::error!("the password reset key: {e}"))
        .ok()
}

fn unavailable(why: &str) -> HttpResponse {
    message_page(StatusCode::SERVICE_UNAVAILABLE, TITLE, why)
}

/// The address form, with an error above it.
fn request_page(req: &HttpRequest, handle: &RealmHandle, error: Option<&str>) -> HttpResponse {
    let token = token_of(req);
    let mut body = format!("<h1>{TITLE}</h1>\n");
    if let Some(e) = error {
        body.push_str(&format!(
            "<p class=\"error\" id=\"error\" role=\"alert\">{}</p>\n",
            escape(e)
        ));
    }
    body.push_str(&format!(
        "<p>Enter the email address of your account, and we will send it a link to set a \
         new password.</p>\n\
         <form id=\"password_reset\" method=\"post\" action=\"/accounts/password/reset/\">\n\
         <input type=\"hidden\" name=\"{CSRF_FIELD}\" value=\"{}\">\n\
         <label for=\"id_email\">Email</label>\
         <input type=\"email\" name=\"email\" id=\"id_email\" maxlength=\"254\" required \
         autocomplete=\"username\" autofocus>\n\
         <button type=\"submit\">Send the link</button>\n</form>\n\
         <p><a href=\"/login/\">Back to the login</a></p>\n",
        escape(&token.value)
    ));
    let status = if error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    respond(status, TITLE, &body, &token, secure(handle))
}

/// # `GET /accounts/password/reset/`
pub async fn show_request(req: HttpRequest) -> HttpResponse {
    let Some((handle, _)) = realm_of(&req) else {
        return no_realm();
    };
    request_page(&req, &handle, None)
}

/// # `POST /accounts/password/reset/`
pub async fn submit_request(req: HttpRequest, form: web::Form<RequestForm>) -> HttpResponse {
    let form = form.into_inner();
    let Some((handle, state)) = realm_of(&req) else {
        return no_realm();
    };
    if let Some(reason) = csrf_failure(&req, Some(&form.csrfmiddlewaretoken)) {
        return csrf_page(&reason);
    }
    let now = std::time::Instant::now();
    if state.rate_limits.enabled() {
        let ip = origin::client_ip(&req, &state.trusted_proxies);
        let decision = state.rate_limits.check(RateKey::Ip(ip), now);
        if !decision.allowed {
            return too_many(decision.retry_after);
        }
    }
    let address = form.email.trim().to_owned();
    if address.len() > MAX_EMAIL_LENGTH || !email_is_valid(&address) {
        return request_page(&req, &handle, Some(BAD_ADDRESS));
    }
    let Some(mailer) = state.mailer.as_ref() else {
        return unavailable(
            "This server sends no email, so it cannot send a reset link. Ask an \
             administrator of your organization for help.",
        );
    };
    if let Err(retry_after) = state
        .rate_limits
        .password_reset(&handle.server_url, &address, now)
    {
        return too_many(retry_after);
    }
    let Some(key) = key(&handle) else {
        return unavailable("Password reset is not available right now. Try again later.");
    };
    let email = {
        let version = handle.hub.current();
        let site = version
            .url(&handle.server_url)
            .trim_end_matches('/')
            .to_owned();
        let now_secs = handle.clock.now_ms().div_euclid(1000);
        let user = version.user_by_delivery_email(&address);
        let link = user
            .filter(|u| u.is_active && !u.is_bot())
            .map(|u| version.reset_link(&key, u, now_secs));
        // An account's email goes to its address as the account has it.
        let to = user.map_or(address.as_str(), |u| u.delivery_email.as_str());
        let email = reset_email(&version, &site, to, link, user.is_some());
        (site, email)
    };
    let (site, email) = email;
    // One try, before the answer: the page says the email left.
    if let Err(why) = mailer.mailer().send(&site, &email).await {
        tracing::error!("password reset email not sent: {why}");
        return unavailable("The email could not be sent. Try again in a few minutes.");
    }
    redirect("/accounts/password/reset/done/").finish()
}

/// The email to `address`: a link for an active account, else word that none here
/// can use one.
fn reset_email(
    realm: &Realm,
    site: &str,
    address: &str,
    link: Option<ResetLink>,
    known: bool,
) -> Email {
    let name = &realm.settings.name;
    let body = match link {
        Some(link) => format!(
            "Someone (probably you) asked to reset the password of your account at {name} \
             ({site}).\n\nTo set a new password, open this link within three days:\n\n\
             {site}{}\n\nIf you did not ask for this, ignore this email: your password \
             stays as it is.\n",
            link.path()
        ),
        None if known => format!(
            "Someone asked to reset the password of the account {address} at {name} \
             ({site}), but that account is deactivated, so its password cannot be reset. \
             An administrator of the organization can reactivate it.\n"
        ),
        None => format!(
            "Someone asked to reset the password of the account {address} at {name} \
             ({site}), but no account there uses this address.\n\nIf you did not ask for \
             this, ignore this email.\n"
        ),
    };
    Email {
        to: address.to_owned(),
        subject: format!("Reset your password for {name}"),
        body,
        ..Email::default()
    }
}

/// # `GET /accounts/password/reset/done/`
pub async fn show_sent(req: HttpRequest) -> HttpResponse {
    if realm_of(&req).is_none() {
        return no_realm();
    }
    message_page(
        StatusCode::OK,
        "Check your email",
        "An email is on its way to the address you gave, saying what to do next.",
    )
}

/// The account a link's path names, when the link works now, with the key.
fn linked(
    handle: &RealmHandle,
    path: &(String, String),
) -> Option<(ResetLink, u64, Option<String>)> {
    let link = ResetLink::parse(&path.0, &path.1)?;
    let key = key(handle)?;
    let version = handle.hub.current();
    let now = handle.clock.now_ms().div_euclid(1000);
    let user = version.reset_link_user(&key, &link, now)?;
    Some((link.clone(), user.id, user.password_hash.clone()))
}

/// The new-password form of a working link.
fn set_page(
    req: &HttpRequest,
    handle: &RealmHandle,
    link: &ResetLink,
    error: Option<&str>,
) -> HttpResponse {
    let token = token_of(req);
    let mut body = String::from("<h1>Set a new password</h1>\n");
    if let Some(e) = error {
        body.push_str(&format!(
            "<p class=\"error\" id=\"error\" role=\"alert\">{}</p>\n",
            escape(e)
        ));
    }
    body.push_str(&format!(
        "<form id=\"set_password\" method=\"post\" action=\"{}\">\n\
         <input type=\"hidden\" name=\"{CSRF_FIELD}\" value=\"{}\">\n\
         <label for=\"id_new_password1\">New password</label>\
         <input type=\"password\" name=\"new_password1\" id=\"id_new_password1\" required \
         autocomplete=\"new-password\" autofocus>\n\
         <label for=\"id_new_password2\">The new password again</label>\
         <input type=\"password\" name=\"new_password2\" id=\"id_new_password2\" required \
         autocomplete=\"new-password\">\n\
         <button type=\"submit\">Set the password</button>\n</form>\n",
        escape(&link.path()),
        escape(&token.value)
    ));
    let status = if error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    respond(status, "Set a new password", &body, &token, secure(handle))
}

fn link_invalid() -> HttpResponse {
    message_page(StatusCode::NOT_FOUND, TITLE, LINK_INVALID)
}

/// # `GET /accounts/password/reset/{user_id}/{token}/`
pub async fn show_set(req: HttpRequest, path: web::Path<(String, String)>) -> HttpResponse {
    let Some((handle, _)) = realm_of(&req) else {
        return no_realm();
    };
    match linked(&handle, &path) {
        Some((link, _, _)) => set_page(&req, &handle, &link, None),
        None => link_invalid(),
    }
}

/// # `POST /accounts/password/reset/{user_id}/{token}/`
pub async fn submit_set(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    form: web::Form<SetForm>,
) -> HttpResponse {
    let form = form.into_inner();
    let Some((handle, _)) = realm_of(&req) else {
        return no_realm();
    };
    if let Some(reason) = csrf_failure(&req, Some(&form.csrfmiddlewaretoken)) {
        return csrf_page(&reason);
    }
    let Some((link, user_id, expected_hash)) = linked(&handle, &path) else {
        return link_invalid();
    };
    if form.new_password1 != form.new_password2 {
        return set_page(&req, &handle, &link, Some(MISMATCH));
    }
    if !password_is_strong(&form.new_password1) {
        return set_page(&req, &handle, &link, Some(WEAK));
    }
    let new_hash = match crate::passwords::hash(form.new_password1).await {
        Ok(h) => h,
        Err(e) if e.status == 429 => return too_many(1.0),
        Err(_) => return unavailable("Something went wrong. Try again."),
    };
    let q = ResetPassword {
        user_id,
        expected_hash,
        new_hash,
    };
    match handle
        .client
        .commit_system(q, Realm::decide_reset_password)
        .await
    {
        Ok(()) => message_page(
            StatusCode::OK,
            "Password reset",
            "Your password is set. Log in with it.",
        ),
        Err(e) if e.status == 400 => link_invalid(),
        Err(e) => message_page(
            StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            TITLE,
            &e.msg,
        ),
    }
}
