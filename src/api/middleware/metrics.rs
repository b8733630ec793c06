//! The HTTP side of the metrics (`crate::metrics`): the step that counts and times
//! every request, and `GET /metrics`, served on a listener of its own
//! (`--metrics-bind`, loopback by default), never on the API port.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use actix_web::dev::ServiceResponse;
use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpResponse};
use prometheus::{Histogram, IntCounter};

use crate::api::AppState;
use crate::metrics::{HTTP_REQUESTS, HTTP_SECONDS};

/// How many paths each HTTP worker keeps the metrics of (`record_answer`).
const KEPT_PATHS: usize = 1024;
/// How many method and status pairs it keeps per path: actix-http takes any token as
/// a method, and each answers 405 under the path's own pattern.
const KEPT_PER_PATH: usize = 16;

/// A path's counters, by method and status.
type PathMetrics = Vec<(Method, StatusCode, IntCounter, Histogram)>;

thread_local! {
    /// The counters of the paths that are their own route pattern (`/api/v1/users/me`,
    /// no parameter), on this worker: finding a request's pattern walks the route
    /// table again, and finding its counters hashes three labels under a lock, where
    /// this is one lookup by path. Bounded (`KEPT_PATHS`, `KEPT_PER_PATH`); a path with
    /// parameters is never kept.
    static KEPT: RefCell<HashMap<Box<str>, PathMetrics, foldhash::fast::RandomState>> =
        RefCell::new(HashMap::default());
}

/// The label of a request's method: its name when it is one of HTTP's standard
/// methods, else `other`. actix-http takes any token as a method, and a label is kept
/// for good (a counter and a histogram per value): one taken from a request as sent
/// would let any client grow the memory and `/metrics` without bound.
pub fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PATCH => "PATCH",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

/// Counts an answered request by route pattern and status, and times it.
pub fn record_answer<B>(res: &ServiceResponse<B>, method: &Method, took: Duration) {
    let request = res.request();
    let status = res.status();
    let path = request.path();
    let secs = took.as_secs_f64();
    let counted = KEPT.with(|kept| {
        let kept = kept.borrow();
        let found = kept
            .get(path)?
            .iter()
            .find(|(m, s, ..)| m == method && *s == status);
        found.map(|(_, _, count, time)| {
            count.inc();
            time.observe(secs);
        })
    });
    if counted.is_some() {
        return;
    }
    // The pattern only: an unknown path is not a label (it could hold anything).
    let route = request.match_pattern();
    let label = route.as_deref().unwrap_or("unmatched");
    let method_label = method_label(method);
    let count = HTTP_REQUESTS.with_label_values(&[label, method_label, status.as_str()]);
    let time = HTTP_SECONDS.with_label_values(&[label, method_label]);
    count.inc();
    time.observe(secs);
    if route.as_deref() == Some(path) && method_label != "other" {
        KEPT.with(|kept| {
            let mut kept = kept.borrow_mut();
            if kept.len() < KEPT_PATHS || kept.contains_key(path) {
                let pairs = kept.entry(path.into()).or_default();
                if pairs.len() < KEPT_PER_PATH {
                    pairs.push((method.clone(), status, count, time));
                }
            }
        });
    }
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
