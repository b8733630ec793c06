//! Persistence: one sled database per server; per realm a WAL tree of decided changes,
//! a snapshots tree of whole realms and a tree of coalesced presence; beside it the
//! WAL's commit journal (`wal::journal`: what a group commit writes and `fdatasync`s,
//! read back into the WAL trees by every open, emptied by every full flush); the message
//! rows in a second sled database beside it (`messages`), opened in the background so
//! that their number does not hold up a start; uploaded files (attachments, custom emoji
//! images) beside both, one folder per realm (`uploads`). See `design.md`,
//! "Persistence".
//!
//! # Rooms
//!
//! Each folder is one mechanism, and imports go one way, from the top down:
//!
//! - this file: `Store`, the open of a data folder's databases and what spans them
//!   (realms present, the remains of an unfinished import, a WAL tail); `realm`: one
//!   realm's store (`RealmStore`: WAL, snapshots, holds, shipping, recovery), which
//!   composes the rooms below; `staging` (imports staged and realms dropped) and
//!   `presence` (coalesced presence) beside it.
//! - `messages/`: the message database, its rows and its search index; calls `wal`
//!   (the flusher's marks, the main database), `codec` and `folder`.
//! - `integrity/`: the shared reading of a realm's trees, the judge, the damage report;
//!   calls `wal` and `codec`.
//! - `wal/`: records, the commit journal, group commit and the flusher, faults, the
//!   manifest; calls `codec` and `folder` only, and reaches the message database
//!   through the `wal::SyncedFirst` port it defines.
//! - `archive` (the realm archive's file format, framed by `codec`) and `uploads`
//!   (uploaded files, one folder per realm).
//! - `codec/` and `folder` (sled's configuration, making what sled holds durable, the
//!   refusals of an open): the ground, calling no other room.
//!
//! # Integrity: corruption is never silent
//!
//! sled checksums its log, and on open it stops at the first message that fails: a few
//! flipped bytes in the middle of its file silently drop everything written after them,
//! whole trees included. hearth's own frames (`codec`) catch a damaged record, but not
//! one that is simply gone. So the data folder holds, beside the database, a manifest
//! (`wal::manifest`): per realm, the last WAL record and the newest snapshot known durable.
//! It is written atomically (temporary file, fsync, rename, fsync of the folder) when a
//! snapshot is durable, at clean shutdown, at the end of each start, and by the flusher
//! at most once a second when its marks moved; a mark only ever names what a finished
//! flush covered, so the manifest may lag the store, never lead it.
//!
//! On start, every realm is held against it (`integrity::judge`, on what `integrity::scan`
//! read): a realm the manifest names but the database lacks, a snapshot or WAL record
//! at or below the mark that is missing or does not decode, a WAL gap, or a store
//! behind its mark refuses the start with one line naming the folder, the realm, what
//! was expected and what was found, and what to do (`StorageError::Damaged`). A torn
//! tail beyond the mark (what `kill -9` can leave) is still cut with a warning. A
//! corrupt manifest refuses too; a missing one is fine only for a folder from before
//! manifests (the database's marker says whether one was ever written), which gets one.
//!
//! The message database (`messages`) is a second sled database with the same blind
//! spot, and it opens after the start: it counts its syncs (one before each snapshot),
//! the manifest records the count, and an opening that finds fewer than the manifest
//! counts fails the message store (message reads answer 503, `/health/ready` says why)
//! instead of serving what is left. A folder whose main database says it has a message
//! database that is not there is refused at start.
//!
//! Offline, `hearth check` runs the same judgement over a scratch copy of the database,
//! decodes every snapshot, record, message row and presence record, and hashes the
//! uploaded files; `hearth recover --accept-loss` rebuilds the folder from the newest
//! consistent state it can read, keeps the damaged one beside it, and says what was lost
//! (both are operator commands, above storage: `ops::check`, `ops::recover`).

pub mod archive;
pub mod codec;
pub mod folder;
pub mod integrity;
pub mod messages;
pub mod presence;
pub mod realm;
pub mod staging;
pub mod uploads;
pub mod wal;

pub use folder::{open_error, FolderError};
pub use integrity::Damage;
pub use realm::{RealmStore, SnapshotJob};
pub use wal::{Durability, DurabilityMode, StorageFailed};

use std::path::Path;
use std::sync::Arc;

use messages::MessageDb;
use wal::{journal, manifest};

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
    /// The folder does not hold what its manifest says (see the module doc).
    #[error("{0}")]
    Damaged(Box<Damage>),
}

/// The server's database and its flusher, and the message database. The database
/// handle itself lives in `Durability`, which closes and reopens it around a storage
/// fault.
#[derive(Clone)]
pub struct Store {
    pub durability: Arc<Durability>,
    /// The message database, opened in the background (`messages`).
    messages: Arc<MessageDb>,
}

pub(crate) const WAL_PREFIX: &str = "wal:";
pub(crate) const SNAP_PREFIX: &str = "snap:";
pub(crate) const PRESENCE_PREFIX: &str = "presence:";

impl Store {
    /// Opens (or creates) the database in `dir`, reads its manifest, and starts its
    /// flusher. A corrupt manifest, or a missing one the database says was written, or
    /// a database sled reports corrupt, is `StorageError::Damaged`.
    pub fn open(dir: &Path, mode: DurabilityMode) -> Result<Store, StorageError> {
        let damaged = |expected: &str, found: String| {
            StorageError::Damaged(Box::new(Damage {
                folder: dir.to_path_buf(),
                realm: None,
                expected: expected.to_owned(),
                found,
            }))
        };
        // hearth decides when to flush (group commit); sled's own timer would only blur that.
        let db = match folder::open_db(dir, None) {
            Ok(db) => db,
            Err(
                e @ (sled::Error::Corruption { .. }
                | sled::Error::ReportableBug(_)
                | sled::Error::Unsupported(_)),
            ) => {
                return Err(damaged(
                    "a database sled can open",
                    format!("sled refuses it ({})", integrity::describe(&e.into())),
                ))
            }
            Err(e) => return Err(e.into()),
        };
        let found =
            manifest::read(dir).map_err(|e| damaged("a readable manifest", e.to_string()))?;
        if found.is_none() && manifest::has_marker(&db)? {
            return Err(damaged(
                &format!("the manifest {}", manifest::path(dir).display()),
                "none, though the database says one was written".into(),
            ));
        }
        if found.is_none()
            && db
                .tree_names()
                .iter()
                .any(|n| n.starts_with(WAL_PREFIX.as_bytes()))
        {
            tracing::info!(
                "{} has no manifest (it was made before manifests): writing one once every \
                 realm is recovered",
                dir.display()
            );
        }
        messages::finish_swap(dir).map_err(|e| {
            damaged(
                &format!(
                    "the message database {} swapped in",
                    dir.join(messages::FOLDER).display()
                ),
                e.to_string(),
            )
        })?;
        if messages::has_marker(&db)? && !messages::exists(dir) {
            return Err(damaged(
                &format!(
                    "the message database {}",
                    dir.join(messages::FOLDER).display()
                ),
                "none, though the database says the folder keeps its messages there".into(),
            ));
        }
        // What the journal made durable since the last checkpoint goes into the WAL
        // trees, durably, before anything reads them and before the journal is emptied
        // (`Durability::start`).
        let replayed = journal::replay(&db, dir)?;
        if let Some(why) = replayed.damaged {
            return Err(damaged(
                &format!(
                    "a journal ({}) whose frames all decode",
                    dir.join(journal::JOURNAL_FILE).display()
                ),
                format!("{why}, with a later commit's frames after it"),
            ));
        }
        if replayed.records > 0 || replayed.torn.is_some() {
            folder::flush_durably(&db, dir)?;
            tracing::info!(
                "the journal held {} WAL records ({} not yet in the database){}",
                replayed.records,
                replayed.written,
                replayed
                    .torn
                    .as_deref()
                    .map(|t| format!("; it ends in {t} (what a crash during a write leaves)"))
                    .unwrap_or_default()
            );
        }
        let messages = MessageDb::new(dir);
        let durability = Durability::start(db.clone(), dir, mode, found, messages.clone())
            .map_err(|e| StorageError::Invalid(format!("cannot start the flusher: {e}")))?;
        messages.open_in_background(durability.clone());
        Ok(Store {
            durability,
            messages,
        })
    }

    /// Checks that every realm the manifest names is in the database: one that is not
    /// was lost whole (and must not be seeded or created again in its place).
    pub fn verify_realms(&self) -> Result<(), StorageError> {
        let present = self.realm_subdomains();
        let Some(manifest) = self.durability.marks().loaded() else {
            return Ok(());
        };
        for (realm, mark) in &manifest.realms {
            if mark.last_seq > 0 && !present.contains(realm) {
                return Err(StorageError::Damaged(Box::new(Damage {
                    folder: self.durability.dir().to_path_buf(),
                    realm: Some(realm.clone()),
                    expected: format!("records up to {} (the manifest)", mark.last_seq),
                    found: "no trace of the realm in the database".into(),
                })));
            }
        }
        Ok(())
    }

    /// Makes what start-up read durable and writes the manifest with it (a folder from
    /// before manifests gets its first one here).
    pub fn write_manifest(&self) -> Result<(), StorageError> {
        self.durability.flush_now()?;
        self.durability
            .marks()
            .write_now(self.durability.dir(), self.db().as_ref())?;
        Ok(())
    }

    /// The message database of this data folder.
    pub fn message_db(&self) -> &Arc<MessageDb> {
        &self.messages
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

    /// The message store of one realm (also of one not served: an import writes it
    /// before the realm is loaded).
    pub fn messages(&self, subdomain: &str) -> messages::MessageStore {
        messages::MessageStore::new(subdomain, self.messages.clone())
    }

    /// Removes what a realm that does not exist (no WAL tree) left behind: an import cut
    /// short by a crash writes its snapshot and presence trees, message rows and files
    /// before the WAL tree that makes the realm exist. Called before a realm of that
    /// name is imported or created, so none starts with another's remains. Refuses a
    /// realm that exists.
    pub fn discard_remains(&self, subdomain: &str) -> Result<(), StorageError> {
        let db = self.db().ok_or_else(|| {
            StorageError::Invalid("the database is closed after a storage failure".into())
        })?;
        let wal = format!("{WAL_PREFIX}{subdomain}");
        if db.tree_names().iter().any(|n| n.as_ref() == wal.as_bytes()) {
            return Err(StorageError::Invalid(format!(
                "realm '{subdomain}' exists: its data is not discarded"
            )));
        }
        let names = [
            format!("{SNAP_PREFIX}{subdomain}"),
            format!("{PRESENCE_PREFIX}{subdomain}"),
        ];
        // An import creates the presence tree first, durably: without it or a
        // snapshot tree nothing was begun (and the message database is not waited for).
        let trees = db.tree_names();
        if !names
            .iter()
            .any(|name| trees.iter().any(|n| n.as_ref() == name.as_bytes()))
        {
            return Ok(());
        }
        tracing::warn!("removing the remains of an unfinished import of realm '{subdomain}'");
        let messages = self.messages(subdomain);
        messages.clear()?;
        messages.sync()?;
        let dir = uploads::UploadStore::new(self.durability.dir()).realm_dir(subdomain);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        // The presence tree, the mark of a begun import, goes last.
        for name in names {
            db.drop_tree(name.as_bytes())?;
        }
        self.durability.flush_now()?;
        Ok(())
    }

    /// The WAL records of `subdomain` after record `after`, up to the last one known
    /// durable, as stored (see `wal::tail`); and that last durable record.
    pub fn wal_tail(
        &self,
        subdomain: &str,
        after: u64,
    ) -> Result<(wal::Records, u64), StorageError> {
        let db = self
            .db()
            .ok_or_else(|| StorageError::Invalid("the database is closed".into()))?;
        let name = format!("{WAL_PREFIX}{subdomain}");
        if !db.tree_names().iter().any(|n| n == name.as_bytes()) {
            return Err(StorageError::Invalid(format!(
                "no realm '{subdomain}' here"
            )));
        }
        let upto = self
            .durability
            .marks()
            .durable()
            .get(subdomain)
            .map_or(0, |m| m.last_seq);
        let records = wal::tail(&db.open_tree(name)?, after, upto)?;
        Ok((records, upto))
    }

    /// The WAL and snapshot trees of one realm.
    pub fn realm(&self, subdomain: &str) -> Result<RealmStore, StorageError> {
        RealmStore::new(
            subdomain,
            format!("{WAL_PREFIX}{subdomain}"),
            format!("{SNAP_PREFIX}{subdomain}"),
            messages::MessageStore::new(subdomain, self.messages.clone()),
            self.durability.clone(),
        )
    }
}
