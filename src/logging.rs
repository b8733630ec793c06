//! The log's set-up for the `hearth` command: the filter, the format, stderr. The one
//! line per HTTP request is written by `api::middleware::logging`.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

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
        .with_writer(LogWriter::lock)
        .with_ansi(ansi);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    // Already set (a second call in one process): keep the first.
    drop(result);
}

/// Set once the command's last line is written: log lines after it are dropped.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `line` on stderr as the command's last line: a log line from a thread still
/// running (a database opening in the background) never comes after it.
pub fn last_line(line: &str) {
    let mut err = std::io::stderr().lock();
    CLOSED.store(true, Ordering::SeqCst);
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

/// stderr, locked for one log line and checked against `CLOSED` under that lock (so a
/// line is either written whole before `last_line` or not at all).
struct LogWriter(std::io::StderrLock<'static>);

impl LogWriter {
    fn lock() -> LogWriter {
        LogWriter(std::io::stderr().lock())
    }
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if CLOSED.load(Ordering::SeqCst) {
            return Ok(buf.len());
        }
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
