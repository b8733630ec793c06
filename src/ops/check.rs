//! `hearth check`: holds the data folder's lock, reads a scratch copy of its database
//! (`scratch`), runs start-up's judgement over every realm (`storage::integrity::judge`),
//! decodes every snapshot, record, message row and presence record, and hashes the
//! uploaded files. A report per realm; an error when anything is damaged.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use super::scratch::{
    find_manifest, has_tree, lock_folder, open_scratch, readable, some_ids, subdomains, Found,
    Scratch,
};
use crate::realm::messages::MessageId;
use crate::storage::integrity::{describe, judge, scan, Problem, Scan, Verdict};
use crate::storage::wal::manifest::{self, RealmMark};
use crate::storage::wal::{self, journal};
use crate::storage::{codec, messages, uploads, StorageError};
use crate::storage::{PRESENCE_PREFIX, SNAP_PREFIX, WAL_PREFIX};

/// `hearth check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Data folder to check (its server must be stopped).
    #[arg(long, env = "HEARTH_DATA", default_value = "./data")]
    pub data: PathBuf,
}

/// What the check found about one realm.
pub(super) struct RealmCheck {
    pub subdomain: String,
    pub mark: Option<RealmMark>,
    pub scan: Option<Scan>,
    pub verdict: Verdict,
    pub rows: usize,
    pub bad_rows: Vec<(MessageId, String)>,
    pub presence: usize,
    pub bad_presence: usize,
    /// What of the message rows the message database lost or cannot give (`recover`
    /// reports it lost).
    pub messages_lost: Option<String>,
}

pub(super) fn check_realm(
    scratch: &Scratch,
    subdomain: &str,
    mark: Option<RealmMark>,
) -> RealmCheck {
    let db = &scratch.db;
    let mut c = RealmCheck {
        subdomain: subdomain.to_owned(),
        mark,
        scan: None,
        verdict: Verdict::default(),
        rows: 0,
        bad_rows: Vec::new(),
        presence: 0,
        bad_presence: 0,
        messages_lost: None,
    };
    let read_error = |e: StorageError| Problem {
        expected: "the realm's trees readable".into(),
        found: format!("the database cannot be read ({})", describe(&e)),
    };
    let wal_name = format!("{WAL_PREFIX}{subdomain}");
    let snap_name = format!("{SNAP_PREFIX}{subdomain}");
    if !has_tree(db, &wal_name) && !has_tree(db, &snap_name) {
        c.verdict.problems.push(Problem {
            expected: format!(
                "records up to {} (the manifest)",
                mark.unwrap_or_default().last_seq
            ),
            found: "no trace of the realm in the database".into(),
        });
        return c;
    }
    let trees = db
        .open_tree(&wal_name)
        .and_then(|w| Ok((w, db.open_tree(&snap_name)?)));
    let (wal, snaps) = match trees {
        Ok(t) => t,
        Err(e) => {
            c.verdict.problems.push(read_error(e.into()));
            return c;
        }
    };
    match scan(&wal, &snaps, true, |_, _| Ok(())) {
        Ok(scan) => {
            c.verdict = judge(&scan, mark);
            c.scan = Some(scan);
        }
        Err(e) => {
            c.verdict.problems.push(read_error(e));
            return c;
        }
    }
    if let Some(refused) = &scratch.msgs_refused {
        c.messages_lost = Some(format!("every message row ({refused})"));
        c.verdict.problems.push(Problem {
            expected: format!("the message database {}/ readable", messages::FOLDER),
            found: refused.clone(),
        });
    } else if scratch.msgs_expected && scratch.msgs.is_none() {
        c.messages_lost = Some("every message row (the message database is missing)".into());
        c.verdict.problems.push(Problem {
            expected: format!("the message database {}/", messages::FOLDER),
            found: "none, though the database says the folder keeps its messages there".into(),
        });
    }
    let [rows, ..] = messages::tree_names(subdomain);
    let rows_db = scratch.rows_db(subdomain);
    if has_tree(rows_db, &rows) {
        match rows_db.open_tree(&rows) {
            Ok(tree) => {
                for item in tree.iter() {
                    match item {
                        Ok((k, v)) => {
                            c.rows += 1;
                            if let Err(e) = messages::decode_message(&v) {
                                c.bad_rows.push((wal::key_seq(&k), e.to_string()));
                            }
                        }
                        Err(e) => {
                            c.verdict.problems.push(read_error(e.into()));
                            break;
                        }
                    }
                }
            }
            Err(e) => c.verdict.problems.push(read_error(e.into())),
        }
    }
    if !c.bad_rows.is_empty() {
        c.verdict.problems.push(Problem {
            expected: "every message row readable".into(),
            found: format!(
                "{} rows that do not decode (ids {})",
                c.bad_rows.len(),
                some_ids(c.bad_rows.iter().map(|(id, _)| *id))
            ),
        });
    }
    let presence = format!("{PRESENCE_PREFIX}{subdomain}");
    if has_tree(db, &presence) {
        if let Ok(tree) = db.open_tree(&presence) {
            let mut failed = false;
            for (_, v) in readable(&tree, &mut failed) {
                c.presence += 1;
                if codec::decode_presence(&v).is_err() {
                    c.bad_presence += 1;
                }
            }
            if failed {
                c.verdict.problems.push(Problem {
                    expected: "the realm's presence records readable".into(),
                    found: "the database cannot read them all".into(),
                });
            }
        }
    }
    if c.bad_presence > 0 {
        c.verdict.problems.push(Problem {
            expected: "every presence record readable".into(),
            found: format!(
                "{} that do not decode (soft state: a start skips them)",
                c.bad_presence
            ),
        });
    }
    c
}

/// Uploaded files whose content does not match their name (the SHA-256 of it), relative
/// to the data folder: every file named by a hash anywhere under `uploads/` (each
/// realm's folder, and the old layout's `<aa>/` folders a start has not moved yet).
pub(super) fn bad_uploads(data: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            if !uploads::is_hash(&name) {
                continue;
            }
            if uploads::file_hash(&path).ok().as_deref() != Some(name.as_str()) {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&data.join(uploads::UPLOADS_DIR), &mut out);
    let mut out: Vec<PathBuf> = out
        .into_iter()
        .filter_map(|p| p.strip_prefix(data).ok().map(Path::to_path_buf))
        .collect();
    out.sort();
    out
}

/// What `hearth check` found in a folder.
pub(super) struct Checked {
    pub found: Found,
    pub realms: Vec<RealmCheck>,
    pub bad_uploads: Vec<PathBuf>,
    /// The journal is damaged before its end (`storage::wal::journal::Replayed::damaged`).
    pub journal_damage: Option<String>,
}

impl Checked {
    pub(super) fn folder_problems(&self, data: &Path) -> Vec<String> {
        let mut p = Vec::new();
        match &self.found {
            Found::Corrupt(e) => p.push(format!("the manifest cannot be used: {e}")),
            Found::Missing => p.push(format!(
                "the manifest {} is missing (the database says one was written)",
                manifest::path(data).display()
            )),
            _ => {}
        }
        if let Some(why) = &self.journal_damage {
            p.push(format!(
                "the journal {} has {why}, with a later commit's frames after it: the WAL records \
                 from there on are lost",
                data.join(journal::JOURNAL_FILE).display()
            ));
        }
        if !self.bad_uploads.is_empty() {
            p.push(format!(
                "{} uploaded files do not match their checksum: {}",
                self.bad_uploads.len(),
                self.bad_uploads
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        p
    }

    pub(super) fn sound(&self, data: &Path) -> bool {
        self.folder_problems(data).is_empty()
            && self.realms.iter().all(|r| r.verdict.problems.is_empty())
    }
}

pub(super) fn check_db(data: &Path, scratch: &Scratch) -> Checked {
    let db = &scratch.db;
    let found = find_manifest(data, db);
    let mut names: BTreeSet<String> = subdomains(db).into_iter().collect();
    names.extend(found.realms());
    let mut realms: Vec<RealmCheck> = names
        .iter()
        .map(|s| check_realm(scratch, s, found.mark(s)))
        .collect();
    // The message database is shared by the realms: a loss in it is each realm's.
    if let (Some(msgs), Found::Manifest(m)) = (&scratch.msgs, &found) {
        let lost = match messages::lost_writes(msgs, m.messages_synced) {
            Ok(lost) => lost,
            Err(e) => Some(format!("it cannot be read ({e})")),
        };
        if let Some(lost) = lost {
            for r in &mut realms {
                r.messages_lost = Some(format!("message rows: the message database {lost}"));
                r.verdict.problems.push(Problem {
                    expected: format!(
                        "the message database {}/ holding every sync the manifest counts",
                        messages::FOLDER
                    ),
                    found: lost.clone(),
                });
            }
        }
    }
    Checked {
        found,
        realms,
        bad_uploads: bad_uploads(data),
        journal_damage: scratch.journal.damaged.clone(),
    }
}

pub(super) fn realm_summary(r: &RealmCheck) -> String {
    let Some(scan) = &r.scan else {
        return String::new();
    };
    let mut s = format!(
        "{} snapshots (state from snapshot {}), {} WAL records, readable up to record {}",
        scan.snapshots,
        scan.base.map_or("none".into(), |b| b.to_string()),
        scan.wal_records,
        scan.readable_upto
    );
    if let Some(m) = r.mark {
        s.push_str(&format!(
            " (manifest: records up to {}, snapshot {})",
            m.last_seq, m.snapshot_seq
        ));
    }
    if let Some(realm) = &scan.realm {
        s.push_str(&format!(
            "; {} users, {} channels",
            realm.users.len(),
            realm.channels.len()
        ));
    }
    s.push_str(&format!(
        "; {} message rows, {} presence records",
        r.rows, r.presence
    ));
    s
}

pub(super) fn lines_of(data: &Path, c: &Checked) -> Vec<String> {
    let mut out = Vec::new();
    out.push(format!(
        "data folder {}: {}",
        data.display(),
        match &c.found {
            Found::Manifest(m) => format!("manifest readable ({} realms)", m.realms.len()),
            Found::None => "no manifest yet (a folder from before manifests: the next start writes one)".into(),
            Found::Missing => "the manifest is missing".into(),
            Found::Corrupt(e) => format!("the manifest cannot be used: {e}"),
        }
    ));
    for p in c.folder_problems(data) {
        out.push(format!("  problem: {p}"));
    }
    for r in &c.realms {
        let state = if r.verdict.problems.is_empty() {
            "sound"
        } else {
            "DAMAGED"
        };
        out.push(format!(
            "realm '{}': {state}: {}",
            r.subdomain,
            realm_summary(r)
        ));
        for p in &r.verdict.problems {
            out.push(format!(
                "  problem: expected {}, found {}",
                p.expected, p.found
            ));
        }
        for n in &r.verdict.notes {
            out.push(format!("  note: {n}"));
        }
    }
    out
}

/// `hearth check --data DIR`: writes the per-realm report to `out`; an error (one line)
/// when the folder is damaged or cannot be checked.
/// Ends a swap of the message database that a crash cut (`messages::finish_swap`),
/// as the next start would, so that what follows sees the folder a start sees; says so
/// when there was one.
pub fn finish_message_swap(data: &Path, out: &mut dyn Write) -> Result<(), String> {
    let finished = messages::finish_swap(data).map_err(|e| {
        format!(
            "data folder {}: the message database's interrupted swap cannot be finished: \
             {e}",
            data.display()
        )
    })?;
    if finished {
        writeln!(
            out,
            "finished an interrupted swap of the message database into {} (as a start \
             would)",
            data.join(messages::FOLDER).display()
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// What a folder's journal held, when it held anything: its records are read as part
/// of the WAL, as a start reads them.
pub(super) fn journal_line(j: &journal::Replayed) -> Option<String> {
    if j.records == 0 && j.torn.is_none() {
        return None;
    }
    Some(format!(
        "journal: {} WAL records since the last checkpoint, read with the WAL (as a start \
         would){}",
        j.records,
        j.torn
            .as_deref()
            .map(|t| format!("; it ends in {t} (what a crash during a write leaves)"))
            .unwrap_or_default()
    ))
}

pub fn check_command(args: &CheckArgs, out: &mut dyn Write) -> Result<(), String> {
    let data = &args.data;
    let _lock = lock_folder(data)?;
    finish_message_swap(data, out)?;
    let scratch = open_scratch(data).map_err(|e| {
        format!(
            "data folder {} is damaged: {e}. Nothing can be read from it: restore a backup \
             (`hearth restore --from BACKUP --data {}`)",
            data.display(),
            data.display()
        )
    })?;
    let checked = check_db(data, &scratch);
    let w = |e: io::Error| e.to_string();
    if let Some(line) = journal_line(&scratch.journal) {
        writeln!(out, "{line}").map_err(w)?;
    }
    for line in lines_of(data, &checked) {
        writeln!(out, "{line}").map_err(w)?;
    }
    if checked.sound(data) {
        writeln!(out, "sound").map_err(w)?;
        return Ok(());
    }
    Err(format!(
        "data folder {} is damaged (see the report above). `hearth recover --data {} \
         --accept-loss` rebuilds it from what can still be read and reports what is lost; \
         or restore a backup (`hearth restore --from BACKUP --data {}`)",
        data.display(),
        data.display(),
        data.display()
    ))
}
