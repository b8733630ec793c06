//! The power-cut test filesystem (`hearth_tools::powercut`): a cut drops what was
//! written and not synced and keeps what was synced, a torn cut keeps a prefix; and
//! `hearth torture --power-cut` on a small budget. Each test skips, with one line, on a
//! machine where the filesystem cannot be mounted (no /dev/fuse, or no right to mount).
//! `hearth torture --power-cut --cycles 1000` is the long run (`benches/RESULTS.md`).

#![allow(clippy::expect_used)]

mod common;

use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};

use hearth_tools::powercut::{available, Mounted};
use rand::SeedableRng;

fn mountable() -> bool {
    match available() {
        Ok(()) => true,
        Err(why) => {
            eprintln!("SKIPPED: the power-cut filesystem cannot be mounted here: {why}");
            false
        }
    }
}

#[test]
fn a_cut_drops_unsynced_writes_and_keeps_synced_ones() {
    if !mountable() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (disk, mnt) = (dir.path().join("disk"), dir.path().join("mnt"));
    let m = Mounted::mount(&disk, &mnt).expect("mount");

    // Synced, then appended to without a sync.
    let mut a = File::create(mnt.join("a")).expect("create a");
    a.write_all(b"synced").expect("write");
    a.sync_data().expect("fdatasync");
    a.write_all(b" and not").expect("write");
    drop(a);
    // Readers see the page cache, and closing syncs nothing.
    assert_eq!(fs::read(mnt.join("a")).expect("read a"), b"synced and not");
    assert_eq!(fs::read(disk.join("a")).expect("disk a"), b"synced");
    // Created and written, never synced: the name stays (metadata), the bytes do not.
    fs::write(mnt.join("b"), b"lost").expect("write b");
    // Written to a temporary file, synced, renamed into a folder: all kept.
    fs::create_dir(mnt.join("d")).expect("mkdir");
    let mut c = File::create(mnt.join("d/c.tmp")).expect("create c");
    c.write_all(b"renamed").expect("write c");
    c.sync_all().expect("fsync");
    drop(c);
    fs::rename(mnt.join("d/c.tmp"), mnt.join("d/c")).expect("rename");
    File::open(mnt.join("d"))
        .and_then(|d| d.sync_all())
        .expect("fsync of a folder");
    // A synced file cut short without a sync: the cut undoes the truncation.
    let mut e = File::create(mnt.join("e")).expect("create e");
    e.write_all(b"0123456789").expect("write e");
    e.sync_all().expect("fsync e");
    e.set_len(4).expect("truncate e");
    e.seek(SeekFrom::Start(8)).expect("seek");
    e.write_all(b"X").expect("write e");
    drop(e);
    assert_eq!(fs::read(mnt.join("e")).expect("read e"), b"0123\0\0\0\0X");

    let cut = m.cut(None).expect("cut");
    assert_eq!(cut.files, 3, "{cut:?}");
    assert!(cut.torn.is_none());
    assert_eq!(fs::read(disk.join("a")).expect("disk a"), b"synced");
    assert_eq!(fs::read(disk.join("b")).expect("disk b"), b"");
    assert_eq!(fs::read(disk.join("d/c")).expect("disk c"), b"renamed");
    assert!(!disk.join("d/c.tmp").exists());
    assert_eq!(fs::read(disk.join("e")).expect("disk e"), b"0123456789");

    // A fresh mount on the same disk reads what survived.
    let m = Mounted::mount(&disk, &mnt).expect("mount again");
    assert_eq!(fs::read(mnt.join("a")).expect("read a"), b"synced");
    assert_eq!(fs::read(mnt.join("d/c")).expect("read c"), b"renamed");
    let mut names: Vec<String> = fs::read_dir(&mnt)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b", "d", "e"]);
    // An unlinked file still open keeps working until it is closed.
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(mnt.join("f"))
        .expect("create f");
    fs::remove_file(mnt.join("f")).expect("unlink f");
    f.write_all(b"gone").expect("write f");
    f.sync_all().expect("fsync f");
    drop(f);
    // A clean unmount writes back what is held.
    fs::write(mnt.join("g"), b"written back").expect("write g");
    m.unmount_clean().expect("unmount");
    assert_eq!(fs::read(disk.join("g")).expect("disk g"), b"written back");
    assert!(!disk.join("f").exists());
}

#[test]
fn a_torn_cut_keeps_a_prefix_of_the_unsynced_writes() {
    if !mountable() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (disk, mnt) = (dir.path().join("disk"), dir.path().join("mnt"));
    let mut torn_mid_way = false;
    for seed in 0..16u64 {
        let m = Mounted::mount(&disk, &mnt).expect("mount");
        let mut f = File::create(mnt.join("log")).expect("create");
        f.write_all(b"base|").expect("write");
        f.sync_data().expect("sync");
        // Three writes that do not merge (each at its own place), never synced.
        let (one, two, three) = ([1u8; 1500], [2u8; 1500], [3u8; 1500]);
        let unsynced: [(u64, &[u8]); 3] = [(5, &one), (5000, &two), (2000, &three)];
        for (at, bytes) in unsynced {
            f.seek(SeekFrom::Start(at)).expect("seek");
            f.write_all(bytes).expect("write");
        }
        drop(f);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let cut = m.cut(Some(&mut rng)).expect("cut");
        let (path, whole, of, _) = cut.torn.clone().expect("one file torn");
        assert_eq!((path.to_str(), of), (Some("log"), 3), "{cut:?}");
        let on_disk = fs::read(disk.join("log")).expect("disk");
        assert!(on_disk.starts_with(b"base|"), "{on_disk:?}");
        // Every write before the tear is there whole; none after it is.
        let mut expected = b"base|".to_vec();
        for (at, bytes) in unsynced.iter().take(whole) {
            let end = *at as usize + bytes.len();
            if expected.len() < end {
                expected.resize(end, 0);
            }
            expected[*at as usize..end].copy_from_slice(bytes);
        }
        let (at, bytes) = unsynced[whole];
        let part = (0..=bytes.len()).find(|&part| {
            let mut with_part = expected.clone();
            let end = at as usize + part;
            if part > 0 {
                if with_part.len() < end {
                    with_part.resize(end, 0);
                }
                with_part[at as usize..end].copy_from_slice(&bytes[..part]);
            }
            with_part == on_disk
        });
        let Some(part) = part else {
            panic!("seed {seed}: not {whole} whole writes and part of the next: {on_disk:?}");
        };
        if part > 0 && part < bytes.len() {
            // Torn at a sector boundary: a disk writes 512 bytes whole.
            assert_eq!((at as usize + part) % 512, 0, "seed {seed}: torn at {part}");
            torn_mid_way = true;
        }
        fs::remove_file(disk.join("log")).expect("clean");
    }
    assert!(torn_mid_way, "no seed tore a write mid-way");
}

/// What a child process does to the sled database in `HEARTH_POWERCUT_DB` before it
/// ends without closing it (a crash: sled's close, which syncs its log, never runs).
const STEP: &str = "HEARTH_POWERCUT_STEP";
const DB: &str = "HEARTH_POWERCUT_DB";

/// Runs `step` on the database in `dir` in a child process (this test binary, running
/// only `a_sled_step_in_a_child`).
fn in_a_child(step: &str, dir: &std::path::Path) {
    let out = std::process::Command::new(std::env::current_exe().expect("this test"))
        .args(["--exact", "a_sled_step_in_a_child", "--test-threads=1"])
        .env(STEP, step)
        .env(DB, dir)
        .output()
        .expect("run the child");
    assert!(
        out.status.success(),
        "step {step}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Not a test of its own: the steps `in_a_child` runs (nothing without its variables).
#[test]
fn a_sled_step_in_a_child() {
    let (Ok(step), Ok(dir)) = (std::env::var(STEP), std::env::var(DB)) else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    match step.as_str() {
        "write" => {
            let db = hearth::storage::folder::open_db(&dir, None).expect("open");
            // Over sled's inline limit: a blob file, which sled never syncs.
            db.insert("big", vec![7u8; 300_000]).expect("insert");
            db.insert("small", "kept").expect("insert");
            // Written to the log with `sync_file_range` only: not durable.
            db.flush().expect("flush");
            std::process::exit(0);
        }
        "open-as-sled-does" => {
            let db = hearth::storage::folder::sled_config(&dir)
                .open()
                .expect("open");
            std::mem::forget(db);
            std::process::exit(0);
        }
        "open-as-hearth-does" => {
            let db = hearth::storage::folder::open_db(&dir, None).expect("open");
            std::mem::forget(db);
            std::process::exit(0);
        }
        other => panic!("no step {other}"),
    }
}

/// sled 0.34 writes (and syncs) a snapshot at each open that claims its whole log as
/// it reads it, blobs included, though neither its log nor its blobs were synced. After
/// a crash whose unsynced writes are still in the page cache, an open, and a power cut,
/// sled refuses its own database ("stable lsn .. should be >= snapshot.stable_lsn ..",
/// the refused starts of `hearth torture --power-cut`); hearth's open syncs all of it
/// first, and the database opens with what it held.
#[test]
fn a_power_cut_after_an_open_leaves_a_database_sled_opens() {
    if !mountable() {
        return;
    }
    for (open, refused) in [("open-as-sled-does", true), ("open-as-hearth-does", false)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (disk, mnt) = (dir.path().join("disk"), dir.path().join("mnt"));
        let m = Mounted::mount(&disk, &mnt).expect("mount");
        let data = mnt.join("data");
        in_a_child("write", &data);
        in_a_child(open, &data);
        let cut = m.cut(None).expect("cut");
        if refused {
            assert!(cut.files > 0, "{open}: the cut dropped nothing: {cut:?}");
        }
        let m = Mounted::mount(&disk, &mnt).expect("mount again");
        let opened = hearth::storage::folder::sled_config(&data).open();
        if refused {
            assert!(
                matches!(opened, Err(sled::Error::Corruption { .. })),
                "{open}: sled took its database back: {:?}",
                opened.map(|_| ())
            );
        } else {
            let db = opened.expect("hearth's open left a database sled opens");
            let big = db.get("big").expect("get").expect("the big value is there");
            assert_eq!(big.len(), 300_000);
            assert_eq!(db.get("small").expect("get").as_deref(), Some(&b"kept"[..]));
            drop(db);
        }
        m.unmount_clean().expect("unmount");
    }
}

/// `hearth-tools torture --power-cut`: the server's data folder on the filesystem,
/// the power cut after every kill.
#[test]
fn power_cuts_lose_nothing_acknowledged_in_always() {
    if !mountable() {
        return;
    }
    common::hearth_exe();
    let stdout = common::torture(
        common::tools(),
        &["--power-cut", "--cycles", "4", "--max-run-ms", "1200"],
    );
    assert!(stdout.contains(", 0 lost"), "{stdout}");
    // Two cuts a cycle: after the kill, and after the kill during the next start.
    assert!(stdout.contains("8 power cuts"), "{stdout}");
    assert!(
        stdout.contains("messages "),
        "no message written:\n{stdout}"
    );
}
