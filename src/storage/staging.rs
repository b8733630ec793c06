//! Which realms of the database this node does not serve: realms *staged* here (being
//! moved in: present, written to, never loaded at start) and realms *dropped* from here
//! (moved out: being removed).
//!
//! Both are markers in the main database's meta tree (`hearth:meta`), flushed durably
//! before the call returns:
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `staged:<subdomain>` | `[1]` (format 1) | not loaded at start; `activate` loads it |
//! | `dropped:<subdomain>` | `[1]` (format 1) | its data is being removed; a start finishes the removal |
//! | `frozen:<subdomain>` | `[1]` (format 1) | in a write freeze (a move out under way); a start freezes it again |
//!
//! A restart in the middle of a move thus never serves a realm on two nodes: the target
//! holds it staged until it is activated, and the source, once the realm is dropped,
//! never loads it again, even if a crash cut the removal short.
//!
//! The value is a format byte; a later format may add fields after it, and a reader of
//! this one ignores them.

use std::path::Path;

use super::messages::MessageDb;
use super::wal::manifest::META_TREE;
use super::{messages, StorageError, Store, PRESENCE_PREFIX, SNAP_PREFIX, WAL_PREFIX};

const STAGED: &str = "staged:";
const DROPPED: &str = "dropped:";
const FROZEN: &str = "frozen:";
/// The format byte of both markers.
const MARKER_FORMAT: u8 = 1;

/// The meta key of a marker.
fn key(prefix: &str, subdomain: &str) -> Vec<u8> {
    format!("{prefix}{subdomain}").into_bytes()
}

impl Store {
    fn meta(&self) -> Result<sled::Tree, StorageError> {
        let db = self
            .db()
            .ok_or_else(|| StorageError::Invalid("the database is closed".into()))?;
        Ok(db.open_tree(META_TREE)?)
    }

    fn set_marker(&self, prefix: &str, subdomain: &str, on: bool) -> Result<(), StorageError> {
        let meta = self.meta()?;
        if on {
            meta.insert(key(prefix, subdomain), &[MARKER_FORMAT][..])?;
        } else {
            meta.remove(key(prefix, subdomain))?;
        }
        self.durability.flush_now()?;
        Ok(())
    }

    fn markers(&self, prefix: &str) -> Vec<String> {
        let Ok(meta) = self.meta() else {
            return Vec::new();
        };
        meta.scan_prefix(prefix.as_bytes())
            .keys()
            .filter_map(|k| {
                let k = k.ok()?;
                let s = std::str::from_utf8(&k).ok()?;
                s.strip_prefix(prefix).map(str::to_owned)
            })
            .collect()
    }

    /// Marks `subdomain` staged: kept, written to by `RealmStore::append_shipped`,
    /// never loaded at start. Durable when this returns. The realm archive's import
    /// calls it before it writes the realm's first tree.
    pub fn stage(&self, subdomain: &str) -> Result<(), StorageError> {
        self.set_marker(STAGED, subdomain, true)
    }

    /// Takes the staged mark away (the realm is then loaded at every start). Durable
    /// when this returns.
    pub fn unstage(&self, subdomain: &str) -> Result<(), StorageError> {
        self.set_marker(STAGED, subdomain, false)
    }

    /// Whether `subdomain` is staged here.
    pub fn is_staged(&self, subdomain: &str) -> bool {
        self.meta()
            .and_then(|m| Ok(m.contains_key(key(STAGED, subdomain))?))
            .unwrap_or(false)
    }

    /// The staged realms.
    pub fn staged_realms(&self) -> Vec<String> {
        self.markers(STAGED)
    }

    /// Marks `subdomain` frozen (`on`) or not, durably: a freeze outlives a restart of
    /// the node, so a realm whose move is under way never takes a write here again
    /// until the move ends or is undone (`POST /admin/unfreeze`).
    pub fn mark_frozen(&self, subdomain: &str, on: bool) -> Result<(), StorageError> {
        self.set_marker(FROZEN, subdomain, on)
    }

    /// The realms a start puts back into their write freeze.
    pub fn frozen_realms(&self) -> Vec<String> {
        self.markers(FROZEN)
    }

    /// The realms whose removal a crash cut short (see `drop_realm`).
    pub fn dropped_realms(&self) -> Vec<String> {
        self.markers(DROPPED)
    }

    /// The realms a start loads: those in the database, less staged and dropped ones.
    pub fn served_subdomains(&self) -> Vec<String> {
        let staged = self.staged_realms();
        let dropped = self.dropped_realms();
        self.realm_subdomains()
            .into_iter()
            .filter(|s| !staged.contains(s) && !dropped.contains(s))
            .collect()
    }

    /// Removes a realm's data from this folder: first a durable `dropped:` marker (so a
    /// crash midway never brings the realm back), then its WAL, snapshots, presence and
    /// message trees and its uploaded files, its marks in the manifest, and last the
    /// marker. Its actor must be stopped. Running it again (start-up does, for a marker
    /// it finds) finishes what a crash left.
    pub fn drop_realm(&self, subdomain: &str, uploads_dir: &Path) -> Result<(), StorageError> {
        self.set_marker(DROPPED, subdomain, true)?;
        self.set_marker(STAGED, subdomain, false)?;
        self.set_marker(FROZEN, subdomain, false)?;
        let db = self
            .db()
            .ok_or_else(|| StorageError::Invalid("the database is closed".into()))?;
        for prefix in [WAL_PREFIX, SNAP_PREFIX, PRESENCE_PREFIX] {
            db.drop_tree(format!("{prefix}{subdomain}").as_bytes())?;
        }
        drop_message_trees(self.message_db(), subdomain)?;
        match std::fs::remove_dir_all(uploads_dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
        self.durability.marks().forget(subdomain);
        self.durability.flush_now()?;
        self.durability
            .marks()
            .write_now(self.durability.dir(), Some(&db))?;
        self.set_marker(DROPPED, subdomain, false)
    }
}

/// Drops a realm's message trees and makes that durable.
fn drop_message_trees(db: &MessageDb, subdomain: &str) -> Result<(), StorageError> {
    db.drop_realm(&messages::tree_names(subdomain))?;
    db.sync()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{DurabilityMode, Store};
    use super::*;

    #[test]
    fn marker_bytes_are_stable() {
        // Golden: the stored form of both markers (format 1).
        assert_eq!(key(STAGED, "acme"), b"staged:acme".to_vec());
        assert_eq!(key(DROPPED, ""), b"dropped:".to_vec());
        assert_eq!(MARKER_FORMAT, 1);
    }

    #[test]
    fn staged_realms_are_not_served_and_a_dropped_one_is_gone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), DurabilityMode::Never).expect("open");
        for s in ["acme", "beta", ""] {
            drop(store.realm(s).expect("realm"));
        }
        store.stage("acme").expect("stage");
        assert!(store.is_staged("acme"));
        assert_eq!(store.staged_realms(), vec!["acme".to_owned()]);
        let mut served = store.served_subdomains();
        served.sort();
        assert_eq!(served, vec!["".to_owned(), "beta".to_owned()]);
        store.unstage("acme").expect("unstage");
        assert!(!store.is_staged("acme"));
        store
            .drop_realm("beta", &dir.path().join("uploads/realm-62657461"))
            .expect("drop");
        let mut left = store.realm_subdomains();
        left.sort();
        assert_eq!(left, vec!["".to_owned(), "acme".to_owned()]);
        assert!(store.dropped_realms().is_empty());
    }
}
