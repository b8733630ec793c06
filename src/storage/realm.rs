//! One realm's WAL and snapshots.
//!
//! WAL key: big-endian u64 sequence number; value: the framed `Vec<Change>` of one
//! decision (so a decision is replayed whole or not at all). Snapshot key: the sequence
//! number of the last record it covers; value: the framed `Realm`.
//!
//! After a storage fault (see `durability`) the realm's actor calls `reset`: the store
//! drops its handles on the failed database and hands the state the actor went back to
//! over to the flusher, which writes it as the realm's only snapshot once the database
//! can be reopened; the trees are opened again on the next write.
//!
//! Start-up (`recover`) reads the trees with `scan`, the same reading `hearth check`
//! and `hearth recover` use, and holds what it found against the manifest
//! (`integrity::judge`): anything the manifest counts durable that is missing or does
//! not decode refuses the start; only a tail beyond the manifest's mark is cut.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::integrity::{self, scan, Damage, End};
use super::messages::MessageStore;
use super::wal::manifest::Appended;
use super::wal::{key_seq, Reset};
use super::{codec, Durability, StorageError};
use crate::realm::{Change, Realm};

/// Storage of one realm, owned by its actor.
pub struct RealmStore {
    /// The realm's subdomain (its name in the manifest).
    subdomain: String,
    /// Its appended mark in the manifest's `Marks`, set after each append.
    appended: Appended,
    /// Tree names: `wal:<subdomain>`, `snap:<subdomain>`.
    wal_name: String,
    snaps_name: String,
    /// The trees, on the database currently open; `None` after a fault.
    trees: Option<(sled::Tree, sled::Tree)>,
    /// Sequence number of the last record appended (or covered by a snapshot).
    last_seq: u64,
    /// The failures this store has reset after (see `Durability::failures`).
    reset_failures: u64,
    /// Registration with `Durability`: a failure clears only once every store reset.
    participant: u64,
    durability: Arc<Durability>,
    /// The realm's message rows and indexes.
    messages: MessageStore,
    /// Records after this one are kept by snapshots (`u64::MAX`: no hold): a realm
    /// being moved keeps the WAL tail written since its archive, to be shipped.
    hold: Arc<AtomicU64>,
}

/// No hold on the WAL (see `RealmStore::hold`).
const NO_HOLD: u64 = u64::MAX;

impl Drop for RealmStore {
    fn drop(&mut self) {
        self.durability.leave(self.participant);
    }
}

/// A snapshot to take: the sequence number it covers and the trees it writes.
pub struct SnapshotJob {
    /// The last WAL record the snapshot covers.
    pub seq: u64,
    /// The realm's subdomain: the snapshot's mark in the manifest.
    realm: String,
    wal: sled::Tree,
    snaps: sled::Tree,
    /// `Durability::failures` when the job was made: after a fault it must not run.
    failures: u64,
    durability: Arc<Durability>,
    /// The realm's message rows, made durable before the snapshot is written.
    messages: MessageStore,
    /// The store's WAL hold: records after it are not deleted.
    hold: Arc<AtomicU64>,
}

impl SnapshotJob {
    /// Makes the message rows written so far durable, then encodes and writes the
    /// snapshot, makes it and its blob files durable, and only
    /// then deletes the WAL prefix and the older snapshots it replaces. A crash at any
    /// point leaves either the old snapshot and its WAL, or the new one: nothing
    /// acknowledged is lost. A failure at any step (flush, blob sync) leaves the WAL
    /// as it was; the actor tries again after another `--snapshot-every` records.
    pub fn run(self, realm: &Realm) -> Result<(), StorageError> {
        let started = std::time::Instant::now();
        let result = self.run_inner(realm);
        if result.is_err() {
            self.durability.snapshot_failed();
        } else {
            crate::metrics::SNAPSHOT_SECONDS.observe(started.elapsed().as_secs_f64());
        }
        result
    }

    fn run_inner(&self, realm: &Realm) -> Result<(), StorageError> {
        self.durability.snapshot_started()?;
        if self.durability.failures() != self.failures {
            return Err(StorageError::Invalid(
                "a storage fault happened since this snapshot was planned".into(),
            ));
        }
        self.durability
            .check_writable()
            .map_err(|e| StorageError::Invalid(e.to_string()))?;
        let seq = self.seq;
        // The records it covers are never projected again: their rows must be on disk
        // first (see `messages`). This waits for the message database to open.
        let synced = self.messages.sync()?;
        self.durability.marks().messages_synced(synced);
        self.snaps
            .insert(seq.to_be_bytes(), codec::encode_realm(realm)?)?;
        // sled wrote the snapshot's blob file at the insert: the flush makes it durable
        // before the log that points at it (`folder::flush_durably`). A cut that finds
        // it missing or torn makes sled drop every later entry of its log at the next
        // open, and with them the records the flush acknowledges (seen with `hearth
        // torture --power-cut`).
        self.durability.flush_now()?;
        // The manifest names the snapshot before the WAL prefix and older snapshots go;
        // a manifest that cannot be written only lags (logged by `write_now`).
        self.durability.marks().snapshot_durable(&self.realm, seq);
        let _ = self
            .durability
            .marks()
            .write_now(self.durability.dir(), self.durability.db().as_ref());
        let upto = seq.min(self.hold.load(Ordering::SeqCst));
        for key in self.wal.range(..=upto.to_be_bytes()).keys() {
            self.wal.remove(key?)?;
        }
        for key in self.snaps.range(..seq.to_be_bytes()).keys() {
            self.snaps.remove(key?)?;
        }
        // The records the snapshot covers are never undone.
        self.messages.trim_undo(seq)?;
        Ok(())
    }
}

/// What start-up found on disk.
pub struct Recovered {
    pub realm: Realm,
    /// Records replayed on top of the snapshot.
    pub replayed: u64,
    /// Records cut from a torn or corrupt tail.
    pub cut: u64,
}

impl RealmStore {
    pub(super) fn new(
        subdomain: &str,
        wal_name: String,
        snaps_name: String,
        messages: MessageStore,
        durability: Arc<Durability>,
    ) -> Result<Self, StorageError> {
        let participant = durability.join();
        let mut store = RealmStore {
            subdomain: subdomain.to_owned(),
            appended: durability.marks().track(subdomain),
            wal_name,
            snaps_name,
            trees: None,
            last_seq: 0,
            reset_failures: durability.failures(),
            participant,
            durability,
            messages,
            hold: Arc::new(AtomicU64::new(NO_HOLD)),
        };
        let (wal, snaps) = store.trees()?;
        let last_wal = wal.last()?.map(|(k, _)| key_seq(&k)).unwrap_or(0);
        let last_snap = snaps.last()?.map(|(k, _)| key_seq(&k)).unwrap_or(0);
        store.last_seq = last_wal.max(last_snap);
        Ok(store)
    }

    pub fn durability(&self) -> &Arc<Durability> {
        &self.durability
    }

    /// The realm's message store (rows are written by `MessageStore::project`).
    pub fn messages(&self) -> &MessageStore {
        &self.messages
    }

    /// The trees on the open database (opened again after a fault).
    fn trees(&mut self) -> Result<(sled::Tree, sled::Tree), StorageError> {
        if let Some(trees) = &self.trees {
            return Ok(trees.clone());
        }
        let db = self.durability.db().ok_or_else(|| {
            StorageError::Invalid("the database is closed after a storage failure".into())
        })?;
        let trees = (
            db.open_tree(&self.wal_name)?,
            db.open_tree(&self.snaps_name)?,
        );
        self.trees = Some(trees.clone());
        Ok(trees)
    }

    /// Whether the store failed since this realm last reset: its actor must `reset`.
    pub fn needs_reset(&self) -> bool {
        self.durability.failures() != self.reset_failures && self.durability.failure().is_some()
    }

    /// After a fault: `realm` is the state the actor went back to, covering the WAL up
    /// to `seq` (its last durable record). Drops the handles on the failed database and
    /// hands `realm` to the flusher, which makes it the realm's only snapshot before the
    /// store accepts writes again.
    pub fn reset(&mut self, seq: u64, realm: &Realm) -> Result<(), StorageError> {
        let failure = self.durability.failures();
        self.trees = None;
        self.last_seq = seq;
        self.reset_failures = failure;
        let snapshot = codec::encode_realm(realm)?;
        self.durability.acknowledge_fault(
            self.participant,
            failure,
            Reset {
                realm: self.subdomain.clone(),
                wal: self.wal_name.clone(),
                snaps: self.snaps_name.clone(),
                seq,
                snapshot,
            },
        );
        Ok(())
    }

    /// Sequence number of the last record appended.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Appends one decision's changes (as record `last_seq() + 1`); returns the
    /// durability ticket to wait for. Refused while the store is failed.
    pub fn append(&mut self, changes: &[Change]) -> Result<u64, StorageError> {
        self.durability
            .check_writable()
            .map_err(|e| StorageError::Invalid(e.to_string()))?;
        let bytes = codec::encode_changes(changes)?;
        let seq = self.last_seq + 1;
        let (wal, _) = self.trees()?;
        if let Err(e) = wal.insert(seq.to_be_bytes(), bytes.as_slice()) {
            // sled keeps a failed write's error (a full disk met while writing out its
            // buffer): only the store's fault path (reset, reopen) writes again.
            self.durability.fail(format!(
                "cannot write the WAL of realm '{}' in {}: {e}",
                self.subdomain,
                self.durability.dir().display()
            ));
            return Err(e.into());
        }
        // In the tree first: a checkpoint that takes the journal's frame then flushes
        // a sled that holds the record.
        self.durability.journal(&self.subdomain, seq, bytes);
        self.last_seq = seq;
        self.appended.set(seq);
        Ok(self.durability.ticket())
    }

    /// Writes a snapshot of `realm` (covering every record so far) on this thread; see
    /// `SnapshotJob::run`.
    pub fn snapshot(&mut self, realm: &Realm) -> Result<(), StorageError> {
        self.snapshot_job()?.run(realm)
    }

    /// What a snapshot of the state after the last appended record needs, to be run on
    /// another thread from an immutable version of the realm.
    pub fn snapshot_job(&mut self) -> Result<SnapshotJob, StorageError> {
        let (wal, snaps) = self.trees()?;
        Ok(SnapshotJob {
            seq: self.last_seq,
            realm: self.subdomain.clone(),
            wal,
            snaps,
            failures: self.durability.failures(),
            durability: self.durability.clone(),
            messages: self.messages.clone(),
            hold: self.hold.clone(),
        })
    }

    /// Keeps the WAL records after `after` from being deleted by snapshots (`None`:
    /// lets them go again). A realm being moved holds the records since its archive's
    /// position until the tail is shipped.
    pub fn hold(&self, after: Option<u64>) {
        self.hold.store(after.unwrap_or(NO_HOLD), Ordering::SeqCst);
    }

    /// Appends WAL records shipped from another node (`wal_tail` there): each as the
    /// framed bytes that node stored, under the same sequence number. The first must
    /// follow this store's last record (a gap or an overlap is refused, nothing
    /// written); every record must decode. Flushed durably before it returns. Only for
    /// a realm no actor serves (a staged realm).
    pub fn append_shipped(&mut self, records: &[(u64, Vec<u8>)]) -> Result<u64, StorageError> {
        for (expected, (seq, bytes)) in (self.last_seq + 1..).zip(records) {
            if *seq != expected {
                return Err(StorageError::Invalid(format!(
                    "realm '{}': shipped record {seq} does not follow record {} (expected \
                     record {expected}): {}",
                    self.subdomain,
                    expected - 1,
                    if *seq < expected {
                        "an overlap"
                    } else {
                        "a gap"
                    }
                )));
            }
            codec::decode_changes(bytes).map_err(|e| {
                StorageError::Invalid(format!(
                    "realm '{}': shipped record {seq} does not decode: {e}",
                    self.subdomain
                ))
            })?;
        }
        self.durability
            .check_writable()
            .map_err(|e| StorageError::Invalid(e.to_string()))?;
        let (wal, _) = self.trees()?;
        let mut batch = sled::Batch::default();
        for (seq, bytes) in records {
            batch.insert(&seq.to_be_bytes(), bytes.as_slice());
        }
        wal.apply_batch(batch)?;
        if let Some((seq, _)) = records.last() {
            self.last_seq = *seq;
            self.appended.set(*seq);
        }
        self.durability.flush_now()?;
        Ok(self.last_seq)
    }

    /// Loads the newest readable snapshot and replays the WAL after it, then holds what
    /// it found against the manifest found at open (`integrity::judge`): a snapshot or
    /// record the manifest counts durable that is missing or does not decode, or a WAL
    /// gap, refuses with `StorageError::Damaged`. A record beyond the manifest's mark
    /// that does not decode (a torn tail) ends the log: it and everything after it are
    /// cut, with a warning.
    pub fn recover(&mut self) -> Result<Option<Recovered>, StorageError> {
        let (wal, snaps) = self.trees()?;
        let messages = self.messages.clone();
        let damaged = |expected: String, found: String| {
            StorageError::Damaged(Box::new(Damage {
                folder: self.durability.dir().to_path_buf(),
                realm: Some(self.subdomain.clone()),
                expected,
                found,
            }))
        };
        let scan = scan(&wal, &snaps, false, |r, c| messages.project(r, c, None))?;
        let mark = self.durability.marks().expected(&self.subdomain);
        let verdict = integrity::judge(&scan, mark);
        if let Some(problem) = verdict.problems.into_iter().next() {
            return Err(damaged(problem.expected, problem.found));
        }
        for (seq, e) in &scan.bad_snapshots {
            tracing::warn!("snapshot {seq} unreadable ({e}); an older one is used");
        }
        self.last_seq = scan.highest;
        if let Some(End::Unreadable(seq, e)) = &scan.end {
            tracing::warn!(
                "WAL record {seq} unreadable ({e}): a torn tail beyond the durable mark, \
                 cutting the log there ({} records)",
                scan.after_end
            );
            for key in wal.range(seq.to_be_bytes()..).keys() {
                wal.remove(key?)?;
            }
            self.durability.flush_now()?;
            self.last_seq = seq - 1;
        }
        self.appended.set(self.last_seq);
        if let Some(realm) = &scan.realm {
            // Rows of records beyond the WAL's end (lost with its unflushed tail) go:
            // what their edits replaced is put back, their sends' rows removed.
            self.messages.undo_after(scan.readable_upto)?;
            self.messages.purge_from(realm)?;
        }
        Ok(scan.realm.map(|realm| Recovered {
            realm,
            replayed: scan.replayed,
            cut: scan.after_end,
        }))
    }

    /// Makes `realm`, the state after record `seq`, this (empty) store's only content:
    /// a snapshot at `seq`, durable, and named by the manifest (`hearth recover`).
    pub fn install(&mut self, seq: u64, realm: &Realm) -> Result<(), StorageError> {
        self.last_seq = seq;
        self.snapshot(realm)?;
        self.appended.set(seq);
        Ok(())
    }

    /// Test and tooling hook: writes raw bytes as the next WAL record (a torn write).
    pub fn append_raw(&mut self, bytes: &[u8]) -> Result<(), StorageError> {
        let seq = self.last_seq + 1;
        let (wal, _) = self.trees()?;
        wal.insert(seq.to_be_bytes(), bytes)?;
        self.last_seq = seq;
        Ok(())
    }

    /// Number of WAL records currently stored.
    pub fn wal_len(&mut self) -> usize {
        self.trees().map(|(wal, _)| wal.len()).unwrap_or(0)
    }

    /// Number of snapshots currently stored.
    pub fn snapshot_count(&mut self) -> usize {
        self.trees().map(|(_, snaps)| snaps.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::realm::dev::dev_realm_changes;
    use crate::realm::UserChange;
    use crate::realm::{Change, Cx};
    use crate::storage::{DurabilityMode, Store};

    fn seeded() -> (tempfile::TempDir, Store, Vec<Change>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), DurabilityMode::Never).expect("open");
        let changes = dev_realm_changes(&mut Cx::seeded(1, 1)).expect("seed");
        (dir, store, changes)
    }

    #[test]
    fn replay_rebuilds_the_same_realm_and_cuts_a_torn_tail() {
        let (_dir, store, changes) = seeded();
        let mut rs = store.realm("zulip").expect("realm");
        for c in &changes {
            rs.append(std::slice::from_ref(c)).expect("append");
        }
        rs.append_raw(b"torn").expect("raw");
        rs.append(&changes[1..2]).expect("after the tear");
        let got = rs.recover().expect("recover").expect("realm");
        assert_eq!(got.replayed, changes.len() as u64);
        assert_eq!(got.cut, 2);
        let mut live = crate::realm::Realm::from_first_change(&changes[0]).expect("first");
        changes.iter().for_each(|c| live.apply(c));
        assert_eq!(got.realm, live);
        assert_eq!(rs.wal_len(), changes.len(), "the torn tail is deleted");
    }

    #[test]
    fn snapshot_then_replay_and_a_gap_is_refused() {
        let (_dir, store, changes) = seeded();
        let mut rs = store.realm("zulip").expect("realm");
        rs.append(&changes).expect("append");
        let mut live = crate::realm::Realm::from_first_change(&changes[0]).expect("first");
        changes.iter().for_each(|c| live.apply(c));
        rs.snapshot(&live).expect("snapshot");
        assert_eq!(rs.wal_len(), 0, "the snapshot replaces the WAL prefix");
        let later = Change::User(UserChange::CanCreateUsersSet {
            user_id: 10,
            value: true,
        });
        rs.append(std::slice::from_ref(&later)).expect("append");
        live.apply(&later);
        assert_eq!(rs.recover().expect("recover").expect("realm").realm, live);

        // An unreadable snapshot with its WAL prefix gone must not start on partial state.
        let (_, snaps) = rs.trees().expect("trees");
        let (newest, _) = snaps.last().expect("read").expect("a snapshot");
        snaps.insert(newest, b"garbage".to_vec()).expect("corrupt");
        let err = rs.recover().err().expect("refused").to_string();
        assert!(err.contains("WAL gap"), "{err}");
    }

    #[test]
    fn a_failing_blob_sync_fails_the_snapshot_and_keeps_the_wal() {
        let (dir, store, changes) = seeded();
        let mut rs = store.realm("zulip").expect("realm");
        rs.append(&changes).expect("append");
        let mut live = crate::realm::Realm::from_first_change(&changes[0]).expect("first");
        changes.iter().for_each(|c| live.apply(c));
        // The message database open first (its opening flushes the main one, which
        // syncs the blob files too).
        rs.messages().sync().expect("the message database opens");
        // A "blob" whose fsync fails (procfs files refuse fsync with EINVAL).
        let blobs = dir.path().join("blobs");
        std::fs::create_dir_all(&blobs).expect("blobs");
        std::os::unix::fs::symlink("/proc/self/status", blobs.join("unsyncable")).expect("symlink");
        // The flush syncs the blobs before sled's log (`folder::flush_durably`): the
        // failure comes back as sled's I/O error.
        let err = rs.snapshot(&live).expect_err("the snapshot fails");
        assert!(
            matches!(err, super::StorageError::Sled(sled::Error::Io(_))),
            "{err}"
        );
        assert_eq!(rs.wal_len(), 1, "no WAL prefix deleted");
        assert_eq!(store.durability.snapshot_counts(), (1, 1));
        std::fs::remove_file(blobs.join("unsyncable")).expect("rm");
        rs.snapshot(&live).expect("then it succeeds");
        assert_eq!(rs.wal_len(), 0);
        assert_eq!(rs.recover().expect("recover").expect("realm").realm, live);
    }

    #[test]
    fn a_snapshot_planned_before_a_fault_never_runs() {
        let (_dir, store, changes) = seeded();
        let mut rs = store.realm("zulip").expect("realm");
        rs.append(&changes).expect("append");
        let job = rs.snapshot_job().expect("job");
        store.durability.fail("test".into());
        assert!(rs.needs_reset());
        let live = crate::realm::Realm::from_first_change(&changes[0]).expect("first");
        assert!(job.run(&live).is_err());
        assert!(rs.append(&changes).is_err(), "writes are refused");
    }
}
