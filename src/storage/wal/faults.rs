//! Storage faults: the failed store, the realm stores' resets, and the recovery.
//!
//! A flush that fails is retried a bounded number of times; then the store is *failed*
//! (like fjall's `Poisoned`): every waiting and later writer gets `StorageFailed` at
//! once, nothing more becomes visible, and the database handle is closed (sled keeps a
//! failed write's error forever, so only a reopened database can write again).
//!
//! Each realm store then *resets*: its actor drops the decisions that never became
//! durable, goes back to the published (durable) version, and hands a snapshot of that
//! state to `acknowledge_fault`. While failed, the flusher probes every
//! `PROBE_PERIOD`: once every realm store acknowledged, it reopens the database, checks
//! that a flush succeeds (space came back), removes the WAL records and snapshots the
//! failed decisions left behind, writes the reset snapshots, flushes, and only then
//! clears the failure. The tickets of the dropped decisions are *dead*: they never
//! count as durable, so no waiter is told `success` for them and no release shows them.

use std::io;
use std::sync::atomic::Ordering;

use super::durability::{Durability, Reset};
use crate::locks::{lock, write};
use crate::storage::folder::flush_durably;

impl Durability {
    /// Marks the store failed and closes the database: waiting writers are answered
    /// with the error, realm stores are asked to reset (see the module doc).
    pub fn fail(&self, why: String) {
        tracing::error!("storage failed, refusing writes until it recovers: {why}");
        {
            let mut failed = lock(&self.failed);
            if failed.is_some() {
                return;
            }
            *failed = Some(why);
        }
        *write(&self.db) = None;
        self.failures.send_modify(|n| *n += 1);
    }

    /// Clears a failure: writes are accepted again. Every ticket handed out before is
    /// settled: the ones not durable yet are dead (their decisions were reset).
    pub fn clear_failure(&self) {
        let mut failed = lock(&self.failed);
        if failed.is_none() {
            return;
        }
        let upto = self.written.load(Ordering::SeqCst);
        let after = *self.durable.borrow();
        if upto > after {
            lock(&self.dead).push((after, upto));
        }
        self.durable.send_modify(|d| *d = (*d).max(upto));
        self.visible.send_modify(|v| *v = (*v).max(upto));
        *failed = None;
        tracing::info!("storage recovered: writes are accepted again");
    }

    /// Whether `ticket` belongs to a decision dropped by a fault.
    pub fn is_dead(&self, ticket: u64) -> bool {
        lock(&self.dead)
            .iter()
            .any(|&(after, upto)| ticket > after && ticket <= upto)
    }

    /// Registers a realm store: a failure is cleared only after each one reset.
    pub(in crate::storage) fn join(&self) -> u64 {
        let mut p = lock(&self.participants);
        p.next_id += 1;
        let id = p.next_id;
        p.live.insert(id, None);
        id
    }

    /// A realm store is gone (its actor stopped): nothing to wait for.
    pub(in crate::storage) fn leave(&self, id: u64) {
        lock(&self.participants).live.remove(&id);
    }

    /// A realm store went back to its durable state after failure number `failure`.
    pub(in crate::storage) fn acknowledge_fault(&self, id: u64, failure: u64, reset: Reset) {
        if let Some(slot) = lock(&self.participants).live.get_mut(&id) {
            *slot = Some((failure, reset));
        }
    }

    /// One recovery attempt of a failed store (see the module doc). Returns whether
    /// the store accepts writes again.
    pub fn try_recover(&self) -> bool {
        let failure = self.failures();
        if self.failure().is_none() {
            return true;
        }
        let resets: Vec<Reset> = {
            let p = lock(&self.participants);
            let mut resets = Vec::with_capacity(p.live.len());
            for slot in p.live.values() {
                match slot {
                    Some((f, reset)) if *f == failure => resets.push(reset.clone()),
                    // A realm has not reset yet: its actor still holds the old database.
                    _ => return false,
                }
            }
            resets
        };
        // The reset snapshots cover records whose message rows must then be on disk, as
        // before any snapshot (`messages`); until that database is open (or while it
        // is failed) the store stays failed.
        if !self.messages.is_open() {
            tracing::debug!("storage recovery waits for the message database");
            return false;
        }
        match self.messages.sync() {
            Ok(n) => self.marks.messages_synced(n),
            Err(e) => {
                tracing::warn!("storage still failing: the message database: {e}");
                return false;
            }
        }
        // The manifest goes back first: a crash before the resets are durable then
        // finds the store ahead of it, never behind.
        for reset in &resets {
            self.marks.lower(&reset.realm, reset.seq);
        }
        if self.marks.write_now(&self.dir, None).is_err() {
            return false;
        }
        match self.reopen_and_reset(&resets) {
            Ok(db) => {
                for reset in &resets {
                    self.marks.snapshot_durable(&reset.realm, reset.seq);
                }
                let _ = self.marks.write_now(&self.dir, Some(&db));
                let mut slot = write(&self.db);
                if self.failures() != failure {
                    return false;
                }
                *slot = Some(db);
                drop(slot);
                self.clear_failure();
                true
            }
            Err(e) => {
                tracing::warn!("storage still failing: {e}");
                false
            }
        }
    }

    /// Reopens the database and writes the resets, durably; the database is dropped
    /// again (closed) on any error.
    fn reopen_and_reset(&self, resets: &[Reset]) -> Result<sled::Db, sled::Error> {
        let db = crate::storage::folder::open_db(&self.dir, None)?;
        let probe = db.open_tree("hearth:probe")?;
        probe.insert("probe", &self.failures().to_be_bytes())?;
        flush_durably(&db, &self.dir)?;
        // The journal holds what was acknowledged since the last checkpoint (the failed
        // instance never flushed it) and maybe records of the failed decisions: a reset
        // marker per realm, then a replay into the reopened database, keeps the first
        // and drops the second, at any crash point (`wal::journal`).
        let markers: Vec<(String, u64)> = resets.iter().map(|r| (r.realm.clone(), r.seq)).collect();
        self.journal.write_resets(&markers)?;
        super::journal::replay(&db, &self.dir)
            .map_err(|e| sled::Error::Io(io::Error::other(e.to_string())))?;
        for reset in resets {
            let wal = db.open_tree(&reset.wal)?;
            let snaps = db.open_tree(&reset.snaps)?;
            // First what the failed decisions may have left on disk, then the rest.
            for key in wal.range((reset.seq + 1).to_be_bytes()..).keys() {
                wal.remove(key?)?;
            }
            for key in snaps.range((reset.seq + 1).to_be_bytes()..).keys() {
                snaps.remove(key?)?;
            }
            snaps.insert(reset.seq.to_be_bytes(), reset.snapshot.as_slice())?;
            for key in wal.iter().keys() {
                wal.remove(key?)?;
            }
            for key in snaps.range(..reset.seq.to_be_bytes()).keys() {
                snaps.remove(key?)?;
            }
        }
        flush_durably(&db, &self.dir)?;
        self.journal.tail().clear()?;
        Ok(db)
    }
}

#[cfg(test)]
mod tests {
    use crate::realm::dev::dev_realm_changes;
    use crate::realm::{Cx, Realm};
    use crate::storage::{DurabilityMode, Store};

    #[test]
    fn a_fault_resets_realms_and_the_store_recovers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), DurabilityMode::Never).expect("open");
        let d = store.durability.clone();
        // A recovery waits for the message database (it syncs it first).
        store.message_db().db().expect("the message database opens");
        let changes = dev_realm_changes(&mut Cx::seeded(1, 1)).expect("seed");
        let mut realm = Realm::from_first_change(&changes[0]).expect("first");
        changes.iter().for_each(|c| realm.apply(c));
        let mut rs = store.realm("zulip").expect("realm");
        rs.append(&changes).expect("durable record");
        d.flush_now().expect("flush");
        let durable_seq = rs.last_seq();
        let t = rs
            .append(&changes[..1])
            .expect("a record that will be dropped");
        d.fail("disk full".into());
        assert!(d.db().is_none(), "the database is closed");
        assert!(!d.try_recover(), "not before every realm reset");
        rs.reset(durable_seq, &realm).expect("reset");
        assert!(d.try_recover(), "recovers once every realm reset");
        assert!(d.failure().is_none());
        assert!(
            d.is_dead(t),
            "the dropped record's ticket never counts as durable"
        );
        assert_eq!(rs.wal_len(), 0, "the reset snapshot replaced the WAL");
        assert_eq!(rs.snapshot_count(), 1);
        assert_eq!(rs.recover().expect("recover").expect("realm").realm, realm);
        let next = rs.append(&changes[..1]).expect("writes again");
        assert!(!d.is_dead(next));
        assert_eq!(rs.last_seq(), durable_seq + 1);
    }
}
