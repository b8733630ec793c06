//! Several nodes behind one router: the placement file (which node serves which realm)
//! and the nginx configuration generated from it (`hearth cluster nginx --placement
//! FILE`), as Zulip shards its real-time servers by realm (`sharding.json` turned into
//! an nginx `map`).
//!
//! The placement file (TOML):
//!
//! ```toml
//! [router]
//! listen = "127.0.0.1:8080"
//! domain = "chat.example.test"   # realm "acme" at acme.chat.example.test, "" at the domain
//! # Optional: nginx's connections to the nodes leave from these addresses in turn
//! # (start the nodes with --trusted-proxy covering them).
//! source_addresses = ["127.0.100.1", "127.0.100.2"]
//!
//! [nodes.a]
//! http = "127.0.0.1:9991"
//! admin = "127.0.0.1:9993"
//!
//! [realms]
//! acme = "a"
//! ```
//!
//! The configuration runs unprivileged as `nginx -p PREFIX -c FILE`: its pid file,
//! logs and temporary folders are relative to the prefix. A Host that names no realm of
//! the placement is answered by nginx itself with hearth's answer for an unknown realm
//! (404 `NONEXISTENT_SUBDOMAIN`, "Invalid subdomain"), without bothering a node.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::api::MULTIPART_LIMIT;
use crate::hub::LONGPOLL_TIMEOUT_SECS;

/// `[router]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Router {
    /// Where nginx listens (`host:port`).
    pub listen: String,
    /// The domain: realm `acme` is served at `acme.<domain>`, realm `""` at `<domain>`.
    pub domain: String,
    /// How many clients the router holds at once, each with a parked long-poll
    /// (default `DEFAULT_CLIENTS`): sizes nginx's workers (`RouterSizing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<u64>,
    /// Addresses nginx's connections to the nodes leave from, in turn (default: the
    /// system's choice, one address). Each gives every node its own ephemeral ports:
    /// one address has ~28,000 towards a node, counting those closed in the last
    /// minute (TIME_WAIT), which a node's held polls and a burst of reconnections can
    /// use up. The nodes must trust them (`--trusted-proxy`) for `X-Forwarded-For`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_addresses: Vec<std::net::IpAddr>,
}

/// Clients a router is sized for when the placement does not say.
pub const DEFAULT_CLIENTS: u64 = 10_000;
/// Open files a worker keeps for everything but connections (logs, listeners,
/// temporary files).
const WORKER_RESERVED_FILES: u64 = 256;

/// The share of a worker's connections the sizing plans to use (3/4): the rest is
/// headroom for a worker that is handed more than its share (the kernel spreads the
/// listener's connections over the workers' `reuseport` sockets by a hash of their
/// addresses, evenly on average but not exactly) and for requests that come and go
/// beside the parked polls.
const PLANNED_FILL: (u64, u64) = (3, 4);

/// nginx's workers for a number of held clients under an open-files limit.
///
/// Every connection of a worker is an open file and counts in `worker_connections`,
/// a client's and an upstream's alike: a parked long-poll holds two (the client's and
/// the one to its node, in the worker that accepted the client), and a client's other
/// requests come and go beside it (a browser keeps a second connection for them, and
/// each takes an upstream connection while it is answered): three per client. One
/// worker may hold at most the per-process limit of open files (`worker_rlimit_nofile`,
/// `worker_connections` that less `WORKER_RESERVED_FILES`), and is planned to be at
/// most `PLANNED_FILL` full; beyond that the clients are spread over more workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouterSizing {
    pub workers: u64,
    pub nofile: u64,
    pub connections: u64,
}

impl RouterSizing {
    pub fn new(clients: u64, nofile: u64) -> RouterSizing {
        let nofile = nofile.clamp(2048, 1 << 20);
        let connections = nofile - WORKER_RESERVED_FILES;
        let planned = connections * PLANNED_FILL.0 / PLANNED_FILL.1;
        let needed = clients.max(1).saturating_mul(3);
        RouterSizing {
            workers: needed.div_ceil(planned).max(1),
            nofile,
            connections,
        }
    }

    /// For the open-files limit of this machine (the hard limit, which an unprivileged
    /// nginx may raise its workers to).
    pub fn here(clients: u64) -> RouterSizing {
        use rustix::process::{getrlimit, Resource};
        let limit = getrlimit(Resource::Nofile);
        RouterSizing::new(clients, limit.maximum.or(limit.current).unwrap_or(1 << 20))
    }
}

/// `[nodes.NAME]`: one hearth process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    /// Its API listener (`hearth serve --bind`).
    pub http: String,
    /// Its admin listener (`hearth serve --admin-bind`).
    pub admin: String,
}

/// A placement file, parsed and checked (`Placement::parse`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    pub router: Router,
    /// Nodes by name.
    pub nodes: BTreeMap<String, Node>,
    /// Realm subdomain -> node name.
    #[serde(default)]
    pub realms: BTreeMap<String, String>,
}

/// Whether `s` is a DNS label of letters, digits and hyphens (not at either end).
fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn address(what: &str, s: &str) -> Result<SocketAddr, String> {
    s.parse::<SocketAddr>().map_err(|_| {
        format!("{what}: '{s}' is not an address such as 127.0.0.1:9991 (an IP and a port)")
    })
}

impl Placement {
    /// Parses and checks a placement: addresses that parse, no address used twice, a
    /// domain of DNS labels, realms that are subdomains, each placed on a node of the
    /// file.
    pub fn parse(text: &str) -> Result<Placement, String> {
        let p: Placement = toml::from_str(text).map_err(|e| e.to_string())?;
        p.check()?;
        Ok(p)
    }

    /// Reads and parses a placement file; errors name the file.
    pub fn load(path: &Path) -> Result<Placement, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the placement {}: {e}", path.display()))?;
        Placement::parse(&text)
            .map_err(|e| format!("placement {}: {}", path.display(), e.trim_end()))
    }

    fn check(&self) -> Result<(), String> {
        let mut used: BTreeMap<SocketAddr, String> = BTreeMap::new();
        let mut claim = |what: String, s: &str| -> Result<SocketAddr, String> {
            let addr = address(&what, s)?;
            if let Some(other) = used.insert(addr, what.clone()) {
                return Err(format!("{what}: {addr} is also {other}"));
            }
            Ok(addr)
        };
        claim("[router] listen".into(), &self.router.listen)?;
        let domain = self.router.domain.trim_end_matches('.');
        if !domain.split('.').all(is_label) {
            return Err(format!(
                "[router] domain: '{}' is not a domain name such as chat.example.test",
                self.router.domain
            ));
        }
        let mut sources = std::collections::BTreeSet::new();
        for a in &self.router.source_addresses {
            if !sources.insert(a) {
                return Err(format!("[router] source_addresses: {a} is named twice"));
            }
            if a.is_unspecified() || a.is_multicast() {
                return Err(format!(
                    "[router] source_addresses: {a} is not an address of this machine"
                ));
            }
        }
        if self.nodes.is_empty() {
            return Err("no [nodes.NAME] section: name at least one node".into());
        }
        let mut upstreams = std::collections::BTreeSet::new();
        for (name, node) in &self.nodes {
            if !upstreams.insert(Self::upstream(name)) {
                return Err(format!(
                    "[nodes.{name}]: its name differs from another node's only by '-' and '_'"
                ));
            }
            if !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(format!(
                    "[nodes.{name}]: a node name is letters, digits, '-' and '_'"
                ));
            }
            let http = claim(format!("[nodes.{name}] http"), &node.http)?;
            claim(format!("[nodes.{name}] admin"), &node.admin)?;
            // nginx cannot bind a connection to a node of another address family.
            if let Some(a) = self
                .router
                .source_addresses
                .iter()
                .find(|a| a.is_ipv4() != http.is_ipv4())
            {
                return Err(format!(
                    "[router] source_addresses: {a} cannot reach [nodes.{name}] http {http} \
                     (another address family)"
                ));
            }
        }
        for (realm, node) in &self.realms {
            if !realm.is_empty() && !is_label(realm) {
                return Err(format!(
                    "[realms] '{realm}': a realm is a subdomain (letters, digits, '-') or \"\""
                ));
            }
            if !self.nodes.contains_key(node) {
                return Err(format!(
                    "[realms] {realm:?} = {node:?}: there is no [nodes.{node}]"
                ));
            }
        }
        Ok(())
    }

    /// The Host a realm is served at.
    pub fn host_of(&self, realm: &str) -> String {
        let domain = self
            .router
            .domain
            .trim_end_matches('.')
            .to_ascii_lowercase();
        if realm.is_empty() {
            domain
        } else {
            format!("{}.{domain}", realm.to_ascii_lowercase())
        }
    }

    /// The node a realm is placed on.
    pub fn node_of(&self, realm: &str) -> Option<(&str, &Node)> {
        let name = self.realms.get(realm)?;
        self.nodes.get(name).map(|n| (name.as_str(), n))
    }

    /// Places `realm` on `node` (a node of the placement).
    pub fn place(&mut self, realm: &str, node: &str) -> Result<(), String> {
        if !self.nodes.contains_key(node) {
            return Err(format!("there is no [nodes.{node}]"));
        }
        self.realms.insert(realm.to_owned(), node.to_owned());
        self.check()
    }

    /// The placement as TOML (the same sections; comments are not kept).
    pub fn to_toml(&self) -> Result<String, String> {
        toml::to_string(self).map_err(|e| e.to_string())
    }

    /// Writes the placement to `path` atomically (a temporary file beside it, fsynced,
    /// renamed over it).
    pub fn write(&self, path: &Path) -> Result<(), String> {
        use std::io::Write;
        let text = self.to_toml()?;
        let tmp = path.with_extension("toml.tmp");
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)?;
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::File::open(dir)?.sync_all()?;
            }
            Ok(())
        };
        write().map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// The upstream name of a node.
    fn upstream(node: &str) -> String {
        format!("hearth_{}", node.replace('-', "_"))
    }

    /// The complete nginx configuration of this placement for this machine (see the
    /// module doc).
    pub fn nginx_config(&self) -> String {
        let clients = self.router.clients.unwrap_or(DEFAULT_CLIENTS);
        self.nginx_config_for(RouterSizing::here(clients))
    }

    /// The nginx configuration with these workers.
    pub fn nginx_config_for(&self, sizing: RouterSizing) -> String {
        // nginx lets a body through a little above hearth's largest (a multipart upload
        // at its limit): hearth then refuses a larger one with its own JSON 413.
        let body_mib = MULTIPART_LIMIT.div_ceil(1024 * 1024) + 1;
        // Above the long-poll's longest wait (a heartbeat comes after a minute; clients
        // give up after 90 s), so nginx never cuts a parked poll.
        let read_timeout = LONGPOLL_TIMEOUT_SECS + 30;
        let mut c = String::new();
        let w = &mut c;
        let _ = writeln!(
            w,
            "# hearth router: generated by `hearth cluster nginx --placement FILE`.\n\
             # Run unprivileged as `nginx -p PREFIX -c FILE` (pid, logs and temporary files\n\
             # under PREFIX); reload after a placement change with `nginx -p PREFIX -c FILE -s reload`.\n\
             # One realm is served by one node: its Host goes to that node only.\n\
             \n\
             # Sized for {clients} held clients (`[router] clients`): each holds up to three\n\
             # connections here (client and upstream ones alike), a worker at most {nofile}\n\
             # open files and is planned {fill_num}/{fill_den} full ({planned} connections).\n\
             worker_processes {workers};\n\
             worker_rlimit_nofile {nofile};\n\
             pid nginx.pid;\n\
             error_log error.log warn;\n\
             \n\
             events {{\n    worker_connections {connections};\n}}\n\
             \n\
             http {{\n    \
             # The combined format and two timings, in seconds: the request's whole time\n    \
             # here and its node's answer time (`-` where nginx answered itself). Written\n    \
             # in 64 KiB pieces, at least every second.\n    \
             log_format hearth '$remote_addr - $remote_user [$time_local] \"$request\" '\n                      \
             '$status $body_bytes_sent \"$http_referer\" \"$http_user_agent\" '\n                      \
             '$request_time $upstream_response_time';\n    \
             access_log access.log hearth buffer=64k flush=1s;\n    \
             client_body_temp_path client_body_temp;\n    \
             proxy_temp_path proxy_temp;\n    \
             fastcgi_temp_path fastcgi_temp;\n    \
             uwsgi_temp_path uwsgi_temp;\n    \
             scgi_temp_path scgi_temp;\n    \
             default_type application/json;\n    \
             server_tokens off;\n",
            clients = self.router.clients.unwrap_or(DEFAULT_CLIENTS),
            workers = sizing.workers,
            nofile = sizing.nofile,
            connections = sizing.connections,
            fill_num = PLANNED_FILL.0,
            fill_den = PLANNED_FILL.1,
            planned = sizing.connections * PLANNED_FILL.0 / PLANNED_FILL.1,
        );
        for (name, node) in &self.nodes {
            let _ = writeln!(
                w,
                "    upstream {} {{\n        \
                 server {};\n        \
                 keepalive 64;\n        \
                 # Below hearth's --keep-alive-secs (60): nginx never reuses a connection\n        \
                 # hearth is closing.\n        \
                 keepalive_timeout 30s;\n    \
                 }}\n",
                Self::upstream(name),
                node.http
            );
        }
        let _ = writeln!(
            w,
            "    # Host -> the node of its realm; \"\" for a Host of no realm.\n    \
             map $host $hearth_upstream {{\n        \
             hostnames;\n        \
             default \"\";"
        );
        for (realm, node) in &self.realms {
            let _ = writeln!(
                w,
                "        {} {};",
                self.host_of(realm),
                Self::upstream(node)
            );
        }
        let _ = writeln!(w, "    }}\n");
        let bind = self.write_source_addresses(w);
        let _ = writeln!(
            w,
            "    server {{\n        \
             # A listening socket per worker: the kernel spreads new connections over\n        \
             # the workers (one socket shared by all hands them to whichever wakes first,\n        \
             # and one worker can run out of connections while others are idle).\n        \
             listen {listen} reuseport;\n        \
             server_name _;\n        \
             client_max_body_size {body_mib}m;\n        \
             proxy_http_version 1.1;\n        \
             proxy_set_header Connection \"\";\n        \
             proxy_set_header Host $host;\n        \
             proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n        \
             proxy_set_header X-Forwarded-Proto $scheme;\n        \
             proxy_read_timeout {read_timeout}s;\n        \
             proxy_send_timeout {read_timeout}s;\n{bind}        \
             # hearth's answer for a Host of no realm.\n        \
             if ($hearth_upstream = \"\") {{\n            \
             return 404 '{{\"result\":\"error\",\"msg\":\"Invalid subdomain\",\"code\":\"NONEXISTENT_SUBDOMAIN\"}}';\n        \
             }}\n        \
             # Long-polls (the API's and the web client's): every event goes out as soon\n        \
             # as the node answers.\n        \
             location = /api/v1/events {{\n            \
             proxy_buffering off;\n            \
             proxy_pass http://$hearth_upstream;\n        \
             }}\n        \
             location = /json/events {{\n            \
             proxy_buffering off;\n            \
             proxy_pass http://$hearth_upstream;\n        \
             }}\n        \
             location / {{\n            \
             proxy_pass http://$hearth_upstream;\n        \
             }}\n    \
             }}\n\
             }}",
            listen = self.router.listen,
        );
        c
    }

    /// The `split_clients` that spreads connections to the nodes over the source
    /// addresses, when there are any; returns the server's `proxy_bind` line for it.
    fn write_source_addresses(&self, w: &mut String) -> String {
        let sources = &self.router.source_addresses;
        if sources.is_empty() {
            return String::new();
        }
        let _ = writeln!(
            w,
            "    # Connections to the nodes leave from these addresses in turn (by client\n    \
             # address and port), each with its own source ports towards every node; the\n    \
             # nodes trust them as proxies (--trusted-proxy).\n    \
             split_clients \"$remote_addr$remote_port\" $hearth_source {{"
        );
        // Equal shares in hundredths of a percent, the last one taking what is left.
        let share = 10_000 / sources.len();
        for a in &sources[..sources.len() - 1] {
            let _ = writeln!(w, "        {}.{:02}% {a};", share / 100, share % 100);
        }
        let _ = writeln!(w, "        * {};\n    }}\n", sources[sources.len() - 1]);
        "        proxy_bind $hearth_source;\n".to_owned()
    }
}

/// `hearth cluster nginx --placement FILE`: the configuration, for stdout.
pub fn nginx_command(placement: &Path) -> Result<String, String> {
    Ok(Placement::load(placement)?.nginx_config())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    const EXAMPLE: &str = r#"
[router]
listen = "127.0.0.1:8080"
domain = "chat.example.test"

[nodes.a]
http = "127.0.0.1:9991"
admin = "127.0.0.1:9993"

[nodes.b-2]
http = "127.0.0.1:9981"
admin = "127.0.0.1:9983"

[realms]
acme = "a"
"" = "b-2"
zeta = "b-2"
"#;

    #[test]
    fn the_example_parses() {
        let p = Placement::parse(EXAMPLE).unwrap();
        assert_eq!(p.router.listen, "127.0.0.1:8080");
        assert_eq!(p.nodes["a"].admin, "127.0.0.1:9993");
        assert_eq!(p.realms["acme"], "a");
        assert_eq!(p.host_of("acme"), "acme.chat.example.test");
        assert_eq!(p.host_of(""), "chat.example.test");
        assert_eq!(p.node_of("zeta").unwrap().0, "b-2");
        assert!(p.node_of("nope").is_none());
        // What `to_toml` writes reads back the same.
        assert_eq!(Placement::parse(&p.to_toml().unwrap()).unwrap(), p);
    }

    #[track_caller]
    fn refused(text: &str, needle: &str) {
        let e = Placement::parse(text).unwrap_err();
        assert!(e.contains(needle), "{e:?} should say {needle:?}");
    }

    #[test]
    fn bad_placements_are_refused_with_the_reason() {
        refused(
            &EXAMPLE.replace("acme = \"a\"", "acme = \"c\""),
            "\"acme\" = \"c\": there is no [nodes.c]",
        );
        refused(
            &EXAMPLE.replace("127.0.0.1:9981", "127.0.0.1:8080"),
            "[nodes.b-2] http: 127.0.0.1:8080 is also [router] listen",
        );
        refused(
            &EXAMPLE.replace("127.0.0.1:9983", "127.0.0.1:9993"),
            "[nodes.b-2] admin: 127.0.0.1:9993 is also [nodes.a] admin",
        );
        refused(
            &EXAMPLE.replace("127.0.0.1:9991", "localhost:9991"),
            "[nodes.a] http: 'localhost:9991' is not an address",
        );
        refused(
            &EXAMPLE.replace("127.0.0.1:8080", "8080"),
            "[router] listen: '8080' is not an address",
        );
        refused(
            &EXAMPLE.replace("chat.example.test", "chat..test"),
            "[router] domain",
        );
        refused(
            &EXAMPLE.replace("zeta = ", "\"ze.ta\" = "),
            "'ze.ta': a realm is a subdomain",
        );
        refused(&EXAMPLE.replace("admin = \"127.0.0.1:9993\"", ""), "admin");
        refused(
            &EXAMPLE
                .replace("[nodes.a]", "[nodes.b_2]")
                .replace("= \"a\"", "= \"b_2\""),
            "[nodes.b_2]: its name differs from another node's only by '-' and '_'",
        );
        refused(&EXAMPLE.replace("[router]", "[router]\nport = 1"), "port");
        refused(
            "[router]\nlisten = \"127.0.0.1:1\"\ndomain = \"x.test\"\n[nodes]\n",
            "no [nodes.NAME]",
        );
    }

    #[test]
    fn source_addresses_spread_the_connections_to_the_nodes() {
        let with = |addrs: &str| {
            EXAMPLE.replace(
                "[router]\n",
                &format!("[router]\nsource_addresses = [{addrs}]\n"),
            )
        };
        let three = r#""127.0.100.1", "127.0.100.2", "127.0.100.3""#;
        let p = Placement::parse(&with(three)).unwrap();
        let config = p.nginx_config_for(RouterSizing::new(DEFAULT_CLIENTS, 20_000));
        let split = "    split_clients \"$remote_addr$remote_port\" $hearth_source {\n        \
                     33.33% 127.0.100.1;\n        33.33% 127.0.100.2;\n        * 127.0.100.3;\n    }\n";
        assert!(config.contains(split), "{config}");
        assert!(
            config.contains("\n        proxy_bind $hearth_source;\n"),
            "{config}"
        );
        // The placement keeps them.
        assert_eq!(Placement::parse(&p.to_toml().unwrap()).unwrap(), p);
        // One address takes every connection.
        let one = Placement::parse(&with(r#""127.0.100.1""#)).unwrap();
        let config = one.nginx_config_for(RouterSizing::new(DEFAULT_CLIENTS, 20_000));
        assert!(config.contains("$hearth_source {\n        * 127.0.100.1;\n    }"));
        // Without them, no proxy_bind (the golden text).
        let none = Placement::parse(EXAMPLE).unwrap();
        assert!(!none.nginx_config().contains("proxy_bind"));
        refused(
            &with(r#""127.0.100.1", "127.0.100.1""#),
            "[router] source_addresses: 127.0.100.1 is named twice",
        );
        refused(
            &with(r#""0.0.0.0""#),
            "[router] source_addresses: 0.0.0.0 is not an address of this machine",
        );
        refused(&with(r#""localhost""#), "source_addresses");
        refused(
            &with(r#""127.0.100.1", "::1""#),
            "[router] source_addresses: ::1 cannot reach [nodes.a] http 127.0.0.1:9991 \
             (another address family)",
        );
    }

    #[test]
    fn place_moves_a_realm_and_checks_the_node() {
        let mut p = Placement::parse(EXAMPLE).unwrap();
        p.place("acme", "b-2").unwrap();
        assert_eq!(p.node_of("acme").unwrap().0, "b-2");
        assert!(p.place("acme", "c").is_err());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("placement.toml");
        p.write(&path).unwrap();
        assert_eq!(Placement::load(&path).unwrap(), p);
    }

    #[test]
    fn the_router_is_sized_for_its_clients_under_the_open_files_limit() {
        // This machine: 20 000 open files per process.
        // 10 000 held clients: 30 000 connections over workers of 19 744, each planned
        // 3/4 full (14 808).
        let s = RouterSizing::new(10_000, 20_000);
        assert_eq!((s.workers, s.nofile, s.connections), (3, 20_000, 19_744));
        // 100 000 held clients: 300 000 connections, 21 workers (20.3 at 14 808 each).
        assert_eq!(RouterSizing::new(100_000, 20_000).workers, 21);
        // Every connection is an open file: a worker's connections stay under its
        // limit, less what it keeps for logs and listeners.
        for clients in [1, 10_000, 100_100, 1_000_000] {
            let s = RouterSizing::new(clients, 20_000);
            assert!(s.connections + WORKER_RESERVED_FILES <= s.nofile);
            assert!(3 * clients <= s.workers * s.connections * 3 / 4, "{s:?}");
        }
        // A roomy machine needs one worker for the same.
        assert_eq!(RouterSizing::new(100_000, 1 << 20).workers, 1);
        // A tiny limit is lifted to nginx's usual floor; no clients is one worker.
        assert_eq!(RouterSizing::new(0, 100).workers, 1);
        assert_eq!(RouterSizing::new(0, 100).nofile, 2048);
        // The placement's `clients` reaches the configuration.
        let mut p = Placement::parse(EXAMPLE).unwrap();
        p.router.clients = Some(100_000);
        let text = p.to_toml().unwrap();
        assert!(text.contains("clients = 100000"), "{text}");
        assert_eq!(Placement::parse(&text).unwrap(), p);
        let config = p.nginx_config_for(RouterSizing::new(100_000, 20_000));
        assert!(config.contains("worker_processes 21;"), "{config}");
        assert!(config.contains("Sized for 100000 held clients"), "{config}");
    }

    #[test]
    fn the_nginx_configuration_is_the_golden_text() {
        let got = Placement::parse(EXAMPLE)
            .unwrap()
            .nginx_config_for(RouterSizing::new(DEFAULT_CLIENTS, 20_000));
        let want = r#"# hearth router: generated by `hearth cluster nginx --placement FILE`.
# Run unprivileged as `nginx -p PREFIX -c FILE` (pid, logs and temporary files
# under PREFIX); reload after a placement change with `nginx -p PREFIX -c FILE -s reload`.
# One realm is served by one node: its Host goes to that node only.

# Sized for 10000 held clients (`[router] clients`): each holds up to three
# connections here (client and upstream ones alike), a worker at most 20000
# open files and is planned 3/4 full (14808 connections).
worker_processes 3;
worker_rlimit_nofile 20000;
pid nginx.pid;
error_log error.log warn;

events {
    worker_connections 19744;
}

http {
    # The combined format and two timings, in seconds: the request's whole time
    # here and its node's answer time (`-` where nginx answered itself). Written
    # in 64 KiB pieces, at least every second.
    log_format hearth '$remote_addr - $remote_user [$time_local] "$request" '
                      '$status $body_bytes_sent "$http_referer" "$http_user_agent" '
                      '$request_time $upstream_response_time';
    access_log access.log hearth buffer=64k flush=1s;
    client_body_temp_path client_body_temp;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;
    default_type application/json;
    server_tokens off;

    upstream hearth_a {
        server 127.0.0.1:9991;
        keepalive 64;
        # Below hearth's --keep-alive-secs (60): nginx never reuses a connection
        # hearth is closing.
        keepalive_timeout 30s;
    }

    upstream hearth_b_2 {
        server 127.0.0.1:9981;
        keepalive 64;
        # Below hearth's --keep-alive-secs (60): nginx never reuses a connection
        # hearth is closing.
        keepalive_timeout 30s;
    }

    # Host -> the node of its realm; "" for a Host of no realm.
    map $host $hearth_upstream {
        hostnames;
        default "";
        chat.example.test hearth_b_2;
        acme.chat.example.test hearth_a;
        zeta.chat.example.test hearth_b_2;
    }

    server {
        # A listening socket per worker: the kernel spreads new connections over
        # the workers (one socket shared by all hands them to whichever wakes first,
        # and one worker can run out of connections while others are idle).
        listen 127.0.0.1:8080 reuseport;
        server_name _;
        client_max_body_size 30m;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_read_timeout 120s;
        proxy_send_timeout 120s;
        # hearth's answer for a Host of no realm.
        if ($hearth_upstream = "") {
            return 404 '{"result":"error","msg":"Invalid subdomain","code":"NONEXISTENT_SUBDOMAIN"}';
        }
        # Long-polls (the API's and the web client's): every event goes out as soon
        # as the node answers.
        location = /api/v1/events {
            proxy_buffering off;
            proxy_pass http://$hearth_upstream;
        }
        location = /json/events {
            proxy_buffering off;
            proxy_pass http://$hearth_upstream;
        }
        location / {
            proxy_pass http://$hearth_upstream;
        }
    }
}
"#;
        assert_eq!(got, want);
    }
}
