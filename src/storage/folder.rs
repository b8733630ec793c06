//! Opening a data folder's sled databases: the refusals an operator reads, sled's
//! configuration, and making what sled holds durable (`flush_durably`).

use std::fs::File;
use std::io;
use std::path::Path;

/// Why a data folder cannot be opened. Each message is one line naming the folder.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    /// Another hearth process holds it (sled's lock on its `db` file).
    #[error("data folder {0} is in use by another hearth process; stop it first")]
    Locked(String),
    #[error("data folder {path}: {cause}")]
    Unusable { path: String, cause: String },
}

impl FolderError {
    pub fn unusable(path: &Path, cause: impl ToString) -> FolderError {
        FolderError::Unusable {
            path: path.display().to_string(),
            cause: cause.to_string(),
        }
    }
}

/// Whether a database error is sled's "the folder is locked by another process".
pub fn is_lock_error(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.to_string().contains("could not acquire lock"))
}

/// Names the folder in a sled open error: locked, or why it cannot be used.
pub fn open_error(path: &Path, e: sled::Error) -> FolderError {
    if is_lock_error(&e) {
        FolderError::Locked(path.display().to_string())
    } else if let sled::Error::Io(io) = &e {
        FolderError::unusable(path, io)
    } else {
        FolderError::unusable(path, e)
    }
}

/// sled's configuration for the database in `dir`, as hearth opens each one (hearth
/// decides when to flush), after `remove_torn_snapshots`. `open_db` opens a data
/// folder's databases with it; used alone only for a throw-away copy (a scratch
/// folder), whose files need not outlive a power loss.
pub fn sled_config(dir: &Path) -> sled::Config {
    keep_private(dir);
    if let Err(e) = remove_torn_snapshots(dir) {
        // sled's own open then says what is wrong with the folder.
        tracing::warn!(
            "cannot look for unfinished sled snapshots in {}: {e}",
            dir.display()
        );
    }
    sled::Config::new().path(dir).flush_every_ms(None)
}

/// Opens (or creates) the sled database in `dir`, with a page cache of `cache_bytes`
/// (sled's default when `None`): every open of a database of a data folder.
///
/// Every file sled will read is `fsync`ed first (`sync_before_open`): sled 0.34 writes
/// (and `fsync`s) a snapshot of its page table at each open, claiming the whole log as
/// it reads it, but it writes its log with `sync_file_range` only (no `fsync`, neither
/// the file's size nor the disk's cache) and never syncs its blobs. Log bytes or blobs
/// a previous process wrote after hearth's last `fsync` (at a clean stop, a write after
/// the final flush; after a crash, whatever sled had written) would otherwise be
/// claimed by a durable snapshot while they themselves are not durable, and a power
/// cut then leaves a snapshot ahead of its log: sled refuses the database ("stable lsn
/// .. should be >= snapshot.stable_lsn ..") and `hearth recover`, which needs sled to
/// open it, cannot rebuild it. After the open, sled's `conf` (written at the first
/// open, never synced by sled; a torn or zeroed one makes sled refuse the database)
/// and the folder are synced too.
pub fn open_db(dir: &Path, cache_bytes: Option<u64>) -> Result<sled::Db, sled::Error> {
    sync_before_open(dir)?;
    let mut config = sled_config(dir);
    if let Some(bytes) = cache_bytes {
        config = config.cache_capacity(bytes);
    }
    let db = config.open()?;
    sync_file(&dir.join("conf"))?;
    File::open(dir)?.sync_all()?;
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        File::open(parent)?.sync_all()?;
    }
    Ok(db)
}

/// `fsync`s what sled reads when it opens the database in `dir`: its log (`db`), its
/// blob files, its `conf` and the folder. Nothing there yet is nothing to sync.
fn sync_before_open(dir: &Path) -> io::Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    sync_file(&dir.join("db"))?;
    sync_blob_files(dir)?;
    sync_file(&dir.join("conf"))?;
    File::open(dir)?.sync_all()
}

/// `fsync`s the file at `path` when there is one.
fn sync_file(path: &Path) -> io::Result<()> {
    match File::open(path) {
        Ok(f) => f.sync_all(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Makes what sled holds of the database in `dir` durable: its log (sled's `flush`
/// ends with `sync_file_range`, which neither flushes the disk cache nor the file
/// size), its blob files, then an `fsync` of its log file. The blobs go first: sled
/// writes a blob file before the log entry that points at it and never syncs it, and
/// a durable entry whose blob a power cut left empty or torn ends sled's log there at
/// the next open (everything after it is dropped, or, when a snapshot of sled's
/// already claims it, the database is refused). A blob written after the blob sync
/// belongs to a write this call does not cover.
pub(in crate::storage) fn flush_durably(db: &sled::Db, dir: &Path) -> Result<(), sled::Error> {
    db.flush()?;
    sync_blob_files(dir)?;
    File::open(dir.join("db"))?.sync_data()?;
    Ok(())
}

/// `fsync`s the blob files of the sled database in `dir` (values over its inline limit
/// live there and sled never syncs them) and their folder.
pub(in crate::storage) fn sync_blob_files(dir: &Path) -> io::Result<()> {
    let blobs = dir.join("blobs");
    if !blobs.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(&blobs)? {
        let path = entry?.path();
        if path.is_file() {
            File::open(&path)?.sync_all()?;
        }
    }
    File::open(&blobs)?.sync_all()
}

/// Makes every file and folder this process creates its owner's alone (umask 077:
/// folders 0700, files 0600): a data folder holds API keys and password hashes, and
/// so do its backups and realm archives. Called first by every command.
pub fn private_files() {
    use rustix::fs::Mode;
    rustix::process::umask(Mode::from_raw_mode(0o077));
}

/// Closes a folder of a data folder to everyone but its owner (0700), when group or
/// others may enter it: a folder made before files were private keeps working, and
/// what it holds is out of other users' reach whatever the files' own modes.
pub fn keep_private(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata(dir) else {
        // Not made yet: sled makes it, under the umask.
        return;
    };
    let mode = meta.permissions().mode();
    if meta.is_dir() && mode & 0o077 != 0 {
        let private = std::fs::Permissions::from_mode(mode & 0o700);
        if let Err(e) = std::fs::set_permissions(dir, private) {
            tracing::warn!(
                "cannot make {} private to its owner (mode {:o}): {e}",
                dir.display(),
                mode & 0o777
            );
        }
    }
}

/// Removes the snapshot files sled was still writing when its process ended
/// (`snap.<lsn>.generating`) from the database in `dir`. sled 0.34 writes its snapshot
/// (the page table, written at every open) into such a file and then renames it, but
/// it also takes such a file for the newest snapshot, and one left empty or cut by a
/// crash makes it refuse the whole database as corrupt. Without it sled reads the
/// previous snapshot, which it keeps until the rename, and the log after it. Done only
/// while holding the database's lock (sled's `flock` on its `db` file), since a
/// process that holds it may be writing one right now; a held lock leaves everything
/// as it is (sled's open then reports the folder in use).
pub fn remove_torn_snapshots(dir: &Path) -> std::io::Result<Vec<String>> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join("db"))
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(Vec::new()),
        Err(std::fs::TryLockError::Error(e)) => return Err(e),
    }
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.starts_with("snap.") && name.ends_with(".generating") {
            std::fs::remove_file(dir.join(&name))?;
            // Routine: sled writes one at every open in a thread a short-lived process
            // (a CLI command) may outlive, so this is no warning, and a command's stderr
            // stays its one line of result.
            tracing::debug!(
                "removed {name} from {}: a sled snapshot its process did not finish",
                dir.display()
            );
            removed.push(name);
        }
    }
    // Closing the file releases the lock, for sled's open.
    drop(file);
    Ok(removed)
}

/// The 32-byte key kept in the file `name` of the data folder `dir`, made (random,
/// 0600, synced with its folder) the first time it is asked for. A key signs what must
/// outlive a restart without being stored (password reset links). Read once per
/// process and folder.
pub fn server_key(dir: &Path, name: &str) -> std::io::Result<[u8; 32]> {
    use std::collections::HashMap;
    use std::io::{Read, Write};
    use std::sync::{Mutex, OnceLock};
    static KEYS: OnceLock<Mutex<HashMap<std::path::PathBuf, [u8; 32]>>> = OnceLock::new();
    let path = dir.join(name);
    let mut keys = crate::locks::lock(KEYS.get_or_init(Default::default));
    if let Some(key) = keys.get(&path) {
        return Ok(*key);
    }
    let mut key = [0u8; 32];
    match File::open(&path) {
        Ok(mut file) => {
            let mut bytes = Vec::with_capacity(33);
            Read::by_ref(&mut file).take(33).read_to_end(&mut bytes)?;
            if bytes.len() != 32 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{} is not a 32-byte key", path.display()),
                ));
            }
            key.copy_from_slice(&bytes);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Written whole beside it, then renamed: a crash leaves no torn key.
            key = rand::random();
            let fresh = dir.join(format!("{name}.new"));
            let mut file = File::create(&fresh)?;
            file.write_all(&key)?;
            file.sync_all()?;
            std::fs::rename(&fresh, &path)?;
            File::open(dir)?.sync_all()?;
        }
        Err(e) => return Err(e),
    }
    keys.insert(path, key);
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snapshot file a crash left unfinished: sled alone refuses the database; after
    /// `remove_torn_snapshots` it opens with everything it held.
    #[test]
    fn an_unfinished_sled_snapshot_is_removed_before_opening() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let db = sled_config(dir.path()).open().expect("open");
            db.insert("kept", "yes").expect("insert");
            db.flush().expect("flush");
        }
        std::fs::write(dir.path().join("snap.FFFFFFFFFFFFFFFF.generating"), b"").expect("write");
        let refused = sled::Config::new().path(dir.path()).open();
        assert!(
            matches!(refused, Err(sled::Error::Corruption { .. })),
            "sled 0.34 takes the unfinished file for its snapshot: {refused:?}"
        );
        // A lock held elsewhere (another process's sled) leaves it alone.
        let held = std::fs::File::open(dir.path().join("db")).expect("db");
        held.lock().expect("lock");
        assert!(remove_torn_snapshots(dir.path()).expect("look").is_empty());
        drop(held);
        let db = sled_config(dir.path()).open().expect("opens again");
        assert_eq!(db.get("kept").expect("get").as_deref(), Some(&b"yes"[..]));
        assert!(!dir.path().join("snap.FFFFFFFFFFFFFFFF.generating").exists());
    }

    #[test]
    fn a_server_key_is_made_once_and_read_back_and_a_torn_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let key = server_key(dir.path(), "k.key").unwrap();
        assert_eq!(std::fs::read(dir.path().join("k.key")).unwrap(), key);
        assert!(!dir.path().join("k.key.new").exists());
        // Read from the file, not only the process's cache: another folder's is its own.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("k.key"), [9u8; 32]).unwrap();
        assert_eq!(server_key(other.path(), "k.key").unwrap(), [9u8; 32]);
        assert_eq!(server_key(dir.path(), "k.key").unwrap(), key);
        let torn = tempfile::tempdir().unwrap();
        std::fs::write(torn.path().join("k.key"), [1u8; 7]).unwrap();
        assert!(server_key(torn.path(), "k.key").is_err());
    }
}
