//! Opening a data folder's sled databases: the refusals an operator reads.

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
