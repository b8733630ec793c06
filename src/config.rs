//! The server's configuration: `hearth serve`'s and `hearth realm create`'s flags (each
//! also reads a `HEARTH_*` variable), which the library and the tests build too. The
//! command table itself is the binary's (`src/cli.rs`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::storage::DurabilityMode;

/// Where message rows are written (`serve --message-projection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MessageProjection {
    /// The message database's writer thread, batched, off the realm actors.
    Writer,
    /// Each realm's actor, one change at a time.
    Inline,
}

/// When acknowledged writes reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DurabilityArg {
    /// Answer a write after the fsync that covers it (concurrent writes share one).
    Always,
    /// fsync every `--flush-interval-ms`; answer at once.
    Interval,
    /// Never fsync on the write path (tests, load harnesses).
    Never,
}

/// Which requests get a line in the log (`hearth::http`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AccessLog {
    /// Every request.
    All,
    /// Errors (a status of 400 or more, 429 aside) and slow requests (longer than
    /// `--slow-request-ms`; a long-poll is not slow).
    Notable,
    /// None.
    Off,
}

/// A feature switched on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    On,
    Off,
}

/// `hearth serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// Address to listen on.
    #[arg(long, env = "HEARTH_BIND", default_value = "127.0.0.1:9991")]
    pub bind: SocketAddr,
    /// Folder of the embedded database.
    #[arg(long, env = "HEARTH_DATA", default_value = "./data")]
    pub data: PathBuf,
    /// Serve (and on first start seed) the development realm; enables dev_fetch_api_key.
    #[arg(long, env = "HEARTH_DEV")]
    pub dev: bool,
    /// Seed the development realm without its message history (its users, channels and
    /// groups only); tests that count messages from an empty realm use it.
    #[arg(long, env = "HEARTH_DEV_WITHOUT_HISTORY")]
    pub dev_without_history: bool,
    /// When acknowledged writes reach the disk.
    #[arg(long, env = "HEARTH_DURABILITY", value_enum, default_value = "always")]
    pub durability: DurabilityArg,
    /// Flush period of `--durability interval`, in milliseconds.
    #[arg(long, env = "HEARTH_FLUSH_INTERVAL_MS", default_value_t = 1000)]
    pub flush_interval_ms: u64,
    /// Snapshot a realm after this many WAL records (0: only at shutdown).
    #[arg(long, env = "HEARTH_SNAPSHOT_EVERY", default_value_t = 10_000)]
    pub snapshot_every: u64,
    /// sled's page cache of the message database, in MiB (sled's default is 1 024):
    /// what it keeps of message rows and indexes read or written. Its page table, a
    /// few dozen bytes per key, comes on top.
    #[arg(long, env = "HEARTH_MESSAGE_CACHE_MB", default_value_t = crate::storage::messages::DEFAULT_CACHE_MB)]
    pub message_cache_mb: u64,
    /// Where the realm actors' message rows are written: on the message database's
    /// writer thread, batched (`writer`), or on each realm's actor, one change at a
    /// time (`inline`, as before the writer thread; for comparison).
    #[arg(
        long,
        env = "HEARTH_MESSAGE_PROJECTION",
        value_enum,
        default_value = "writer"
    )]
    pub message_projection: MessageProjection,
    /// Whether each realm keeps a full-text index of its messages for `search` narrows
    /// (`<data>/search/`; `false`: searches read every candidate row).
    #[arg(long, env = "HEARTH_SEARCH_INDEX", default_value_t = true, action = clap::ArgAction::Set)]
    pub search_index: bool,
    /// Memory a realm's search index writer may buffer before it writes a segment, in
    /// MiB (at least 15).
    #[arg(long, env = "HEARTH_SEARCH_WRITER_MB", default_value_t = crate::storage::messages::search::DEFAULT_WRITER_MB)]
    pub search_writer_mb: u64,
    /// The server's public URL, which clients store as the account's address
    /// (`realm_url`) for realms without a URL of their own (default: http://<bind>).
    #[arg(long, env = "HEARTH_URL")]
    pub url: Option<String>,
    /// HTTP worker threads (default: the number of cores).
    #[arg(long, env = "HEARTH_WORKERS")]
    pub workers: Option<usize>,
    /// Largest file `POST /user_uploads` accepts, in MiB (`max_file_upload_size_mib`).
    #[arg(long, env = "HEARTH_MAX_FILE_UPLOAD_SIZE_MIB", default_value_t = 100)]
    pub max_file_upload_size_mib: u64,
    /// Uploads no message links are deleted this many days after upload (Zulip: three
    /// weeks); 0 never deletes them.
    #[arg(long, env = "HEARTH_UPLOAD_SWEEP_DAYS", default_value_t = 21)]
    pub upload_sweep_days: u64,
    /// Push relay (Zulip's push bouncer API) for E2EE mobile notifications, with the
    /// server's credentials in the URL: http(s)://ORG_ID:ORG_KEY@host/. Without it, push
    /// devices cannot be registered.
    #[arg(long, env = "HEARTH_PUSH_RELAY_URL")]
    pub push_relay_url: Option<String>,
    /// SMTP server for invitation emails: smtp://host:port (plain), smtp://host:587?tls=required
    /// (STARTTLS) or smtps://host:465 (TLS), credentials as smtp://user:password@host.
    /// Without it, email invitations are refused (the development server logs them).
    #[arg(long, env = "HEARTH_SMTP_URL")]
    pub smtp_url: Option<String>,
    /// Let outgoing-webhook bots reach addresses on loopback, link-local and private
    /// networks (after DNS resolution and on every redirect; refused by default, as
    /// Zulip refuses them through Smokescreen). `--dev` allows loopback by itself.
    #[arg(long, env = "HEARTH_WEBHOOK_ALLOW_PRIVATE")]
    pub webhook_allow_private: bool,
    /// The From address of outgoing email (default: noreply@<host of the realm URL>).
    #[arg(long, env = "HEARTH_SMTP_FROM")]
    pub smtp_from: Option<String>,
    /// Where `GET /metrics` (Prometheus text format) is served, on a listener of its
    /// own; `off` serves none. Keep it on loopback or a private network.
    #[arg(long, env = "HEARTH_METRICS_BIND", default_value = "127.0.0.1:9992", value_parser = parse_metrics_bind)]
    pub metrics_bind: MetricsBind,
    /// Where the admin listener (operator commands: status, freeze, WAL shipping,
    /// activate, drop; see `hearth::admin`) is served; `off` serves none. Its bearer
    /// token is written to DATA/admin-token (mode 0600) at each start. Keep it on
    /// loopback or a private network.
    #[arg(long, env = "HEARTH_ADMIN_BIND", default_value = "127.0.0.1:9993", value_parser = parse_admin_bind)]
    pub admin_bind: MetricsBind,
    /// A reverse proxy (address or CIDR, e.g. 127.0.0.1 or 10.0.0.0/8; repeatable)
    /// whose X-Forwarded-For is believed: the client's address (per-IP rate limits) is
    /// then the rightmost address of that header not itself a trusted proxy.
    #[arg(long = "trusted-proxy", env = "HEARTH_TRUSTED_PROXY", value_delimiter = ',', value_parser = parse_trusted_proxy)]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Rate limits (Zulip's: 200 requests a minute per user, 100 per IP address for
    /// calls without valid credentials). Default: on, and off under `--dev`.
    #[arg(long, env = "HEARTH_RATE_LIMIT", value_enum)]
    pub rate_limit: Option<Switch>,
    /// Requests a minute one user may make when rate limits are on.
    #[arg(long, env = "HEARTH_RATE_LIMIT_PER_USER", default_value_t = 200)]
    pub rate_limit_per_user: u32,
    /// Requests a minute one IP address may make without valid credentials.
    #[arg(long, env = "HEARTH_RATE_LIMIT_PER_IP", default_value_t = 100)]
    pub rate_limit_per_ip: u32,
    /// Time a client has to send a request's head, in milliseconds (then 408).
    #[arg(long, env = "HEARTH_CLIENT_REQUEST_TIMEOUT_MS", default_value_t = 5000)]
    pub client_request_timeout_ms: u64,
    /// Time a closing connection has to finish, in milliseconds.
    #[arg(
        long,
        env = "HEARTH_CLIENT_DISCONNECT_TIMEOUT_MS",
        default_value_t = 1000
    )]
    pub client_disconnect_timeout_ms: u64,
    /// Idle time a kept-alive connection stays open, in seconds.
    #[arg(long, env = "HEARTH_KEEP_ALIVE_SECS", default_value_t = 60)]
    pub keep_alive_secs: u64,
    /// Largest number of open connections; more wait to be accepted. Capped below the
    /// process's limit of open files (raised to its hard limit at start).
    #[arg(long, env = "HEARTH_MAX_CONNECTIONS", default_value_t = 100_000)]
    pub max_connections: usize,
    /// Which requests get a line in the log: `all`, `notable` (errors and slow requests)
    /// or `off`.
    #[arg(long, env = "HEARTH_ACCESS_LOG", value_enum, default_value = "notable")]
    pub access_log: AccessLog,
    /// A request answered after this many milliseconds is slow (`--access-log notable`).
    #[arg(long, env = "HEARTH_SLOW_REQUEST_MS", default_value_t = 1000)]
    pub slow_request_ms: u64,
    /// Run the event ticker (heartbeats, queue collection) every second. Tests that
    /// inject a clock turn it off and tick by hand.
    #[arg(skip = true)]
    pub tick: bool,
    /// Let `--dev` serve a folder that also holds production realms (tests that need
    /// both in one server); never from the command line: `--dev` refuses such a folder.
    #[arg(skip = false)]
    pub dev_beside_production: bool,
}

impl ServeConfig {
    /// A configuration for tests: port 0, this data folder, no fsync waits.
    pub fn for_tests(data: PathBuf) -> Self {
        ServeConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            data,
            dev: true,
            dev_without_history: true,
            durability: DurabilityArg::Never,
            flush_interval_ms: 1000,
            snapshot_every: 10_000,
            message_cache_mb: crate::storage::messages::DEFAULT_CACHE_MB,
            message_projection: MessageProjection::Writer,
            search_index: true,
            search_writer_mb: crate::storage::messages::search::DEFAULT_WRITER_MB,
            url: None,
            workers: Some(2),
            max_file_upload_size_mib: 100,
            upload_sweep_days: 21,
            push_relay_url: None,
            smtp_url: None,
            webhook_allow_private: false,
            smtp_from: None,
            metrics_bind: MetricsBind(None),
            admin_bind: MetricsBind(None),
            trusted_proxies: Vec::new(),
            rate_limit: None,
            rate_limit_per_user: 200,
            rate_limit_per_ip: 100,
            client_request_timeout_ms: 5000,
            client_disconnect_timeout_ms: 1000,
            keep_alive_secs: 60,
            max_connections: 100_000,
            access_log: AccessLog::All,
            slow_request_ms: 1000,
            tick: true,
            // The harness serves the development realm beside realms it creates.
            dev_beside_production: true,
        }
    }

    /// Whether rate limits apply: `--rate-limit`, else on unless `--dev`.
    pub fn rate_limited(&self) -> bool {
        match self.rate_limit {
            Some(switch) => switch == Switch::On,
            None => !self.dev,
        }
    }

    /// The connection limits.
    pub fn net_limits(&self) -> NetLimits {
        NetLimits {
            request_timeout: Duration::from_millis(self.client_request_timeout_ms),
            disconnect_timeout: Duration::from_millis(self.client_disconnect_timeout_ms),
            keep_alive: Duration::from_secs(self.keep_alive_secs),
            max_connections: self.max_connections.max(1),
        }
    }

    pub fn durability_mode(&self) -> DurabilityMode {
        match self.durability {
            DurabilityArg::Always => DurabilityMode::Always,
            DurabilityArg::Interval => DurabilityMode::Interval(self.flush_interval_ms),
            DurabilityArg::Never => DurabilityMode::Never,
        }
    }
}

/// `hearth realm create`.
#[derive(Debug, Clone, Args)]
pub struct CreateRealm {
    /// Host prefix that selects the realm ("" for the root domain).
    #[arg(long, env = "HEARTH_SUBDOMAIN")]
    pub subdomain: String,
    /// The organization's name.
    #[arg(long)]
    pub name: String,
    /// The owner's email address.
    #[arg(long)]
    pub owner_email: String,
    /// The owner's full name (default: the part of the email before the @).
    #[arg(long)]
    pub owner_name: Option<String>,
    /// The owner's password, for `POST /fetch_api_key` (default: none).
    #[arg(long, env = "HEARTH_OWNER_PASSWORD")]
    pub owner_password: Option<String>,
    /// Folder of the embedded database.
    #[arg(long, env = "HEARTH_DATA", default_value = "./data")]
    pub data: PathBuf,
    /// The realm's public URL, written to the zuliprc as `site`.
    #[arg(long, env = "HEARTH_URL", default_value = "http://127.0.0.1:9991")]
    pub url: String,
    /// Where to write the owner's zuliprc.
    #[arg(long, default_value = "./zuliprc")]
    pub zuliprc: PathBuf,
}

/// `--metrics-bind`: an address, or none (`off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsBind(pub Option<SocketAddr>);

fn parse_metrics_bind(s: &str) -> Result<MetricsBind, String> {
    if s == "off" {
        return Ok(MetricsBind(None));
    }
    s.parse()
        .map(|a| MetricsBind(Some(a)))
        .map_err(|e| format!("'{s}' is not an address such as 127.0.0.1:9992 or 'off' ({e})"))
}

/// `--admin-bind`: an address, or none (`off`).
fn parse_admin_bind(s: &str) -> Result<MetricsBind, String> {
    if s == "off" {
        return Ok(MetricsBind(None));
    }
    s.parse()
        .map(|a| MetricsBind(Some(a)))
        .map_err(|e| format!("'{s}' is not an address such as 127.0.0.1:9993 or 'off' ({e})"))
}

/// `--trusted-proxy`: an address (one host) or a network in CIDR notation.
pub fn parse_trusted_proxy(s: &str) -> Result<ipnet::IpNet, String> {
    let s = s.trim();
    if s.contains('/') {
        return s
            .parse::<ipnet::IpNet>()
            .map(|n| n.trunc())
            .map_err(|e| format!("'{s}' is not a network such as 10.0.0.0/8 ({e})"));
    }
    s.parse::<std::net::IpAddr>()
        .map(ipnet::IpNet::from)
        .map_err(|e| format!("'{s}' is not an IP address or a network such as 10.0.0.0/8 ({e})"))
}

/// Connection limits (`hearth serve --keep-alive-secs ...`).
#[derive(Debug, Clone, Copy)]
pub struct NetLimits {
    /// Time a client has to send a request's head (408 after it).
    pub request_timeout: Duration,
    /// Time a closing connection has to finish (0: none).
    pub disconnect_timeout: Duration,
    /// Idle time a kept-alive connection is kept open.
    pub keep_alive: Duration,
    /// Largest number of open connections, over all workers.
    pub max_connections: usize,
}
