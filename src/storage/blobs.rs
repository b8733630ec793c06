//! Content-addressed files under the data folder (`<data>/uploads/<aa>/<sha-256>`):
//! uploaded images such as custom emoji. A file is written to a temporary name,
//! fsynced, renamed into place and its folder fsynced before its name is returned, so
//! a change that names it is only ever recorded once the file is durable. Identical
//! uploads share one file. Files are never deleted (deactivated emoji keep theirs).
//!
//! Backups copy them with the rest of the data folder.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The folder of uploaded files, inside the data folder.
pub const UPLOADS_DIR: &str = "uploads";

/// The content-addressed files of one data folder.
#[derive(Debug, Clone)]
pub struct Blobs {
    root: PathBuf,
}

/// The hex SHA-256 of some bytes: their name in the store.
pub fn content_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn is_hash(name: &str) -> bool {
    name.len() == 64
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn sync_dir(path: &Path) -> io::Result<()> {
    File::open(path)?.sync_all()
}

impl Blobs {
    /// The store of the data folder `data`.
    pub fn new(data: &Path) -> Self {
        Blobs {
            root: data.join(UPLOADS_DIR),
        }
    }

    fn path(&self, hash: &str) -> PathBuf {
        self.root.join(&hash[..2]).join(hash)
    }

    /// Stores `bytes` durably; returns their hash. Blocking I/O: call it off the HTTP
    /// workers.
    pub fn put(&self, bytes: &[u8]) -> io::Result<String> {
        let hash = content_hash(bytes);
        let path = self.path(&hash);
        if path.is_file() && fs::metadata(&path)?.len() == bytes.len() as u64 {
            // Already stored (content-addressed): make sure it is durable, as a new one.
            File::open(&path)?.sync_all()?;
            return Ok(hash);
        }
        let dir = self.root.join(&hash[..2]);
        fs::create_dir_all(&dir)?;
        let tmp = dir.join(format!(".{hash}.{}.tmp", std::process::id()));
        {
            let mut f = File::create(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
        }
        fs::rename(&tmp, &path)?;
        sync_dir(&dir)?;
        sync_dir(&self.root)?;
        Ok(hash)
    }

    /// The bytes stored under `hash`, if any.
    pub fn get(&self, hash: &str) -> io::Result<Option<Vec<u8>>> {
        if !is_hash(hash) {
            return Ok(None);
        }
        match fs::read(self.path(hash)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_is_content_addressed_and_durable() {
        let dir = tempfile::tempdir().expect("dir");
        let blobs = Blobs::new(dir.path());
        let a = blobs.put(b"hello").expect("put");
        assert_eq!(
            a,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(blobs.put(b"hello").expect("again"), a);
        assert_eq!(blobs.get(&a).expect("get").as_deref(), Some(&b"hello"[..]));
        assert_eq!(blobs.get(&"0".repeat(64)).expect("get"), None);
        assert_eq!(blobs.get("../etc/passwd").expect("get"), None);
        assert!(dir.path().join("uploads/2c").join(&a).is_file());
    }
}
