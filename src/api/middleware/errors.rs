//! Zulip's JSON error body for the refusals actix-web answers by itself.

use actix_web::body::BoxBody;
use actix_web::dev::ServiceResponse;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{HttpResponse, ResponseError};

use crate::error::{ApiError, ErrorCode};

/// An error answer without a JSON body (actix-web's own: an extractor's, a payload's,
/// a routing error) gets Zulip's `result`/`msg`/`code` body, with its status kept.
/// Handlers' and extractors' errors arrive here as responses.
pub async fn json_body(res: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    let status = res.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return res;
    }
    // The tus protocol's errors are tusd's plain text, which its clients read.
    if res.headers().contains_key("tus-resumable") {
        return res;
    }
    // actix's own refusals are bodiless or plain text; anything else (JSON, or the
    // HTML pages Zulip answers file downloads with) is a handler's deliberate answer.
    let deliberate = res
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| !v.starts_with("text/plain"));
    if deliberate {
        return res;
    }
    let (request, response) = res.into_parts();
    let text = actix_web::body::to_bytes_limited(response.into_body(), 4096)
        .await
        .ok()
        .and_then(Result::ok)
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let code = if status.is_server_error() {
        ErrorCode::InternalServerError
    } else {
        ErrorCode::BadRequest
    };
    let msg = match status.as_u16() {
        413 => "Request body too large".to_owned(),
        415 => "Unsupported media type".to_owned(),
        _ if !text.is_empty() && status.is_client_error() => text,
        _ => status
            .canonical_reason()
            .unwrap_or("Request refused")
            .to_owned(),
    };
    let error = ApiError::new(status.as_u16(), code, msg);
    let response: HttpResponse = error.error_response();
    ServiceResponse::new(request, response)
}
