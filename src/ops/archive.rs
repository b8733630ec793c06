//! `hearth realm export` and `hearth realm import` on a stopped server's data folder:
//! the folder opened as a start opens it, then `crate::archive` does the work.

use std::fs;
use std::path::Path;

pub use crate::archive::{
    export_running, import_into, import_into_with, write_archive, ArchiveError, Fault,
    ImportedRealm,
};
use crate::archive::{import_verified, refuse_existing, wait_for_messages};
use crate::startup::open_data_folder;
use crate::storage::archive::{verify, Manifest};
use crate::storage::{DurabilityMode, Store};

/// A start's refusal, as one line for the operator.
fn refused(e: crate::startup::StartError) -> ArchiveError {
    ArchiveError::Refused(e.to_string())
}

/// `hearth realm export` on a stopped server: recovers the realm (snapshot and WAL, as
/// a start does) and writes its archive to `out`.
pub fn export_command(data: &Path, subdomain: &str, out: &Path) -> Result<Manifest, ArchiveError> {
    refuse_existing(out)?;
    if !data.is_dir() {
        return Err(ArchiveError::Refused(format!(
            "no data folder at {}",
            data.display()
        )));
    }
    let (store, _) = open_data_folder(data, DurabilityMode::Always).map_err(refused)?;
    let result = export_stopped(&store, data, subdomain, out);
    store.durability.shutdown();
    result
}

fn export_stopped(
    store: &Store,
    data: &Path,
    subdomain: &str,
    out: &Path,
) -> Result<Manifest, ArchiveError> {
    store.verify_realms()?;
    let mut realms = store.realm_subdomains();
    if !realms.iter().any(|s| s == subdomain) {
        realms.sort();
        return Err(ArchiveError::Refused(format!(
            "no realm '{subdomain}' in {} (it holds: {})",
            data.display(),
            if realms.is_empty() {
                "none".to_owned()
            } else {
                realms.join(", ")
            }
        )));
    }
    let mut realm_store = store.realm(subdomain)?;
    let recovered = realm_store.recover()?.ok_or_else(|| {
        ArchiveError::Refused(format!(
            "realm '{subdomain}' in {} has neither a snapshot nor a first WAL record",
            data.display()
        ))
    })?;
    wait_for_messages(store)?;
    let seq = realm_store.last_seq();
    write_archive(store, subdomain, seq, &recovered.realm, out)
}

/// `hearth realm import` on a stopped server: checks the archive whole, then imports
/// it into `data` (created if needed; removed again if the import fails and it was
/// made for it).
pub fn import_command(
    data: &Path,
    archive: &Path,
    fault: Option<Fault>,
) -> Result<ImportedRealm, ArchiveError> {
    let checked = verify(archive)?;
    let (store, created) = open_data_folder(data, DurabilityMode::Always).map_err(refused)?;
    let result = store
        .verify_realms()
        .map_err(ArchiveError::from)
        .and_then(|()| import_verified(&store, archive, checked, fault));
    if result.is_ok() {
        store.write_manifest()?;
    }
    store.durability.shutdown();
    if result.is_err() && created {
        drop(store);
        let _ = fs::remove_dir_all(data);
    }
    result
}
