//! `search` narrows at a large message count, against the real `hearth` binary, with
//! the full-text index (`--search-index true`, the default) and without it (the scan
//! every search did before, `--search-index false`), in one run:
//!
//! 1. the index's rebuild at the first start (process start to its layout file);
//! 2. bytes on disk per message: the index's against the message database's;
//! 3. `GET /messages` with a `search` term, anchor `newest`, 50 messages: p50 and p99
//!    for a rare word (1 message in 100 000) and a common one (1 in 10), both ways;
//! 4. send throughput with 64 concurrent clients, both ways, and the server's CPU time
//!    per message sent (its threads, the index's included: a measure that other work
//!    on the machine disturbs less than a rate). `pairs=N` repeats the sends, each way
//!    in turn, N times.
//!
//! The messages are seeded in-process as `benches/messages.rs` seeds them (channel
//! `Rome`, 1 000 topics, one sender), with the two words mixed in; the index is then
//! built by the server from the rows, as at any start without one.
//!
//! `cargo bench --bench search` (1 000 000 messages; `-- count=N` for N, `samples=N`
//! searches of each kind, a fifth of them for the rare word's scan, `secs=N` of sends
//! each way). Client and
//! server share the machine's cores: compare ratios from one run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;

#[path = "common/seed.rs"]
mod common;
use common::{seed_with, SENDER};
use hearth::realm::Realm;

/// 1 message in this many holds the rare word.
const RARE_EVERY: u64 = 100_000;
/// 1 message in this many holds the common word.
const COMMON_EVERY: u64 = 10;

fn content(i: u64) -> String {
    let mut c = format!("message {i}: the quick brown fox jumps over the lazy dog");
    if i.is_multiple_of(COMMON_EVERY) {
        c.push_str(" while deploying");
    }
    if i % RARE_EVERY == RARE_EVERY / 2 {
        c.push_str(" beside a xylophone");
    }
    c
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut total = 0;
    for e in entries {
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

/// The `hearth` binary serving a data folder.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    /// Starts the binary (with or without the index) and waits for its first answer.
    fn start(data: &Path, index: bool) -> Server {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let started = Instant::now();
        let child = Command::new(env!("CARGO_BIN_EXE_hearth"))
            .env("HEARTH_METRICS_BIND", "off")
            .env("HEARTH_ADMIN_BIND", "off")
            .args(["serve", "--dev", "--durability", "never"])
            .args(["--search-index", if index { "true" } else { "false" }])
            .arg("--data")
            .arg(data)
            .arg("--bind")
            .arg(format!("127.0.0.1:{port}"))
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::options()
                    .create(true)
                    .append(true)
                    .open(data.with_extension("log"))
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
            std::thread::sleep(Duration::from_millis(5));
        }
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(60);
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

/// One search's timings: p50, p99, messages in the last answer, and its `found_oldest`.
struct Searched {
    p50: Duration,
    p99: Duration,
    got: usize,
    found_oldest: bool,
}

/// `GET /messages` searching `word`, anchor newest, 50 messages, `samples` times
/// (after 3 unmeasured).
fn searches(url: &str, auth: &str, word: &str, samples: usize) -> Searched {
    let http = reqwest::blocking::Client::new();
    let narrow = format!(r#"[{{"operator":"search","operand":"{word}"}}]"#);
    let mut times = Vec::with_capacity(samples);
    let (mut got, mut found_oldest) = (0, false);
    for i in 0..samples + 3 {
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
        if i >= 3 {
            times.push(start.elapsed());
        }
        got = body["messages"].as_array().map_or(0, Vec::len);
        found_oldest = body["found_oldest"] == true;
    }
    times.sort();
    Searched {
        p50: percentile(&times, 0.5),
        p99: percentile(&times, 0.99),
        got,
        found_oldest,
    }
}

/// The server's CPU time so far (user and system, all its threads), from
/// `/proc/<pid>/stat` in clock ticks of 10 ms (Linux's `USER_HZ`).
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // The fields after the command's closing parenthesis; utime and stime are the 14th
    // and 15th of the line.
    let rest = &stat[stat.rfind(')').expect("stat") + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = f[11].parse::<u64>().expect("utime") + f[12].parse::<u64>().expect("stime");
    ticks as f64 * 10.0
}

/// Sends as `send_throughput` does, and the server's CPU time per message sent: from
/// before the first send until its index (if any) had a second and a half to commit
/// the last ones. Less sensitive than sends/s to other work on the machine.
fn send_cost(server: &Server, auth: &str, secs: u64) -> (f64, u64, f64) {
    let pid = server.child.id();
    let before = cpu_ms(pid);
    let (rate, errors, total) = send_throughput(&server.url, auth, secs);
    std::thread::sleep(Duration::from_millis(1500));
    let per_send = (cpu_ms(pid) - before) / total.max(1) as f64;
    (rate, errors, per_send)
}

/// Messages per second sent by 64 concurrent clients for `secs` seconds (after a
/// second of warm-up), errors, and every message sent.
fn send_throughput(url: &str, auth: &str, secs: u64) -> (f64, u64, u64) {
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
        let mut tasks = Vec::new();
        for c in 0..64 {
            let (http, url, auth) = (http.clone(), url.to_owned(), auth.to_owned());
            let (sent, errors, stop) = (sent.clone(), errors.clone(), stop.clone());
            tasks.push(tokio::spawn(async move {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let content = format!("load {c} {i} deploying the quick brown fox");
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
                        }
                        _ => {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    i += 1;
                }
            }));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let base = sent.load(Ordering::Relaxed);
        let started = Instant::now();
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let done = sent.load(Ordering::Relaxed) - base;
        let took = started.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            let _ = t.await;
        }
        (
            done as f64 / took,
            errors.load(Ordering::Relaxed),
            sent.load(Ordering::Relaxed),
        )
    })
}

/// Starts the server with the index and waits until it is built (its layout file);
/// returns the server and the time from process start.
fn start_indexed(data: &Path) -> (Server, Duration) {
    let layout = hearth::storage::messages::search::realm_dir(data, hearth::DEV_SUBDOMAIN)
        .join(hearth::storage::messages::search::LAYOUT_FILE);
    let started = Instant::now();
    let server = Server::start(data, true);
    while !layout.exists() {
        assert!(started.elapsed() < Duration::from_secs(1800), "no index");
        std::thread::sleep(Duration::from_millis(20));
    }
    (server, started.elapsed())
}

fn row(what: &str, s: &Searched) {
    println!(
        "  {what}: p50 {:.2} ms, p99 {:.2} ms ({} messages, found_oldest {})",
        ms(s.p50),
        ms(s.p99),
        s.got,
        s.found_oldest
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .iter()
        .find_map(|a| a.strip_prefix("count=").and_then(|n| n.parse().ok()))
        .unwrap_or(1_000_000);
    let secs: u64 = args
        .iter()
        .find_map(|a| a.strip_prefix("secs=").and_then(|n| n.parse().ok()))
        .unwrap_or(10);
    let samples: usize = args
        .iter()
        .find_map(|a| a.strip_prefix("samples=").and_then(|n| n.parse().ok()))
        .unwrap_or(100);
    let pairs: usize = args
        .iter()
        .find_map(|a| a.strip_prefix("pairs=").and_then(|n| n.parse().ok()))
        .unwrap_or(1);
    let root = tempfile::tempdir().expect("tmp");
    let data = root.path().join("data");
    let realm = seed_with(&data, n, &content);
    let auth = basic(&realm, SENDER);
    let store_bytes = dir_bytes(&data.join(hearth::storage::messages::FOLDER));

    // The first start builds the index from the rows.
    let (server, rebuilt) = start_indexed(&data);
    let index_bytes = dir_bytes(&data.join(hearth::storage::messages::search::FOLDER));
    println!(
        "{n} messages; index built at the first start in {:.1} s",
        rebuilt.as_secs_f64()
    );
    println!(
        "  bytes per message: index {:.1}, message database {:.1} (index ÷ store {:.3})",
        index_bytes as f64 / n as f64,
        store_bytes as f64 / n as f64,
        index_bytes as f64 / store_bytes as f64
    );
    let rare_ix = searches(&server.url, &auth, "xylophone", samples);
    let common_ix = searches(&server.url, &auth, "deployed", samples);
    drop(server);

    // The scan, on the same rows.
    let server = Server::start(&data, false);
    let rare_scan = searches(&server.url, &auth, "xylophone", (samples / 5).max(5));
    let common_scan = searches(&server.url, &auth, "deployed", samples);
    let (scan_sends, scan_errors, scan_cpu) = send_cost(&server, &auth, secs);
    drop(server);

    // With the index again (rebuilt: the run without it removed it).
    let (server, rebuilt_again) = start_indexed(&data);
    let (ix_sends, ix_errors, ix_cpu) = send_cost(&server, &auth, secs);
    drop(server);
    // More pairs, each way in turn (`pairs=N`, the first pair above included).
    for pair in 1..pairs {
        let server = Server::start(&data, false);
        let (none, _, none_cpu) = send_cost(&server, &auth, secs);
        drop(server);
        let (server, _) = start_indexed(&data);
        let (ix, _, ix_cpu) = send_cost(&server, &auth, secs);
        drop(server);
        println!(
            "sends/s, pair {}: index {ix:.0}, none {none:.0}: {:.2}×; server CPU per send: \
             index {ix_cpu:.3} ms, none {none_cpu:.3} ms: none ÷ index {:.2}×",
            pair + 1,
            ix / none,
            none_cpu / ix_cpu
        );
    }

    println!("search, newest 50:");
    row("rare word, index", &rare_ix);
    row("rare word, scan ", &rare_scan);
    row("common word, index", &common_ix);
    row("common word, scan ", &common_scan);
    println!(
        "  scan ÷ index p50: rare {:.1}×, common {:.1}×",
        ms(rare_scan.p50) / ms(rare_ix.p50),
        ms(common_scan.p50) / ms(common_ix.p50)
    );
    println!(
        "sends/s, 64 clients, {secs} s: index {ix_sends:.0} ({ix_errors} errors), \
         none {scan_sends:.0} ({scan_errors} errors): {:.2}×; server CPU per send: \
         index {ix_cpu:.3} ms, none {scan_cpu:.3} ms: none ÷ index {:.2}×",
        ix_sends / scan_sends,
        scan_cpu / ix_cpu
    );
    println!(
        "index rebuilt at the second start (the rows and ~{:.0} sends more) in {:.1} s",
        scan_sends * secs as f64,
        rebuilt_again.as_secs_f64()
    );
}
