//! Realm archives (`storage::archive` has the format): writing one from a realm's
//! state at a WAL position (`write_archive`; `export_running` on a running node) and
//! importing one into open databases (`import_into`), which the admin listener (a
//! move) and the stopped server's commands (`ops::archive`) call.
//!
//! An export writes one realm at one WAL position: its state (the snapshot record),
//! every message with each user's flags, its uploaded files and its coalesced presence.
//! Online, the position is the realm actor's last appended record (made durable
//! first); the message rows are read afterwards while writes go on, so a row may be
//! newer than the position. That is harmless: every WAL record after the position is
//! projected again when the tail is replayed on the target (a projection writes the
//! same keys again, in record order), so the rows end as the source's.
//!
//! A data export of the organization (`api::realm_export`) writes a filtered archive
//! (`export_running_filtered`): only the message rows its type keeps
//! (`Realm::export_filter`), with their flags, and none of the uploaded files that
//! only left-out messages link. Its realm part (`Realm::export_state`) lacks the
//! drafts, scheduled messages and reminders of the users whose private data it does
//! not hold, and the attachment records of left-out messages (Zulip's
//! `fetch_attachment_data`), and is otherwise whole (users, channels, settings);
//! it imports as any archive, into a realm without the left-out messages. The format
//! does not say an archive is filtered (its header and manifest are positional
//! bincode with a golden fixture): the manifest's message count is the kept rows'.
//! The operator's `hearth realm export` commands write the whole realm.
//!
//! An import writes everything of the realm but its WAL tree (message rows, files,
//! presence, then the snapshot at the archive's position), makes it durable, and only
//! then creates the WAL tree: that write makes the realm exist (`Store::realm_subdomains`
//! lists WAL trees). A failure removes what it wrote; a crash leaves only trees and
//! files of a realm that does not exist, which the next import of it clears first. An
//! import never loads the realm: a running node loads it through the normal recovery,
//! after shipping the WAL records written since the position.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::actor::{ExportPoint, RealmActor};
use crate::realm::messages::fetch::Source;
use crate::realm::messages::MessageId;
use crate::realm::presence::PresenceEntry;
use crate::realm::realm_export::{ExportFilter, ExportType};
use crate::realm::{Realm, UserId};
use crate::storage::archive::{
    unframe, verify, ArchiveReader, ArchiveWriter, ArchivedMessage, Counts, FilePiece, FormatError,
    Header, Manifest, PartKind, PresencePart, FILE_PIECE,
};
use crate::storage::messages::Readiness;
use crate::storage::messages::{decode_message, encode_message, MessageStore};
use crate::storage::uploads::{self, UploadStore};
use crate::storage::{codec, StorageError, Store};
use crate::storage::{PRESENCE_PREFIX, SNAP_PREFIX, WAL_PREFIX};

/// Why an export or an import did not happen. One line for the operator.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("{0}")]
    Format(#[from] FormatError),
    #[error("storage: {0}")]
    Storage(#[from] StorageError),
    /// Refused before anything was written (the realm exists, the file exists, ...).
    #[error("{0}")]
    Refused(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl From<codec::CodecError> for ArchiveError {
    fn from(e: codec::CodecError) -> Self {
        ArchiveError::Storage(e.into())
    }
}

fn io_at(path: &Path) -> impl Fn(std::io::Error) -> ArchiveError + '_ {
    move |source| ArchiveError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What an import made: the realm, absent from the node's registry until loaded.
#[derive(Debug, Clone)]
pub struct ImportedRealm {
    pub subdomain: String,
    /// The WAL position of its snapshot: the source's records after it are the tail.
    pub seq: u64,
    pub manifest: Manifest,
    /// A data export's owners (active, human), with the API keys the import gave them:
    /// the export held no key or password, and they are the realm's way back in.
    pub new_owner_keys: Vec<(String, String)>,
}

/// A failure put in an import on purpose (tests): stop at the first part of this kind,
/// with an error (`Fail`) or by ending the process as `kill -9` would (`Abort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Fail(PartKind),
    Abort(PartKind),
}

impl Fault {
    /// `HEARTH_ARCHIVE_FAULT=abort:<part>` (`realm`, `messages`, `uploads`, `presence`,
    /// `manifest`): an import ends its process at the first part of that kind, as
    /// `kill -9` would (the crash tests of `hearth realm import` and of a move).
    pub fn from_env() -> Option<Fault> {
        let f = std::env::var("HEARTH_ARCHIVE_FAULT").ok()?;
        let kind = match f.strip_prefix("abort:")? {
            "realm" => PartKind::Realm,
            "messages" => PartKind::Messages,
            "uploads" => PartKind::Uploads,
            "presence" => PartKind::Presence,
            "manifest" => PartKind::Manifest,
            _ => return None,
        };
        Some(Fault::Abort(kind))
    }
}

// ---------------------------------------------------------------------------------
// The message trees: the only code that reads or writes them.

/// The messages with ids in `[from, to]` as logical records: each row with every
/// user's flag bits on it, by user id. `users`: every user of the realm (each message
/// has its sender's index entry; each flag is a user's). `keep`: the rows to hold
/// (`None`: all); a left-out row goes with its flags (reactions are in the row).
fn read_messages(
    rows: &MessageStore,
    users: &[UserId],
    from: MessageId,
    to: MessageId,
    keep: Option<&ExportFilter>,
) -> Result<Vec<ArchivedMessage>, StorageError> {
    let mut found: BTreeMap<MessageId, Vec<(UserId, u32)>> = BTreeMap::new();
    for &user in users {
        for id in rows.ids(&Source::Sender(user), from, to, false)? {
            found.entry(id?).or_default();
        }
        for id in rows.ids(&Source::User(user), from, to, false)? {
            let id = id?;
            if let Some(bits) = rows.flags(user, id)? {
                found.entry(id).or_default().push((user, bits));
            }
        }
    }
    let mut out = Vec::with_capacity(found.len());
    for (id, flags) in found {
        // A deleted message leaves its per-user rows behind: no row, no record.
        if let Some(m) = rows.get(id)? {
            if keep.is_some_and(|keep| !keep(&m, &flags)) {
                continue;
            }
            out.push(ArchivedMessage {
                id,
                row: encode_message(&m)?,
                flags,
            });
        }
    }
    Ok(out)
}

/// Writes logical message records into the realm's trees (as a send projects them).
fn write_messages(rows: &MessageStore, batch: Vec<ArchivedMessage>) -> Result<(), StorageError> {
    for m in batch {
        rows.insert_archived(decode_message(&m.row)?, m.flags)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// Export.

/// Waits until the message database is open (an offline export right after opening
/// the folder; its opening may take longer than a read's bounded wait).
pub(crate) fn wait_for_messages(store: &Store) -> Result<(), ArchiveError> {
    loop {
        match store.message_db().readiness() {
            Readiness::Open => return Ok(()),
            Readiness::Failed(why) => {
                return Err(ArchiveError::Refused(format!(
                    "the message database cannot be read: {why}"
                )))
            }
            Readiness::Opening => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Where an archive is written until it is complete.
fn partial_path(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    out.with_file_name(name)
}

pub(crate) fn refuse_existing(out: &Path) -> Result<(), ArchiveError> {
    if out.exists() {
        return Err(ArchiveError::Refused(format!(
            "{} exists already: give a new file",
            out.display()
        )));
    }
    Ok(())
}

/// Messages read per batch of ids: fewer when the realm has many users (each batch
/// costs two range probes per user).
fn id_span(users: usize) -> u64 {
    (4_000_000 / users.max(1) as u64).clamp(256, 16_384)
}

/// Writes the archive of `realm` (the state after WAL record `seq`) to `out`, through
/// `out.partial`, renamed only once complete and durable; never over an existing file.
pub fn write_archive(
    store: &Store,
    subdomain: &str,
    seq: u64,
    realm: &Realm,
    out: &Path,
) -> Result<Manifest, ArchiveError> {
    write_archive_filtered(store, subdomain, seq, realm, out, None)
}

/// What a data export leaves out: the message rows `keep` refuses, and the uploaded
/// files of the attachment records its realm part dropped
/// (`Realm::export_left_out_files`).
pub struct Filter<'a> {
    pub keep: &'a ExportFilter,
    pub left_out: &'a std::collections::HashSet<String>,
}

/// `write_archive` leaving out what `filter` says (`None`: nothing).
pub fn write_archive_filtered(
    store: &Store,
    subdomain: &str,
    seq: u64,
    realm: &Realm,
    out: &Path,
    filter: Option<&Filter>,
) -> Result<Manifest, ArchiveError> {
    refuse_existing(out)?;
    let partial = partial_path(out);
    let _ = fs::remove_file(&partial);
    let written =
        write_parts(store, subdomain, seq, realm, &partial, filter).and_then(|manifest| {
            // A hard link does not replace an existing file, as a rename would.
            fs::hard_link(&partial, out).map_err(io_at(out))?;
            let _ = fs::remove_file(&partial);
            if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
                fs::File::open(dir)
                    .and_then(|d| d.sync_all())
                    .map_err(io_at(dir))?;
            }
            Ok(manifest)
        });
    if written.is_err() {
        let _ = fs::remove_file(&partial);
    }
    written
}

fn write_parts(
    store: &Store,
    subdomain: &str,
    seq: u64,
    realm: &Realm,
    path: &Path,
    filter: Option<&Filter>,
) -> Result<Manifest, ArchiveError> {
    let keep = filter.map(|f| f.keep);
    let mut w = ArchiveWriter::create(path)?;
    let mut counts = Counts {
        users: realm.users.len() as u64,
        channels: realm.channels.len() as u64,
        scheduled_messages: realm.messages.scheduled.len() as u64,
        reminders: realm.reminders.by_id.len() as u64,
        custom_emoji: realm.emoji.image_shas().len() as u64,
        ..Counts::default()
    };
    w.value(
        PartKind::Header,
        &Header {
            subdomain: subdomain.to_owned(),
            realm_schema: codec::REALM_SCHEMA,
            seq,
            exported_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or_default(),
            hearth_version: env!("CARGO_PKG_VERSION").to_owned(),
        },
    )?;
    w.part(PartKind::Realm, &codec::encode_realm(realm)?)?;

    // Messages, a batch of ids at a time: memory holds one batch, never the realm's.
    let rows = store.messages(subdomain);
    let users: Vec<UserId> = realm.users.keys().copied().collect();
    let span = id_span(users.len());
    let last = realm.messages.next_id.saturating_sub(1);
    let mut from = 1;
    while from <= last {
        let to = from.saturating_add(span - 1).min(last);
        let batch = read_messages(&rows, &users, from, to, keep)?;
        counts.messages += batch.len() as u64;
        counts.user_messages += batch.iter().map(|m| m.flags.len() as u64).sum::<u64>();
        for chunk in batch.chunks(512) {
            w.value(PartKind::Messages, &chunk)?;
        }
        from = to + 1;
    }

    // Uploaded files: everything stored under the realm's folder (an upload under way
    // online is there before the realm records it, so its record in the tail finds it).
    let files = UploadStore::new(store.durability.dir());
    let dir = files.realm_dir(subdomain);
    let mut names: Vec<String> = match fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| uploads::is_hash(n))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io_at(&dir)(e)),
    };
    if let Some(filter) = filter {
        names.retain(|n| !filter.left_out.contains(n));
    }
    names.sort();
    let mut buffer = vec![0u8; FILE_PIECE];
    for name in names {
        let path = dir.join(&name);
        let mut file = match fs::File::open(&path) {
            Ok(f) => f,
            // Removed by the sweeper meanwhile: nothing names it any more.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_at(&path)(e)),
        };
        counts.files += 1;
        loop {
            let n = read_full(&mut file, &mut buffer).map_err(io_at(&path))?;
            counts.file_bytes += n as u64;
            let last = n < buffer.len();
            w.value(
                PartKind::Uploads,
                &FilePiece {
                    sha256: name.clone(),
                    bytes: buffer[..n].to_vec(),
                    last,
                },
            )?;
            if last {
                break;
            }
        }
    }

    // Presence: soft; what was last coalesced.
    let presence: Vec<(UserId, PresenceEntry)> = store.presence(subdomain).load()?;
    counts.presence = presence.len() as u64;
    let part: PresencePart = presence
        .iter()
        .map(|(u, e)| Ok((*u, codec::encode_presence(e)?)))
        .collect::<Result<_, codec::CodecError>>()?;
    w.value(PartKind::Presence, &part)?;

    Ok(w.finish(Manifest {
        subdomain: subdomain.to_owned(),
        realm_schema: codec::REALM_SCHEMA,
        seq,
        counts,
        ..Manifest::default()
    })?)
}

/// Reads until `buffer` is full or the file ends; returns how much was read.
fn read_full(file: &mut impl std::io::Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buffer.len() {
        match file.read(&mut buffer[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Exports a realm a running node serves, without stopping its writes: asks its actor
/// for the point (last record and the state after it; O(1) for the actor), makes that
/// record durable, then writes the archive on a blocking thread while writes go on.
pub async fn export_running(
    store: Store,
    actor: &actix::Addr<RealmActor>,
    subdomain: &str,
    out: &Path,
) -> Result<Manifest, ArchiveError> {
    export_running_filtered(store, actor, subdomain, out, None).await
}

/// `export_running` of a data export of type `kind` (`None`: the whole realm): the
/// messages `Realm::export_filter` chooses from the state at the point.
pub async fn export_running_filtered(
    store: Store,
    actor: &actix::Addr<RealmActor>,
    subdomain: &str,
    out: &Path,
    kind: Option<ExportType>,
) -> Result<Manifest, ArchiveError> {
    refuse_existing(out)?;
    let (seq, realm) = actor
        .send(ExportPoint)
        .await
        .map_err(|e| ArchiveError::Refused(format!("the realm's actor is gone: {e}")))?
        .map_err(ArchiveError::Refused)?;
    let subdomain = subdomain.to_owned();
    let out = out.to_path_buf();
    tokio::task::spawn_blocking(move || {
        // The position's record (and every one before it) durable: the archive never
        // holds what a crash of the source could take back.
        store.durability.flush_now().map_err(StorageError::from)?;
        wait_for_messages(&store)?;
        match kind {
            None => write_archive(&store, &subdomain, seq, &realm, &out),
            Some(kind) => {
                let keep = realm.export_filter(kind);
                let rows = store.messages(&subdomain);
                let kept_links = realm
                    .export_kept_links(&rows, kind)
                    .map_err(|e| StorageError::Invalid(e.to_string()))?;
                let part = realm.export_state(kind, &kept_links);
                let left_out = realm.export_left_out_files(&part);
                let filter = Filter {
                    keep: &keep,
                    left_out: &left_out,
                };
                write_archive_filtered(&store, &subdomain, seq, &part, &out, Some(&filter))
            }
        }
    })
    .await
    .map_err(|e| ArchiveError::Refused(format!("the export thread failed: {e}")))?
}

// ---------------------------------------------------------------------------------
// Import.

/// Imports an archive into an open data folder (stopped, or a running node's open
/// databases), without loading the realm. Blocking: run it off the async workers.
/// Refuses a realm that exists, a damaged archive (naming the part) and a newer
/// version; a failure leaves nothing of the realm.
pub fn import_into(store: &Store, archive: &Path) -> Result<ImportedRealm, ArchiveError> {
    import_into_with(store, archive, None)
}

/// `import_into` with a failure put in on purpose (tests).
pub fn import_into_with(
    store: &Store,
    archive: &Path,
    fault: Option<Fault>,
) -> Result<ImportedRealm, ArchiveError> {
    import_verified(store, archive, verify(archive)?, fault)
}

/// `import_into_with` of an archive `verify` read whole (its header and manifest).
pub(crate) fn import_verified(
    store: &Store,
    archive: &Path,
    (header, manifest): (Header, Manifest),
    fault: Option<Fault>,
) -> Result<ImportedRealm, ArchiveError> {
    let subdomain = header.subdomain.clone();
    if header.realm_schema > codec::REALM_SCHEMA {
        return Err(ArchiveError::Refused(format!(
            "{} holds a realm of snapshot schema {}, newer than this hearth reads (up to \
             {}): import it with a newer hearth",
            archive.display(),
            header.realm_schema,
            codec::REALM_SCHEMA
        )));
    }
    // Subdomains are the only name realms share in a folder: every tree and the
    // uploads folder are named by it, and ids (users, messages, ...) are per realm.
    if store.realm_subdomains().iter().any(|s| s == &subdomain) {
        return Err(ArchiveError::Refused(format!(
            "realm '{subdomain}' already exists in {}",
            store.durability.dir().display()
        )));
    }
    // What an import cut short by a crash left (never a realm: no WAL tree).
    store.discard_remains(&subdomain)?;
    let written = write_realm(store, &header, archive, fault);
    if written.is_err() {
        if let Err(e) = store.discard_remains(&subdomain) {
            tracing::error!("removing what a failed import of '{subdomain}' wrote: {e}");
        }
    }
    let (seq, new_owner_keys) = written?;
    Ok(ImportedRealm {
        subdomain,
        seq,
        manifest,
        new_owner_keys,
    })
}

/// Writes the archive's parts, makes them durable, then creates the WAL tree (the
/// realm now exists) and names it in the manifest. Returns the snapshot's position,
/// and the owners given new API keys (`ImportedRealm::new_owner_keys`).
fn write_realm(
    store: &Store,
    header: &Header,
    archive: &Path,
    fault: Option<Fault>,
) -> Result<(u64, Vec<(String, String)>), ArchiveError> {
    let subdomain = &header.subdomain;
    let db = store
        .db()
        .ok_or_else(|| ArchiveError::Refused("the database is closed after a fault".into()))?;
    let rows = store.messages(subdomain);
    let files = Arc::new(UploadStore::new(store.durability.dir()));
    let presence = db
        .open_tree(format!("{PRESENCE_PREFIX}{subdomain}"))
        .map_err(StorageError::from)?;
    // Rows are written straight to the open message database: while it opens they
    // would queue in memory (all of them) and its first sync would outwait its bound.
    wait_for_messages(store)?;
    // The presence tree marks a begun import (`Store::discard_remains`): durable first.
    store.durability.flush_now().map_err(StorageError::from)?;
    let mut reader = ArchiveReader::open(archive)?;
    let mut snapshot: Option<Vec<u8>> = None;
    let mut new_owner_keys = Vec::new();
    let mut receiving: Option<(String, uploads::Incoming)> = None;
    while let Some(part) = reader.next_part()? {
        match fault {
            Some(Fault::Fail(kind)) if kind == part.kind => {
                return Err(ArchiveError::Refused(format!(
                    "failure put in at part '{}'",
                    kind.name()
                )))
            }
            Some(Fault::Abort(kind)) if kind == part.kind => {
                // What the database and the files hold so far stays, as after kill -9.
                let _ = store.durability.flush_now();
                let _ = rows.sync();
                std::process::abort();
            }
            _ => {}
        }
        let damaged = |e: &dyn std::fmt::Display| reader.damaged(part.kind.name(), part.index, e);
        match part.kind {
            PartKind::Header | PartKind::Manifest => {}
            PartKind::Realm => {
                let mut realm = codec::decode_realm(&part.bytes).map_err(|e| damaged(&e))?;
                if realm.settings.subdomain != *subdomain {
                    return Err(damaged(&format!(
                        "the realm's subdomain is '{}', the header's '{subdomain}'",
                        realm.settings.subdomain
                    ))
                    .into());
                }
                // A data export holds no API keys (`Realm::strip_secrets`): its users
                // get new ones here, never the source's. A realm archive holds them
                // all and is written as it came.
                let mut cx = crate::realm::Cx::new(&crate::realm::cx::SystemClock);
                let issued = realm.issue_missing_api_keys(&mut cx);
                new_owner_keys = issued
                    .iter()
                    .filter_map(|id| realm.users.get(id))
                    .filter(|u| u.is_owner() && u.is_active && !u.is_bot())
                    .map(|u| (u.delivery_email.clone(), u.api_key.clone()))
                    .collect();
                snapshot = Some(if issued.is_empty() {
                    part.bytes
                } else {
                    codec::encode_realm(&realm).map_err(StorageError::from)?
                });
            }
            PartKind::Messages => {
                let batch: Vec<ArchivedMessage> = unframe(&part.bytes).map_err(|e| damaged(&e))?;
                write_messages(&rows, batch)?;
            }
            PartKind::Uploads => {
                let piece: FilePiece = unframe(&part.bytes).map_err(|e| damaged(&e))?;
                if !uploads::is_hash(&piece.sha256) {
                    return Err(damaged(&format!("a file named '{}'", piece.sha256)).into());
                }
                let (name, incoming) = match receiving.take() {
                    Some((name, incoming)) if name == piece.sha256 => (name, incoming),
                    Some((name, _)) => {
                        return Err(
                            damaged(&format!("file {name} ends without its last piece")).into()
                        )
                    }
                    None => (
                        piece.sha256.clone(),
                        files
                            .incoming(rand::random())
                            .map_err(io_at(store.durability.dir()))?,
                    ),
                };
                let mut incoming = incoming;
                incoming
                    .write(&piece.bytes)
                    .map_err(io_at(store.durability.dir()))?;
                if piece.last {
                    if incoming.sha256() != name {
                        return Err(damaged(&format!(
                            "file {name} does not have the content its name says"
                        ))
                        .into());
                    }
                    drop(
                        files
                            .store(subdomain, incoming)
                            .map_err(io_at(store.durability.dir()))?,
                    );
                } else {
                    receiving = Some((name, incoming));
                }
            }
            PartKind::Presence => {
                let entries: PresencePart = unframe(&part.bytes).map_err(|e| damaged(&e))?;
                for (user, bytes) in entries {
                    // Soft: a record that does not decode is left out.
                    if codec::decode_presence(&bytes).is_ok() {
                        presence
                            .insert(user.to_be_bytes(), bytes)
                            .map_err(StorageError::from)?;
                    }
                }
            }
        }
    }
    if let Some((name, _)) = receiving {
        return Err(reader
            .damaged(
                "uploads",
                0,
                format!("file {name} ends without its last piece"),
            )
            .into());
    }
    let Some(snapshot) = snapshot else {
        return Err(reader.damaged("realm", 0, "missing").into());
    };
    // Everything durable first, in the order a snapshot makes it so: the message rows,
    // then the snapshot and what else the main database holds.
    let synced = rows.sync()?;
    store.durability.marks().messages_synced(synced);
    let seq = header.seq;
    db.open_tree(format!("{SNAP_PREFIX}{subdomain}"))
        .and_then(|t| t.insert(seq.to_be_bytes(), snapshot))
        .map_err(StorageError::from)?;
    store.durability.flush_now().map_err(StorageError::from)?;
    store.durability.sync_blobs().map_err(StorageError::from)?;
    // The realm's last write: from here on it exists.
    db.open_tree(format!("{WAL_PREFIX}{subdomain}"))
        .map_err(StorageError::from)?;
    store.durability.flush_now().map_err(StorageError::from)?;
    store.durability.marks().snapshot_durable(subdomain, seq);
    let _ = store
        .durability
        .marks()
        .write_now(store.durability.dir(), Some(&db));
    Ok((seq, new_owner_keys))
}

/// The archive format's own tests: what the archive module's reader accepts.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_spans_shrink_with_users_within_bounds() {
        assert_eq!(id_span(1), 16_384);
        assert_eq!(id_span(10_000), 400);
        assert_eq!(id_span(1_000_000), 256);
    }

    #[test]
    fn a_partial_file_sits_beside_the_archive() {
        assert_eq!(
            partial_path(Path::new("/tmp/x/acme.archive")),
            Path::new("/tmp/x/acme.archive.partial")
        );
    }

    #[test]
    fn verify_names_a_missing_manifest() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("a");
        let mut w = ArchiveWriter::create(&path).expect("create");
        w.value(
            PartKind::Header,
            &Header {
                subdomain: "x".into(),
                realm_schema: 5,
                seq: 1,
                exported_at: 0,
                hearth_version: "0".into(),
            },
        )
        .expect("header");
        drop(w);
        let e = verify(&path).expect_err("cut short").to_string();
        assert!(e.contains("part 'manifest'"), "{e}");
    }
}
