//! The realm archive: one file holding everything of one realm at one WAL position, the
//! unit a realm moves between nodes as (`ops::archive` writes and reads it).
//!
//! ```text
//! file  = MAGIC (8 bytes "HEARTHAR") · version (u8, ARCHIVE_VERSION) · part*
//! part  = kind (u8) · length (u32 LE) · frame
//! frame = codec's frame: [schema version u8][crc32 u32 LE][bincode payload]
//! ```
//!
//! Parts, in this order: `header` (one: subdomain, schemas, the WAL position), `realm`
//! (one: the snapshot record, `codec::encode_realm`, with its own schema number),
//! `messages` (any number: batches of logical message records, each a message row as
//! `storage::messages::encode_message` frames it, with every user's flag bits on it),
//! `uploads` (any number: pieces of at most `FILE_PIECE` bytes of one stored file;
//! the last piece of a file says so), `presence` (one: the coalesced presence records
//! as `codec::encode_presence` frames them), and `manifest` (last: counts and, per
//! part kind, its number of frames, bytes and a CRC-32 over them). Every frame carries
//! its own checksum, so a damaged byte is found in the part that holds it; the
//! manifest's sums also catch a part missing or repeated.
//!
//! Records inside keep their own versions (snapshot schema, message row schema,
//! presence schema), decoded through the same paths start-up uses, so an archive
//! written by an older hearth imports as its data folder would start. The archive's
//! own version byte changes only when this layout changes; a reader refuses a newer one
//! by name.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::codec::{self, CodecError};
use crate::realm::messages::MessageId;
use crate::realm::UserId;

/// The first bytes of every archive.
pub const MAGIC: &[u8; 8] = b"HEARTHAR";
/// The archive layout this hearth writes (and the newest it reads).
pub const ARCHIVE_VERSION: u8 = 1;
/// Schema of the frames of every part but `realm` (whose frame is the snapshot's).
pub const PART_SCHEMA: u8 = 1;
/// Uploaded files are cut into pieces of at most this many bytes.
pub const FILE_PIECE: usize = 1 << 20;
/// A part longer than this is damage, not an allocation to attempt.
const MAX_PART: u32 = 256 << 20;

/// The kinds of part, by their byte in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PartKind {
    Header = 1,
    Realm = 2,
    Messages = 3,
    Uploads = 4,
    Presence = 5,
    Manifest = 6,
}

impl PartKind {
    fn from_byte(b: u8) -> Option<PartKind> {
        Some(match b {
            1 => PartKind::Header,
            2 => PartKind::Realm,
            3 => PartKind::Messages,
            4 => PartKind::Uploads,
            5 => PartKind::Presence,
            6 => PartKind::Manifest,
            _ => return None,
        })
    }

    /// The part's name in messages and in the manifest.
    pub fn name(self) -> &'static str {
        match self {
            PartKind::Header => "header",
            PartKind::Realm => "realm",
            PartKind::Messages => "messages",
            PartKind::Uploads => "uploads",
            PartKind::Presence => "presence",
            PartKind::Manifest => "manifest",
        }
    }
}

/// The first part: what the archive is of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// The realm's subdomain.
    pub subdomain: String,
    /// The snapshot schema of the `realm` part (`codec::REALM_SCHEMA` when written).
    pub realm_schema: u8,
    /// The last WAL record the state covers: records after it are the tail to ship.
    pub seq: u64,
    /// When the archive was written (UNIX seconds).
    pub exported_at: i64,
    /// The hearth that wrote it (`CARGO_PKG_VERSION`).
    pub hearth_version: String,
}

/// One message as the archive holds it: its row (framed as the message store frames
/// it: reactions and edit history are in it) and each user's flag bits on it. Logical,
/// not the store's keys: the store's layout may change, this does not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchivedMessage {
    pub id: MessageId,
    /// `storage::messages::encode_message` of the row.
    pub row: Vec<u8>,
    /// `(user, flag bits)` of every user who has the message, by user id.
    pub flags: Vec<(UserId, u32)>,
}

/// A piece of one stored file (attachment or custom emoji image).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePiece {
    /// The file's name in the realm's upload folder: the hex SHA-256 of its content.
    pub sha256: String,
    pub bytes: Vec<u8>,
    /// The file's last piece.
    pub last: bool,
}

/// The presence part: `(user, codec::encode_presence frame)`.
pub type PresencePart = Vec<(UserId, Vec<u8>)>;

/// What one kind of part adds up to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartSum {
    pub frames: u64,
    pub bytes: u64,
    /// CRC-32 over every frame of the kind, in file order.
    pub crc32: u32,
}

/// How much of each thing the archive holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub users: u64,
    pub channels: u64,
    pub messages: u64,
    /// Per-user flag entries over all messages.
    pub user_messages: u64,
    pub scheduled_messages: u64,
    pub reminders: u64,
    pub files: u64,
    pub file_bytes: u64,
    pub custom_emoji: u64,
    pub presence: u64,
}

/// The last part: the archive's table of contents, checked whole before an import
/// writes anything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// `ARCHIVE_VERSION` of the writer.
    pub archive_version: u8,
    pub subdomain: String,
    /// Snapshot schema of the `realm` part.
    pub realm_schema: u8,
    /// The WAL position the archive is at (see `Header::seq`).
    pub seq: u64,
    pub counts: Counts,
    /// Per part kind (by name), every kind but the manifest itself.
    pub parts: BTreeMap<String, PartSum>,
}

/// Why an archive cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{0} is not a hearth realm archive")]
    NotAnArchive(PathBuf),
    #[error(
        "{path} is a realm archive of version {found}, newer than this hearth reads \
         (up to {ARCHIVE_VERSION}): import it with a newer hearth"
    )]
    Newer { path: PathBuf, found: u8 },
    #[error("{path} is damaged: part '{part}' (number {index}): {why}")]
    Damaged {
        path: PathBuf,
        part: String,
        index: u64,
        why: String,
    },
    #[error("codec: {0}")]
    Codec(#[from] CodecError),
}

/// Encodes a value as a part's frame.
pub fn frame<T: Serialize>(value: &T) -> Result<Vec<u8>, CodecError> {
    codec::encode_versioned(PART_SCHEMA, value)
}

/// Decodes a part's frame of schema `PART_SCHEMA`.
pub fn unframe<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    match codec::open_frame(bytes)? {
        (PART_SCHEMA, payload) => codec::decode_payload(payload),
        (v, _) => Err(CodecError::Version(v)),
    }
}

/// Writes an archive part by part, summing each kind for the manifest.
pub struct ArchiveWriter {
    out: BufWriter<File>,
    path: PathBuf,
    sums: BTreeMap<PartKind, (PartSum, crc32fast::Hasher)>,
}

impl ArchiveWriter {
    /// Starts an archive in a new file at `path` (an existing file is an error).
    pub fn create(path: &Path) -> Result<ArchiveWriter, FormatError> {
        let io = |source| FormatError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(io)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(MAGIC).map_err(io)?;
        out.write_all(&[ARCHIVE_VERSION]).map_err(io)?;
        Ok(ArchiveWriter {
            out,
            path: path.to_path_buf(),
            sums: BTreeMap::new(),
        })
    }

    fn io(&self, source: io::Error) -> FormatError {
        FormatError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Appends one part whose frame is `bytes`.
    pub fn part(&mut self, kind: PartKind, bytes: &[u8]) -> Result<(), FormatError> {
        let len = u32::try_from(bytes.len())
            .ok()
            .filter(|l| *l <= MAX_PART)
            .ok_or_else(|| {
                self.io(io::Error::other(format!(
                    "a '{}' part of {} bytes is too large",
                    kind.name(),
                    bytes.len()
                )))
            })?;
        self.out.write_all(&[kind as u8]).map_err(|e| self.io(e))?;
        self.out
            .write_all(&len.to_le_bytes())
            .map_err(|e| self.io(e))?;
        self.out.write_all(bytes).map_err(|e| self.io(e))?;
        let (sum, hasher) = self.sums.entry(kind).or_default();
        sum.frames += 1;
        sum.bytes += bytes.len() as u64;
        hasher.update(bytes);
        Ok(())
    }

    /// Appends a value as a part of schema `PART_SCHEMA`.
    pub fn value<T: Serialize>(&mut self, kind: PartKind, value: &T) -> Result<(), FormatError> {
        let bytes = frame(value)?;
        self.part(kind, &bytes)
    }

    /// Writes the manifest (its `parts` filled in here), then makes the file durable.
    pub fn finish(mut self, mut manifest: Manifest) -> Result<Manifest, FormatError> {
        manifest.archive_version = ARCHIVE_VERSION;
        manifest.parts = self
            .sums
            .iter()
            .map(|(kind, (sum, hasher))| {
                let mut sum = sum.clone();
                sum.crc32 = hasher.clone().finalize();
                (kind.name().to_owned(), sum)
            })
            .collect();
        self.value(PartKind::Manifest, &manifest)?;
        self.out.flush().map_err(|e| self.io(e))?;
        let file = self.out.get_ref();
        file.sync_all().map_err(|e| self.io(e))?;
        Ok(manifest)
    }
}

/// Reads an archive's parts in order.
pub struct ArchiveReader {
    input: BufReader<File>,
    path: PathBuf,
    /// Parts read so far, by kind (a part's number in messages).
    seen: BTreeMap<PartKind, u64>,
    /// What the parts read so far add up to.
    sums: BTreeMap<PartKind, (PartSum, crc32fast::Hasher)>,
}

/// One part read: its kind, its number among the parts of its kind, its frame.
pub struct Part {
    pub kind: PartKind,
    pub index: u64,
    pub bytes: Vec<u8>,
}

impl ArchiveReader {
    /// Opens an archive: checks its magic and version.
    pub fn open(path: &Path) -> Result<ArchiveReader, FormatError> {
        let io = |source| FormatError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut input = BufReader::with_capacity(1 << 20, File::open(path).map_err(io)?);
        let mut head = [0u8; 9];
        match input.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(FormatError::NotAnArchive(path.to_path_buf()))
            }
            Err(e) => return Err(io(e)),
        }
        if &head[..8] != MAGIC || head[8] == 0 {
            return Err(FormatError::NotAnArchive(path.to_path_buf()));
        }
        if head[8] > ARCHIVE_VERSION {
            return Err(FormatError::Newer {
                path: path.to_path_buf(),
                found: head[8],
            });
        }
        Ok(ArchiveReader {
            input,
            path: path.to_path_buf(),
            seen: BTreeMap::new(),
            sums: BTreeMap::new(),
        })
    }

    /// A damage report on `part` number `index`.
    pub fn damaged(&self, part: &str, index: u64, why: impl ToString) -> FormatError {
        FormatError::Damaged {
            path: self.path.clone(),
            part: part.to_owned(),
            index,
            why: why.to_string(),
        }
    }

    /// The next part, its frame's checksum verified (`None` at the end of the file).
    pub fn next_part(&mut self) -> Result<Option<Part>, FormatError> {
        let mut head = [0u8; 5];
        let mut got = 0;
        while got < head.len() {
            match self.input.read(&mut head[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(FormatError::Io {
                        path: self.path.clone(),
                        source: e,
                    })
                }
            }
        }
        if got == 0 {
            return Ok(None);
        }
        let after = self.seen.values().sum::<u64>();
        if got < head.len() {
            return Err(self.damaged("?", after, "the file ends inside a part's header"));
        }
        let Some(kind) = PartKind::from_byte(head[0]) else {
            return Err(self.damaged(
                "?",
                after,
                format!("unknown part kind {} after {after} parts", head[0]),
            ));
        };
        let index = *self.seen.entry(kind).or_default();
        let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
        if len > MAX_PART {
            return Err(self.damaged(kind.name(), index, format!("a length of {len} bytes")));
        }
        let mut bytes = vec![0u8; len as usize];
        if let Err(e) = self.input.read_exact(&mut bytes) {
            return Err(if e.kind() == io::ErrorKind::UnexpectedEof {
                self.damaged(kind.name(), index, "the file ends inside it")
            } else {
                FormatError::Io {
                    path: self.path.clone(),
                    source: e,
                }
            });
        }
        if let Err(e) = codec::open_frame(&bytes) {
            return Err(self.damaged(kind.name(), index, e));
        }
        *self.seen.entry(kind).or_default() += 1;
        if kind != PartKind::Manifest {
            let (sum, hasher) = self.sums.entry(kind).or_default();
            sum.frames += 1;
            sum.bytes += bytes.len() as u64;
            hasher.update(&bytes);
        }
        Ok(Some(Part { kind, index, bytes }))
    }

    /// What the parts read so far add up to, by part name (as the manifest has them).
    pub fn sums(&self) -> BTreeMap<String, PartSum> {
        self.sums
            .iter()
            .map(|(kind, (sum, hasher))| {
                let mut sum = sum.clone();
                sum.crc32 = hasher.clone().finalize();
                (kind.name().to_owned(), sum)
            })
            .collect()
    }
}

/// Reads a whole archive once, checking every frame, the order of the parts and the
/// manifest's sums; returns its header and manifest. Nothing is decoded but those two,
/// so a check costs one read of the file.
pub fn verify(path: &Path) -> Result<(Header, Manifest), FormatError> {
    let mut reader = ArchiveReader::open(path)?;
    let mut header: Option<Header> = None;
    let mut manifest: Option<Manifest> = None;
    let mut realm_parts = 0u64;
    while let Some(part) = reader.next_part()? {
        if manifest.is_some() {
            return Err(reader.damaged(part.kind.name(), part.index, "a part after the manifest"));
        }
        match part.kind {
            PartKind::Header if header.is_none() => {
                header = Some(
                    unframe(&part.bytes).map_err(|e| reader.damaged("header", part.index, e))?,
                );
            }
            PartKind::Manifest => {
                manifest = Some(
                    unframe(&part.bytes).map_err(|e| reader.damaged("manifest", part.index, e))?,
                );
            }
            _ if header.is_none() => {
                return Err(reader.damaged(part.kind.name(), part.index, "before the header"))
            }
            PartKind::Header => {
                return Err(reader.damaged("header", part.index, "a second header"))
            }
            PartKind::Realm => realm_parts += 1,
            PartKind::Messages | PartKind::Uploads | PartKind::Presence => {}
        }
    }
    let (Some(header), Some(manifest)) = (header, manifest) else {
        return Err(reader.damaged(
            "manifest",
            0,
            "missing: the archive was cut short (an export that did not finish?)",
        ));
    };
    if realm_parts != 1 {
        return Err(reader.damaged("realm", 0, format!("{realm_parts} realm parts, not one")));
    }
    let found = reader.sums();
    for (name, want) in &manifest.parts {
        let got = found.get(name).cloned().unwrap_or_default();
        if &got != want {
            return Err(reader.damaged(
                name,
                0,
                format!(
                    "the manifest counts {} frames of {} bytes (crc {:08x}), the file holds {} \
                     of {} bytes (crc {:08x})",
                    want.frames, want.bytes, want.crc32, got.frames, got.bytes, got.crc32
                ),
            ));
        }
    }
    if let Some(name) = found.keys().find(|n| !manifest.parts.contains_key(*n)) {
        return Err(reader.damaged(name, 0, "a part the manifest does not count"));
    }
    if manifest.seq != header.seq || manifest.subdomain != header.subdomain {
        return Err(reader.damaged("manifest", 0, "it does not match the header"));
    }
    Ok((header, manifest))
}
