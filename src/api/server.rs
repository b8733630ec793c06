//! Server settings and API key fetches (no authentication).

use serde_json::{json, Map, Value};

use super::Outcome;
use super::{success, ApiRequest, ApiResponse, AppState, CallOpts};
use crate::error::{ApiError, ErrorCode};
use crate::realm::Realm;
use actix_web::{web, HttpResponse};

/// # `GET /server_settings`
///
/// No authentication; credentials, even bad ones, are ignored (the Python client sends
/// placeholder ones when it starts).
pub async fn server_settings(req: ApiRequest) -> ApiResponse {
    let dev = req.state.dev;
    req.read(CallOpts::ANONYMOUS, move |c| {
        let s = &c.realm.settings;
        let dev = dev && s.dev;
        let url = c.realm.url(c.server_url);
        let body = json!({
            "authentication_methods": {
                "password": true, "dev": dev, "email": true, "ldap": false,
                "remoteuser": false, "github": false, "azuread": false, "gitlab": false,
                "google": false, "apple": false, "saml": false, "openid connect": false,
            },
            "zulip_version": crate::version::ZULIP_VERSION,
            "zulip_merge_base": "",
            "zulip_feature_level": crate::version::ZULIP_FEATURE_LEVEL,
            "push_notifications_enabled": false,
            "is_incompatible": false,
            "email_auth_enabled": true,
            "require_email_format_usernames": true,
            "realm_url": url,
            "realm_name": s.name,
            "realm_icon": format!("{url}/static/images/logo/zulip-icon-128x128.png"),
            "realm_description": c.realm.rendered_description(),
            "realm_web_public_access_enabled": false,
            "external_authentication_methods": [],
            "realm_uri": url,
        });
        Ok(Outcome::read(object(body)))
    })
    .await
    .map(success)
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// # `POST /dev_fetch_api_key`
///
/// A `--dev` server's development realm only; any other realm answers as a
/// production server does.
pub async fn dev_fetch_api_key(req: ApiRequest) -> ApiResponse {
    let dev = req.state.dev;
    req.read(CallOpts::ANONYMOUS, move |c| {
        let username = c.params.str("username")?;
        if !dev {
            return Err(ApiError::bad_request(
                "Endpoint not available in production.",
            ));
        }
        // The development realm only: a `--dev` server may also serve a realm made by
        // `realm create`, whose keys need a password (Zulip's `dev_auth_enabled(realm)`).
        if !c.realm.settings.dev {
            return Err(ApiError::bad_request("DevAuthBackend not enabled."));
        }
        let user = c.realm.view_login(&username)?;
        Ok(Outcome::read(Realm::api_key_body(user)))
    })
    .await
    .map(success)
}

fn auth_failed() -> ApiError {
    ApiError::new(
        401,
        ErrorCode::AuthenticationFailed,
        "Your username or password is incorrect",
    )
}

/// # `POST /fetch_api_key`
///
/// With rate limits on, a username gets 5 attempts in 30 minutes (Zulip's
/// `authenticate_by_username`); the sixth answers 429 `RATE_LIMIT_HIT` before any
/// password is checked, and a success clears the count.
pub async fn fetch_api_key(req: ApiRequest) -> ApiResponse {
    let password = req.params.peek("password");
    let username = req.params.peek("username");
    let state = req.state.clone();
    let realm_url = req.server_url();
    // No account has a longer address (Zulip's `EmailField`, 254): such a username
    // is refused as any unknown one, before it is counted or looked up.
    if username
        .as_ref()
        .is_some_and(|u| u.len() > crate::realm::users::MAX_EMAIL_LENGTH)
        && password.is_some()
    {
        return Err(auth_failed());
    }
    if let (Some(logins), Some(username), Some(_)) =
        (state.rate_limits.logins(), &username, &password)
    {
        logins
            .attempt(&realm_url, username, std::time::Instant::now())
            .map_err(ApiError::rate_limited)?;
    }
    let found = req.read_private(CallOpts::ANONYMOUS, |c| {
        let username = c.params.str("username")?;
        c.params.str("password")?;
        let user = c
            .realm
            .user_by_delivery_email(&username)
            .ok_or_else(auth_failed)?;
        if !user.is_active {
            return Err(ApiError::new(
                401,
                ErrorCode::UserDeactivated,
                "Account is deactivated",
            ));
        }
        let mut out = Outcome::read(Realm::api_key_body(user));
        out.private = Some(user.password_hash.clone().ok_or_else(auth_failed)?);
        Ok(out)
    });
    let password = password.unwrap_or_default();
    let (body, hash) = match found {
        Ok(found) => found,
        // An unknown, deactivated or password-less user costs what a wrong password
        // costs, so timing does not tell which accounts exist.
        Err(e) if e.status == 401 => {
            crate::passwords::verify(password, None).await?;
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    if crate::passwords::verify(password, hash).await? {
        if let (Some(logins), Some(username)) = (state.rate_limits.logins(), &username) {
            logins.succeeded(&realm_url, username);
        }
        Ok(success(body))
    } else {
        Err(auth_failed())
    }
}

/// hearth's icon (128 px PNG): a realm's icon until it has its own.
const ICON: &[u8] = include_bytes!("static/hearth-icon-128.png");

/// # `GET /static/images/logo/zulip-icon-128x128.png`
///
/// Also `GET /favicon.ico`. The icon `realm_icon` and `realm_icon_url` name (at
/// Zulip's path for its default icon, which clients ask for), cached for a day.
pub async fn icon() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("image/png")
        .insert_header(("Cache-Control", "public, max-age=86400"))
        .body(ICON)
}

/// # `GET /health`
///
/// Liveness, as Zulip's `/health` path: the server answers. No authentication, no
/// rate limit; it reads nothing of any realm.
pub async fn health() -> HttpResponse {
    success(Map::new())
}

/// # `GET /health/ready`
///
/// Readiness: whether writes can be made durable and messages read. After a storage
/// fault (see `storage::wal`) writes are refused until the store recovers, and
/// this answers 500 `SERVER_NOT_READY`, as Zulip's health check does when its database
/// cannot be queried; so it does when the message database failed (see
/// `storage::messages`). While that database is still opening it answers success:
/// message reads then wait for it rather than fail.
pub async fn ready(state: web::Data<AppState>) -> ApiResponse {
    state.health.writable().map_err(|why| {
        ApiError::new(
            500,
            ErrorCode::ServerNotReady,
            format!("Cannot write to storage: {why}"),
        )
    })?;
    if let Some(why) = state.health.messages_failed() {
        return Err(ApiError::new(
            500,
            ErrorCode::ServerNotReady,
            format!("Cannot read messages: {why}"),
        ));
    }
    Ok(success(Map::new()))
}

/// # `GET /static/generated/emoji/emoji_api.json`
///
/// The Unicode emoji names `server_emoji_data_url` names: public, the same for every
/// realm, cacheable (it changes only with hearth's own emoji table).
pub async fn emoji_data() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(crate::api::json_content_type())
        .insert_header(("Cache-Control", "public, max-age=86400"))
        .body(crate::realm::emoji::emoji_data_json())
}
