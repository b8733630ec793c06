//! Uploaded files: content-addressed under the data folder, one folder per realm:
//! `<data>/uploads/realm-<hex of the subdomain>/<sha256>`. Never in the WAL or in
//! snapshots; the realm keeps their metadata (`realm::attachments`).
//!
//! An upload streams into `<data>/uploads/tmp/`, hashing as it goes; once whole it is
//! fsynced, renamed to its hash (its folder fsynced too) and only then recorded by the
//! realm. Removing a file happens after the change that dropped its last attachment is
//! durable, and only if no attachment of the realm and no upload under way names it
//! (`in_flight`), so a concurrent upload of the same bytes never loses its file. The
//! sweep also removes stray files (a crash between writing and recording, or between a
//! removal and the file's deletion) and leftovers in `tmp/`.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use sha2::{Digest, Sha256};

/// The upload folders of one server.
#[derive(Debug)]
pub struct UploadStore {
    root: PathBuf,
    /// Files being uploaded (path -> uploads under way), which no removal may touch.
    in_flight: Mutex<HashMap<PathBuf, usize>>,
}

/// A file being received: written to a temporary file and hashed as it arrives.
pub struct Incoming {
    file: File,
    path: PathBuf,
    hasher: Sha256,
    size: u64,
    done: bool,
}

impl Incoming {
    pub fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        self.file.write_all(chunk)?;
        self.hasher.update(chunk);
        self.size += chunk.len() as u64;
        Ok(())
    }

    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// A stored file that an upload still holds: no removal may delete it until this is
/// dropped (after the realm recorded the upload, or gave up).
pub struct Held {
    store: Arc<UploadStore>,
    path: PathBuf,
    pub sha256: String,
    pub size: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut inflight = self.store.lock();
        if let Some(n) = inflight.get_mut(&self.path) {
            *n -= 1;
            if *n == 0 {
                inflight.remove(&self.path);
            }
        }
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

impl UploadStore {
    /// The store under `data` (its folders are created when first needed).
    pub fn new(data: &Path) -> UploadStore {
        UploadStore {
            root: data.join("uploads"),
            in_flight: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<PathBuf, usize>> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// The folder of one realm's files.
    pub fn realm_dir(&self, subdomain: &str) -> PathBuf {
        self.root.join(format!("realm-{}", hex::encode(subdomain)))
    }

    /// Where a realm's file with this hash lives.
    pub fn file_path(&self, subdomain: &str, sha256: &str) -> PathBuf {
        self.realm_dir(subdomain).join(sha256)
    }

    /// Starts receiving a file.
    pub fn incoming(&self, random: [u8; 16]) -> io::Result<Incoming> {
        let dir = self.tmp_dir();
        fs::create_dir_all(&dir)?;
        let path = dir.join(hex::encode(random));
        let file = File::create(&path)?;
        Ok(Incoming {
            file,
            path,
            hasher: Sha256::new(),
            size: 0,
            done: false,
        })
    }

    /// Makes a received file durable under its hash in the realm's folder, and holds it
    /// until the realm has recorded it (see `Held`).
    pub fn store(self: &Arc<Self>, subdomain: &str, mut incoming: Incoming) -> io::Result<Held> {
        incoming.file.sync_all()?;
        let sha256 = hex::encode(incoming.hasher.clone().finalize());
        let dir = self.realm_dir(subdomain);
        fs::create_dir_all(&dir)?;
        let path = dir.join(&sha256);
        *self.lock().entry(path.clone()).or_insert(0) += 1;
        let held = Held {
            store: self.clone(),
            path: path.clone(),
            sha256,
            size: incoming.size,
        };
        if path.is_file() {
            fs::remove_file(&incoming.path)?;
        } else {
            fs::rename(&incoming.path, &path)?;
            sync_dir(&dir)?;
            if let Some(root) = dir.parent() {
                sync_dir(root)?;
            }
        }
        incoming.done = true;
        Ok(held)
    }

    /// Removes a realm's files that `referenced` says no attachment names any more and
    /// no upload holds; `referenced` is asked under the store's lock, which an upload
    /// takes to release its hold. Returns how many were removed.
    pub fn remove_unreferenced(
        &self,
        subdomain: &str,
        shas: &[String],
        referenced: impl Fn(&str) -> bool,
    ) -> usize {
        let inflight = self.lock();
        let mut removed = 0;
        for sha in shas {
            let path = self.file_path(subdomain, sha);
            if referenced(sha) || inflight.contains_key(&path) {
                continue;
            }
            match fs::remove_file(&path) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!("cannot remove upload {}: {e}", path.display()),
            }
        }
        removed
    }

    /// Removes stray files: a realm's files no attachment names (and no upload holds),
    /// and temporary files older than `tmp_age`. Returns how many were removed.
    pub fn remove_strays(
        &self,
        subdomain: &str,
        referenced: impl Fn(&str) -> bool,
        tmp_age: std::time::Duration,
    ) -> usize {
        let mut removed = 0;
        if let Ok(entries) = fs::read_dir(self.realm_dir(subdomain)) {
            let names: Vec<String> = entries
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .collect();
            removed += self.remove_unreferenced(subdomain, &names, referenced);
        }
        if let Ok(entries) = fs::read_dir(self.tmp_dir()) {
            for e in entries.filter_map(Result::ok) {
                let old = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age >= tmp_age);
                if old && fs::remove_file(e.path()).is_ok() {
                    removed += 1;
                }
            }
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_hold_and_remove() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Arc::new(UploadStore::new(dir.path()));
        let mut a = store.incoming([1; 16]).expect("incoming");
        a.write(b"hello").expect("write");
        let held = store.store("zulip", a).expect("store");
        assert_eq!(held.size, 5);
        assert_eq!(
            held.sha256,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        let path = store.file_path("zulip", &held.sha256);
        assert!(path.is_file());
        let sha = held.sha256.clone();
        // Held: not removed even though nothing references it.
        assert_eq!(
            store.remove_unreferenced("zulip", std::slice::from_ref(&sha), |_| false),
            0
        );
        drop(held);
        // Referenced: kept.
        assert_eq!(
            store.remove_unreferenced("zulip", std::slice::from_ref(&sha), |_| true),
            0
        );
        assert_eq!(store.remove_unreferenced("zulip", &[sha], |_| false), 1);
        assert!(!path.exists());
        // A dropped, unfinished upload leaves nothing behind.
        let b = store.incoming([2; 16]).expect("incoming");
        drop(b);
        assert_eq!(fs::read_dir(store.tmp_dir()).expect("tmp").count(), 0);
    }
}
