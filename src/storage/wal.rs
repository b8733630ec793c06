//! One realm's WAL and snapshots.
//!
//! WAL key: big-endian u64 sequence number; value: the framed `Vec<Change>` of one
//! decision (so a decision is replayed whole or not at all). Snapshot key: the sequence
//! number of the last record it covers; value: the framed `Realm`.

use std::sync::Arc;

use super::{codec, Durability, StorageError};
use crate::realm::{Change, Realm};

/// Storage of one realm, owned by its actor.
pub struct RealmStore {
    wal: sled::Tree,
    snaps: sled::Tree,
    /// Sequence number of the last record appended (or covered by a snapshot).
    last_seq: u64,
    durability: Arc<Durability>,
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
        wal: sled::Tree,
        snaps: sled::Tree,
        durability: Arc<Durability>,
    ) -> Result<Self, StorageError> {
        let last_wal = wal.last()?.map(|(k, _)| key_seq(&k)).unwrap_or(0);
        let last_snap = snaps.last()?.map(|(k, _)| key_seq(&k)).unwrap_or(0);
        Ok(RealmStore {
            wal,
            snaps,
            last_seq: last_wal.max(last_snap),
            durability,
        })
    }

    pub fn durability(&self) -> &Arc<Durability> {
        &self.durability
    }

    /// Appends one decision's changes; returns the durability ticket to wait for.
    pub fn append(&mut self, changes: &[Change]) -> Result<u64, StorageError> {
        let bytes = codec::encode(&changes)?;
        let seq = self.last_seq + 1;
        self.wal.insert(seq.to_be_bytes(), bytes)?;
        self.last_seq = seq;
        Ok(self.durability.ticket())
    }

    /// Writes a snapshot of `realm` (covering every record so far), makes it durable,
    /// then deletes the WAL prefix and the older snapshots it replaces.
    pub fn snapshot(&mut self, realm: &Realm) -> Result<(), StorageError> {
        let seq = self.last_seq;
        self.snaps
            .insert(seq.to_be_bytes(), codec::encode(realm)?)?;
        self.durability.flush_now()?;
        for key in self.wal.range(..=seq.to_be_bytes()).keys() {
            self.wal.remove(key?)?;
        }
        for key in self.snaps.range(..seq.to_be_bytes()).keys() {
            self.snaps.remove(key?)?;
        }
        Ok(())
    }

    /// Loads the newest readable snapshot and replays the WAL after it. A record that
    /// does not decode ends the log: it and everything after it are cut, with a warning.
    pub fn recover(&mut self) -> Result<Option<Recovered>, StorageError> {
        let mut realm = None;
        let mut from = 0;
        for entry in self.snaps.iter().rev() {
            let (k, v) = entry?;
            match codec::decode::<Realm>(&v) {
                Ok(mut r) => {
                    r.rebuild_indexes();
                    realm = Some(r);
                    from = key_seq(&k);
                    break;
                }
                Err(e) => tracing::warn!(
                    "snapshot {} unreadable ({e}); trying an older one",
                    key_seq(&k)
                ),
            }
        }
        let (mut replayed, mut cut) = (0, 0);
        let mut bad_from = None;
        for entry in self.wal.range((from + 1).to_be_bytes()..) {
            let (k, v) = entry?;
            let seq = key_seq(&k);
            if bad_from.is_some() {
                cut += 1;
                continue;
            }
            match codec::decode::<Vec<Change>>(&v) {
                Ok(changes) => {
                    for c in &changes {
                        match &mut realm {
                            Some(r) => r.apply(c),
                            None => realm = Realm::from_first_change(c),
                        }
                    }
                    replayed += 1;
                }
                Err(e) => {
                    tracing::warn!("WAL record {seq} unreadable ({e}): cutting the log there");
                    bad_from = Some(seq);
                    cut += 1;
                }
            }
        }
        if let Some(seq) = bad_from {
            for key in self.wal.range(seq.to_be_bytes()..).keys() {
                self.wal.remove(key?)?;
            }
            self.durability.flush_now()?;
            self.last_seq = seq - 1;
        }
        Ok(realm.map(|realm| Recovered {
            realm,
            replayed,
            cut,
        }))
    }

    /// Test and tooling hook: writes raw bytes as the next WAL record (a torn write).
    pub fn append_raw(&mut self, bytes: &[u8]) -> Result<(), StorageError> {
        let seq = self.last_seq + 1;
        self.wal.insert(seq.to_be_bytes(), bytes)?;
        self.last_seq = seq;
        Ok(())
    }

    /// Number of WAL records currently stored.
    pub fn wal_len(&self) -> usize {
        self.wal.len()
    }
}

fn key_seq(k: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = k.len().min(8);
    b[8 - n..].copy_from_slice(&k[k.len() - n..]);
    u64::from_be_bytes(b)
}
