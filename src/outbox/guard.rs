//! Where an outgoing webhook may connect. A bot's URL is chosen by any user who may
//! create bots, so a request to it must not reach the server's own network: loopback,
//! link-local (cloud metadata at 169.254.169.254), private, shared (CGNAT), multicast
//! and unspecified addresses are refused, as Zulip refuses them through Smokescreen.
//!
//! The check is made on the addresses the connection is made to: names are resolved by
//! `GuardedResolver`, which hands the HTTP client only allowed addresses (so a name that
//! resolves differently on the second lookup cannot slip through), and a URL whose host
//! is an address literal, first or after a redirect, is checked before it is requested.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Which addresses outgoing webhooks may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// `--webhook-allow-private`: every address.
    pub allow_private: bool,
    /// `--dev`: loopback too.
    pub allow_loopback: bool,
}

impl Policy {
    /// Whether a connection to `ip` is allowed.
    pub fn allows(&self, ip: IpAddr) -> bool {
        if self.allow_private {
            return true;
        }
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        if ip.is_loopback() {
            return self.allow_loopback;
        }
        !is_internal(ip)
    }
}

/// Addresses no outgoing webhook reaches without `--webhook-allow-private`.
fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                // 0.0.0.0/8 ("this network"), 100.64.0.0/10 (shared, CGNAT),
                // 192.0.0.0/24 (protocol assignments), 198.18.0.0/15 (benchmarking),
                // 240.0.0.0/4 (reserved).
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
                || o[0] >= 240
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            v6.is_unspecified()
                || v6.is_multicast()
                // fc00::/7 unique local, fe80::/10 link-local, 2001:db8::/32
                // documentation, 64:ff9b::/96 NAT64 (reaches IPv4 space).
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] == 0x2001 && s[1] == 0x0db8)
                || (s[0] == 0x0064 && s[1] == 0xff9b)
        }
    }
}

/// A connection the policy refused: the host as named, and why.
#[derive(Debug, thiserror::Error)]
#[error("{host} is on a private or disallowed network")]
pub struct Refused {
    pub host: String,
}

/// Resolves names with the system's resolver and keeps only allowed addresses.
pub struct GuardedResolver {
    pub policy: Policy,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found
                .into_iter()
                .filter(|a| policy.allows(a.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(Box::new(Refused { host }) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// Checks a URL whose host is an address literal (names are checked on resolution).
pub fn check_literal(policy: Policy, url: &url::Url) -> Result<(), Refused> {
    let ip = match url.host() {
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
        _ => return Ok(()),
    };
    if policy.allows(ip) {
        Ok(())
    } else {
        Err(Refused {
            host: url.host_str().unwrap_or_default().to_owned(),
        })
    }
}

/// The HTTP client of outgoing webhooks: every connection through the policy, at most
/// five redirects (each target checked), `timeout` for the whole request.
pub fn client(policy: Policy, timeout: std::time::Duration) -> reqwest::Result<reqwest::Client> {
    let redirects = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= 5 {
            return attempt.error("too many redirects");
        }
        match check_literal(policy, attempt.url()) {
            Ok(()) => attempt.follow(),
            Err(refused) => attempt.error(refused),
        }
    });
    reqwest::Client::builder()
        .dns_resolver(Arc::new(GuardedResolver { policy }))
        .redirect(redirects)
        .timeout(timeout)
        // A connection per delivery: bot servers (Flask's development server among
        // them) close kept-alive connections, and a reused dead one fails a delivery.
        .pool_max_idle_per_host(0)
        .user_agent(concat!(
            "hearth-outgoing-webhook/",
            env!("CARGO_PKG_VERSION")
        ))
        .build()
}

/// Whether an error (of the client, through its causes) is a refusal of the policy.
pub fn is_refusal(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if err.downcast_ref::<Refused>().is_some() {
            return true;
        }
        cur = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: Policy = Policy {
        allow_private: false,
        allow_loopback: false,
    };

    #[test]
    fn internal_addresses_are_refused() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
        ] {
            assert!(!STRICT.allows(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "1.1.1.1", "2606:4700::1111"] {
            assert!(STRICT.allows(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn dev_allows_loopback_only() {
        let dev = Policy {
            allow_private: false,
            allow_loopback: true,
        };
        assert!(dev.allows("127.0.0.1".parse().unwrap()));
        assert!(dev.allows("::1".parse().unwrap()));
        assert!(!dev.allows("10.0.0.1".parse().unwrap()));
        let open = Policy {
            allow_private: true,
            allow_loopback: false,
        };
        assert!(open.allows("10.0.0.1".parse().unwrap()));
    }

    #[test]
    fn literal_hosts_are_checked() {
        let u = url::Url::parse("http://169.254.169.254/latest/meta-data").unwrap();
        assert!(check_literal(STRICT, &u).is_err());
        let u = url::Url::parse("http://[::1]:8080/").unwrap();
        assert!(check_literal(STRICT, &u).is_err());
        let u = url::Url::parse("http://bots.example/").unwrap();
        assert!(check_literal(STRICT, &u).is_ok());
    }
}
