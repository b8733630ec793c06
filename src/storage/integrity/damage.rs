//! The refusal an operator reads (`Damage`), and a storage error as the operator
//! reads it (`describe`).

use std::fmt;
use std::path::PathBuf;

use crate::storage::StorageError;

/// A data folder that does not hold what its manifest says it should: the start (or a
/// backup) is refused with this, one line for the operator.
#[derive(Debug, Clone)]
pub struct Damage {
    pub folder: PathBuf,
    /// The realm concerned (`None`: the folder as a whole).
    pub realm: Option<String>,
    pub expected: String,
    pub found: String,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let folder = self.folder.display();
        write!(f, "data folder {folder} is damaged")?;
        if let Some(realm) = &self.realm {
            write!(f, ", realm '{realm}'")?;
        }
        write!(
            f,
            ": expected {}, found {}. Run `hearth check --data {folder}` for a full report; \
             `hearth recover --data {folder} --accept-loss` rebuilds the folder from what can \
             still be read and reports what is lost; or restore a backup (`hearth restore \
             --from BACKUP --data {folder}`)",
            self.expected, self.found
        )
    }
}

/// A storage error as the operator reads it (sled's corruption error renders its
/// backtrace slot, which says nothing here).
pub fn describe(e: &StorageError) -> String {
    match e {
        StorageError::Sled(sled::Error::Corruption { at: Some(at), .. }) => {
            format!("sled read corrupted data at {at:?}")
        }
        StorageError::Sled(sled::Error::Corruption { at: None, .. }) => {
            "sled read corrupted data".into()
        }
        e => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_folder_the_realm_and_what_to_do() {
        let d = Damage {
            folder: PathBuf::from("/srv/hearth"),
            realm: Some("zulip".into()),
            expected: "records up to 301 (the manifest)".into(),
            found: "records up to 216 only".into(),
        };
        let line = d.to_string();
        for needle in [
            "data folder /srv/hearth is damaged, realm 'zulip': expected records up to 301",
            "found records up to 216 only",
            "hearth check --data /srv/hearth",
            "hearth recover --data /srv/hearth --accept-loss",
            "hearth restore --from BACKUP --data /srv/hearth",
        ] {
            assert!(line.contains(needle), "{line}");
        }
        assert!(!line.contains('\n'));
    }
}
