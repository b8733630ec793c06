//! Attachments (seed 2.12, 4.14): uploaded files' metadata. The bytes live
//! content-addressed under the data folder (`storage::uploads`), never in the WAL or
//! in snapshots; the realm records who uploaded what, under which `path_id`, and which
//! messages link to it.
//!
//! # Hooks for the message store
//!
//! - `upload_path_ids(content)` finds the uploads a message's content links to
//!   (`/user_uploads/<path_id>`, relative or absolute).
//! - `Realm::decide_claim_attachments` (message sent or edited to link an upload) adds
//!   the message to `Attachment::messages`; `Realm::decide_release_attachments` (message
//!   deleted, or edited to drop the link) removes it, and deletes the attachment once
//!   no message links it when the message was deleted (seed 2.12). The caller commits
//!   the returned changes with the message's own, then removes the files of deleted
//!   attachments (`api::attachments::remove_unreferenced_files`).
//! - `Realm::can_read_attachment(user, attachment, can_see_message)` decides who may
//!   download a file: its uploader, or anyone who can see a message linking it, as the
//!   message store's `can_see_message` says.
//!
//! Unclaimed uploads (no message links them) are swept `--upload-sweep-days` after
//! upload: `sweep_candidates` on a worker, `decide_sweep` on the actor re-checks each.

use std::collections::BTreeSet;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use imbl::OrdMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::events::{Audience, Event};
use super::{Change, Cx, Decided, Realm, User, UserId};
use crate::error::{ApiError, ApiResult};

/// The hex SHA-256 of some bytes: the name a stored file goes by (an attachment's
/// `sha256`, a custom emoji's image), in the realm's records and in its upload folder.
pub fn content_hash(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

/// An attachment id, unique within a realm.
pub type AttachmentId = u64;
/// A message id (as the message store numbers them).
pub type MessageId = u64;

/// One uploaded file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    pub id: AttachmentId,
    /// `<realm id>/<2 hex>/<24 random>/<sanitized name>`: the URL is
    /// `/user_uploads/<path_id>`.
    pub path_id: String,
    /// The file name as uploaded.
    pub name: String,
    pub size: u64,
    /// Hex SHA-256 of the bytes: the file's name in the realm's upload folder.
    pub sha256: String,
    pub content_type: String,
    /// UNIX milliseconds.
    pub create_time: i64,
    pub owner: UserId,
    /// Messages linking the file: id -> date sent (UNIX milliseconds).
    pub messages: OrdMap<MessageId, i64>,
}

impl Attachment {
    /// Zulip's `Attachment.to_dict()`.
    pub fn json(&self) -> Value {
        let messages: Vec<Value> = self
            .messages
            .iter()
            .map(|(id, at)| json!({"id": id, "date_sent": at}))
            .collect();
        json!({
            "id": self.id,
            "name": self.name,
            "path_id": self.path_id,
            "size": self.size,
            "create_time": self.create_time,
            "messages": messages,
        })
    }
}

/// Facts about attachments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AttachmentChange {
    /// A file was uploaded (its bytes are already on disk).
    Created(Attachment),
    /// The uploader deleted it (`DELETE /attachments/{id}`).
    Removed { id: AttachmentId },
    /// Unclaimed uploads older than the sweep period were deleted.
    Swept { ids: Vec<AttachmentId> },
    /// A message now links these attachments.
    Claimed {
        message_id: MessageId,
        date_sent: i64,
        ids: Vec<AttachmentId>,
    },
    /// A message no longer links these attachments; `deleted` ones had no other message
    /// (the message was deleted) and are gone.
    Released {
        message_id: MessageId,
        ids: Vec<AttachmentId>,
        deleted: Vec<AttachmentId>,
    },
}

/// Zulip's `sanitize_name`: word characters, whitespace, `.` and `-` are kept, runs of
/// whitespace and dashes become one dash; nothing usable gives `uploaded-file`.
pub fn sanitize_name(value: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let value: String = value.nfkc().collect();
    let kept: String = value
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '_' || c.is_whitespace() || *c == '.' || *c == '-')
        .collect();
    let mut out = String::with_capacity(kept.len());
    let mut in_run = false;
    for c in kept.trim().chars() {
        if c == '-' || c.is_whitespace() {
            if !in_run {
                out.push('-');
            }
            in_run = true;
        } else {
            out.push(c);
            in_run = false;
        }
    }
    if out.is_empty() || out == "." || out == ".." {
        "uploaded-file".to_owned()
    } else {
        out
    }
}

/// The `path_id`s of the uploads `content` links to, in order, without duplicates:
/// `/user_uploads/<realm id>/<a>/<b>/<name>`, relative or after a host.
pub fn upload_path_ids(content: &str) -> Vec<String> {
    const MARK: &str = "/user_uploads/";
    let mut out: Vec<String> = Vec::new();
    let mut rest = content;
    while let Some(at) = rest.find(MARK) {
        let tail = &rest[at + MARK.len()..];
        let end = tail
            .find(|c: char| c.is_whitespace() || "()[]<>\"'`?#".contains(c))
            .unwrap_or(tail.len());
        // Sentence punctuation after a link is not part of it.
        let link = tail[..end].trim_end_matches(['.', ',', ';', ':', '!']);
        let path = percent_decode(link);
        let segments: Vec<&str> = path.split('/').collect();
        let shaped = segments.len() == 4
            && !segments[0].is_empty()
            && segments[0].bytes().all(|b| b.is_ascii_digit())
            && segments[1..].iter().all(|s| !s.is_empty());
        if shaped && !out.contains(&path) {
            out.push(path);
        }
        rest = &tail[end..];
    }
    out
}

/// `%XX` sequences decoded (others left as they are); a link whose bytes are not UTF-8
/// once decoded is kept as written.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map_or_else(|_| s.to_owned(), |d| d.into_owned())
}

/// What `POST /user_uploads` stored before asking the realm to record it.
#[derive(Debug, Clone)]
pub struct StoredUpload {
    pub name: String,
    pub size: u64,
    pub sha256: String,
    pub content_type: String,
}

/// Where uploaded files live (attachments and the images of custom emoji), one folder
/// per realm, content-addressed: what the HTTP layer does with them. Implemented by the
/// server's upload folders (`storage::uploads`). Every method is blocking I/O: call it
/// off the HTTP workers.
pub trait FileStore: Send + Sync {
    /// Starts receiving a file for the realm `subdomain`: written and hashed as it
    /// arrives, stored by `ReceivingFile::store`, discarded if dropped before.
    fn receive(self: Arc<Self>, subdomain: &str) -> io::Result<Box<dyn ReceivingFile>>;
    /// Stores a whole file already in memory, as `ReceivingFile::store` does.
    fn put(self: Arc<Self>, subdomain: &str, bytes: &[u8]) -> io::Result<HeldFile>;
    /// The bytes of the realm's file named `sha256`, if it has one.
    fn read(&self, subdomain: &str, sha256: &str) -> io::Result<Option<Vec<u8>>>;
    /// Removes the realm's files among `shas` that `referenced` says nothing of the realm
    /// names any more and no upload holds (`referenced` is asked under the store's lock,
    /// which an upload takes to release its hold). Returns how many were removed.
    fn remove_unreferenced(
        &self,
        subdomain: &str,
        shas: &[String],
        referenced: &dyn Fn(&str) -> bool,
    ) -> usize;
    /// Removes stray files: the realm's files nothing of it names (and no upload holds),
    /// and files being received that are older than `tmp_age`. Returns how many.
    fn remove_strays(
        &self,
        subdomain: &str,
        referenced: &dyn Fn(&str) -> bool,
        tmp_age: Duration,
    ) -> usize;
}

/// A file being received (`FileStore::receive`). Blocking I/O.
pub trait ReceivingFile: Send {
    /// Appends a chunk.
    fn write(&mut self, chunk: &[u8]) -> io::Result<()>;
    /// The bytes written so far.
    fn size(&self) -> u64;
    /// Makes the file durable under its hash in the realm's folder (fsynced, renamed,
    /// its folders fsynced) and holds it until the `HeldFile` is dropped.
    fn store(self: Box<Self>) -> io::Result<HeldFile>;
}

/// A stored file that an upload still holds: no removal deletes it until this is
/// dropped (after the realm recorded the upload, or refused it).
pub struct HeldFile {
    /// The file's name in the realm's folder: the hex SHA-256 of its bytes.
    pub sha256: String,
    pub size: u64,
    /// The store's hold on the file, released when dropped.
    _hold: Box<dyn Send>,
}

impl HeldFile {
    /// A file named `sha256` of `size` bytes, held by `hold` until dropped.
    pub fn new(sha256: String, size: u64, hold: impl Send + 'static) -> HeldFile {
        HeldFile {
            sha256,
            size,
            _hold: Box::new(hold),
        }
    }
}

/// `DELETE /attachments/{attachment_id}`: the id as sent.
#[derive(Debug, Clone, Copy)]
pub struct RemoveAttachment {
    pub id: i64,
}

fn invalid_attachment() -> ApiError {
    ApiError::bad_request("Invalid attachment")
}

/// One batch of the upload sweep (a write the server makes on its own): attachments
/// read as candidates on a worker, deleted if still unclaimed after `period_ms`.
#[derive(Debug, Clone)]
pub struct Sweep {
    pub candidates: Vec<AttachmentId>,
    pub period_ms: i64,
}

impl Realm {
    /// The number that starts every `path_id` (Zulip's realm id; 2 is the development
    /// realm's there).
    pub fn upload_realm_id(&self) -> u32 {
        if self.settings.dev {
            2
        } else {
            1
        }
    }

    /// The attachment a `path_id` names.
    pub fn attachment_by_path(&self, path_id: &str) -> Option<&Attachment> {
        self.attachment_by_path
            .get(path_id)
            .and_then(|id| self.attachments.get(id))
    }

    /// Whether something of this realm names its stored file `sha256`: an attachment, or
    /// a custom emoji's image (active or deactivated). Files share the realm's folder
    /// (`storage::uploads`), so only a file neither names may be removed.
    pub fn upload_is_referenced(&self, sha256: &str) -> bool {
        self.attachment_shas.contains_key(sha256) || self.emoji.names_image(sha256)
    }

    /// The total size of the realm's uploads (`upload_space_used`).
    pub fn upload_space_used(&self) -> u64 {
        self.upload_space_used
    }

    /// `POST /user_uploads`: records a file already written; answers its `path_id`.
    pub fn decide_create_attachment(
        &self,
        me: &User,
        upload: StoredUpload,
        cx: &mut Cx,
    ) -> ApiResult<Decided<String>> {
        const URLSAFE: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let bytes: [u8; 19] = cx.random_bytes();
        let token: String = bytes[1..]
            .chunks(3)
            .flat_map(|c| {
                let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
                (0..4)
                    .rev()
                    .map(move |i| URLSAFE[((n >> (6 * i)) & 63) as usize] as char)
            })
            .collect();
        let path_id = format!(
            "{}/{:02x}/{}/{}",
            self.upload_realm_id(),
            bytes[0],
            token,
            sanitize_name(&upload.name)
        );
        let id = self.next_attachment_id.max(1);
        let att = Attachment {
            id,
            path_id: path_id.clone(),
            name: upload.name,
            size: upload.size,
            sha256: upload.sha256,
            content_type: upload.content_type,
            create_time: cx.now_ms,
            owner: me.id,
            messages: OrdMap::new(),
        };
        Ok(Decided::new(
            vec![Change::Attachment(AttachmentChange::Created(att))],
            path_id,
        ))
    }

    /// `GET /attachments`: the caller's uploads, by id.
    pub fn view_attachments(&self, me: &User) -> Vec<Value> {
        self.attachments_by_owner
            .get(&me.id)
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| self.attachments.get(id))
                    .map(Attachment::json)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `DELETE /attachments/{attachment_id}`: only the uploader's own; the file goes
    /// even if messages link it. Answers the file's hash (for `files_released_by`'s
    /// caller to remove it once no one names it).
    pub fn decide_remove_attachment(
        &self,
        me: &User,
        q: RemoveAttachment,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<String>> {
        let att = u64::try_from(q.id)
            .ok()
            .and_then(|id| self.attachments.get(&id))
            .filter(|a| a.owner == me.id)
            .ok_or_else(invalid_attachment)?;
        Ok(Decided::new(
            vec![Change::Attachment(AttachmentChange::Removed { id: att.id })],
            att.sha256.clone(),
        ))
    }

    /// Who may download a file: its uploader, or a user who can see a message linking
    /// it (`can_see_message`, from the message store).
    pub fn can_read_attachment(
        &self,
        user: &User,
        att: &Attachment,
        can_see_message: &dyn Fn(&User, MessageId) -> bool,
    ) -> bool {
        att.owner == user.id || att.messages.keys().any(|m| can_see_message(user, *m))
    }

    /// A message (sent by `sender` at `date_sent`, UNIX ms) links these uploads: those
    /// the sender may read are claimed (Zulip's `do_claim_attachments`). Unknown paths
    /// are skipped.
    pub fn decide_claim_attachments(
        &self,
        sender: &User,
        message_id: MessageId,
        date_sent: i64,
        path_ids: &[String],
        can_see_message: &dyn Fn(&User, MessageId) -> bool,
    ) -> Vec<Change> {
        let ids: Vec<AttachmentId> = path_ids
            .iter()
            .filter_map(|p| self.attachment_by_path(p))
            .filter(|a| !a.messages.contains_key(&message_id))
            .filter(|a| self.can_read_attachment(sender, a, can_see_message))
            .map(|a| a.id)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if ids.is_empty() {
            return Vec::new();
        }
        vec![Change::Attachment(AttachmentChange::Claimed {
            message_id,
            date_sent,
            ids,
        })]
    }

    /// A message no longer links these uploads. With `message_deleted`, an attachment
    /// left without messages is deleted too; after an edit it stays until swept.
    pub fn decide_release_attachments(
        &self,
        message_id: MessageId,
        path_ids: &[String],
        message_deleted: bool,
    ) -> Vec<Change> {
        let released: Vec<&Attachment> = path_ids
            .iter()
            .filter_map(|p| self.attachment_by_path(p))
            .filter(|a| a.messages.contains_key(&message_id))
            .collect();
        if released.is_empty() {
            return Vec::new();
        }
        let deleted = released
            .iter()
            .filter(|a| message_deleted && a.messages.len() == 1)
            .map(|a| a.id)
            .collect();
        vec![Change::Attachment(AttachmentChange::Released {
            message_id,
            ids: released.iter().map(|a| a.id).collect(),
            deleted,
        })]
    }

    /// Unclaimed uploads created before `cutoff_ms`, at most `limit` (read on a worker;
    /// `decide_sweep` checks each again).
    pub fn sweep_candidates(&self, cutoff_ms: i64, limit: usize) -> Vec<AttachmentId> {
        self.attachments
            .values()
            .filter(|a| a.messages.is_empty() && a.create_time < cutoff_ms)
            .take(limit)
            .map(|a| a.id)
            .collect()
    }

    /// The sweep as a write: candidates still unclaimed and older than the sweep's
    /// period; answers how many attachments it deletes.
    pub fn decide_sweep_write(&self, q: Sweep, cx: &mut Cx) -> ApiResult<Decided<usize>> {
        let changes = self.decide_sweep(&q.candidates, cx.now_ms.saturating_sub(q.period_ms));
        let n = match changes.first() {
            Some(Change::Attachment(AttachmentChange::Swept { ids })) => ids.len(),
            _ => 0,
        };
        Ok(Decided::new(changes, n))
    }

    /// The sweep's decision: candidates still unclaimed and older than `cutoff_ms`.
    pub fn decide_sweep(&self, candidates: &[AttachmentId], cutoff_ms: i64) -> Vec<Change> {
        let ids: Vec<AttachmentId> = candidates
            .iter()
            .filter_map(|id| self.attachments.get(id))
            .filter(|a| a.messages.is_empty() && a.create_time < cutoff_ms)
            .map(|a| a.id)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if ids.is_empty() {
            return Vec::new();
        }
        vec![Change::Attachment(AttachmentChange::Swept { ids })]
    }

    fn insert_attachment(&mut self, att: Attachment) {
        self.upload_space_used += att.size;
        self.attachment_by_path.insert(att.path_id.clone(), att.id);
        *self.attachment_shas.entry(att.sha256.clone()).or_insert(0) += 1;
        self.attachments_by_owner
            .entry(att.owner)
            .or_default()
            .insert(att.id);
        self.attachments.insert(att.id, att);
    }

    fn delete_attachment(&mut self, id: AttachmentId) {
        let Some(att) = self.attachments.remove(&id) else {
            return;
        };
        self.upload_space_used = self.upload_space_used.saturating_sub(att.size);
        self.attachment_by_path.remove(&att.path_id);
        let last = match self.attachment_shas.get_mut(&att.sha256) {
            Some(n) => {
                *n = n.saturating_sub(1);
                *n == 0
            }
            None => false,
        };
        if last {
            self.attachment_shas.remove(&att.sha256);
        }
        if let Some(ids) = self.attachments_by_owner.get_mut(&att.owner) {
            ids.remove(&id);
        }
    }

    /// Rebuilds the attachment indexes from `attachments` (after loading).
    pub(crate) fn rebuild_attachment_indexes(&mut self) {
        let all: Vec<Attachment> = self.attachments.values().cloned().collect();
        self.upload_space_used = 0;
        self.attachment_by_path = Default::default();
        self.attachment_shas = Default::default();
        self.attachments_by_owner = Default::default();
        for att in all {
            self.insert_attachment(att);
        }
    }

    pub(crate) fn apply_attachment_change(&mut self, change: &AttachmentChange) {
        match change {
            AttachmentChange::Created(att) => {
                self.next_attachment_id = self.next_attachment_id.max(att.id + 1);
                self.insert_attachment(att.clone());
            }
            AttachmentChange::Removed { id } => self.delete_attachment(*id),
            AttachmentChange::Swept { ids } => {
                ids.iter().for_each(|id| self.delete_attachment(*id))
            }
            AttachmentChange::Claimed {
                message_id,
                date_sent,
                ids,
            } => {
                for id in ids {
                    if let Some(a) = self.attachments.get_mut(id) {
                        a.messages.insert(*message_id, *date_sent);
                    }
                }
            }
            AttachmentChange::Released {
                message_id,
                ids,
                deleted,
            } => {
                for id in ids {
                    if let Some(a) = self.attachments.get_mut(id) {
                        a.messages.remove(message_id);
                    }
                }
                deleted.iter().for_each(|id| self.delete_attachment(*id));
            }
        }
    }

    /// The files whose last attachment a change deletes (`sha256` of each) and that no
    /// custom emoji names, to remove from disk once the change is durable.
    pub fn files_released_by(&self, before: &Realm, change: &AttachmentChange) -> Vec<String> {
        let ids: Vec<AttachmentId> = match change {
            AttachmentChange::Removed { id } => vec![*id],
            AttachmentChange::Swept { ids } => ids.clone(),
            AttachmentChange::Released { deleted, .. } => deleted.clone(),
            AttachmentChange::Created(_) | AttachmentChange::Claimed { .. } => Vec::new(),
        };
        ids.iter()
            .filter_map(|id| before.attachments.get(id))
            .map(|a| a.sha256.clone())
            .filter(|sha| !self.upload_is_referenced(sha))
            .collect()
    }

    /// `attachment` events, to the uploader only, with the realm's `upload_space_used`
    /// after the change. The sweep sends none (as Zulip's).
    pub(crate) fn attachment_events(
        &self,
        before: &Realm,
        change: &AttachmentChange,
    ) -> Vec<Event> {
        let event = |op: &str, attachment: Value, owner: UserId| {
            Event::new(
                json!({"type": "attachment", "op": op, "attachment": attachment, "upload_space_used": self.upload_space_used}),
                Audience::users(vec![owner]),
            )
        };
        match change {
            AttachmentChange::Created(att) => self
                .attachments
                .get(&att.id)
                .map(|a| vec![event("add", a.json(), a.owner)])
                .unwrap_or_default(),
            AttachmentChange::Removed { id } => before
                .attachments
                .get(id)
                .map(|a| vec![event("remove", json!({"id": a.id}), a.owner)])
                .unwrap_or_default(),
            AttachmentChange::Swept { .. } => Vec::new(),
            AttachmentChange::Claimed { ids, .. } => ids
                .iter()
                .filter_map(|id| self.attachments.get(id))
                .map(|a| event("update", a.json(), a.owner))
                .collect(),
            AttachmentChange::Released { ids, deleted, .. } => ids
                .iter()
                .filter_map(|id| match self.attachments.get(id) {
                    Some(a) => Some(event("update", a.json(), a.owner)),
                    None if deleted.contains(id) => before
                        .attachments
                        .get(id)
                        .map(|a| event("remove", json!({"id": a.id}), a.owner)),
                    None => None,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realm::dev::seed_changes;
    use crate::realm::dev::testing::realm_of;

    fn realm() -> Realm {
        realm_of(&seed_changes(&mut Cx::seeded(1_700_000_000_000, 3)).expect("seed"))
    }

    fn apply_all(realm: &mut Realm, changes: &[Change]) {
        changes.iter().for_each(|c| realm.apply(c));
    }

    #[test]
    fn message_store_hooks() {
        let mut r = realm();
        let hamlet = r
            .user_by_delivery_email("hamlet@zulip.com")
            .expect("h")
            .clone();
        let othello = r
            .user_by_delivery_email("othello@zulip.com")
            .expect("o")
            .clone();
        let mut cx = Cx::seeded(1_700_000_000_000, 9);
        let upload = |name: &str, sha: &str| StoredUpload {
            name: name.into(),
            size: 10,
            sha256: sha.into(),
            content_type: "text/plain".into(),
        };
        let mut create = |r: &Realm, name: &str| {
            let d = r
                .decide_create_attachment(&hamlet, upload(name, "aa"), &mut cx)
                .expect("create");
            (d.changes, d.answer)
        };
        let (c, a) = create(&r, "a.txt");
        apply_all(&mut r, &c);
        let (c, b) = create(&r, "b.txt");
        apply_all(&mut r, &c);
        assert!(a.starts_with("2/") && a.ends_with("/a.txt") && a != b);
        assert_eq!(r.upload_space_used(), 20);
        let content = format!("see [a](/user_uploads/{a}) and [b](/user_uploads/{b}).");
        let paths = upload_path_ids(&content);
        assert_eq!(paths, vec![a.clone(), b.clone()]);

        // Othello cannot claim Hamlet's upload unless he can see a message with it.
        let nobody = |_: &User, _: MessageId| false;
        assert!(r
            .decide_claim_attachments(&othello, 7, 1, &paths, &nobody)
            .is_empty());
        let c = r.decide_claim_attachments(&hamlet, 7, 1_700_000_000_500, &paths, &nobody);
        let before = r.clone();
        apply_all(&mut r, &c);
        let att = r.attachment_by_path(&a).expect("a").clone();
        assert_eq!(
            att.json()["messages"],
            json!([{"id": 7, "date_sent": 1_700_000_000_500i64}])
        );
        let events = r.events_for(&before, &c[0]);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].body["op"], "update");
        assert!(events[0].audience.includes(hamlet.id) && !events[0].audience.includes(othello.id));
        // Claiming again changes nothing.
        assert!(r
            .decide_claim_attachments(&hamlet, 7, 1, &paths, &nobody)
            .is_empty());

        // Who reads it: the uploader, and whoever the message store says sees message 7.
        let sees_7 = |_: &User, m: MessageId| m == 7;
        assert!(r.can_read_attachment(&hamlet, &att, &nobody));
        assert!(!r.can_read_attachment(&othello, &att, &nobody));
        assert!(r.can_read_attachment(&othello, &att, &sees_7));
        // Othello, who sees message 7, may now claim it for his own message.
        assert_eq!(
            r.decide_claim_attachments(&othello, 8, 2, &paths[..1], &sees_7)
                .len(),
            1
        );

        // Claimed uploads are never swept.
        let far = 1_700_000_000_000 + 100 * 86_400_000;
        assert!(r.sweep_candidates(far, 10).is_empty());

        // An edit drops the link from b: it stays, unclaimed, until swept.
        let c = r.decide_release_attachments(7, &paths[1..], false);
        let before = r.clone();
        apply_all(&mut r, &c);
        assert!(r.attachment_by_path(&b).is_some());
        let Change::Attachment(change) = &c[0] else {
            panic!("{c:?}")
        };
        assert!(r.files_released_by(&before, change).is_empty());
        let id_b = r.attachment_by_path(&b).expect("b").id;
        assert_eq!(r.sweep_candidates(far, 10), vec![id_b]);
        assert_eq!(r.decide_sweep(&[id_b], far).len(), 1);
        assert!(r.decide_sweep(&[id_b], 1).is_empty(), "not old enough");

        // Deleting message 7 deletes a, which only it linked; the shared file stays
        // while b names it, and goes with b.
        let c = r.decide_release_attachments(7, &paths, true);
        let before = r.clone();
        apply_all(&mut r, &c);
        assert!(r.attachment_by_path(&a).is_none());
        let Change::Attachment(change) = &c[0] else {
            panic!("{c:?}")
        };
        assert!(r.files_released_by(&before, change).is_empty());
        let events = r.events_for(&before, &c[0]);
        assert_eq!(events[0].body["op"], "remove");
        let c = r.decide_sweep(&[id_b], far);
        let before = r.clone();
        apply_all(&mut r, &c);
        let Change::Attachment(change) = &c[0] else {
            panic!("{c:?}")
        };
        assert_eq!(r.files_released_by(&before, change), vec!["aa".to_owned()]);
        assert!(
            r.events_for(&before, &c[0]).is_empty(),
            "the sweep sends no event"
        );
        assert_eq!(r.upload_space_used(), 0);
    }

    #[test]
    fn emoji_images_are_referenced_like_attachments() {
        let mut r = realm();
        let iago = r
            .user_by_delivery_email("iago@zulip.com")
            .expect("i")
            .clone();
        let green_tick = content_hash(crate::realm::dev::GREEN_TICK_PNG);
        assert!(r.upload_is_referenced(&green_tick));
        assert!(!r.upload_is_referenced("aa"));
        // An attachment of the same bytes: deleting it leaves the emoji's file.
        let mut cx = Cx::seeded(1_700_000_000_000, 9);
        let upload = StoredUpload {
            name: "tick.png".into(),
            size: 10,
            sha256: green_tick.clone(),
            content_type: "image/png".into(),
        };
        let d = r
            .decide_create_attachment(&iago, upload, &mut cx)
            .expect("create");
        apply_all(&mut r, &d.changes);
        let id = r.attachment_by_path(&d.answer).expect("att").id;
        let q = RemoveAttachment { id: id as i64 };
        let d = r
            .decide_remove_attachment(&iago, q, &mut cx)
            .expect("remove");
        let (c, sha) = (d.changes, d.answer);
        assert_eq!(sha, green_tick);
        let before = r.clone();
        apply_all(&mut r, &c);
        let Change::Attachment(change) = &c[0] else {
            panic!("{c:?}")
        };
        assert!(r.files_released_by(&before, change).is_empty());
        // Deactivated, an emoji still names its image; so does a realm read back from a
        // snapshot (the index is derived).
        let q = crate::realm::emoji::DeactivateRealmEmoji {
            name: "green_tick".into(),
        };
        let c = r
            .decide_deactivate_realm_emoji(&iago, q, &mut cx)
            .expect("deactivate")
            .changes;
        apply_all(&mut r, &c);
        assert!(r.upload_is_referenced(&green_tick));
        let bytes = crate::storage::codec::encode_realm(&r).expect("encode");
        let mut back = crate::storage::codec::decode_realm(&bytes).expect("decode");
        assert!(!back.upload_is_referenced(&green_tick));
        back.rebuild_indexes();
        assert!(back.upload_is_referenced(&green_tick));
        assert_eq!(back.emoji.image_shas(), vec![green_tick]);
    }

    #[test]
    fn zulip_sanitize_name() {
        assert_eq!(sanitize_name("zulip.txt"), "zulip.txt");
        assert_eq!(sanitize_name("my file (1).png"), "my-file-1.png");
        assert_eq!(sanitize_name("a -  b"), "a-b");
        assert_eq!(sanitize_name("??"), "uploaded-file");
        assert_eq!(sanitize_name(".."), "uploaded-file");
        assert_eq!(sanitize_name("été.pdf"), "été.pdf");
        assert_eq!(sanitize_name("ﬁle"), "file");
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("2/ab/x/b%20c%2Ed"), "2/ab/x/b c.d");
        assert_eq!(percent_decode("%E2%82%AC"), "€");
        // Not a `%XX`: kept as written.
        assert_eq!(percent_decode("a%zz%4"), "a%zz%4");
        assert_eq!(percent_decode("%%41"), "%A");
        // Not UTF-8 once decoded: the whole link as written.
        assert_eq!(percent_decode("a%ffb%20"), "a%ffb%20");
    }

    #[test]
    fn finds_upload_links() {
        let content = "[a.txt](/user_uploads/2/ab/xyzXYZ/a.txt) and \
            https://chat.example.com/user_uploads/2/cd/QQQ/b%20c.pdf, again \
            [dup](/user_uploads/2/ab/xyzXYZ/a.txt) but not /user_uploads/x or /user_uploads/2/a/b";
        assert_eq!(
            upload_path_ids(content),
            vec![
                "2/ab/xyzXYZ/a.txt".to_owned(),
                "2/cd/QQQ/b c.pdf".to_owned()
            ]
        );
    }
}
