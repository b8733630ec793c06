//! The web client (`web/`), built by `build.rs` and embedded in the binary: its page at
//! each realm's root, its assets under `/static/app/`.
//!
//! - `GET /` answers the client's `index.html` to a browser with a valid session (not
//!   cached: it names the current assets), else redirects to the login page;
//! - the assets have content-hashed names (Vite's), so they are cached for a year as
//!   immutable, and go out precompressed (brotli or gzip, written by the build) to a
//!   browser that takes them;
//! - the page's `Content-Security-Policy` allows scripts, styles, fonts and requests
//!   of this origin only: no inline script, no `eval`, no framing.

use actix_web::http::header::{
    self, AcceptEncoding, Encoding, Header, HeaderValue, ACCEPT_ENCODING,
};
use actix_web::{web, HttpRequest, HttpResponse};
use rust_embed::Embed;

use super::{origin, session, AppState};

/// The client's build output (`index.html`, `assets/`).
#[derive(Embed)]
#[folder = "$OUT_DIR/web"]
struct Client;

/// The page's policy: everything from this origin only, images also from `data:`,
/// `blob:` and https (avatars from gravatar, images in messages' previews).
pub const CLIENT_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data: blob: https:; media-src 'self' blob:; font-src 'self'; \
     connect-src 'self'; frame-ancestors 'none'; object-src 'none'; base-uri 'none'; \
     form-action 'self'";

/// The encodings the assets come in, best first, and their file suffixes.
const ENCODINGS: [(&str, &str); 2] = [("br", ".br"), ("gzip", ".gz")];

/// # `GET /`
///
/// A load renews the session when it is due (two weeks from the last load, renewed at
/// most once a day).
pub async fn home(req: HttpRequest) -> HttpResponse {
    let Some(state) = req.app_data::<web::Data<AppState>>() else {
        return not_found();
    };
    let Some(handle) = state.registry.for_host(&origin::host(&req)) else {
        return not_found();
    };
    let logged_in = {
        let version = handle.hub.current();
        session::session_user(&req, &handle, &version).is_some()
    };
    if !logged_in {
        return HttpResponse::Found()
            .insert_header((header::LOCATION, "/login/?next=/"))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish();
    }
    let Some(page) = Client::get("index.html") else {
        return not_found();
    };
    let mut res = HttpResponse::Ok();
    if let Some(cookie) = session::renew(&req, &handle).await {
        res.cookie(cookie);
    }
    res.content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((header::CONTENT_SECURITY_POLICY, CLIENT_CSP))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "same-origin"))
        .body(page.data.into_owned())
}

/// # `GET /static/app/{file}`
pub async fn asset(req: HttpRequest, file: web::Path<String>) -> HttpResponse {
    let name = file.into_inner();
    let Some(plain) = Client::get(&name) else {
        return not_found();
    };
    let content_type = mime_guess::from_path(&name)
        .first_raw()
        .unwrap_or("application/octet-stream");
    let immutable = name.starts_with("assets/");
    let mut res = HttpResponse::Ok();
    res.content_type(content_type)
        .insert_header((
            header::CACHE_CONTROL,
            if immutable {
                "public, max-age=31536000, immutable"
            } else {
                "no-cache"
            },
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::VARY, "Accept-Encoding"));
    for (encoding, suffix) in ENCODINGS {
        if !accepts(&req, encoding) {
            continue;
        }
        if let Some(encoded) = Client::get(&format!("{name}{suffix}")) {
            return res
                .insert_header((header::CONTENT_ENCODING, HeaderValue::from_static(encoding)))
                .body(encoded.data.into_owned());
        }
    }
    res.body(plain.data.into_owned())
}

/// Whether the request's `Accept-Encoding` takes `encoding` (with a non-zero weight).
fn accepts(req: &HttpRequest, encoding: &str) -> bool {
    if !req.headers().contains_key(ACCEPT_ENCODING) {
        return false;
    }
    let wanted = match encoding {
        "br" => Encoding::brotli(),
        _ => Encoding::gzip(),
    };
    AcceptEncoding::parse(req)
        .ok()
        .and_then(|a| a.negotiate([wanted.clone(), Encoding::identity()].iter()))
        == Some(wanted)
}

fn not_found() -> HttpResponse {
    actix_web::ResponseError::error_response(&super::error::not_found_error())
}
