//! What a group commit costs in sled against an append-only file: the question behind
//! `always` ÷ `never` (`benches/RESULTS.md` §24). No hearth code: `W` writer threads
//! each append a 200-byte record and wait until it is durable, one flusher thread
//! makes everything appended so far durable again and again (group commit, as
//! `storage::wal::durability` does), for a few seconds per mode:
//!
//! - `none`: records inserted into a sled tree, never flushed (the `never` baseline);
//! - `sled`: the same tree, made durable by `Db::flush` and an `fdatasync` of its file
//!   (`storage::folder::flush_durably`);
//! - `file`: records appended to a buffer that the flusher writes at the end of a file
//!   (`pwrite`) and `fdatasync`s;
//! - `prealloc`: the same, into a file whose blocks were written (zeros) and synced
//!   beforehand, so an `fdatasync` has no size or block allocation to commit (on ext4,
//!   no journal transaction of its own).
//!
//! `cargo bench --bench wal_commit [-- writers=64 secs=4 rounds=2]`: records/s and the
//! flush time's p50 and p90 per mode, modes alternating in rounds.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    None,
    Sled,
    File,
    Prealloc,
}

#[derive(Default)]
struct Shared {
    durable: Mutex<u64>,
    durable_moved: Condvar,
    wanted: Mutex<bool>,
    wake: Condvar,
    appended: AtomicU64,
    stop: AtomicBool,
    /// `File`: records appended since the last flush.
    pending: Mutex<Vec<u8>>,
    flushes: Mutex<Vec<Duration>>,
}

/// Runs one mode in `dir`: records/s and the sorted flush times.
fn run(mode: Mode, dir: &Path, writers: usize, secs: u64) -> (f64, Vec<Duration>) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let db = sled::Config::new()
        .path(dir.join("sled"))
        .flush_every_ms(None)
        .open()
        .unwrap();
    let tree = db.open_tree("wal").unwrap();
    let sled_file = File::open(dir.join("sled").join("db")).unwrap();
    let log = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(dir.join("wal.log"))
        .unwrap();
    if mode == Mode::Prealloc {
        // Enough for the run: 200-byte records at up to 250 K/s.
        let chunk = vec![0u8; 1 << 20];
        for i in 0..(secs * 50).max(64) {
            log.write_all_at(&chunk, i * chunk.len() as u64).unwrap();
        }
        log.sync_all().unwrap();
    }
    let s = Arc::new(Shared::default());
    let flusher = {
        let s = s.clone();
        let db = db.clone();
        std::thread::spawn(move || {
            let mut at = 0u64;
            while !s.stop.load(Ordering::SeqCst) {
                {
                    let mut wanted = s.wanted.lock().unwrap();
                    while !*wanted && !s.stop.load(Ordering::SeqCst) {
                        wanted = s
                            .wake
                            .wait_timeout(wanted, Duration::from_millis(50))
                            .unwrap()
                            .0;
                    }
                    *wanted = false;
                }
                let started = Instant::now();
                let target = match mode {
                    Mode::None => continue,
                    Mode::Sled => {
                        let target = s.appended.load(Ordering::SeqCst);
                        db.flush().unwrap();
                        sled_file.sync_data().unwrap();
                        target
                    }
                    Mode::File | Mode::Prealloc => {
                        let (target, bytes) = {
                            let mut pending = s.pending.lock().unwrap();
                            (
                                s.appended.load(Ordering::SeqCst),
                                std::mem::take(&mut *pending),
                            )
                        };
                        log.write_all_at(&bytes, at).unwrap();
                        at += bytes.len() as u64;
                        log.sync_data().unwrap();
                        target
                    }
                };
                s.flushes.lock().unwrap().push(started.elapsed());
                *s.durable.lock().unwrap() = target;
                s.durable_moved.notify_all();
            }
        })
    };
    let started = Instant::now();
    let record = [7u8; 200];
    let threads: Vec<_> = (0..writers)
        .map(|_| {
            let (s, tree) = (s.clone(), tree.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while started.elapsed() < Duration::from_secs(secs) {
                    let seq = if matches!(mode, Mode::File | Mode::Prealloc) {
                        let mut pending = s.pending.lock().unwrap();
                        pending.extend_from_slice(&record);
                        s.appended.fetch_add(1, Ordering::SeqCst) + 1
                    } else {
                        let seq = s.appended.fetch_add(1, Ordering::SeqCst) + 1;
                        tree.insert(seq.to_be_bytes(), &record[..]).unwrap();
                        seq
                    };
                    if mode != Mode::None {
                        *s.wanted.lock().unwrap() = true;
                        s.wake.notify_one();
                        let mut durable = s.durable.lock().unwrap();
                        while *durable < seq {
                            durable = s.durable_moved.wait(durable).unwrap();
                        }
                    }
                    n += 1;
                }
                n
            })
        })
        .collect();
    let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let rate = total as f64 / started.elapsed().as_secs_f64();
    s.stop.store(true, Ordering::SeqCst);
    s.wake.notify_all();
    flusher.join().unwrap();
    let mut flushes = s.flushes.lock().unwrap().clone();
    flushes.sort();
    (rate, flushes)
}

fn main() {
    let arg = |name: &str, default: u64| {
        std::env::args()
            .find_map(|a| {
                a.strip_prefix(&format!("{name}="))
                    .and_then(|v| v.parse().ok())
            })
            .unwrap_or(default)
    };
    let (writers, secs, rounds) = (
        arg("writers", 64) as usize,
        arg("secs", 4),
        arg("rounds", 2),
    );
    let root = tempfile::tempdir().unwrap();
    println!("{writers} writers, {secs} s a mode, {rounds} rounds");
    println!("| mode | round | records/s | flushes | flush p50 | flush p90 |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for round in 1..=rounds {
        for (mode, name) in [
            (Mode::None, "none"),
            (Mode::Sled, "sled"),
            (Mode::File, "file"),
            (Mode::Prealloc, "prealloc"),
        ] {
            let (rate, flushes) = run(mode, &root.path().join(name), writers, secs);
            let p = |q: f64| {
                flushes
                    .get(((flushes.len() as f64 * q) as usize).min(flushes.len().saturating_sub(1)))
                    .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
            };
            println!(
                "| {name} | {round} | {rate:.0} | {} | {:.3} ms | {:.3} ms |",
                flushes.len(),
                p(0.5),
                p(0.9)
            );
        }
    }
}
