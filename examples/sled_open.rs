//! How long sled 0.34 takes to open a database of message-shaped keys, and what it
//! depends on (the measurements behind `benches/RESULTS.md` §6).
//!
//! ```text
//! cargo run --release --example sled_open -- write DIR N [SEG] [MODE] [close|kill] [KEYS]
//! cargo run --release --example sled_open -- open DIR [SEG] [CACHE_MB] [MODE]
//! cargo run --release --example sled_open -- bits DIR N SHIFT [SEG]
//! ```
//!
//! `bits` writes N messages in today's layout (a row, a topic key, eleven bitmap chunks
//! of 2^SHIFT ids changed per message) and prints the bytes on disk per message.
//!
//! `write` adds N messages in hearth's shapes to four trees (a ~250-byte row, three
//! index keys, five 4-byte flag keys, four unread keys: 13 keys), flushing every 1 000
//! messages as group commit would, then closes the database cleanly or exits without
//! dropping it (`kill`: after a flush, what `kill -9` leaves). `KEYS` = `row` writes the
//! row only (one key of the same bytes), to separate key count from bytes; `plain`
//! inserts each key on its own instead of one batch per tree. `open` opens
//! the database and prints how long that took, the process's RSS then, and the sizes
//! of its files.
//! `SEG` is sled's segment size in bytes (0: its default), `MODE` `small` or `fast`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::time::Instant;

fn config(dir: &Path, seg: usize, cache_mb: u64, mode: &str) -> sled::Config {
    let mut c = sled::Config::new().path(dir).flush_every_ms(None);
    if seg > 0 {
        c = c.segment_size(seg);
    }
    if cache_mb > 0 {
        c = c.cache_capacity(cache_mb * 1024 * 1024);
    }
    if mode == "fast" {
        c = c.mode(sled::Mode::HighThroughput);
    } else if mode == "small" {
        c = c.mode(sled::Mode::LowSpace);
    }
    c
}

fn be(n: u64) -> [u8; 8] {
    n.to_be_bytes()
}

/// Applies a batch, or (`plain`) inserts its keys one by one.
fn put(tree: &sled::Tree, keys: Vec<(Vec<u8>, Vec<u8>)>, plain: bool) {
    if plain {
        for (k, v) in keys {
            tree.insert(k, v).unwrap();
        }
    } else {
        let mut b = sled::Batch::default();
        for (k, v) in keys {
            b.insert(k, v);
        }
        tree.apply_batch(b).unwrap();
    }
}

fn write(dir: &Path, n: u64, seg: usize, mode: &str, kill: bool, keys: &str) {
    let (row_only, plain) = (keys == "row", keys == "plain");
    let db = config(dir, seg, 0, mode).open().unwrap();
    let rows = db.open_tree("msg:zulip").unwrap();
    let idx = db.open_tree("msgidx:zulip").unwrap();
    let um = db.open_tree("um:zulip").unwrap();
    let unread = db.open_tree("unread:zulip").unwrap();
    let start = rows.last().unwrap().map_or(1, |(k, _)| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&k);
        u64::from_be_bytes(b) + 1
    });
    let t = Instant::now();
    let row = vec![7u8; 250];
    for id in start..start + n {
        rows.insert(be(id), &row[..]).unwrap();
        if !row_only {
            let mut b = Vec::new();
            let mut k = vec![b's'];
            k.extend_from_slice(&be(11));
            k.extend_from_slice(&be(id));
            b.push((k, Vec::new()));
            let mut k = vec![b'c'];
            k.extend_from_slice(&be(3));
            k.extend_from_slice(&be(id));
            b.push((k, Vec::new()));
            let topic = format!("topic {}", id % 1000);
            let mut k = vec![b't'];
            k.extend_from_slice(&be(3));
            k.extend_from_slice(&(topic.len() as u16).to_be_bytes());
            k.extend_from_slice(topic.as_bytes());
            k.extend_from_slice(&be(id));
            b.push((k, Vec::new()));
            put(&idx, b, plain);
            let (mut a, mut u) = (Vec::new(), Vec::new());
            for user in [8u64, 9, 10, 11, 12] {
                let mut k = be(user).to_vec();
                k.extend_from_slice(&be(id));
                a.push((k.clone(), 0u32.to_le_bytes().to_vec()));
                if user != 11 {
                    u.push((k, Vec::new()));
                }
            }
            put(&um, a, plain);
            put(&unread, u, plain);
        }
        if id % 1000 == 0 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    println!("wrote {n} messages in {:.1} s", t.elapsed().as_secs_f64());
    if kill {
        std::process::exit(0);
    }
    drop((rows, idx, um, unread));
    drop(db);
}

/// Today's layout (`storage::messages`): per message a ~200-byte row, a topic key, and a
/// bit set in eleven bitmap chunks of 2^`shift` ids (the channel's, the sender's, five
/// recipients' received and four recipients' unread), each chunk read, changed and
/// written back as `apply` does; plain inserts, a flush every 1 000 messages.
fn bits(dir: &Path, n: u64, shift: u32, seg: usize) {
    let db = config(dir, seg, 0, "").open().unwrap();
    let rows = db.open_tree("msg:zulip").unwrap();
    let idx = db.open_tree("msgidx:zulip").unwrap();
    let bits = db.open_tree("ubits:zulip").unwrap();
    let t = Instant::now();
    let row = [7u8; 200];
    let mut owners: Vec<(u64, u8)> = vec![(3, b'c'), (11, b's')];
    owners.extend([8u64, 9, 10, 11, 12].map(|u| (u, b'r')));
    owners.extend([8u64, 9, 10, 12].map(|u| (u, b'u')));
    for id in 1..=n {
        rows.insert(be(id), &row[..]).unwrap();
        let topic = format!("topic {}", id % 1000);
        let mut k = vec![b't'];
        k.extend_from_slice(&be(3));
        k.extend_from_slice(&(topic.len() as u16).to_be_bytes());
        k.extend_from_slice(topic.as_bytes());
        k.extend_from_slice(&be(id));
        idx.insert(k, &[][..]).unwrap();
        let at = (id & ((1 << shift) - 1)) as usize;
        for (owner, kind) in &owners {
            let mut k = be(*owner).to_vec();
            k.push(*kind);
            k.extend_from_slice(&be(id >> shift));
            let mut v = bits
                .get(&k)
                .unwrap()
                .map(|v| v.to_vec())
                .unwrap_or_default();
            if v.len() <= at / 8 {
                v.resize(at / 8 + 1, 0);
            }
            v[at / 8] |= 1 << (at % 8);
            bits.insert(k, v).unwrap();
        }
        if id % 1000 == 0 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    let bytes: u64 = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    println!(
        "wrote {n} messages in {:.1} s ({:.0} bytes per message); {}",
        t.elapsed().as_secs_f64(),
        bytes as f64 / n as f64,
        sizes(dir)
    );
}

fn sizes(dir: &Path) -> String {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let meta = e.metadata().unwrap();
        if meta.is_file() {
            out.push(format!(
                "{}={:.1}MB",
                e.file_name().to_string_lossy(),
                meta.len() as f64 / 1e6
            ));
        }
    }
    out.sort();
    out.join(" ")
}

fn open(dir: &Path, seg: usize, cache_mb: u64, mode: &str) {
    let t = Instant::now();
    let db = config(dir, seg, cache_mb, mode).open().unwrap();
    let opened = t.elapsed();
    let t2 = Instant::now();
    let rows = db.open_tree("msg:zulip").unwrap();
    let last = rows.last().unwrap().map(|(k, _)| k.len());
    let first_read = t2.elapsed();
    let rss = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .map(|v| v.trim().to_owned())
        })
        .unwrap_or_default();
    println!(
        "open {:.1} ms, first read {:.1} ms ({last:?}), RSS {rss}; {}",
        opened.as_secs_f64() * 1e3,
        first_read.as_secs_f64() * 1e3,
        sizes(dir)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    let num = |i: usize| arg(i).parse::<u64>().unwrap_or(0);
    let dir = Path::new(arg(1));
    match arg(0) {
        "write" => write(
            dir,
            num(2),
            num(3) as usize,
            arg(4),
            arg(5) == "kill",
            arg(6),
        ),
        "open" => open(dir, num(2) as usize, num(3), arg(4)),
        "bits" => bits(dir, num(2), num(3) as u32, num(4) as usize),
        _ => println!("usage: sled_open write|open DIR ..."),
    }
}
