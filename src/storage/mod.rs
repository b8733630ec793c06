//! Persistence: one sled database per server; per realm a WAL tree of decided changes,
//! a snapshots tree of whole realms and a tree of coalesced presence; uploaded files
//! beside it (`blobs`). See `design.md`, "Persistence".

pub mod blobs;
pub mod codec;
pub mod durability;
pub mod legacy;
pub mod messages;
pub mod presence;
pub mod uploads;
pub mod wal;

pub use durability::StorageFailed;
pub use durability::{Durability, DurabilityMode};
pub use wal::{RealmStore, SnapshotJob};

use std::path::Path;
use std::sync::Arc;

/// Errors of the storage layer; they reach a client only as a fixed 500.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("sled: {0}")]
    Sled(#[from] sled::Error),
    #[error("codec: {0}")]
    Codec(#[from] codec::CodecError),
    #[error("{0}")]
    Invalid(String),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// The server's database and its flusher. The database handle itself lives in
/// `Durability`, which closes and reopens it around a storage fault.
#[derive(Clone)]
pub struct Store {
    pub durability: Arc<Durability>,
}

const WAL_PREFIX: &str = "wal:";
const SNAP_PREFIX: &str = "snap:";
const PRESENCE_PREFIX: &str = "presence:";

impl Store {
    /// Opens (or creates) the database in `dir` and starts its flusher.
    pub fn open(dir: &Path, mode: DurabilityMode) -> Result<Store, StorageError> {
        // hearth decides when to flush (group commit); sled's own timer would only blur that.
        let db = sled::Config::new().path(dir).flush_every_ms(None).open()?;
        let durability = Durability::start(db.clone(), dir, mode)
            .map_err(|e| StorageError::Invalid(format!("cannot start the flusher: {e}")))?;
        Ok(Store { durability })
    }

    /// The open database (`None` while the store is failed).
    pub fn db(&self) -> Option<sled::Db> {
        self.durability.db()
    }

    /// Subdomains of the realms this database holds.
    pub fn realm_subdomains(&self) -> Vec<String> {
        let Some(db) = self.db() else {
            return Vec::new();
        };
        db.tree_names()
            .iter()
            .filter_map(|n| {
                std::str::from_utf8(n)
                    .ok()?
                    .strip_prefix(WAL_PREFIX)
                    .map(str::to_owned)
            })
            .collect()
    }

    /// The coalesced presence of one realm (see `storage::presence`).
    pub fn presence(&self, subdomain: &str) -> presence::PresenceTree {
        presence::PresenceTree::new(
            format!("{PRESENCE_PREFIX}{subdomain}"),
            self.durability.clone(),
        )
    }

    /// The content-addressed files of the data folder (custom emoji images).
    pub fn blobs(&self) -> blobs::Blobs {
        blobs::Blobs::new(self.durability.dir())
    }

    /// The WAL and snapshot trees of one realm.
    pub fn realm(&self, subdomain: &str) -> Result<RealmStore, StorageError> {
        RealmStore::new(
            format!("{WAL_PREFIX}{subdomain}"),
            format!("{SNAP_PREFIX}{subdomain}"),
            messages::MessageStore::new(subdomain, self.durability.clone()),
            self.durability.clone(),
        )
    }
}
