//! `hearth torture`: the crash torture suite.
//!
//! Runs the real server as a child process on one data folder and, each cycle:
//!
//! 1. drives mixed writes from several clients (channels, subscriptions, users,
//!    messages and their edits, reactions, user groups, statuses, the realm's
//!    description), keeping a ledger of
//!    every write the server acknowledged and when;
//! 2. kills the server with `SIGKILL` at a random point (with `--snapshot-every` small,
//!    many kills land while a snapshot is being written);
//! 3. starts it and kills it again within `--max-start-kill-ms` (a crash while it opens
//!    its databases and recovers), then restarts it, and checks the cycle's ledger against what the server now answers. In
//!    `always` every acknowledged write must be there; in `interval` every write
//!    acknowledged more than the loss bound (`--flush-interval-ms` plus
//!    `--interval-slack-ms`) before the kill; in `never` losses are only counted;
//! 4. checks that recovery is a fixed point: the state recovered from the older
//!    snapshot plus the WAL replayed after it equals the state recovered again from a
//!    fresh snapshot (a clean stop writes one), compared over the whole `/register`
//!    state and every message.
//!
//! Everything recovered after one cycle (users, channels, groups, messages) must still
//! be there after the next. The next cycle writes on that server. A failed check stops
//! the run with a non-zero
//! exit, naming what was lost; the server logs stay in the run's folder.
//!
//! With `--power-cut` each kill is also a power cut: the data folder lives on the
//! page-cache-dropping test filesystem (`crate::powercut`), and after every kill what
//! the server wrote and did not sync is dropped (or one file torn) before the restart.
//! A start may then refuse, naming the damage: that is counted, the folder rebuilt by
//! `hearth recover --accept-loss` (the damaged one kept), and the run goes on.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use hearth::config::DurabilityArg;
use hearth::locks::lock;

use crate::powercut::power::{self, Power};

/// The environment variable in which `hearth` names itself when it runs these tools:
/// the server `torture` runs unless `--server` names another.
pub const HEARTH_BIN: &str = "HEARTH_BIN";

/// `hearth torture`.
#[derive(Debug, Clone, Args)]
pub struct TortureArgs {
    /// Kill-and-recover cycles.
    #[arg(long, default_value_t = 10)]
    pub cycles: u32,
    /// Concurrent writing clients.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// The server's durability mode.
    #[arg(long, value_enum, default_value = "always")]
    pub durability: DurabilityArg,
    /// The server's flush period in `interval` mode, in milliseconds.
    #[arg(long, default_value_t = 200)]
    pub flush_interval_ms: u64,
    /// `interval`: how much longer than the flush period an acknowledged write may be
    /// lost (the flush itself takes time), in milliseconds.
    #[arg(long, default_value_t = 500)]
    pub interval_slack_ms: u64,
    /// The server's `--snapshot-every`: small, so that kills land during snapshots.
    #[arg(long, default_value_t = 40)]
    pub snapshot_every: u64,
    /// Each cycle writes for a random time up to this many milliseconds, then kills.
    #[arg(long, default_value_t = 1500)]
    pub max_run_ms: u64,
    /// After each kill, the server is also started once and killed again within a
    /// random time up to this many milliseconds (while it opens its databases and
    /// recovers) before the start that is checked; 0: never.
    #[arg(long, default_value_t = 60)]
    pub max_start_kill_ms: u64,
    /// Random seed (default: from the clock); printed, so a run can be repeated.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Folder for the data folder and the server logs (kept); default: a temporary
    /// folder, removed when the run passes.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The hearth binary to torture (default: the `hearth` that runs this command, else
    /// the one next to this executable).
    #[arg(long)]
    pub server: Option<PathBuf>,
    /// Cut the power at each kill, not only the process: the data folder lives on
    /// hearth's page-cache-dropping test filesystem (`powercut`), which drops whatever
    /// the server wrote and did not fsync (needs /dev/fuse and the right to mount).
    #[arg(long)]
    pub power_cut: bool,
    /// With `--power-cut`: the share of cuts, in percent, that tear one file (a prefix
    /// of its unsynced writes reaches the disk, the last of them in part).
    #[arg(long, default_value_t = 50)]
    pub tear_percent: u32,
    /// Between cycles, while this file exists, the run waits with its server idle: a
    /// long run yields the machine to a measurement and resumes when the file is
    /// removed (no cycle is cut short by it, and no check is timed across the wait).
    #[arg(long)]
    pub pause_while: Option<PathBuf>,
}

/// The server to torture: `--server`, else the `hearth` that ran this command
/// (`HEARTH_BIN`), else the `hearth` next to this executable.
fn server_binary(args: &TortureArgs) -> Result<PathBuf, String> {
    if let Some(p) = &args.server {
        return Ok(p.clone());
    }
    if let Some(p) = std::env::var_os(HEARTH_BIN).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let me = std::env::current_exe().map_err(|e| format!("which binary am I? {e}"))?;
    let beside = me.with_file_name(format!("hearth{}", std::env::consts::EXE_SUFFIX));
    if beside.is_file() {
        return Ok(beside);
    }
    Err(format!(
        "no hearth server binary next to {}: build it (`cargo build`) or name one with --server",
        me.display()
    ))
}

/// Waits, before cycle `number`, for as long as `flag` exists (`--pause-while`).
async fn wait_while_present(flag: &Path, number: u32) {
    if !flag.exists() {
        return;
    }
    let paused = Instant::now();
    say(format!(
        "cycle {number:>3}: paused while {} exists",
        flag.display()
    ));
    while flag.exists() {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    say(format!(
        "cycle {number:>3}: resumed after {:.0} s",
        paused.elapsed().as_secs_f64()
    ));
}

/// The server's data folder: `<dir>/data`, or inside the power-cut mount.
fn data_folder(args: &TortureArgs, dir: &Path) -> PathBuf {
    if args.power_cut {
        Power::data(dir)
    } else {
        dir.join("data")
    }
}

/// Runs the suite; `Err` names the first failed check.
pub fn run(args: &TortureArgs) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let mut temp = None;
    let dir = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
            d.clone()
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("hearth-torture-")
                .tempdir()
                .map_err(|e| format!("cannot make a temporary folder: {e}"))?;
            let path = t.path().to_path_buf();
            temp = Some(t);
            path
        }
    };
    let result = runtime.block_on(torture(args, &dir));
    if let (Err(_), Some(t)) = (&result, temp) {
        // Keep the evidence.
        let kept = t.keep();
        say_err(format!(
            "torture: data and server logs kept in {}",
            kept.display()
        ));
    }
    result
}

/// A durability mode's promise for an acknowledged write.
#[derive(Debug, Clone, Copy)]
enum Promise {
    /// Survives any crash.
    Always,
    /// Survives a crash this long after its acknowledgement.
    Within(Duration),
    /// May be lost.
    Never,
}

impl Promise {
    fn must_survive(self, acked: Instant, kill: Instant) -> bool {
        match self {
            Promise::Always => true,
            Promise::Within(bound) => acked + bound <= kill,
            Promise::Never => false,
        }
    }
}

/// The loopback address this run's servers listen on: one of 127.0.0.0/8 drawn once per
/// process, not 127.0.0.1. The port is probed free and then handed to the child, so
/// until the child binds it another process may take it; on 127.0.0.1 that may be
/// another hearth (a test suite's, on the same machine), whose development realm answers
/// the readiness probe and then refuses this run's keys ("Invalid API key"), which the
/// run would report as its own server's failure. Nothing else listens on this address.
fn loopback_host() -> std::net::Ipv4Addr {
    static HOST: std::sync::OnceLock<std::net::Ipv4Addr> = std::sync::OnceLock::new();
    *HOST.get_or_init(|| {
        let mut rng = rand::thread_rng();
        std::net::Ipv4Addr::new(
            127,
            rng.gen_range(64..=250),
            rng.gen(),
            rng.gen_range(1..=254),
        )
    })
}

/// The server under torture: a child process.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    async fn start(args: &TortureArgs, dir: &Path, log_name: &str) -> Result<Server, String> {
        for _ in 0..5 {
            let (mut server, log_path) = Server::spawn(args, dir, log_name)?;
            match server.wait_ready().await {
                Ok(()) => return Ok(server),
                Err(exited) => {
                    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
                    if !text.contains("cannot listen") {
                        return Err(format!("the server did not start ({exited}):\n{text}"));
                    }
                    // The port was taken between the probe and the bind: another.
                }
            }
        }
        Err("no free port for the server".into())
    }

    /// Starts the server and kills it with SIGKILL `after` its start, whatever it is
    /// doing then (opening its databases, writing sled's snapshot, recovering).
    async fn start_and_kill(
        args: &TortureArgs,
        dir: &Path,
        log_name: &str,
        after: Duration,
    ) -> Result<(), String> {
        let (mut server, _) = Server::spawn(args, dir, log_name)?;
        tokio::time::sleep(after).await;
        server.kill_9();
        Ok(())
    }

    /// Starts the server process on a free port (not waiting for it); returns it and
    /// its log's path.
    fn spawn(args: &TortureArgs, dir: &Path, log_name: &str) -> Result<(Server, PathBuf), String> {
        let exe = server_binary(args)?;
        let durability = match args.durability {
            DurabilityArg::Always => "always",
            DurabilityArg::Interval => "interval",
            DurabilityArg::Never => "never",
        };
        let host = loopback_host();
        let port = std::net::TcpListener::bind((host, 0))
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let log_path = dir.join(log_name);
        let log =
            std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(&exe)
            .args([
                "serve",
                "--dev",
                "--workers",
                "2",
                "--durability",
                durability,
            ])
            .arg("--flush-interval-ms")
            .arg(args.flush_interval_ms.to_string())
            .arg("--snapshot-every")
            .arg(args.snapshot_every.to_string())
            .arg("--data")
            .arg(data_folder(args, dir))
            .arg("--bind")
            .arg(format!("{host}:{port}"))
            .args([
                "--metrics-bind",
                "off",
                "--admin-bind",
                "off",
                "--rate-limit",
                "off",
            ])
            .env("RUST_LOG", "warn")
            .env_remove("HEARTH_URL")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let server = Server {
            child,
            url: format!("http://{host}:{port}"),
        };
        Ok((server, log_path))
    }

    async fn wait_ready(&mut self) -> Result<(), String> {
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("exited with {status}"));
            }
            let url = format!("{}/api/v1/server_settings", self.url);
            if let Ok(r) = client.get(&url).send().await {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = self.child.kill();
        Err("not answering after 120 s".into())
    }

    fn kill_9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM: the server snapshots every realm and exits.
    async fn stop_clean(&mut self) -> Result<(), String> {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM)
            .map_err(|e| format!("cannot signal the server: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => return Err(format!("clean stop exited with {status}")),
                Ok(None) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(e) => return Err(e.to_string()),
            }
        }
        self.kill_9();
        Err("the server did not stop within 60 s of SIGTERM".into())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client's connection to the server, with its credentials.
#[derive(Clone)]
struct Api {
    http: reqwest::Client,
    url: String,
    email: String,
    key: String,
}

/// Why a call did not succeed.
enum CallError {
    /// No answer: the server is gone (killed) or the connection broke.
    Gone,
    /// An answer that is not `success`.
    Refused(String),
}

impl Api {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        form: &[(&str, String)],
    ) -> Result<Value, CallError> {
        let url = format!("{}/api/v1{path}", self.url);
        let req = self
            .http
            .request(method.clone(), &url)
            .basic_auth(&self.email, Some(&self.key));
        let req = if method == reqwest::Method::GET {
            req.query(form)
        } else {
            req.form(form)
        };
        let resp = req.send().await.map_err(|_| CallError::Gone)?;
        let status = resp.status();
        let body: Value = resp.json().await.map_err(|_| CallError::Gone)?;
        if status.is_success() && body["result"] == "success" {
            Ok(body)
        } else {
            Err(CallError::Refused(format!(
                "{method} {path}: {status} {body}"
            )))
        }
    }

    async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value, String> {
        self.call(reqwest::Method::GET, path, query)
            .await
            .map_err(|e| match e {
                CallError::Gone => format!("GET {path}: no answer"),
                CallError::Refused(m) => m,
            })
    }
}

/// One acknowledged (or attempted) value of something that changes.
#[derive(Debug, Clone)]
struct Version {
    value: String,
    /// When the server acknowledged it; `None` while (or if) never answered.
    acked: Option<Instant>,
}

/// What the server acknowledged, and when.
#[derive(Default)]
struct Ledger {
    channels: Vec<(String, Instant)>,
    /// Channel name, user id.
    subscriptions: Vec<(String, u64, Instant)>,
    users: Vec<(String, Instant)>,
    groups: Vec<(String, Instant)>,
    /// Message id -> send acknowledgement and its contents, oldest first.
    messages: BTreeMap<u64, (Instant, Vec<Version>)>,
    /// Message id, emoji name.
    reactions: Vec<(u64, String, Instant)>,
    /// User id -> status texts, oldest first.
    statuses: HashMap<u64, Vec<Version>>,
    /// The realm's description (`PATCH /realm`, written by client 0 only), oldest first.
    descriptions: Vec<Version>,
    /// Acknowledged writes, by kind.
    acked: BTreeMap<&'static str, u64>,
}

impl Ledger {
    fn count(&mut self, kind: &'static str) {
        *self.acked.entry(kind).or_default() += 1;
    }
}

/// Everything the clients share during a cycle.
struct Cycle {
    number: u32,
    ledger: Mutex<Ledger>,
    /// The first refused write (a bug: every write the clients make is valid).
    refused: Mutex<Option<String>>,
    stop: AtomicBool,
    writes: AtomicU64,
}

/// The realm's fixed cast: the channel messages go to, and users to subscribe.
struct Cast {
    admin: Api,
    /// One per client: the user whose status it sets.
    own: Vec<(Api, u64)>,
    admin_id: u64,
    hamlet_id: u64,
}

const EMOJI: [&str; 5] = ["smile", "heart", "tada", "rocket", "octopus"];
const CHANNEL: &str = "torture";

async fn torture(args: &TortureArgs, dir: &Path) -> Result<(), String> {
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    let promise = match args.durability {
        DurabilityArg::Always => Promise::Always,
        DurabilityArg::Interval => Promise::Within(Duration::from_millis(
            args.flush_interval_ms + args.interval_slack_ms,
        )),
        DurabilityArg::Never => Promise::Never,
    };
    say(format!(
        "torture: {} cycles, {} clients, durability {:?}, snapshot every {} records, seed {seed}",
        args.cycles, args.clients, args.durability, args.snapshot_every
    ));
    let mut rng = StdRng::seed_from_u64(seed);
    let mut power = match args.power_cut {
        true => Some(Power::new(dir, args.tear_percent)?),
        false => None,
    };
    let mut server = Server::start(args, dir, "server-0.log").await?;
    let mut cast = cast(&server.url, args.clients).await?;
    let mut by_kind: BTreeMap<&'static str, u64> = BTreeMap::new();
    let (mut lost_total, mut acked_total, mut refused_lost) = (0u64, 0u64, 0u64);
    let mut previous: Option<Value> = None;
    for number in 1..=args.cycles {
        if let Some(flag) = args.pause_while.as_deref() {
            wait_while_present(flag, number).await;
        }
        let cycle = Arc::new(Cycle {
            number,
            ledger: Mutex::new(Ledger::default()),
            refused: Mutex::new(None),
            stop: AtomicBool::new(false),
            writes: AtomicU64::new(0),
        });
        let mut tasks = Vec::new();
        for client in 0..args.clients {
            let cycle = cycle.clone();
            let admin = with_url(&cast.admin, &server.url);
            let (own, own_id) = (
                with_url(&cast.own[client].0, &server.url),
                cast.own[client].1,
            );
            let ids = (cast.admin_id, cast.hamlet_id);
            let client_seed = rng.gen::<u64>();
            tasks.push(tokio::spawn(async move {
                write_loop(client, client_seed, cycle, admin, own, own_id, ids).await
            }));
        }
        let mut run_for =
            Duration::from_millis(rng.gen_range(args.max_run_ms / 5..=args.max_run_ms));
        match power.as_mut() {
            Some(p) => {
                // Killed when the filesystem cuts the power itself, if it does first.
                p.arm(&mut rng);
                let start = Instant::now();
                while start.elapsed() < run_for && !p.tripped() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                run_for = start.elapsed();
            }
            None => tokio::time::sleep(run_for).await,
        }
        let kill = Instant::now();
        server.kill_9();
        cycle.stop.store(true, Ordering::SeqCst);
        // After a cut made by the filesystem the server answers errors until it is
        // killed: refusals then are expected.
        let tripped = match power.as_mut() {
            Some(p) => p.cut(&mut rng)?,
            None => false,
        };
        for t in tasks {
            let _ = t.await;
        }
        if let Some(refused) = lock(&cycle.refused).take().filter(|_| !tripped) {
            return Err(format!(
                "cycle {number}: a valid write was refused: {refused}"
            ));
        }
        let writes = cycle.writes.load(Ordering::SeqCst);
        let mut cycle_ledger = std::mem::take(&mut *lock(&cycle.ledger));

        // A second crash, in the middle of the next start.
        if args.max_start_kill_ms > 0 {
            let after = Duration::from_millis(rng.gen_range(0..=args.max_start_kill_ms));
            Server::start_and_kill(args, dir, &format!("server-{number}-cut.log"), after).await?;
            if let Some(p) = power.as_mut() {
                p.cut(&mut rng)?;
            }
        }
        // Recover from the crash and check the ledger.
        let mut refused = None;
        server = match Server::start(args, dir, &format!("server-{number}.log")).await {
            Ok(s) => s,
            // After a power cut a start may refuse, naming the damage: the folder is
            // rebuilt (`hearth recover --accept-loss`, the damaged one kept beside it).
            Err(e) => match (power.as_mut(), power::damage_named(&e)) {
                (Some(p), Some(line)) => {
                    say(format!("cycle {number:>3}: the start refused: {line}"));
                    p.refusals.push((number, line.clone()));
                    let recover_log = dir.join(format!("recover-{number}.log"));
                    let aside = power::recover_or_set_aside(
                        &server_binary(args)?,
                        &data_folder(args, dir),
                        &recover_log,
                        number,
                    )?;
                    refused = Some(line);
                    let s =
                        Server::start(args, dir, &format!("server-{number}-recovered.log")).await?;
                    if let Some(aside) = aside {
                        // A new folder: a new realm, and its users' keys.
                        say(format!(
                            "cycle {number:>3}: `hearth recover` could not rebuild the folder (recover-{number}.log); set aside as {}, the run goes on with a new one",
                            aside.display()
                        ));
                        p.set_aside.push(aside.display().to_string());
                        cast = self::cast(&s.url, args.clients).await?;
                        cycle_ledger = Ledger::default();
                    }
                    s
                }
                _ => return Err(e),
            },
        };
        let admin = with_url(&cast.admin, &server.url);
        let check = check_ledger(&admin, &cycle_ledger, promise, kill).await?;
        acked_total += check.acked;
        if refused.is_some() {
            // Losses accepted by the recovery are counted apart, and what was there
            // before is no longer owed.
            refused_lost += check.lost.len() as u64;
            previous = None;
        } else {
            lost_total += check.lost.len() as u64;
        }
        if !check.lost.is_empty() && !matches!(promise, Promise::Never) && refused.is_none() {
            return Err(format!(
                "cycle {number}: {} acknowledged writes lost after the kill: {}",
                check.lost.len(),
                check.lost.join("; ")
            ));
        }
        // Recovery is a fixed point: WAL replay after the older snapshot, then a
        // fresh snapshot of the result, give the same state.
        let replayed = state(&admin).await?;
        server.stop_clean().await?;
        server = Server::start(args, dir, &format!("server-{number}-clean.log")).await?;
        let admin = with_url(&cast.admin, &server.url);
        let from_snapshot = state(&admin).await?;
        if replayed != from_snapshot {
            return Err(format!(
                "cycle {number}: the state recovered by replay differs from the one recovered from a fresh snapshot: {}",
                first_difference(&replayed, &from_snapshot)
            ));
        }
        if let Some(before) = &previous {
            // Nothing that was there before this cycle went away (in `never` too:
            // a clean stop made it durable).
            if let Some(gone) = vanished(before, &from_snapshot) {
                return Err(format!("cycle {number}: {gone}"));
            }
        }
        previous = Some(from_snapshot);
        let cut = power
            .as_mut()
            .map_or(String::new(), |p| format!("; {}", p.take_lines()));
        say(format!(
            "cycle {number:>3}: {writes:>4} writes sent, killed after {:>4} ms; {} acknowledged, {} lost{cut}",
            run_for.as_millis(),
            check.acked,
            check.lost.len()
        ));
        for (kind, n) in &cycle_ledger.acked {
            *by_kind.entry(kind).or_default() += n;
        }
    }
    server.stop_clean().await?;
    let power_summary = match power {
        Some(p) => {
            let s = format!(
                "; {}, {refused_lost} writes lost after an accepted recovery",
                p.summary()
            );
            p.finish()?;
            s
        }
        None => String::new(),
    };
    let by_kind = by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    say(format!(
        "torture passed: {} cycles, {acked_total} acknowledged writes checked ({by_kind}), {lost_total} lost (durability {:?}){power_summary}",
        args.cycles, args.durability
    ));
    Ok(())
}

/// A line of the run's report, on stdout.
fn say(line: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// A line on stderr.
fn say_err(line: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

fn with_url(api: &Api, url: &str) -> Api {
    Api {
        url: url.to_owned(),
        ..api.clone()
    }
}

/// Keys of the development realm's users, and the channel the messages go to.
async fn cast(url: &str, clients: usize) -> Result<Cast, String> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    let key = |email: String| {
        let http = http.clone();
        async move {
            let r: Value = http
                .post(format!("{url}/api/v1/dev_fetch_api_key"))
                .form(&[("username", email.as_str())])
                .send()
                .await
                .map_err(|e| e.to_string())?
                .json()
                .await
                .map_err(|e| e.to_string())?;
            let key = r["api_key"]
                .as_str()
                .ok_or_else(|| format!("no key for {email}: {r}"))?
                .to_owned();
            Ok::<Api, String>(Api {
                http: http.clone(),
                url: url.to_owned(),
                email,
                key,
            })
        }
    };
    let admin = key("iago@zulip.com".into()).await?;
    let users = admin.get("/users", &[]).await?;
    let mut humans: Vec<(String, u64)> = users["members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|u| u["is_bot"] == false && u["is_active"] == true)
        .filter_map(|u| {
            let email = u["delivery_email"].as_str().or(u["email"].as_str())?;
            Some((email.to_owned(), u["user_id"].as_u64()?))
        })
        .collect();
    humans.sort();
    let id_of = |email: &str| {
        humans
            .iter()
            .find(|(e, _)| e == email)
            .map(|(_, id)| *id)
            .ok_or_else(|| format!("no {email} in the development realm"))
    };
    let admin_id = id_of("iago@zulip.com")?;
    let hamlet_id = id_of("hamlet@zulip.com")?;
    let mut own = Vec::new();
    for i in 0..clients {
        let (email, id) = humans[i % humans.len()].clone();
        own.push((key(email).await?, id));
    }
    admin
        .call(
            reqwest::Method::POST,
            "/users/me/subscriptions",
            &[("subscriptions", json!([{ "name": CHANNEL }]).to_string())],
        )
        .await
        .map_err(|_| "cannot create the torture channel".to_owned())?;
    Ok(Cast {
        admin,
        own,
        admin_id,
        hamlet_id,
    })
}

/// One client: valid writes, back to back, until the server is gone.
async fn write_loop(
    client: usize,
    seed: u64,
    cycle: Arc<Cycle>,
    admin: Api,
    own: Api,
    own_id: u64,
    (admin_id, hamlet_id): (u64, u64),
) {
    use reqwest::Method;
    let mut rng = StdRng::seed_from_u64(seed);
    let n = cycle.number;
    // This client's own acknowledged objects, to build on.
    let mut my_channels: Vec<String> = Vec::new();
    let mut my_messages: Vec<u64> = Vec::new();
    let mut reacted: HashMap<u64, usize> = HashMap::new();
    for i in 0u64.. {
        if cycle.stop.load(Ordering::SeqCst) {
            return;
        }
        cycle.writes.fetch_add(1, Ordering::SeqCst);
        let tag = format!("t{n}-{client}-{i}");
        let op = rng.gen_range(0..100);
        let result = match op {
            0..=14 => {
                let r = admin
                    .call(
                        Method::POST,
                        "/users/me/subscriptions",
                        &[("subscriptions", json!([{ "name": tag }]).to_string())],
                    )
                    .await;
                r.map(|_| {
                    let mut l = lock(&cycle.ledger);
                    l.channels.push((tag.clone(), Instant::now()));
                    l.count("channels");
                    my_channels.push(tag.clone());
                })
            }
            15..=24 if !my_channels.is_empty() => {
                let channel = my_channels.remove(rng.gen_range(0..my_channels.len()));
                let r = admin
                    .call(
                        Method::POST,
                        "/users/me/subscriptions",
                        &[
                            ("subscriptions", json!([{ "name": channel }]).to_string()),
                            ("principals", json!([hamlet_id]).to_string()),
                        ],
                    )
                    .await;
                r.map(|_| {
                    let mut l = lock(&cycle.ledger);
                    l.subscriptions.push((channel, hamlet_id, Instant::now()));
                    l.count("subscriptions");
                })
            }
            25..=34 => {
                let email = format!("{tag}@torture.example.com");
                let r = admin
                    .call(
                        Method::POST,
                        "/users",
                        &[
                            ("email", email.clone()),
                            ("password", format!("{tag}-long-enough-password")),
                            ("full_name", format!("Torture {tag}")),
                        ],
                    )
                    .await;
                r.map(|_| {
                    let mut l = lock(&cycle.ledger);
                    l.users.push((email, Instant::now()));
                    l.count("users");
                })
            }
            35..=59 => {
                let content = format!("message {tag}");
                let r = admin
                    .call(
                        Method::POST,
                        "/messages",
                        &[
                            ("type", "stream".into()),
                            ("to", CHANNEL.into()),
                            ("topic", format!("cycle {n}")),
                            ("content", content.clone()),
                        ],
                    )
                    .await;
                r.map(|body| {
                    let now = Instant::now();
                    if let Some(id) = body["id"].as_u64() {
                        let mut l = lock(&cycle.ledger);
                        l.messages.insert(
                            id,
                            (
                                now,
                                vec![Version {
                                    value: content,
                                    acked: Some(now),
                                }],
                            ),
                        );
                        l.count("messages");
                        my_messages.push(id);
                    }
                })
            }
            60..=69 if !my_messages.is_empty() => {
                let id = my_messages[rng.gen_range(0..my_messages.len())];
                let content = format!("edited {tag}");
                lock(&cycle.ledger).messages.entry(id).and_modify(|(_, v)| {
                    v.push(Version {
                        value: content.clone(),
                        acked: None,
                    })
                });
                let r = admin
                    .call(
                        Method::PATCH,
                        &format!("/messages/{id}"),
                        &[("content", content)],
                    )
                    .await;
                r.map(|_| {
                    let mut l = lock(&cycle.ledger);
                    if let Some((_, v)) = l.messages.get_mut(&id) {
                        if let Some(last) = v.last_mut() {
                            last.acked = Some(Instant::now());
                        }
                    }
                    l.count("edits");
                })
            }
            70..=77 if !my_messages.is_empty() => {
                let id = my_messages[rng.gen_range(0..my_messages.len())];
                let next = reacted.entry(id).or_default();
                if *next >= EMOJI.len() {
                    continue;
                }
                let emoji = EMOJI[*next];
                *next += 1;
                let r = admin
                    .call(
                        Method::POST,
                        &format!("/messages/{id}/reactions"),
                        &[("emoji_name", emoji.into())],
                    )
                    .await;
                r.map(|_| {
                    let mut l = lock(&cycle.ledger);
                    l.reactions.push((id, emoji.to_owned(), Instant::now()));
                    l.count("reactions");
                })
            }
            78..=87 => {
                let r = admin
                    .call(
                        Method::POST,
                        "/user_groups/create",
                        &[
                            ("name", tag.clone()),
                            ("description", format!("group {tag}")),
                            ("members", json!([admin_id]).to_string()),
                        ],
                    )
                    .await;
                r.map(|_| {
                    let mut l = lock(&cycle.ledger);
                    l.groups.push((tag.clone(), Instant::now()));
                    l.count("groups");
                })
            }
            88..=95 if client == 0 => {
                let text = format!("description {tag}");
                lock(&cycle.ledger).descriptions.push(Version {
                    value: text.clone(),
                    acked: None,
                });
                let r = admin
                    .call(Method::PATCH, "/realm", &[("description", text)])
                    .await;
                r.map(|_| {
                    let mut l = lock(&cycle.ledger);
                    if let Some(last) = l.descriptions.last_mut() {
                        last.acked = Some(Instant::now());
                    }
                    l.count("descriptions");
                })
            }
            _ => {
                let text = format!("status {tag}");
                lock(&cycle.ledger)
                    .statuses
                    .entry(own_id)
                    .or_default()
                    .push(Version {
                        value: text.clone(),
                        acked: None,
                    });
                let r = own
                    .call(Method::POST, "/users/me/status", &[("status_text", text)])
                    .await;
                r.map(|_| {
                    let mut l = lock(&cycle.ledger);
                    if let Some(last) = l.statuses.get_mut(&own_id).and_then(|v| v.last_mut()) {
                        last.acked = Some(Instant::now());
                    }
                    l.count("statuses");
                })
            }
        };
        match result {
            Ok(()) => {}
            Err(CallError::Gone) => return,
            Err(CallError::Refused(m)) => {
                // Answers cut by the kill are `Gone`; a refusal is a real error.
                if !cycle.stop.load(Ordering::SeqCst) {
                    lock(&cycle.refused).get_or_insert(m);
                }
                return;
            }
        }
    }
}

struct Checked {
    acked: u64,
    lost: Vec<String>,
}

/// Compares the ledger with what the recovered server answers.
async fn check_ledger(
    admin: &Api,
    ledger: &Ledger,
    promise: Promise,
    kill: Instant,
) -> Result<Checked, String> {
    let mut lost = Vec::new();
    let mut acked = 0u64;
    let subs = admin
        .get(
            "/users/me/subscriptions",
            &[("include_subscribers", "true".into())],
        )
        .await?;
    let channels: HashMap<String, Vec<u64>> = subs["subscriptions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let subscribers = s["subscribers"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default();
            Some((s["name"].as_str()?.to_owned(), subscribers))
        })
        .collect();
    for (name, at) in &ledger.channels {
        acked += 1;
        if !channels.contains_key(name) && promise.must_survive(*at, kill) {
            lost.push(format!("channel {name}"));
        }
    }
    for (name, user, at) in &ledger.subscriptions {
        acked += 1;
        let there = channels.get(name).is_some_and(|s| s.contains(user));
        if !there && promise.must_survive(*at, kill) {
            lost.push(format!("subscription of user {user} to {name}"));
        }
    }
    let users = admin.get("/users", &[]).await?;
    let emails: std::collections::HashSet<String> = users["members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| {
            u["delivery_email"]
                .as_str()
                .or(u["email"].as_str())
                .map(str::to_owned)
        })
        .collect();
    for (email, at) in &ledger.users {
        acked += 1;
        if !emails.contains(email) && promise.must_survive(*at, kill) {
            lost.push(format!("user {email}"));
        }
    }
    let groups = admin.get("/user_groups", &[]).await?;
    let group_names: std::collections::HashSet<String> = groups["user_groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["name"].as_str().map(str::to_owned))
        .collect();
    for (name, at) in &ledger.groups {
        acked += 1;
        if !group_names.contains(name) && promise.must_survive(*at, kill) {
            lost.push(format!("user group {name}"));
        }
    }
    let messages = all_messages(admin).await?;
    for (id, (sent, versions)) in &ledger.messages {
        acked += 1;
        let Some(m) = messages.get(id) else {
            if promise.must_survive(*sent, kill) {
                lost.push(format!("message {id}"));
            }
            continue;
        };
        let content = m["content"].as_str().unwrap_or_default();
        acked += versions
            .iter()
            .skip(1)
            .filter(|v| v.acked.is_some())
            .count() as u64;
        if let Err(expected) = admissible(versions, content, promise, kill) {
            lost.push(format!(
                "edit of message {id}: content {content:?}, expected {expected}"
            ));
        }
    }
    for (id, emoji, at) in &ledger.reactions {
        acked += 1;
        let there = messages.get(id).is_some_and(|m| {
            m["reactions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["emoji_name"] == emoji.as_str())
        });
        if !there && promise.must_survive(*at, kill) {
            lost.push(format!("reaction {emoji} on message {id}"));
        }
    }
    if !ledger.descriptions.is_empty() {
        acked += ledger
            .descriptions
            .iter()
            .filter(|v| v.acked.is_some())
            .count() as u64;
        let register = admin
            .call(
                reqwest::Method::POST,
                "/register",
                &[("fetch_event_types", json!(["realm"]).to_string())],
            )
            .await
            .map_err(|e| match e {
                CallError::Gone => "POST /register: no answer".to_owned(),
                CallError::Refused(m) => m,
            })?;
        let text = register["realm_description"].as_str().unwrap_or_default();
        if let Err(expected) = admissible(&ledger.descriptions, text, promise, kill) {
            lost.push(format!("realm description: {text:?}, expected {expected}"));
        }
    }
    for (user, versions) in &ledger.statuses {
        acked += versions.iter().filter(|v| v.acked.is_some()).count() as u64;
        let status = admin.get(&format!("/users/{user}/status"), &[]).await?;
        let text = status["status"]["status_text"].as_str().unwrap_or_default();
        if let Err(expected) = admissible(versions, text, promise, kill) {
            lost.push(format!(
                "status of user {user}: {text:?}, expected {expected}"
            ));
        }
    }
    Ok(Checked { acked, lost })
}

/// Whether `found` is a value the ledger allows: the newest value that must have
/// survived, or anything written after it (acknowledged or cut by the kill).
fn admissible(
    versions: &[Version],
    found: &str,
    promise: Promise,
    kill: Instant,
) -> Result<(), String> {
    let floor = versions
        .iter()
        .rposition(|v| v.acked.is_some_and(|at| promise.must_survive(at, kill)));
    let allowed: Vec<&str> = match floor {
        Some(i) => versions[i..].iter().map(|v| v.value.as_str()).collect(),
        // Nothing had to survive: anything the ledger wrote, or what was there before.
        None => return Ok(()),
    };
    if allowed.contains(&found) {
        Ok(())
    } else {
        Err(format!("one of {allowed:?}"))
    }
}

/// Every message of the realm iago can read, by id, raw content.
async fn all_messages(admin: &Api) -> Result<BTreeMap<u64, Value>, String> {
    let mut out = BTreeMap::new();
    let mut anchor = "oldest".to_owned();
    loop {
        let page = admin
            .get(
                "/messages",
                &[
                    ("anchor", anchor.clone()),
                    ("num_before", "0".into()),
                    ("num_after", "1000".into()),
                    ("apply_markdown", "false".into()),
                    ("include_anchor", (anchor == "oldest").to_string()),
                ],
            )
            .await?;
        let batch = page["messages"].as_array().cloned().unwrap_or_default();
        let mut last = None;
        for m in batch {
            if let Some(id) = m["id"].as_u64() {
                last = Some(id);
                out.insert(id, m);
            }
        }
        if page["found_newest"] == true {
            return Ok(out);
        }
        match last {
            Some(id) => anchor = id.to_string(),
            None => return Ok(out),
        }
    }
}

/// The realm as iago sees it: the whole `/register` state (less what belongs to the
/// queue or the moment) and every message.
async fn state(admin: &Api) -> Result<Value, String> {
    let mut register = admin
        .call(
            reqwest::Method::POST,
            "/register",
            &[("apply_markdown", "false".into())],
        )
        .await
        .map_err(|e| match e {
            CallError::Gone => "POST /register: no answer".to_owned(),
            CallError::Refused(m) => m,
        })?;
    if let Some(m) = register.as_object_mut() {
        for volatile in [
            "queue_id",
            "last_event_id",
            "server_timestamp",
            "presences",
            "presence_last_update_id",
            "server_generation",
            "event_queue_longpoll_timeout_seconds",
        ] {
            m.remove(volatile);
        }
    }
    let messages = all_messages(admin).await?;
    // Each start takes a free port: the served address is not part of the state.
    let text = json!({ "register": register, "messages": messages })
        .to_string()
        .replace(&admin.url, "http://hearth.invalid");
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// Where two states first differ, as a path.
fn first_difference(a: &Value, b: &Value) -> String {
    fn walk(a: &Value, b: &Value, path: String) -> Option<String> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for (k, v) in x {
                    match y.get(k) {
                        Some(w) => {
                            if let Some(p) = walk(v, w, format!("{path}.{k}")) {
                                return Some(p);
                            }
                        }
                        None => return Some(format!("{path}.{k} only before")),
                    }
                }
                y.keys()
                    .find(|k| !x.contains_key(*k))
                    .map(|k| format!("{path}.{k} only after"))
            }
            (Value::Array(x), Value::Array(y)) => {
                for (i, (v, w)) in x.iter().zip(y).enumerate() {
                    if let Some(p) = walk(v, w, format!("{path}[{i}]")) {
                        return Some(p);
                    }
                }
                (x.len() != y.len()).then(|| format!("{path}: {} items, then {}", x.len(), y.len()))
            }
            _ => (a != b).then(|| format!("{path}: {a} then {b}")),
        }
    }
    walk(a, b, String::new()).unwrap_or_else(|| "(no difference found)".into())
}

/// Something of `before` (users, channels, groups, messages) missing from `after`.
fn vanished(before: &Value, after: &Value) -> Option<String> {
    let ids = |v: &Value, list: &str, key: &str| -> std::collections::HashSet<String> {
        v["register"][list]
            .as_array()
            .into_iter()
            .flatten()
            .map(|x| x[key].to_string())
            .collect()
    };
    for (list, key) in [
        ("realm_users", "user_id"),
        ("subscriptions", "stream_id"),
        ("realm_user_groups", "id"),
    ] {
        let (b, a) = (ids(before, list, key), ids(after, list, key));
        if let Some(gone) = b.difference(&a).next() {
            return Some(format!(
                "{list} {gone} was there after the previous cycle and is gone"
            ));
        }
    }
    let empty = serde_json::Map::new();
    let after_messages = after["messages"].as_object().unwrap_or(&empty);
    before["messages"]
        .as_object()
        .unwrap_or(&empty)
        .keys()
        .find(|id| !after_messages.contains_key(*id))
        .map(|id| format!("message {id} was there after the previous cycle and is gone"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(value: &str, acked: Option<Instant>) -> Version {
        Version {
            value: value.into(),
            acked,
        }
    }

    #[test]
    fn always_requires_the_newest_acknowledged_value_or_a_later_one() {
        let t0 = Instant::now();
        let kill = t0 + Duration::from_millis(10);
        let versions = [v("a", Some(t0)), v("b", Some(t0)), v("c", None)];
        assert!(admissible(&versions, "b", Promise::Always, kill).is_ok());
        assert!(
            admissible(&versions, "c", Promise::Always, kill).is_ok(),
            "in flight at the kill"
        );
        assert!(
            admissible(&versions, "a", Promise::Always, kill).is_err(),
            "an acknowledged edit lost"
        );
        assert!(admissible(&versions, "z", Promise::Always, kill).is_err());
    }

    #[test]
    fn interval_allows_losing_only_the_last_bound() {
        let t0 = Instant::now();
        let bound = Duration::from_millis(700);
        let kill = t0 + Duration::from_millis(1000);
        let old = t0;
        let recent = t0 + Duration::from_millis(900);
        let p = Promise::Within(bound);
        assert!(p.must_survive(old, kill));
        assert!(!p.must_survive(recent, kill));
        let versions = [v("a", Some(old)), v("b", Some(recent))];
        assert!(
            admissible(&versions, "a", p, kill).is_ok(),
            "b was within the bound"
        );
        assert!(admissible(&versions, "b", p, kill).is_ok());
        assert!(admissible(&[v("a", Some(old))], "", p, kill).is_err());
        assert!(!Promise::Never.must_survive(old, kill));
    }

    #[test]
    fn states_are_compared_whole_and_losses_found() {
        let a = json!({"register": {"realm_users": [{"user_id": 1}, {"user_id": 2}]}, "messages": {"5": {"content": "x"}}});
        let mut b = a.clone();
        assert_eq!(first_difference(&a, &b), "(no difference found)");
        assert_eq!(vanished(&a, &b), None);
        b["messages"]["5"]["content"] = json!("y");
        assert_eq!(
            first_difference(&a, &b),
            ".messages.5.content: \"x\" then \"y\""
        );
        b["register"]["realm_users"] = json!([{"user_id": 1}]);
        assert!(vanished(&a, &b).is_some_and(|m| m.contains("realm_users 2")));
        let c =
            json!({"register": {"realm_users": [{"user_id": 1}, {"user_id": 2}]}, "messages": {}});
        assert!(vanished(&a, &c).is_some_and(|m| m.contains("message 5")));
    }

    #[tokio::test]
    async fn a_run_waits_between_cycles_while_its_pause_file_exists_and_goes_on_without_it() {
        let dir = std::env::temp_dir().join(format!("torture-pause-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let flag = dir.join("pause");
        // No file: no wait at all.
        wait_while_present(&flag, 1).await;
        std::fs::write(&flag, b"").unwrap();
        let waiting = tokio::spawn({
            let flag = flag.clone();
            async move { wait_while_present(&flag, 2).await }
        });
        tokio::time::sleep(Duration::from_millis(1200)).await;
        assert!(
            !waiting.is_finished(),
            "the run went on while the file existed"
        );
        std::fs::remove_file(&flag).unwrap();
        tokio::time::timeout(Duration::from_secs(30), waiting)
            .await
            .expect("the run did not resume once the file was gone")
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
