//! The log: subscriber set-up for the `hearth` command, and one line per HTTP request.
//!
//! The request line carries the method, the route pattern (never the query string, a
//! path parameter, a body or a key), the status, the time taken, the realm and, once
//! the realm actor has authenticated the caller, the user id.

use std::io::IsTerminal;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, Error, HttpMessage};
use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

use crate::api::{auth, AppState};

/// Target of the per-request lines (`RUST_LOG=hearth::http=warn` silences them).
pub const HTTP_TARGET: &str = "hearth::http";
/// The filter when `RUST_LOG` is unset: start-up, warnings and one line per request.
/// actix-http's dispatcher logs an ERROR line for every malformed request or dropped
/// connection, which any client could flood the log with: those are off (hearth logs
/// each refusal at debug level on `hearth::wire`).
pub const DEFAULT_FILTER: &str = "info,actix_http::h1::dispatcher=off";

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the global subscriber: `RUST_LOG` (else `DEFAULT_FILTER`), on stderr,
/// coloured only when stderr is a terminal and `NO_COLOR` is unset or empty.
pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let ansi = std::io::stderr().is_terminal() && !no_color;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    // Already set (a second call in one process): keep the first.
    drop(result);
}

/// The caller's user id, filled in by the realm actor once it has authenticated the
/// request's credentials; the request log reads it. Shared by the clones of one
/// request's credentials.
#[derive(Debug, Clone, Default)]
pub struct LoggedUser(Arc<OnceLock<u64>>);

impl LoggedUser {
    /// Records the authenticated user (the first call wins).
    pub fn set(&self, user_id: u64) {
        let _ = self.0.set(user_id);
    }

    pub fn get(&self) -> Option<u64> {
        self.0.get().copied()
    }
}

/// Middleware: one `info` line per request on `hearth::http`, written when the
/// response is ready (a long-poll is logged when it answers).
pub async fn log_request(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    if !tracing::enabled!(target: HTTP_TARGET, tracing::Level::INFO) {
        return next.call(req).await;
    }
    let start = Instant::now();
    let method = req.method().clone();
    let res = next.call(req).await?;
    let request = res.request();
    // The route pattern (`/api/v1/users/{user}`), never the path's values; an unknown
    // path has none and is logged as sent, without its query string.
    let path = request
        .match_pattern()
        .unwrap_or_else(|| request.path().to_owned());
    let realm = request
        .app_data::<web::Data<AppState>>()
        .and_then(|state| state.registry.subdomain_for_host(&auth::host(request)));
    let user_id = request
        .extensions()
        .get::<LoggedUser>()
        .and_then(LoggedUser::get);
    // Tenths of a millisecond are enough, and keep the line short.
    let ms = (start.elapsed().as_micros() / 100) as f64 / 10.0;
    tracing::info!(
        target: HTTP_TARGET,
        method = %method,
        path = %path,
        status = res.status().as_u16(),
        ms,
        realm = realm.as_deref(),
        user_id,
        "request"
    );
    Ok(res)
}
