//! Data exports of the organization: `POST /export/realm`, `GET /export/realm`,
//! `DELETE /export/realm/{export_id}`, `GET /export/realm/consents` and the
//! `realm_export` event, after Zulip's `zerver/views/realm_export.py`,
//! `zerver/actions/realm_export.py` (`notify_realm_export`), `zerver/lib/export.py`
//! (`get_realm_exports_serialized`, the export types and consent),
//! `zerver/models/realms.py` (`RealmExport`) and `zerver/worker/deferred_work.py`.
//!
//! An export is one of hearth's realm archives (`crate::archive`), written off the
//! actor. Its record here goes `Requested` (Zulip's `pending`) -> `Succeeded` (the
//! archive's size) or `Failed` -> `Deleted` (only a succeeded one; its file is
//! removed). The request records `Requested` and nothing else; a second write records
//! the outcome. A record still `Requested` when a server starts was cut off by the
//! stop (the writing never resumes): it is marked failed, as Zulip's worker marks an
//! export it sees again ("possible OOM during export?").
//!
//! Administrators (owners included) may do everything, both export types included:
//! Zulip's view is `require_realm_admin` for every endpoint. The type chooses the
//! messages the archive holds (`Realm::export_filter`, after Zulip's
//! `export_partial_message_files`): `public` only those of public channels,
//! `full_with_consent` those and the private ones of the users who consented.
//!
//! | Change | Events | To |
//! |--------|--------|----|
//! | `ExportChange::*` | `realm_export` `{exports}` (every export, as `GET /export/realm`) | active human administrators |

use std::sync::Arc;

use imbl::OrdMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::channels::ChannelId;
use super::events::{Audience, Event};
use super::messages::rows::{MessageRows, RowsResult};
use super::messages::{Message, MessageId, Recipient};
use super::user_settings::{setting, SettingValue};
use super::{Change, Cx, Decided, Realm, User, UserId};
use crate::error::{ApiError, ApiResult};

pub type ExportId = u64;

/// Which message rows a data export's archive holds: called with a row and every
/// user's flag bits on it (`(user, bits)`, as the archive holds them).
pub type ExportFilter = Box<dyn Fn(&Message, &[(UserId, u32)]) -> bool + Send + Sync>;

/// Zulip's `EXPORT_LIMIT`: exports requested per `EXPORT_WINDOW_SECS`.
pub const EXPORT_LIMIT: usize = 5;
/// Seven days.
pub const EXPORT_WINDOW_SECS: i64 = 7 * 24 * 3600;
/// Zulip's `MAX_MESSAGE_HISTORY`: more messages sent than this need a manual export.
pub const MAX_MESSAGE_HISTORY: u64 = 250_000;
/// Zulip's `MAX_UPLOAD_QUOTA` (20 GiB of uploads).
pub const MAX_UPLOAD_QUOTA: u64 = 20 * 1024 * 1024 * 1024;

/// What an export holds, as requested (Zulip's `RealmExport.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExportType {
    /// `public` (Zulip's `EXPORT_PUBLIC`, 1).
    Public,
    /// `full_with_consent` (Zulip's `EXPORT_FULL_WITH_CONSENT`, 2).
    FullWithConsent,
}

impl ExportType {
    /// The name the OpenAPI description lists (`export_type` of `RealmExport`).
    pub fn name(self) -> &'static str {
        match self {
            ExportType::Public => "public",
            ExportType::FullWithConsent => "full_with_consent",
        }
    }

    /// The `export_type` parameter: Zulip's `Json[int]` in (1, 2) (feature levels
    /// 304–448), or the names that replaced them (`public`, `full_with_consent`).
    /// `full_without_consent` needs an organization setting hearth does not have:
    /// refused, as any other value, with "Invalid export_type".
    pub fn parse(raw: &str) -> ApiResult<ExportType> {
        let invalid = || ApiError::bad_request("Invalid export_type");
        match raw {
            "public" => return Ok(ExportType::Public),
            "full_with_consent" => return Ok(ExportType::FullWithConsent),
            _ => {}
        }
        let Ok(v) = serde_json::from_str::<Value>(raw) else {
            return Err(invalid());
        };
        match v {
            Value::Number(n) => match (n.as_i64(), n.is_f64()) {
                (Some(1), _) => Ok(ExportType::Public),
                (Some(2), _) => Ok(ExportType::FullWithConsent),
                (_, false) => Err(invalid()),
                (_, true) => Err(ApiError::bad_request("export_type is not an integer")),
            },
            Value::String(s) if s == "public" || s == "full_with_consent" => ExportType::parse(&s),
            Value::String(_) => Err(invalid()),
            _ => Err(ApiError::bad_request("export_type is not an integer")),
        }
    }
}

/// Where an export is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ExportStatus {
    /// Being written (Zulip's `REQUESTED`/`STARTED`: `pending`).
    Requested,
    /// Written: the archive's size in bytes. UNIX seconds.
    Succeeded { at: i64, size: u64 },
    /// Not written (an error, or cut off by a stop). UNIX seconds.
    Failed { at: i64 },
    /// Its file removed (`DELETE /export/realm/{id}`). UNIX seconds.
    Deleted { at: i64 },
}

/// One export (Zulip's `RealmExport` row).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RealmExport {
    pub id: ExportId,
    pub export_type: ExportType,
    pub acting_user_id: UserId,
    /// UNIX seconds (Zulip's `date_requested`, `export_time`).
    pub requested_at: i64,
    /// The archive's place in the realm's exports folder: `<token>/<file name>`.
    pub file: String,
    /// Its download URL once written (Zulip's `realm.url + export_path`).
    pub url: String,
    pub status: ExportStatus,
}

impl RealmExport {
    /// Zulip's `get_realm_exports_serialized` entry.
    pub fn json(&self) -> Value {
        let (url, deleted, failed) = match &self.status {
            ExportStatus::Requested => (None, None, None),
            ExportStatus::Succeeded { .. } => (Some(self.url.as_str()), None, None),
            ExportStatus::Failed { at } => (None, None, Some(*at)),
            ExportStatus::Deleted { at } => (None, Some(*at), None),
        };
        json!({
            "id": self.id,
            "export_time": self.requested_at,
            "acting_user_id": self.acting_user_id,
            "export_url": url,
            "deleted_timestamp": deleted,
            "failed_timestamp": failed,
            "pending": self.status == ExportStatus::Requested,
            "export_type": self.export_type.name(),
        })
    }
}

/// The realm's exports, by id.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ExportState {
    pub by_id: OrdMap<ExportId, RealmExport>,
    pub next_id: ExportId,
}

/// Facts about exports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ExportChange {
    /// An export was requested (it is being written).
    Requested(RealmExport),
    /// Its archive was written: `size` bytes.
    Succeeded { id: ExportId, at: i64, size: u64 },
    /// It was not written.
    Failed { id: ExportId, at: i64 },
    /// Its file was removed.
    Deleted { id: ExportId, at: i64 },
}

/// `POST /export/realm`, parsed: the type, and where the archive will go (a random
/// token chosen on the worker, as Zulip's `secrets.token_urlsafe(18)`).
#[derive(Debug, Clone)]
pub struct RequestExport {
    pub export_type: ExportType,
    /// `<token>/<file name>`.
    pub file: String,
    /// The download URL it will have.
    pub url: String,
}

/// How an export's writing ended (the server's second write): the archive's size, or
/// a failure.
#[derive(Debug, Clone, Copy)]
pub struct FinishExport {
    pub id: ExportId,
    pub size: Option<u64>,
}

/// `DELETE /export/realm/{export_id}`.
#[derive(Debug, Clone, Copy)]
pub struct DeleteExport {
    pub id: i64,
}

/// Zulip's text when an organization is too large for an export through the API.
pub fn too_large(contact: &str) -> ApiError {
    ApiError::bad_request(format!(
        "The export you requested is too large for automatic processing. Please request a manual export by contacting {contact}."
    ))
}

impl Realm {
    /// Zulip's rate limit: `EXPORT_LIMIT` exports requested in the last seven days.
    pub fn check_export_rate(&self, now: i64) -> ApiResult<()> {
        let recent = self
            .exports
            .by_id
            .values()
            .filter(|e| e.requested_at >= now - EXPORT_WINDOW_SECS)
            .count();
        if recent >= EXPORT_LIMIT {
            return Err(ApiError::bad_request("Exceeded rate limit."));
        }
        Ok(())
    }

    /// The last export still being written, if any (start-up marks those failed).
    pub fn last_pending_export(&self) -> Option<ExportId> {
        self.exports
            .by_id
            .values()
            .filter(|e| e.status == ExportStatus::Requested)
            .map(|e| e.id)
            .max()
    }

    /// Whether the realm is past Zulip's limits of an export through the API (messages
    /// sent, uploads stored). O(1): the messages sent are the ids handed out.
    pub fn export_too_large(&self) -> bool {
        self.messages.next_id.saturating_sub(1) > MAX_MESSAGE_HISTORY
            || self.upload_space_used() > MAX_UPLOAD_QUOTA
    }

    /// Whom the too-large answer names: hearth has no server administrator address
    /// (Zulip's `ZULIP_ADMINISTRATOR`), so the organization's first active owner.
    /// Read on the worker, only when the answer is that one.
    pub fn export_contact(&self) -> String {
        self.users
            .values()
            .find(|u| u.is_active && u.is_owner() && !u.is_bot())
            .map(|u| u.delivery_email.clone())
            .unwrap_or_default()
    }

    /// `POST /export/realm`: Zulip's `export_realm` checks after the role (the rate
    /// limit, then the size, which the handler checked on the worker); records the
    /// export as requested. Answers its id.
    pub fn decide_request_export(
        &self,
        me: &User,
        q: RequestExport,
        cx: &mut Cx,
    ) -> ApiResult<Decided<ExportId>> {
        self.require_admin(me)?;
        let now = cx.now_ms.div_euclid(1000);
        self.check_export_rate(now)?;
        let id = self.exports.next_id.max(1);
        Ok(Decided::new(
            vec![Change::Export(ExportChange::Requested(RealmExport {
                id,
                export_type: q.export_type,
                acting_user_id: me.id,
                requested_at: now,
                file: q.file,
                url: q.url,
                status: ExportStatus::Requested,
            }))],
            id,
        ))
    }

    /// The end of an export's writing: records its size, or its failure; nothing when
    /// it is no longer being written (marked failed meanwhile).
    pub fn decide_finish_export(&self, q: FinishExport, cx: &mut Cx) -> ApiResult<Decided<()>> {
        let pending = self
            .exports
            .by_id
            .get(&q.id)
            .is_some_and(|e| e.status == ExportStatus::Requested);
        if !pending {
            return Ok(Decided::changes(Vec::new()));
        }
        let at = cx.now_ms.div_euclid(1000);
        let change = match q.size {
            Some(size) => ExportChange::Succeeded { id: q.id, at, size },
            None => ExportChange::Failed { id: q.id, at },
        };
        Ok(Decided::changes(vec![Change::Export(change)]))
    }

    /// At start: every export up to `up_to` (the last one the recovered realm holds)
    /// still being written was cut off by the stop; each is marked failed (Zulip's
    /// "Marking export ... as failed due to retry"). Those requested since the start
    /// are left alone. Answers their files, whose leftovers the caller removes.
    pub fn decide_fail_interrupted_exports(
        &self,
        up_to: ExportId,
        cx: &mut Cx,
    ) -> ApiResult<Decided<Vec<String>>> {
        let at = cx.now_ms.div_euclid(1000);
        let cut: Vec<&RealmExport> = self
            .exports
            .by_id
            .range(..=up_to)
            .map(|(_, e)| e)
            .filter(|e| e.status == ExportStatus::Requested)
            .collect();
        Ok(Decided::new(
            cut.iter()
                .map(|e| Change::Export(ExportChange::Failed { id: e.id, at }))
                .collect(),
            cut.iter().map(|e| e.file.clone()).collect(),
        ))
    }

    /// `DELETE /export/realm/{export_id}`: Zulip's `delete_realm_export` checks, in its
    /// order. Answers the file to remove.
    pub fn decide_delete_export(
        &self,
        me: &User,
        q: DeleteExport,
        cx: &mut Cx,
    ) -> ApiResult<Decided<String>> {
        self.require_admin(me)?;
        let export = u64::try_from(q.id)
            .ok()
            .and_then(|id| self.exports.by_id.get(&id))
            .ok_or_else(|| ApiError::bad_request("Invalid data export ID"))?;
        match export.status {
            ExportStatus::Deleted { .. } => {
                return Err(ApiError::bad_request("Export already deleted"))
            }
            ExportStatus::Failed { .. } => {
                return Err(ApiError::bad_request("Export failed, nothing to delete"))
            }
            ExportStatus::Requested => {
                return Err(ApiError::bad_request("Export still in progress"))
            }
            ExportStatus::Succeeded { .. } => {}
        }
        Ok(Decided::new(
            vec![Change::Export(ExportChange::Deleted {
                id: export.id,
                at: cx.now_ms.div_euclid(1000),
            })],
            export.file.clone(),
        ))
    }

    /// `exports` of `GET /export/realm` and of the event: every export, by id.
    pub fn view_exports(&self) -> Vec<Value> {
        self.exports.by_id.values().map(RealmExport::json).collect()
    }

    /// The succeeded export whose file is `file` (`<token>/<name>`): the download.
    pub fn export_by_file(&self, file: &str) -> Option<&RealmExport> {
        self.exports
            .by_id
            .values()
            .find(|e| e.file == file && matches!(e.status, ExportStatus::Succeeded { .. }))
    }

    /// `export_consents` of `GET /export/realm/consents`: each active human user, whether
    /// they let administrators export their private data, and their email visibility.
    pub fn view_export_consents(&self) -> Vec<Value> {
        let consent = setting("allow_private_data_export");
        let visibility = setting("email_address_visibility");
        self.users
            .values()
            .filter(|u| u.is_active && !u.is_bot())
            .map(|u| {
                let consented = consent
                    .map(|st| self.user_setting(u, st) == SettingValue::Bool(true))
                    .unwrap_or(false);
                let visibility = visibility
                    .map(|st| self.user_setting(u, st).json())
                    .unwrap_or(Value::Null);
                json!({"user_id": u.id, "consented": consented,
                       "email_address_visibility": visibility})
            })
            .collect()
    }

    /// Whether a user lets administrators export their private data.
    pub fn consents_to_export(&self, user: &User) -> bool {
        setting("allow_private_data_export")
            .is_some_and(|st| self.user_setting(user, st) == SettingValue::Bool(true))
    }

    /// The messages an export of type `kind` holds, chosen from the realm as it is at
    /// the export's position (Zulip's `export_partial_message_files`):
    ///
    /// - `public`: the messages of public (not invite-only) channels, nothing else: no
    ///   direct or group-direct message, no message of a private channel.
    /// - `full_with_consent`: those, and the private messages of the consenting users
    ///   (active humans with `allow_private_data_export`, Zulip's
    ///   `get_consented_user_ids`): every direct or group-direct message one of them
    ///   takes part in (sent or received: Zulip's `messages_we_received` of their
    ///   personal and group recipients, with `messages_we_sent_to_them`), and the
    ///   messages of a private channel a consenting user is subscribed to, all of
    ///   them when its history is public to subscribers, else those a consenting
    ///   user has (Zulip's protected-history rule: a `UserMessage` row).
    ///
    /// A message of a channel that no longer exists is left out.
    pub fn export_filter(&self, kind: ExportType) -> ExportFilter {
        let consenting = self.exportable_users(kind);
        // Per channel: `None` public; `Some(true)` private with every message kept
        // (a consenting subscriber, shared history); `Some(false)` private, only what
        // a consenting user has. Private channels no consenting user is in: absent.
        let mut channels: std::collections::HashMap<ChannelId, Option<bool>> = Default::default();
        for ch in self.channels.values() {
            if !ch.invite_only {
                channels.insert(ch.id, None);
            } else if consenting.iter().any(|u| ch.is_subscribed(*u)) {
                channels.insert(ch.id, Some(ch.history_public_to_subscribers));
            }
        }
        Box::new(move |m, flags| match &m.recipient {
            Recipient::Channel { channel_id, .. } => match channels.get(channel_id) {
                Some(None) | Some(Some(true)) => true,
                Some(Some(false)) => flags.iter().any(|(u, _)| consenting.contains(u)),
                None => false,
            },
            Recipient::Direct { users } => {
                consenting.contains(&m.sender_id) || users.iter().any(|u| consenting.contains(u))
            }
        })
    }

    /// The users whose private data an export of type `kind` holds (Zulip's
    /// `exportable_user_ids`): none for `public`; the consenting active humans for
    /// `full_with_consent`.
    fn exportable_users(&self, kind: ExportType) -> std::collections::HashSet<UserId> {
        match kind {
            ExportType::Public => Default::default(),
            ExportType::FullWithConsent => self
                .users
                .values()
                .filter(|u| u.is_active && !u.is_bot() && self.consents_to_export(u))
                .map(|u| u.id)
                .collect(),
        }
    }

    /// The messages linking an attachment that an export of type `kind` holds
    /// (`export_filter`, given the flags of the users whose private data it holds,
    /// the only ones the filter reads). Bounded by the attachments' links, never by
    /// the realm's messages.
    pub fn export_kept_links(
        &self,
        rows: &dyn MessageRows,
        kind: ExportType,
    ) -> RowsResult<std::collections::HashSet<MessageId>> {
        let keep = self.export_filter(kind);
        let holders = self.exportable_users(kind);
        let linked: std::collections::BTreeSet<MessageId> = self
            .attachments
            .values()
            .flat_map(|a| a.messages.keys().copied())
            .collect();
        let mut kept = std::collections::HashSet::new();
        for id in linked {
            // A deleted message has no row: nothing of it is exported.
            let Some(m) = rows.row(id)? else { continue };
            let mut flags = Vec::new();
            for &user in &holders {
                if let Some(bits) = rows.user_flags(user, id)? {
                    flags.push((user, bits));
                }
            }
            if keep(&m, &flags) {
                kept.insert(id);
            }
        }
        Ok(kept)
    }

    /// The realm part of an export of type `kind`, `kept_links` its
    /// `export_kept_links`: the realm without the drafts, scheduled messages and
    /// reminders of the users whose private data it does not hold (Zulip exports
    /// `zerver_draft`, `zerver_scheduledmessage` and the reminders of
    /// `exportable_user_ids` only), and with the attachment records of the exported
    /// messages only (Zulip's `fetch_attachment_data`): each record lists only its
    /// kept messages, and one left with none is dropped, unless it never linked a
    /// message and its owner's private data is held (an upload in their drafts or
    /// scheduled messages). Only encoded: the indexes derived from those (rebuilt on
    /// loading) are left as they are.
    ///
    /// It holds no secret (`strip_secrets`): whoever holds a data export must not hold
    /// the realm with it.
    pub fn export_state(
        &self,
        kind: ExportType,
        kept_links: &std::collections::HashSet<MessageId>,
    ) -> Realm {
        let keep = self.exportable_users(kind);
        let mut out = self.clone();
        fn kept<K: Ord + Copy, V: Clone>(
            map: &OrdMap<K, V>,
            keep: impl Fn(&K, &V) -> bool,
        ) -> OrdMap<K, V> {
            map.iter()
                .filter(|(k, v)| keep(k, v))
                .map(|(k, v)| (*k, v.clone()))
                .collect()
        }
        out.drafts.by_user = kept(&self.drafts.by_user, |u, _| keep.contains(u));
        out.messages.scheduled = kept(&self.messages.scheduled, |_, m| keep.contains(&m.sender_id));
        out.reminders.by_id = kept(&self.reminders.by_id, |_, r| keep.contains(&r.user_id));
        out.attachments = self
            .attachments
            .iter()
            .filter_map(|(id, a)| {
                let messages: OrdMap<MessageId, i64> = a
                    .messages
                    .iter()
                    .filter(|(m, _)| kept_links.contains(m))
                    .map(|(m, at)| (*m, *at))
                    .collect();
                let unsent = a.messages.is_empty() && keep.contains(&a.owner);
                (!messages.is_empty() || unsent).then(|| {
                    let mut a = a.clone();
                    a.messages = messages;
                    (*id, a)
                })
            })
            .collect();
        out.strip_secrets();
        out
    }

    /// Takes out of a realm every credential it holds, for a data export (Zulip leaves
    /// `api_key` and `password` out of its exports): the users' API keys (left empty:
    /// an import gives each user a new one, `issue_missing_api_keys`) and password
    /// hashes (users set a new password), the invitations and their link keys, the
    /// channels' email-gateway tokens, the push registrations (tokens and the E2EE
    /// devices' keys) and the export records (their download paths). The operator's
    /// archive of a realm (`hearth realm export`, a move) keeps them all: it is the
    /// realm itself.
    pub fn strip_secrets(&mut self) {
        let ids: Vec<UserId> = self.users.keys().copied().collect();
        for id in ids {
            if let Some(user) = self.users.get_mut(&id) {
                let user = Arc::make_mut(user);
                user.api_key.clear();
                user.password_hash = None;
            }
        }
        self.invites.clear();
        self.channel_email_tokens.clear();
        self.push_tokens.clear();
        self.push_devices.clear();
        self.exports.by_id.clear();
        self.sessions.clear();
        // Outgoing-webhook tokens are shared with the bots' servers; deliveries pending
        // here are this server's promises, not the copy's.
        let bots: Vec<UserId> = self.bot_services.services.keys().copied().collect();
        for bot in bots {
            if let Some(service) = self.bot_services.services.get_mut(&bot) {
                service.token.clear();
            }
        }
        self.bot_services.outbox = Default::default();
        self.missed_mail = Default::default();
    }

    /// Gives every user without an API key (an imported data export's) a new one, and
    /// every outgoing-webhook service without a token a new token.
    /// Returns who was given one.
    pub fn issue_missing_api_keys(&mut self, cx: &mut Cx) -> Vec<UserId> {
        let keyless: Vec<UserId> = self
            .users
            .values()
            .filter(|u| u.api_key.is_empty())
            .map(|u| u.id)
            .collect();
        for id in &keyless {
            if let Some(user) = self.users.get_mut(id) {
                let key = cx.api_key();
                Arc::make_mut(user).api_key = key.clone();
                self.by_api_key.insert(key, *id);
            }
        }
        // Outgoing-webhook bots get new tokens the same way (their servers need the new
        // token, as they need the bot's new key).
        let bots: Vec<UserId> = self.bot_services.services.keys().copied().collect();
        for bot in bots {
            if let Some(service) = self.bot_services.services.get_mut(&bot) {
                if service.token.is_empty() {
                    service.token = cx.api_key();
                }
            }
        }
        keyless
    }

    /// The uploaded files (`sha256`) an export whose realm part is `part` leaves
    /// out: those of this realm's attachment records that no record of `part` and no
    /// custom emoji holds. A file no record names (an avatar, an upload not recorded
    /// yet) is not left out by this.
    pub fn export_left_out_files(&self, part: &Realm) -> std::collections::HashSet<String> {
        let mut held: std::collections::HashSet<&str> = part
            .attachments
            .values()
            .map(|a| a.sha256.as_str())
            .collect();
        let emoji = self.emoji.image_shas();
        held.extend(emoji.iter().map(String::as_str));
        self.attachments
            .values()
            .map(|a| a.sha256.as_str())
            .filter(|sha| !held.contains(sha))
            .map(str::to_owned)
            .collect()
    }

    /// Active human administrators (Zulip's `get_human_admin_users`).
    pub(super) fn human_admins(&self) -> Vec<UserId> {
        self.users
            .values()
            .filter(|u| u.is_active && u.is_admin() && !u.is_bot())
            .map(|u| u.id)
            .collect()
    }

    pub(super) fn apply_export_change(&mut self, change: &ExportChange) {
        let (id, status) = match change {
            ExportChange::Requested(e) => {
                self.exports.next_id = self.exports.next_id.max(e.id) + 1;
                self.exports.by_id.insert(e.id, e.clone());
                return;
            }
            ExportChange::Succeeded { id, at, size } => (
                id,
                ExportStatus::Succeeded {
                    at: *at,
                    size: *size,
                },
            ),
            ExportChange::Failed { id, at } => (id, ExportStatus::Failed { at: *at }),
            ExportChange::Deleted { id, at } => (id, ExportStatus::Deleted { at: *at }),
        };
        if let Some(e) = self.exports.by_id.get_mut(id) {
            e.status = status;
        }
    }

    /// Zulip's `notify_realm_export`: the whole list, to the human administrators.
    pub(super) fn export_events(&self) -> Vec<Event> {
        vec![Event::new(
            json!({"type": "realm_export", "exports": self.view_exports()}),
            Audience::users(self.human_admins()),
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realm::dev::testing;

    fn dev_realm() -> Realm {
        testing::dev_realm(&mut Cx::seeded(0, 7))
    }

    fn admin(realm: &Realm) -> User {
        realm
            .user_by_delivery_email("iago@zulip.com")
            .expect("iago")
            .clone()
    }

    fn request() -> RequestExport {
        RequestExport {
            export_type: ExportType::Public,
            file: "t/x.archive".into(),
            url: "http://x/user_avatars/exports/zulip/t/x.archive".into(),
        }
    }

    #[test]
    fn export_type_values() {
        assert_eq!(ExportType::parse("1").ok(), Some(ExportType::Public));
        assert_eq!(
            ExportType::parse("2").ok(),
            Some(ExportType::FullWithConsent)
        );
        assert_eq!(ExportType::parse("public").ok(), Some(ExportType::Public));
        assert_eq!(
            ExportType::parse("full_with_consent").ok(),
            Some(ExportType::FullWithConsent)
        );
        for (raw, msg) in [
            ("3", "Invalid export_type"),
            ("0", "Invalid export_type"),
            ("full_without_consent", "Invalid export_type"),
            ("nonsense", "Invalid export_type"),
            ("1.5", "export_type is not an integer"),
            ("true", "export_type is not an integer"),
        ] {
            let e = ExportType::parse(raw).expect_err(raw);
            assert_eq!(e.msg, msg, "{raw}");
        }
    }

    #[test]
    fn too_large_past_zulips_limits() {
        let mut realm = dev_realm();
        assert!(!realm.export_too_large());
        realm.messages.next_id = MAX_MESSAGE_HISTORY + 1;
        assert!(!realm.export_too_large(), "exactly the limit is allowed");
        realm.messages.next_id = MAX_MESSAGE_HISTORY + 2;
        assert!(realm.export_too_large());
        assert_eq!(
            too_large("desdemona@zulip.com").msg,
            "The export you requested is too large for automatic processing. Please request a manual export by contacting desdemona@zulip.com."
        );
    }

    #[test]
    fn rate_limit_counts_the_last_seven_days() {
        let mut realm = dev_realm();
        let me = admin(&realm);
        let day = 24 * 3600 * 1000;
        for i in 0..EXPORT_LIMIT as i64 {
            let mut cx = Cx::seeded(i * day, 1);
            let d = realm
                .decide_request_export(&me, request(), &mut cx)
                .expect("allowed");
            for c in &d.changes {
                realm.apply(c);
            }
        }
        let mut cx = Cx::seeded(6 * day, 1);
        let e = realm
            .decide_request_export(&me, request(), &mut cx)
            .expect_err("limited");
        assert_eq!(e.msg, "Exceeded rate limit.");
        // Seven days after the first, it no longer counts.
        let mut cx = Cx::seeded(7 * day + 1000, 1);
        let d = realm
            .decide_request_export(&me, request(), &mut cx)
            .expect("allowed again");
        assert_eq!(d.answer, EXPORT_LIMIT as u64 + 1);
    }
}
