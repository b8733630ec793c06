//! `ApiError` -> HTTP response: Zulip's JSON error body, status and challenge header.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use crate::error::{ApiError, ErrorCode};

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        let mut resp = HttpResponse::build(self.status_code());
        if let Some(challenge) = self.challenge {
            resp.insert_header(("WWW-Authenticate", challenge));
        }
        if self.code == ErrorCode::RateLimitHit || self.status == 503 {
            if let Some(secs) = self.extra.get("retry-after").and_then(|v| v.as_f64()) {
                // The header takes whole seconds.
                resp.insert_header(("Retry-After", (secs.ceil() as u64).to_string()));
            }
        }
        resp.json(self.body())
    }
}

/// The JSON 404 of an unknown path (Zulip answers Django's HTML page; clients want JSON).
pub fn not_found_error() -> ApiError {
    ApiError::new(404, crate::error::ErrorCode::NotFound, "Not Found")
}

/// # Any unknown path
pub async fn not_found() -> HttpResponse {
    not_found_error().error_response()
}

/// # `/json/*`: Zulip's web-session API, where Basic credentials are not accepted.
pub async fn session_required() -> HttpResponse {
    let mut e = ApiError::not_logged_in();
    e.challenge = Some("Session realm=\"zulip\"");
    e.error_response()
}

/// # A known path with another method: 405, as Zulip's `json_method_not_allowed`, with
/// the `code` every Zulip error body carries (`BAD_REQUEST`, its `JsonableError` default).
pub async fn method_not_allowed(allowed: &'static [&'static str]) -> HttpResponse {
    let allowed: Vec<String> = allowed.iter().map(|m| m.to_uppercase()).collect();
    let mut resp = ApiError::new(
        405,
        crate::error::ErrorCode::BadRequest,
        "Method Not Allowed",
    )
    .with("allowed_methods", allowed.clone())
    .error_response();
    if let Ok(value) = actix_web::http::header::HeaderValue::from_str(&allowed.join(", ")) {
        resp.headers_mut()
            .insert(actix_web::http::header::ALLOW, value);
    }
    resp
}
