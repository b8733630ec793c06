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
//! Without `--target` it starts a server in this process (on a temporary data folder
//! unless `--data` names one, with the development realm) and seeds the users before
//! it starts. With `--ceiling` the same driver also measures a minimal actix-web handler
//! that answers Zulip's success body, and every figure is given as a ratio of it.

pub mod driver;
pub mod report;
pub mod scenarios;
pub mod users;

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
    /// Also measure the ceiling (a minimal actix-web handler) and give ratios of it.
    #[arg(long)]
    pub ceiling: bool,
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
    /// Threads of the driver (default: the number of cores).
    #[arg(long)]
    pub driver_threads: Option<usize>,
}

/// A server started in this process, on its own thread and actix system.
struct InProcess {
    url: String,
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
        let creds = match users::reuse_credentials(&data, args.users) {
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
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("hearth-server".into())
            .spawn(move || {
                actix_web::rt::System::new().block_on(async move {
                    match hearth::spawn(config).await {
                        Ok(running) => {
                            let _ = url_tx.send(Ok(running.url()));
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
        let url = url_rx
            .recv()
            .map_err(|_| "the in-process server did not start".to_owned())??;
        Ok((
            InProcess {
                url: url.clone(),
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

/// The ceiling: a minimal actix-web server answering Zulip's success body to any
/// request, on its own thread.
fn start_ceiling(workers: Option<usize>) -> Result<(String, actix_web::dev::ServerHandle), String> {
    use actix_web::{web, App, HttpResponse, HttpServer};
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("hearth-ceiling".into())
        .spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let mut server = HttpServer::new(|| {
                    App::new().default_service(web::to(|| async {
                        HttpResponse::Ok()
                            .content_type("application/json")
                            .body(r#"{"result":"success","msg":""}"#)
                    }))
                })
                .disable_signals();
                if let Some(w) = workers {
                    server = server.workers(w);
                }
                let server = match server.bind(("127.0.0.1", 0)) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send(Err(format!("ceiling server: {e}")));
                        return;
                    }
                };
                let addr = server.addrs().first().copied();
                let server = server.run();
                match addr {
                    Some(a) => {
                        let _ = tx.send(Ok((format!("http://{a}"), server.handle())));
                    }
                    None => {
                        let _ = tx.send(Err("ceiling server has no address".into()));
                    }
                }
                let _ = server.await;
            })
        })
        .map_err(|e| format!("ceiling thread: {e}"))?;
    rx.recv()
        .map_err(|_| "the ceiling server did not start".to_owned())?
}

/// Runs `hearth load`; `Err` on a failed run or failed thresholds (after the report).
pub fn run(args: &LoadArgs) -> Result<(), String> {
    if args.users == 0 {
        return Err("--users must be at least 1".into());
    }
    if args.rate.is_some_and(|r| r <= 0.0 || !r.is_finite()) || args.speedup <= 0.0 {
        return Err("--rate and --speedup must be positive".into());
    }
    if args.scenario == Scenario::Fanout && (args.ceiling || args.rate.is_some()) {
        return Err("fanout runs its own rounds: --ceiling and --rate do not apply to it".into());
    }
    // Each held long-poll is a socket, twice when the server runs in this process.
    let held =
        matches!(args.scenario, Scenario::Presence | Scenario::Fanout) as u64 * args.users as u64;
    let sockets = held * if args.target.is_none() { 2 } else { 1 } + 512;
    // The soft limit goes up to the hard one first (as `hearth serve` does).
    if let Some(limit) = hearth::api::wire::raise_open_files_limit() {
        if sockets > limit {
            return Err(format!(
                "{} users hold about {sockets} sockets, over this process's open-file limit ({limit}); raise it (`ulimit -n {}`)",
                args.users,
                sockets.next_power_of_two()
            ));
        }
    }
    let (server, target, creds) = match &args.target {
        Some(t) => {
            let path = args.credentials.clone().ok_or(
                "--target needs --credentials (the load-users.tsv `hearth realm populate` writes)",
            )?;
            let mut creds = users::read_credentials(&path)?;
            if creds.len() < args.users {
                return Err(format!(
                    "{} holds {} users, fewer than --users {}: run `hearth realm populate --users {}` on the stopped server",
                    path.display(),
                    creds.len(),
                    args.users,
                    args.users
                ));
            }
            creds.truncate(args.users);
            (None, t.clone(), creds)
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .thread_name(driver::THREAD_NAME)
        .enable_all()
        .build()
        .map_err(|e| format!("driver runtime: {e}"))?;
    let result = runtime.block_on(drive(args, &target, &creds));
    runtime.shutdown_timeout(Duration::from_secs(5));
    let written = result.and_then(|report| {
        let mut out = std::io::stdout().lock();
        out.write_all(report.table().as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| e.to_string())?;
        if let Some(path) = &args.json {
            let json = serde_json::to_vec_pretty(&report).map_err(|e| e.to_string())?;
            std::fs::write(path, json).map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
        Ok(report)
    });
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

fn pacing_text(args: &LoadArgs) -> String {
    if args.scenario == Scenario::Presence && args.connections.is_none() {
        return format!(
            "open loop: a ping per user every {:.2} s ({:.1} pings/s), long-polls held",
            ping_period(args).as_secs_f64(),
            args.users as f64 / ping_period(args).as_secs_f64()
        );
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

/// One measured phase against `base`: the scenario's set-up, warm-up and measured part.
async fn phase(
    args: &LoadArgs,
    base: &str,
    creds: &[Credential],
    ceiling: bool,
    bar: &indicatif::ProgressBar,
) -> Result<(Arc<Recorder>, Duration), String> {
    let client = driver::client()?;
    // Set-up requests are warm-up: the measured part starts after them.
    let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
    let recorder = Recorder::new(far);
    let env = Arc::new(Env::new(
        client,
        base,
        creds,
        recorder.clone(),
        ceiling,
        args.scenario,
    ));
    let needs_queues = matches!(
        args.scenario,
        Scenario::Presence | Scenario::Mixed | Scenario::Fanout
    );
    if needs_queues && !ceiling {
        bar.set_message(format!("registering {} queues", creds.len()));
        scenarios::register_all(&env, 64).await;
    }
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
    let polls = if holds && !ceiling {
        scenarios::hold_polls(&env)
    } else {
        Vec::new()
    };
    match args.scenario {
        Scenario::Presence if args.connections.is_none() => {
            scenarios::presence_schedule(&env, ping_period(args), start, until).await
        }
        Scenario::ReconnectStorm => scenarios::storms(&env, until).await,
        Scenario::Fanout => {
            scenarios::fanout_rounds(&env, until, FANOUT_SETTLE, FANOUT_TIMEOUT).await
        }
        scenario => scenarios::paced(&env, scenario, pacing(args), start, until).await,
    }
    let measured = Instant::now().saturating_duration_since(measure_from);
    for p in polls {
        p.abort();
    }
    if needs_queues && !ceiling {
        bar.set_message(format!("deleting {} queues", creds.len()));
        scenarios::delete_all(&env, 64).await;
    }
    progress.abort();
    Ok((recorder, measured.max(Duration::from_millis(1))))
}

async fn drive(args: &LoadArgs, target: &str, creds: &[Credential]) -> Result<Report, String> {
    let total = (args.warmup + args.duration).as_secs() * if args.ceiling { 2 } else { 1 };
    let bar = if std::io::stderr().is_terminal() {
        indicatif::ProgressBar::new(total)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} s {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let cpu_before = driver::cpu_seconds();
    let wall = Instant::now();
    let (recorder, measured) = phase(args, target, creds, false, &bar).await?;
    let mut ops: Vec<_> = recorder
        .take()
        .iter()
        .map(|(op, s)| report::op_report(op, s, measured))
        .collect();
    ops.sort_by(|a, b| a.op.cmp(&b.op));
    let cpu_after = driver::cpu_seconds();
    let driver_wall = wall.elapsed();
    let ceiling = if args.ceiling {
        let (url, handle) = start_ceiling(args.server_workers)?;
        let (recorder, measured) = phase(args, &url, creds, true, &bar).await?;
        handle.stop(true).await;
        let stats = recorder.take();
        stats
            .get("ceiling")
            .map(|s| report::op_report("ceiling", s, measured))
    } else {
        None
    };
    bar.finish_and_clear();
    let (driver_cpu, process_cpu) = match (cpu_before, cpu_after) {
        (Some(b), Some(a)) => (Some(a.0 - b.0), Some(a.1 - b.1)),
        _ => (None, None),
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
        duration_s: measured.as_secs_f64(),
        ops,
        ceiling,
        driver_cpu_s: driver_cpu,
        driver_cpu_percent_of_core: driver_cpu
            .map(|c| 100.0 * c / driver_wall.as_secs_f64().max(1e-9)),
        process_cpu_s: process_cpu,
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
