//! The driver's HTTP client: hyper's HTTP/1.1 connection API, one keep-alive
//! connection per request in flight (a simulated client's long-poll holds its own, its
//! other requests take an idle one), kept and reused last-in first-out.
//!
//! reqwest (the driver's client before) runs every request through its pool, its
//! middleware stack and a URL parse; at the rate wrk reaches against the ceiling that
//! made the driver, not the server, the limit. Here a request is a path, an
//! `Authorization` header and a form body written on a connection of its own.
//!
//! Like a browser or Zulip's mobile app, it asks for gzip (`Accept-Encoding: gzip`)
//! unless told not to, and inflates a gzip answer before it is looked at: the figures
//! are then those of the bytes real clients are sent (a presence ping's answer in a
//! busy realm is ~48 bytes per member as text, ~1/20 of that compressed).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{
    HeaderValue, ACCEPT_ENCODING, AUTHORIZATION, CONTENT_ENCODING, CONTENT_TYPE, HOST,
};
use http::Method;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

/// What one request came back with: the status and body, or why there was none
/// (`timeout`, `connect` or `transport`).
pub type Answer = Result<(u16, Bytes), String>;

/// How long a request may take before it counts as a `timeout` (a long-poll is
/// answered by a heartbeat well before).
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// One request: method, path with its query, the user's `Authorization`, a form body.
pub struct Req {
    pub method: Method,
    pub path: String,
    pub auth: Option<HeaderValue>,
    pub form: Option<String>,
}

impl Req {
    /// `GET path?query`.
    pub fn get(path: &str, query: &[(&str, String)], auth: &HeaderValue) -> Req {
        Req::with_query(Method::GET, path, query, auth)
    }

    /// `DELETE path?query`.
    pub fn delete(path: &str, query: &[(&str, String)], auth: &HeaderValue) -> Req {
        Req::with_query(Method::DELETE, path, query, auth)
    }

    fn with_query(method: Method, path: &str, query: &[(&str, String)], auth: &HeaderValue) -> Req {
        let path = if query.is_empty() {
            path.to_owned()
        } else {
            let q = serde_urlencoded::to_string(query).unwrap_or_default();
            format!("{path}?{q}")
        };
        Req {
            method,
            path,
            auth: Some(auth.clone()),
            form: None,
        }
    }

    /// `POST path` with a form body.
    pub fn post(path: &str, form: &[(&str, String)], auth: &HeaderValue) -> Req {
        Req {
            method: Method::POST,
            path: path.to_owned(),
            auth: Some(auth.clone()),
            form: Some(serde_urlencoded::to_string(form).unwrap_or_default()),
        }
    }

    fn build(&self, host: &HeaderValue, gzip: bool) -> Result<http::Request<Full<Bytes>>, String> {
        let mut b = http::Request::builder()
            .method(self.method.clone())
            .uri(self.path.as_str())
            .header(HOST, host.clone());
        if gzip {
            b = b.header(ACCEPT_ENCODING, "gzip");
        }
        if let Some(auth) = &self.auth {
            b = b.header(AUTHORIZATION, auth.clone());
        }
        let body = match &self.form {
            Some(form) => {
                b = b.header(CONTENT_TYPE, "application/x-www-form-urlencoded");
                Bytes::from(form.clone())
            }
            None => Bytes::new(),
        };
        b.body(Full::new(body))
            .map_err(|e| format!("request {}: {e}", self.path))
    }
}

/// A server's connections.
pub struct Http {
    addr: SocketAddr,
    host: HeaderValue,
    /// Idle connections by driver shard (`driver::shard()`): a connection's task runs
    /// on the runtime that opened it, so a request takes one of its own thread's.
    idle: Mutex<HashMap<usize, Vec<SendRequest<Full<Bytes>>>>>,
    /// CPU burnt after each answer: a deliberately slow driver (`--driver-spin`), to
    /// check that the report knows a driver-bound run when it sees one.
    spin: Duration,
    /// Local addresses new connections are made from, in turn (`--source-addrs`):
    /// one address reaches one server port from at most the ephemeral port range
    /// (about 28 000 connections). Empty: the system chooses.
    sources: Vec<IpAddr>,
    next_source: AtomicUsize,
    /// Whether requests ask for gzip (`Accept-Encoding: gzip`, as browsers do).
    gzip: bool,
    /// Connections opened (the server closing kept-alive ones shows here).
    pub opened: AtomicU64,
    /// Answer bodies' bytes as received, and as read after inflating the gzip ones.
    pub body_bytes: AtomicU64,
    pub text_bytes: AtomicU64,
}

impl Http {
    /// A client of `base` (`http://host:port`, a path after it is ignored).
    pub fn new(base: &str, spin: Duration) -> Result<Http, String> {
        Http::with_options(base, None, Vec::new(), spin)
    }

    /// A client of `base` that names `host` in its requests' `Host` header (a realm
    /// behind a router that routes by host name; default: `base`'s authority) and
    /// makes its connections from `sources` in turn.
    pub fn with_options(
        base: &str,
        host: Option<&str>,
        sources: Vec<IpAddr>,
        spin: Duration,
    ) -> Result<Http, String> {
        let authority = base
            .strip_prefix("http://")
            .ok_or_else(|| format!("{base}: only http:// targets are driven"))?
            .split('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        let addr = authority
            .to_socket_addrs()
            .map_err(|e| format!("{authority}: {e}"))?
            .next()
            .ok_or_else(|| format!("{authority}: no address"))?;
        let host = host.unwrap_or(&authority);
        let host = HeaderValue::from_str(host).map_err(|e| format!("--host {host}: {e}"))?;
        if let Some(wrong) = sources.iter().find(|s| s.is_ipv4() != addr.is_ipv4()) {
            return Err(format!(
                "source address {wrong} cannot reach {addr} (another address family)"
            ));
        }
        Ok(Http {
            addr,
            host,
            idle: Mutex::new(HashMap::new()),
            spin,
            sources,
            next_source: AtomicUsize::new(0),
            gzip: true,
            opened: AtomicU64::new(0),
            body_bytes: AtomicU64::new(0),
            text_bytes: AtomicU64::new(0),
        })
    }

    /// Asks for gzip answers (the default) or not (`hearth load --no-gzip`).
    pub fn with_gzip(mut self, gzip: bool) -> Http {
        self.gzip = gzip;
        self
    }

    fn take_idle(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let idle = idle.entry(super::driver::shard()).or_default();
        while let Some(conn) = idle.pop() {
            if !conn.is_closed() {
                return Some(conn);
            }
        }
        None
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, String> {
        let stream = match self.sources.len() {
            0 => tokio::net::TcpStream::connect(self.addr).await,
            n => {
                let source = self.sources[self.next_source.fetch_add(1, Ordering::Relaxed) % n];
                let socket = if source.is_ipv4() {
                    tokio::net::TcpSocket::new_v4()
                } else {
                    tokio::net::TcpSocket::new_v6()
                };
                match socket.and_then(|s| s.bind(SocketAddr::new(source, 0)).map(|()| s)) {
                    Ok(s) => s.connect(self.addr).await,
                    Err(e) => Err(e),
                }
            }
        }
        .map_err(|_| "connect".to_owned())?;
        let _ = stream.set_nodelay(true);
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|_| "connect".to_owned())?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        self.opened.fetch_add(1, Ordering::Relaxed);
        Ok(send)
    }

    /// Sends `req` and reads the whole answer (within [`TIMEOUT`]).
    pub async fn send(&self, req: Req) -> Answer {
        let answer = match tokio::time::timeout(TIMEOUT, self.exchange(&req)).await {
            Ok(a) => a,
            Err(_) => Err("timeout".to_owned()),
        };
        if !self.spin.is_zero() {
            let t = Instant::now();
            while t.elapsed() < self.spin {
                std::hint::spin_loop();
            }
        }
        answer
    }

    async fn exchange(&self, req: &Req) -> Answer {
        let mut conn = match self.take_idle() {
            // Ready once its connection task has read the previous answer's end.
            Some(mut c) => match c.ready().await {
                Ok(()) => c,
                Err(_) => self.connect().await?,
            },
            None => self.connect().await?,
        };
        let res = match conn
            .try_send_request(req.build(&self.host, self.gzip)?)
            .await
        {
            Ok(res) => res,
            // A kept-alive connection the server closed meanwhile: the request was not
            // sent, so it goes once more on a new connection.
            Err(e) if e.message().is_some() => {
                conn = self.connect().await?;
                conn.send_request(req.build(&self.host, self.gzip)?)
                    .await
                    .map_err(|_| "transport".to_owned())?
            }
            Err(_) => return Err("transport".to_owned()),
        };
        let status = res.status().as_u16();
        let gzipped = res
            .headers()
            .get(CONTENT_ENCODING)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
        let body = res
            .into_body()
            .collect()
            .await
            .map_err(|_| "transport".to_owned())?
            .to_bytes();
        self.body_bytes
            .fetch_add(body.len() as u64, Ordering::Relaxed);
        if !conn.is_closed() {
            self.idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(super::driver::shard())
                .or_default()
                .push(conn);
        }
        let body = if gzipped {
            gunzip(&body).ok_or_else(|| "gzip".to_owned())?
        } else {
            body
        };
        self.text_bytes
            .fetch_add(body.len() as u64, Ordering::Relaxed);
        Ok((status, body))
    }
}

/// A gzip body inflated, or `None` when it is not gzip.
pub fn gunzip(body: &[u8]) -> Option<Bytes> {
    use std::io::Read;
    // JSON shrinks ~20-fold: start near its size, so that it is read in a few growths.
    let mut text = Vec::with_capacity(body.len().saturating_mul(16).min(16 << 20));
    flate2::read::MultiGzDecoder::new(body)
        .read_to_end(&mut text)
        .ok()?;
    Some(Bytes::from(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A one-request server: answers 200 and tells the request's peer and its bytes.
    async fn one_request() -> (String, tokio::task::JoinHandle<(SocketAddr, String)>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let served = tokio::spawn(async move {
            let (mut stream, peer) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let n = stream.read(&mut buf).await.unwrap();
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
                .await
                .unwrap();
            (peer, String::from_utf8_lossy(&buf[..n]).into_owned())
        });
        (base, served)
    }

    fn header<'a>(request: &'a str, name: &str) -> Option<&'a str> {
        request.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    #[tokio::test]
    async fn the_host_header_and_the_source_address_are_the_ones_asked_for() {
        let (base, served) = one_request().await;
        let source: IpAddr = "127.0.0.2".parse().unwrap();
        let http = Http::with_options(
            &base,
            Some("zulip.hearth.test"),
            vec![source],
            Duration::ZERO,
        )
        .unwrap();
        let auth = HeaderValue::from_static("Basic eDp5");
        let (status, body) = http
            .send(Req::get("/api/v1/users/me", &[], &auth))
            .await
            .unwrap();
        assert_eq!((status, &body[..]), (200, &b"{}"[..]));
        let (peer, request) = served.await.unwrap();
        assert_eq!(peer.ip(), source);
        assert_eq!(header(&request, "host"), Some("zulip.hearth.test"));
    }

    #[tokio::test]
    async fn by_default_the_host_is_the_targets_and_the_system_picks_the_source() {
        let (base, served) = one_request().await;
        let http = Http::new(&base, Duration::ZERO).unwrap();
        let auth = HeaderValue::from_static("Basic eDp5");
        http.send(Req::get("/", &[], &auth)).await.unwrap();
        let (peer, request) = served.await.unwrap();
        assert_eq!(peer.ip(), IpAddr::from([127, 0, 0, 1]));
        assert_eq!(header(&request, "host"), base.strip_prefix("http://"));
    }

    #[tokio::test]
    async fn gzip_is_asked_for_and_a_gzip_answer_is_inflated() {
        use std::io::Write;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let text = br#"{"result":"success","presence_last_update_id":7}"#;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(text).unwrap();
        let gz = gz.finish().unwrap();
        let gz_len = gz.len() as u64;
        let served = tokio::spawn(async move {
            let mut requests = Vec::new();
            for _ in 0..2 {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut buf = vec![0u8; 4096];
                let n = stream.read(&mut buf).await.unwrap();
                let request = String::from_utf8_lossy(&buf[..n]).into_owned();
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    gz.len()
                );
                stream.write_all(head.as_bytes()).await.unwrap();
                stream.write_all(&gz).await.unwrap();
                requests.push(request);
            }
            requests
        });
        let auth = HeaderValue::from_static("Basic eDp5");
        let http = Http::new(&base, Duration::ZERO).unwrap();
        let (status, body) = http.send(Req::get("/", &[], &auth)).await.unwrap();
        assert_eq!((status, &body[..]), (200, &text[..]));
        assert_eq!(http.body_bytes.load(Ordering::Relaxed), gz_len);
        assert_eq!(http.text_bytes.load(Ordering::Relaxed), text.len() as u64);
        let plain = Http::new(&base, Duration::ZERO).unwrap().with_gzip(false);
        plain.send(Req::get("/", &[], &auth)).await.unwrap();
        let requests = served.await.unwrap();
        assert_eq!(header(&requests[0], "accept-encoding"), Some("gzip"));
        assert_eq!(header(&requests[1], "accept-encoding"), None);
        assert!(gunzip(b"not gzip").is_none());
    }

    #[test]
    fn a_source_of_another_address_family_is_refused() {
        let err = Http::with_options(
            "http://127.0.0.1:9",
            None,
            vec!["::1".parse().unwrap()],
            Duration::ZERO,
        )
        .err()
        .unwrap();
        assert!(err.contains("another address family"), "{err}");
    }
}
