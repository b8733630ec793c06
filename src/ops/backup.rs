//! `hearth backup` and `hearth restore`: a consistent copy of a data folder.
//!
//! Both copy a whole data folder while holding sled's lock on it, after a flush: no
//! hearth process can write to it meanwhile, so the copy is the database at one
//! instant. A running server holds that lock, so backing it up is refused with a
//! message saying so: stop it (SIGTERM snapshots every realm), back up, start it again.
//! The copy goes to `<dest>.partial` and is renamed into place only after it opened and
//! every realm in it was recovered, so a destination that exists is a whole backup.

use std::fs;
use std::path::{Path, PathBuf};

use crate::startup::StartError;
use crate::storage::{open_error, DurabilityMode, Store};

/// What a copy held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// Each realm's subdomain and number of users, as recovered from the copy.
    pub realms: Vec<(String, usize)>,
    /// Bytes copied.
    pub bytes: u64,
}

/// `hearth backup --data DATA --out OUT`: copies a stopped server's data folder to a
/// new folder `out`.
pub fn backup(data: &Path, out: &Path) -> Result<Copied, StartError> {
    copy_database(data, out)
}

/// `hearth restore --from BACKUP --data DATA`: copies a backup into a new (or empty)
/// data folder. The backup itself is left as it was found.
pub fn restore(from: &Path, data: &Path) -> Result<Copied, StartError> {
    copy_database(from, data)
}

fn copy_database(src: &Path, dst: &Path) -> Result<Copied, StartError> {
    if !src.join("conf").is_file() || !src.join("db").is_file() {
        return Err(StartError::DataFolder {
            path: src.display().to_string(),
            cause: "holds no hearth database".into(),
        });
    }
    if dst.exists() && !is_empty_folder(dst) {
        return Err(StartError::Backup(format!(
            "{} already exists and is not an empty folder: choose a new one",
            dst.display()
        )));
    }
    let partial = partial_path(dst)?;
    let io = |what: &str, path: &Path, e: std::io::Error| {
        StartError::Backup(format!("{what} {}: {e}", path.display()))
    };
    // The lock keeps every hearth process out until the copy is complete.
    let db = crate::storage::folder::open_db(src, None).map_err(|e| open_error(src, e))?;
    db.flush().map_err(|e| open_error(src, e))?;
    if partial.exists() {
        // Left by an interrupted copy.
        fs::remove_dir_all(&partial).map_err(|e| io("removing", &partial, e))?;
    }
    let bytes = copy_folder(src, &partial).map_err(|e| io("copying to", &partial, e))?;
    drop(db);
    let realms = match recover_all(&partial) {
        Ok(realms) => realms,
        Err(e) => {
            let _ = fs::remove_dir_all(&partial);
            return Err(e);
        }
    };
    if dst.exists() {
        fs::remove_dir(dst).map_err(|e| io("replacing", dst, e))?;
    }
    fs::rename(&partial, dst).map_err(|e| io("renaming to", dst, e))?;
    if let Some(parent) = dst.parent().filter(|p| !p.as_os_str().is_empty()) {
        sync_folder(parent).map_err(|e| io("syncing", parent, e))?;
    }
    Ok(Copied { realms, bytes })
}

/// `dest.partial`, beside `dest`.
fn partial_path(dst: &Path) -> Result<PathBuf, StartError> {
    let name = dst
        .file_name()
        .ok_or_else(|| StartError::Backup(format!("{} is not a folder name", dst.display())))?;
    let mut partial = name.to_os_string();
    partial.push(".partial");
    Ok(dst.with_file_name(partial))
}

fn is_empty_folder(path: &Path) -> bool {
    fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
}

/// Copies a folder tree, each file synced to disk; returns the bytes copied.
fn copy_folder(src: &Path, dst: &Path) -> std::io::Result<u64> {
    fs::create_dir_all(dst)?;
    let mut bytes = 0;
    for entry in fs::read_dir(src)? {
        let entry = entry?;
        let from = entry.path();
        let to = dst.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            bytes += copy_folder(&from, &to)?;
        } else {
            bytes += fs::copy(&from, &to)?;
            fs::File::open(&to)?.sync_all()?;
        }
    }
    sync_folder(dst)?;
    Ok(bytes)
}

fn sync_folder(path: &Path) -> std::io::Result<()> {
    fs::File::open(path)?.sync_all()
}

/// Opens a copy and recovers every realm in it: a backup that does not load is an error
/// now, not on the day it is needed.
fn recover_all(path: &Path) -> Result<Vec<(String, usize)>, StartError> {
    let store = Store::open(path, DurabilityMode::Never).map_err(|e| StartError::DataFolder {
        path: path.display().to_string(),
        cause: format!("the copy does not open: {e}"),
    })?;
    store.verify_realms()?;
    // The message database opens in the background: wait for it, and refuse a copy
    // whose message database cannot be opened or lost writes.
    store
        .message_db()
        .db()
        .map_err(|e| StartError::DataFolder {
            path: path.display().to_string(),
            cause: format!("the copy's message database does not open: {e}"),
        })?;
    let mut realms = Vec::new();
    for subdomain in store.realm_subdomains() {
        let recovered = store.realm(&subdomain)?.recover()?.ok_or_else(|| {
            StartError::Realm(format!("realm '{subdomain}' in the copy has no history"))
        })?;
        realms.push((subdomain, recovered.realm.users.len()));
    }
    store.durability.shutdown();
    Ok(realms)
}
