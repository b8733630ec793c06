//! The message store at 1 M messages, against the real `hearth` binary:
//!
//! 1. restart time (process start to first answer) with no messages and with 1 M, and
//!    the time to the first answer of `GET /messages` (which waits for the message
//!    database, opened in the background);
//! 2. resident memory (VmRSS) after that start and one narrowed read, both ways;
//! 3. bytes on disk per message (data folder with 1 M messages minus without);
//! 4. `GET /messages` narrowed to one topic, anchor `newest`, 50 messages: p50, p99;
//! 5. send throughput with 64 concurrent clients, `--durability always` and `never`.
//!
//! The 1 M messages are seeded in-process, through the same path the realm actor takes
//! (WAL record, `MessageStore::project`, `apply`), in decisions of 10 000 sends, then a
//! snapshot; they go to channel `Rome` (5 subscribers) over 1 000 topics, from one
//! sender, ~60 bytes of content each.
//!
//! `cargo bench --bench messages` (`-- quick` for 100 000 messages, `-- count=N` for N).
//! It also counts the message database's keys per tree after the seed (keys and bytes
//! per message). Client and server share the machine's two cores: compare ratios from
//! one run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;

#[path = "common/seed.rs"]
mod common;
use common::{seed, SENDER, TOPICS};
use hearth::realm::Realm;

/// The message database's keys and their bytes (keys and values), per kind of tree
/// (`msg:`, `msgidx:`, ...), after a seed.
fn count_keys(data: &Path) -> Vec<(String, u64, u64)> {
    let db = hearth::storage::messages::open_sled(data).expect("message database");
    let mut counts: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for name in db.tree_names() {
        let name = String::from_utf8_lossy(&name).into_owned();
        let Some(kind) = name.split_once(':').map(|(k, _)| k.to_owned()) else {
            continue;
        };
        let tree = db.open_tree(&name).expect("tree");
        let at = counts.entry(kind).or_default();
        for item in tree.iter() {
            let (k, v) = item.expect("item");
            at.0 += 1;
            at.1 += (k.len() + v.len()) as u64;
        }
    }
    counts.into_iter().map(|(k, (n, b))| (k, n, b)).collect()
}

/// Copies the message database of `data` into a fresh sled database in `to` (every
/// tree, key by key, as `hearth`'s rewrite of an old layout does); returns how long
/// the copy took.
fn copy_fresh(data: &Path, to: &Path) -> Duration {
    let started = Instant::now();
    let db = hearth::storage::messages::open_sled(data).expect("message database");
    let fresh = sled::Config::new()
        .path(to)
        .flush_every_ms(None)
        .open()
        .expect("fresh database");
    for name in db.tree_names() {
        let (from, into) = (
            db.open_tree(&name).unwrap(),
            fresh.open_tree(&name).unwrap(),
        );
        for item in from.iter() {
            let (k, v) = item.unwrap();
            into.insert(k, v).unwrap();
        }
    }
    fresh.flush().unwrap();
    started.elapsed()
}

/// How long sled takes to open the database in `dir` (the best of three, after one
/// that writes its snapshot).
fn open_ms(dir: &Path) -> f64 {
    let open = || {
        let started = Instant::now();
        let db = sled::Config::new()
            .path(dir)
            .flush_every_ms(None)
            .cache_capacity(64 << 20)
            .open()
            .expect("open");
        let took = started.elapsed();
        drop(db);
        took
    };
    open();
    (0..3).map(|_| ms(open())).fold(f64::MAX, f64::min)
}

fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let e = e.expect("entry");
        let meta = e.metadata().expect("metadata");
        if meta.is_dir() {
            total += dir_bytes(&e.path());
        } else {
            total += meta.len();
        }
    }
    total
}

/// The `hearth` binary serving `data`.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    /// Starts the binary and waits for its first answer; returns it and the time that
    /// took. See `first_read` for the first message read.
    fn start(data: &Path, durability: &str) -> (Server, Duration) {
        Server::start_with(data, durability, "writer")
    }

    /// `start` with `--message-projection projection`.
    fn start_with(data: &Path, durability: &str, projection: &str) -> (Server, Duration) {
        let (server, took, _) = Server::start_and_read(data, durability, projection, None);
        (server, took)
    }

    /// `start`, then (with `auth`) one `GET /messages` at once: also returns the time
    /// from process start to its answer.
    fn start_and_read(
        data: &Path,
        durability: &str,
        projection: &str,
        auth: Option<&str>,
    ) -> (Server, Duration, Duration) {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let started = Instant::now();
        let child = Command::new(env!("CARGO_BIN_EXE_hearth"))
            .env("HEARTH_METRICS_BIND", "off")
            .env("HEARTH_ADMIN_BIND", "off")
            .args(["serve", "--dev", "--durability", durability])
            .args(["--message-projection", projection])
            .arg("--data")
            .arg(data)
            .arg("--bind")
            .arg(format!("127.0.0.1:{port}"))
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(data.with_extension("log"))
                    .map(Stdio::from)
                    .unwrap_or_else(|_| Stdio::null()),
            )
            .spawn()
            .expect("start hearth");
        let server = Server {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let http = reqwest::blocking::Client::new();
        loop {
            if let Ok(r) = http
                .get(format!("{}/api/v1/server_settings", server.url))
                .send()
            {
                if r.status().is_success() {
                    break;
                }
            }
            assert!(started.elapsed() < Duration::from_secs(300), "no answer");
            std::thread::sleep(Duration::from_millis(2));
        }
        let took = started.elapsed();
        let mut read = took;
        if let Some(auth) = auth {
            let r = http
                .get(format!("{}/api/v1/messages", server.url))
                .header("Authorization", auth)
                .query(&[
                    ("anchor", "newest"),
                    ("num_before", "1"),
                    ("num_after", "0"),
                    ("narrow", r#"[{"operator":"channel","operand":"Rome"}]"#),
                ])
                .send()
                .expect("first message read");
            assert!(
                r.status().is_success(),
                "first message read: {}",
                r.status()
            );
            read = started.elapsed();
        }
        (server, took, read)
    }

    fn rss_kib(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn basic(realm: &Realm, email: &str) -> String {
    let user = realm.user_by_delivery_email(email).expect("user");
    let token =
        base64::engine::general_purpose::STANDARD.encode(format!("{email}:{}", user.api_key));
    format!("Basic {token}")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// p50 and p99 of `GET /messages` narrowed to one topic, anchor newest, 50 messages.
fn topic_reads(url: &str, auth: &str, samples: usize) -> (Duration, Duration, usize) {
    let http = reqwest::blocking::Client::new();
    let mut times = Vec::with_capacity(samples);
    let mut got = 0;
    for i in 0..samples + 20 {
        let narrow = format!(
            r#"[{{"operator":"channel","operand":"Rome"}},{{"operator":"topic","operand":"topic {}"}}]"#,
            (i as u64 * 37) % TOPICS
        );
        let start = Instant::now();
        let resp = http
            .get(format!("{url}/api/v1/messages"))
            .header("Authorization", auth)
            .query(&[
                ("anchor", "newest"),
                ("num_before", "50"),
                ("num_after", "0"),
                ("narrow", narrow.as_str()),
            ])
            .send()
            .expect("sent");
        assert!(resp.status().is_success(), "{}", resp.status());
        let body: serde_json::Value = resp.json().expect("json");
        if i >= 20 {
            times.push(start.elapsed());
            got = body["messages"].as_array().map_or(0, Vec::len);
        }
    }
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.99), got)
}

/// Messages per second sent by 64 concurrent clients for `secs` seconds, errors, and
/// the p50 and p99 of a send's answer time over those seconds.
fn send_throughput(url: &str, auth: &str, secs: u64) -> (f64, u64, Duration, Duration) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let http = reqwest::Client::new();
        let sent = Arc::new(AtomicU64::new(0));
        let errors = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        // Answer times are kept while this is set: the measured seconds only.
        let timing = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for c in 0..64 {
            let (http, url, auth) = (http.clone(), url.to_owned(), auth.to_owned());
            let (sent, errors, stop) = (sent.clone(), errors.clone(), stop.clone());
            let timing = timing.clone();
            tasks.push(tokio::spawn(async move {
                let mut i = 0u64;
                let mut times = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let content = format!("load {c} {i}");
                    let started = Instant::now();
                    let r = http
                        .post(format!("{url}/api/v1/messages"))
                        .header("Authorization", &auth)
                        .form(&[
                            ("type", "stream"),
                            ("to", "Rome"),
                            ("topic", "load"),
                            ("content", content.as_str()),
                        ])
                        .send()
                        .await;
                    match r {
                        Ok(r) if r.status().is_success() => {
                            sent.fetch_add(1, Ordering::Relaxed);
                            if timing.load(Ordering::Relaxed) {
                                times.push(started.elapsed());
                            }
                        }
                        _ => {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    i += 1;
                }
                times
            }));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let base = sent.load(Ordering::Relaxed);
        timing.store(true, Ordering::Relaxed);
        let started = Instant::now();
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let done = sent.load(Ordering::Relaxed) - base;
        let took = started.elapsed().as_secs_f64();
        timing.store(false, Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
        let mut times = Vec::new();
        for t in tasks {
            times.extend(t.await.unwrap_or_default());
        }
        times.sort();
        let (p50, p99) = if times.is_empty() {
            (Duration::ZERO, Duration::ZERO)
        } else {
            (percentile(&times, 0.5), percentile(&times, 0.99))
        };
        (done as f64 / took, errors.load(Ordering::Relaxed), p50, p99)
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "quick");
    let count = args
        .iter()
        .find_map(|a| a.strip_prefix("count=").and_then(|n| n.parse().ok()));
    let n: u64 = count.unwrap_or(if quick { 100_000 } else { 1_000_000 });
    let quick = n <= 100_000;
    let root = tempfile::tempdir().expect("tmp");
    // `HEARTH_BENCH_KEEP=1`: the seeded folders stay (their path is printed) for a look
    // at what they hold.
    let root_path = if std::env::var_os("HEARTH_BENCH_KEEP").is_some() {
        let kept = root.keep();
        println!("the folders stay in {}", kept.display());
        kept
    } else {
        root.path().to_path_buf()
    };
    let empty: PathBuf = root_path.join("empty");
    let full: PathBuf = root_path.join("full");
    let realm = seed(&empty, 0);
    seed(&full, n);
    let auth = basic(&realm, SENDER);
    let (empty_bytes, full_bytes) = (dir_bytes(&empty), dir_bytes(&full));
    let messages_bytes = dir_bytes(&full.join(hearth::storage::messages::FOLDER));
    let keys = count_keys(&full);
    let total: u64 = keys.iter().map(|(_, k, _)| k).sum();
    let live: u64 = keys.iter().map(|(_, _, b)| b).sum();
    println!(
        "message database after the seed: {total} keys ({:.2} per message: {}), {:.0} bytes per message",
        total as f64 / n as f64,
        keys.iter()
            .map(|(kind, k, _)| format!("{kind} {:.3}", *k as f64 / n as f64))
            .collect::<Vec<_>>()
            .join(", "),
        messages_bytes as f64 / n as f64
    );
    println!(
        "live keys and values: {:.0} bytes per message ({}); sled's files {:.2}x that",
        live as f64 / n as f64,
        keys.iter()
            .map(|(kind, _, b)| format!("{kind} {:.0}", *b as f64 / n as f64))
            .collect::<Vec<_>>()
            .join(", "),
        messages_bytes as f64 / live.max(1) as f64
    );
    // The same trees copied into a fresh database: what sled needs for the live data
    // without the garbage of its log, and how long each opens.
    let copy = root_path.join("copy");
    let took = copy_fresh(&full, &copy);
    let copy_bytes = dir_bytes(&copy);
    println!(
        "a fresh copy of the message database: {:.0} bytes per message ({:.2}x the live \
         data), copied in {:.1} s; sled open: seeded {:.0} ms, fresh copy {:.0} ms",
        copy_bytes as f64 / n as f64,
        copy_bytes as f64 / live.max(1) as f64,
        took.as_secs_f64(),
        open_ms(&full.join(hearth::storage::messages::FOLDER)),
        open_ms(&copy)
    );
    let _ = std::fs::remove_dir_all(&copy);

    println!("\n| measure | 0 messages | {n} messages | ratio |");
    println!("| --- | --- | --- | --- |");
    // Two starts each; the second (warm page cache) is the one in the table. The first
    // is printed too: sled writes its snapshot (the page table) only when it opens, so
    // the first start after writing also reads every log segment written since the
    // previous open, which a real restart after a long run pays.
    let mut rows = Vec::new();
    for (data, label) in [(&empty, "empty"), (&full, "full")] {
        let (first_server, first) = Server::start(data, "always");
        drop(first_server);
        println!("  {label}: first start after seeding {:.0} ms", ms(first));
        let (server, took, read) = Server::start_and_read(data, "always", "writer", Some(&auth));
        let (p50, p99, got) = topic_reads(&server.url, &auth, 200);
        let rss = server.rss_kib();
        // What the start spent where, from the server's own log.
        if let Ok(log) = std::fs::read_to_string(data.with_extension("log")) {
            for line in log
                .lines()
                .filter(|l| l.contains(" in ") && l.contains(" ms"))
            {
                println!("  {label}: {}", line.trim());
            }
        }
        rows.push((label, took, rss, p50, p99, got, read));
    }
    let (e, f) = (&rows[0], &rows[1]);
    println!(
        "| restart (process start to first answer) | {:.0} ms | {:.0} ms | {:.2}x |",
        ms(e.1),
        ms(f.1),
        f.1.as_secs_f64() / e.1.as_secs_f64()
    );
    println!(
        "| process start to the first `GET /messages` answer | {:.0} ms | {:.0} ms | {:.2}x |",
        ms(e.6),
        ms(f.6),
        f.6.as_secs_f64() / e.6.as_secs_f64()
    );
    println!(
        "| RSS after start and reads | {:.1} MiB | {:.1} MiB | {:.2}x |",
        e.2 as f64 / 1024.0,
        f.2 as f64 / 1024.0,
        f.2 as f64 / e.2 as f64
    );
    println!(
        "| data folder | {:.1} MiB | {:.1} MiB | {:.0} bytes/message |",
        empty_bytes as f64 / 1048576.0,
        full_bytes as f64 / 1048576.0,
        (full_bytes.saturating_sub(empty_bytes)) as f64 / n as f64
    );
    println!(
        "| GET /messages topic narrow, newest, 50: p50 / p99 | {:.2} / {:.2} ms ({} msgs) | {:.2} / {:.2} ms ({} msgs) | {:.2}x |",
        ms(e.3),
        ms(e.4),
        e.5,
        ms(f.3),
        ms(f.4),
        f.5,
        f.3.as_secs_f64() / e.3.as_secs_f64()
    );
    let secs = if quick { 3 } else { 10 };
    // Each durability mode with the rows written on the realm actor (`inline`, as
    // before the writer thread) and on the message database's writer thread, one
    // after the other on the same folder (`HEARTH_BENCH_PROJECTIONS=writer` for one).
    let projections: Vec<String> = std::env::var("HEARTH_BENCH_PROJECTIONS")
        .unwrap_or_else(|_| "inline,writer".into())
        .split(',')
        .map(str::to_owned)
        .collect();
    println!("\n| sends, 64 clients (at {n}) | sends/s | p50 | p99 | errors |");
    println!("| --- | --- | --- | --- | --- |");
    // `HEARTH_BENCH_ROUNDS=N`: each mode N times, alternating (one 10 s run of each is
    // at the mercy of the machine's moment); the ratios are of the means. Even rounds
    // run `never` first (always, never, never, always, ...), so neither mode always
    // takes the first run on a folder, or the last.
    let rounds: usize = std::env::var("HEARTH_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1)
        .max(1);
    let mut rates: std::collections::BTreeMap<(String, &str), Vec<f64>> = Default::default();
    for round in 1..=rounds {
        for projection in &projections {
            let order = if round % 2 == 1 {
                ["always", "never"]
            } else {
                ["never", "always"]
            };
            for mode in order {
                // What the previous run left dirty in the page cache (`never` leaves a
                // lot) goes to disk first, not during this run's own `fdatasync`s.
                let synced = Command::new("sync").status();
                assert!(
                    synced.as_ref().is_ok_and(|s| s.success()),
                    "sync: {synced:?}"
                );
                let (server, _) = Server::start_with(&full, mode, projection);
                let (rate, errors, p50, p99) = send_throughput(&server.url, &auth, secs);
                rates
                    .entry((projection.clone(), mode))
                    .or_default()
                    .push(rate);
                println!(
                    "| `{mode}`, `--message-projection {projection}` (round {round}) | {rate:.0} | {:.1} ms | {:.1} ms | {errors} |",
                    ms(p50),
                    ms(p99)
                );
            }
        }
    }
    let mean = |key: (String, &str)| {
        rates
            .get(&key)
            .map(|r| r.iter().sum::<f64>() / r.len() as f64)
    };
    for projection in &projections {
        if let (Some(a), Some(n)) = (
            mean((projection.clone(), "always")),
            mean((projection.clone(), "never")),
        ) {
            println!(
                "| `always` / `never`, `{projection}` (means: {a:.0} / {n:.0}) | {:.2} | | | |",
                a / n
            );
        }
    }
    if let (Some(i), Some(w)) = (
        mean(("inline".to_owned(), "always")),
        mean(("writer".to_owned(), "always")),
    ) {
        println!("| `always`: `writer` / `inline` | {:.2} | | | |", w / i);
    }
    // A real restart: the server before it wrote messages since its own start and was
    // stopped cleanly (SIGTERM), so sled reads the log written since that start too.
    let (server, took) = Server::start(&full, "always");
    println!(
        "| restart after the sends and a clean shutdown | | {:.0} ms | {:.2}x the 0-message start |",
        ms(took),
        took.as_secs_f64() / e.1.as_secs_f64()
    );
    // The folder after the seed and the sends (ids are dense: the newest id is the
    // number of messages), and what each message sent through the server added.
    let newest = newest_id(&server.url, &auth);
    drop(server);
    let after = dir_bytes(&full);
    let sent = newest.saturating_sub(n);
    println!(
        "| data folder after the sends | | {:.1} MiB for {newest} messages: {:.0} bytes/message \
         | {sent} sent: {:.0} bytes each |",
        after as f64 / 1048576.0,
        after.saturating_sub(empty_bytes) as f64 / newest.max(1) as f64,
        after.saturating_sub(full_bytes) as f64 / sent.max(1) as f64
    );
}

/// The id of the newest message `auth`'s user can read.
fn newest_id(url: &str, auth: &str) -> u64 {
    let r: serde_json::Value = reqwest::blocking::Client::new()
        .get(format!("{url}/api/v1/messages"))
        .header("Authorization", auth)
        .query(&[
            ("anchor", "newest"),
            ("num_before", "1"),
            ("num_after", "0"),
        ])
        .send()
        .expect("newest")
        .json()
        .expect("json");
    r["messages"][0]["id"].as_u64().unwrap_or(0)
}
