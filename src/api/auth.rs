//! Basic credentials and the realm a request is for (its Host).

use actix_web::http::header::AUTHORIZATION;
use actix_web::{HttpMessage, HttpRequest};
use base64::Engine;

use std::sync::Arc;

use super::middleware::logging::LoggedUser;
use super::Credentials;
use crate::error::ApiError;
use crate::realm::{Realm, UserId};

/// The request's credentials: for a `/json` request its session (`api::session`),
/// else `Authorization: Basic base64(email:api_key)`, with Zulip's error texts.
pub fn credentials(req: &HttpRequest) -> Result<Credentials, ApiError> {
    let web = req
        .extensions()
        .get::<super::session::WebSession>()
        .copied();
    if let Some(web) = web {
        let digest = web
            .digest
            .ok_or_else(crate::realm::sessions::session_required)?;
        return Ok(with_logged(req, String::new(), String::new(), Some(digest)));
    }
    let Some(header) = req.headers().get(AUTHORIZATION) else {
        return Err(ApiError::not_logged_in());
    };
    // Visible ASCII (`to_str`), then read as bytes: the only whitespace left to trim is
    // ASCII, and a byte search needs no searcher set up per call.
    let value = header
        .to_str()
        .map_err(|_| invalid_header())?
        .as_bytes()
        .trim_ascii();
    let (scheme, encoded) = match value.iter().position(|&b| b == b' ') {
        Some(space) => (&value[..space], &value[space + 1..]),
        None => (value, &b""[..]),
    };
    if !scheme.eq_ignore_ascii_case(b"basic") {
        return Err(ApiError::bad_request(
            "This endpoint requires HTTP basic authentication.",
        ));
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim_ascii())
        .map_err(|_| invalid_header())?;
    // The decoded bytes become the email: only the key is copied.
    let mut email = String::from_utf8(decoded).map_err(|_| invalid_header())?;
    let colon = email
        .bytes()
        .position(|b| b == b':')
        .ok_or_else(invalid_header)?;
    let api_key = email[colon + 1..].to_owned();
    email.truncate(colon);
    Ok(with_logged(req, email, api_key, None))
}

/// Credentials whose user the request log will name.
fn with_logged(
    req: &HttpRequest,
    email: String,
    api_key: String,
    session: Option<crate::realm::sessions::SessionDigest>,
) -> Credentials {
    let logged = LoggedUser::default();
    req.extensions_mut().insert(logged.clone());
    Credentials {
        email,
        api_key,
        session,
        logged,
    }
}

/// Credentials of a request for a file that browsers fetch by URL (uploads): Basic
/// credentials when an `Authorization` header is there, else the session cookie
/// (Zulip's `override_api_url_scheme` paths accept both).
pub fn file_credentials(req: &HttpRequest) -> Result<Credentials, ApiError> {
    if req.headers().contains_key(AUTHORIZATION) {
        return credentials(req);
    }
    match super::session::cookie_digest(req) {
        Some(digest) => Ok(with_logged(req, String::new(), String::new(), Some(digest))),
        None => Err(ApiError::not_logged_in()),
    }
}

/// Credentials already found valid for a request (by the rate limit, which keys a
/// request by its user) against one version of the realm: the handler, when it
/// authenticates against that same version, takes the user from here rather than
/// comparing the key again. Against another version it authenticates as usual.
pub struct Authenticated {
    pub credentials: Credentials,
    pub version: Arc<Realm>,
    pub user_id: UserId,
}

impl Authenticated {
    /// Records valid credentials in the request's extensions.
    pub fn record(
        req: &HttpRequest,
        credentials: Credentials,
        version: Arc<Realm>,
        user_id: UserId,
    ) {
        req.extensions_mut().insert(Authenticated {
            credentials,
            version,
            user_id,
        });
    }

    /// Takes what `record` left, if anything.
    pub fn take(req: &HttpRequest) -> Option<Authenticated> {
        req.extensions_mut().remove::<Authenticated>()
    }
}

/// The `api_key` of an incoming webhook URL's query string (the services that post to
/// it send no credentials of their own), if the request is for one.
pub fn webhook_api_key(req: &HttpRequest) -> Option<String> {
    if !super::is_webhook_path(req.path()) {
        return None;
    }
    form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(name, _)| name == "api_key")
        .map(|(_, value)| value.into_owned())
}

fn invalid_header() -> ApiError {
    ApiError::unauthorized("Invalid authorization header for basic auth")
}
