//! Where a request comes from: the host name it asks for (which realm it is for) and
//! the client's address (what per-IP rate limits count by). Read by the extractor,
//! the middlewares and the handlers that find their realm themselves; it imports
//! nothing of the API.

use std::borrow::Cow;

use actix_web::HttpRequest;

/// The client's address: the peer, or, when the peer is a trusted proxy
/// (`--trusted-proxy`), the rightmost address of `X-Forwarded-For` that is not itself
/// a trusted proxy (the hops a client wrote itself, to the left of it, are not
/// believed). Per-IP rate limits count by it.
pub fn client_ip(req: &HttpRequest, trusted: &[ipnet::IpNet]) -> std::net::IpAddr {
    let peer = req
        .peer_addr()
        .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    let is_trusted = |ip: &std::net::IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let hops = req
        .headers()
        .get_all("x-forwarded-for")
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect::<Vec<_>>();
    let mut client = peer;
    for hop in hops.iter().rev() {
        match hop.parse::<std::net::IpAddr>() {
            Ok(ip) if is_trusted(&ip) => client = ip,
            Ok(ip) => return ip,
            // Not an address (`unknown`, garbage): nothing further left is believed.
            Err(_) => return client,
        }
    }
    client
}

/// The host name of a request, without the port: its `Host` header (else its URI's
/// authority, else the server's configured host), as Django's `get_host` reads it
/// with `USE_X_FORWARDED_HOST` off: `X-Forwarded-Host` and `Forwarded` are not
/// believed (a router in front sets `Host`; see the README's nginx configuration).
pub fn host(req: &HttpRequest) -> Cow<'_, str> {
    let host = req
        .headers()
        .get(actix_web::http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
        .unwrap_or_else(|| req.app_config().host());
    let name = match host.bytes().rposition(|b| b == b':') {
        Some(colon) if host.as_bytes()[colon + 1..].iter().all(u8::is_ascii_digit) => {
            &host[..colon]
        }
        _ => host,
    };
    crate::realm::lowercased(name)
}
