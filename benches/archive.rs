//! The realm archive and a realm's move at scale: the development realm plus U users
//! and N messages (10 000 and 1 000 000; `-- quick`: 1 000 and 100 000).
//!
//! The messages are seeded in-process as `benches/messages.rs` seeds them
//! (`benches/common/seed.rs`: WAL record, `MessageStore::project`, `apply`, in
//! decisions of 10 000 sends, then a snapshot): to channel `Rome` (5 subscribers, so 5
//! flag entries a message) over 1 000 topics, from one sender, ~60 bytes of content
//! each. The users are then added as `hearth realm populate` adds them (members with
//! API keys, 1 000 a WAL record, then a snapshot).
//!
//! Then, with real `hearth serve` processes (this build's `hearth`):
//!
//! 1. **online export**: `POST /admin/export` of the running source node (what a move's
//!    export is: the archive at the actor's last record, written while the realm
//!    serves), its time and the archive's size;
//! 2. **online import**: `POST /admin/import` of that archive into an empty node
//!    (streamed from the file), staged, then dropped again;
//! 3. **a move under writes**: `hearth realm move` (`ops::moving::move_realm`) from the
//!    source to the target while W writers send messages through nginx (when it is
//!    installed; straight to the source's port otherwise), each at most one write per
//!    50 ms, each write retried on
//!    `503 Retry-After` as Zulip's clients do; with the placement rewritten and nginx
//!    reloaded by the move. The freeze is the move's own measure (from the freeze's
//!    request to the target's activation); the writers' longest wait for an
//!    acknowledgement is measured beside it.
//!
//! `-- offline` also times `hearth realm export` and `hearth realm import` on the
//! stopped folder (`ops::archive::export_command`, `import_command`).
//! `HEARTH_BENCH_WRITERS` (default 16) sets W. `HEARTH_BENCH_KEEP=1` keeps the folders.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hearth::admin::client::AdminClient;
use hearth::realm::{Change, Cx, NewUser, Role, SystemClock, UserChange};
use hearth::storage::{DurabilityMode, Store};

#[path = "common/seed.rs"]
mod common;
use common::{seed, SENDER};
#[path = "common/nginx.rs"]
mod nginx;
use nginx::Nginx;

/// The router's port in this bench (the bench's own range).
const ROUTER_PORT: u16 = 32080;
const DOMAIN: &str = "bench.test";

fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let meta = entry.metadata().expect("metadata");
        total += if meta.is_dir() {
            dir_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

/// Adds `users` members to the development realm of `dir` (stopped), as `hearth realm
/// populate` does: 1 000 a WAL record, then a snapshot.
fn add_users(dir: &Path, users: usize) {
    let store = Store::open(dir, DurabilityMode::Never).expect("store");
    let mut rs = store.realm(hearth::DEV_SUBDOMAIN).expect("realm store");
    let mut realm = rs.recover().expect("recover").expect("a realm").realm;
    let clock = SystemClock;
    let mut cx = Cx::new(&clock);
    let mut next = realm.next_user_id;
    let changes: Vec<Change> = (0..users)
        .map(|i| {
            let c = Change::User(UserChange::UserCreated(NewUser {
                user_id: next,
                delivery_email: format!("load{i}@hearth.invalid"),
                full_name: format!("Load User {i}"),
                role: Role::Member,
                bot_type: None,
                bot_owner_id: None,
                timezone: "UTC".into(),
                api_key: cx.api_key(),
                password_hash: None,
                date_joined: cx.now_secs(),
            }));
            next += 1;
            c
        })
        .collect();
    for chunk in changes.chunks(1000) {
        rs.append(chunk).expect("append");
        chunk.iter().for_each(|c| realm.apply(c));
    }
    rs.snapshot(&realm).expect("snapshot");
    drop(rs);
    store.durability.flush_now().expect("flush");
    store.durability.shutdown();
}

/// A `hearth serve` of this build.
struct Node {
    child: Child,
    http: String,
    admin_addr: String,
    admin: AdminClient,
}

impl Node {
    fn start(data: &Path) -> Node {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args([
                "serve",
                "--bind",
                "127.0.0.1:0",
                "--admin-bind",
                "127.0.0.1:0",
            ])
            .args(["--rate-limit", "off", "--trusted-proxy", "127.0.0.1"])
            .arg("--data")
            .arg(data)
            .env("RUST_LOG", "info")
            .env("HEARTH_METRICS_BIND", "off")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("hearth serve");
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = lines.clone();
        let pipe = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                seen.lock().unwrap().push(line);
            }
        });
        let find = |key: &str| {
            lines.lock().unwrap().iter().find_map(|l| {
                let at = l.find(key)? + key.len();
                let rest = &l[at..];
                let end = rest
                    .find(|c: char| c.is_whitespace() || c == '"' || c == '/')
                    .unwrap_or(rest.len());
                Some(rest[..end].to_owned())
            })
        };
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            if let (Some(http), Some(admin_addr)) =
                (find("listening on http://"), find("admin on http://"))
            {
                let admin =
                    AdminClient::with_token_file(&admin_addr, &data.join("admin-token")).unwrap();
                return Node {
                    child,
                    http,
                    admin_addr,
                    admin,
                };
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "hearth serve ended ({status}): {:#?}",
                    lines.lock().unwrap()
                );
            }
            assert!(Instant::now() < deadline, "hearth serve does not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// nginx in front of the two nodes (`common/nginx.rs`).
struct Router {
    nginx: Nginx,
}

fn write_placement(path: &Path, nodes: &[(&str, &Node)], on: &str) {
    let mut text =
        format!("[router]\nlisten = \"127.0.0.1:{ROUTER_PORT}\"\ndomain = \"{DOMAIN}\"\n\n");
    for (name, node) in nodes {
        text += &format!(
            "[nodes.{name}]\nhttp = \"{}\"\nadmin = \"{}\"\n\n",
            node.http, node.admin_addr
        );
    }
    text += &format!("[realms]\n{} = \"{on}\"\n", hearth::DEV_SUBDOMAIN);
    std::fs::write(path, text).unwrap();
}

impl Router {
    fn start(binary: &Path, nodes: &[(&str, &Node)]) -> Router {
        let nginx = Nginx::start(
            binary,
            Path::new(env!("CARGO_BIN_EXE_hearth")),
            ROUTER_PORT,
            |placement| write_placement(placement, nodes, "a"),
        );
        Router { nginx }
    }
}

/// One writer: sends to `Rome` until `stop`, each write retried on 503 (`Retry-After`)
/// or a lost connection until acknowledged. Returns each acknowledged write's wait.
async fn writer(url: String, key: String, stop: Arc<AtomicBool>) -> Vec<Duration> {
    let http = reqwest::Client::new();
    let mut waits = Vec::new();
    let mut i = 0u64;
    while !stop.load(Ordering::SeqCst) {
        i += 1;
        let began = Instant::now();
        loop {
            let res = http
                .post(format!("{url}/api/v1/messages"))
                .header("host", format!("{}.{DOMAIN}", hearth::DEV_SUBDOMAIN))
                .basic_auth(SENDER, Some(&key))
                .form(&[
                    ("type", "stream"),
                    ("to", "Rome"),
                    ("topic", "move"),
                    ("content", &format!("written during the move, {i}")),
                ])
                .send()
                .await;
            match res {
                Ok(r) if r.status() == 200 => {
                    waits.push(began.elapsed());
                    // Paced: one write per 50 ms per writer at most.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    break;
                }
                Ok(r) if r.status() == 503 => {
                    let wait: u64 = r
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(1);
                    // Zulip's clients wait the whole second; the ratio of interest is
                    // the freeze, so the writers come back sooner.
                    tokio::time::sleep(Duration::from_millis(wait.min(1) * 20)).await;
                }
                Ok(r) => panic!("a write answered {}", r.status()),
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }
    waits
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let offline = std::env::args().any(|a| a == "offline");
    let (n, users): (u64, usize) = if quick {
        (100_000, 1_000)
    } else {
        (1_000_000, 10_000)
    };
    let writers: usize = std::env::var("HEARTH_BENCH_WRITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let work = tempfile::tempdir().expect("tempdir");
    let source = work.path().join("source");
    let target = work.path().join("target");
    let started = Instant::now();
    let realm = seed(&source, n);
    let key = realm
        .user_by_delivery_email(SENDER)
        .expect("sender")
        .api_key
        .clone();
    add_users(&source, users);
    println!(
        "seeded {n} messages and {users} users in {:.1} s; data folder {:.1} MiB",
        started.elapsed().as_secs_f64(),
        mib(dir_bytes(&source))
    );

    if offline {
        let archive = work.path().join("offline.archive");
        let started = Instant::now();
        let manifest =
            hearth::ops::archive::export_command(&source, hearth::DEV_SUBDOMAIN, &archive)
                .expect("export");
        let export = started.elapsed();
        let size = std::fs::metadata(&archive).expect("archive").len();
        println!(
            "offline export: {:.2} s ({:.0} messages/s); archive {:.1} MiB ({:.0} bytes a \
             message); {} messages, {} flag entries, {} users",
            export.as_secs_f64(),
            manifest.counts.messages as f64 / export.as_secs_f64(),
            mib(size),
            size as f64 / manifest.counts.messages.max(1) as f64,
            manifest.counts.messages,
            manifest.counts.user_messages,
            manifest.counts.users
        );
        let folder = work.path().join("offline-import");
        let started = Instant::now();
        let imported =
            hearth::ops::archive::import_command(&folder, &archive, None).expect("import");
        let import = started.elapsed();
        println!(
            "offline import: {:.2} s ({:.0} messages/s); data folder after import {:.1} MiB",
            import.as_secs_f64(),
            imported.manifest.counts.messages as f64 / import.as_secs_f64(),
            mib(dir_bytes(&folder))
        );
        std::fs::remove_dir_all(&folder).unwrap();
        std::fs::remove_file(&archive).unwrap();
    }

    std::fs::create_dir(&target).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let a = Node::start(&source);
    let b = Node::start(&target);
    println!(
        "the nodes started in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // 1 and 2: the move's export and import, alone.
    let archive = work.path().join("online.archive");
    rt.block_on(async {
        // The source's message database opens in the background: wait for it, so the
        // export's time is the export's.
        let probe = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            let r = probe
                .get(format!("http://{}/api/v1/messages", a.http))
                .header("host", format!("{}.{DOMAIN}", hearth::DEV_SUBDOMAIN))
                .basic_auth(SENDER, Some(&key))
                .query(&[
                    ("anchor", "newest"),
                    ("num_before", "1"),
                    ("num_after", "0"),
                ])
                .send()
                .await;
            if r.is_ok_and(|r| r.status() == 200) {
                break;
            }
            assert!(Instant::now() < deadline, "the source never reads messages");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let started = Instant::now();
        let at = a
            .admin
            .export(hearth::DEV_SUBDOMAIN, &archive)
            .await
            .expect("online export");
        let export = started.elapsed();
        let size = std::fs::metadata(&archive).unwrap().len();
        println!(
            "online export (POST /admin/export): {:.2} s ({:.0} messages/s) at record {at}; \
             archive {:.1} MiB ({:.0} bytes a message)",
            export.as_secs_f64(),
            n as f64 / export.as_secs_f64(),
            mib(size),
            size as f64 / n.max(1) as f64
        );
        let started = Instant::now();
        let (realm, staged_at) = b.admin.import(&archive).await.expect("online import");
        let import = started.elapsed();
        println!(
            "online import (POST /admin/import, staged): {:.2} s ({:.0} messages/s); \
             target folder {:.1} MiB",
            import.as_secs_f64(),
            n as f64 / import.as_secs_f64(),
            mib(dir_bytes(&target))
        );
        assert_eq!((realm.as_str(), staged_at), (hearth::DEV_SUBDOMAIN, at));
        b.admin
            .drop_realm(hearth::DEV_SUBDOMAIN)
            .await
            .expect("drop the staged copy");
    });
    std::fs::remove_file(&archive).unwrap();

    // 3: the move under writes.
    let nginx = nginx::find();
    let router = nginx
        .as_deref()
        .map(|n| Router::start(n, &[("a", &a), ("b", &b)]));
    let url = match &router {
        Some(_) => format!("http://127.0.0.1:{ROUTER_PORT}"),
        None => {
            println!("nginx is not installed: the writers go straight to the source");
            format!("http://{}", a.http)
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..writers)
        .map(|_| rt.spawn(writer(url.clone(), key.clone(), stop.clone())))
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let token = |dir: &Path| dir.join("admin-token");
    let request = hearth::ops::moving::MoveRequest {
        subdomain: hearth::DEV_SUBDOMAIN.to_owned(),
        from: a.admin_addr.clone(),
        from_token_file: token(&source),
        to: b.admin_addr.clone(),
        to_token_file: token(&target),
        placement: router.as_ref().map(|r| r.nginx.placement()),
        reload_command: router.as_ref().map(|r| r.nginx.reload_command()),
        drain: Duration::from_secs(2),
    };
    let started = Instant::now();
    let report = rt
        .block_on(hearth::ops::moving::move_realm(&request))
        .expect("the move");
    let took = started.elapsed();
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::SeqCst);
    let mut waits: Vec<Duration> = tasks
        .into_iter()
        .flat_map(|t| rt.block_on(t).unwrap())
        .collect();
    waits.sort();
    for line in &report.lines {
        println!("  move: {line}");
    }
    println!(
        "move under {writers} writers{}: {:.1} s in all; freeze (freeze to activation) {} ms; \
         {} records shipped before the freeze, {} in it; {} writes acknowledged, their wait \
         p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        if router.is_some() {
            " through nginx"
        } else {
            ""
        },
        took.as_secs_f64(),
        report.freeze.map_or(0, |f| f.as_millis()),
        report.shipped_before_freeze,
        report.shipped_in_freeze,
        waits.len(),
        percentile(&waits, 0.5).as_secs_f64() * 1e3,
        percentile(&waits, 0.99).as_secs_f64() * 1e3,
        waits.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
    drop(router);
    drop(a);
    drop(b);
    if std::env::var_os("HEARTH_BENCH_KEEP").is_some() {
        let kept = work.keep();
        println!("kept {}", kept.display());
    }
}
