//! What every request goes through around its handler, outermost first: the metrics
//! count (`metrics::record_request`), the request log line (`logging::log_request`),
//! the rate limit (`limits::rate_limit`), gzip for large answers
//! (`compress::gzip_answers`) and the JSON error body of actix-web's own refusals
//! (`errors::json_errors`); and the checks made before a body is read
//! (`limits::check_before_body`). The `/metrics` endpoint of the metrics listener is
//! here too (`metrics::metrics`).
//!
//! The state these read is below HTTP: the counters in `crate::metrics`, the buckets in
//! `crate::limits`, the log set-up in `crate::logging`.

pub mod compress;
pub mod errors;
pub mod limits;
pub mod logging;
pub mod metrics;
