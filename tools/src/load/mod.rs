//! `hearth load`: drives a hearth server with simulated Zulip clients over real HTTP
//! and reports, per operation, counts, errors by code, throughput and latency
//! percentiles (HDR histograms), against pass/fail thresholds.
//!
//! - `users.rs`: simulated users and `hearth realm populate`;
//! - `scenarios.rs`: what the users send;
//! - `driver.rs`: client, pacing (open loop with coordinated omission corrected, or
//!   closed loop), recording, the driver's CPU time;
//! - `report.rs`: the table, the JSON, the verdict.
//!
//! - `client.rs`: the HTTP client (hyper's HTTP/1.1 connections);
//! - `ceiling.rs`: the ceiling, a minimal server in a process of its own;
//! - `capacity.rs`: `--scenario capacity`, users added in steps until unhealthy;
//! - `html.rs`: `--report FILE.html`, the charts.
//!
//! Without `--target` it starts a server in this process (on a temporary data folder
//! unless `--data` names one, with the development realm) and seeds the users before
//! it starts. With `--ceiling` the same driver also measures the ceiling (started as a
//! child process, or `--ceiling-url`), and every figure is given as a ratio of it,
//! unless the driver's own figures show that it, not the server, was the limit.

pub mod capacity;
pub mod ceiling;
pub mod client;
pub mod driver;
pub mod html;
pub mod report;
pub mod scenarios;
pub mod users;

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;

use driver::{Pacing, Recorder};
use hearth::config::{DurabilityArg, ServeConfig};
use report::Report;
use scenarios::{Env, Scenario};
use users::Credential;

/// `hearth load`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Server to drive (`http://host:port`); its users come from `--credentials`.
    /// Default: a server started in this process with the development realm.
    #[arg(long)]
    pub target: Option<String>,
    /// The `Host` header of the driver's requests, when it is not `--target`'s: a
    /// realm's host name behind a router (`hearth cluster nginx`) that routes by it.
    #[arg(long)]
    pub host: Option<String>,
    /// Drive several realms from this process, each through `--target` by its host
    /// name with the users of its credentials file (`--users` of each): `HOST=FILE`,
    /// repeated or comma-separated (`r0.example.test=r0.tsv,r1.example.test=r1.tsv`).
    /// Their requests share the process's threads and its `--source-addrs`, and one
    /// report sums them (as `--merge` does). Replaces `--host` and `--credentials`.
    #[arg(long = "realm", value_delimiter = ',', value_name = "HOST=FILE")]
    pub realms: Vec<String>,
    /// Local addresses to open connections from, in turn (`127.0.0.2,127.0.0.3`, all of
    /// `127.0.0.0/8` is this machine's): one address reaches one server port with at
    /// most the ephemeral port range, about 28 000 connections.
    #[arg(long, value_delimiter = ',')]
    pub source_addrs: Vec<std::net::IpAddr>,
    /// Drive nothing: merge these reports (`--json` files of drivers run at once, each
    /// in its own process) into one, printed and written as `--json` / `--report`
    /// say, and judged against the first report's thresholds.
    #[arg(long, num_args = 1.., value_name = "REPORT.json")]
    pub merge: Vec<PathBuf>,
    /// Credentials file of the target's simulated users (written by `hearth realm
    /// populate` as `load-users.tsv` in the data folder).
    #[arg(long)]
    pub credentials: Option<PathBuf>,
    /// Data folder of the in-process server, kept between runs so the users (and their
    /// keys) are reused; default: a temporary folder removed afterwards.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Simulated users.
    #[arg(long, default_value_t = 100)]
    pub users: usize,
    /// Measured time, after the warm-up (`30s`, `2m`, ...).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Time run but not measured before the measured part.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub warmup: Duration,
    /// What the simulated users do.
    #[arg(long, value_enum, default_value = "presence")]
    pub scenario: Scenario,
    /// Open loop: this many requests/s in all, at constant arrival, each measured from
    /// its intended start (coordinated omission corrected, as wrk2). In `presence`
    /// it sets the ping period to users ÷ rate.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Closed loop: this many connections, each sending its next request as soon as
    /// the previous one answered (default for the mixes: 32). With `--rate`: the
    /// connections the rate is spread over (default 64). In `presence` it replaces the
    /// ping schedule with back-to-back pings.
    #[arg(long)]
    pub connections: Option<usize>,
    /// `presence`: divide the 60 s ping period by this.
    #[arg(long, default_value_t = 1.0)]
    pub speedup: f64,
    /// `presence`: park the users' first long-polls spread evenly over this time
    /// (`60s`) instead of all at once. A poll's heartbeat falls due a minute after it
    /// parked, so polls parked in the same second are answered and sent again in the
    /// same second, minute after minute (as after a server restart); a crowd that
    /// arrived over a minute spreads them over it. Default: all at once.
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub spread_polls: Duration,
    /// `presence`: also send this many channel messages a minute in each realm, by its
    /// users in turn, to `--message-channel` (open loop, measured as `POST
    /// /messages`); each reaches the parked long-polls of the channel's subscribers
    /// (`hearth realm populate --subscribe`). Default: none.
    #[arg(long, default_value_t = 0.0)]
    pub messages_per_minute: f64,
    /// The channel `--messages-per-minute` sends to.
    #[arg(long, default_value = scenarios::CHANNEL)]
    pub message_channel: String,
    /// Send no `Accept-Encoding: gzip` (by default the driver asks for gzip and
    /// inflates the answers, as browsers and Zulip's mobile app do).
    #[arg(long)]
    pub no_gzip: bool,
    /// Also measure the ceiling (a minimal actix-web server in a process of its own,
    /// `hearth-tools ceiling`) and give ratios of it.
    #[arg(long)]
    pub ceiling: bool,
    /// The ceiling to measure, started by hand (`hearth-tools ceiling --bind ADDR`);
    /// implies `--ceiling`.
    #[arg(long)]
    pub ceiling_url: Option<String>,
    /// Also run wrk (when on PATH) against the ceiling, same connections and
    /// duration, and refuse the ratios when the driver reaches less than 0.8× its rate.
    #[arg(long)]
    pub wrk: bool,
    /// Write the report as one self-contained HTML page (charts drawn as SVG).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// The target's metrics listener (`http://host:port/metrics`), scraped before and
    /// after the run (the in-process server's is found by itself).
    #[arg(long)]
    pub metrics_url: Option<String>,
    /// `capacity`: simulated users added per step.
    #[arg(long, default_value_t = 100)]
    pub step_users: usize,
    /// `capacity`: how long each step runs (its users arrive in its first quarter).
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub step_duration: Duration,
    /// CPU the driver burns after each answer: a deliberately slow driver, to check
    /// that driver-bound ratios are refused.
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration, hide = true)]
    pub driver_spin: Duration,
    /// Write the report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Fail when an operation's p99 is above this (`2s`, `250ms`).
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub max_p99: Duration,
    /// Fail when more than this percentage of requests fail.
    #[arg(long, default_value_t = 0.025)]
    pub max_error_rate: f64,
    /// Durability of the in-process server.
    #[arg(long, value_enum, default_value = "always")]
    pub durability: DurabilityArg,
    /// HTTP workers of the in-process server (default: the number of cores).
    #[arg(long)]
    pub server_workers: Option<usize>,
    /// One of several `--realm`s: its report is merged, without its series.
    #[arg(skip)]
    pub merged_realm: bool,
    /// Registrations (and deletions at the end) in flight at once.
    #[arg(long, default_value_t = REGISTER_CONCURRENCY, hide = true)]
    pub register_concurrency: usize,
    /// Threads of the driver (default: the number of cores).
    #[arg(long)]
    pub driver_threads: Option<usize>,
}

/// A server started in this process, on its own thread and actix system.
struct InProcess {
    url: String,
    metrics_url: Option<String>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _tmp: Option<tempfile::TempDir>,
}

impl InProcess {
    fn start(args: &LoadArgs) -> Result<(InProcess, Vec<Credential>), String> {
        let (tmp, data) = match &args.data {
            Some(d) => (None, d.clone()),
            None => {
                let t = tempfile::tempdir().map_err(|e| format!("temporary folder: {e}"))?;
                let d = t.path().join("data");
                (Some(t), d)
            }
        };
        // Users who send channel messages are subscribed by populate, which keeps
        // existing users: run it again rather than trust the file alone.
        let sends = args.messages_per_minute > 0.0;
        let reused = (!sends)
            .then(|| users::reuse_credentials(&data, args.users))
            .flatten();
        let creds = match reused {
            Some(c) => c,
            None => {
                if !data.join("db").exists() {
                    // First start seeds the development realm; stop it again.
                    let (s, _) = InProcess::serve(args, data.clone())?;
                    s.stop();
                }
                let populate = users::PopulateArgs {
                    data: data.clone(),
                    subdomain: hearth::DEV_SUBDOMAIN.into(),
                    users: args.users,
                    subscribe: sends.then(|| args.message_channel.clone()),
                };
                users::populate(&populate).map_err(|e| e.to_string())?
            }
        };
        let (mut server, url) = InProcess::serve(args, data)?;
        server.url = url;
        server._tmp = tmp;
        Ok((server, creds))
    }

    fn serve(args: &LoadArgs, data: PathBuf) -> Result<(InProcess, String), String> {
        let mut config = ServeConfig::for_tests(data);
        config.durability = args.durability;
        config.workers = args.server_workers;
        // Its metrics listener on a free port, scraped before and after the run.
        config.metrics_bind =
            hearth::config::MetricsBind(Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0))));
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("hearth-server".into())
            .spawn(move || {
                actix_web::rt::System::new().block_on(async move {
                    match hearth::spawn(config).await {
                        Ok(running) => {
                            let _ = url_tx.send(Ok((running.url(), running.metrics_url())));
                            let _ = stop_rx.await;
                            running.shutdown().await;
                        }
                        Err(e) => {
                            let _ = url_tx.send(Err(e.to_string()));
                        }
                    }
                })
            })
            .map_err(|e| format!("server thread: {e}"))?;
        let (url, metrics_url) = url_rx
            .recv()
            .map_err(|_| "the in-process server did not start".to_owned())??;
        Ok((
            InProcess {
                url: url.clone(),
                metrics_url,
                stop: Some(stop_tx),
                thread: Some(thread),
                _tmp: None,
            },
            url,
        ))
    }

    fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs `hearth load`; `Err` on a failed run or failed thresholds (after the report).
pub fn run(args: &LoadArgs) -> Result<(), String> {
    if !args.merge.is_empty() {
        return merge_reports(args);
    }
    if args.users == 0 {
        return Err("--users must be at least 1".into());
    }
    if args.rate.is_some_and(|r| r <= 0.0 || !r.is_finite()) || args.speedup <= 0.0 {
        return Err("--rate and --speedup must be positive".into());
    }
    if args.messages_per_minute < 0.0 || !args.messages_per_minute.is_finite() {
        return Err("--messages-per-minute must be zero or more".into());
    }
    if matches!(args.scenario, Scenario::Fanout | Scenario::Capacity) && args.rate.is_some() {
        return Err("fanout and capacity pace themselves: --rate does not apply to them".into());
    }
    if args.scenario == Scenario::Capacity && args.ceiling_wanted() {
        return Err("capacity has no ceiling: --ceiling does not apply to it".into());
    }
    if args.step_users == 0 {
        return Err("--step-users must be at least 1".into());
    }
    let realms = realm_args(args)?;
    // Each held long-poll is a socket, twice when the server runs in this process.
    let held = matches!(
        args.scenario,
        Scenario::Presence | Scenario::Fanout | Scenario::Capacity
    ) as u64
        * args.users as u64
        * realms.len().max(1) as u64;
    let sockets = held * if args.target.is_none() { 2 } else { 1 } + 512;
    // The soft limit goes up to the hard one first (as `hearth serve` does).
    if let Some(limit) = hearth::api::wire::raise_open_files_limit() {
        if sockets > limit {
            return Err(format!(
                "{} users hold about {sockets} sockets, over this process's open-file limit ({limit}); raise it (`ulimit -n {}`)",
                args.users * realms.len().max(1),
                sockets.next_power_of_two()
            ));
        }
    }
    let (server, target, creds) = match &args.target {
        Some(t) if !realms.is_empty() => (None, t.clone(), Vec::new()),
        Some(t) => {
            let path = args.credentials.clone().ok_or(
                "--target needs --credentials (the load-users.tsv `hearth realm populate` writes)",
            )?;
            (None, t.clone(), target_credentials(&path, args.users)?)
        }
        None => {
            let seeding = Instant::now();
            let (s, creds) = InProcess::start(args)?;
            tracing::info!(
                "in-process server at {} with {} simulated users (ready in {:.1} s)",
                s.url,
                creds.len(),
                seeding.elapsed().as_secs_f64()
            );
            let url = s.url.clone();
            (Some(s), url, creds)
        }
    };
    let threads = args.driver_threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    });
    let metrics_url = args
        .metrics_url
        .clone()
        .or_else(|| server.as_ref().and_then(|s| s.metrics_url.clone()));
    driver::start_shards(threads)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .thread_name(driver::THREAD_NAME)
        .enable_all()
        .build()
        .map_err(|e| format!("driver runtime: {e}"))?;
    let result = if realms.is_empty() {
        runtime.block_on(drive(args, &target, &creds, threads, metrics_url, true))
    } else {
        runtime.block_on(drive_realms(&realms, &target, threads))
    };
    runtime.shutdown_timeout(Duration::from_secs(5));
    let written = result.and_then(|report| write_report(args, report));
    if let Some(s) = server {
        let stopping = Instant::now();
        s.stop();
        tracing::info!(
            "in-process server stopped in {:.1} s",
            stopping.elapsed().as_secs_f64()
        );
    }
    let report = written?;
    if report.passed {
        Ok(())
    } else {
        Err(format!("thresholds failed: {}", report.failures.join("; ")))
    }
}

/// The users of `path` (a `load-users.tsv`), the first `users` of them.
fn target_credentials(path: &std::path::Path, users: usize) -> Result<Vec<Credential>, String> {
    let mut creds = users::read_credentials(path)?;
    if creds.len() < users {
        return Err(format!(
            "{} holds {} users, fewer than --users {users}: run `hearth realm populate --users {users}` on the stopped server",
            path.display(),
            creds.len(),
        ));
    }
    creds.truncate(users);
    Ok(creds)
}

/// `--realm`: each realm's arguments (`--host` and `--credentials` its own, the
/// set-up's registrations shared out so that the process has about as many in flight
/// as one realm alone) and users. Empty without `--realm`.
fn realm_args(args: &LoadArgs) -> Result<Vec<(LoadArgs, Vec<Credential>)>, String> {
    if args.realms.is_empty() {
        return Ok(Vec::new());
    }
    if args.target.is_none() {
        return Err("--realm needs --target (the router the realms are reached through)".into());
    }
    if args.host.is_some() || args.credentials.is_some() {
        return Err(
            "--realm names each realm's host and credentials: leave out --host and --credentials"
                .into(),
        );
    }
    if args.ceiling_wanted() || args.scenario == Scenario::Capacity {
        return Err("--realm drives hearth only: no --ceiling, no capacity".into());
    }
    let share = (REGISTER_CONCURRENCY * 4 / args.realms.len()).max(2);
    args.realms
        .iter()
        .map(|spec| {
            let (host, path) = spec
                .split_once('=')
                .filter(|(h, p)| !h.is_empty() && !p.is_empty())
                .ok_or_else(|| format!("--realm {spec}: expected HOST=CREDENTIALS-FILE"))?;
            let mut a = args.clone();
            a.realms = Vec::new();
            a.merged_realm = true;
            a.host = Some(host.to_owned());
            a.credentials = Some(PathBuf::from(path));
            a.register_concurrency = share.min(REGISTER_CONCURRENCY);
            let creds = target_credentials(std::path::Path::new(path), args.users)?;
            Ok((a, creds))
        })
        .collect()
}

/// Registrations (and deletions) a driver has in flight at its set-up and its end.
const REGISTER_CONCURRENCY: usize = 64;

/// `--realm`: every realm driven at once in this process, one report of them all (as
/// `--merge` sums reports), with the process's own CPU and threads.
async fn drive_realms(
    realms: &[(LoadArgs, Vec<Credential>)],
    target: &str,
    threads: usize,
) -> Result<Report, String> {
    let cpu_before = driver::cpu_seconds();
    let started = Instant::now();
    let reports = futures_util::future::join_all(
        realms
            .iter()
            .map(|(a, creds)| drive(a, target, creds, threads, None, false)),
    )
    .await
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;
    let wall = started.elapsed();
    let cpu_after = driver::cpu_seconds();
    let hosts: Vec<_> = realms.iter().filter_map(|(a, _)| a.host.clone()).collect();
    let mut report = report::merge(reports)?;
    report.target = match hosts.as_slice() {
        [one] => format!("{target} as {one}"),
        [first, .., last] => format!("{target} as {} realms ({first} … {last})", hosts.len()),
        [] => target.to_owned(),
    };
    report.settings[0] = ("realms in this driver".to_owned(), hosts.len().to_string());
    report.driver_threads = threads;
    let (driver_cpu, process_cpu) = match (cpu_before, cpu_after) {
        (Some(b), Some(a)) => (Some(a.0 - b.0), Some(a.1 - b.1)),
        _ => (None, None),
    };
    report.driver_cpu_s = driver_cpu;
    report.process_cpu_s = process_cpu;
    report.driver_cpu_percent_of_core =
        driver_cpu.map(|c| 100.0 * c / wall.as_secs_f64().max(1e-9));
    Ok(report)
}

/// Prints the report's table and writes it where `--json` and `--report` say.
fn write_report(args: &LoadArgs, report: Report) -> Result<Report, String> {
    let mut out = std::io::stdout().lock();
    out.write_all(report.table().as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())?;
    if let Some(path) = &args.json {
        let json = serde_json::to_vec_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(path, json).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    if let Some(path) = &args.report {
        std::fs::write(path, html::page(&report))
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(report)
}

/// `--merge`: one report of several (`report::merge`).
fn merge_reports(args: &LoadArgs) -> Result<(), String> {
    let mut reports = Vec::new();
    for path in &args.merge {
        let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        reports.push(
            serde_json::from_slice(&bytes)
                .map_err(|e| format!("{}: not a hearth load report ({e})", path.display()))?,
        );
    }
    let report = write_report(args, report::merge(reports)?)?;
    if report.passed {
        Ok(())
    } else {
        Err(format!("thresholds failed: {}", report.failures.join("; ")))
    }
}

fn pacing(args: &LoadArgs) -> Pacing {
    match args.rate {
        Some(rate) => Pacing::Open {
            rate,
            connections: args.connections.unwrap_or(64),
        },
        None => Pacing::Closed {
            connections: args.connections.unwrap_or(32),
        },
    }
}

/// `fanout`: how long after every poll was sent a round starts (for them to park).
const FANOUT_SETTLE: Duration = Duration::from_millis(300);
/// `fanout`: how long a round waits for its last delivery.
const FANOUT_TIMEOUT: Duration = Duration::from_secs(30);

/// The presence ping period: 60 s ÷ speedup, or users ÷ rate.
fn ping_period(args: &LoadArgs) -> Duration {
    match args.rate {
        Some(rate) => Duration::from_secs_f64(args.users as f64 / rate),
        None => Duration::from_secs_f64(60.0 / args.speedup),
    }
}

/// The time between two channel messages of one realm (`--messages-per-minute`), if
/// any are sent.
fn message_period(args: &LoadArgs) -> Option<Duration> {
    (args.messages_per_minute > 0.0)
        .then(|| Duration::from_secs_f64(60.0 / args.messages_per_minute))
}

fn pacing_text(args: &LoadArgs) -> String {
    if args.scenario == Scenario::Presence && args.connections.is_none() {
        return format!(
            "open loop: a ping per user every {:.2} s ({:.1} pings/s), long-polls held",
            ping_period(args).as_secs_f64(),
            args.users as f64 / ping_period(args).as_secs_f64()
        );
    }
    if args.scenario == Scenario::Capacity {
        return capacity::Plan::of(args).text();
    }
    if args.scenario == Scenario::ReconnectStorm {
        return "reconnect storms, back to back".into();
    }
    if args.scenario == Scenario::Fanout {
        return format!(
            "fan-out rounds: every user holds a long-poll; user 0 changes its status once all are parked (+{} ms)",
            FANOUT_SETTLE.as_millis()
        );
    }
    match pacing(args) {
        Pacing::Open { rate, connections } => {
            format!("open loop: {rate} req/s over {connections} connections")
        }
        Pacing::Closed { connections } => format!("closed loop: {connections} connections"),
    }
}

impl LoadArgs {
    /// `--ceiling` or `--ceiling-url`.
    pub fn ceiling_wanted(&self) -> bool {
        self.ceiling || self.ceiling_url.is_some()
    }
}

/// What one phase (against hearth, or against the ceiling) measured.
pub struct PhaseOut {
    pub recorder: Arc<Recorder>,
    /// The measured part's length.
    pub measured: Duration,
    /// The driver's CPU seconds and the wall time over the warm-up and measured part.
    pub driver_cpu_s: Option<f64>,
    pub wall: Duration,
    /// The time the driver's runtime threads were busy (not waiting for answers), over
    /// the same part, summed over its threads.
    pub driver_busy: Duration,
    /// Connections the driver opened.
    pub connections: u64,
    /// `capacity`: its steps.
    pub steps: Vec<report::Step>,
}

/// One measured phase against `base`: the scenario's set-up, warm-up and measured part.
/// `ceiling`: `base` is the ceiling (every request is recorded as `ceiling`, except in
/// `fanout`, whose rounds run against it as against hearth).
async fn phase(
    args: &LoadArgs,
    base: &str,
    creds: &[Credential],
    ceiling: bool,
    bar: &indicatif::ProgressBar,
) -> Result<PhaseOut, String> {
    // The ceiling is its own server, not behind the router.
    let (host, sources) = if ceiling {
        (None, Vec::new())
    } else {
        (args.host.as_deref(), args.source_addrs.clone())
    };
    let http =
        client::Http::with_options(base, host, sources, args.driver_spin)?.with_gzip(!args.no_gzip);
    // Set-up requests are warm-up: the measured part starts after them.
    let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
    let recorder = Recorder::with_series(far, !args.merged_realm);
    let renamed = ceiling && args.scenario != Scenario::Fanout;
    let env = Arc::new(Env::new(
        http,
        creds,
        recorder.clone(),
        renamed,
        args.scenario,
    ));
    let needs_queues = matches!(
        args.scenario,
        Scenario::Presence | Scenario::Mixed | Scenario::Fanout
    );
    if needs_queues && !renamed {
        bar.set_message(format!("registering {} queues", creds.len()));
        let registering = Instant::now();
        scenarios::register_all(&env, args.register_concurrency).await;
        tracing::info!(
            "{}{} queues registered in {:.1} s; the warm-up starts",
            args.host
                .as_ref()
                .map(|h| format!("{h}: "))
                .unwrap_or_default(),
            creds.len(),
            registering.elapsed().as_secs_f64()
        );
    }
    let cpu_before = driver::cpu_seconds();
    let busy_before = driver::busy();
    let start = Instant::now();
    let measure_from = start + args.warmup;
    let until = measure_from + args.duration;
    recorder.measure_from(measure_from);
    let progress = {
        let (recorder, bar) = (recorder.clone(), bar.clone());
        let label = if ceiling { "ceiling" } else { "hearth" };
        tokio::spawn(async move {
            let mut last = (Instant::now(), 0u64);
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let sent = recorder.sent.load(Ordering::Relaxed);
                let failed = recorder.failed.load(Ordering::Relaxed);
                let now = Instant::now();
                let rate = (sent - last.1) as f64 / (now - last.0).as_secs_f64();
                last = (now, sent);
                let stage = if now < measure_from {
                    "warm-up"
                } else {
                    "measuring"
                };
                bar.set_position(now.saturating_duration_since(start).as_secs());
                bar.set_message(format!(
                    "{label} {stage}: {rate:.0} req/s, {sent} answers, {failed} errors"
                ));
            }
        })
    };
    let holds = matches!(args.scenario, Scenario::Presence | Scenario::Fanout);
    let polls = if holds && !renamed {
        let spread = if args.scenario == Scenario::Presence {
            args.spread_polls
        } else {
            Duration::ZERO
        };
        scenarios::hold_polls(&env, spread)
    } else {
        Vec::new()
    };
    let mut steps = Vec::new();
    match args.scenario {
        Scenario::Presence if args.connections.is_none() => {
            let every = message_period(args);
            tokio::join!(
                scenarios::presence_schedule(&env, ping_period(args), start, until),
                async {
                    if let Some(every) = every {
                        scenarios::message_schedule(
                            &env,
                            &args.message_channel,
                            every,
                            start,
                            until,
                        )
                        .await;
                    }
                }
            );
        }
        Scenario::ReconnectStorm => scenarios::storms(&env, until).await,
        Scenario::Fanout => {
            scenarios::fanout_rounds(&env, until, FANOUT_SETTLE, FANOUT_TIMEOUT).await
        }
        Scenario::Capacity => {
            recorder.measure_from(start);
            steps = capacity::run(&env, &capacity::Plan::of(args), bar).await;
        }
        scenario => scenarios::paced(&env, scenario, pacing(args), start, until).await,
    }
    let wall = start.elapsed();
    let cpu_after = driver::cpu_seconds();
    let driver_busy = driver::busy().saturating_sub(busy_before);
    let measured = Instant::now().saturating_duration_since(measure_from);
    for p in polls {
        p.abort();
    }
    if (needs_queues || args.scenario == Scenario::Capacity) && !renamed {
        bar.set_message(format!("deleting {} queues", creds.len()));
        scenarios::delete_all(&env, args.register_concurrency).await;
    }
    progress.abort();
    let (wire, text) = (
        env.http.body_bytes.load(Ordering::Relaxed),
        env.http.text_bytes.load(Ordering::Relaxed),
    );
    tracing::info!(
        "answers' bodies: {:.1} MiB received, {:.1} MiB inflated",
        wire as f64 / (1 << 20) as f64,
        text as f64 / (1 << 20) as f64
    );
    Ok(PhaseOut {
        recorder,
        measured: if args.scenario == Scenario::Capacity {
            wall
        } else {
            measured.max(Duration::from_millis(1))
        },
        driver_cpu_s: cpu_before.zip(cpu_after).map(|(b, a)| a.0 - b.0),
        wall,
        driver_busy,
        connections: env.http.opened.load(Ordering::Relaxed),
        steps,
    })
}

/// The lines of a Prometheus text scrape (`name{labels}` → value), comments left out.
async fn scrape(url: &str) -> Option<BTreeMap<String, f64>> {
    let http = client::Http::new(url, Duration::ZERO).ok()?;
    let path = url
        .strip_prefix("http://")
        .and_then(|rest| rest.find('/').map(|at| rest[at..].to_owned()))
        .unwrap_or_else(|| "/metrics".to_owned());
    let req = client::Req {
        method: ::http::Method::GET,
        path,
        auth: None,
        form: None,
    };
    let (status, body) = http.send(req).await.ok()?;
    if status != 200 {
        return None;
    }
    let text = String::from_utf8_lossy(&body);
    Some(
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| {
                let (name, value) = l.rsplit_once(' ')?;
                Some((name.to_owned(), value.parse().ok()?))
            })
            .collect(),
    )
}

/// The series whose value changed between two scrapes (histogram buckets left out:
/// their `_sum` and `_count` say the same in two lines).
fn metric_deltas(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> Vec<report::MetricDelta> {
    after
        .iter()
        .filter(|(name, _)| !name.contains("_bucket{"))
        .filter_map(|(name, &a)| {
            let b = before.get(name).copied().unwrap_or(0.0);
            (a != b).then(|| report::MetricDelta {
                series: name.clone(),
                before: b,
                after: a,
                delta: a - b,
            })
        })
        .collect()
}

/// wrk against the ceiling, closed loop with the driver's connections and threads.
fn run_wrk(
    url: &str,
    threads: usize,
    connections: usize,
    duration: Duration,
    auth: &str,
) -> Result<report::WrkFigure, String> {
    let secs = duration.as_secs().max(1);
    let target = format!("{}/api/v1/users/me", url.trim_end_matches('/'));
    let args = vec![
        format!("-t{}", threads.min(connections).max(1)),
        format!("-c{connections}"),
        format!("-d{secs}s"),
        "-H".to_owned(),
        format!("Authorization: {auth}"),
        target,
    ];
    let out = std::process::Command::new("wrk")
        .args(&args)
        .output()
        .map_err(|e| format!("wrk: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let rate = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .ok_or_else(|| format!("wrk printed no rate: {text}"))?;
    Ok(report::WrkFigure {
        command: format!("wrk {}", args.join(" ").replace(auth, "…")),
        req_per_s: rate,
    })
}

async fn drive(
    args: &LoadArgs,
    target: &str,
    creds: &[Credential],
    threads: usize,
    metrics_url: Option<String>,
    show_progress: bool,
) -> Result<Report, String> {
    let total = (args.warmup + args.duration).as_secs() * if args.ceiling_wanted() { 2 } else { 1 };
    let bar = if show_progress && std::io::stderr().is_terminal() {
        indicatif::ProgressBar::new(total)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} s {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let metrics_before = match &metrics_url {
        Some(u) => scrape(u).await,
        None => None,
    };
    let cpu_before = driver::cpu_seconds();
    let hearth = phase(args, target, creds, false, &bar).await?;
    let cpu_after = driver::cpu_seconds();
    let metrics_after = match &metrics_url {
        Some(u) => scrape(u).await,
        None => None,
    };
    let mut ops: Vec<_> = hearth
        .recorder
        .take()
        .iter()
        .map(|(op, s)| report::op_report(op, s, hearth.measured))
        .collect();
    ops.sort_by(|a, b| a.op.cmp(&b.op));
    let mut phases = vec![report::phase_figures("hearth", &hearth, threads, None)];
    let mut series = report::series("hearth", &hearth.recorder.take_series());
    let mut ceiling = None;
    let mut wrk = None;
    if args.ceiling_wanted() {
        let child = match &args.ceiling_url {
            Some(_) => None,
            None => Some(ceiling::Child::spawn(args.server_workers)?),
        };
        let url = match (&args.ceiling_url, &child) {
            (Some(u), _) => u.clone(),
            (None, Some(c)) => c.url.clone(),
            (None, None) => unreachable!("a ceiling was started"),
        };
        let ceiling_cpu_before = child
            .as_ref()
            .and_then(|c| ceiling::process_cpu_seconds(c.pid()));
        let out = phase(args, &url, creds, true, &bar).await?;
        let ceiling_cpu = child
            .as_ref()
            .and_then(|c| ceiling::process_cpu_seconds(c.pid()))
            .zip(ceiling_cpu_before)
            .map(|(a, b)| a - b);
        let stats = out.recorder.take();
        let (name, label) = if args.scenario == Scenario::Fanout {
            (scenarios::FANOUT_LAST, "ceiling: fan-out to the last poll")
        } else {
            ("ceiling", "ceiling")
        };
        ceiling = stats
            .get(name)
            .map(|s| report::op_report(label, s, out.measured));
        phases.push(report::phase_figures("ceiling", &out, threads, ceiling_cpu));
        series.extend(report::series("ceiling", &out.recorder.take_series()));
        if args.wrk {
            if let Pacing::Closed { connections } = pacing(args) {
                if args.scenario != Scenario::Fanout {
                    bar.set_message("wrk against the ceiling");
                    let auth = {
                        use base64::Engine;
                        let c = &creds[0];
                        format!(
                            "Basic {}",
                            base64::engine::general_purpose::STANDARD
                                .encode(format!("{}:{}", c.email, c.api_key))
                        )
                    };
                    wrk = Some(run_wrk(&url, threads, connections, args.duration, &auth));
                }
            }
        }
        drop(child);
    }
    bar.finish_and_clear();
    let (driver_cpu, process_cpu) = match (cpu_before, cpu_after) {
        (Some(b), Some(a)) => (Some(a.0 - b.0), Some(a.1 - b.1)),
        _ => (None, None),
    };
    let (wrk, wrk_error) = match wrk {
        Some(Ok(w)) => (Some(w), None),
        Some(Err(e)) => (None, Some(e)),
        None => (None, None),
    };
    let mut report = Report {
        scenario: format!("{:?}", args.scenario).to_lowercase(),
        target: if args.target.is_some() {
            target.to_owned()
        } else {
            format!("{target} (in-process)")
        },
        users: creds.len(),
        pacing: pacing_text(args),
        duration_s: hearth.measured.as_secs_f64(),
        ops,
        ceiling,
        driver_threads: threads,
        driver_cpu_s: driver_cpu,
        driver_cpu_percent_of_core: driver_cpu
            .map(|c| 100.0 * c / hearth.wall.as_secs_f64().max(1e-9)),
        process_cpu_s: process_cpu,
        phases,
        wrk,
        wrk_error,
        driver_vs_wrk: None,
        ratio_refused: None,
        fanout_ratio: None,
        settings: settings(args, threads),
        metrics: match (&metrics_before, &metrics_after) {
            (Some(b), Some(a)) => metric_deltas(b, a),
            _ => Vec::new(),
        },
        metrics_url,
        series,
        capacity: (args.scenario == Scenario::Capacity)
            .then(|| report::Capacity::of(hearth.steps.clone())),
        total_requests: 0,
        total_errors: 0,
        error_rate_percent: 0.0,
        worst_p99_ms: 0.0,
        max_p99_ms: args.max_p99.as_secs_f64() * 1000.0,
        max_error_rate_percent: args.max_error_rate,
        passed: false,
        failures: Vec::new(),
    };
    report.finish();
    Ok(report)
}

/// The run's settings, as the report shows them.
fn settings(args: &LoadArgs, threads: usize) -> Vec<(String, String)> {
    let mut s = vec![
        (
            "scenario".to_owned(),
            format!("{:?}", args.scenario).to_lowercase(),
        ),
        ("users".to_owned(), args.users.to_string()),
        ("pacing".to_owned(), pacing_text(args)),
        (
            "warm-up".to_owned(),
            humantime::format_duration(args.warmup).to_string(),
        ),
        (
            "duration".to_owned(),
            humantime::format_duration(args.duration).to_string(),
        ),
        ("driver threads".to_owned(), threads.to_string()),
        (
            "server workers".to_owned(),
            args.server_workers
                .map_or("the number of cores".to_owned(), |w| w.to_string()),
        ),
        (
            "durability".to_owned(),
            format!("{:?}", args.durability).to_lowercase(),
        ),
        (
            "max p99".to_owned(),
            humantime::format_duration(args.max_p99).to_string(),
        ),
        (
            "max error rate".to_owned(),
            format!("{} %", args.max_error_rate),
        ),
        ("ceiling".to_owned(), args.ceiling_wanted().to_string()),
    ];
    if args.scenario == Scenario::Capacity {
        s.push(("step users".to_owned(), args.step_users.to_string()));
        s.push((
            "step duration".to_owned(),
            humantime::format_duration(args.step_duration).to_string(),
        ));
        s.push(("speedup".to_owned(), args.speedup.to_string()));
    }
    s.push((
        "answers".to_owned(),
        if args.no_gzip {
            "uncompressed (no Accept-Encoding)"
        } else {
            "gzip asked for (Accept-Encoding: gzip), inflated"
        }
        .to_owned(),
    ));
    if let Some(every) = message_period(args) {
        s.push((
            "channel messages per realm".to_owned(),
            format!(
                "{:.2} a minute (one every {:.2} s) to #{}",
                args.messages_per_minute,
                every.as_secs_f64(),
                args.message_channel
            ),
        ));
    }
    if !args.spread_polls.is_zero() {
        s.push((
            "first long-polls spread over".to_owned(),
            humantime::format_duration(args.spread_polls).to_string(),
        ));
    }
    if !args.driver_spin.is_zero() {
        s.push((
            "driver spin (deliberately slow driver)".to_owned(),
            humantime::format_duration(args.driver_spin).to_string(),
        ));
    }
    s
}
