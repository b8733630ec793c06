//! What every request goes through around its handler, in one layer (`around`), in
//! this order from the outside in: the metrics count (`metrics::record_answer`), the
//! request log line (`logging::log_answer`), the web session's CSRF check and routing
//! of `/json/<path>` as `/api/v1/<path>` (`api::session::json_gate`), the rate limit
//! (`limits::count`), gzip for
//! large answers (`compress::gzip_answer`) and the JSON error body of actix-web's own
//! refusals (`errors::json_body`); and the checks made before a body is read
//! (`limits::check_before_body`). The `/metrics` endpoint of the metrics listener is
//! here too (`metrics::metrics`).
//!
//! They were five middlewares, each a layer of its own: a boxed future, a service
//! call and a response conversion per request each. As steps of one layer they do
//! the same work in the same order (`benches/RESULTS.md` §27 measures the difference).
//!
//! The state these read is below HTTP: the counters in `crate::metrics`, the buckets in
//! `crate::limits`, the log set-up in `crate::logging`.

use std::time::Instant;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, Error};

use crate::api::AppState;

pub mod compress;
pub mod errors;
pub mod limits;
pub mod logging;
pub mod metrics;

/// Middleware: the steps above around the handler. A request over its rate limit is
/// answered 429 without reaching the handler (nor gzip and the JSON error body, which
/// its answer does not need); every answer is logged as `--access-log` asks and
/// counted. An error the handler did not turn into a response passes through
/// untouched, as it did through each middleware.
pub async fn around(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let start = Instant::now();
    let method = req.method().clone();
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let state = state.as_ref().map(|data| data.get_ref());
    let log = logging::wanted(state);
    // A `/json` write that fails the CSRF check is refused before anything counts it.
    let gate = crate::api::session::json_gate(&mut req);
    let limit = match gate {
        Ok(()) => state.and_then(|state| limits::count(state, &req)),
        Err(_) => None,
    };
    let mut res = match (&limit, gate) {
        (_, Err(refused)) => {
            let res = actix_web::ResponseError::error_response(&refused);
            req.into_response(res)
        }
        (Some(decision), _) if !decision.allowed => limits::refusal(req, decision),
        _ => {
            let res = next.call(req).await?.map_into_boxed_body();
            compress::gzip_answer(errors::json_body(res).await).await?
        }
    };
    if let Some(decision) = &limit {
        limits::add_headers(&mut res, decision);
    }
    if let Some(policy) = log {
        logging::log_answer(policy, &res, start.elapsed());
    }
    // Timed after the log line, as when the metrics were the outermost layer.
    metrics::record_answer(&res, &method, start.elapsed());
    Ok(res)
}
