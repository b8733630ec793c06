//! The WAL's commit journal: what makes an appended WAL record durable in `always` and
//! `interval` without flushing sled.
//!
//! A group commit used to end in sled's `flush`, which costs ~1.5× a plain `pwrite` +
//! `fdatasync` of the same bytes at the median and ~2× at p90, and ~2.5× an
//! `fdatasync` of a file whose blocks are already written (`cargo bench --bench
//! wal_commit`, `benches/RESULTS.md` §24 and §26): that was the gap between `always`
//! and `never`. Now a realm's record still goes into its sled WAL tree (every reader of
//! the WAL, from recovery to `hearth check` to a move's shipped tail, reads the tree as
//! before), and also into this file; the flusher makes a group durable with one
//! `pwrite` and one `fdatasync` (`Durability::commit`).
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
//! # Layout
//!
//! The file keeps its blocks: it is written with zeros ahead of use (`CHUNK` at a time,
//! synced once) and never shrinks, so a commit's `fdatasync` has no size or block
//! allocation to make durable, only the bytes. Emptying it is writing a new
//! *generation* in its header, not truncating it:
//!
//! - header (`HEADER` bytes): `b"hjnl"`, the generation (u64 LE), a crc32 of both;
//! - then frames: `[length of the rest: u32 LE][codec frame of (generation, commit,
//!   last, realm, seq, record)]`, the record being the WAL record's own framed bytes,
//!   encoded by the flusher with the generation it writes under, the number of its
//!   commit (one `pwrite`) in that generation and whether it ends that commit.
//!
//! Reading stops at zeros (never written), at a frame of another generation (left from
//! before the last checkpoint), or at a frame cut short or failing its checksum: what
//! `kill -9` during a `pwrite` leaves at the end, whose records were never acknowledged
//! (the `fdatasync` after them had not returned). A power loss can also keep a later
//! page of one `pwrite` and lose an earlier one, so a whole frame of the *same* commit
//! after a bad one is still a torn write. A whole frame of a *later* commit anywhere
//! after it (searched byte by byte, since a damaged length hides where the next frame
//! starts) is damage: that commit was written after the bad frame's `fdatasync`
//! returned. The start refuses it (`Replayed::damaged`). Anything else the manifest counts durable and the
//! journal lacks is missing from the trees, and the start refuses as for any other loss
//! (`integrity::judge`).
//!
//! Replay is idempotent: a record is written into its realm's WAL tree under its own
//! sequence number, and only when no snapshot of the realm covers it already (a
//! snapshot job deletes the records it covers, and they must stay deleted).
//!
//! A storage fault's recovery (`Durability::reopen_and_reset`) first appends a *reset
//! marker* per realm (a frame with an empty record at the sequence number the realm
//! went back to), then replays the journal into the reopened database, writes the
//! resets and only then empties the journal. A replay removes a realm's records after
//! its marker's number, so the failed decisions' records never come back, and the
//! acknowledged records of the journal (sled's failed instance never flushed them)
//! are kept, whatever the moment of a crash.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use super::records::key_seq;
use crate::locks::lock;
use crate::storage::{codec, StorageError, SNAP_PREFIX, WAL_PREFIX};

/// The journal's file in a data folder.
pub const JOURNAL_FILE: &str = "journal";

/// Past this size the flusher checkpoints (flushes sled, empties the journal) instead
/// of appending: a bound on the file and on what a start replays.
pub const CHECKPOINT_BYTES: u64 = 64 << 20;

/// The file grows by this much at a time, written with zeros and synced.
pub const CHUNK: u64 = 4 << 20;

/// The header's bytes: magic, generation, checksum.
pub const HEADER: u64 = 16;
const MAGIC: &[u8; 4] = b"hjnl";

/// The header of generation `generation`.
fn header(generation: u64) -> [u8; HEADER as usize] {
    let mut h = [0u8; HEADER as usize];
    h[..4].copy_from_slice(MAGIC);
    h[4..12].copy_from_slice(&generation.to_le_bytes());
    let crc = crc32fast::hash(&h[..12]);
    h[12..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// The generation a header names, if it is one.
fn read_header(bytes: &[u8]) -> Option<u64> {
    let h = bytes.get(..HEADER as usize)?;
    let crc = u32::from_le_bytes([h[12], h[13], h[14], h[15]]);
    (&h[..4] == MAGIC && crc32fast::hash(&h[..12]) == crc)
        .then(|| u64::from_le_bytes(h[4..12].try_into().unwrap_or_default()))
}

/// A record waiting for the next commit.
struct Pending {
    realm: String,
    seq: u64,
    record: Vec<u8>,
}

/// The journal of one data folder: records waiting for the next commit, and the file.
pub struct Journal {
    path: PathBuf,
    /// Records appended since the last commit took them, in append order.
    pending: Mutex<Vec<Pending>>,
    /// The file; held through a commit and through a checkpoint.
    file: Mutex<Tail>,
}

/// Records a commit took, to be written (or put back).
pub struct Taken(Vec<Pending>);

/// The journal's file, where the next frame goes, and its generation.
pub struct Tail {
    file: File,
    /// Where the next frame goes (the header included).
    len: u64,
    /// Bytes of the file written so far (zeros past `len`, or older frames).
    allocated: u64,
    generation: u64,
    /// A write failed: frames of this generation may lie past `len` until the next.
    dirty: bool,
    /// `generation` is not yet durable in the header (a checkpoint's header write
    /// failed): no frame of it is written before it is.
    header_pending: bool,
    /// Commits written in this generation (frames carry their commit's number).
    commits: u64,
}

impl Tail {
    /// Encodes `taken` under this generation, writes it at `len` and makes it durable.
    /// On failure `len` stays: a retry writes over whatever part reached the file.
    pub fn append(&mut self, taken: &Taken) -> io::Result<()> {
        if taken.0.is_empty() {
            return Ok(());
        }
        if self.header_pending {
            self.write_header()?;
        }
        let mut bytes = Vec::with_capacity(taken.0.iter().map(|p| p.record.len() + 64).sum());
        let commit = self.commits + 1;
        for (i, p) in taken.0.iter().enumerate() {
            let at = At {
                generation: self.generation,
                commit,
                last: i + 1 == taken.0.len(),
            };
            frame(&mut bytes, at, &p.realm, p.seq, &p.record).map_err(io::Error::other)?;
        }
        let end = self.len + bytes.len() as u64;
        let written = self
            .grow(end)
            .and_then(|()| self.file.write_all_at(&bytes, self.len))
            .and_then(|()| self.file.sync_data());
        match written {
            Ok(()) => {
                self.len = end;
                self.commits = commit;
                Ok(())
            }
            Err(e) => {
                self.dirty = true;
                Err(e)
            }
        }
    }

    /// Writes zeros up to at least `end`, in `CHUNK`s, and syncs the file's new size.
    fn grow(&mut self, end: u64) -> io::Result<()> {
        if end <= self.allocated {
            return Ok(());
        }
        let target = end.div_ceil(CHUNK) * CHUNK;
        let zeros = vec![0u8; 1 << 20];
        while self.allocated < target {
            let n = (target - self.allocated).min(zeros.len() as u64) as usize;
            self.file.write_all_at(&zeros[..n], self.allocated)?;
            self.allocated += n as u64;
        }
        self.file.sync_all()
    }

    /// Empties the journal, durably (after a checkpoint made sled hold everything in
    /// it): the next generation in the header; its frames then start at `HEADER`.
    ///
    /// The new generation counts at once: should its header not reach the disk, no
    /// frame is written before it does (`append` writes it first), so the file never
    /// holds frames its header disowns.
    pub fn clear(&mut self) -> io::Result<()> {
        if self.len == HEADER && !self.dirty && !self.header_pending {
            return Ok(());
        }
        self.generation = self
            .generation
            .checked_add(1)
            .ok_or_else(|| io::Error::other("the journal's generations ran out"))?;
        self.len = HEADER;
        self.commits = 0;
        self.dirty = false;
        self.header_pending = true;
        self.write_header()
    }

    /// Writes this generation's header and makes it durable.
    fn write_header(&mut self) -> io::Result<()> {
        self.file.write_all_at(&header(self.generation), 0)?;
        self.file.sync_data()?;
        self.header_pending = false;
        Ok(())
    }

    /// Bytes of frames in the journal.
    pub fn len(&self) -> u64 {
        self.len - HEADER
    }

    /// Whether the journal holds no frame.
    pub fn is_empty(&self) -> bool {
        self.len == HEADER
    }
}

/// One record read back from the journal.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Entry {
    generation: u64,
    /// The commit (one `pwrite`) the frame was written in, counted from 1 in its
    /// generation, and whether it is that commit's last frame.
    commit: u64,
    last: bool,
    realm: String,
    seq: u64,
    #[serde(with = "serde_bytes")]
    record: Vec<u8>,
}

/// Where a frame is written: its generation, its commit, whether it ends the commit.
#[derive(Debug, Clone, Copy)]
struct At {
    generation: u64,
    commit: u64,
    last: bool,
}

/// Appends the frame of one record to `out`.
fn frame(
    out: &mut Vec<u8>,
    at: At,
    realm: &str,
    seq: u64,
    record: &[u8],
) -> Result<(), codec::CodecError> {
    #[derive(serde::Serialize)]
    struct EntryRef<'a> {
        generation: u64,
        commit: u64,
        last: bool,
        realm: &'a str,
        seq: u64,
        #[serde(with = "serde_bytes")]
        record: &'a [u8],
    }
    let body = codec::encode(&EntryRef {
        generation: at.generation,
        commit: at.commit,
        last: at.last,
        realm,
        seq,
        record,
    })?;
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    Ok(())
}

impl Journal {
    /// Opens the journal of the folder `dir` empty (its records must have been replayed
    /// and made durable in sled first: `replay`, then a flush): the next generation of
    /// the one it holds, or a new file. Durable when it returns.
    pub fn create(dir: &Path) -> io::Result<Journal> {
        let path = dir.join(JOURNAL_FILE);
        let existed = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        let mut head = [0u8; HEADER as usize];
        let size = file.metadata()?.len();
        let found = if size >= HEADER {
            file.read_exact_at(&mut head, 0)?;
            read_header(&head)
        } else {
            None
        };
        let (generation, allocated) = match found.and_then(|g| g.checked_add(1)) {
            Some(generation) => (generation, size),
            // No header (new, or unreadable): no frame of it is read again, so the
            // file starts over with generation 1 and no older frame in it.
            None => {
                file.set_len(0)?;
                (1, 0)
            }
        };
        let mut tail = Tail {
            file,
            len: HEADER,
            allocated,
            generation,
            dirty: false,
            header_pending: false,
            commits: 0,
        };
        tail.grow(CHUNK)?;
        tail.file.write_all_at(&header(generation), 0)?;
        tail.file.sync_all()?;
        if !existed {
            File::open(dir)?.sync_all()?;
        }
        Ok(Journal {
            path,
            pending: Mutex::new(Vec::new()),
            file: Mutex::new(tail),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues record `seq` of `realm` (already in its WAL tree) for the next commit.
    pub fn push(&self, realm: &str, seq: u64, record: Vec<u8>) {
        lock(&self.pending).push(Pending {
            realm: realm.to_owned(),
            seq,
            record,
        });
    }

    /// Takes everything queued so far.
    pub fn take(&self) -> Taken {
        Taken(std::mem::take(&mut *lock(&self.pending)))
    }

    /// Puts back what `take` returned, ahead of what was queued since (a failed write:
    /// the next attempt writes it again, in order).
    pub fn put_back(&self, taken: Taken) {
        let mut pending = lock(&self.pending);
        let later = std::mem::replace(&mut *pending, taken.0);
        pending.extend(later);
    }

    /// After a storage fault: drops everything queued (those records are dead) and
    /// appends a reset marker for each `(realm, seq)` the realms went back to, durably
    /// (see the module doc).
    pub fn write_resets(&self, resets: &[(String, u64)]) -> io::Result<()> {
        lock(&self.pending).clear();
        let markers = resets
            .iter()
            .map(|(realm, seq)| Pending {
                realm: realm.clone(),
                seq: *seq,
                record: Vec::new(),
            })
            .collect();
        self.tail().append(&Taken(markers))
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
    /// Why reading stopped before the journal's end: a frame cut short or failing its
    /// checksum, as a crash during a write leaves at the end.
    pub torn: Option<String>,
    /// A frame (or the header) that does not decode with a whole frame of a later
    /// commit of the same generation after it: not what a crash leaves but damage,
    /// and acknowledged records may follow it. A start refuses such a folder; `hearth recover
    /// --accept-loss` keeps what comes before.
    pub damaged: Option<String>,
}

/// The frame at `at`: `None` when the bytes end before it does or it is zeros (never
/// written), else its entry or why it does not decode, and where the next one starts.
fn frame_at(bytes: &[u8], at: usize) -> Option<(Result<Entry, codec::CodecError>, usize)> {
    let head = bytes.get(at..at.checked_add(4)?)?;
    let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if len == 0 {
        return None;
    }
    let next = at.checked_add(4)?.checked_add(len)?;
    let body = bytes.get(at + 4..next)?;
    Some((codec::decode::<Entry>(body), next))
}

/// How reading a journal ended before its last byte.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
    /// A frame cut short or failing its checksum, and no later commit of this
    /// generation after it: what a crash during a write leaves.
    Torn(String),
    /// The same with a whole frame of a later commit of this generation after it: that
    /// commit was written after this one's `fdatasync` returned, so this one was
    /// acknowledged and is damaged (or a bad header with frames after it).
    Damaged(String),
}

/// The first whole frame of `generation` anywhere after byte `from` (a damaged length
/// hides where the next frame starts), if any.
fn next_whole(bytes: &[u8], from: usize, generation: u64) -> Option<Entry> {
    (from..bytes.len()).find_map(|at| match frame_at(bytes, at) {
        Some((Ok(e), _)) if e.generation == generation => Some(e),
        _ => None,
    })
}

/// Reads the frames of a journal's bytes (header first) up to zeros, a frame of another
/// generation, or a torn or damaged frame.
fn read_frames(bytes: &[u8]) -> (Vec<Entry>, Option<Stop>) {
    let mut out: Vec<Entry> = Vec::new();
    let first = HEADER as usize;
    let Some(generation) = read_header(bytes) else {
        let framed = matches!(frame_at(bytes, first), Some((Ok(_), _)));
        return match (bytes.iter().any(|b| *b != 0), framed) {
            (_, true) => (
                out,
                Some(Stop::Damaged("a header that does not decode".into())),
            ),
            (true, false) if bytes.len() >= first => (
                out,
                Some(Stop::Torn("a header that does not decode".into())),
            ),
            _ => (out, None),
        };
    };
    let mut at = first;
    let why = loop {
        match frame_at(bytes, at) {
            None => {
                // Zeros, or the file's end: clean; a length running past the end is a
                // frame cut short.
                let cut = bytes
                    .get(at..)
                    .is_some_and(|rest| rest.iter().take(4).any(|b| *b != 0));
                if !cut {
                    return (out, None);
                }
                break format!("a frame cut short at byte {at}");
            }
            Some((Ok(entry), next)) => {
                if entry.generation != generation {
                    return (out, None);
                }
                out.push(entry);
                at = next;
            }
            Some((Err(e), _)) => break format!("a frame that does not decode at byte {at} ({e})"),
        }
    };
    // The commit the bad frame belongs to: the last good frame's, or the next one when
    // that frame ended its commit.
    let bad = match out.last() {
        Some(e) if e.last => e.commit + 1,
        Some(e) => e.commit,
        None => 1,
    };
    let stop = match next_whole(bytes, at + 1, generation) {
        Some(later) if later.commit > bad => Stop::Damaged(why),
        _ => Stop::Torn(why),
    };
    (out, Some(stop))
}

/// The records of the journal in the folder `dir` (none without one), and how reading
/// ended.
fn read(dir: &Path) -> io::Result<(Vec<Entry>, Option<Stop>)> {
    match std::fs::read(dir.join(JOURNAL_FILE)) {
        Ok(bytes) => Ok(read_frames(&bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((Vec::new(), None)),
        Err(e) => Err(e),
    }
}

/// The number of records the journal in the folder `dir` holds (tests and tools).
pub fn count(dir: &Path) -> io::Result<usize> {
    Ok(read(dir)?.0.len())
}

/// Copies the records of the journal in the folder `dir` into the WAL trees of `db`
/// (see the module doc); a folder without a journal has nothing to replay. The caller
/// makes them durable (a sled flush) before the journal is emptied.
pub fn replay(db: &sled::Db, dir: &Path) -> Result<Replayed, StorageError> {
    let (entries, stop) = read(dir)?;
    let mut replayed = Replayed {
        records: entries.len(),
        ..Replayed::default()
    };
    match stop {
        Some(Stop::Damaged(why)) => replayed.damaged = Some(why),
        Some(Stop::Torn(why)) => replayed.torn = Some(why),
        None => {}
    }
    // Per realm: its WAL tree and the newest snapshot's sequence number.
    let mut realms: HashMap<String, (sled::Tree, u64)> = HashMap::new();
    for entry in entries {
        if !realms.contains_key(&entry.realm) {
            let snaps = db.open_tree(format!("{SNAP_PREFIX}{}", entry.realm))?;
            let covered = snaps.last()?.map_or(0, |(k, _)| key_seq(&k));
            let tree = db.open_tree(format!("{WAL_PREFIX}{}", entry.realm))?;
            realms.insert(entry.realm.clone(), (tree, covered));
        }
        let (tree, covered) = &realms[&entry.realm];
        if entry.record.is_empty() {
            // A reset marker: nothing of the realm after it survives.
            for key in tree.range((entry.seq + 1).to_be_bytes()..).keys() {
                tree.remove(key?)?;
            }
        } else if entry.seq > *covered {
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

    fn seqs(bytes: &[u8]) -> Vec<u64> {
        read_frames(bytes).0.into_iter().map(|e| e.seq).collect()
    }

    fn at(generation: u64, commit: u64, last: bool) -> At {
        At {
            generation,
            commit,
            last,
        }
    }

    /// A journal of generation 3 with five frames in three commits (1 and 2, 3, 4 and
    /// 5); their ends.
    fn five() -> (Vec<u8>, Vec<usize>) {
        let mut bytes = header(3).to_vec();
        let mut ends = Vec::new();
        let commits = [(1, false), (1, true), (2, true), (3, false), (3, true)];
        for (seq, (commit, last)) in (1..=5u64).zip(commits) {
            let record = vec![seq as u8; seq as usize * 7];
            frame(&mut bytes, at(3, commit, last), "zulip", seq, &record).unwrap();
            ends.push(bytes.len());
        }
        (bytes, ends)
    }

    #[test]
    fn frames_read_back_and_a_cut_anywhere_keeps_the_whole_ones_before_it() {
        let (bytes, ends) = five();
        let (all, stop) = read_frames(&bytes);
        assert_eq!(stop, None);
        assert_eq!(all.len(), 5);
        assert_eq!((all[2].seq, all[2].record.clone()), (3, vec![3u8; 21]));
        for cut in HEADER as usize..bytes.len() {
            let (read, stop) = read_frames(&bytes[..cut]);
            let whole = ends.iter().filter(|&&e| e <= cut).count();
            assert_eq!(read.len(), whole, "cut at {cut}");
            let at_end = ends.contains(&cut) || cut == HEADER as usize;
            assert_eq!(stop.is_some(), !at_end, "cut at {cut}");
            assert!(
                !matches!(stop, Some(Stop::Damaged(_))),
                "a cut is no damage"
            );
            // The same cut followed by zeros (the file's preallocated blocks).
            let mut padded = bytes[..cut].to_vec();
            padded.resize(bytes.len() + 64, 0);
            assert_eq!(
                read_frames(&padded).0.len(),
                whole,
                "cut at {cut}, zeros after"
            );
        }
        // A flipped byte ends the journal at its frame; whole frames of the generation
        // after it make it damage, not a torn end.
        let mut damaged = bytes.clone();
        damaged[ends[1] + 9] ^= 0x40;
        let (read, stop) = read_frames(&damaged);
        assert_eq!(read.len(), 2);
        assert!(matches!(stop, Some(Stop::Damaged(why)) if why.contains("does not decode")));
        // A frame of a commit whose later frame reached the disk is what a power loss
        // can leave inside one `pwrite`: torn, not damage.
        let mut inside = bytes.clone();
        inside[ends[2] + 9] ^= 0x40;
        let (read, stop) = read_frames(&inside);
        assert_eq!(read.len(), 3);
        assert!(matches!(stop, Some(Stop::Torn(_))), "{stop:?}");
        // A damaged length hides where the next frame starts: still damage.
        let mut length = bytes.clone();
        length[ends[1] + 3] = 0x7f;
        let (read, stop) = read_frames(&length);
        assert_eq!(read.len(), 2);
        assert!(matches!(stop, Some(Stop::Damaged(_))), "{stop:?}");
        // The same flip in the last frame is a torn end.
        let mut last = bytes.clone();
        last[ends[3] + 9] ^= 0x40;
        let (read, stop) = read_frames(&last);
        assert_eq!(read.len(), 4);
        assert!(matches!(stop, Some(Stop::Torn(_))));
        // A damaged header with frames after it is damage; zeros are an empty journal.
        let mut head = bytes.clone();
        head[5] ^= 1;
        assert!(matches!(read_frames(&head).1, Some(Stop::Damaged(_))));
        assert_eq!(read_frames(&[0u8; 64]), (Vec::new(), None));
    }

    #[test]
    fn frames_of_an_older_generation_end_the_journal() {
        let (old, _) = five();
        // Generation 4 writes two frames over the start of generation 3's.
        let mut bytes = old.clone();
        bytes[..HEADER as usize].copy_from_slice(&header(4));
        let mut newer = Vec::new();
        frame(&mut newer, at(4, 1, true), "zulip", 9, b"nine").unwrap();
        frame(&mut newer, at(4, 2, true), "zulip", 10, b"ten").unwrap();
        bytes[HEADER as usize..HEADER as usize + newer.len()].copy_from_slice(&newer);
        let (read, stop) = read_frames(&bytes);
        assert_eq!(read.iter().map(|e| e.seq).collect::<Vec<_>>(), [9, 10]);
        // What follows is generation 3's (cut in the middle, or whole): no damage.
        assert!(!matches!(stop, Some(Stop::Damaged(_))), "{stop:?}");
        // Emptied: nothing of generation 3 is read.
        let mut emptied = old.clone();
        emptied[..HEADER as usize].copy_from_slice(&header(4));
        assert_eq!(seqs(&emptied), Vec::<u64>::new());
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
        let mut bytes = header(1).to_vec();
        for (realm, seq) in [("a", 3u64), ("a", 4), ("b", 1), ("a", 5), ("b", 2)] {
            let record = format!("{realm}{seq}");
            frame(&mut bytes, at(1, seq, true), realm, seq, record.as_bytes()).unwrap();
        }
        bytes.extend_from_slice(&[9, 0, 0]);
        std::fs::write(dir.path().join(JOURNAL_FILE), &bytes).unwrap();
        for _ in 0..2 {
            let replayed = replay(&db, dir.path()).unwrap();
            assert_eq!(replayed.records, 5);
            assert_eq!(replayed.written, 4, "record a3 is the snapshot's");
            assert!(replayed.torn.is_some());
            let a = db.open_tree("wal:a").unwrap();
            let keys: Vec<u64> = a.iter().keys().map(|k| key_seq(&k.unwrap())).collect();
            assert_eq!(keys, [4, 5]);
            assert_eq!(a.get(5u64.to_be_bytes()).unwrap().unwrap(), &b"a5"[..]);
            assert_eq!(db.open_tree("wal:b").unwrap().len(), 2);
        }
        // No journal: nothing to do.
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(replay(&db, empty.path()).unwrap(), Replayed::default());
    }

    #[test]
    fn commits_checkpoints_and_a_failed_write_written_again() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(JOURNAL_FILE), b"left from before").unwrap();
        let journal = Journal::create(dir.path()).unwrap();
        assert!(journal.tail().is_empty(), "created empty");
        let size = std::fs::metadata(journal.path()).unwrap().len();
        assert_eq!(size, CHUNK, "its first blocks written ahead");
        journal.push("z", 1, b"one".to_vec());
        let taken = journal.take();
        journal.push("z", 2, b"two".to_vec());
        // The write of `taken` failed: it goes back ahead of record 2.
        journal.put_back(taken);
        let mut tail = journal.tail();
        // A partial write reached the file; the retry writes over it.
        tail.file.write_all_at(b"garbage", HEADER).unwrap();
        tail.append(&journal.take()).unwrap();
        drop(tail);
        assert_eq!(count(dir.path()).unwrap(), 2);
        // Past its blocks the file grows by a chunk, synced once.
        journal.push("z", 3, vec![7u8; CHUNK as usize]);
        journal.tail().append(&journal.take()).unwrap();
        assert_eq!(std::fs::metadata(journal.path()).unwrap().len(), 2 * CHUNK);
        assert_eq!(count(dir.path()).unwrap(), 3);
        // A checkpoint empties it without shrinking it; the next frames are read alone.
        journal.tail().clear().unwrap();
        assert_eq!(count(dir.path()).unwrap(), 0);
        journal.push("z", 4, b"four".to_vec());
        journal.tail().append(&journal.take()).unwrap();
        let bytes = std::fs::read(journal.path()).unwrap();
        assert_eq!(seqs(&bytes), [4]);
        assert_eq!(bytes.len() as u64, 2 * CHUNK);
        // Opened again: the next generation, nothing of the last one read.
        drop(journal);
        let again = Journal::create(dir.path()).unwrap();
        assert_eq!(count(dir.path()).unwrap(), 0);
        assert_eq!(again.tail().generation, 3);
    }

    #[test]
    fn a_reset_marker_drops_what_follows_its_number_until_new_records() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().path(dir.path()).open().unwrap();
        let journal = Journal::create(dir.path()).unwrap();
        for seq in 1..=5u64 {
            journal.push("a", seq, format!("old{seq}").into_bytes());
        }
        journal.push("b", 1, b"b1".to_vec());
        journal.tail().append(&journal.take()).unwrap();
        // Records 4 and 5 of `a` were failed decisions: the realm went back to 3.
        journal.push("a", 6, b"dead, queued".to_vec());
        journal.write_resets(&[("a".to_owned(), 3)]).unwrap();
        // After the recovery, record 4 is a new decision.
        journal.push("a", 4, b"new4".to_vec());
        journal.tail().append(&journal.take()).unwrap();
        for _ in 0..2 {
            replay(&db, dir.path()).unwrap();
            let a = db.open_tree("wal:a").unwrap();
            let got: Vec<(u64, Vec<u8>)> = a
                .iter()
                .map(|kv| {
                    let (k, v) = kv.unwrap();
                    (key_seq(&k), v.to_vec())
                })
                .collect();
            assert_eq!(
                got,
                [
                    (1, b"old1".to_vec()),
                    (2, b"old2".to_vec()),
                    (3, b"old3".to_vec()),
                    (4, b"new4".to_vec())
                ]
            );
            assert_eq!(db.open_tree("wal:b").unwrap().len(), 1);
        }
    }

    #[test]
    fn frames_wait_for_a_header_that_did_not_reach_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::create(dir.path()).unwrap();
        journal.push("z", 1, b"one".to_vec());
        journal.tail().append(&journal.take()).unwrap();
        {
            // As after a checkpoint whose header write failed.
            let mut tail = journal.tail();
            tail.generation += 1;
            tail.len = HEADER;
            tail.header_pending = true;
        }
        assert_eq!(
            count(dir.path()).unwrap(),
            1,
            "the file still says the old one"
        );
        journal.push("z", 2, b"two".to_vec());
        journal.tail().append(&journal.take()).unwrap();
        let bytes = std::fs::read(journal.path()).unwrap();
        assert_eq!(seqs(&bytes), [2], "the header went first");
    }
}
