//! The realm archive at many messages: `hearth realm export` and `hearth realm import`
//! of the development realm plus N messages (the functions the commands run), timed,
//! with the archive's size against the data folder's.
//!
//! The messages are seeded in-process as `benches/messages.rs` seeds them (`benches/common/seed.rs`: WAL record,
//! `MessageStore::project`, `apply`, in decisions of 10 000 sends, then a snapshot): to
//! channel `Rome` (5 subscribers, so 5 flag entries a message) over 1 000 topics, from
//! one sender, ~60 bytes of content each.
//!
//! `cargo bench --bench archive` (1 M messages; `-- quick` for 100 000). Set
//! `HEARTH_BENCH_KEEP=1` to keep the folders and the archive (their path is printed).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::time::Instant;

#[path = "common/seed.rs"]
mod common;
use common::seed;

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

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let n: u64 = if quick { 100_000 } else { 1_000_000 };
    let work = tempfile::tempdir().expect("tempdir");
    let source = work.path().join("source");
    let target = work.path().join("target");
    let archive = work.path().join("zulip.archive");
    let started = Instant::now();
    seed(&source, n);
    println!(
        "seeded {n} messages in {:.1} s; data folder {:.1} MiB",
        started.elapsed().as_secs_f64(),
        mib(dir_bytes(&source))
    );

    let started = Instant::now();
    let manifest = hearth::ops::archive::export_command(&source, hearth::DEV_SUBDOMAIN, &archive)
        .expect("export");
    let export = started.elapsed();
    let size = std::fs::metadata(&archive).expect("archive").len();
    println!(
        "export: {:.2} s ({:.0} messages/s); archive {:.1} MiB ({:.0} bytes a message); \
         {} messages, {} flag entries",
        export.as_secs_f64(),
        manifest.counts.messages as f64 / export.as_secs_f64(),
        mib(size),
        size as f64 / manifest.counts.messages.max(1) as f64,
        manifest.counts.messages,
        manifest.counts.user_messages
    );

    let started = Instant::now();
    let imported = hearth::ops::archive::import_command(&target, &archive, None).expect("import");
    let import = started.elapsed();
    println!(
        "import: {:.2} s ({:.0} messages/s); data folder after import {:.1} MiB",
        import.as_secs_f64(),
        imported.manifest.counts.messages as f64 / import.as_secs_f64(),
        mib(dir_bytes(&target))
    );
    if std::env::var_os("HEARTH_BENCH_KEEP").is_some() {
        let kept = work.keep();
        println!("kept {}", kept.display());
    }
}
