//! gzip for large answers, as Zulip's nginx serves them (`gzip on`, `gzip_types
//! application/json text/plain ...`, `gzip_vary on`, `gzip_proxied any`): a JSON or
//! text answer of at least `MIN_BYTES` goes out gzip-compressed to a client whose
//! `Accept-Encoding` takes gzip, and says `Vary: Accept-Encoding` either way. Answers
//! that share their body between many clients (presence listings) come with their
//! compressed copy from the handler, already encoded, and pass through untouched.

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::ServiceResponse;
use actix_web::http::header::{
    AcceptEncoding, Encoding, Header, HeaderMap, HeaderValue, ACCEPT_ENCODING, CONTENT_ENCODING,
    CONTENT_TYPE, VARY,
};
use actix_web::http::StatusCode;
use actix_web::{web, Error, HttpRequest};

use crate::gzip;

/// Smaller bodies go out as they are: a few hundred bytes saved do not pay for the
/// compression (nginx's default `gzip_min_length` is 20 bytes; an API answer under a
/// kilobyte is one TCP segment either way).
pub const MIN_BYTES: u64 = 1024;
/// Bodies up to this size are compressed on the HTTP worker; larger ones on the
/// blocking pool, so a worker keeps serving small requests meanwhile.
const INLINE_BYTES: usize = 64 * 1024;

/// Whether the request's `Accept-Encoding` prefers gzip to an unencoded answer.
pub fn accepts_gzip(req: &HttpRequest) -> bool {
    if !req.headers().contains_key(ACCEPT_ENCODING) {
        return false;
    }
    AcceptEncoding::parse(req)
        .ok()
        .and_then(|a| a.negotiate([Encoding::gzip(), Encoding::identity()].iter()))
        == Some(Encoding::gzip())
}

/// Whether an answer's body is one gzip would be applied to (JSON or text, large
/// enough, not encoded yet).
pub fn compressible(status: StatusCode, headers: &HeaderMap, size: BodySize) -> bool {
    let BodySize::Sized(len) = size else {
        return false;
    };
    len >= MIN_BYTES
        && !matches!(
            status,
            StatusCode::NO_CONTENT | StatusCode::PARTIAL_CONTENT | StatusCode::NOT_MODIFIED
        )
        && !headers.contains_key(CONTENT_ENCODING)
        && headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("application/json") || t.starts_with("text/"))
}

/// Adds `Vary: Accept-Encoding` (the answer depends on it), unless it is there.
pub fn vary(headers: &mut HeaderMap) {
    let there = headers.get_all(VARY).any(|v| {
        v.to_str()
            .is_ok_and(|v| v.to_ascii_lowercase().contains("accept-encoding"))
    });
    if !there {
        headers.append(VARY, HeaderValue::from_static("accept-encoding"));
    }
}

/// Compresses a large JSON or text answer for a client that takes gzip.
pub async fn gzip_answer(
    mut res: ServiceResponse<BoxBody>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    if !compressible(res.status(), res.headers(), res.response().body().size()) {
        return Ok(res);
    }
    vary(res.headers_mut());
    if res.headers().contains_key(CONTENT_ENCODING) {
        return Ok(res);
    }
    if !accepts_gzip(res.request()) {
        return Ok(res);
    }
    let (request, response) = res.into_parts();
    let (mut response, body) = response.into_parts();
    let body = match body.try_into_bytes() {
        Ok(bytes) => {
            let compressed = if bytes.len() <= INLINE_BYTES {
                gzip::compress(&bytes, gzip::per_answer_level())
            } else {
                web::block(move || gzip::compress(&bytes, gzip::per_answer_level())).await?
            };
            response
                .headers_mut()
                .insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            BoxBody::new(compressed)
        }
        // A streamed body goes out as it is.
        Err(body) => body,
    };
    Ok(ServiceResponse::new(request, response.set_body(body)))
}
