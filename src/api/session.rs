//! The web client's sessions: the login pages, logout, and `/json/<path>`, which is
//! `/api/v1/<path>` with the session cookie as the credential.
//!
//! Two cookies, as Django names them on Zulip's development server:
//! - `sessionid`: a random secret (32 bytes, base64url); the realm keeps only its
//!   SHA-256 digest (`realm::sessions`). `HttpOnly`, `SameSite=Lax`, `Path=/`, two
//!   weeks, `Secure` when the realm's URL is https. Host-only (no `Domain`), and
//!   looked up in the realm of the request's Host only: a session of one realm is
//!   nothing on another's host.
//! - `csrftoken`: a random token the page's script reads and sends back as the
//!   `X-CSRFToken` header on every `/json` write (Zulip's rule, double-submit), and the
//!   server-rendered forms as `csrfmiddlewaretoken`. A login replaces it.
//!
//! What guards the pages and `/json`:
//! - every state-changing request (a non-GET `/json` call, the login, logout and
//!   development-login forms) must carry the `csrftoken` cookie's value, compared in
//!   constant time, and, when the browser sends an `Origin`, come from this host;
//!   else 403 `CSRF_FAILED` with Django's reason (`/json`) or a page saying so;
//! - a login starts a new session (the one the browser had is ended: no fixation)
//!   and is rate limited as `POST /fetch_api_key` is (per client address, and five
//!   attempts per username in 30 minutes), with one answer for a wrong email and a
//!   wrong password, costing the same time;
//! - logout, a password change and a deactivation end sessions through the realm's
//!   log, as durable as the login.

use actix_web::cookie::{time::Duration as CookieAge, Cookie, SameSite};
use actix_web::dev::ServiceRequest;
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};
use base64::Engine;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::{origin, AppState};
use crate::error::{ApiError, ErrorCode};
use crate::limits::RateKey;
use crate::realm::messages::content::escape;
use crate::realm::sessions::{
    EndSession, RenewSession, SessionDigest, StartSession, SESSION_AGE_SECS,
};
use crate::realm::{Realm, Role, User};
use crate::registry::RealmHandle;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "sessionid";
/// The CSRF cookie's name.
pub const CSRF_COOKIE: &str = "csrftoken";
/// The header a `/json` write carries the CSRF token in.
pub const CSRF_HEADER: &str = "x-csrftoken";
/// The form field the pages carry it in.
pub const CSRF_FIELD: &str = "csrfmiddlewaretoken";
/// How long the CSRF cookie lasts: a year, as Django's `CSRF_COOKIE_AGE`.
const CSRF_AGE_SECS: i64 = 365 * 24 * 60 * 60;

/// The endpoints not served under `/json`.
const API_ONLY: &[&str] = &["server_settings", "dev_fetch_api_key", "dev_list_users"];

/// A `/json` request: the digest of its session cookie, if it had a well-formed one.
/// Its credentials are the session, never an `Authorization` header.
#[derive(Debug, Clone, Copy)]
pub struct WebSession {
    pub digest: Option<SessionDigest>,
}

/// A fresh secret: 32 random bytes, base64url without padding (43 characters).
fn secret() -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

/// Whether a cookie value is one `secret` could have made (anything else is ignored
/// unread: it names no session and is no token).
fn well_formed(value: &str) -> bool {
    value.len() == 43
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The digest of the request's session cookie, if it has a well-formed one.
pub fn cookie_digest(req: &HttpRequest) -> Option<SessionDigest> {
    let c = req.cookie(SESSION_COOKIE)?;
    well_formed(c.value()).then(|| SessionDigest::of(c.value()))
}

/// The request's CSRF cookie, if well formed.
fn csrf_cookie(req: &HttpRequest) -> Option<String> {
    let c = req.cookie(CSRF_COOKIE)?;
    well_formed(c.value()).then(|| c.value().to_owned())
}

/// Why a state-changing request fails Django's CSRF check, if it does: a foreign
/// `Origin`, then a missing cookie, a missing or wrong token.
pub fn csrf_failure(req: &HttpRequest, submitted: Option<&str>) -> Option<String> {
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        // `scheme://host[:port]`, compared with the Host the request came to (behind
        // a TLS-terminating proxy the scheme differs from the request's own).
        let authority = origin.split_once("://").map(|(_, a)| a).unwrap_or_default();
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        if authority.is_empty() || !authority.eq_ignore_ascii_case(host) {
            return Some(format!(
                "Origin checking failed - {origin} does not match any trusted origins."
            ));
        }
    }
    let Some(cookie) = csrf_cookie(req) else {
        return Some("CSRF cookie not set.".to_owned());
    };
    let submitted = submitted.unwrap_or_default();
    if submitted.is_empty() {
        return Some("CSRF token missing.".to_owned());
    }
    let same: bool = cookie.as_bytes().ct_eq(submitted.as_bytes()).into();
    (!same).then(|| "CSRF token incorrect.".to_owned())
}

/// Zulip's JSON answer to a `/json` write that fails the CSRF check.
pub fn csrf_error(reason: &str) -> ApiError {
    ApiError::new(403, ErrorCode::CsrfFailed, format!("CSRF error: {reason}"))
        .with("reason", reason.to_owned())
}

/// The `/json` step of every request (`middleware::around`, before the rate limit):
/// a request under `/json/` is checked for CSRF when it writes, marked as a session
/// request (`WebSession`), and routed as its `/api/v1/` twin. Answers the refusal of
/// a write that fails the check.
pub fn json_gate(req: &mut ServiceRequest) -> Result<(), ApiError> {
    let Some(rest) = req.path().strip_prefix("/json/") else {
        return Ok(());
    };
    // Zulip's mobile-only endpoints and the incoming webhooks are under `/api/v1`
    // alone (its `v1_api_mobile_patterns`, `/api/v1/external/`): under `/json` they
    // answer as an unknown `/json` path.
    // Zulip serves resumable uploads (tusd) under `/api/v1/tus` only.
    if API_ONLY.contains(&rest.trim_end_matches('/'))
        || rest.starts_with("external/")
        || rest == "tus"
        || rest.starts_with("tus/")
    {
        return Ok(());
    }
    let path = format!("/api/v1/{rest}");
    let http = req.request();
    if !matches!(
        *req.method(),
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    ) {
        let token = http
            .headers()
            .get(CSRF_HEADER)
            .and_then(|v| v.to_str().ok());
        if let Some(reason) = csrf_failure(http, token) {
            return Err(csrf_error(&reason));
        }
    }
    let digest = cookie_digest(http);
    req.extensions_mut().insert(WebSession { digest });
    let uri = match req.query_string() {
        "" => path,
        q => format!("{path}?{q}"),
    };
    let uri: actix_web::http::Uri = uri
        .parse()
        .map_err(|_| ApiError::bad_request("Invalid path"))?;
    req.match_info_mut().get_mut().update(&uri);
    req.head_mut().uri = uri;
    Ok(())
}

/// The realm of the request's Host.
pub(super) fn realm_of(req: &HttpRequest) -> Option<(RealmHandle, web::Data<AppState>)> {
    let state = req.app_data::<web::Data<AppState>>()?.clone();
    let handle = state.registry.for_host(&origin::host(req))?;
    Some((handle, state))
}

/// Whether the realm's URL is https (its cookies are then `Secure`).
pub(super) fn secure(handle: &RealmHandle) -> bool {
    let version = handle.hub.current();
    version.url(&handle.server_url).starts_with("https://")
}

fn cookie(
    name: &'static str,
    value: String,
    age_secs: i64,
    secure: bool,
    http_only: bool,
) -> Cookie<'static> {
    Cookie::build(name, value)
        .path("/")
        .same_site(SameSite::Lax)
        .http_only(http_only)
        .secure(secure)
        .max_age(CookieAge::seconds(age_secs))
        .finish()
}

/// A cookie that removes `name` from the browser.
fn removal(name: &'static str, secure: bool) -> Cookie<'static> {
    let mut c = cookie(name, String::new(), 0, secure, name == SESSION_COOKIE);
    c.make_removal();
    c
}

/// Where to go after a login: `next` when it is a path of this site (not `//host`,
/// not `/\host`, no scheme), else `/`.
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n.starts_with("//")
                && !n.starts_with("/\\")
                && !n.chars().any(|c| c.is_control() || c == '\\') =>
        {
            n.to_owned()
        }
        _ => "/".to_owned(),
    }
}

/// The user of the request's session cookie in `realm`, if it has a valid one.
pub fn session_user<'r>(
    req: &HttpRequest,
    handle: &RealmHandle,
    realm: &'r Realm,
) -> Option<&'r User> {
    let digest = cookie_digest(req)?;
    realm
        .session_user(&digest, handle.clock.now_ms().div_euclid(1000))
        .ok()
}

/// A page's answer builder: `status` and the security headers.
fn page(status: StatusCode) -> actix_web::HttpResponseBuilder {
    let mut builder = HttpResponse::build(status);
    builder
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::REFERRER_POLICY, "same-origin"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    builder
}

/// The HTML of a page titled `title` holding `body`.
fn html(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"color-scheme\" content=\"light dark\">\
         <link rel=\"icon\" href=\"/favicon.ico\">\
         <title>{}</title><style>html{{background:Canvas;color:CanvasText}}\
         body{{font-family:system-ui,sans-serif;max-width:26em;\
         margin:4em auto;padding:0 1em;line-height:1.4}}label{{display:block;margin-top:1em}}\
         input{{width:100%;box-sizing:border-box;padding:.5em;font:inherit}}\
         button{{font:inherit;padding:.5em 1.2em;margin-top:1.2em;cursor:pointer}}\
         .error{{color:light-dark(#b00020,#ff8a80);font-weight:600}}\
         .users button{{display:block;width:100%;text-align:left;margin-top:.4em}}\
         h2{{font-size:1em;margin-top:1.5em}}.logo{{width:64px;height:64px}}</style>\
         </head><body><main>\n<img class=\"logo\" src=\"/static/images/logo/zulip-icon-128x128.png\" \
         alt=\"\">\n{body}\n</main></body></html>\n",
        escape(title)
    )
}

/// A page's answer, with the CSRF cookie set when the browser has none (`token`).
pub(super) fn respond(
    status: StatusCode,
    title: &str,
    body: &str,
    token: &Token,
    secure: bool,
) -> HttpResponse {
    let mut builder = page(status);
    if token.fresh {
        builder.cookie(cookie(
            CSRF_COOKIE,
            token.value.clone(),
            CSRF_AGE_SECS,
            secure,
            false,
        ));
    }
    builder.body(html(title, body))
}

/// The CSRF token a page's forms carry: the browser's cookie, or a new one.
pub(super) struct Token {
    pub(super) value: String,
    fresh: bool,
}

pub(super) fn token_of(req: &HttpRequest) -> Token {
    match csrf_cookie(req) {
        Some(value) => Token {
            value,
            fresh: false,
        },
        None => Token {
            value: secret(),
            fresh: true,
        },
    }
}

pub(super) fn redirect(to: &str) -> actix_web::HttpResponseBuilder {
    let mut b = HttpResponse::Found();
    b.insert_header((header::LOCATION, to.to_owned()))
        .insert_header((header::CACHE_CONTROL, "no-store"));
    b
}

/// A page that says only `why`: as an error unless `status` is a success ("Check your
/// email", "Your password is set").
pub(super) fn message_page(status: StatusCode, title: &str, why: &str) -> HttpResponse {
    let what = if status.is_success() {
        "id=\"message\""
    } else {
        "class=\"error\" id=\"error\""
    };
    let body = format!(
        "<h1>{}</h1>\n<p {what}>{}</p>\n<p><a href=\"/login/\">Log in</a></p>",
        escape(title),
        escape(why)
    );
    page(status).body(html(title, &body))
}

/// The query of a login page.
#[derive(Debug, Default, Deserialize)]
pub struct NextQuery {
    #[serde(default)]
    next: Option<String>,
}

/// The login form as posted.
#[derive(Debug, Default, Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    csrfmiddlewaretoken: String,
    #[serde(default)]
    next: Option<String>,
}

/// The login page, with an error above the form and the address typed.
fn login_page(
    req: &HttpRequest,
    handle: &RealmHandle,
    state: &AppState,
    next: &str,
    error: Option<&str>,
    username: &str,
) -> HttpResponse {
    let version = handle.hub.current();
    let token = token_of(req);
    let name = &version.settings.name;
    let mut body = format!("<h1>Log in to {}</h1>\n", escape(name));
    if let Some(e) = error {
        body.push_str(&format!(
            "<p class=\"error\" id=\"error\" role=\"alert\">{}</p>\n",
            escape(e)
        ));
    }
    body.push_str(&format!(
        "<form id=\"login_form\" name=\"login_form\" method=\"post\" action=\"/accounts/login/\">\n\
         <input type=\"hidden\" name=\"{CSRF_FIELD}\" value=\"{}\">\n\
         <input type=\"hidden\" name=\"next\" value=\"{}\">\n\
         <label for=\"id_username\">Email</label>\
         <input type=\"email\" name=\"username\" id=\"id_username\" maxlength=\"254\" required \
         autocomplete=\"username\" autofocus value=\"{}\">\n\
         <label for=\"id_password\">Password</label>\
         <input type=\"password\" name=\"password\" id=\"id_password\" required \
         autocomplete=\"current-password\">\n\
         <button type=\"submit\">Log in</button>\n</form>\n",
        escape(&token.value),
        escape(next),
        escape(username)
    ));
    body.push_str("<p><a href=\"/accounts/password/reset/\">Forgot your password?</a></p>\n");
    if state.dev && version.settings.dev {
        body.push_str("<p><a href=\"/devlogin/\">Development login</a></p>\n");
    }
    respond(
        StatusCode::OK,
        &format!("Log in | {name}"),
        &body,
        &token,
        secure(handle),
    )
}

/// # `GET /login/`
///
/// Also `GET /accounts/login/`. A browser with a valid session goes on to `next`.
pub async fn show_login(req: HttpRequest, query: web::Query<NextQuery>) -> HttpResponse {
    let Some((handle, state)) = realm_of(&req) else {
        return no_realm();
    };
    let next = safe_next(query.next.as_deref());
    let version = handle.hub.current();
    if session_user(&req, &handle, &version).is_some() {
        return redirect(&next).finish();
    }
    login_page(&req, &handle, &state, &next, None, "")
}

/// The page of a host that names no realm here.
pub(super) fn no_realm() -> HttpResponse {
    message_page(
        StatusCode::NOT_FOUND,
        "Log in",
        "There is no organization here.",
    )
}

/// The page of a write the realm refused.
fn error_page(title: &str, e: &ApiError) -> HttpResponse {
    message_page(
        StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        title,
        &e.msg,
    )
}

/// The answer to a login attempt refused for too many attempts.
pub(super) fn too_many(retry_after: f64) -> HttpResponse {
    let mut res = message_page(
        StatusCode::TOO_MANY_REQUESTS,
        "Log in",
        "Too many attempts. Wait a while, then try again.",
    );
    if let Ok(v) = HeaderValue::from_str(&format!("{}", retry_after.ceil().max(1.0) as u64)) {
        res.headers_mut().insert(header::RETRY_AFTER, v);
    }
    res
}

/// The page of a form that failed the CSRF check.
pub(super) fn csrf_page(reason: &str) -> HttpResponse {
    message_page(
        StatusCode::FORBIDDEN,
        "Forbidden",
        &format!("CSRF verification failed: {reason} Reload the page and try again."),
    )
}

/// One answer for every failed login (Zulip's login form text).
const LOGIN_FAILED: &str =
    "Please enter a correct email and password. Note that both fields may be case-sensitive.";

/// # `POST /accounts/login/`
pub async fn submit_login(req: HttpRequest, form: web::Form<LoginForm>) -> HttpResponse {
    let form = form.into_inner();
    let Some((handle, state)) = realm_of(&req) else {
        return no_realm();
    };
    let next = safe_next(form.next.as_deref());
    if let Some(reason) = csrf_failure(&req, Some(&form.csrfmiddlewaretoken)) {
        return csrf_page(&reason);
    }
    let now = std::time::Instant::now();
    if state.rate_limits.enabled() {
        let decision = state.rate_limits.check(
            RateKey::Ip(origin::client_ip(&req, &state.trusted_proxies)),
            now,
        );
        if !decision.allowed {
            return too_many(decision.retry_after);
        }
    }
    let username = form.username.trim().to_owned();
    if username.len() > crate::realm::users::MAX_EMAIL_LENGTH {
        return login_page(&req, &handle, &state, &next, Some(LOGIN_FAILED), "");
    }
    let realm_url = handle.server_url.clone();
    if let Some(logins) = state.rate_limits.logins() {
        if let Err(retry_after) = logins.attempt(&realm_url, &username, now) {
            return too_many(retry_after);
        }
    }
    let found = {
        let version = handle.hub.current();
        version
            .user_by_delivery_email(&username)
            .filter(|u| u.is_active && !u.is_bot())
            .and_then(|u| u.password_hash.clone().map(|h| (u.id, h)))
    };
    let (user_id, hash) = match found {
        Some((id, hash)) => (Some(id), Some(hash)),
        None => (None, None),
    };
    // An unknown, deactivated or password-less account costs what a wrong password
    // costs, so timing does not tell which accounts exist.
    let verified = match crate::passwords::verify(form.password, hash).await {
        Ok(v) => v,
        Err(e) if e.status == 429 => return too_many(1.0),
        Err(_) => {
            return message_page(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Log in",
                "Something went wrong. Try again.",
            )
        }
    };
    let Some(user_id) = user_id.filter(|_| verified) else {
        return login_page(&req, &handle, &state, &next, Some(LOGIN_FAILED), &username);
    };
    if let Some(logins) = state.rate_limits.logins() {
        logins.succeeded(&realm_url, &username);
    }
    log_in(&req, &handle, user_id, &next).await
}

/// Starts a session for `user_id` (ending the one the browser had) and sends the
/// browser to `next` with its new cookies.
async fn log_in(req: &HttpRequest, handle: &RealmHandle, user_id: u64, next: &str) -> HttpResponse {
    if let Some(old) = cookie_digest(req) {
        let _ = handle
            .client
            .commit_system(EndSession { digest: old }, Realm::decide_end_session)
            .await;
    }
    match start(handle, user_id).await {
        Ok(cookies) => {
            let mut res = redirect(next);
            for c in cookies {
                res.cookie(c);
            }
            res.finish()
        }
        Err(e) => error_page("Log in", &e),
    }
}

/// Starts a new session for `user_id`: the cookies to set (the session's, and a new
/// CSRF token, as Django rotates it at login).
pub async fn start(handle: &RealmHandle, user_id: u64) -> Result<[Cookie<'static>; 2], ApiError> {
    let value = secret();
    handle
        .client
        .commit_system(
            StartSession {
                user_id,
                digest: SessionDigest::of(&value),
            },
            Realm::decide_start_session,
        )
        .await?;
    let secure = secure(handle);
    Ok([
        cookie(SESSION_COOKIE, value, SESSION_AGE_SECS, secure, true),
        cookie(CSRF_COOKIE, secret(), CSRF_AGE_SECS, secure, false),
    ])
}

/// A new session for the browser that changed its password through `/json`, whose
/// session the change ended (as Django's `update_session_auth_hash` keeps the browser
/// logged in): the cookie to set. `None` for an API-key request.
pub async fn renew_after_password_change(
    req: &super::ApiRequest,
    user_id: u64,
) -> Option<Cookie<'static>> {
    req.credentials.as_ref().ok()?.session?;
    let value = secret();
    req.writer()
        .commit_system(
            StartSession {
                user_id,
                digest: SessionDigest::of(&value),
            },
            Realm::decide_start_session,
        )
        .await
        .ok()?;
    let secure = req
        .hub
        .current()
        .url(&req.server_url())
        .starts_with("https://");
    Some(cookie(
        SESSION_COOKIE,
        value,
        SESSION_AGE_SECS,
        secure,
        true,
    ))
}

/// A load of the client's page: renews the browser's session when it is due (see
/// `realm::sessions`); the cookie to set again with its new age.
pub async fn renew(req: &HttpRequest, handle: &RealmHandle) -> Option<Cookie<'static>> {
    let value = req.cookie(SESSION_COOKIE)?.value().to_owned();
    let digest = SessionDigest::of(&value);
    let now = handle.clock.now_ms().div_euclid(1000);
    if !handle.hub.current().session_due_for_renewal(&digest, now) {
        return None;
    }
    let renewed = handle
        .client
        .commit_system(RenewSession { digest }, Realm::decide_renew_session)
        .await
        .ok()?;
    renewed.then(|| {
        cookie(
            SESSION_COOKIE,
            value,
            SESSION_AGE_SECS,
            secure(handle),
            true,
        )
    })
}

/// The logout form as posted.
#[derive(Debug, Default, Deserialize)]
pub struct LogoutForm {
    #[serde(default)]
    csrfmiddlewaretoken: String,
}

/// # `POST /accounts/logout/`
///
/// The token comes as the form's `csrfmiddlewaretoken` or the `X-CSRFToken` header.
pub async fn logout(req: HttpRequest, form: web::Form<LogoutForm>) -> HttpResponse {
    let Some((handle, _)) = realm_of(&req) else {
        return no_realm();
    };
    let header_token = req
        .headers()
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let token = Some(form.csrfmiddlewaretoken.as_str())
        .filter(|t| !t.is_empty())
        .or(header_token.as_deref());
    if let Some(reason) = csrf_failure(&req, token) {
        return csrf_page(&reason);
    }
    if let Some(digest) = cookie_digest(&req) {
        if let Err(e) = handle
            .client
            .commit_system(EndSession { digest }, Realm::decide_end_session)
            .await
        {
            return error_page("Log out", &e);
        }
    }
    let secure = secure(&handle);
    redirect("/login/")
        .cookie(removal(SESSION_COOKIE, secure))
        .finish()
}

/// Whether the development login serves this request's realm: a `--dev` server, and
/// the development realm only.
fn dev_login_allowed(state: &AppState, realm: &Realm) -> bool {
    state.dev && realm.settings.dev
}

/// # `GET /devlogin/`
///
/// The development realm's active people, by role, each a button that logs in as
/// them (Zulip's development login).
pub async fn show_dev_login(req: HttpRequest, query: web::Query<NextQuery>) -> HttpResponse {
    let Some((handle, state)) = realm_of(&req) else {
        return no_realm();
    };
    let version = handle.hub.current();
    if !dev_login_allowed(&state, &version) {
        return message_page(
            StatusCode::NOT_FOUND,
            "Log in",
            "DevAuthBackend not enabled.",
        );
    }
    let next = safe_next(query.next.as_deref());
    let token = token_of(&req);
    let mut body = format!(
        "<h1>Development login: {}</h1>\n<p>Log in as anyone in the development organization, \
         no password needed.</p>\n<form class=\"users\" method=\"post\" \
         action=\"/accounts/login/local/\">\n<input type=\"hidden\" name=\"{CSRF_FIELD}\" \
         value=\"{}\">\n<input type=\"hidden\" name=\"next\" value=\"{}\">\n",
        escape(&version.settings.name),
        escape(&token.value),
        escape(&next)
    );
    let groups = [
        ("Owners", Role::Owner),
        ("Administrators", Role::Administrator),
        ("Moderators", Role::Moderator),
        ("Guest users", Role::Guest),
        ("Normal users", Role::Member),
    ];
    for (title, role) in groups {
        let people: Vec<&User> = version
            .users
            .values()
            .map(|u| u.as_ref())
            .filter(|u| u.is_active && !u.is_bot() && u.role == role)
            .collect();
        if people.is_empty() {
            continue;
        }
        body.push_str(&format!("<h2>{}</h2>\n", escape(title)));
        for u in people {
            body.push_str(&format!(
                "<button type=\"submit\" name=\"direct_email\" value=\"{}\">{} \
                 ({})</button>\n",
                escape(&u.delivery_email),
                escape(&u.full_name),
                escape(&u.delivery_email)
            ));
        }
    }
    body.push_str("</form>\n<p><a href=\"/login/\">Log in with a password</a></p>");
    respond(
        StatusCode::OK,
        "Development login",
        &body,
        &token,
        secure(&handle),
    )
}

/// The development login form as posted.
#[derive(Debug, Default, Deserialize)]
pub struct DevLoginForm {
    #[serde(default)]
    direct_email: String,
    #[serde(default)]
    csrfmiddlewaretoken: String,
    #[serde(default)]
    next: Option<String>,
}

/// # `POST /accounts/login/local/`
pub async fn submit_dev_login(req: HttpRequest, form: web::Form<DevLoginForm>) -> HttpResponse {
    let Some((handle, state)) = realm_of(&req) else {
        return no_realm();
    };
    let user_id = {
        let version = handle.hub.current();
        if !dev_login_allowed(&state, &version) {
            return message_page(
                StatusCode::NOT_FOUND,
                "Log in",
                "DevAuthBackend not enabled.",
            );
        }
        if let Some(reason) = csrf_failure(&req, Some(&form.csrfmiddlewaretoken)) {
            return csrf_page(&reason);
        }
        match version
            .user_by_delivery_email(&form.direct_email)
            .filter(|u| u.is_active && !u.is_bot())
        {
            Some(u) => u.id,
            None => return message_page(StatusCode::BAD_REQUEST, "Log in", "No such active user."),
        }
    };
    let next = safe_next(form.next.as_deref());
    log_in(&req, &handle, user_id, &next).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_stays_on_this_site() {
        for (given, want) in [
            (None, "/"),
            (Some("/"), "/"),
            (
                Some("/#narrow/channel/3-general"),
                "/#narrow/channel/3-general",
            ),
            (Some("//evil.example/"), "/"),
            (Some("/\\evil.example/"), "/"),
            (Some("https://evil.example/"), "/"),
            (Some("javascript:alert(1)"), "/"),
            (Some("/a\r\nSet-Cookie: x=1"), "/"),
            (Some(""), "/"),
        ] {
            assert_eq!(safe_next(given), want, "{given:?}");
        }
    }

    #[test]
    fn secrets_are_well_formed_and_distinct() {
        let (a, b) = (secret(), secret());
        assert!(well_formed(&a) && well_formed(&b));
        assert_ne!(a, b);
        assert!(!well_formed("short"));
        assert!(!well_formed(&format!("{}=", &a[..42])));
    }
}
