//! One realm's coalesced presence: a sled tree `presence:<subdomain>`, key the user id
//! (big-endian u64), value a `PresenceEntry` record (`codec::encode_presence`).
//!
//! Presence is soft state. Pings change it in memory only (`hub::presence`); what
//! changed is written here in the background, at most once a minute, and at a clean
//! shutdown. A `kill -9` loses at most the last minute of pings.

use std::sync::Arc;

use super::{codec, Durability, DurabilityMode, StorageError};
use crate::realm::presence::PresenceEntry;
use crate::realm::UserId;

/// The presence tree of one realm.
#[derive(Clone)]
pub struct PresenceTree {
    name: String,
    durability: Arc<Durability>,
}

impl PresenceTree {
    pub(super) fn new(name: String, durability: Arc<Durability>) -> Self {
        PresenceTree { name, durability }
    }

    /// The tree on the open database (opened again after a storage fault).
    fn tree(&self) -> Result<sled::Tree, StorageError> {
        let db = self.durability.db().ok_or_else(|| {
            StorageError::Invalid("the database is closed after a storage failure".into())
        })?;
        Ok(db.open_tree(&self.name)?)
    }

    /// Every stored entry. A record that does not decode is skipped with a warning:
    /// presence is soft, the user's next ping writes it again.
    /// A tree sled cannot read is `StorageError::Damaged`.
    pub fn load(&self) -> Result<Vec<(UserId, PresenceEntry)>, StorageError> {
        let mut out = Vec::new();
        for item in self.tree()?.iter() {
            let (k, v) = item.map_err(|e| {
                StorageError::Damaged(Box::new(super::Damage {
                    folder: self.durability.dir().to_path_buf(),
                    realm: self
                        .name
                        .strip_prefix(super::PRESENCE_PREFIX)
                        .map(str::to_owned),
                    expected: "its presence records readable".into(),
                    found: format!(
                        "the database cannot be read ({})",
                        super::integrity::describe(&e.into())
                    ),
                }))
            })?;
            let Ok(key) = <[u8; 8]>::try_from(k.as_ref()) else {
                tracing::warn!("presence: a record with a malformed key skipped");
                continue;
            };
            let user = u64::from_be_bytes(key);
            match codec::decode_presence(&v) {
                Ok(entry) => out.push((user, entry)),
                Err(e) => tracing::warn!("presence of user {user} unreadable ({e}): skipped"),
            }
        }
        Ok(out)
    }

    /// Writes these entries in one batch, then makes them durable (except in `never`
    /// mode, which fsyncs only at snapshots and shutdown). Runs off every request path.
    pub fn write(&self, entries: &[(UserId, PresenceEntry)]) -> Result<(), StorageError> {
        let mut batch = sled::Batch::default();
        for (user, entry) in entries {
            batch.insert(&user.to_be_bytes(), codec::encode_presence(entry)?);
        }
        self.tree()?.apply_batch(batch)?;
        if self.durability.mode() != DurabilityMode::Never {
            self.durability.flush_now()?;
        }
        Ok(())
    }
}
