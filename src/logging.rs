//! The log's set-up for the `hearth` command: the filter, the format, stderr. The one
//! line per HTTP request is written by `api::middleware::logging`.

use std::io::IsTerminal;

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

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
