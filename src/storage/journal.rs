//! The WAL's commit journal: what makes an appended WAL record durable in `always` and
//! `interval` without flushing sled.
//!
//! A group commit used to end in sled's `flush`, which costs ~1.5× a plain `pwrite` +
//! `fdatasync` of the same bytes at the median and ~2× at p90 (`cargo bench --bench
//! wal_commit`, `benches/RESULTS.md` §24), and that was the gap between `always` and
//! `never`. Now a realm's record still goes into its sled WAL tree (every reader of the
//! WAL, from recovery to `hearth check` to a move's shipped tail, reads the tree as
//! before), and also into this file; the flusher makes a group durable with one
//! `pwrite` at the file's end and one `fdatasync` (`Durability::commit`).
//!
//! sled itself is made durable by a *checkpoint*: every full flush
//! (`Durability::flush_now`: snapshots, presence, imports, moves, shutdown) flushes
//! sled and then empties the journal, under the journal's lock so that no commit writes
//! meanwhile. The journal therefore holds the records since the last full flush, at
//! most the `--snapshot-every` records between two snapshots (or `CHECKPOINT_BYTES`:
//! the flusher checkpoints instead of appending past it).
//!
//! Every open of a data folder (the server's start, `hearth check` and `hearth
//! recover` on their scratch copy, a backup's verification) first copies the journal's
//! records into the WAL trees (`replay`), so every reader sees what was acknowledged;
//! the server then flushes sled and empties the journal before it writes anything.
//!
//! Frame: `[length of the rest: u32 LE][codec frame of (realm, seq, record)]`, the
//! record being the WAL record's own framed bytes. A frame cut short or failing its
//! checksum ends the journal: that is what `kill -9` during a `pwrite` leaves, and its
//! records were never acknowledged (the `fdatasync` after them had not returned).
//! Anything the manifest counts durable and the journal lacks is then missing from the
//! trees, and the start refuses as for any other loss (`integrity::judge`).
//!
//! Replay is idempotent: a record is written into its realm's WAL tree under its own
//! sequence number, and only when no snapshot of the realm covers it already (a
//! snapshot job deletes the records it covers, and they must stay deleted).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use super::{codec, wal, StorageError, SNAP_PREFIX, WAL_PREFIX};
use crate::locks::lock;

/// The journal's file in a data folder.
pub const JOURNAL_FILE: &str = "journal";

/// Past this size the flusher checkpoints (flushes sled, empties the journal) instead
/// of appending: a bound on the file and on what a start replays.
pub const CHECKPOINT_BYTES: u64 = 64 << 20;

/// The journal of one data folder: records waiting for the next commit, and the file.
pub struct Journal {
    path: PathBuf,
    /// Frames appended since the last commit took them, in append order.
    pending: Mutex<Vec<u8>>,
    /// The file and its length; held through a commit and through a checkpoint.
    file: Mutex<Tail>,
}

/// The journal's file and the length of what it holds.
pub struct Tail {
    file: File,
    len: u64,
    /// A write failed: bytes past `len` may be in the file until it is cleared.
    dirty: bool,
}

impl Tail {
    /// Writes `bytes` at the end and makes them durable. On failure the length stays:
    /// a retry writes over whatever part reached the file.
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let written = self
            .file
            .write_all_at(bytes, self.len)
            .and_then(|()| self.file.sync_data());
        match written {
            Ok(()) => {
                self.len += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                self.dirty = true;
                Err(e)
            }
        }
    }

    /// Empties the file, durably (after a checkpoint made sled hold everything in it).
    pub fn clear(&mut self) -> io::Result<()> {
        if self.len == 0 && !self.dirty {
            return Ok(());
        }
        self.file.set_len(0)?;
        self.file.sync_all()?;
        self.len = 0;
        self.dirty = false;
        Ok(())
    }

    /// Bytes in the file.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// One record read back from the journal.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Entry {
    realm: String,
    seq: u64,
    #[serde(with = "serde_bytes")]
    record: Vec<u8>,
}

/// The frame of one record, as `push` appends it.
fn frame(realm: &str, seq: u64, record: &[u8]) -> Result<Vec<u8>, codec::CodecError> {
    #[derive(serde::Serialize)]
    struct EntryRef<'a> {
        realm: &'a str,
        seq: u64,
        #[serde(with = "serde_bytes")]
        record: &'a [u8],
    }
    let body = codec::encode(&EntryRef { realm, seq, record })?;
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

impl Journal {
    /// Opens the journal of the folder `dir` empty (its records must have been replayed
    /// and made durable in sled first: `replay`, then a flush), creating it durably.
    pub fn create(dir: &Path) -> io::Result<Journal> {
        let path = dir.join(JOURNAL_FILE);
        let existed = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        file.set_len(0)?;
        file.sync_all()?;
        if !existed {
            File::open(dir)?.sync_all()?;
        }
        Ok(Journal {
            path,
            pending: Mutex::new(Vec::new()),
            file: Mutex::new(Tail {
                file,
                len: 0,
                dirty: false,
            }),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues record `seq` of `realm` (already in its WAL tree) for the next commit.
    pub fn push(&self, realm: &str, seq: u64, record: &[u8]) -> Result<(), codec::CodecError> {
        let bytes = frame(realm, seq, record)?;
        lock(&self.pending).extend_from_slice(&bytes);
        Ok(())
    }

    /// Takes everything queued so far.
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *lock(&self.pending))
    }

    /// Puts back what `take` returned, ahead of what was queued since (a failed write:
    /// the next attempt writes it again, in order).
    pub fn put_back(&self, taken: Vec<u8>) {
        let mut pending = lock(&self.pending);
        let later = std::mem::replace(&mut *pending, taken);
        pending.extend_from_slice(&later);
    }

    /// Drops everything queued (a storage fault: those records are dead).
    pub fn discard_pending(&self) {
        lock(&self.pending).clear();
    }

    /// The file, held: commits and checkpoints take it in turn.
    pub fn tail(&self) -> MutexGuard<'_, Tail> {
        lock(&self.file)
    }
}

/// What `replay` found in a journal.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Replayed {
    /// Records read (up to a torn tail, if any).
    pub records: usize,
    /// Records written into a WAL tree (the others a snapshot already covered).
    pub written: usize,
    /// Why reading stopped before the file's end: a torn or damaged frame.
    pub torn: Option<String>,
}

/// Reads the frames of a journal's bytes up to the first torn or damaged one.
fn read_frames(bytes: &[u8]) -> (Vec<Entry>, Option<String>) {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let Some(head) = bytes.get(at..at + 4) else {
            return (out, Some(format!("a frame cut short at byte {at}")));
        };
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let Some(body) = bytes.get(at + 4..at + 4 + len) else {
            return (out, Some(format!("a frame cut short at byte {at}")));
        };
        match codec::decode::<Entry>(body) {
            Ok(entry) => out.push(entry),
            Err(e) => {
                return (
                    out,
                    Some(format!("a frame that does not decode at byte {at} ({e})")),
                )
            }
        }
        at += 4 + len;
    }
    (out, None)
}

/// Copies the records of the journal in the folder `dir` into the WAL trees of `db`
/// (see the module doc); a folder without a journal has nothing to replay. The caller
/// makes them durable (a sled flush) before the journal is emptied.
pub fn replay(db: &sled::Db, dir: &Path) -> Result<Replayed, StorageError> {
    let bytes = match std::fs::read(dir.join(JOURNAL_FILE)) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Replayed::default()),
        Err(e) => return Err(e.into()),
    };
    let (entries, torn) = read_frames(&bytes);
    let mut replayed = Replayed {
        records: entries.len(),
        written: 0,
        torn,
    };
    // Per realm: its WAL tree and the newest snapshot's sequence number.
    let mut realms: HashMap<String, (sled::Tree, u64)> = HashMap::new();
    for entry in entries {
        if !realms.contains_key(&entry.realm) {
            let snaps = db.open_tree(format!("{SNAP_PREFIX}{}", entry.realm))?;
            let covered = snaps.last()?.map_or(0, |(k, _)| wal::key_seq(&k));
            let tree = db.open_tree(format!("{WAL_PREFIX}{}", entry.realm))?;
            realms.insert(entry.realm.clone(), (tree, covered));
        }
        let (tree, covered) = &realms[&entry.realm];
        if entry.seq > *covered {
            tree.insert(entry.seq.to_be_bytes(), entry.record)?;
            replayed.written += 1;
        }
    }
    Ok(replayed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn entries(bytes: &[u8]) -> Vec<(String, u64, Vec<u8>)> {
        read_frames(bytes)
            .0
            .into_iter()
            .map(|e| (e.realm, e.seq, e.record))
            .collect()
    }

    #[test]
    fn frames_read_back_and_a_cut_anywhere_keeps_the_whole_ones_before_it() {
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for seq in 1..=5u64 {
            bytes.extend(frame("zulip", seq, &vec![seq as u8; seq as usize * 7]).unwrap());
            ends.push(bytes.len());
        }
        let all = entries(&bytes);
        assert_eq!(all.len(), 5);
        assert_eq!(all[2], ("zulip".to_owned(), 3, vec![3u8; 21]));
        assert_eq!(read_frames(&bytes).1, None);
        for cut in 0..bytes.len() {
            let (read, torn) = read_frames(&bytes[..cut]);
            let whole = ends.iter().filter(|&&e| e <= cut).count();
            assert_eq!(read.len(), whole, "cut at {cut}");
            assert_eq!(
                torn.is_some(),
                !ends.contains(&cut) && cut > 0,
                "cut at {cut}"
            );
        }
        // A flipped byte ends the journal at its frame.
        let mut damaged = bytes.clone();
        damaged[ends[1] + 9] ^= 0x40;
        let (read, torn) = read_frames(&damaged);
        assert_eq!(read.len(), 2);
        assert!(torn.expect("damage").contains("does not decode"));
    }

    #[test]
    fn replay_writes_what_no_snapshot_covers_and_can_run_twice() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().path(dir.path()).open().unwrap();
        // Realm `a` has a snapshot at 3; realm `b` nothing yet.
        db.open_tree("snap:a")
            .unwrap()
            .insert(3u64.to_be_bytes(), &b"snapshot"[..])
            .unwrap();
        let mut bytes = Vec::new();
        for (realm, seq) in [("a", 3u64), ("a", 4), ("b", 1), ("a", 5), ("b", 2)] {
            bytes.extend(frame(realm, seq, format!("{realm}{seq}").as_bytes()).unwrap());
        }
        bytes.extend_from_slice(&[9, 0, 0]);
        std::fs::write(dir.path().join(JOURNAL_FILE), &bytes).unwrap();
        for _ in 0..2 {
            let replayed = replay(&db, dir.path()).unwrap();
            assert_eq!(replayed.records, 5);
            assert_eq!(replayed.written, 4, "record a3 is the snapshot's");
            assert!(replayed.torn.is_some());
            let a = db.open_tree("wal:a").unwrap();
            let keys: Vec<u64> = a.iter().keys().map(|k| wal::key_seq(&k.unwrap())).collect();
            assert_eq!(keys, [4, 5]);
            assert_eq!(a.get(5u64.to_be_bytes()).unwrap().unwrap(), &b"a5"[..]);
            assert_eq!(db.open_tree("wal:b").unwrap().len(), 2);
        }
        // No journal: nothing to do.
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(replay(&db, empty.path()).unwrap(), Replayed::default());
    }

    #[test]
    fn a_failed_write_is_written_again_over_its_partial_bytes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(JOURNAL_FILE), b"left from before").unwrap();
        let journal = Journal::create(dir.path()).unwrap();
        assert!(journal.tail().is_empty(), "created empty");
        journal.push("z", 1, b"one").unwrap();
        let taken = journal.take();
        journal.push("z", 2, b"two").unwrap();
        // The write of `taken` failed: it goes back ahead of record 2.
        journal.put_back(taken);
        let mut tail = journal.tail();
        // A partial write reached the file; the retry writes over it.
        tail.file.write_all_at(b"garbage", 0).unwrap();
        tail.append(&journal.take()).unwrap();
        drop(tail);
        let bytes = std::fs::read(journal.path()).unwrap();
        let seqs: Vec<u64> = entries(&bytes).into_iter().map(|e| e.1).collect();
        assert_eq!(seqs, [1, 2]);
        journal.tail().clear().unwrap();
        assert_eq!(std::fs::metadata(journal.path()).unwrap().len(), 0);
    }
}
