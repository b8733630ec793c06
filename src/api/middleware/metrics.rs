//! The HTTP side of the metrics (`crate::metrics`): the middleware that counts and times
//! every request, and `GET /metrics`, served on a listener of its own
//! (`--metrics-bind`, loopback by default), never on the API port.

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, Error, HttpResponse};

use crate::api::AppState;
use crate::metrics::{HTTP_REQUESTS, HTTP_SECONDS};

/// Middleware: counts every request by route pattern and status, and times it.
pub async fn record_request(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let start = Instant::now();
    let method = req.method().clone();
    let res = next.call(req).await?;
    // The pattern only: an unknown path is not a label (it could hold anything).
    let route = res
        .request()
        .match_pattern()
        .unwrap_or_else(|| "unmatched".to_owned());
    let status = res.status();
    HTTP_REQUESTS
        .with_label_values(&[route.as_str(), method.as_str(), status.as_str()])
        .inc();
    HTTP_SECONDS
        .with_label_values(&[route.as_str(), method.as_str()])
        .observe(start.elapsed().as_secs_f64());
    Ok(res)
}

/// Every metric in the text format, with the state gauges read now.
pub fn render(state: &AppState) -> String {
    for realm in state.registry.all() {
        let subdomain = realm.hub.current().settings.subdomain.clone();
        crate::metrics::realm_gauges(
            &subdomain,
            realm.hub.queue_count(),
            realm.hub.parked_polls(),
        );
    }
    crate::metrics::encode(state.health.failed())
}

/// `GET /metrics` on the metrics listener.
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(render(&state))
}
