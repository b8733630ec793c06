//! Storage benchmarks: WAL append per durability mode, group commit under concurrent
//! writers, WAL replay rate, and the snapshot codec on a 100 000-user realm.
//!
//! Run with `cargo bench --bench storage`. Figures and how to read them: `RESULTS.md`.
//!
//! Besides criterion's figures this prints a few `census` lines on stderr: fixed-size
//! runs, outside criterion's timing, that count the `write` system calls of the process
//! (`/proc/self/io`, `syscw`). sled writes its log buffer with one `pwrite` per flush, so
//! that count is the number of flushes that reached the file. `HEARTH_BENCH_CENSUS=1`
//! runs only those lines (handy under `strace -f -c`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, BenchmarkId, Criterion, SamplingMode, Throughput};
use hearth::actor::create_realm;
use hearth::realm::dev::new_realm_changes;
use hearth::realm::{Change, Cx, EmailVisibility, NewUser, Realm, RealmSettings, Role, UserChange};
use hearth::storage::{codec, Durability, DurabilityMode, RealmStore, Store};
use tokio::runtime::Runtime;

/// Subdomain of the realm every bench writes to.
const SUBDOMAIN: &str = "bench";
/// A fixed clock: benches never read the wall clock for data.
const NOW_MS: i64 = 1_700_000_000_000;
/// WAL records replayed by the replay bench.
const REPLAY_RECORDS: u64 = 10_000;
/// Users in the snapshot bench's realm.
const SNAPSHOT_USERS: u64 = 100_000;
/// Concurrent writers of the group-commit bench.
const WRITERS: [usize; 3] = [1, 8, 64];
/// Appends per census run.
const CENSUS_APPENDS: u64 = 2_000;

fn settings() -> RealmSettings {
    RealmSettings {
        name: "Bench".into(),
        subdomain: SUBDOMAIN.into(),
        url: "http://bench.example.com".into(),
        dev: false,
        email_visibility: EmailVisibility::Everyone,
        fake_email_domain: "hearth.invalid".into(),
        empty_topic_display_name: "general chat".into(),
        date_created: NOW_MS / 1000,
    }
}

/// A user as `POST /users` creates one: with an argon2 PHC string of the real length.
fn new_user(id: u64, cx: &mut Cx) -> NewUser {
    let salt = cx.api_key();
    let hash = format!("{}{}", cx.api_key(), &cx.api_key()[..11]);
    NewUser {
        user_id: id,
        delivery_email: format!("user{id}@example.com"),
        full_name: format!("Bench User {id}"),
        role: Role::Member,
        bot_type: None,
        bot_owner_id: None,
        timezone: String::new(),
        api_key: cx.api_key(),
        password_hash: Some(format!(
            "$argon2id$v=19$m=19456,t=2,p=1${}${hash}",
            &salt[..22]
        )),
        date_joined: cx.now_secs(),
    }
}

/// Opens a store in `dir` and creates the bench realm in it (first changes + snapshot),
/// as `hearth realm create` does.
fn open_with_realm(dir: &Path, mode: DurabilityMode, cx: &mut Cx) -> (Store, RealmStore) {
    let store = Store::open(dir, mode).expect("open store");
    let mut realm_store = store.realm(SUBDOMAIN).expect("realm store");
    let changes = new_realm_changes(settings(), "owner@example.com", "Owner", None, cx);
    create_realm(&mut realm_store, &changes).expect("create realm");
    (store, realm_store)
}

fn mode_name(mode: DurabilityMode) -> String {
    match mode {
        DurabilityMode::Always => "always".into(),
        DurabilityMode::Interval(ms) => format!("interval_{ms}ms"),
        DurabilityMode::Never => "never".into(),
    }
}

/// Write system calls of the whole process so far (`syscw` of `/proc/self/io`).
fn write_syscalls() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("syscw:"))
        .and_then(|v| v.trim().parse().ok())
}

/// One append as a handler sees it: the actor appends (under the lock, like its mailbox),
/// the handler awaits durability of the ticket outside it.
async fn append_and_wait(store: &Mutex<RealmStore>, durability: &Durability, change: &[Change]) {
    let ticket = store.lock().unwrap().append(change).expect("append");
    durability.wait(ticket).await.expect("durable");
}

/// `total` appends spread over `writers` concurrent tasks; returns the wall time.
fn run_writers(
    rt: &Runtime,
    store: &Arc<Mutex<RealmStore>>,
    durability: &Arc<Durability>,
    next_id: &Arc<AtomicU64>,
    writers: usize,
    total: u64,
) -> Duration {
    // Each writer gets its record up front, so the timed part is append + wait only.
    let mut cx = Cx::seeded(NOW_MS, writers as u64);
    let tasks: Vec<(u64, Vec<Change>)> = (0..writers as u64)
        .map(|w| {
            let share = total / writers as u64 + u64::from(w < total % writers as u64);
            let id = next_id.fetch_add(1, Ordering::Relaxed);
            (
                share,
                vec![Change::User(UserChange::UserCreated(new_user(id, &mut cx)))],
            )
        })
        .collect();
    rt.block_on(async {
        let start = Instant::now();
        let handles: Vec<_> = tasks
            .into_iter()
            .map(|(share, change)| {
                let (store, durability) = (store.clone(), durability.clone());
                tokio::spawn(async move {
                    for _ in 0..share {
                        append_and_wait(&store, &durability, &change).await;
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.expect("writer task");
        }
        start.elapsed()
    })
}

fn multi_thread_runtime() -> Runtime {
    // Two workers: the machine's cores. No I/O driver, so the runtime itself issues no
    // write system calls and the census counts sled's alone.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime")
}

/// 1. One decision appended per iteration, per durability mode; the handler's
///    `wait(ticket)` is awaited in every mode (it returns at once unless `always`).
fn bench_append(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("wal_append");
    group.throughput(Throughput::Elements(1));
    for mode in [
        DurabilityMode::Always,
        DurabilityMode::Interval(1000),
        DurabilityMode::Never,
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cx = Cx::seeded(NOW_MS, 1);
        let (store, mut realm_store) = open_with_realm(dir.path(), mode, &mut cx);
        let mut user = new_user(2, &mut cx);
        let mut next_id = 2;
        group.bench_function(BenchmarkId::from_parameter(mode_name(mode)), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iters {
                        // Only the id changes: the record keeps its size, nothing allocates.
                        user.user_id = next_id;
                        next_id += 1;
                        let change = [Change::User(UserChange::UserCreated(user.clone()))];
                        let start = Instant::now();
                        let ticket = realm_store.append(&change).expect("append");
                        store.durability.wait(ticket).await.expect("durable");
                        spent += start.elapsed();
                    }
                    spent
                })
            });
        });
        census_single(mode, &rt, &store, &mut realm_store, &mut cx);
        store.durability.shutdown();
    }
    group.finish();
}

/// How many log writes `CENSUS_APPENDS` single-writer appends cause in `mode`.
fn census_single(
    mode: DurabilityMode,
    rt: &Runtime,
    store: &Store,
    rs: &mut RealmStore,
    cx: &mut Cx,
) {
    let change = [Change::User(UserChange::UserCreated(new_user(
        u64::MAX / 2,
        cx,
    )))];
    let before = write_syscalls();
    let start = Instant::now();
    rt.block_on(async {
        for _ in 0..CENSUS_APPENDS {
            let ticket = rs.append(&change).expect("append");
            store.durability.wait(ticket).await.expect("durable");
        }
    });
    let elapsed = start.elapsed();
    report_census(
        &format!("wal_append/{}", mode_name(mode)),
        1,
        elapsed,
        before,
    );
}

fn report_census(what: &str, writers: usize, elapsed: Duration, before: Option<u64>) {
    let writes = match (before, write_syscalls()) {
        (Some(b), Some(a)) => (a - b).to_string(),
        _ => "n/a".into(),
    };
    let rate = CENSUS_APPENDS as f64 / elapsed.as_secs_f64();
    eprintln!(
        "census {what}: writers={writers} appends={CENSUS_APPENDS} log_writes={writes} \
         elapsed={elapsed:.3?} appends_per_s={rate:.0}"
    );
}

/// 2. N concurrent writers in `always` mode: one shared realm store behind a mutex for
///    the append only (the actor), durability awaited outside it (the handlers).
fn bench_group_commit(c: &mut Criterion) {
    let rt = multi_thread_runtime();
    let mut group = c.benchmark_group("group_commit");
    group.throughput(Throughput::Elements(1));
    let mut census = Vec::new();
    for writers in WRITERS {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cx = Cx::seeded(NOW_MS, 2);
        let (store, realm_store) = open_with_realm(dir.path(), DurabilityMode::Always, &mut cx);
        let shared = Arc::new(Mutex::new(realm_store));
        let next_id = Arc::new(AtomicU64::new(2));
        group.bench_function(BenchmarkId::new("writers", writers), |b| {
            b.iter_custom(|iters| {
                run_writers(&rt, &shared, &store.durability, &next_id, writers, iters)
            });
        });
        let before = write_syscalls();
        let elapsed = run_writers(
            &rt,
            &shared,
            &store.durability,
            &next_id,
            writers,
            CENSUS_APPENDS,
        );
        census.push((writers, elapsed, before, write_syscalls()));
        store.durability.shutdown();
    }
    group.finish();
    for (writers, elapsed, before, after) in census {
        let writes = before.zip(after).map(|(b, a)| a - b);
        eprintln!(
            "census group_commit/writers/{writers}: appends={CENSUS_APPENDS} log_writes={} \
             appends_per_write={} elapsed={elapsed:.3?} appends_per_s={:.0}",
            writes.map_or("n/a".into(), |w| w.to_string()),
            writes.map_or("n/a".into(), |w| format!(
                "{:.1}",
                CENSUS_APPENDS as f64 / w.max(1) as f64
            )),
            CENSUS_APPENDS as f64 / elapsed.as_secs_f64(),
        );
    }
}

/// 3. Start-up replay: a realm snapshot plus `REPLAY_RECORDS` WAL records after it.
fn bench_replay(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let mut cx = Cx::seeded(NOW_MS, 3);
        let (store, mut realm_store) = open_with_realm(dir.path(), DurabilityMode::Never, &mut cx);
        for id in 2..2 + REPLAY_RECORDS {
            realm_store
                .append(&[Change::User(UserChange::UserCreated(new_user(id, &mut cx)))])
                .expect("append");
        }
        store.durability.flush_now().expect("flush");
        // `never` starts no flusher thread: dropping the store closes the database.
    }
    let open = || {
        let store = Store::open(dir.path(), DurabilityMode::Never).expect("reopen");
        let realm_store = store.realm(SUBDOMAIN).expect("realm store");
        (store, realm_store)
    };
    {
        let (_store, mut rs) = open();
        let rec = rs.recover().expect("recover").expect("realm");
        assert_eq!(rec.replayed, REPLAY_RECORDS, "replayed records");
        assert_eq!(
            rec.realm.users.len() as u64,
            REPLAY_RECORDS + 1,
            "recovered users"
        );
    }
    let mut group = c.benchmark_group("replay");
    group.throughput(Throughput::Elements(REPLAY_RECORDS));
    group.sampling_mode(SamplingMode::Flat);
    // sled's open (its own log recovery) + snapshot load + WAL replay: a restart.
    group.bench_function("open_and_recover_10k", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let (store, mut rs) = open();
                let rec = black_box(rs.recover().expect("recover"));
                spent += start.elapsed();
                drop((rec, rs, store)); // closing the database is not timed
            }
            spent
        });
    });
    // `RealmStore::recover` alone, on a freshly opened database.
    group.bench_function("recover_10k", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let (store, mut rs) = open();
                let start = Instant::now();
                let rec = black_box(rs.recover().expect("recover"));
                spent += start.elapsed();
                drop((rec, rs, store));
            }
            spent
        });
    });
    group.finish();
}

/// 4. Snapshot codec for a realm of `SNAPSHOT_USERS` users, and a whole snapshot write.
fn bench_snapshot(c: &mut Criterion) {
    let mut cx = Cx::seeded(NOW_MS, 4);
    let first = new_realm_changes(settings(), "owner@example.com", "Owner", None, &mut cx);
    let mut realm = Realm::from_first_change(&first[0]).expect("realm");
    first.iter().for_each(|c| realm.apply(c));
    for id in 2..=SNAPSHOT_USERS {
        realm.apply(&Change::User(UserChange::UserCreated(new_user(
            id, &mut cx,
        ))));
    }
    assert_eq!(realm.users.len() as u64, SNAPSHOT_USERS);
    let bytes = codec::encode_realm(&realm).expect("encode");
    eprintln!(
        "snapshot size: {} users -> {} bytes ({:.1} bytes/user)",
        SNAPSHOT_USERS,
        bytes.len(),
        bytes.len() as f64 / SNAPSHOT_USERS as f64
    );

    let mut group = c.benchmark_group("snapshot_100k");
    group.sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("encode", |b| {
        b.iter(|| codec::encode_realm(black_box(&realm)).expect("encode"))
    });
    group.bench_function("decode", |b| {
        b.iter(|| codec::decode_realm(black_box(&bytes)).expect("decode"));
    });
    group.bench_function("decode_and_rebuild_indexes", |b| {
        b.iter(|| {
            let mut r = codec::decode_realm(black_box(&bytes)).expect("decode");
            r.rebuild_indexes();
            r
        });
    });
    // What the actor pays every `snapshot_every` records: encode, sled insert, flush,
    // deletion of the WAL prefix and older snapshots.
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, mut rs) = open_with_realm(dir.path(), DurabilityMode::Never, &mut cx);
    group.bench_function("store_snapshot", |b| {
        b.iter(|| rs.snapshot(black_box(&realm)).expect("snapshot"))
    });
    group.finish();
    store.durability.shutdown();
}

/// Only the census lines (`HEARTH_BENCH_CENSUS=1`), for counting system calls by hand.
fn census_only() {
    let rt = multi_thread_runtime();
    for writers in WRITERS {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cx = Cx::seeded(NOW_MS, 5);
        let (store, realm_store) = open_with_realm(dir.path(), DurabilityMode::Always, &mut cx);
        let shared = Arc::new(Mutex::new(realm_store));
        let next_id = Arc::new(AtomicU64::new(2));
        let before = write_syscalls();
        let elapsed = run_writers(
            &rt,
            &shared,
            &store.durability,
            &next_id,
            writers,
            CENSUS_APPENDS,
        );
        report_census("group_commit", writers, elapsed, before);
        store.durability.shutdown();
    }
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_append, bench_group_commit, bench_replay, bench_snapshot
}

fn main() {
    if std::env::var_os("HEARTH_BENCH_CENSUS").is_some() {
        census_only();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
