//! The manifest: a small file beside the database that says, per realm, how far the
//! store is known durable, so that a store that comes back shorter is noticed.
//!
//! File `hearth-manifest` in the data folder: one line of JSON (`Manifest`), then a line
//! `crc32 <8 hex digits>` with the CRC-32 of the JSON line's bytes. It is written whole
//! to `hearth-manifest.tmp`, fsynced, renamed over the old one, and the folder fsynced,
//! so a reader finds the old manifest or the new one, never a mix.
//!
//! What it records is only ever a mark the store already reached durably: `Marks`
//! takes the sequence numbers appended so far *before* a flush starts and counts them
//! durable only once that flush and its `fsync` succeeded; a snapshot counts once it and
//! its blob files are synced. A manifest may lag behind the store (it is written at most
//! once a second by the flusher, and at snapshots and clean shutdown), never run ahead of
//! it; start-up compares with `>=`.
//!
//! Once a folder has a manifest, the database holds a marker (tree `hearth:meta`, key
//! `manifest`), written after the first manifest file: a folder whose marker says a
//! manifest was written but has none lost it. A folder without either is from before
//! manifests (or new): it gets one at its next start.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::locks::lock;

/// The manifest's file name inside the data folder.
pub const MANIFEST_FILE: &str = "hearth-manifest";
const MANIFEST_TMP: &str = "hearth-manifest.tmp";
/// The manifest format this code writes (and the only one it reads).
const FORMAT: u32 = 1;
/// The tree and key of the marker "this folder has a manifest".
pub const META_TREE: &str = "hearth:meta";
const MARKER_KEY: &str = "manifest";
/// The flusher writes the manifest at most this often.
pub const FLUSHER_PERIOD: Duration = Duration::from_secs(1);

/// How far one realm is known durable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RealmMark {
    /// The last WAL record known durable (a snapshot covering it counts).
    pub last_seq: u64,
    /// The record covered by the newest snapshot known durable (0: none yet).
    pub snapshot_seq: u64,
}

/// The manifest's content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The format version (`FORMAT`).
    pub format: u32,
    /// Marks per realm subdomain.
    pub realms: BTreeMap<String, RealmMark>,
    /// How many times the message database was made durable before a snapshot
    /// (`messages::MessageDb::sync`): it must hold at least this count, or it lost
    /// writes. Absent (0) in manifests from before the message database.
    #[serde(default)]
    pub messages_synced: u64,
}

/// Why a manifest file cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read {path}: {cause}")]
    Io { path: String, cause: String },
    #[error("{path} is corrupt: {cause}")]
    Corrupt { path: String, cause: String },
}

/// The manifest file of a data folder.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(MANIFEST_FILE)
}

/// Encodes a manifest as its file's bytes.
pub fn encode(manifest: &Manifest) -> Vec<u8> {
    // Serializing plain maps of strings and integers cannot fail.
    let body = serde_json::to_string(manifest).unwrap_or_default();
    format!("{body}\ncrc32 {:08x}\n", crc32fast::hash(body.as_bytes())).into_bytes()
}

/// Decodes a manifest file's bytes (`path` names it in errors).
pub fn decode(bytes: &[u8], path: &Path) -> Result<Manifest, ManifestError> {
    let corrupt = |cause: &str| ManifestError::Corrupt {
        path: path.display().to_string(),
        cause: cause.to_owned(),
    };
    let text = std::str::from_utf8(bytes).map_err(|_| corrupt("not text"))?;
    let text = text
        .strip_suffix('\n')
        .ok_or_else(|| corrupt("truncated"))?;
    let (body, trailer) = text
        .rsplit_once('\n')
        .ok_or_else(|| corrupt("no checksum line"))?;
    let crc = trailer
        .strip_prefix("crc32 ")
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or_else(|| corrupt("no checksum line"))?;
    if crc32fast::hash(body.as_bytes()) != crc {
        return Err(corrupt("checksum mismatch"));
    }
    let manifest: Manifest =
        serde_json::from_str(body).map_err(|e| corrupt(&format!("unreadable ({e})")))?;
    if manifest.format != FORMAT {
        return Err(corrupt(&format!("unknown format {}", manifest.format)));
    }
    Ok(manifest)
}

/// Reads the manifest of a data folder: `None` when there is none.
pub fn read(dir: &Path) -> Result<Option<Manifest>, ManifestError> {
    let path = path(dir);
    match fs::read(&path) {
        Ok(bytes) => decode(&bytes, &path).map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ManifestError::Io {
            path: path.display().to_string(),
            cause: e.to_string(),
        }),
    }
}

/// Writes the manifest of a data folder atomically: temporary file, fsync, rename,
/// fsync of the folder.
pub fn write(dir: &Path, manifest: &Manifest) -> io::Result<()> {
    let tmp = dir.join(MANIFEST_TMP);
    let mut file = File::create(&tmp)?;
    file.write_all(&encode(manifest))?;
    file.sync_all()?;
    drop(file);
    fs::rename(&tmp, path(dir))?;
    File::open(dir)?.sync_all()
}

/// Whether the database says a manifest was written for it.
pub fn has_marker(db: &sled::Db) -> Result<bool, sled::Error> {
    if !db.tree_names().iter().any(|n| n == META_TREE.as_bytes()) {
        return Ok(false);
    }
    Ok(db.open_tree(META_TREE)?.get(MARKER_KEY)?.is_some())
}

/// Records in the database that a manifest was written (made durable by the next flush).
pub fn set_marker(db: &sled::Db) -> Result<(), sled::Error> {
    db.open_tree(META_TREE)?.insert(MARKER_KEY, &[1u8][..])?;
    Ok(())
}

/// The durable marks of the open store, and the writing of its manifest.
#[derive(Default)]
pub struct Marks {
    /// The manifest found when the store was opened: what start-up checks against.
    loaded: Mutex<Option<Manifest>>,
    /// Per realm: the last record appended (published after the record is in the tree).
    appended: Mutex<HashMap<String, Arc<AtomicU64>>>,
    /// Per realm: what is known durable; starts as the loaded manifest.
    durable: Mutex<BTreeMap<String, RealmMark>>,
    /// What the last manifest written holds, and when it was written.
    written: Mutex<Option<(BTreeMap<String, RealmMark>, Instant)>>,
    /// Held while writing the file (one temporary name).
    writing: Mutex<()>,
    /// The last write failed: log the next failure only once.
    failing: std::sync::atomic::AtomicBool,
    /// The message database's sync count known durable (see `Manifest`).
    messages_synced: AtomicU64,
}

/// A realm's appended mark, published by its store after each append.
#[derive(Clone)]
pub struct Appended(Arc<AtomicU64>);

impl Appended {
    /// Record `seq` is in the tree.
    pub fn set(&self, seq: u64) {
        self.0.store(seq, Ordering::SeqCst);
    }
}

impl Marks {
    /// Seeds the marks with the manifest found at open.
    pub fn load(&self, manifest: Option<Manifest>) {
        if let Some(m) = &manifest {
            self.messages_synced
                .fetch_max(m.messages_synced, Ordering::SeqCst);
            *lock(&self.durable) = m.realms.clone();
            *lock(&self.written) = Some((m.realms.clone(), Instant::now()));
        }
        *lock(&self.loaded) = manifest;
    }

    /// The manifest found when the store was opened.
    pub fn loaded(&self) -> Option<Manifest> {
        lock(&self.loaded).clone()
    }

    /// What the manifest found at open expects of `realm`.
    pub fn expected(&self, realm: &str) -> Option<RealmMark> {
        lock(&self.loaded)
            .as_ref()
            .and_then(|m| m.realms.get(realm).copied())
    }

    /// The appended mark of a realm (0 until its store recovered or appended).
    pub fn track(&self, realm: &str) -> Appended {
        Appended(
            lock(&self.appended)
                .entry(realm.to_owned())
                .or_default()
                .clone(),
        )
    }

    /// The appended marks now: taken before a flush starts, durable once it succeeded.
    pub fn appended(&self) -> Vec<(String, u64)> {
        lock(&self.appended)
            .iter()
            .map(|(realm, seq)| (realm.clone(), seq.load(Ordering::SeqCst)))
            .filter(|(_, seq)| *seq > 0)
            .collect()
    }

    /// A flush covering `appended` (from `appended()`) succeeded.
    pub fn flushed(&self, appended: &[(String, u64)]) {
        let mut durable = lock(&self.durable);
        for (realm, seq) in appended {
            let mark = durable.entry(realm.clone()).or_default();
            mark.last_seq = mark.last_seq.max(*seq);
        }
    }

    /// The snapshot of `realm` covering record `seq` is durable.
    pub fn snapshot_durable(&self, realm: &str, seq: u64) {
        let mut durable = lock(&self.durable);
        let mark = durable.entry(realm.to_owned()).or_default();
        mark.last_seq = mark.last_seq.max(seq);
        mark.snapshot_seq = mark.snapshot_seq.max(seq);
    }

    /// A realm goes back to record `seq` (a fault dropped what came after it): its marks
    /// go no further than `seq`.
    pub fn lower(&self, realm: &str, seq: u64) {
        if let Some(a) = lock(&self.appended).get(realm) {
            a.fetch_min(seq, Ordering::SeqCst);
        }
        if let Some(mark) = lock(&self.durable).get_mut(realm) {
            mark.last_seq = mark.last_seq.min(seq);
            mark.snapshot_seq = mark.snapshot_seq.min(seq);
        }
    }

    /// A realm removed from this folder (dropped): no mark of it is kept or written.
    pub fn forget(&self, realm: &str) {
        lock(&self.appended).remove(realm);
        lock(&self.durable).remove(realm);
    }

    /// The message database's sync number `n` is durable (written with the next
    /// manifest).
    pub fn messages_synced(&self, n: u64) {
        self.messages_synced.fetch_max(n, Ordering::SeqCst);
    }

    /// The durable marks now.
    pub fn durable(&self) -> BTreeMap<String, RealmMark> {
        lock(&self.durable).clone()
    }

    /// Writes the manifest with the durable marks now, and the database's marker.
    pub fn write_now(&self, dir: &Path, db: Option<&sled::Db>) -> io::Result<()> {
        let _writing = lock(&self.writing);
        let realms = self.durable();
        let manifest = Manifest {
            format: FORMAT,
            realms: realms.clone(),
            messages_synced: self.messages_synced.load(Ordering::SeqCst),
        };
        let result = write(dir, &manifest);
        match &result {
            Ok(()) => {
                self.failing.store(false, Ordering::SeqCst);
                let first = lock(&self.written).is_none();
                *lock(&self.written) = Some((realms, Instant::now()));
                if first {
                    if let Some(db) = db {
                        // Once, durably: from now on a missing manifest is noticed.
                        set_marker(db).map_err(io::Error::other)?;
                        crate::storage::folder::flush_durably(db, dir).map_err(io::Error::other)?;
                    }
                }
            }
            Err(e) => {
                if !self.failing.swap(true, Ordering::SeqCst) {
                    tracing::warn!("cannot write the manifest in {}: {e}", dir.display());
                }
            }
        }
        result
    }

    /// The flusher's call: writes the manifest when the marks moved and the last write
    /// is at least `FLUSHER_PERIOD` old.
    pub fn write_if_due(&self, dir: &Path, db: Option<&sled::Db>) {
        let due = match &*lock(&self.written) {
            // The first manifest of a folder comes from start-up, a snapshot or shutdown.
            None => false,
            Some((realms, at)) => at.elapsed() >= FLUSHER_PERIOD && *realms != self.durable(),
        };
        if due {
            // A failure is logged by `write_now`; the manifest only lags meanwhile.
            let _ = self.write_now(dir, db);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        let mut realms = BTreeMap::new();
        realms.insert(
            "zulip".to_owned(),
            RealmMark {
                last_seq: 320,
                snapshot_seq: 300,
            },
        );
        Manifest {
            format: 1,
            realms,
            messages_synced: 3,
        }
    }

    #[test]
    fn round_trips_and_detects_any_flipped_byte() {
        let bytes = encode(&sample());
        let p = Path::new("m");
        assert_eq!(decode(&bytes, p).expect("decode"), sample());
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x01;
            assert!(decode(&bad, p).is_err(), "flip at {i} went unnoticed");
        }
        assert!(decode(&bytes[..bytes.len() - 3], p).is_err());
        assert!(decode(b"", p).is_err());
    }

    #[test]
    fn written_atomically_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(read(dir.path()).expect("none").is_none());
        write(dir.path(), &sample()).expect("write");
        assert_eq!(read(dir.path()).expect("read"), Some(sample()));
        assert!(!dir.path().join(MANIFEST_TMP).exists());
        fs::write(path(dir.path()), b"{}\ncrc32 00000000\n").expect("clobber");
        assert!(matches!(
            read(dir.path()),
            Err(ManifestError::Corrupt { .. })
        ));
    }

    #[test]
    fn marks_advance_only_by_flushes_and_snapshots() {
        let marks = Marks::default();
        marks.load(Some(sample()));
        assert_eq!(marks.expected("zulip").map(|m| m.last_seq), Some(320));
        let a = marks.track("zulip");
        a.set(330);
        assert_eq!(
            marks.durable()["zulip"].last_seq,
            320,
            "appended is not durable"
        );
        let taken = marks.appended();
        a.set(340);
        marks.flushed(&taken);
        assert_eq!(marks.durable()["zulip"].last_seq, 330);
        marks.snapshot_durable("zulip", 335);
        assert_eq!(
            marks.durable()["zulip"],
            RealmMark {
                last_seq: 335,
                snapshot_seq: 335
            }
        );
        marks.lower("zulip", 333);
        assert_eq!(
            marks.durable()["zulip"],
            RealmMark {
                last_seq: 333,
                snapshot_seq: 333
            }
        );
        assert_eq!(marks.appended(), vec![("zulip".to_owned(), 333)]);
    }
}
