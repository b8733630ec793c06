//! Uploads and attachments (seed 4.14): `POST /user_uploads`, the file routes, `GET
//! /attachments`, `DELETE /attachments/{attachment_id}`, and the sweep of unclaimed
//! uploads.
//!
//! Files are streamed to disk (`FileStore`: the server's upload folders), fsynced and
//! renamed to their hash before the realm records them, so a `success` names a file
//! that survives `kill -9`.
//! Removing a file waits until the change that dropped its last attachment is durable.
//!
//! For the message store: once changes from `Realm::decide_release_attachments` are
//! durable and visible, call `remove_unreferenced_files` with the realm's event hub and
//! `Realm::files_released_by` of each change.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use actix_web::http::header::{self, CONTENT_TYPE};
use actix_web::{web, HttpRequest, HttpResponse};
use futures_util::TryStreamExt;
use hmac::{Hmac, Mac};
use percent_encoding::percent_decode_str;
use serde_json::{json, Map, Value};
use sha2::Sha256;

use super::params::{path_int, Params};
use super::{auth, origin, success, ApiRequest, ApiResponse, AppState, CallOpts, Outcome};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::hub::EventHub;
use crate::realm::attachments::{
    Attachment, FileStore, ReceivingFile, RemoveAttachment, StoredUpload, Sweep,
};
use crate::realm::{Realm, User};
use crate::registry::RealmHandle;

/// How long a temporary file URL works (Zulip's `SIGNED_ACCESS_TOKEN_VALIDITY_IN_SECONDS`).
pub const TEMPORARY_URL_SECS: i64 = 60;
/// Attachments one sweep decision deletes at most (the actor's work stays bounded).
pub const SWEEP_BATCH: usize = 1000;
/// Zulip's `INLINE_MIME_TYPES`: served inline; anything else as a download.
const INLINE_MIME_TYPES: [&str; 17] = [
    "application/pdf",
    "audio/aac",
    "audio/flac",
    "audio/mp4",
    "audio/mpeg",
    "audio/wav",
    "audio/webm",
    "image/apng",
    "image/avif",
    "image/gif",
    "image/jpeg",
    "image/png",
    "image/webp",
    "text/plain",
    "video/mp4",
    "video/ogg",
    "video/webm",
];

/// The server's upload settings and file store.
pub struct Uploads {
    pub store: Arc<dyn FileStore>,
    /// `--max-file-upload-size-mib`.
    pub max_mib: u64,
    /// `--upload-sweep-days` (0: never).
    pub sweep_days: u64,
}

impl Uploads {
    pub fn new(store: Arc<dyn FileStore>, max_mib: u64, sweep_days: u64) -> Uploads {
        Uploads {
            store,
            max_mib,
            sweep_days,
        }
    }

    fn max_bytes(&self) -> u64 {
        self.max_mib.saturating_mul(1024 * 1024)
    }
}

fn one(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.to_owned(), value);
    m
}

fn too_large(max_mib: u64) -> ApiError {
    ApiError::new(
        413,
        ErrorCode::BadRequest,
        format!(
            "File is larger than this server's configured maximum upload size ({max_mib} MiB)."
        ),
    )
}

fn state_of(req: &HttpRequest) -> ApiResult<web::Data<AppState>> {
    req.app_data::<web::Data<AppState>>()
        .cloned()
        .ok_or_else(ApiError::internal)
}

fn realm_of(req: &HttpRequest, state: &AppState) -> ApiResult<RealmHandle> {
    state
        .registry
        .for_host(&origin::host(req))
        .ok_or_else(|| ApiError::new(404, ErrorCode::NonexistentSubdomain, "Invalid subdomain"))
}

/// An `ApiRequest` for a handler that reads its body itself (uploads).
pub(super) fn bodyless_request(req: &HttpRequest) -> ApiResult<ApiRequest> {
    let state = state_of(req)?;
    let handle = realm_of(req, &state)?;
    let (credentials, checked) = super::credentials_of(req);
    Ok(ApiRequest {
        realm: handle.client,
        hub: handle.hub,
        credentials,
        checked,
        params: Params::default(),
        files: Vec::new(),
        state,
        clock: handle.clock,
        server_url: handle.server_url,
        messages: handle.messages,
        client: super::client_name(req),
        accepts_gzip: super::middleware::compress::accepts_gzip(req),
        raw_body: None,
        webhook_bot_allowed: false,
    })
}

/// Django's `sanitize_file_name` of an uploaded file's name, then Zulip's `unquote`;
/// `None` when nothing is left (Django then drops the file).
fn upload_name(raw: &str) -> Option<String> {
    let base = raw.rsplit('/').next().unwrap_or(raw);
    let base = base.rsplit('\\').next().unwrap_or(base);
    let name: String = base.chars().filter(|c| !c.is_control()).collect();
    if name.is_empty() || name == "." || name == ".." {
        return None;
    }
    Some(percent_decode_lossy(&name))
}

/// `%XX` sequences decoded (others left as they are), then invalid UTF-8 replaced
/// (Python's `unquote`).
fn percent_decode_lossy(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// # `POST /user_uploads`
pub async fn upload_file(req: HttpRequest, payload: web::Payload) -> ApiResponse {
    let api = bodyless_request(&req)?;
    api.caller()?;
    let uploads = api.state.uploads.clone();
    let max = uploads.max_bytes();
    let subdomain = api.hub.current().settings.subdomain.clone();
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    // The multipart framing adds a little; a body much larger holds a larger file.
    if declared.is_some_and(|n| n > max.saturating_add(1024 * 1024)) {
        return Err(too_large(uploads.max_mib));
    }
    let is_multipart = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("multipart/form-data"));
    let no_file = || ApiError::bad_request("You must specify a file to upload");
    if !is_multipart {
        return Err(no_file());
    }
    let malformed = |_| ApiError::bad_request("Malformed multipart body");
    let failed = |e: std::io::Error| {
        tracing::error!("cannot store an upload: {e}");
        ApiError::internal()
    };
    let mut form = actix_multipart::Multipart::new(req.headers(), payload);
    let mut file: Option<(String, String, Box<dyn ReceivingFile>)> = None;
    while let Some(mut field) = form.try_next().await.map_err(malformed)? {
        let name = field
            .content_disposition()
            .and_then(|cd| cd.get_filename())
            .and_then(upload_name);
        let Some(name) = name else {
            // A plain form field: read and dropped (Zulip ignores them here).
            let mut read = 0usize;
            while let Some(chunk) = field.try_next().await.map_err(malformed)? {
                read += chunk.len();
                if read > super::BODY_LIMIT {
                    return Err(ApiError::new(
                        413,
                        ErrorCode::BadRequest,
                        "Request body too large",
                    ));
                }
            }
            continue;
        };
        if file.is_some() {
            return Err(ApiError::bad_request(
                "You may only upload one file at a time",
            ));
        }
        let content_type = field
            .content_type()
            .map(|m| m.essence_str().to_owned())
            .filter(|m| !m.is_empty() && m != "application/octet-stream")
            .or_else(|| mime_guess::from_path(&name).first_raw().map(str::to_owned))
            .unwrap_or_else(|| "application/octet-stream".to_owned());
        let store = uploads.store.clone();
        let receiving = subdomain.clone();
        let mut incoming = web::block(move || store.receive(&receiving))
            .await
            .map_err(|_| ApiError::internal())?
            .map_err(failed)?;
        let mut buffer: Vec<u8> = Vec::new();
        while let Some(chunk) = field.try_next().await.map_err(malformed)? {
            if incoming.size() + (buffer.len() + chunk.len()) as u64 > max {
                return Err(too_large(uploads.max_mib));
            }
            buffer.extend_from_slice(&chunk);
            if buffer.len() >= 1024 * 1024 {
                let data = std::mem::take(&mut buffer);
                incoming = web::block(move || incoming.write(&data).map(|()| incoming))
                    .await
                    .map_err(|_| ApiError::internal())?
                    .map_err(failed)?;
            }
        }
        incoming = web::block(move || incoming.write(&buffer).map(|()| incoming))
            .await
            .map_err(|_| ApiError::internal())?
            .map_err(failed)?;
        file = Some((name, content_type, incoming));
    }
    let (name, content_type, incoming) = file.ok_or_else(no_file)?;
    let held = web::block(move || incoming.store())
        .await
        .map_err(|_| ApiError::internal())?
        .map_err(failed)?;
    let upload = StoredUpload {
        name: name.clone(),
        size: held.size,
        sha256: held.sha256.clone(),
        content_type,
    };
    let written = api
        .write(|_, _, _| Ok(upload), Realm::decide_create_attachment)
        .await;
    // Recorded (and visible) or refused: either way the upload no longer holds it.
    drop(held);
    let path_id = written?;
    let url = format!("/user_uploads/{path_id}");
    let mut body = Map::new();
    body.insert("uri".into(), url.clone().into());
    body.insert("url".into(), url.into());
    body.insert("filename".into(), name.into());
    api.reply(body)
}

/// # `GET /attachments`
pub async fn get_attachments(req: ApiRequest) -> ApiResponse {
    req.read_large(CallOpts::USER, |c| {
        let me = c.me()?;
        let mut body = one("attachments", Value::Array(c.realm.view_attachments(me)));
        body.insert(
            "upload_space_used".into(),
            c.realm.upload_space_used().into(),
        );
        Ok(Outcome::read(body))
    })
    .await
}

/// # `DELETE /attachments/{attachment_id}`
pub async fn remove_attachment(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("attachment_id", &path.into_inner())?;
    let sha = req
        .write(
            |_, _, _| Ok(RemoveAttachment { id }),
            Realm::decide_remove_attachment,
        )
        .await?;
    remove_unreferenced_files(&req.state, &req.hub, vec![sha]).await;
    req.reply(Map::new())
}

/// Deletes the realm's files among `shas` that no attachment or custom emoji names
/// (`Realm::upload_is_referenced`). Call it once the change that released them is
/// visible: each file is checked against the version published at that moment (under
/// the store's lock, so an upload of the same bytes either still holds the file or is
/// already recorded).
pub async fn remove_unreferenced_files(state: &AppState, hub: &Arc<EventHub>, shas: Vec<String>) {
    if shas.is_empty() {
        return;
    }
    let store = state.uploads.store.clone();
    let hub = hub.clone();
    let done = web::block(move || {
        let subdomain = hub.current().settings.subdomain.clone();
        store.remove_unreferenced(&subdomain, &shas, &|sha| {
            hub.current().upload_is_referenced(sha)
        })
    })
    .await;
    if done.is_err() {
        tracing::error!("removing released uploads failed");
    }
}

// ---- serving files ----------------------------------------------------------------

fn html(status: u16, body: &'static str) -> HttpResponse {
    HttpResponse::build(
        actix_web::http::StatusCode::from_u16(status)
            .unwrap_or(actix_web::http::StatusCode::NOT_FOUND),
    )
    .content_type("text/html; charset=utf-8")
    .insert_header((header::VARY, "Accept"))
    .body(body)
}

fn file_missing() -> HttpResponse {
    html(404, "<p>This file does not exist or has been deleted.</p>")
}

fn not_authorized() -> HttpResponse {
    html(403, "<p>You are not authorized to view this file.</p>")
}

/// Who may read an attachment: its uploader, or anyone who may read a message that
/// links it (read from the message store).
fn may_read(
    store: &crate::realm::messages::rows::MessageRowsHandle,
    realm: &Realm,
    me: &User,
    att: &Attachment,
) -> bool {
    realm.can_read_attachment(me, att, &|u, id| {
        realm.access_message(store, u, id as i64).is_ok()
    })
}

/// The process's key for temporary URLs (they live a minute; a restart ends them).
fn url_key() -> &'static [u8; 32] {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    KEY.get_or_init(rand::random)
}

type HmacSha256 = Hmac<Sha256>;

/// HMAC-SHA256 of `data` under `key`, to finalize or verify (`None` never happens: HMAC
/// takes a key of any length).
fn url_mac(key: &[u8], data: &str) -> Option<HmacSha256> {
    let mut mac = HmacSha256::new_from_slice(key).ok()?;
    mac.update(data.as_bytes());
    Some(mac)
}

/// `/user_uploads/temporary/<token>/<filename>`: `path_id:expiry:signature` in upper
/// hex, as Zulip's signed tokens are.
fn temporary_url(path_id: &str, now_secs: i64) -> Option<String> {
    temporary_url_with(url_key(), path_id, now_secs)
}

fn temporary_url_with(key: &[u8], path_id: &str, now_secs: i64) -> Option<String> {
    let data = format!("{path_id}:{}", now_secs + TEMPORARY_URL_SECS);
    let signature = url_mac(key, &data)?.finalize().into_bytes();
    let signed = format!("{data}:{}", hex::encode(signature));
    let filename = path_id.rsplit('/').next().unwrap_or_default();
    Some(format!(
        "/user_uploads/temporary/{}/{filename}",
        hex::encode_upper(signed)
    ))
}

fn path_from_token(token: &str, now_secs: i64) -> Option<String> {
    path_from_token_with(url_key(), token, now_secs)
}

fn path_from_token_with(key: &[u8], token: &str, now_secs: i64) -> Option<String> {
    let signed = String::from_utf8(hex::decode(token).ok()?).ok()?;
    let (data, sig) = signed.rsplit_once(':')?;
    let (path_id, expiry) = data.rsplit_once(':')?;
    // The signature as we write it: lower-case hex.
    if !sig
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let sig = hex::decode(sig).ok()?;
    url_mac(key, data)?.verify_slice(&sig).ok()?;
    (expiry.parse::<i64>().ok()? >= now_secs).then(|| path_id.to_owned())
}

/// `Content-Disposition`, as Django's `content_disposition_header`.
fn disposition(inline: bool, name: &str) -> String {
    let kind = if inline { "inline" } else { "attachment" };
    let plain =
        name.chars().all(|c| c.is_ascii_graphic() || c == ' ') && !name.contains(['"', '\\']);
    if plain {
        format!("{kind}; filename=\"{name}\"")
    } else {
        let encoded: String = name
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        format!("{kind}; filename*=utf-8''{encoded}")
    }
}

async fn send_file(state: &AppState, realm: &Realm, att: &Attachment) -> HttpResponse {
    let store = state.uploads.store.clone();
    let (subdomain, sha) = (realm.settings.subdomain.clone(), att.sha256.clone());
    let bytes = match web::block(move || store.read(&subdomain, &sha)).await {
        Ok(Ok(Some(bytes))) => bytes,
        Ok(Ok(None)) => return file_missing(),
        _ => {
            tracing::error!("cannot read the upload {}", att.path_id);
            return actix_web::ResponseError::error_response(&ApiError::internal());
        }
    };
    let inline = INLINE_MIME_TYPES.contains(&att.content_type.as_str());
    crate::api::user_content(&mut HttpResponse::Ok())
        .content_type(att.content_type.clone())
        .insert_header((header::CONTENT_DISPOSITION, disposition(inline, &att.name)))
        .insert_header((header::CACHE_CONTROL, "private, immutable"))
        .body(bytes)
}

/// # `GET /user_uploads/{realm_id}/{path}`: the file, for Basic credentials (Zulip's
/// `serve_file_backend` with `override_api_url_scheme`).
pub async fn serve_file(req: HttpRequest, path: web::Path<(String, String)>) -> ApiResponse {
    let state = state_of(&req)?;
    let handle = realm_of(&req, &state)?;
    let (realm_id, rest) = path.into_inner();
    let realm = handle.hub.current();
    let me = match auth::file_credentials(&req) {
        Ok(c) => Some(c.user_in(&realm, handle.clock.now_secs())?.id),
        Err(e) if req.headers().contains_key(header::AUTHORIZATION) => return Err(e),
        Err(_) => None,
    };
    let Some(att) = realm.attachment_by_path(&format!("{realm_id}/{rest}")) else {
        return Ok(file_missing());
    };
    if me.is_some() {
        handle.messages.ready().await.map_err(|why| {
            tracing::warn!("message store unavailable: {why}");
            ApiError::messages_unavailable()
        })?;
    }
    let allowed = me
        .and_then(|id| realm.user(id))
        .is_some_and(|u| may_read(&handle.messages, &realm, u, att));
    if !allowed {
        return Ok(not_authorized());
    }
    Ok(send_file(&state, &realm, att).await)
}

/// # `GET /user_uploads/{realm_id}/{path}` under `/api/v1`: a temporary URL of the file
/// (Zulip's `serve_file_url_backend`).
pub async fn get_file_temporary_url(
    req: ApiRequest,
    path: web::Path<(String, String)>,
) -> ApiResponse {
    let (realm_id, rest) = path.into_inner();
    let realm = req.hub.current();
    let me = req.authenticate(&realm)?;
    let Some(att) = realm.attachment_by_path(&format!("{realm_id}/{rest}")) else {
        return Ok(file_missing());
    };
    if !may_read(&req.message_store().await?, &realm, me, att) {
        return Ok(not_authorized());
    }
    let url = temporary_url(&att.path_id, req.clock.now_secs()).ok_or_else(ApiError::internal)?;
    Ok(success(one("url", json!(url))))
}

/// # `GET /user_uploads/temporary/{token}/{filename}`: a file by temporary URL, without
/// credentials.
pub async fn serve_temporary(req: HttpRequest, path: web::Path<(String, String)>) -> ApiResponse {
    let state = state_of(&req)?;
    let handle = realm_of(&req, &state)?;
    let (token, filename) = path.into_inner();
    let path_id = path_from_token(&token, handle.clock.now_secs())
        .ok_or_else(|| ApiError::bad_request("Invalid token"))?;
    if path_id.rsplit('/').next() != Some(filename.as_str()) {
        return Err(ApiError::bad_request("Invalid filename"));
    }
    let realm = handle.hub.current();
    let att = realm
        .attachment_by_path(&path_id)
        .ok_or_else(|| ApiError::bad_request("Invalid token"))?;
    Ok(send_file(&state, &realm, att).await)
}

// ---- the sweep ----------------------------------------------------------------------

/// Deletes every realm's uploads that no message links and that are older than
/// `--upload-sweep-days`, in batches decided by each realm's actor, then their files and
/// any stray file. Returns how many attachments were deleted.
pub async fn sweep_uploads(state: &AppState) -> usize {
    let days = state.uploads.sweep_days;
    if days == 0 {
        return 0;
    }
    let period_ms = i64::try_from(days).unwrap_or(i64::MAX / 86_400_000) * 86_400_000;
    let mut deleted = 0;
    for handle in state.registry.all() {
        loop {
            let before = handle.hub.current();
            let cutoff = handle.clock.now_ms().saturating_sub(period_ms);
            let candidates = before.sweep_candidates(cutoff, SWEEP_BATCH);
            if candidates.is_empty() {
                break;
            }
            let sweep = Sweep {
                candidates,
                period_ms,
            };
            let n = match handle
                .client
                .commit_system(sweep, Realm::decide_sweep_write)
                .await
            {
                Ok(n) => n,
                Err(e) => {
                    tracing::error!("upload sweep not made: {e}");
                    break;
                }
            };
            let after = handle.hub.current();
            let shas: Vec<String> = before
                .attachments
                .values()
                .filter(|a| !after.attachments.contains_key(&a.id))
                .map(|a| a.sha256.clone())
                .collect();
            remove_unreferenced_files(state, &handle.hub, shas).await;
            deleted += n;
            if n == 0 {
                break;
            }
        }
        let store = state.uploads.store.clone();
        let hub = handle.hub.clone();
        let _ = web::block(move || {
            let subdomain = hub.current().settings.subdomain.clone();
            store.remove_strays(
                &subdomain,
                &|sha| hub.current().upload_is_referenced(sha),
                Duration::from_secs(3600),
            )
        })
        .await;
    }
    deleted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_url_signatures_are_pinned() {
        // HMAC-SHA256 as RFC 4231 (test case 2) and Python's `hmac` compute it.
        let mac = url_mac(b"Jefe", "what do ya want for nothing?").expect("mac");
        assert_eq!(
            hex::encode(mac.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // A URL signed with a known key: its bytes never change, so the URLs a running
        // server handed out keep working across upgrades of the signing code.
        let key: Vec<u8> = (0..32).collect();
        let signed = "2/ab/xyz/file.txt:1060:\
            f8a4ed55feed40a043f7170082a27789b33d2bf808b8c26cf415f377e8e42040";
        let url = temporary_url_with(&key, "2/ab/xyz/file.txt", 1000).expect("url");
        assert_eq!(
            url,
            format!(
                "/user_uploads/temporary/{}/file.txt",
                hex::encode_upper(signed)
            )
        );
        let token = hex::encode_upper(signed);
        assert_eq!(
            path_from_token_with(&key, &token, 1060).as_deref(),
            Some("2/ab/xyz/file.txt")
        );
        // A signature in upper case, or under another key, is not ours.
        let upper = hex::encode_upper("2/ab/xyz/file.txt:1060:F8A4ED55FEED40A043F7170082A27789B33D2BF808B8C26CF415F377E8E42040");
        assert_eq!(path_from_token_with(&key, &upper, 1060), None);
        assert_eq!(path_from_token_with(&key[1..], &token, 1060), None);
    }

    #[test]
    fn temporary_tokens() {
        let url = temporary_url("2/ab/xyz/file.txt", 1000).expect("url");
        let token = url
            .strip_prefix("/user_uploads/temporary/")
            .and_then(|r| r.strip_suffix("/file.txt"))
            .expect("shape");
        assert_eq!(
            path_from_token(token, 1000).as_deref(),
            Some("2/ab/xyz/file.txt")
        );
        assert_eq!(path_from_token(token, 1000 + TEMPORARY_URL_SECS + 1), None);
        let mut forged = token.to_owned();
        forged.replace_range(0..2, "33");
        assert_eq!(path_from_token(&forged, 1000), None);
        assert_eq!(path_from_token("zz", 1000), None);
    }

    #[test]
    fn lossy_percent_decoding() {
        assert_eq!(percent_decode_lossy("a%20b%2Fc"), "a b/c");
        // Not a `%XX`: kept as sent.
        assert_eq!(percent_decode_lossy("100%"), "100%");
        assert_eq!(percent_decode_lossy("%4"), "%4");
        assert_eq!(percent_decode_lossy("%zz%%41"), "%zz%A");
        // Bytes that are not UTF-8 become U+FFFD; the rest is decoded.
        assert_eq!(percent_decode_lossy("%ff%C3%A9"), "\u{fffd}é");
        assert_eq!(percent_decode_lossy("%C3"), "\u{fffd}");
    }

    #[test]
    fn names_and_dispositions() {
        assert_eq!(upload_name("C:\\x\\a%20b.txt").as_deref(), Some("a b.txt"));
        assert_eq!(upload_name("../.."), None);
        assert_eq!(disposition(true, "a.png"), "inline; filename=\"a.png\"");
        assert_eq!(
            disposition(false, "é.zip"),
            "attachment; filename*=utf-8''%C3%A9.zip"
        );
    }
}
