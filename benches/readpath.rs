//! The read path under load, over real HTTP against the in-process server:
//!
//! 1. `GET /users/me` latency at 10 000 users, idle and while 4 clients loop on
//!    `GET /users` (about 4 MB each);
//! 2. a stream of small writes at 100 000 users while snapshots run (`--snapshot-every`
//!    500), against the same stream with snapshots off;
//! 3. one user's small write while another's request subscribes to 10 000 new channels;
//! 4. what publishing costs a write: applying one small change to the working state and
//!    taking the immutable version readers get, at 100 000 users;
//! 5. presence at 10 000 users: pings per second (first pings, which create entries, and
//!    repeated ones, which change nothing) against `GET /users/me` per second in the same
//!    run, and `GET /realm/presence` latency, from its cache and right after a change.
//!
//! `cargo bench --bench readpath` (add `-- quick` for smaller sizes, or name the
//! sections to run: `-- users snapshots subscribe publish presence`). Prints a table;
//! figures go to `benches/RESULTS.md`. Client and server share the machine's cores, as
//! they would in a one-machine load test: compare ratios from one run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use hearth::config::ServeConfig;
use hearth::realm::{dev, Change, Cx, NewUser, Realm, Role};
use hearth::realm::{ChannelChange, UserChange};
use hearth::storage::{DurabilityMode, Store};

const DEV_ADMIN: &str = "iago@zulip.com";
const DEV_MEMBER: &str = "hamlet@zulip.com";

/// A data folder holding the development realm plus `extra` members; returns the
/// realm (for API keys).
fn seed(dir: &Path, extra: usize) -> Realm {
    let store = Store::open(dir, DurabilityMode::Never).expect("store");
    let mut rs = store.realm(hearth::DEV_SUBDOMAIN).expect("realm store");
    let mut cx = Cx::seeded(1_700_000_000_000, 7);
    let mut changes = dev::dev_realm_changes(&mut cx).expect("dev realm");
    let mut realm = Realm::from_first_change(&changes[0]).expect("first change");
    changes.iter().for_each(|c| realm.apply(c));
    let first = realm.next_user_id;
    for i in 0..extra as u64 {
        changes.push(Change::User(UserChange::UserCreated(NewUser {
            user_id: first + i,
            delivery_email: format!("load{i}@zulip.com"),
            full_name: format!("Load User {i}"),
            role: Role::Member,
            bot_type: None,
            bot_owner_id: None,
            timezone: "UTC".into(),
            api_key: cx.api_key(),
            password_hash: None,
            date_joined: cx.now_secs(),
        })));
    }
    let realm = hearth::actor::create_realm(&mut rs, &changes).expect("create");
    store.durability.shutdown();
    realm
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

struct Stats {
    p50: Duration,
    p99: Duration,
    max: Duration,
    n: usize,
}

fn stats(mut v: Vec<Duration>) -> Stats {
    v.sort();
    Stats {
        p50: percentile(&v, 0.5),
        p99: percentile(&v, 0.99),
        max: *v.last().expect("samples"),
        n: v.len(),
    }
}

fn row(what: &str, s: &Stats) {
    println!(
        "| {what} | {} | {:.3} | {:.3} | {:.3} |",
        s.n,
        ms(s.p50),
        ms(s.p99),
        ms(s.max)
    );
}

/// Runs the client side on its own multi-threaded runtime (the server has the actix
/// System of the main thread and its own workers).
fn client_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("client runtime")
}

async fn timed(rb: reqwest::RequestBuilder) -> Duration {
    let start = Instant::now();
    let resp = rb.send().await.expect("sent");
    assert!(resp.status().is_success(), "status {}", resp.status());
    resp.bytes().await.expect("body");
    start.elapsed()
}

/// Starts the server on `dir` inside a new actix System on this thread and runs
/// `client` (on another thread) against its URL.
fn with_server<T: Send + 'static>(
    dir: &Path,
    snapshot_every: u64,
    client: impl FnOnce(String) -> T + Send + 'static,
) -> T {
    let mut config = ServeConfig::for_tests(dir.to_path_buf());
    config.snapshot_every = snapshot_every;
    config.workers = Some(2);
    actix_web::rt::System::new().block_on(async move {
        let running = hearth::spawn(config).await.expect("server");
        let url = running.url();
        let handle = std::thread::spawn(move || client(url));
        while !handle.is_finished() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let out = handle.join().expect("client thread");
        running.shutdown().await;
        out
    })
}

fn users_me_under_listing_load(users: usize, samples: usize) {
    let dir = tempfile::tempdir().expect("dir");
    let realm = seed(dir.path(), users);
    let me = basic(&realm, DEV_MEMBER);
    let lister = basic(&realm, DEV_ADMIN);
    let (idle, loaded, listings, listing_bytes) = with_server(dir.path(), 0, move |url| {
        client_runtime().block_on(async move {
            let http = reqwest::Client::new();
            let one = || {
                http.get(format!("{url}/api/v1/users/me"))
                    .header("Authorization", &me)
            };
            for _ in 0..100 {
                timed(one()).await;
            }
            let mut idle = Vec::with_capacity(samples);
            for _ in 0..samples {
                idle.push(timed(one()).await);
            }
            let stop = Arc::new(AtomicBool::new(false));
            let done = Arc::new(AtomicU64::new(0));
            let bytes = Arc::new(AtomicU64::new(0));
            let mut loops = Vec::new();
            for _ in 0..4 {
                let (http, url, auth) = (http.clone(), url.clone(), lister.clone());
                let (stop, done, bytes) = (stop.clone(), done.clone(), bytes.clone());
                loops.push(tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        let resp = http
                            .get(format!("{url}/api/v1/users"))
                            .header("Authorization", &auth)
                            .send()
                            .await
                            .expect("listing");
                        let body = resp.bytes().await.expect("body");
                        bytes.store(body.len() as u64, Ordering::Relaxed);
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }));
            }
            // Let the listings start before sampling.
            while done.load(Ordering::Relaxed) < 4 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let mut loaded = Vec::with_capacity(samples);
            for _ in 0..samples {
                loaded.push(timed(one()).await);
            }
            stop.store(true, Ordering::Relaxed);
            for l in loops {
                l.await.expect("loop");
            }
            (
                idle,
                loaded,
                done.load(Ordering::Relaxed),
                bytes.load(Ordering::Relaxed),
            )
        })
    });
    let (idle, loaded) = (stats(idle), stats(loaded));
    println!(
        "\n## GET /users/me at {} users; GET /users is {} KiB, {listings} listings ran\n",
        users + 20,
        listing_bytes / 1024
    );
    println!("| what | n | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|");
    row("GET /users/me, idle", &idle);
    row("GET /users/me, 4 clients looping GET /users", &loaded);
    println!(
        "\np50 ratio loaded/idle: {:.2}x",
        ms(loaded.p50) / ms(idle.p50)
    );
}

/// A channel the member is subscribed to.
fn member_channel(realm: &Realm) -> u64 {
    let me = realm.user_by_delivery_email(DEV_MEMBER).expect("me").id;
    realm
        .channels
        .values()
        .find(|c| c.is_subscribed(me))
        .expect("a subscribed channel")
        .id
}

/// The small write of these benches: the member pins (or unpins) `channel`.
fn pin_write(
    http: &reqwest::Client,
    url: &str,
    auth: &str,
    channel: u64,
    i: usize,
) -> reqwest::RequestBuilder {
    let data = format!(
        r#"[{{"stream_id":{channel},"property":"pin_to_top","value":{}}}]"#,
        i.is_multiple_of(2)
    );
    http.post(format!("{url}/api/v1/users/me/subscriptions/properties"))
        .header("Authorization", auth)
        .form(&[("subscription_data", data)])
}

/// Sequential small writes (a subscription property) at `users` users; returns their
/// latencies.
fn small_writes(users: usize, snapshot_every: u64, writes: usize) -> Stats {
    let dir = tempfile::tempdir().expect("dir");
    let realm = seed(dir.path(), users);
    let auth = basic(&realm, DEV_MEMBER);
    let channel = member_channel(&realm);
    let lat = with_server(dir.path(), snapshot_every, move |url| {
        client_runtime().block_on(async move {
            let http = reqwest::Client::new();
            let mut lat = Vec::with_capacity(writes);
            for i in 0..writes {
                lat.push(timed(pin_write(&http, &url, &auth, channel, i)).await);
            }
            lat
        })
    });
    stats(lat)
}

fn writes_during_snapshots(users: usize, writes: usize) {
    let every = 500;
    let off = small_writes(users, 0, writes);
    let on = small_writes(users, every, writes);
    println!(
        "\n## {writes} sequential small writes at {} users, durability never\n",
        users + 20
    );
    println!("| what | n | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|");
    row("no snapshots", &off);
    row(
        &format!(
            "a snapshot every {every} writes ({} ran)",
            writes / every as usize
        ),
        &on,
    );
    println!(
        "\nmax ratio with/without snapshots: {:.2}x",
        ms(on.max) / ms(off.max)
    );
}

fn write_beside_big_subscribe(channels: usize) {
    let dir = tempfile::tempdir().expect("dir");
    let realm = seed(dir.path(), 0);
    let big = basic(&realm, DEV_ADMIN);
    let small = basic(&realm, DEV_MEMBER);
    let channel = member_channel(&realm);
    let (idle, beside, big_took) = with_server(dir.path(), 0, move |url| {
        client_runtime().block_on(async move {
            let http = reqwest::Client::new();
            let write = |i: usize| pin_write(&http, &url, &small, channel, i);
            let mut idle = Vec::new();
            for i in 0..200 {
                idle.push(timed(write(i)).await);
            }
            let subs: Vec<serde_json::Value> = (0..channels)
                .map(|i| serde_json::json!({"name": format!("bulk {i}")}))
                .collect();
            let form = [("subscriptions", serde_json::to_string(&subs).expect("json"))];
            let started = Instant::now();
            let bulk = tokio::spawn(
                http.post(format!("{url}/api/v1/users/me/subscriptions"))
                    .header("Authorization", &big)
                    .form(&form)
                    .send(),
            );
            let mut beside = Vec::new();
            let mut i = 0;
            while !bulk.is_finished() {
                beside.push(timed(write(i)).await);
                i += 1;
            }
            let resp = bulk.await.expect("join").expect("bulk sent");
            assert!(resp.status().is_success(), "bulk: {}", resp.status());
            (idle, beside, started.elapsed())
        })
    });
    println!("\n## A small write beside one request subscribing to {channels} new channels\n");
    println!(
        "The subscribe request took {:.0} ms end to end.\n",
        ms(big_took)
    );
    println!("| what | n | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|");
    row("small write, idle", &stats(idle));
    if beside.is_empty() {
        println!("| small write, beside the subscribe | 0 | - | - | - |");
    } else {
        row("small write, beside the subscribe", &stats(beside));
    }
}

/// Apply + version per write, in process: the part of publishing that runs on the actor.
fn publish_cost(users: usize) {
    let dir = tempfile::tempdir().expect("dir");
    let mut realm = seed(dir.path(), users);
    let me = realm.user_by_delivery_email(DEV_MEMBER).expect("me").id;
    let channel = member_channel(&realm);
    let n = 20_000;
    let change = |i: usize| {
        Change::Channel(ChannelChange::SubscriptionPropertySet {
            user_id: me,
            channel_id: channel,
            property: hearth::realm::channels::SubProperty::PinToTop(i.is_multiple_of(2)),
        })
    };
    let start = Instant::now();
    for i in 0..n {
        realm.apply(&change(i));
    }
    let apply_only = start.elapsed() / n as u32;
    let published = arc_swap::ArcSwap::from_pointee(realm.clone());
    let start = Instant::now();
    for i in 0..n {
        realm.apply(&change(i));
        published.store(Arc::new(realm.clone()));
    }
    let with_version = start.elapsed() / n as u32;
    // What the actor does to start a snapshot: take the version, hand it to a thread.
    let starts = 200;
    let mut threads = Vec::with_capacity(starts);
    let start = Instant::now();
    for _ in 0..starts {
        let version = Arc::new(realm.clone());
        threads.push(std::thread::spawn(move || drop(version)));
    }
    let snapshot_start = start.elapsed() / starts as u32;
    threads.into_iter().for_each(|t| t.join().expect("thread"));
    println!("\n## Publishing a version, at {} users\n", users + 20);
    println!("| what | per write |\n|---|---|");
    println!(
        "| apply one subscription property | {:.2} µs |",
        apply_only.as_secs_f64() * 1e6
    );
    println!(
        "| apply it and publish the new version (clone + `ArcSwap::store`) | {:.2} µs |",
        with_version.as_secs_f64() * 1e6
    );
    println!(
        "| start a snapshot on the actor (take the version, spawn its thread) | {:.2} µs |",
        snapshot_start.as_secs_f64() * 1e6
    );
}

/// Sends one request per header (a user's credentials) from `concurrency` tasks; returns
/// the requests per second.
async fn throughput(
    http: &reqwest::Client,
    url: &str,
    method: reqwest::Method,
    form: &'static [(&'static str, &'static str)],
    auths: &[String],
    concurrency: usize,
) -> f64 {
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(concurrency);
    for chunk in auths.chunks(auths.len().div_ceil(concurrency)) {
        let (http, url, method) = (http.clone(), url.to_owned(), method.clone());
        let chunk = chunk.to_vec();
        tasks.push(tokio::spawn(async move {
            for auth in chunk {
                let rb = http
                    .request(method.clone(), &url)
                    .header("Authorization", auth);
                let rb = if form.is_empty() { rb } else { rb.form(form) };
                let resp = rb.send().await.expect("sent");
                assert!(resp.status().is_success(), "status {}", resp.status());
                resp.bytes().await.expect("body");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    auths.len() as f64 / start.elapsed().as_secs_f64()
}

fn presence_at_scale(users: usize, samples: usize) {
    let dir = tempfile::tempdir().expect("dir");
    let realm = seed(dir.path(), users);
    let auths: Vec<String> = (0..users)
        .map(|i| basic(&realm, &format!("load{i}@zulip.com")))
        .collect();
    let admin = basic(&realm, DEV_ADMIN);
    // The last 500 users ping only later, one before each uncached sample.
    let held = 500.min(users / 4);
    let out = with_server(dir.path(), 0, move |url| {
        client_runtime().block_on(async move {
            let http = reqwest::Client::new();
            let ping = format!("{url}/api/v1/users/me/presence");
            let me = format!("{url}/api/v1/users/me");
            const PING: &[(&str, &str)] = &[("status", "active"), ("ping_only", "true")];
            let (first, rest) = auths.split_at(auths.len() - held);
            let c = 32;
            let (get, post) = (reqwest::Method::GET, reqwest::Method::POST);
            // Warm-up (connections, caches), then the first pings (one per user, each
            // creating an entry), then three rounds of the same users' GET /users/me and
            // repeated pings, alternated so that load from outside hits both alike.
            throughput(&http, &me, get.clone(), &[], first, c).await;
            let first_pings = throughput(&http, &ping, post.clone(), PING, first, c).await;
            let (mut users_me, mut repeat_pings) = (Vec::new(), Vec::new());
            for _ in 0..3 {
                users_me.push(throughput(&http, &me, get.clone(), &[], first, c).await);
                repeat_pings.push(throughput(&http, &ping, post.clone(), PING, first, c).await);
            }
            let realm_presence = || {
                http.get(format!("{url}/api/v1/realm/presence"))
                    .header("Authorization", &admin)
            };
            let body = realm_presence()
                .send()
                .await
                .expect("sent")
                .bytes()
                .await
                .expect("body");
            let mut cached = Vec::with_capacity(samples);
            for _ in 0..samples {
                cached.push(timed(realm_presence()).await);
            }
            let mut rebuilt = Vec::with_capacity(held);
            for auth in rest {
                let resp = http
                    .post(&ping)
                    .header("Authorization", auth)
                    .form(PING)
                    .send()
                    .await
                    .expect("ping");
                assert!(resp.status().is_success());
                rebuilt.push(timed(realm_presence()).await);
            }
            (
                users_me,
                first_pings,
                repeat_pings,
                body.len(),
                cached,
                rebuilt,
            )
        })
    });
    let (users_me, first_pings, repeat_pings, bytes, cached, rebuilt) = out;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let rounds = |v: &[f64]| {
        v.iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "\n## Presence at {} users (32 concurrent clients, {} users a run)\n",
        users + 20,
        users - held
    );
    println!("| what | requests/s | ratio to GET /users/me |\n|---|---|---|");
    let me_rate = median(users_me.clone());
    println!(
        "| GET /users/me (median of 3 rounds: {}) | {me_rate:.0} | 1.00 |",
        rounds(&users_me)
    );
    println!(
        "| first pings (each creates an entry; one run) | {first_pings:.0} | {:.2} |",
        first_pings / me_rate
    );
    let repeat = median(repeat_pings.clone());
    println!(
        "| repeated `ping_only` pings (change nothing; median of 3 rounds: {}) | {repeat:.0} | {:.2} |",
        rounds(&repeat_pings),
        repeat / me_rate
    );
    let (cached, rebuilt) = (stats(cached), stats(rebuilt));
    println!(
        "\n`GET /realm/presence`, {} entries, {} KiB:\n",
        users - held,
        bytes / 1024
    );
    println!("| what | n | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|");
    row("GET /realm/presence, cached listing", &cached);
    row(
        "GET /realm/presence right after a ping (listing rebuilt)",
        &rebuilt,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "quick");
    let only = |name: &str| {
        let named = ["users", "snapshots", "subscribe", "publish", "presence"];
        !args.iter().any(|a| named.contains(&a.as_str())) || args.iter().any(|a| a == name)
    };
    let (users, big_users, channels) = if quick {
        (2_000, 10_000, 2_000)
    } else {
        (10_000, 100_000, 10_000)
    };
    if only("users") {
        users_me_under_listing_load(users, 2_000);
    }
    if only("snapshots") {
        writes_during_snapshots(big_users, 3_000);
    }
    if only("subscribe") {
        write_beside_big_subscribe(channels);
    }
    if only("publish") {
        publish_cost(big_users);
    }
    if only("presence") {
        presence_at_scale(users, 500);
    }
}
