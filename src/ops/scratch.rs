//! What `hearth check` and `hearth recover` share: the data folder's lock, a scratch
//! copy of its database files (never the folder itself: opening a damaged sled
//! database lets sled cut and zero what it cannot read, and the damaged folder is
//! evidence to keep as it is), and reading what of it can be read.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use crate::storage::messages;
use crate::storage::wal::journal::{self, Replayed};
use crate::storage::wal::manifest::{self, Manifest, ManifestError, RealmMark};
use crate::storage::{SNAP_PREFIX, WAL_PREFIX};

/// The data folder's lock, held while a command reads it: sled's own (an `flock` on
/// its `db` file), so no server runs meanwhile.
pub(super) struct FolderLock(#[allow(dead_code)] File);

pub(super) fn lock_folder(data: &Path) -> Result<FolderLock, String> {
    if !data.join("db").is_file() || !data.join("conf").is_file() {
        return Err(format!(
            "data folder {}: holds no hearth database",
            data.display()
        ));
    }
    let file =
        File::open(data.join("db")).map_err(|e| format!("data folder {}: {e}", data.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(FolderLock(file)),
        Err(fs::TryLockError::WouldBlock) => Err(format!(
            "data folder {} is in use by another hearth process; stop it first",
            data.display()
        )),
        Err(fs::TryLockError::Error(e)) => Err(format!("data folder {}: {e}", data.display())),
    }
}

/// Whether a file or folder of the data folder belongs to sled.
pub(super) fn is_sled_file(name: &str) -> bool {
    matches!(
        name,
        "conf" | "db" | "blobs" | messages::FOLDER | journal::JOURNAL_FILE
    ) || name.starts_with("snap.")
}

/// Copies a folder tree; `sync`: each file and folder fsynced.
pub(super) fn copy_tree(
    src: &Path,
    dst: &Path,
    sync: bool,
    keep: &dyn Fn(&str) -> bool,
) -> io::Result<()> {
    fs::create_dir_all(dst)?;
    for entry in fs::read_dir(src)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !keep(&name) {
            continue;
        }
        let (from, to) = (entry.path(), dst.join(entry.file_name()));
        if entry.file_type()?.is_dir() {
            copy_tree(&from, &to, sync, &|_| true)?;
        } else {
            fs::copy(&from, &to)?;
            if sync {
                File::open(&to)?.sync_all()?;
            }
        }
    }
    if sync {
        File::open(dst)?.sync_all()?;
    }
    Ok(())
}

/// A scratch copy of a data folder's database files, opened with sled: the main
/// database and, when the folder has one, the message database (`messages`).
pub(super) struct Scratch {
    pub db: sled::Db,
    pub msgs: Option<sled::Db>,
    /// Why sled refuses the message database, when it does (the main one may still
    /// hold whole realms: `recover` keeps them).
    pub msgs_refused: Option<String>,
    /// Whether the main database says the folder keeps its messages in `msgs`.
    pub msgs_expected: bool,
    /// What the folder's journal held, copied into `db`'s WAL trees as a start would.
    pub journal: Replayed,
    _dir: tempfile::TempDir,
}

impl Scratch {
    /// The database holding a realm's message trees: the main one for a folder from
    /// before the message database (not yet moved), else the message database.
    pub(super) fn rows_db(&self, subdomain: &str) -> &sled::Db {
        let [rows, ..] = messages::tree_names(subdomain);
        match &self.msgs {
            Some(msgs) if !has_tree(&self.db, &rows) => msgs,
            _ => &self.db,
        }
    }
}

pub(super) fn open_scratch(data: &Path) -> Result<Scratch, String> {
    let parent = data
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = tempfile::Builder::new()
        .prefix(".hearth-scratch-")
        .tempdir_in(parent)
        .or_else(|_| tempfile::tempdir())
        .map_err(|e| format!("cannot make a scratch folder: {e}"))?;
    copy_tree(data, dir.path(), false, &is_sled_file)
        .map_err(|e| format!("cannot copy {} to a scratch folder: {e}", data.display()))?;
    let open = |path: PathBuf, what: &str| match std::panic::catch_unwind(move || {
        crate::storage::folder::sled_config(&path).open()
    }) {
        Ok(Ok(db)) => Ok(db),
        Ok(Err(e)) => Err(format!("sled cannot open {what} ({e})")),
        Err(_) => Err(format!(
            "sled cannot open {what} (it failed while reading the files)"
        )),
    };
    let db = open(dir.path().to_path_buf(), "it")?;
    let journal = journal::replay(&db, dir.path())
        .map_err(|e| format!("cannot copy its journal into the WAL ({e})"))?;
    let (msgs, msgs_refused) = if messages::exists(dir.path()) {
        match open(dir.path().join(messages::FOLDER), "its message database") {
            Ok(db) => (Some(db), None),
            Err(e) => (None, Some(e)),
        }
    } else {
        (None, None)
    };
    let msgs_expected = messages::has_marker(&db).unwrap_or(false);
    Ok(Scratch {
        db,
        msgs,
        msgs_refused,
        msgs_expected,
        journal,
        _dir: dir,
    })
}

/// The manifest of a folder as a command sees it.
pub(super) enum Found {
    Manifest(Manifest),
    /// No manifest, and the database says none was written (a folder from before).
    None,
    /// No manifest though the database says one was written.
    Missing,
    Corrupt(ManifestError),
}

impl Found {
    pub(super) fn mark(&self, realm: &str) -> Option<RealmMark> {
        match self {
            Found::Manifest(m) => m.realms.get(realm).copied(),
            _ => None,
        }
    }

    pub(super) fn realms(&self) -> Vec<String> {
        match self {
            Found::Manifest(m) => m.realms.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }
}

pub(super) fn find_manifest(data: &Path, db: &sled::Db) -> Found {
    match manifest::read(data) {
        Ok(Some(m)) => Found::Manifest(m),
        Ok(None) => match manifest::has_marker(db) {
            Ok(false) => Found::None,
            _ => Found::Missing,
        },
        Err(e) => Found::Corrupt(e),
    }
}

/// Subdomains with trees in a database.
pub(super) fn subdomains(db: &sled::Db) -> Vec<String> {
    let mut names = BTreeSet::new();
    for n in db.tree_names() {
        if let Ok(n) = std::str::from_utf8(&n) {
            for prefix in [WAL_PREFIX, SNAP_PREFIX] {
                if let Some(sub) = n.strip_prefix(prefix) {
                    names.insert(sub.to_owned());
                }
            }
        }
    }
    names.into_iter().collect()
}

pub(super) fn has_tree(db: &sled::Db, name: &str) -> bool {
    db.tree_names().iter().any(|n| n == name.as_bytes())
}

/// A tree's entries up to the first that sled cannot read; `failed` is set then.
pub(super) fn readable<'a>(
    tree: &sled::Tree,
    failed: &'a mut bool,
) -> impl Iterator<Item = (sled::IVec, sled::IVec)> + 'a {
    let mut iter = tree.iter();
    std::iter::from_fn(move || match iter.next()? {
        Ok(kv) => Some(kv),
        Err(_) => {
            *failed = true;
            None
        }
    })
}

/// Up to ten ids, then how many more.
pub(super) fn some_ids(ids: impl Iterator<Item = u64>) -> String {
    let ids: Vec<u64> = ids.collect();
    let mut s: Vec<String> = ids.iter().take(10).map(u64::to_string).collect();
    if ids.len() > 10 {
        s.push(format!("and {} more", ids.len() - 10));
    }
    s.join(", ")
}
