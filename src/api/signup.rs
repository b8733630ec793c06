//! The sign-up page of an invitation link, `/join/<key>/`: plain HTML rendered here,
//! no script. The invitee picks a full name and a password (and, on a reusable link,
//! their address), and gets their API key and a `zuliprc` to download.
//!
//! What guards it:
//! - the form carries a token tied to the invitation's key (HMAC-SHA256 under a key
//!   of this process, as temporary upload URLs are signed); a form without the right
//!   token is refused, and one from before a restart asks for a reload;
//! - everything shown is HTML-escaped, attributes included; the page sends a
//!   `Content-Security-Policy` that allows no script, no framing, and forms only to
//!   itself, `Referrer-Policy: no-referrer` (the key is in the URL) and
//!   `Cache-Control: no-store` (the answer holds an API key);
//! - submissions are rate limited as logins are: per client address (the limit of
//!   calls without credentials) and 5 attempts per link and address in 30 minutes (a
//!   sign-up clears them), when rate limits are on; only forms with the page's token
//!   count, and per address, so that one visitor cannot lock the link for the others
//!   (a holder of the link can still spend one address's attempts);
//! - the password must pass `realm create`'s rule (Zulip's: 6 characters, zxcvbn
//!   10 000 guesses), on every server, the development one included;
//! - a used (email), revoked or expired link, or one whose creator was deactivated or
//!   can no longer invite at the link's role (a demoted administrator), gets a page
//!   saying so.
//!
//! On a server that sends email (`--smtp-url`), a reusable link's page asks only for the
//! address, and emails it a confirmation link (valid a day, as Zulip's
//! `CONFIRMATION_LINK_DEFAULT_VALIDITY_DAYS`) that leads to the form of an email
//! invitation to that address: a link's holder cannot take an address they do not
//! own. Without email, a reusable link refuses an address that has a pending email
//! invitation of its own.
//!
//! The account is made by the realm's one rule for new humans (`decide_new_human`, as
//! `POST /users`) with the invitation's role, channels and groups.

use std::sync::OnceLock;
use std::time::Instant;

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;

use super::{origin, AppState};
use crate::limits::RateKey;
use crate::mail::Email;
use crate::realm::invites::{
    invite_link, AcceptInvite, ConfirmAddress, Invite, LINK_CREATOR_CANNOT_GRANT, LINK_UNKNOWN,
};
use crate::realm::messages::content::escape;
use crate::realm::users::password_is_strong;
use crate::realm::Realm;
use crate::registry::RealmHandle;

type HmacSha256 = Hmac<Sha256>;

/// This process's key for form tokens.
fn form_key() -> &'static [u8; 32] {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    KEY.get_or_init(rand::random)
}

fn mac(key: &[u8], invite_key: &str) -> Option<HmacSha256> {
    let mut mac = HmacSha256::new_from_slice(key).ok()?;
    mac.update(b"hearth-signup:");
    mac.update(invite_key.as_bytes());
    Some(mac)
}

/// The form token of an invitation key.
fn csrf_token(invite_key: &str) -> String {
    mac(form_key(), invite_key)
        .map(|m| hex::encode(m.finalize().into_bytes()))
        .unwrap_or_default()
}

/// Whether `token` is the form token of `invite_key` (compared in constant time).
fn csrf_ok(invite_key: &str, token: &str) -> bool {
    let Ok(sig) = hex::decode(token) else {
        return false;
    };
    mac(form_key(), invite_key).is_some_and(|m| m.verify_slice(&sig).is_ok())
}

/// The form as posted.
#[derive(Debug, Default, Deserialize)]
pub struct SignupForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    full_name: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    email: Option<String>,
}

/// A page: the security headers, `status`, and `body` inside the common frame.
fn page(status: StatusCode, title: &str, body: &str) -> HttpResponse {
    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>body{{font-family:sans-serif;max-width:32em;margin:3em auto;\
         padding:0 1em}}label{{display:block;margin-top:1em}}input{{width:100%}}\
         .error{{color:#a00}}pre{{background:#eee;padding:1em;overflow:auto}}</style>\
         </head><body>\n{body}\n</body></html>\n",
        escape(title)
    );
    HttpResponse::build(status)
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(html)
}

/// A page that only says why the link leads nowhere.
fn refused(status: StatusCode, why: &str) -> HttpResponse {
    page(
        status,
        "Invitation",
        &format!(
            "<h1>Invitation</h1>\n<p class=\"error\">{}</p>",
            escape(why)
        ),
    )
}

/// Whether a reusable link's sign-up confirms the address by email first (a server
/// whose mail leaves it; the development log is not a confirmation).
fn confirms(req: &HttpRequest) -> bool {
    req.app_data::<web::Data<AppState>>()
        .and_then(|s| s.mailer.as_ref())
        .is_some_and(|m| m.mailer().is_smtp())
}

/// The realm of the request's Host.
fn realm_of(req: &HttpRequest) -> Option<RealmHandle> {
    let state = req.app_data::<web::Data<AppState>>()?;
    state.registry.for_host(&origin::host(req))
}

/// The form, with an error above it and what was typed (never the password).
fn form(
    realm: &Realm,
    invite: &Invite,
    confirm: bool,
    key: &str,
    error: Option<&str>,
    typed: &SignupForm,
) -> HttpResponse {
    let mut body = format!("<h1>Join {}</h1>\n", escape(&realm.settings.name));
    if let Some(referrer) = realm.user(invite.referred_by) {
        body.push_str(&format!(
            "<p>{} invited you.</p>\n",
            escape(&referrer.full_name)
        ));
    }
    if let Some(e) = error {
        body.push_str(&format!(
            "<p class=\"error\" id=\"error\">{}</p>\n",
            escape(e)
        ));
    }
    body.push_str(&format!(
        "<form method=\"post\" action=\"/join/{}/\">\n\
         <input type=\"hidden\" name=\"csrf_token\" value=\"{}\">\n",
        escape(key),
        csrf_token(key)
    ));
    match invite.email() {
        Some(email) => body.push_str(&format!(
            "<p>Email: <strong id=\"email\">{}</strong></p>\n",
            escape(email)
        )),
        None => body.push_str(&format!(
            "<label>Email <input type=\"email\" name=\"email\" required value=\"{}\"></label>\n",
            escape(typed.email.as_deref().unwrap_or_default())
        )),
    }
    if confirm && invite.is_multiuse() {
        body.push_str(
            "<p>We will email you a link to finish signing up.</p>\n\
             <p><button type=\"submit\">Continue</button></p>\n</form>",
        );
    } else {
        body.push_str(&format!(
            "<label>Full name <input type=\"text\" name=\"full_name\" required maxlength=\"100\" \
         value=\"{}\"></label>\n\
         <label>Password <input type=\"password\" name=\"password\" required \
         autocomplete=\"new-password\"></label>\n\
         <p><button type=\"submit\">Sign up</button></p>\n</form>",
            escape(&typed.full_name)
        ));
    }
    page(
        if error.is_some() {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::OK
        },
        &format!("Join {}", realm.settings.name),
        &body,
    )
}

/// The status of a refused link: an unknown key is not found, a spent one gone.
fn refusal_status(why: &str) -> StatusCode {
    match why {
        LINK_UNKNOWN => StatusCode::NOT_FOUND,
        LINK_CREATOR_CANNOT_GRANT => StatusCode::FORBIDDEN,
        _ => StatusCode::GONE,
    }
}

/// # `GET /join/{key}`
///
/// A link without its last slash (cut when pasted) goes to the page, as Django's
/// `APPEND_SLASH` sends it: a permanent redirect to the same path with the slash.
/// Routed, so the request log names the pattern, never the key.
pub async fn add_slash(req: HttpRequest) -> HttpResponse {
    let mut to = format!("{}/", req.path());
    if !req.query_string().is_empty() {
        to.push('?');
        to.push_str(req.query_string());
    }
    HttpResponse::MovedPermanently()
        .insert_header((actix_web::http::header::LOCATION, to))
        .finish()
}

/// # `GET /join/{key}/`
pub async fn show(req: HttpRequest, path: web::Path<String>) -> HttpResponse {
    let key = path.into_inner();
    let Some(handle) = realm_of(&req) else {
        return refused(StatusCode::NOT_FOUND, LINK_UNKNOWN);
    };
    let version = handle.hub.current();
    let now = handle.clock.now_ms().div_euclid(1000);
    match version.invite_for_signup(&key, now) {
        Ok(invite) => form(
            &version,
            invite,
            confirms(&req),
            &key,
            None,
            &SignupForm::default(),
        ),
        Err(why) => refused(refusal_status(why), why),
    }
}

fn too_many(retry_after: f64) -> HttpResponse {
    let mut res = refused(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many attempts. Wait a while, then try again.",
    );
    if let Ok(v) = HeaderValue::from_str(&format!("{}", retry_after.ceil().max(1.0) as u64)) {
        res.headers_mut().insert(header::RETRY_AFTER, v);
    }
    res
}

/// # `POST /join/{key}/`
pub async fn submit(
    req: HttpRequest,
    path: web::Path<String>,
    body: web::Form<SignupForm>,
) -> HttpResponse {
    let key = path.into_inner();
    let typed = body.into_inner();
    let (Some(handle), Some(state)) = (realm_of(&req), req.app_data::<web::Data<AppState>>())
    else {
        return refused(StatusCode::NOT_FOUND, LINK_UNKNOWN);
    };
    let now = Instant::now();
    let site = {
        let version = handle.hub.current();
        version.url(&handle.server_url).to_owned()
    };
    let site_key: std::sync::Arc<str> = site.as_str().into();
    let confirm = confirms(&req);
    if state.rate_limits.enabled() {
        let decision = state.rate_limits.check(
            RateKey::Ip(crate::api::origin::client_ip(&req, &state.trusted_proxies)),
            now,
        );
        if !decision.allowed {
            return too_many(decision.retry_after);
        }
    }
    let now_secs = handle.clock.now_ms().div_euclid(1000);
    let version = handle.hub.current();
    let invite = match version.invite_for_signup(&key, now_secs) {
        Ok(invite) => invite.clone(),
        Err(why) => return refused(refusal_status(why), why),
    };
    if !csrf_ok(&key, &typed.csrf_token) {
        return form(
            &version,
            &invite,
            confirm,
            &key,
            Some("This form has expired or was not sent from this page. Please try again."),
            &typed,
        );
    }
    // Counted only past the form token (a post made without opening the page spends
    // nothing), and per address, so that one visitor's guesses do not lock the link
    // for the others it was shared with.
    let attempts = attempts_key(&key, &invite, &typed);
    if let Some(logins) = state.rate_limits.logins() {
        if let Err(retry_after) = logins.attempt(&site_key, &attempts, now) {
            return too_many(retry_after);
        }
    }
    if confirm && invite.is_multiuse() {
        drop(version);
        return confirm_address(&handle, state, &site, &key, &invite, typed).await;
    }
    if let Err(e) = crate::realm::users::check_full_name(&typed.full_name) {
        return form(&version, &invite, confirm, &key, Some(&e.msg), &typed);
    }
    let password = typed.password.clone();
    let strong = web::block(move || password_is_strong(&password))
        .await
        .unwrap_or(false);
    if !strong {
        return form(
            &version,
            &invite,
            confirm,
            &key,
            Some("The password is too weak."),
            &typed,
        );
    }
    let password_hash = match crate::passwords::hash(typed.password.clone()).await {
        Ok(h) => h,
        Err(e) => {
            return refused(
                StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                &e.msg,
            )
        }
    };
    let q = AcceptInvite {
        key: key.clone(),
        email: if invite.is_multiuse() {
            typed.email.clone()
        } else {
            None
        },
        full_name: typed.full_name.clone(),
        password_strong: strong,
        password_hash,
        links_need_confirmation: confirm,
    };
    drop(version);
    match handle
        .client
        .commit_system(q, Realm::decide_accept_invite)
        .await
    {
        Ok(account) => {
            if let Some(logins) = state.rate_limits.logins() {
                logins.succeeded(&site_key, &attempts);
            }
            // The new account is logged in: the page's link opens the web client.
            let mut page = welcome(&site, &account.email, &account.api_key);
            match super::session::start(&handle, account.user_id).await {
                Ok(cookies) => {
                    for c in cookies {
                        if page.add_cookie(&c).is_err() {
                            tracing::warn!("cannot set a session cookie after a sign-up");
                        }
                    }
                }
                Err(e) => tracing::warn!("no session after a sign-up: {}", e.msg),
            }
            page
        }
        Err(e) => {
            let version = handle.hub.current();
            match version.invite_for_signup(&key, handle.clock.now_ms().div_euclid(1000)) {
                Ok(invite) => {
                    let invite = invite.clone();
                    form(&version, &invite, confirm, &key, Some(&e.msg), &typed)
                }
                Err(why) => refused(refusal_status(why), why),
            }
        }
    }
}

/// A reusable link's form on a server that sends email: the address is checked, a
/// confirmation stored (through the realm's log, so it outlives a restart) and its link
/// emailed there; the account waits for that link (Zulip's `USER_REGISTRATION`
/// confirmation).
async fn confirm_address(
    handle: &RealmHandle,
    state: &web::Data<AppState>,
    site: &str,
    key: &str,
    invite: &Invite,
    typed: SignupForm,
) -> HttpResponse {
    let email = typed.email.as_deref().unwrap_or_default().trim().to_owned();
    let checked = if crate::realm::users::email_is_valid(&email) {
        crate::realm::users::check_not_system_bot(&email).map_err(|e| e.msg)
    } else {
        Err("Enter a valid email address.".to_owned())
    };
    if let Err(why) = checked {
        let version = handle.hub.current();
        return form(&version, invite, true, key, Some(&why), &typed);
    }
    let q = ConfirmAddress {
        key: key.to_owned(),
        email,
    };
    let confirmation = match handle
        .client
        .commit_system(q, Realm::decide_confirm_address)
        .await
    {
        Ok(c) => c,
        Err(e) => {
            let version = handle.hub.current();
            let now = handle.clock.now_ms().div_euclid(1000);
            return match version.invite_for_signup(key, now) {
                Ok(invite) => {
                    let invite = invite.clone();
                    form(&version, &invite, true, key, Some(&e.msg), &typed)
                }
                Err(why) => refused(refusal_status(why), why),
            };
        }
    };
    let Some(to) = confirmation.email().map(str::to_owned) else {
        return refused(StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong.");
    };
    let realm_name = handle.hub.current().settings.name.clone();
    let email = Email {
        to: to.clone(),
        subject: "Activate your Zulip account".to_owned(),
        body: format!(
            "Hi,\n\nSomeone, hopefully you, asked to join {realm_name} at {site} with this \
             address.\n\nTo finish signing up, open this link and choose your name and \
             password:\n\n    {}\n\nThe link works for 24 hours. If you did not ask for \
             this, ignore this email.\n",
            invite_link(site, &confirmation.key)
        ),
        ..Email::default()
    };
    if let Some(queue) = &state.mailer {
        queue.send(site, email).await;
    }
    page(
        StatusCode::OK,
        "Check your email",
        &format!(
            "<h1>Check your email</h1>\n<p>We sent a link to <strong id=\"email\">{}</strong>. \
             Open it to finish signing up.</p>",
            escape(&to)
        ),
    )
}

/// What the sign-up attempts of a link are counted under: the link and the address
/// (an email invitation's own, or the one typed on a reusable link's form).
fn attempts_key(key: &str, invite: &Invite, typed: &SignupForm) -> String {
    let address = invite
        .email()
        .or(typed.email.as_deref())
        .unwrap_or_default();
    // An address is at most 254 characters (RFC 5321): longer input names no account
    // and must not make the counter's keys long.
    let address: String = address
        .trim()
        .chars()
        .take(crate::realm::users::MAX_EMAIL_LENGTH)
        .collect();
    format!("join:{key}:{}", crate::realm::lowercased(&address))
}

/// The answer of a sign-up: the API key and the zuliprc, shown and downloadable (a
/// `data:` link: the key never travels in a URL the server sees).
fn welcome(site: &str, email: &str, api_key: &str) -> HttpResponse {
    let zuliprc = format!("[api]\nemail={email}\nkey={api_key}\nsite={site}\n");
    let href = format!(
        "data:text/plain;charset=utf-8,{}",
        percent_encoding::utf8_percent_encode(&zuliprc, percent_encoding::NON_ALPHANUMERIC)
    );
    let body = format!(
        "<h1>Welcome!</h1>\n<p>Your account <strong id=\"email\">{}</strong> is ready, and \
         you are logged in.</p>\n<p><a id=\"open\" href=\"/\"><strong>Open hearth</strong></a> \
         (the web client)</p>\n\
         <h2>For the terminal and other clients</h2>\n\
         <p>Your API key: <code id=\"api_key\">{}</code></p>\n\
         <p><a id=\"zuliprc\" download=\"zuliprc\" href=\"{}\">Download your zuliprc</a> \
         (keep it private: <code>chmod 600 zuliprc</code>).</p>\n<pre>{}</pre>",
        escape(email),
        escape(api_key),
        escape(&href),
        escape(&zuliprc)
    );
    page(StatusCode::OK, "Welcome", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_tied_to_the_key() {
        let t = csrf_token("abc");
        assert!(csrf_ok("abc", &t));
        assert!(!csrf_ok("abd", &t));
        assert!(!csrf_ok("abc", ""));
        assert!(!csrf_ok("abc", "zz"));
        let mut other = t.clone();
        other.replace_range(0..1, if t.starts_with('0') { "1" } else { "0" });
        assert!(!csrf_ok("abc", &other));
    }
}
