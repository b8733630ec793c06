//! One log line per HTTP request. It carries the method, the route pattern (never the
//! query string, a path parameter, a body or a key), the status, the time taken, the
//! realm and, once the caller is authenticated, the user id.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, Error, HttpMessage};

use crate::api::{auth, AppState};

/// Target of the per-request lines (`RUST_LOG=hearth::http=warn` silences them).
pub const HTTP_TARGET: &str = "hearth::http";

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
