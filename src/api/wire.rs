//! The connection layer: hearth's HTTP server (actix-http under actix-server, with
//! timeouts and a connection cap) and the `Guarded` stream every connection goes
//! through, so that the requests actix-http refuses by itself (a malformed request, an
//! oversized URI or head, a head sent too slowly) are answered with Zulip's JSON error
//! body instead of an empty one.
//!
//! actix-http answers those requests from inside its dispatcher, with no hook. `Guarded`
//! follows the requests it reads: while each is one actix-http's decoder accepts for
//! sure (`screen`: the decoder's own `httparse` parse and its checks, no copy), it only
//! frames them (`Light`); from the first request it is not sure of, it runs a second
//! copy of actix-http's own request decoder over the bytes, so it knows, at the same
//! point as the dispatcher, which request failed and why; it then replaces the
//! dispatcher's bodiless error response, when that is written, with a JSON one. Each refusal is logged once, at debug level (`hearth::wire`), never as an error
//! line a client could flood the log with.

use std::future::Future;
use std::io;
use std::mem::MaybeUninit;
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
                .wrap(from_fn(middleware::around))
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

/// How a connection's requests are followed.
enum Shadow {
    /// Framed cheaply (`Light`): every request so far is one actix-http accepts.
    Light(Light),
    /// actix-http's own decoder (`Codec`) and what it has not consumed, from the first
    /// request `Light` was not sure of, on (a connection stays here).
    Full(Codec, BytesMut),
}

/// The part of a head `Light` waits for before it leaves the head to the decoder (far
/// below actix-http's limit, `MAX_BUFFER_SIZE`, 128 KiB: the decoder sees every byte
/// of a head that large).
const LIGHT_HEAD_BYTES: usize = 16 * 1024;
/// actix-http's limit on the headers of a request (`MAX_HEADERS`).
const MAX_HEADERS: usize = 96;

/// A request framer that costs a parse of each head with `httparse` (what actix-http's
/// decoder runs first) and no copy: a request whose head passes `screen` is one
/// actix-http's decoder accepts, so only its length matters (the head's, then the
/// `Content-Length` body's). The first request `screen` is not sure of, with
/// everything after it, goes to the decoder (`Shadow::Full`), which then tells a
/// refusal as before; so does a head longer than `LIGHT_HEAD_BYTES`.
#[derive(Default)]
struct Light {
    /// A head begun in an earlier read.
    head: BytesMut,
    /// Bytes of the current request's body still to come.
    body_left: u64,
}

/// What `screen` says of the bytes at the start of a head.
#[derive(Debug, PartialEq, Eq)]
enum Screened {
    /// A whole head actix-http accepts: its length, and its body's.
    Accepted { head: usize, body: u64 },
    /// Not a whole head yet, nothing wrong so far.
    Partial,
    /// Anything else: the decoder decides.
    Unsure,
}

impl Light {
    /// Follows `bytes`; returns the bytes from the start of the request it is not sure
    /// of, if it met one (the caller's decoder takes over from there).
    fn feed(&mut self, mut bytes: &[u8]) -> Option<BytesMut> {
        loop {
            if self.body_left > 0 {
                let n = usize::try_from(self.body_left)
                    .unwrap_or(usize::MAX)
                    .min(bytes.len());
                self.body_left -= n as u64;
                bytes = &bytes[n..];
            }
            if bytes.is_empty() {
                return None;
            }
            let continued = !self.head.is_empty();
            if continued {
                self.head.extend_from_slice(bytes);
            }
            let verdict = screen(if continued { &self.head } else { bytes });
            match verdict {
                Screened::Accepted { head, body } => {
                    if continued {
                        // What of `bytes` follows the head.
                        let after = self.head.len() - head;
                        bytes = &bytes[bytes.len() - after..];
                        self.head = BytesMut::new();
                    } else {
                        bytes = &bytes[head..];
                    }
                    self.body_left = body;
                }
                Screened::Partial => {
                    if !continued {
                        self.head.extend_from_slice(bytes);
                    }
                    if self.head.len() > LIGHT_HEAD_BYTES {
                        return Some(std::mem::take(&mut self.head));
                    }
                    return None;
                }
                Screened::Unsure => {
                    return Some(if continued {
                        std::mem::take(&mut self.head)
                    } else {
                        BytesMut::from(bytes)
                    });
                }
            }
        }
    }
}

/// Whether `buf` starts with a request head actix-http's decoder accepts for sure
/// (`h1::decoder`: the same `httparse` parse, then its checks of the method, the URI,
/// `Content-Length`, `Transfer-Encoding`, `Host` and the HTTP version), and how long
/// it and its body are. Anything unusual is `Unsure`: HTTP/1.0, a method other than
/// the usual ones, `Transfer-Encoding`, `Upgrade`, a second `Host` or
/// `Content-Length`, a length that is not plain digits, a URI the `http` crate
/// refuses or that is not an absolute path.
fn screen(buf: &[u8]) -> Screened {
    // Uninitialized, as actix-http's decoder keeps them: 96 headers are 3 KiB to fill
    // for every request otherwise.
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let head = match req.parse_with_uninit_headers(buf, &mut headers) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Screened::Partial,
        Err(_) => return Screened::Unsure,
    };
    let usual_method = matches!(
        req.method,
        Some("GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS")
    );
    if req.version != Some(1) || !usual_method || !req.path.is_some_and(accepted_uri) {
        return Screened::Unsure;
    }
    let (mut host, mut length) = (false, None);
    for h in req.headers.iter() {
        let name = h.name;
        // By length first: most headers are none of these, and are passed over by it.
        if !matches!(name.len(), 4 | 7 | 10 | 14 | 17) {
            continue;
        }
        if name.eq_ignore_ascii_case("content-length") {
            let digits = h.value.trim_ascii();
            let plain =
                !digits.is_empty() && digits.len() <= 18 && digits.iter().all(u8::is_ascii_digit);
            if length.is_some() || !plain {
                return Screened::Unsure;
            }
            length = Some(
                digits
                    .iter()
                    .fold(0u64, |n, d| n * 10 + u64::from(d - b'0')),
            );
        } else if name.eq_ignore_ascii_case("host") {
            if host {
                return Screened::Unsure;
            }
            host = true;
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            || name.eq_ignore_ascii_case("upgrade")
            || (name.eq_ignore_ascii_case("connection")
                && h.value
                    .windows(7)
                    .any(|w| w.eq_ignore_ascii_case(b"upgrade")))
        {
            return Screened::Unsure;
        }
    }
    if !host {
        // HTTP/1.1 without a Host: refused.
        return Screened::Unsure;
    }
    Screened::Accepted {
        head,
        body: length.unwrap_or(0),
    }
}

/// Whether the `http` crate takes this request target as a URI for sure: an absolute
/// path (and query) of characters every part of a URI allows, not too long.
fn plain_uri(target: &str) -> bool {
    target.starts_with('/')
        && target.len() < MAX_URI_LEN
        && target.bytes().all(|b| URI_BYTES[usize::from(b)])
}

/// The bytes `plain_uri` takes: letters, digits and `-._~!$&'()*+,;=:@/?%`.
static URI_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric();
        b += 1;
    }
    let extra = b"-._~!$&'()*+,;=:@/?%";
    let mut i = 0;
    while i < extra.len() {
        table[extra[i] as usize] = true;
        i += 1;
    }
    table
};

/// Whether actix-http takes this request target as its URI: `plain_uri`, else the
/// `http` crate's own parse (what the decoder runs), for a target starting with `/`.
fn accepted_uri(target: &str) -> bool {
    plain_uri(target) || (target.starts_with('/') && actix_web::http::Uri::try_from(target).is_ok())
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
    /// What follows the requests read so far; `None` once a refusal is known.
    shadow: Option<Shadow>,
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
            shadow: Some(Shadow::Light(Light::default())),
            refusal: None,
            held: Vec::new(),
            out: Vec::new(),
            replaced: false,
            closing,
        }
    }

    /// Follows what actix-http just read: framed by `Light` while every request is one
    /// actix-http accepts, else decoded by the shadow decoder.
    fn observe(&mut self, bytes: &[u8]) {
        let escalated = match self.shadow.as_mut() {
            None => return,
            Some(Shadow::Full(..)) => None,
            Some(Shadow::Light(light)) => match light.feed(bytes) {
                None => return,
                Some(from_boundary) => Some(from_boundary),
            },
        };
        match escalated {
            // From the start of the request `Light` is not sure of, on.
            Some(from_boundary) => {
                self.shadow = Some(Shadow::Full(
                    Codec::new(ServiceConfig::default()),
                    from_boundary,
                ));
                self.decode(&[]);
            }
            None => self.decode(bytes),
        }
    }

    /// Feeds bytes to the shadow decoder.
    fn decode(&mut self, bytes: &[u8]) {
        let Some(Shadow::Full(codec, buf)) = self.shadow.as_mut() else {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// actix-http's decoder on `buf`: the head's length when it accepts a head there.
    fn actix_accepts(buf: &[u8]) -> Option<usize> {
        let mut codec = Codec::new(ServiceConfig::default());
        let mut bytes = BytesMut::from(buf);
        match codec.decode(&mut bytes) {
            Ok(Some(Message::Item(_))) => Some(buf.len() - bytes.len()),
            _ => None,
        }
    }

    /// Requests as hearth's clients send them.
    const PLAIN: usize = 8;

    fn heads() -> Vec<Vec<u8>> {
        let long = format!("/api/v1/{}", "a".repeat(70_000));
        let many: String = (0..100).map(|i| format!("x-h{i}: v\r\n")).collect();
        let plain: &[&str] = &[
            "GET /api/v1/users/me HTTP/1.1\r\nHost: a\r\nAuthorization: Basic eDp5\r\n\r\n",
            "\r\nGET /api/v1/users/me HTTP/1.1\r\nHost: a\r\n\r\n",
            "POST /api/v1/users/me/presence HTTP/1.1\r\nHost: a\r\nContent-Length: 28\r\n\r\nstatus=active&ping_only=true",
            "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length:  0 \r\n\r\n",
            "DELETE /x?a=1&b=%20 HTTP/1.1\r\nhost: a\r\nExpect: 100-continue\r\n\r\n",
            "GET /x?narrow=[{%22a%22:1}] HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET /x HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close\r\n\r\n",
            "GET /x HTTP/1.1\r\nHost: a\r\nX: caf\u{e9}\r\n\r\n",
        ];
        let odd: Vec<String> = vec![
            "GET /x HTTP/1.0\r\n\r\n".into(),
            "POST /x HTTP/1.0\r\n\r\n".into(),
            "GET /x HTTP/1.1\r\n\r\n".into(),
            "GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n".into(),
            "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx".into(),
            "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\nx".into(),
            "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\nx".into(),
            "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n".into(),
            "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".into(),
            "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n".into(),
            "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n".into(),
            "GET /x HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n".into(),
            "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n".into(),
            "BREW /x HTTP/1.1\r\nHost: a\r\n\r\n".into(),
            "GET /x{y} HTTP/1.1\r\nHost: a\r\n\r\n".into(),
            "GET /x\"y HTTP/1.1\r\nHost: a\r\n\r\n".into(),
            "GET /x#y HTTP/1.1\r\nHost: a\r\n\r\n".into(),
            "GET http://a/x HTTP/1.1\r\nHost: a\r\n\r\n".into(),
            "GET * HTTP/1.1\r\nHost: a\r\n\r\n".into(),
            "GET /x HTTP/2.0\r\nHost: a\r\n\r\n".into(),
            "GET /x HTTP/1.1\r\nHost: a\r\nBad Header: v\r\n\r\n".into(),
            "GET /x HTTP/1.1\r\nHost: a\r\nX: a\u{1}b\r\n\r\n".into(),
            "G@T /x HTTP/1.1\r\nHost: a\r\n\r\n".into(),
            format!("GET {long} HTTP/1.1\r\nHost: a\r\n\r\n"),
            format!("GET /x HTTP/1.1\r\nHost: a\r\n{many}\r\n"),
        ];
        plain
            .iter()
            .map(|h| h.as_bytes().to_vec())
            .chain(odd.into_iter().map(String::into_bytes))
            .collect()
    }

    // actix-http's decoder needs a runtime (its date service).
    #[actix_web::test]
    async fn every_head_the_screen_accepts_actix_accepts() {
        let mut accepted = 0;
        for head in heads() {
            let shown = String::from_utf8_lossy(&head[..head.len().min(80)]).into_owned();
            if let Screened::Accepted { head: len, .. } = screen(&head) {
                accepted += 1;
                assert_eq!(actix_accepts(&head), Some(len), "{shown}");
            }
        }
        // The usual requests are screened cheaply; the others are left to the decoder.
        for head in heads().iter().take(PLAIN) {
            assert!(matches!(screen(head), Screened::Accepted { .. }));
        }
        assert!(accepted < heads().len() - 10);
    }

    #[test]
    fn plain_uri_characters_are_uris() {
        for c in b"-._~!$&'()*+,;=:@/?%".iter().chain(b"aZ09".iter()) {
            let c = char::from(*c);
            let target = format!("/a{c}b?x{c}y");
            assert!(plain_uri(&target));
            assert!(
                actix_web::http::Uri::try_from(target.as_str()).is_ok(),
                "{c}"
            );
        }
        assert!(!plain_uri("/a b"));
        assert!(!plain_uri("/a\u{e9}"));
    }

    /// A stream of requests, fed in every split: framed to the end without the decoder.
    #[test]
    fn light_frames_pipelined_requests_in_any_split() {
        let stream = b"GET /a HTTP/1.1\r\nHost: a\r\n\r\n\
            POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello\
            GET /c HTTP/1.1\r\nHost: a\r\n\r\n";
        for cut in 0..=stream.len() {
            for cut2 in cut..=stream.len() {
                let mut light = Light::default();
                assert!(light.feed(&stream[..cut]).is_none(), "{cut}");
                assert!(light.feed(&stream[cut..cut2]).is_none(), "{cut} {cut2}");
                assert!(light.feed(&stream[cut2..]).is_none(), "{cut} {cut2}");
                assert!(light.head.is_empty() && light.body_left == 0);
            }
        }
    }

    /// The first request the screen is not sure of goes to the decoder from its start.
    #[test]
    fn light_hands_over_at_the_request_it_is_not_sure_of() {
        let good = b"POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello".to_vec();
        let chunked = b"POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        let mut stream = good.clone();
        stream.extend_from_slice(chunked);
        for cut in 0..=stream.len() {
            let mut light = Light::default();
            let first = light.feed(&stream[..cut]);
            let handed = match first {
                Some(h) => {
                    let mut h = h.to_vec();
                    h.extend_from_slice(&stream[cut..]);
                    h
                }
                None => light
                    .feed(&stream[cut..])
                    .map(|h| h.to_vec())
                    .unwrap_or_default(),
            };
            assert_eq!(handed, chunked.to_vec(), "{cut}");
        }
        // A head too long for the screen goes to the decoder whole.
        let mut light = Light::default();
        let big = format!(
            "GET /x HTTP/1.1\r\nHost: a\r\nX: {}",
            "v".repeat(LIGHT_HEAD_BYTES)
        );
        let handed = light.feed(big.as_bytes()).map(|h| h.to_vec());
        assert_eq!(handed, Some(big.into_bytes()));
    }

    /// A request actix-http refuses, after screened ones, reaches the decoder whole.
    // actix-http's decoder needs a runtime (its date service).
    #[actix_web::test]
    async fn a_refused_request_after_screened_ones_reaches_the_decoder() {
        let mut light = Light::default();
        let stream = b"GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /a HTTP/1.1\r\n\r\n";
        let from = light.feed(stream).map(|b| b.to_vec()).unwrap_or_default();
        assert_eq!(from, b"GET /a HTTP/1.1\r\n\r\n".to_vec());
        let mut codec = Codec::new(ServiceConfig::default());
        assert!(codec.decode(&mut BytesMut::from(&from[..])).is_err());
    }
}
