//! `hearth recover --accept-loss`: builds a new folder beside the damaged one from the
//! newest consistent state it can read (per realm: the newest snapshot that decodes and
//! the WAL records after it up to the first missing or unreadable one; the message rows
//! and presence records that decode; the uploaded files as they are), checks it, and
//! only then moves the damaged folder aside (`<data>.damaged-<time>`) and gives the new
//! one its name.

use std::collections::BTreeSet;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use super::check::{check_db, lines_of, RealmCheck};
use super::scratch::{
    copy_tree, has_tree, is_sled_file, lock_folder, open_scratch, readable, some_ids, Found,
    Scratch,
};
use crate::storage::wal::{self, manifest};
use crate::storage::{codec, integrity, messages, DurabilityMode, Store};
use crate::storage::{PRESENCE_PREFIX, SNAP_PREFIX, WAL_PREFIX};

/// `hearth recover`.
#[derive(Debug, Clone, Args)]
pub struct RecoverArgs {
    /// Data folder to rebuild (its server must be stopped).
    #[arg(long, env = "HEARTH_DATA", default_value = "./data")]
    pub data: PathBuf,
    /// Agree that what cannot be read is dropped (the report says what).
    #[arg(long)]
    pub accept_loss: bool,
}

/// `<data><suffix>-<UTC time>` beside `data`.
fn beside(data: &Path, suffix: &str) -> Result<PathBuf, String> {
    let name = data
        .file_name()
        .ok_or_else(|| format!("{} is not a folder name", data.display()))?;
    let mut n = name.to_os_string();
    n.push(format!(
        "{suffix}-{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
    ));
    Ok(data.with_file_name(n))
}

/// What `recover` kept and lost of one realm.
struct Rebuilt {
    subdomain: String,
    kept: Option<(u64, usize, usize, usize)>,
    lost: Vec<String>,
}

/// Rebuilds one realm into `store` from the scratch database; returns what it kept
/// (record, users, channels, message rows) and lost.
fn rebuild_realm(
    scratch: &Scratch,
    store: &Store,
    subdomain: &str,
    check: &RealmCheck,
    manifest_usable: bool,
) -> Result<Rebuilt, String> {
    let err = |e: &dyn fmt::Display| format!("realm '{subdomain}': {e}");
    let old = &scratch.db;
    let old_rows = scratch.rows_db(subdomain);
    let mut rebuilt = Rebuilt {
        subdomain: subdomain.to_owned(),
        kept: None,
        lost: Vec::new(),
    };
    let expected = check.mark.map(|m| m.last_seq).unwrap_or(0);
    let Some(scan) = check.scan.as_ref().filter(|s| s.realm.is_some()) else {
        rebuilt.lost.push(if expected > 0 {
            format!("the whole realm (records 1..={expected})")
        } else {
            "the whole realm (nothing of it can be read)".into()
        });
        return Ok(rebuilt);
    };
    let upto = scan.readable_upto;
    let last = expected.max(scan.highest);
    if last > upto {
        rebuilt.lost.push(format!(
            "records {}..={last}{}; message rows keep what those of them replayed at \
             an earlier start changed (edits, flags, reactions, deletions: only writes \
             made live are in the undo log)",
            upto + 1,
            if expected > upto {
                format!(" (the manifest counted records up to {expected} durable)")
            } else {
                String::new()
            }
        ));
    }
    if let Some(e) = &scan.read_error {
        rebuilt.lost.push(format!(
            "whatever the database cannot read past record {upto} ({e})"
        ));
    }
    if !manifest_usable {
        rebuilt.lost.push(format!(
            "possibly records after {}: without a usable manifest, what the folder held beyond what can be read is unknown",
            upto.max(scan.highest)
        ));
    }
    let next_id = scan.realm.as_ref().map(|r| r.messages.next_id).unwrap_or(0);
    // Rows as found (those that decode, of messages the state knows), then the replay
    // of the WAL records kept writes the rows they imply again, as start-up does.
    let names = messages::tree_names(subdomain);
    let db = store.message_db().db().map_err(|e| err(&e))?;
    let (mut kept_rows, mut beyond) = (BTreeSet::new(), 0usize);
    if has_tree(old_rows, &names[0]) {
        let (from, to) = (
            old_rows.open_tree(&names[0]).map_err(|e| err(&e))?,
            db.open_tree(&names[0]).map_err(|e| err(&e))?,
        );
        let mut failed = false;
        for (k, v) in readable(&from, &mut failed) {
            let id = wal::key_seq(&k);
            if messages::decode_message(&v).is_err() {
                continue;
            }
            if id >= next_id {
                beyond += 1;
                continue;
            }
            to.insert(k, v).map_err(|e| err(&e))?;
            kept_rows.insert(id);
        }
        if failed {
            rebuilt.lost.push(format!(
                "the message rows after id {} (the database cannot read them)",
                kept_rows.last().copied().unwrap_or(0)
            ));
        }
    }
    if let Some(lost) = &check.messages_lost {
        rebuilt.lost.push(lost.clone());
    }
    if !check.bad_rows.is_empty() {
        rebuilt.lost.push(format!(
            "{} message rows that do not decode (ids {})",
            check.bad_rows.len(),
            some_ids(check.bad_rows.iter().map(|(id, _)| *id))
        ));
    }
    if beyond > 0 {
        rebuilt.lost.push(format!(
            "{beyond} message rows of messages sent after record {upto}"
        ));
    }
    for (i, name) in names.iter().enumerate().skip(1) {
        if !has_tree(old_rows, name) {
            continue;
        }
        let (from, to) = (
            old_rows.open_tree(name).map_err(|e| err(&e))?,
            db.open_tree(name).map_err(|e| err(&e))?,
        );
        let mut failed = false;
        for (k, v) in readable(&from, &mut failed) {
            let id = wal::key_seq(&k[k.len().saturating_sub(8)..]);
            // Index entries only for rows kept; per-user rows for known messages; the
            // undo log whole (the next start undoes what records after `upto` wrote
            // live; a record replayed at a start logged nothing, see `lost`).
            let keep = match i {
                1 => kept_rows.contains(&id),
                4 => true,
                _ => id < next_id,
            };
            if keep {
                to.insert(k, v).map_err(|e| err(&e))?;
            }
        }
        if failed {
            rebuilt
                .lost
                .push(format!("part of {name} (the database cannot read it)"));
        }
    }
    let mut realm_store = store.realm(subdomain).map_err(|e| err(&e))?;
    let (wal_tree, snaps) = (
        old.open_tree(format!("{WAL_PREFIX}{subdomain}"))
            .map_err(|e| err(&e))?,
        old.open_tree(format!("{SNAP_PREFIX}{subdomain}"))
            .map_err(|e| err(&e))?,
    );
    let msgs = realm_store.messages().clone();
    let again = integrity::scan(&wal_tree, &snaps, false, |r, c| msgs.project(r, c, None))
        .map_err(|e| err(&e))?;
    let realm = again
        .realm
        .filter(|_| again.readable_upto == upto)
        .ok_or_else(|| err(&"a second read of the realm found another state"))?;
    realm_store.install(upto, &realm).map_err(|e| err(&e))?;
    let mut entries = Vec::new();
    let presence = format!("{PRESENCE_PREFIX}{subdomain}");
    if has_tree(old, &presence) {
        let tree = old.open_tree(&presence).map_err(|e| err(&e))?;
        let mut failed = false;
        for (k, v) in readable(&tree, &mut failed) {
            if let (Ok(key), Ok(entry)) =
                (<[u8; 8]>::try_from(k.as_ref()), codec::decode_presence(&v))
            {
                entries.push((u64::from_be_bytes(key), entry));
            }
        }
        if failed {
            rebuilt
                .lost
                .push("presence records the database cannot read (soft state)".into());
        }
    }
    if check.bad_presence > 0 {
        rebuilt.lost.push(format!(
            "{} presence records that do not decode (soft state)",
            check.bad_presence
        ));
    }
    store
        .presence(subdomain)
        .write(&entries)
        .map_err(|e| err(&e))?;
    rebuilt.kept = Some((
        upto,
        realm.users.len(),
        realm.channels.len(),
        kept_rows.len(),
    ));
    Ok(rebuilt)
}

fn sync_parent(path: &Path) -> io::Result<()> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => File::open(parent)?.sync_all(),
        None => File::open(".")?.sync_all(),
    }
}

/// `hearth recover --data DIR --accept-loss`: rebuilds a damaged folder from what can
/// still be read (see the module doc), writing what it kept and lost to `out`.
pub fn recover_command(args: &RecoverArgs, out: &mut dyn Write) -> Result<(), String> {
    let data = &args.data;
    if !args.accept_loss {
        return Err(format!(
            "`hearth recover` rebuilds {0} from what can still be read and drops what \
             cannot (damaged records, and everything after them in a realm's log); it keeps \
             the damaged folder beside it. See what would be lost with `hearth check --data \
             {0}`, then run `hearth recover --data {0} --accept-loss`, or restore a backup \
             instead (`hearth restore --from BACKUP --data {0}`)",
            data.display()
        ));
    }
    let lock = lock_folder(data)?;
    super::check::finish_message_swap(data, out)?;
    let scratch = open_scratch(data).map_err(|e| {
        format!(
            "cannot recover {}: {e}. Nothing was changed; restore a backup (`hearth restore \
             --from BACKUP --data {}` into a new folder)",
            data.display(),
            data.display()
        )
    })?;
    let checked = check_db(data, &scratch);
    let w = |e: io::Error| e.to_string();
    if checked.sound(data) {
        writeln!(
            out,
            "data folder {} is sound: nothing to recover, nothing changed",
            data.display()
        )
        .map_err(w)?;
        return Ok(());
    }
    let building = beside(data, ".recovering")?;
    let damaged = beside(data, ".damaged")?;
    if building.exists() {
        fs::remove_dir_all(&building)
            .map_err(|e| format!("removing {}: {e}", building.display()))?;
    }
    let manifest_usable = matches!(checked.found, Found::Manifest(_));
    let built = (|| -> Result<Vec<Rebuilt>, String> {
        fs::create_dir_all(&building).map_err(|e| e.to_string())?;
        let store = Store::open(&building, DurabilityMode::Never).map_err(|e| e.to_string())?;
        let mut rebuilt = Vec::new();
        for r in &checked.realms {
            rebuilt.push(rebuild_realm(
                &scratch,
                &store,
                &r.subdomain,
                r,
                manifest_usable,
            )?);
        }
        store.durability.sync_blobs().map_err(|e| e.to_string())?;
        store.durability.shutdown();
        drop(store);
        // Everything that is not sled's nor the manifest: uploaded files, credentials.
        copy_tree(data, &building, true, &|name| {
            !is_sled_file(name) && !name.starts_with(manifest::MANIFEST_FILE)
        })
        .map_err(|e| format!("copying the uploaded files: {e}"))?;
        // A file whose content no longer matches its name is not served as if it did.
        for bad in &checked.bad_uploads {
            fs::remove_file(building.join(bad))
                .map_err(|e| format!("dropping {}: {e}", bad.display()))?;
        }
        Ok(rebuilt)
    })();
    let rebuilt = match built {
        Ok(r) if r.iter().all(|r| r.kept.is_none()) => {
            let _ = fs::remove_dir_all(&building);
            return Err(format!(
                "cannot recover {}: nothing of any realm can be read. Nothing was changed; \
                 restore a backup (`hearth restore --from BACKUP --data {}` into a new folder)",
                data.display(),
                data.display()
            ));
        }
        Ok(r) => r,
        Err(e) => {
            let _ = fs::remove_dir_all(&building);
            return Err(format!(
                "cannot recover {}: {e}. Nothing was changed",
                data.display()
            ));
        }
    };
    // The new folder must itself check sound before it takes the name.
    let verified = open_scratch(&building).and_then(|new| {
        let again = check_db(&building, &new);
        if again.sound(&building) {
            Ok(())
        } else {
            Err(lines_of(&building, &again).join("; "))
        }
    });
    if let Err(e) = verified {
        let _ = fs::remove_dir_all(&building);
        return Err(format!(
            "cannot recover {}: the rebuilt folder does not check sound ({e}). Nothing was changed",
            data.display()
        ));
    }
    fs::rename(data, &damaged).map_err(|e| {
        format!(
            "cannot move {} aside to {}: {e}; the rebuilt folder is {}",
            data.display(),
            damaged.display(),
            building.display()
        )
    })?;
    fs::rename(&building, data).map_err(|e| {
        format!(
            "cannot rename {} to {}: {e}; the damaged folder is now {}",
            building.display(),
            data.display(),
            damaged.display()
        )
    })?;
    let _ = sync_parent(data);
    drop(lock);
    writeln!(
        out,
        "recovered {} from what could still be read; the damaged folder is now {}",
        data.display(),
        damaged.display()
    )
    .map_err(w)?;
    for p in checked.folder_problems(data) {
        writeln!(out, "folder: {p}").map_err(w)?;
    }
    for bad in &checked.bad_uploads {
        writeln!(
            out,
            "folder: lost the uploaded file {} (its content no longer matches its checksum)",
            bad.display()
        )
        .map_err(w)?;
    }
    for r in &rebuilt {
        match r.kept {
            Some((upto, users, channels, rows)) => writeln!(
                out,
                "realm '{}': kept records up to {upto}: {users} users, {channels} channels, {rows} message rows",
                r.subdomain
            ),
            None => writeln!(out, "realm '{}': not kept", r.subdomain),
        }
        .map_err(w)?;
        if r.lost.is_empty() {
            writeln!(out, "realm '{}': nothing lost", r.subdomain).map_err(w)?;
        }
        for l in &r.lost {
            writeln!(out, "realm '{}': lost {l}", r.subdomain).map_err(w)?;
        }
    }
    Ok(())
}
