//! Integrity: what a realm's trees must hold, given the manifest (`judge`, used by
//! start-up and `hearth check` alike), the refusal an operator reads (`Damage`), and
//! the two offline commands, `hearth check` and `hearth recover --accept-loss`.
//!
//! Both commands hold the data folder's lock (the one sled takes, so a server cannot
//! start meanwhile and a running one is named) and read a scratch copy of the database
//! files, never the folder itself: opening a damaged sled database lets sled cut and
//! zero what it cannot read, and the damaged folder is evidence to keep as it is.
//!
//! `recover` builds a new folder beside the damaged one from the newest consistent state
//! it can read (per realm: the newest snapshot that decodes and the WAL records after it
//! up to the first missing or unreadable one; the message rows and presence records
//! that decode; the uploaded files as they are), checks it, and only then moves the
//! damaged folder aside (`<data>.damaged-<time>`) and gives the new one its name.

use std::collections::BTreeSet;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use super::manifest::{self, Manifest, ManifestError, RealmMark};
use super::wal::{self, End, Scan};
use super::{codec, message_db, messages, uploads, DurabilityMode, StorageError, Store};
use super::{PRESENCE_PREFIX, SNAP_PREFIX, WAL_PREFIX};
use crate::realm::messages::MessageId;

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

/// One thing a realm's trees lack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub expected: String,
    pub found: String,
}

/// What `judge` makes of a realm's trees.
#[derive(Debug, Default)]
pub struct Verdict {
    /// What refuses a start, most specific first.
    pub problems: Vec<Problem>,
    /// What a start tolerates (a torn tail beyond the durable mark is cut).
    pub notes: Vec<String>,
}

/// Holds a realm's trees against its manifest mark (`None`: no manifest, or the realm
/// is not in it). Records and snapshots at or below the mark must be there and decode;
/// beyond it, an unreadable record is a torn tail (cut at start) and an unreadable
/// snapshot gives way to an older one. A WAL gap is always a problem: the state after
/// it would be partial.
pub fn judge(scan: &Scan, mark: Option<RealmMark>) -> Verdict {
    let m = mark.unwrap_or_default();
    let mut v = Verdict::default();
    let problem = |expected: String, found: String| Problem { expected, found };
    if let Some(e) = &scan.read_error {
        v.problems.push(problem(
            "the realm's WAL and snapshots readable".into(),
            format!(
                "the database cannot read them past record {} ({e})",
                scan.readable_upto
            ),
        ));
    }
    for (seq, e) in &scan.bad_snapshots {
        if *seq <= m.last_seq {
            v.problems.push(problem(
                format!(
                    "snapshot {seq} readable (the manifest counts records up to {} durable)",
                    m.last_seq
                ),
                format!("it does not decode ({e})"),
            ));
        } else {
            v.notes.push(format!(
                "snapshot {seq}, beyond the durable mark, does not decode ({e}): an older one is used"
            ));
        }
    }
    match &scan.end {
        Some(End::Unreadable(seq, e)) if *seq <= m.last_seq => v.problems.push(problem(
            format!(
                "WAL record {seq} readable (the manifest counts records up to {} durable)",
                m.last_seq
            ),
            format!("it does not decode ({e})"),
        )),
        Some(End::Unreadable(seq, e)) => v.notes.push(format!(
            "WAL record {seq} does not decode ({e}): a torn tail beyond the durable mark; \
             it and the {} records after it are cut at the next start",
            scan.after_end.saturating_sub(1)
        )),
        Some(End::Gap { expected, found }) => v.problems.push(problem(
            format!(
                "WAL record {expected} after snapshot {}",
                scan.base.unwrap_or(0)
            ),
            format!("a WAL gap: record {found} follows (the records in between are gone)"),
        )),
        None => {}
    }
    let covered = scan
        .bad_records
        .iter()
        .filter(|(seq, _)| *seq <= scan.base.unwrap_or(0))
        .count();
    if covered > 0 {
        v.notes.push(format!(
            "{covered} WAL records already covered by the snapshot do not decode (unused)"
        ));
    }
    if m.snapshot_seq > 0 && scan.base.unwrap_or(0) < m.snapshot_seq {
        v.problems.push(problem(
            format!(
                "a snapshot covering record {} or later (the manifest)",
                m.snapshot_seq
            ),
            match scan.base {
                Some(base) => format!("the newest readable snapshot covers record {base}"),
                None => "no readable snapshot".into(),
            },
        ));
    }
    if scan.readable_upto < m.last_seq {
        v.problems.push(problem(
            format!("records up to {} (the manifest)", m.last_seq),
            if scan.realm.is_some() {
                format!("records up to {} only", scan.readable_upto)
            } else {
                "no readable snapshot and no WAL record".into()
            },
        ));
    }
    if scan.realm.is_none() && v.problems.is_empty() {
        v.problems.push(problem(
            "the realm's snapshot or its first WAL record".into(),
            "neither can be read".into(),
        ));
    }
    v
}

/// `hearth check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Data folder to check (its server must be stopped).
    #[arg(long, env = "HEARTH_DATA", default_value = "./data")]
    pub data: PathBuf,
}

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

/// The data folder's lock, held while a command reads it: sled's own (an `flock` on
/// its `db` file), so no server runs meanwhile.
struct FolderLock(#[allow(dead_code)] File);

fn lock_folder(data: &Path) -> Result<FolderLock, String> {
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
fn is_sled_file(name: &str) -> bool {
    matches!(name, "conf" | "db" | "blobs" | message_db::FOLDER) || name.starts_with("snap.")
}

/// Copies a folder tree; `sync`: each file and folder fsynced.
fn copy_tree(src: &Path, dst: &Path, sync: bool, keep: &dyn Fn(&str) -> bool) -> io::Result<()> {
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
/// database and, when the folder has one, the message database (`message_db`).
struct Scratch {
    db: sled::Db,
    msgs: Option<sled::Db>,
    /// Why sled refuses the message database, when it does (the main one may still
    /// hold whole realms: `recover` keeps them).
    msgs_refused: Option<String>,
    /// Whether the main database says the folder keeps its messages in `msgs`.
    msgs_expected: bool,
    _dir: tempfile::TempDir,
}

impl Scratch {
    /// The database holding a realm's message trees: the main one for a folder from
    /// before the message database (not yet moved), else the message database.
    fn rows_db(&self, subdomain: &str) -> &sled::Db {
        let [rows, ..] = messages::tree_names(subdomain);
        match &self.msgs {
            Some(msgs) if !has_tree(&self.db, &rows) => msgs,
            _ => &self.db,
        }
    }
}

fn open_scratch(data: &Path) -> Result<Scratch, String> {
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
        sled::Config::new().path(path).flush_every_ms(None).open()
    }) {
        Ok(Ok(db)) => Ok(db),
        Ok(Err(e)) => Err(format!("sled cannot open {what} ({e})")),
        Err(_) => Err(format!(
            "sled cannot open {what} (it failed while reading the files)"
        )),
    };
    let db = open(dir.path().to_path_buf(), "it")?;
    let (msgs, msgs_refused) = if message_db::exists(dir.path()) {
        match open(dir.path().join(message_db::FOLDER), "its message database") {
            Ok(db) => (Some(db), None),
            Err(e) => (None, Some(e)),
        }
    } else {
        (None, None)
    };
    let msgs_expected = message_db::has_marker(&db).unwrap_or(false);
    Ok(Scratch {
        db,
        msgs,
        msgs_refused,
        msgs_expected,
        _dir: dir,
    })
}

/// The manifest of a folder as a command sees it.
enum Found {
    Manifest(Manifest),
    /// No manifest, and the database says none was written (a folder from before).
    None,
    /// No manifest though the database says one was written.
    Missing,
    Corrupt(ManifestError),
}

impl Found {
    fn mark(&self, realm: &str) -> Option<RealmMark> {
        match self {
            Found::Manifest(m) => m.realms.get(realm).copied(),
            _ => None,
        }
    }

    fn realms(&self) -> Vec<String> {
        match self {
            Found::Manifest(m) => m.realms.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }
}

fn find_manifest(data: &Path, db: &sled::Db) -> Found {
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
fn subdomains(db: &sled::Db) -> Vec<String> {
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

fn has_tree(db: &sled::Db, name: &str) -> bool {
    db.tree_names().iter().any(|n| n == name.as_bytes())
}

/// What the check found about one realm.
struct RealmCheck {
    subdomain: String,
    mark: Option<RealmMark>,
    scan: Option<Scan>,
    verdict: Verdict,
    rows: usize,
    bad_rows: Vec<(MessageId, String)>,
    presence: usize,
    bad_presence: usize,
    /// What of the message rows the message database lost or cannot give (`recover`
    /// reports it lost).
    messages_lost: Option<String>,
}

fn check_realm(scratch: &Scratch, subdomain: &str, mark: Option<RealmMark>) -> RealmCheck {
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
    match wal::scan(&wal, &snaps, true, |_, _| Ok(())) {
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
            expected: format!("the message database {}/ readable", message_db::FOLDER),
            found: refused.clone(),
        });
    } else if scratch.msgs_expected && scratch.msgs.is_none() {
        c.messages_lost = Some("every message row (the message database is missing)".into());
        c.verdict.problems.push(Problem {
            expected: format!("the message database {}/", message_db::FOLDER),
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

/// A tree's entries up to the first that sled cannot read; `failed` is set then.
fn readable<'a>(
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
fn some_ids(ids: impl Iterator<Item = u64>) -> String {
    let ids: Vec<u64> = ids.collect();
    let mut s: Vec<String> = ids.iter().take(10).map(u64::to_string).collect();
    if ids.len() > 10 {
        s.push(format!("and {} more", ids.len() - 10));
    }
    s.join(", ")
}

/// Uploaded files whose content does not match their name (the SHA-256 of it), relative
/// to the data folder: every file named by a hash anywhere under `uploads/` (each
/// realm's folder, and the old layout's `<aa>/` folders a start has not moved yet).
fn bad_uploads(data: &Path) -> Vec<PathBuf> {
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
struct Checked {
    found: Found,
    realms: Vec<RealmCheck>,
    bad_uploads: Vec<PathBuf>,
}

impl Checked {
    fn folder_problems(&self, data: &Path) -> Vec<String> {
        let mut p = Vec::new();
        match &self.found {
            Found::Corrupt(e) => p.push(format!("the manifest cannot be used: {e}")),
            Found::Missing => p.push(format!(
                "the manifest {} is missing (the database says one was written)",
                manifest::path(data).display()
            )),
            _ => {}
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

    fn sound(&self, data: &Path) -> bool {
        self.folder_problems(data).is_empty()
            && self.realms.iter().all(|r| r.verdict.problems.is_empty())
    }
}

fn check_db(data: &Path, scratch: &Scratch) -> Checked {
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
        let lost = match message_db::lost_writes(msgs, m.messages_synced) {
            Ok(lost) => lost,
            Err(e) => Some(format!("it cannot be read ({e})")),
        };
        if let Some(lost) = lost {
            for r in &mut realms {
                r.messages_lost = Some(format!("message rows: the message database {lost}"));
                r.verdict.problems.push(Problem {
                    expected: format!(
                        "the message database {}/ holding every sync the manifest counts",
                        message_db::FOLDER
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
    }
}

fn realm_summary(r: &RealmCheck) -> String {
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

fn lines_of(data: &Path, c: &Checked) -> Vec<String> {
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
pub fn check_command(args: &CheckArgs, out: &mut dyn Write) -> Result<(), String> {
    let data = &args.data;
    let _lock = lock_folder(data)?;
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
    let db = store.durability.message_db().db().map_err(|e| err(&e))?;
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
    let again = wal::scan(&wal_tree, &snaps, false, |r, c| msgs.project(r, c, None))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realm::dev::dev_realm_changes;
    use crate::realm::{Cx, Realm};

    fn scan(base: Option<u64>, upto: u64, end: Option<End>) -> Scan {
        let changes = dev_realm_changes(&mut Cx::seeded(1, 1)).expect("seed");
        Scan {
            base,
            readable_upto: upto,
            end,
            after_end: 3,
            highest: upto + 3,
            realm: Realm::from_first_change(&changes[0]),
            ..Scan::default()
        }
    }

    fn mark(last_seq: u64, snapshot_seq: u64) -> Option<RealmMark> {
        Some(RealmMark {
            last_seq,
            snapshot_seq,
        })
    }

    #[test]
    fn a_torn_tail_beyond_the_mark_is_a_note_at_or_below_it_a_refusal() {
        let torn = scan(Some(10), 20, Some(End::Unreadable(21, "checksum".into())));
        let v = judge(&torn, mark(20, 10));
        assert!(v.problems.is_empty(), "{:?}", v.problems);
        assert!(v.notes[0].contains("torn tail"), "{:?}", v.notes);

        let damaged = scan(Some(10), 19, Some(End::Unreadable(20, "checksum".into())));
        let v = judge(&damaged, mark(20, 10));
        assert!(v.problems[0].expected.contains("WAL record 20 readable"));
        assert!(v.problems[0].found.contains("checksum"));
        assert!(v.problems[1].expected.contains("records up to 20"));
    }

    #[test]
    fn a_store_behind_its_manifest_or_missing_its_snapshot_is_refused() {
        let v = judge(&scan(Some(10), 15, None), mark(20, 10));
        assert_eq!(
            v.problems,
            vec![Problem {
                expected: "records up to 20 (the manifest)".into(),
                found: "records up to 15 only".into(),
            }]
        );
        let v = judge(&scan(Some(1), 30, None), mark(30, 25));
        assert!(v.problems[0].found.contains("covers record 1"));
        // Ahead of the manifest is fine: it may lag, never lead.
        assert!(judge(&scan(Some(30), 40, None), mark(30, 25))
            .problems
            .is_empty());
        // Without a manifest only what start-up always refused is refused.
        assert!(judge(&scan(None, 40, None), None).problems.is_empty());
        let gap = scan(
            Some(5),
            9,
            Some(End::Gap {
                expected: 10,
                found: 12,
            }),
        );
        assert!(judge(&gap, None).problems[0].found.contains("WAL gap"));
    }

    #[test]
    fn an_unreadable_snapshot_counts_only_at_or_below_the_mark() {
        let mut s = scan(Some(10), 20, None);
        s.bad_snapshots = vec![(25, "checksum mismatch".into())];
        let v = judge(&s, mark(20, 10));
        assert!(v.problems.is_empty() && v.notes.len() == 1, "{v:?}");
        s.bad_snapshots = vec![(15, "checksum mismatch".into())];
        let v = judge(&s, mark(20, 10));
        assert!(
            v.problems[0].expected.contains("snapshot 15 readable"),
            "{v:?}"
        );
    }

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
