//! Uploaded files: attachments and the images of custom emoji, content-addressed under
//! the data folder, one folder per realm: `<data>/uploads/realm-<hex of the
//! subdomain>/<sha256>`. A realm's files are never another realm's (identical bytes
//! uploaded to two realms are two files), so nothing one realm names can read another's.
//! Never in the WAL or in snapshots; the realm keeps their metadata (`realm::attachments`,
//! `realm::emoji`).
//!
//! Every file is written one way: streamed into `<data>/uploads/tmp/`, hashing as it
//! goes (`incoming`; `put` for bytes already in memory), then fsynced, renamed to its
//! hash in the realm's folder, and that folder, `uploads/` and the data folder fsynced
//! (`store`); only then does the realm record it. The upload holds the file (`Held`)
//! until the realm has recorded it or refused.
//!
//! Removing a file happens after the change that dropped its last attachment is
//! durable, and only if nothing of the realm names it and no upload under way holds it
//! (`in_flight`), so a concurrent upload of the same bytes never loses its file. What
//! the realm names is `Realm::upload_is_referenced`: its attachments and its custom
//! emoji, deactivated ones included (their images are never deleted). The sweep also
//! removes stray files (a crash between writing and recording, or between a removal
//! and the file's deletion) and leftovers in `tmp/`.
//!
//! Earlier versions of hearth kept emoji images for all realms in one layout,
//! `<data>/uploads/<first two hex digits>/<sha256>`. At start, `migrate_legacy` copies
//! each file a realm's emoji names into that realm's folder (through `store`), and only
//! once every copy is durable removes the old folders; a crash midway leaves either the
//! old file or both, and the next start finishes the job.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::locks::lock;
use crate::realm::attachments;

/// The folder of uploaded files, inside the data folder.
pub const UPLOADS_DIR: &str = "uploads";

/// The hex SHA-256 of some bytes: their name in the store.
pub use crate::realm::attachments::content_hash;

/// The hex SHA-256 of a file's content, read in pieces.
pub fn file_hash(path: &Path) -> io::Result<String> {
    let mut hasher = Sha256::new();
    io::copy(&mut File::open(path)?, &mut hasher)?;
    Ok(hex::encode(hasher.finalize()))
}

/// Whether `name` can be a stored file's name (a lowercase hex SHA-256).
pub fn is_hash(name: &str) -> bool {
    name.len() == 64
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Whether `name` is a folder of the old layout (`<first two hex digits>`).
fn is_legacy_dir_name(name: &str) -> bool {
    name.len() == 2
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

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

    /// Writes everything `from` yields.
    pub fn copy_from(&mut self, from: &mut impl Read) -> io::Result<()> {
        let mut buffer = vec![0; 64 * 1024];
        loop {
            match from.read(&mut buffer) {
                Ok(0) => return Ok(()),
                Ok(n) => self.write(&buffer[..n])?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// The hash of what was written so far: the name `store` gives it.
    pub fn sha256(&self) -> String {
        hex::encode(self.hasher.clone().finalize())
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
        let mut inflight = lock(&self.store.in_flight);
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

/// What `migrate_legacy` did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Migrated {
    /// Files copied into a realm's folder.
    pub copied: usize,
    /// Files of the old layout removed.
    pub removed: usize,
    /// Files of the old layout kept: an emoji names them but their content does not
    /// match their name (`hearth check` reports them, `hearth recover` drops them).
    pub damaged: Vec<PathBuf>,
}

impl UploadStore {
    /// The store under `data` (its folders are created when first needed).
    pub fn new(data: &Path) -> UploadStore {
        UploadStore {
            root: data.join(UPLOADS_DIR),
            in_flight: Mutex::new(HashMap::new()),
        }
    }

    fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// The folder of one realm's data exports, in its upload folder (the upload sweep
    /// and the realm archive only look at the files named by their hash beside it).
    pub fn exports_dir(&self, subdomain: &str) -> PathBuf {
        self.realm_dir(subdomain).join("exports")
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
    /// until the realm has recorded it (see `Held`). The one way a file gets there.
    /// Blocking I/O: call it off the HTTP workers.
    pub fn store(self: &Arc<Self>, subdomain: &str, mut incoming: Incoming) -> io::Result<Held> {
        incoming.file.sync_all()?;
        let sha256 = incoming.sha256();
        let dir = self.realm_dir(subdomain);
        fs::create_dir_all(&dir)?;
        let path = dir.join(&sha256);
        *lock(&self.in_flight).entry(path.clone()).or_insert(0) += 1;
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
        }
        incoming.done = true;
        // The file's name, its realm's folder and `uploads/` itself are durable (also when
        // an upload of the same bytes renamed it a moment ago and has not synced yet).
        sync_dir(&dir)?;
        sync_dir(&self.root)?;
        if let Some(data) = self.root.parent() {
            sync_dir(data)?;
        }
        Ok(held)
    }

    /// Stores `bytes` (a whole file already in memory) as `store` does. Blocking I/O.
    pub fn put(self: &Arc<Self>, subdomain: &str, bytes: &[u8]) -> io::Result<Held> {
        let mut incoming = self.incoming(rand::random())?;
        incoming.write(bytes)?;
        self.store(subdomain, incoming)
    }

    /// The bytes of a realm's file, if it has one by that name. Blocking I/O.
    pub fn read(&self, subdomain: &str, sha256: &str) -> io::Result<Option<Vec<u8>>> {
        if !is_hash(sha256) {
            return Ok(None);
        }
        match fs::read(self.file_path(subdomain, sha256)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes a realm's files that `referenced` says nothing of the realm names any
    /// more and no upload holds; `referenced` is asked under the store's lock, which an
    /// upload takes to release its hold. Returns how many were removed.
    pub fn remove_unreferenced(
        &self,
        subdomain: &str,
        shas: &[String],
        referenced: impl Fn(&str) -> bool,
    ) -> usize {
        let inflight = lock(&self.in_flight);
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

    /// Removes stray files: a realm's files nothing of the realm names (and no upload
    /// holds), and temporary files older than `tmp_age`. Returns how many were removed.
    /// Only files named by a hash are the store's: the realm's `exports/` folder (its
    /// data exports) is not.
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
                .filter(|n| is_hash(n))
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

    /// The folders of the old layout (`uploads/<aa>/`), if any are left.
    fn legacy_dirs(&self) -> Vec<PathBuf> {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|e| e.file_name().to_str().is_some_and(is_legacy_dir_name))
            .map(|e| e.path())
            .collect();
        dirs.sort();
        dirs
    }

    /// Whether files of the old layout are left (then `migrate_legacy` has work).
    pub fn has_legacy_files(&self) -> bool {
        !self.legacy_dirs().is_empty()
    }

    /// Moves the old layout (`uploads/<aa>/<sha256>`, one for all realms) into the
    /// realms' folders. `named` is every realm with the files its custom emoji name
    /// (deactivated ones included): each file missing from the realm's folder is copied
    /// there through `store` after its content is checked against its name. Once every
    /// copy is durable, the old files are removed (those no realm names too: strays of
    /// a crash between storing and recording), then their folders. Idempotent: a
    /// crash at any point leaves the old file, or both, and a second run finishes. An
    /// old file whose content does not match its name is kept, not copied (the emoji
    /// shows no image; `hearth check` reports the file). Blocking I/O: run it at start.
    pub fn migrate_legacy(
        self: &Arc<Self>,
        named: &[(String, Vec<String>)],
    ) -> io::Result<Migrated> {
        let dirs = self.legacy_dirs();
        let mut out = Migrated::default();
        if dirs.is_empty() {
            return Ok(out);
        }
        let mut damaged: HashSet<PathBuf> = HashSet::new();
        for (subdomain, shas) in named {
            for sha in shas.iter().filter(|s| is_hash(s)) {
                if self.file_path(subdomain, sha).is_file() {
                    continue;
                }
                let old = self.root.join(&sha[..2]).join(sha);
                let mut source = match File::open(&old) {
                    Ok(f) => f,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        tracing::warn!(
                            "realm '{subdomain}': the emoji image {sha} is in neither {} nor {}",
                            self.realm_dir(subdomain).display(),
                            old.display()
                        );
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                let mut incoming = self.incoming(rand::random())?;
                incoming.copy_from(&mut source)?;
                if incoming.sha256() != *sha {
                    tracing::warn!(
                        "the uploaded file {} does not match its checksum: left in place",
                        old.display()
                    );
                    damaged.insert(old);
                    continue;
                }
                drop(self.store(subdomain, incoming)?);
                out.copied += 1;
            }
        }
        // Every file a realm names is durable in the realm's folder: the old ones go.
        for dir in &dirs {
            for entry in fs::read_dir(dir)? {
                let entry = entry?;
                let path = entry.path();
                if damaged.contains(&path) {
                    out.damaged.push(path);
                    continue;
                }
                if !entry.file_type()?.is_file() {
                    continue;
                }
                match fs::remove_file(&path) {
                    Ok(()) => out.removed += 1,
                    Err(e) => tracing::warn!("cannot remove {}: {e}", path.display()),
                }
            }
            if let Err(e) = fs::remove_dir(dir).or_else(|_| sync_dir(dir)) {
                tracing::warn!("cannot sync {}: {e}", dir.display());
            }
        }
        sync_dir(&self.root)?;
        out.damaged.sort();
        Ok(out)
    }
}

/// A file being received through the file-store port: its store and realm, to store it
/// there.
struct Receiving {
    store: Arc<UploadStore>,
    subdomain: String,
    incoming: Incoming,
}

impl attachments::ReceivingFile for Receiving {
    fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        self.incoming.write(chunk)
    }

    fn size(&self) -> u64 {
        self.incoming.size()
    }

    fn store(self: Box<Self>) -> io::Result<attachments::HeldFile> {
        let Receiving {
            store,
            subdomain,
            incoming,
        } = *self;
        store.store(&subdomain, incoming).map(Held::into_port)
    }
}

impl Held {
    /// The port's held file, holding this.
    fn into_port(self) -> attachments::HeldFile {
        attachments::HeldFile::new(self.sha256.clone(), self.size, self)
    }
}

/// The file-store port of the HTTP layer (`realm::attachments::FileStore`).
impl attachments::FileStore for UploadStore {
    fn receive(
        self: Arc<Self>,
        subdomain: &str,
    ) -> io::Result<Box<dyn attachments::ReceivingFile>> {
        let incoming = self.incoming(rand::random())?;
        Ok(Box::new(Receiving {
            store: self,
            subdomain: subdomain.to_owned(),
            incoming,
        }))
    }

    fn put(self: Arc<Self>, subdomain: &str, bytes: &[u8]) -> io::Result<attachments::HeldFile> {
        UploadStore::put(&self, subdomain, bytes).map(Held::into_port)
    }

    fn read(&self, subdomain: &str, sha256: &str) -> io::Result<Option<Vec<u8>>> {
        UploadStore::read(self, subdomain, sha256)
    }

    fn remove_unreferenced(
        &self,
        subdomain: &str,
        shas: &[String],
        referenced: &dyn Fn(&str) -> bool,
    ) -> usize {
        UploadStore::remove_unreferenced(self, subdomain, shas, referenced)
    }

    fn remove_strays(
        &self,
        subdomain: &str,
        referenced: &dyn Fn(&str) -> bool,
        tmp_age: std::time::Duration,
    ) -> usize {
        UploadStore::remove_strays(self, subdomain, referenced, tmp_age)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELLO: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

    #[test]
    fn store_hold_and_remove() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Arc::new(UploadStore::new(dir.path()));
        let mut a = store.incoming([1; 16]).expect("incoming");
        a.write(b"hello").expect("write");
        let held = store.store("zulip", a).expect("store");
        assert_eq!(held.size, 5);
        assert_eq!(held.sha256, HELLO);
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

    #[test]
    fn put_and_read_are_per_realm() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Arc::new(UploadStore::new(dir.path()));
        let held = store.put("zulip", b"hello").expect("put");
        assert_eq!((held.sha256.as_str(), held.size), (HELLO, 5));
        drop(held);
        // Content-addressed: the same bytes again are the same file.
        assert_eq!(store.put("zulip", b"hello").expect("again").sha256, HELLO);
        assert_eq!(
            store.read("zulip", HELLO).expect("read").as_deref(),
            Some(&b"hello"[..])
        );
        assert!(dir
            .path()
            .join("uploads/realm-7a756c6970")
            .join(HELLO)
            .is_file());
        // Another realm does not see it; names that are no hash read nothing.
        assert_eq!(store.read("other", HELLO).expect("read"), None);
        assert_eq!(store.read("zulip", &"0".repeat(64)).expect("read"), None);
        assert_eq!(store.read("zulip", "../../db").expect("read"), None);
        assert_eq!(fs::read_dir(store.tmp_dir()).expect("tmp").count(), 0);
    }

    /// Lays out `bytes` exactly as earlier versions stored emoji images.
    fn legacy(data: &Path, bytes: &[u8]) -> PathBuf {
        let sha = content_hash(bytes);
        let dir = data.join(UPLOADS_DIR).join(&sha[..2]);
        fs::create_dir_all(&dir).expect("dir");
        fs::write(dir.join(&sha), bytes).expect("write");
        dir.join(sha)
    }

    #[test]
    fn the_old_layout_moves_into_the_realms_folders() {
        let dir = tempfile::tempdir().expect("dir");
        let data = dir.path();
        let store = Arc::new(UploadStore::new(data));
        assert!(!store.has_legacy_files());
        let shared = legacy(data, b"both realms");
        let own = legacy(data, b"zulip only");
        let stray = legacy(data, b"named by nobody");
        let damaged = legacy(data, b"damaged");
        fs::write(&damaged, b"bit rot").expect("damage");
        let leftover = shared.with_file_name(".abc.1234.tmp");
        fs::write(&leftover, b"half").expect("tmp");
        let sha = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
        let named = vec![
            (
                "zulip".to_owned(),
                vec![sha(&shared), sha(&own), sha(&damaged)],
            ),
            ("other".to_owned(), vec![sha(&shared), "1".repeat(64)]),
        ];
        assert!(store.has_legacy_files());
        let done = store.migrate_legacy(&named).expect("migrate");
        assert_eq!(done.copied, 3);
        assert_eq!(done.removed, 4, "shared, own, stray, the temporary file");
        assert_eq!(done.damaged, vec![damaged.clone()]);
        for (realm, bytes) in [
            ("zulip", &b"both realms"[..]),
            ("zulip", b"zulip only"),
            ("other", b"both realms"),
        ] {
            assert_eq!(
                store
                    .read(realm, &content_hash(bytes))
                    .expect("read")
                    .as_deref(),
                Some(bytes)
            );
        }
        assert_eq!(store.read("other", &sha(&own)).expect("read"), None);
        assert!(!shared.exists() && !own.exists() && !stray.exists() && !leftover.exists());
        for gone in [&shared, &own, &stray] {
            let folder = gone.parent().expect("folder");
            let keeps_damaged = Some(folder) == damaged.parent();
            assert_eq!(folder.exists(), keeps_damaged, "{}", folder.display());
        }
        assert!(damaged.is_file(), "kept for `hearth check` to report");
        assert!(!store.file_path("zulip", &sha(&damaged)).exists());
        // Again: nothing left to do but the damaged file.
        let again = store.migrate_legacy(&named).expect("again");
        assert_eq!((again.copied, again.removed), (0, 0));
        assert_eq!(again.damaged, vec![damaged]);
        assert_eq!(fs::read_dir(store.tmp_dir()).expect("tmp").count(), 0);
    }

    #[test]
    fn a_migration_cut_short_is_finished_by_the_next() {
        let dir = tempfile::tempdir().expect("dir");
        let data = dir.path();
        let store = Arc::new(UploadStore::new(data));
        let a = legacy(data, b"copied before the crash");
        let b = legacy(data, b"not copied yet");
        let sha_a = content_hash(b"copied before the crash");
        let sha_b = content_hash(b"not copied yet");
        // The crash came after `a` was copied, before the old files were removed, and
        // left a temporary file of the next copy.
        drop(store.put("zulip", b"copied before the crash").expect("put"));
        let mut half = store.incoming([7; 16]).expect("incoming");
        half.write(b"not co").expect("write");
        std::mem::forget(half);
        let named = vec![("zulip".to_owned(), vec![sha_a.clone(), sha_b.clone()])];
        let done = store.migrate_legacy(&named).expect("migrate");
        assert_eq!((done.copied, done.removed), (1, 2));
        assert!(!a.exists() && !b.exists());
        assert!(!store.has_legacy_files());
        assert!(store.read("zulip", &sha_a).expect("read").is_some());
        assert!(store.read("zulip", &sha_b).expect("read").is_some());
        // The temporary file is the sweep's (it is older than an hour by then).
        assert_eq!(
            store.remove_strays("zulip", |_| true, std::time::Duration::ZERO),
            1
        );
    }
}
