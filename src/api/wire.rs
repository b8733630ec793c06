//! The connection layer: hearth's HTTP server (actix-http under actix-server, with
//! timeouts and a connection cap) and the `Guarded` stream every connection goes
//! through, so that the requests actix-http refuses by itself (a malformed request, an
//! oversized URI or head, a head sent too slowly) are answered with Zulip's JSON error
//! body instead of an empty one.
//!
//! actix-http answers those requests from inside its dispatcher, with no hook. `Guarded`
//! runs a second copy of actix-http's own request decoder over the bytes it reads, so
//! it knows, at the same point as the dispatcher, which request failed and why; it then
//! replaces the dispatcher's bodiless error response, when that is written, with a JSON
//! one. Each refusal is logged once, at debug level (`hearth::wire`), never as an error
//! line a client could flood the log with.

use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_codec::Decoder;
use actix_http::h1::{Codec, Message};
use actix_http::{HttpService, KeepAlive, ServiceConfig};
use actix_rt::net::TcpStream;

pub use crate::config::NetLimits;
use actix_service::{fn_service, map_config, IntoServiceFactory, ServiceFactoryExt};
use actix_web::dev::AppConfig;
use actix_web::middleware::from_fn;
use actix_web::{web, App};
use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::{middleware, AppState};
use crate::error::ErrorCode;

/// Log target of refused connections and requests.
pub const WIRE_TARGET: &str = "hearth::wire";

/// Ends idle kept-alive connections when the server stops.
///
/// actix-server's graceful stop waits for every open connection to close, and an idle
/// kept-alive one only closes at its keep-alive deadline (a minute by default). Once
/// `close` is called, every connection's read side ends as if the client had closed
/// its half: a connection between requests closes at once, and one with a request
/// under way still writes its response (actix-http allows half-closed connections).
#[derive(Clone, Default)]
pub struct Closer(CancellationToken);

impl Closer {
    /// Connections read end-of-stream from now on.
    pub fn close(&self) {
        self.0.cancel();
    }
}

/// How long a stopping server waits for connections still busy after `Closer::close`.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Open files kept for everything that is not a client connection (the database,
/// uploads, the metrics listener, outgoing relay calls).
const RESERVED_FILES: u64 = 1024;

/// Raises this process's soft limit on open files to its hard limit (a presence
/// client holds a long-poll and pings on a second connection: 10 K users need 20 K
/// sockets); returns the limit now in force, if there is one.
pub fn raise_open_files_limit() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if let (Some(current), Some(maximum)) = (limit.current, limit.maximum) {
        if current < maximum {
            let raised = Rlimit {
                current: Some(maximum),
                maximum: Some(maximum),
            };
            if let Err(e) = setrlimit(Resource::Nofile, raised) {
                tracing::warn!(
                    "cannot raise the open files limit from {current} to {maximum}: {e}"
                );
            }
        }
    }
    getrlimit(Resource::Nofile).current
}

/// Raises the open files limit (`raise_open_files_limit`) and returns the largest
/// connection cap that fits under it, at most `wanted`. A cap above the limit would
/// not queue connections: the accept loop would fail with "too many open files".
pub fn fit_to_open_files(wanted: usize) -> usize {
    let Some(open_files) = raise_open_files_limit() else {
        return wanted;
    };
    let room = usize::try_from(open_files.saturating_sub(RESERVED_FILES))
        .unwrap_or(usize::MAX)
        .max(64);
    if wanted > room {
        tracing::info!(
            "at most {room} connections: the process may open {open_files} files \
             (raise `ulimit -n` for more; --max-connections asks for {wanted})"
        );
        room
    } else {
        wanted
    }
}

/// Starts the HTTP server on `listener`. Must run inside an actix `System`.
pub fn start(
    listener: TcpListener,
    state: web::Data<AppState>,
    limits: NetLimits,
    workers: Option<usize>,
    closer: Closer,
) -> io::Result<actix_server::Server> {
    let addr = listener.local_addr()?;
    let workers = workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    // actix-server caps connections per worker.
    let per_worker = limits.max_connections.div_ceil(workers).max(1);
    let server = actix_server::Server::build()
        .workers(workers)
        .disable_signals()
        .shutdown_timeout(SHUTDOWN_GRACE.as_secs())
        .max_concurrent_connections(per_worker)
        .listen("hearth", listener, move || {
            let state = state.clone();
            let closer = closer.clone();
            let app = App::new()
                .app_data(state)
                .wrap(from_fn(middleware::errors::json_errors))
                .wrap(from_fn(middleware::compress::gzip_answers))
                .wrap(from_fn(middleware::limits::rate_limit))
                .wrap(from_fn(middleware::logging::log_request))
                .wrap(from_fn(middleware::metrics::record_request))
                .configure(super::routes)
                .into_factory()
                .map_err(|e| e.error_response());
            let http = HttpService::build()
                .keep_alive(KeepAlive::Timeout(limits.keep_alive))
                .client_request_timeout(limits.request_timeout)
                .client_disconnect_timeout(limits.disconnect_timeout)
                .local_addr(addr)
                .h1(map_config(app, move |_| {
                    AppConfig::__priv_test_new(false, addr.to_string(), addr)
                }));
            fn_service(move |io: TcpStream| {
                let closing = Box::pin(closer.0.clone().cancelled_owned());
                async move {
                    let peer = io.peer_addr().ok();
                    let _ = io.set_nodelay(true);
                    Ok((Guarded::new(io, peer, closing), peer))
                }
            })
            .and_then(http)
        })?
        .run();
    Ok(server)
}

/// Why actix-http refused a request, as Zulip's error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    UriTooLong,
    HeadTooLarge,
    Malformed,
    Timeout,
}

impl Refusal {
    fn status(self) -> (u16, &'static str) {
        match self {
            Refusal::UriTooLong => (414, "URI Too Long"),
            Refusal::HeadTooLarge => (431, "Request Header Fields Too Large"),
            Refusal::Malformed => (400, "Bad Request"),
            Refusal::Timeout => (408, "Request Timeout"),
        }
    }

    fn msg(self) -> &'static str {
        match self {
            Refusal::UriTooLong => "Request URI too long",
            Refusal::HeadTooLarge => "Request header fields too large",
            Refusal::Malformed => "Malformed HTTP request",
            Refusal::Timeout => "Request timed out: the request was not sent in time",
        }
    }

    /// The whole response that replaces actix-http's bodiless one.
    fn response(self) -> Vec<u8> {
        let (status, reason) = self.status();
        let body = serde_json::json!({
            "result": "error",
            "msg": self.msg(),
            "code": ErrorCode::BadRequest.as_str(),
        })
        .to_string();
        format!(
            "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }
}

/// The shadow decoder's buffer is given back when it is empty and larger than this.
const SHADOW_KEEP_BYTES: usize = 1024;

/// Longest URI the `http` crate accepts (`http::uri`'s `MAX_LEN`).
const MAX_URI_LEN: usize = 65_534;

/// A connection's stream: what actix-http reads is decoded a second time to learn why a
/// request is refused; what it writes passes through, but for the refusal's response.
pub struct Guarded {
    io: TcpStream,
    peer: Option<SocketAddr>,
    /// The shadow decoder and what it has not consumed; `None` once a refusal is known.
    shadow: Option<(Codec, BytesMut)>,
    /// Set once the shadow decoder failed, with the status actix-http answers it with:
    /// the next bodiless error response with that status is replaced.
    refusal: Option<(Refusal, u16)>,
    /// Written by actix but not yet to the socket (only while a refusal is pending).
    held: Vec<u8>,
    /// Bytes to write to the socket before anything else.
    out: Vec<u8>,
    /// The replacement went out: anything actix writes after it is dropped.
    replaced: bool,
    /// Resolves when the server stops (`Closer::close`); reads then end.
    closing: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl Guarded {
    fn new(
        io: TcpStream,
        peer: Option<SocketAddr>,
        closing: Pin<Box<WaitForCancellationFutureOwned>>,
    ) -> Self {
        Guarded {
            io,
            peer,
            shadow: Some((Codec::new(ServiceConfig::default()), BytesMut::new())),
            refusal: None,
            held: Vec::new(),
            out: Vec::new(),
            replaced: false,
            closing,
        }
    }

    /// Feeds what actix-http just read to the shadow decoder.
    fn observe(&mut self, bytes: &[u8]) {
        let Some((codec, buf)) = self.shadow.as_mut() else {
            return;
        };
        buf.extend_from_slice(bytes);
        loop {
            match codec.decode(buf) {
                Ok(Some(Message::Item(_))) | Ok(Some(Message::Chunk(_))) => continue,
                Ok(None) => {
                    // An idle connection keeps no buffer a large request grew.
                    if buf.is_empty() && buf.capacity() > SHADOW_KEEP_BYTES {
                        *buf = BytesMut::new();
                    }
                    return;
                }
                Err(e) => {
                    // A refused head is left in the buffer.
                    let refusal = classify(&e, buf);
                    tracing::debug!(
                        target: WIRE_TARGET,
                        peer = ?self.peer,
                        error = %e,
                        "refused a malformed request"
                    );
                    self.refusal = Some(refusal);
                    self.shadow = None;
                    return;
                }
            }
        }
    }

    /// Takes what actix-http wrote: passed on, held, or replaced.
    fn take_written(&mut self, bytes: &[u8]) {
        if self.replaced {
            return;
        }
        if self.refusal.is_none() {
            // A head timeout: actix-http answers 408 on a connection where no request
            // is under way, so its response starts the write.
            if bytes.starts_with(b"HTTP/1.1 408 ") && head_is_bodiless(bytes) {
                self.refusal = Some((Refusal::Timeout, 408));
                self.shadow = None;
                tracing::debug!(target: WIRE_TARGET, peer = ?self.peer, "request head timed out");
            } else {
                self.out.extend_from_slice(bytes);
                return;
            }
        }
        self.held.extend_from_slice(bytes);
        let Some((refusal, actix_status)) = self.refusal else {
            return;
        };
        let needle = format!("HTTP/1.1 {actix_status} ");
        let Some(at) = find(&self.held, needle.as_bytes()) else {
            // Keep a possible partial status line, pass on the rest.
            let keep = self.held.len().min(needle.len());
            let pass: Vec<u8> = self.held.drain(..self.held.len() - keep).collect();
            self.out.extend_from_slice(&pass);
            return;
        };
        let Some(end) = find(&self.held[at..], b"\r\n\r\n") else {
            return;
        };
        let head = &self.held[at..at + end + 4];
        if !head_is_bodiless(head) {
            // Not the dispatcher's own response: pass it on, keep watching.
            let pass: Vec<u8> = self.held.drain(..at + end + 4).collect();
            self.out.extend_from_slice(&pass);
            return;
        }
        let before: Vec<u8> = self.held[..at].to_vec();
        self.out.extend_from_slice(&before);
        self.out.extend_from_slice(&refusal.response());
        self.held.clear();
        self.replaced = true;
    }

    /// Writes `out` to the socket.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.out.is_empty() {
            match Pin::new(&mut self.io).poll_write(cx, &self.out) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.out.drain(..n);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// Which refusal a decoder error is, from the bytes the decoder had, and the status
/// actix-http answers it with (431 for a head too large, else 400).
fn classify(e: &actix_http::error::ParseError, buffered: &[u8]) -> (Refusal, u16) {
    use actix_http::error::ParseError;
    let line_end = find(buffered, b"\r\n");
    match e {
        ParseError::TooLarge if line_end.is_none() => (Refusal::UriTooLong, 431),
        ParseError::TooLarge => (Refusal::HeadTooLarge, 431),
        ParseError::Uri(_) if line_end.unwrap_or(buffered.len()) > MAX_URI_LEN => {
            (Refusal::UriTooLong, 400)
        }
        _ => (Refusal::Malformed, 400),
    }
}

/// Whether a response head says its body is empty.
fn head_is_bodiless(head: &[u8]) -> bool {
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    head.contains("\r\ncontent-length: 0\r\n") && !head.contains("content-type:")
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

impl AsyncRead for Guarded {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let start = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        if polled.is_pending() && this.closing.as_mut().poll(cx).is_ready() {
            // The server is stopping: end of stream, nothing read.
            return Poll::Ready(Ok(()));
        }
        if let Poll::Ready(Ok(())) = polled {
            let new = &buf.filled()[start..];
            if !new.is_empty() {
                this.observe(new);
            }
        }
        polled
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.out.is_empty()
            && this.refusal.is_none()
            && !this.replaced
            && !bytes.starts_with(b"HTTP/1.1 408 ")
        {
            // No refusal under way (every answer but a refused request's): straight
            // to the socket, uncopied.
            return Pin::new(&mut this.io).poll_write(cx, bytes);
        }
        // Earlier bytes first; then take the new ones whole (they are copied).
        if let Poll::Ready(Err(e)) = this.drain(cx) {
            return Poll::Ready(Err(e));
        }
        if !this.out.is_empty() && this.out.len() >= 64 * 1024 {
            return Poll::Pending;
        }
        this.take_written(bytes);
        if let Poll::Ready(Err(e)) = this.drain(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(bytes.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.replaced && !this.held.starts_with(b"HTTP/1.") {
            // Not a response head under way: what was held goes out as it is.
            let held = std::mem::take(&mut this.held);
            this.out.extend_from_slice(&held);
        }
        match this.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.io).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.held.is_empty() && !this.replaced {
            let held = std::mem::take(&mut this.held);
            this.out.extend_from_slice(&held);
        }
        match this.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.io).poll_shutdown(cx),
            other => other,
        }
    }
}
