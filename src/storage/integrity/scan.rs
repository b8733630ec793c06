//! The reading of one realm's trees that start-up, `hearth check` and `hearth recover`
//! share: the newest snapshot that decodes, then the WAL records after it, and what
//! stopped it (`Scan`), for `judge` to hold against the manifest.

use super::damage::describe;
use crate::realm::{Change, Realm};
use crate::storage::codec;
use crate::storage::wal::key_seq;
use crate::storage::StorageError;

/// Why a realm's state stops before its last WAL record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// This record does not decode.
    Unreadable(u64, String),
    /// Record `expected` is missing; `found` follows.
    Gap { expected: u64, found: u64 },
}

/// What one realm's trees hold, as read by `scan`.
#[derive(Default)]
pub struct Scan {
    /// Snapshots present.
    pub snapshots: usize,
    /// Snapshots that do not decode (newest first).
    pub bad_snapshots: Vec<(u64, String)>,
    /// The newest snapshot that decodes: the state starts from it.
    pub base: Option<u64>,
    /// WAL records present, and how many of them a snapshot already covers.
    pub wal_records: usize,
    pub covered: usize,
    /// Records replayed on top of the base.
    pub replayed: u64,
    /// The last record the state includes.
    pub readable_upto: u64,
    /// Why the state stops before the last record, if it does.
    pub end: Option<End>,
    /// Records after the base not in the state (from the `end` on).
    pub after_end: u64,
    /// Records that do not decode, wherever they are.
    pub bad_records: Vec<(u64, String)>,
    /// The highest sequence number present in either tree.
    pub highest: u64,
    /// sled could not read a tree to its end (the scan of it stopped there).
    pub read_error: Option<String>,
    /// The state: the base snapshot and the records replayed on it.
    pub realm: Option<Realm>,
}

impl Scan {
    /// An entry of a tree being scanned; a read error ends the scan there (noted).
    fn readable(
        &mut self,
        entry: sled::Result<(sled::IVec, sled::IVec)>,
    ) -> Option<(sled::IVec, sled::IVec)> {
        entry
            .map_err(|e| self.read_error = Some(describe(&e.into())))
            .ok()
    }
}

/// Reads a realm's trees: the newest snapshot that decodes, then the WAL records after
/// it, in order, until one is missing or does not decode. `each` sees every replayed
/// change with the state before it (start-up projects message rows there); its error
/// is the only one returned: what sled cannot read ends the scan of that tree
/// (`read_error`).
/// `thorough`: also decode the older snapshots and the records a snapshot covers
/// (`hearth check`); start-up stops at the first snapshot that decodes and skips them.
pub fn scan(
    wal: &sled::Tree,
    snaps: &sled::Tree,
    thorough: bool,
    mut each: impl FnMut(&Realm, &Change) -> Result<(), StorageError>,
) -> Result<Scan, StorageError> {
    let mut scan = Scan::default();
    for entry in snaps.iter().rev() {
        let Some((k, v)) = scan.readable(entry) else {
            break;
        };
        let seq = key_seq(&k);
        scan.snapshots += 1;
        scan.highest = scan.highest.max(seq);
        if scan.realm.is_some() && !thorough {
            continue;
        }
        match codec::decode_realm(&v) {
            Ok(mut r) if scan.realm.is_none() => {
                r.rebuild_indexes();
                scan.realm = Some(r);
                scan.base = Some(seq);
            }
            Ok(_) => {}
            Err(e) => scan.bad_snapshots.push((seq, e.to_string())),
        }
    }
    let base = scan.base.unwrap_or(0);
    scan.readable_upto = base;
    let mut next = base + 1;
    for entry in wal.iter() {
        let Some((k, v)) = scan.readable(entry) else {
            break;
        };
        let seq = key_seq(&k);
        scan.wal_records += 1;
        scan.highest = scan.highest.max(seq);
        if seq <= base {
            scan.covered += 1;
            if thorough {
                if let Err(e) = codec::decode_changes(&v) {
                    scan.bad_records.push((seq, e.to_string()));
                }
            }
            continue;
        }
        let decoded = codec::decode_changes(&v);
        if let Err(e) = &decoded {
            scan.bad_records.push((seq, e.to_string()));
        }
        if scan.end.is_some() {
            scan.after_end += 1;
            continue;
        }
        if seq != next {
            scan.end = Some(End::Gap {
                expected: next,
                found: seq,
            });
            scan.after_end += 1;
            continue;
        }
        match decoded {
            Ok(changes) => {
                for c in &changes {
                    match &mut scan.realm {
                        Some(r) => {
                            each(r, c)?;
                            r.apply(c)
                        }
                        None => scan.realm = Realm::from_first_change(c),
                    }
                }
                scan.replayed += 1;
                scan.readable_upto = seq;
                next = seq + 1;
            }
            Err(e) => {
                scan.end = Some(End::Unreadable(seq, e.to_string()));
                scan.after_end += 1;
            }
        }
    }
    Ok(scan)
}
