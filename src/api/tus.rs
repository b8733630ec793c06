//! Resumable uploads (`/api/v1/tus`, feature level 295): the tus 1.0 protocol, which
//! Zulip serves with tusd and a hook, served here by hearth itself.
//!
//! `OPTIONS` answers the server's capabilities; `POST` (with `Upload-Length` and
//! `Upload-Metadata`: `filename`, `filetype`) creates an upload and answers its URL in
//! `Location`; `PATCH` (with `Upload-Offset` and `Content-Type:
//! application/offset+octet-stream`) appends bytes; `HEAD` answers how many arrived;
//! `DELETE` abandons the upload. The `PATCH` that brings the last byte stores the file
//! (fsynced) and records it as an ordinary upload (`Realm::decide_create_attachment`,
//! as `POST /user_uploads` does), answering Zulip's `{"url", "filename"}`: durable
//! before it is answered, like every upload.
//!
//! An upload in progress is the server's staging, not the realm's state: its bytes sit
//! in a file being received (`FileStore::receive`) and its bookkeeping in memory. A
//! restart discards it (its `HEAD` and `PATCH` then answer 404 and the client starts a
//! new upload), and so does an hour without a byte (the store sweeps files being
//! received after an hour). One user has at most `MAX_IN_PROGRESS` uploads in progress
//! (each holds an open file): more are refused until one finishes or is deleted.
//!
//! The protocol's errors are tusd's (`ERR_MISMATCHED_OFFSET: mismatched offset`, plain
//! text, its status codes); the refusals Zulip's hook makes are Zulip's (JSON
//! `{"message": ...}`: an upload without valid credentials, one larger than the limit,
//! one of deferred length).

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::http::header::{HeaderValue, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use base64::Engine;
use futures_util::StreamExt;
use serde_json::json;

use super::attachments::{bodyless_request, Uploads};
use super::ApiRequest;
use crate::error::ApiError;
use crate::realm::attachments::{ReceivingFile, StoredUpload};
use crate::realm::{Realm, UserId};

/// The protocol version hearth speaks (`Tus-Resumable`, `Tus-Version`).
const TUS_VERSION: &str = "1.0.0";
/// The extensions served (`Tus-Extension`).
const TUS_EXTENSIONS: &str = "creation,termination";
/// The only body `PATCH` takes.
const OFFSET_STREAM: &str = "application/offset+octet-stream";
/// An upload without a byte for this long is discarded (the file store sweeps files
/// being received after an hour).
const IDLE_LIMIT: Duration = Duration::from_secs(3600);
/// Bytes written to the file at once.
const WRITE_BATCH: usize = 1024 * 1024;
/// Uploads one user may have in progress at once (each holds an open file).
const MAX_IN_PROGRESS: usize = 32;

/// The uploads in progress on this server, by id.
#[derive(Default)]
pub struct Partials {
    uploads: dashmap::DashMap<String, Arc<Partial>>,
}

/// One upload: whose, how long, what it is.
struct Partial {
    /// The realm's subdomain and the uploader: nobody else sees the upload.
    subdomain: String,
    owner: UserId,
    length: u64,
    /// The `Upload-Metadata` header as sent (answered by `HEAD`).
    metadata: String,
    filename: String,
    content_type: String,
    progress: tokio::sync::Mutex<Progress>,
}

struct Progress {
    offset: u64,
    last_write: Instant,
    /// The bytes received so far; `None` once the upload is stored.
    file: Option<Box<dyn ReceivingFile>>,
}

impl Partials {
    /// Forgets the uploads idle for longer than `IDLE_LIMIT` (their files are dropped,
    /// which discards them).
    fn expire(&self) {
        self.uploads.retain(|_, p| match p.progress.try_lock() {
            Ok(progress) => progress.last_write.elapsed() < IDLE_LIMIT,
            // Being written to right now.
            Err(_) => true,
        });
    }

    /// How many uploads `me` has in progress (not yet stored).
    fn in_progress(&self, subdomain: &str, me: UserId) -> usize {
        self.uploads
            .iter()
            .filter(|p| p.subdomain == subdomain && p.owner == me)
            .filter(|p| p.progress.try_lock().map_or(true, |g| g.file.is_some()))
            .count()
    }

    /// The caller's upload `id` (anyone else's is not found).
    fn find(&self, id: &str, subdomain: &str, me: UserId) -> Result<Arc<Partial>, Refusal> {
        self.uploads
            .get(id)
            .map(|p| p.value().clone())
            .filter(|p| p.subdomain == subdomain && p.owner == me)
            .ok_or_else(|| {
                tus_error(
                    StatusCode::NOT_FOUND,
                    "ERR_UPLOAD_NOT_FOUND",
                    "upload not found",
                )
            })
    }
}

// ---- answers -------------------------------------------------------------------

/// An answer with the protocol's headers.
fn tus_response(status: StatusCode) -> actix_web::HttpResponseBuilder {
    let mut b = HttpResponse::build(status);
    b.insert_header(("Tus-Resumable", TUS_VERSION))
        .insert_header(("X-Content-Type-Options", "nosniff"));
    b
}

/// A refused request's answer (boxed: an answer is large, and travels in `Err`s).
type Refusal = Box<HttpResponse>;

/// One of tusd's protocol errors: `CODE: message`, as plain text.
fn tus_error(status: StatusCode, code: &str, message: &str) -> Refusal {
    Box::new(
        tus_response(status)
            .content_type("text/plain; charset=utf-8")
            .body(format!("{code}: {message}\n")),
    )
}

/// A refusal as Zulip's hook makes it: JSON `{"message": ...}`.
fn hook_refusal(status: u16, message: &str) -> Refusal {
    Box::new(
        tus_response(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST))
            .content_type("application/json")
            .body(json!({ "message": message }).to_string()),
    )
}

fn internal() -> Refusal {
    tus_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "ERR_INTERNAL_SERVER_ERROR",
        "internal server error",
    )
}

fn header<'r>(req: &'r HttpRequest, name: &str) -> Option<&'r str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// Every request but `OPTIONS`, `GET` and `HEAD` names the protocol version.
fn check_version(req: &HttpRequest) -> Result<(), Refusal> {
    if header(req, "Tus-Resumable") == Some(TUS_VERSION) {
        Ok(())
    } else {
        Err(tus_error(
            StatusCode::PRECONDITION_FAILED,
            "ERR_UNSUPPORTED_VERSION",
            "missing, invalid or unsupported Tus-Resumable header",
        ))
    }
}

/// The caller, from Basic credentials like the rest of `/api/v1`; Zulip's hook
/// refuses an upload it cannot authenticate with 401.
fn authenticate(req: &HttpRequest) -> Result<(ApiRequest, UserId, String), Refusal> {
    let api = bodyless_request(req)
        .map_err(|e| Box::new(actix_web::ResponseError::error_response(&e)))?;
    // Credentials that name nobody are Zulip's hook's refusal; a caller who may not
    // upload at all (an incoming webhook bot) gets the API's own answer.
    let me = api.caller().map_err(|e| {
        if e.status == 401 {
            hook_refusal(401, "Unauthenticated upload")
        } else {
            Box::new(actix_web::ResponseError::error_response(&e))
        }
    })?;
    let subdomain = api.hub.current().settings.subdomain.clone();
    Ok((api, me, subdomain))
}

fn uploads(api: &ApiRequest) -> Arc<Uploads> {
    api.state.uploads.clone()
}

/// Answers `Ok` and `Err` alike: the handlers build both as responses.
fn either(r: Result<HttpResponse, Refusal>) -> HttpResponse {
    r.unwrap_or_else(|e| *e)
}

// ---- the metadata ----------------------------------------------------------------

/// `Upload-Metadata`: comma-separated `key base64(value)` pairs (a key alone has an
/// empty value); pairs that do not decode are left out, as tusd leaves them.
fn parse_metadata(raw: &str) -> Vec<(String, String)> {
    raw.split(',')
        .filter_map(|pair| {
            let mut parts = pair.trim().splitn(2, ' ');
            let key = parts.next().filter(|k| !k.is_empty())?;
            let value = match parts.next() {
                None => String::new(),
                Some(encoded) => {
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(encoded.trim())
                        .ok()?;
                    String::from_utf8(bytes).ok()?
                }
            };
            Some((key.to_owned(), value))
        })
        .collect()
}

/// The file's name and type as Zulip's hook settles them: a name clients can save
/// (`uploaded-file` for none), the `filetype` sent, else guessed from the name.
fn name_and_type(metadata: &[(String, String)]) -> (String, String) {
    let get = |k: &str| {
        metadata
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let mut filename = get("filename");
    if matches!(filename.as_str(), "" | "." | "..") {
        filename = "uploaded-file".to_owned();
    }
    let mut content_type = get("filetype");
    if content_type.is_empty() {
        content_type = mime_guess::from_path(&filename)
            .first_raw()
            .unwrap_or("application/octet-stream")
            .to_owned();
    }
    (filename, content_type)
}

// ---- the handlers ------------------------------------------------------------------

/// # `OPTIONS /api/v1/tus`
pub async fn capabilities(req: HttpRequest) -> HttpResponse {
    let max = req
        .app_data::<web::Data<super::AppState>>()
        .map(|s| s.uploads.max_mib.saturating_mul(1024 * 1024));
    let mut b = tus_response(StatusCode::OK);
    b.insert_header(("Tus-Version", TUS_VERSION))
        .insert_header(("Tus-Extension", TUS_EXTENSIONS));
    if let Some(max) = max {
        b.insert_header(("Tus-Max-Size", max.to_string()));
    }
    b.finish()
}

/// # `POST /api/v1/tus`
pub async fn create_upload(req: HttpRequest) -> HttpResponse {
    either(create(&req).await)
}

async fn create(req: &HttpRequest) -> Result<HttpResponse, Refusal> {
    check_version(req)?;
    let (api, me, subdomain) = authenticate(req)?;
    let uploads = uploads(&api);
    let length = header(req, "Upload-Length");
    let deferred = header(req, "Upload-Defer-Length");
    let length: u64 = match (length, deferred) {
        (Some(_), Some(_)) => {
            return Err(tus_error(
                StatusCode::BAD_REQUEST,
                "ERR_AMBIGUOUS_UPLOAD_LENGTH",
                "provided both Upload-Length and Upload-Defer-Length",
            ))
        }
        (None, Some("1")) => return Err(hook_refusal(411, "SizeIsDeferred is not supported")),
        (None, Some(_)) => {
            return Err(tus_error(
                StatusCode::BAD_REQUEST,
                "ERR_INVALID_UPLOAD_LENGTH_DEFER",
                "invalid Upload-Defer-Length header",
            ))
        }
        (Some(n), None) => n.parse().map_err(|_| invalid_length())?,
        (None, None) => return Err(invalid_length()),
    };
    if length > uploads.max_mib.saturating_mul(1024 * 1024) {
        return Err(hook_refusal(
            413,
            &format!(
                "Uploaded file is larger than the allowed limit of {} MiB",
                uploads.max_mib
            ),
        ));
    }
    api.state.tus.expire();
    if api.state.tus.in_progress(&subdomain, me) >= MAX_IN_PROGRESS {
        return Err(hook_refusal(
            429,
            &format!("You may have at most {MAX_IN_PROGRESS} uploads in progress"),
        ));
    }
    let metadata_raw = header(req, "Upload-Metadata")
        .unwrap_or_default()
        .to_owned();
    let (filename, content_type) = name_and_type(&parse_metadata(&metadata_raw));
    let store = uploads.store.clone();
    let receiving = subdomain.clone();
    let file = web::block(move || store.receive(&receiving))
        .await
        .map_err(|_| internal())?
        .map_err(|e| {
            tracing::error!("cannot start a resumable upload: {e}");
            internal()
        })?;
    let id = hex::encode(rand::random::<[u8; 16]>());
    let partial = Arc::new(Partial {
        subdomain,
        owner: me,
        length,
        metadata: metadata_raw,
        filename,
        content_type,
        progress: tokio::sync::Mutex::new(Progress {
            offset: 0,
            last_write: Instant::now(),
            file: Some(file),
        }),
    });
    api.state.tus.uploads.insert(id.clone(), partial.clone());
    let location = format!(
        "{}/api/v1/tus/{id}",
        api.hub.current().url(&api.server_url).trim_end_matches('/')
    );
    if length == 0 {
        // Nothing to send: tusd finishes an empty upload when it is created.
        let mut progress = partial.progress.lock().await;
        let mut answer = finish(&api, &partial, &mut progress).await?;
        if let Ok(value) = HeaderValue::from_str(&location) {
            answer.headers_mut().insert(LOCATION, value);
        }
        return Ok(answer);
    }
    Ok(tus_response(StatusCode::CREATED)
        .insert_header((LOCATION, location))
        .finish())
}

fn invalid_length() -> Refusal {
    tus_error(
        StatusCode::BAD_REQUEST,
        "ERR_INVALID_UPLOAD_LENGTH",
        "missing or invalid Upload-Length header",
    )
}

/// # `HEAD /api/v1/tus/{upload_id}`
pub async fn upload_offset(req: HttpRequest, path: web::Path<String>) -> HttpResponse {
    either(head(&req, &path).await)
}

async fn head(req: &HttpRequest, id: &str) -> Result<HttpResponse, Refusal> {
    let (api, me, subdomain) = authenticate(req)?;
    let partial = api.state.tus.find(id, &subdomain, me)?;
    let offset = match partial.progress.try_lock() {
        Ok(progress) => progress.offset,
        Err(_) => return Err(locked()),
    };
    let mut b = tus_response(StatusCode::OK);
    b.insert_header(("Upload-Offset", offset.to_string()))
        .insert_header(("Upload-Length", partial.length.to_string()))
        .insert_header((CACHE_CONTROL, "no-store"));
    if !partial.metadata.is_empty() {
        b.insert_header(("Upload-Metadata", partial.metadata.clone()));
    }
    Ok(b.finish())
}

fn locked() -> Refusal {
    tus_error(
        StatusCode::LOCKED,
        "ERR_UPLOAD_LOCKED",
        "file currently locked",
    )
}

/// # `PATCH /api/v1/tus/{upload_id}`
pub async fn append_to_upload(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
) -> HttpResponse {
    either(patch(&req, &path, payload).await)
}

async fn patch(
    req: &HttpRequest,
    id: &str,
    mut payload: web::Payload,
) -> Result<HttpResponse, Refusal> {
    check_version(req)?;
    let (api, me, subdomain) = authenticate(req)?;
    if header(req, CONTENT_TYPE.as_str()) != Some(OFFSET_STREAM) {
        return Err(tus_error(
            StatusCode::BAD_REQUEST,
            "ERR_INVALID_CONTENT_TYPE",
            "missing or invalid Content-Type header",
        ));
    }
    let offset: u64 = header(req, "Upload-Offset")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| {
            tus_error(
                StatusCode::BAD_REQUEST,
                "ERR_INVALID_OFFSET",
                "missing or invalid Upload-Offset header",
            )
        })?;
    let partial = api.state.tus.find(id, &subdomain, me)?;
    let mut progress = partial.progress.try_lock().map_err(|_| locked())?;
    if offset != progress.offset {
        return Err(tus_error(
            StatusCode::CONFLICT,
            "ERR_MISMATCHED_OFFSET",
            "mismatched offset",
        ));
    }
    if progress.offset == partial.length {
        // Already complete: nothing to write.
        return Ok(offset_answer(StatusCode::NO_CONTENT, offset));
    }
    let room = partial.length - progress.offset;
    let declared = header(req, CONTENT_LENGTH.as_str()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > room) {
        return Err(size_exceeded());
    }
    let mut file = progress.file.take().ok_or_else(internal)?;
    let mut buffer: Vec<u8> = Vec::new();
    let mut received: u64 = 0;
    let mut outcome: Result<(), Refusal> = Ok(());
    while let Some(chunk) = payload.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(_) => {
                // What arrived before the connection failed stays written.
                outcome = Err(tus_error(
                    StatusCode::BAD_REQUEST,
                    "ERR_UPLOAD_INTERRUPTED",
                    "the request body could not be read",
                ));
                break;
            }
        };
        if received + chunk.len() as u64 > room {
            outcome = Err(size_exceeded());
            break;
        }
        received += chunk.len() as u64;
        buffer.extend_from_slice(&chunk);
        if buffer.len() >= WRITE_BATCH {
            let data = std::mem::take(&mut buffer);
            file = write(file, data).await?;
        }
    }
    // What arrived within the upload's length is kept, even when the request failed.
    let file = write(file, buffer).await?;
    progress.offset = file.size();
    progress.last_write = Instant::now();
    progress.file = Some(file);
    outcome?;
    if progress.offset < partial.length {
        return Ok(offset_answer(StatusCode::NO_CONTENT, progress.offset));
    }
    finish(&api, &partial, &mut progress).await
}

fn size_exceeded() -> Refusal {
    tus_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        "ERR_UPLOAD_SIZE_EXCEEDED",
        "upload's size exceeded",
    )
}

fn offset_answer(status: StatusCode, offset: u64) -> HttpResponse {
    tus_response(status)
        .insert_header(("Upload-Offset", offset.to_string()))
        .finish()
}

/// Appends `data` on the blocking pool.
async fn write(
    mut file: Box<dyn ReceivingFile>,
    data: Vec<u8>,
) -> Result<Box<dyn ReceivingFile>, Refusal> {
    if data.is_empty() {
        return Ok(file);
    }
    web::block(move || file.write(&data).map(|()| file))
        .await
        .map_err(|_| internal())?
        .map_err(|e| {
            tracing::error!("cannot write a resumable upload: {e}");
            internal()
        })
}

/// Stores the complete file and records it as an upload of the caller; answers what
/// Zulip's hook answers: `{"url", "filename"}`.
async fn finish(
    api: &ApiRequest,
    partial: &Partial,
    progress: &mut Progress,
) -> Result<HttpResponse, Refusal> {
    let file = progress.file.take().ok_or_else(internal)?;
    let held = web::block(move || file.store())
        .await
        .map_err(|_| internal())?
        .map_err(|e| {
            tracing::error!("cannot store a resumable upload: {e}");
            internal()
        })?;
    let upload = StoredUpload {
        name: partial.filename.clone(),
        size: held.size,
        sha256: held.sha256.clone(),
        content_type: partial.content_type.clone(),
    };
    let written = api
        .write(|_, _, _| Ok(upload), Realm::decide_create_attachment)
        .await;
    drop(held);
    let path_id =
        written.map_err(|e: ApiError| Box::new(actix_web::ResponseError::error_response(&e)))?;
    progress.offset = partial.length;
    let body = json!({
        "url": format!("/user_uploads/{path_id}"),
        "filename": partial.filename,
    });
    Ok(tus_response(StatusCode::OK)
        .insert_header(("Upload-Offset", partial.length.to_string()))
        .content_type("application/json")
        .body(body.to_string()))
}

/// # `DELETE /api/v1/tus/{upload_id}`
pub async fn terminate_upload(req: HttpRequest, path: web::Path<String>) -> HttpResponse {
    either(terminate(&req, &path).await)
}

async fn terminate(req: &HttpRequest, id: &str) -> Result<HttpResponse, Refusal> {
    check_version(req)?;
    let (api, me, subdomain) = authenticate(req)?;
    let partial = api.state.tus.find(id, &subdomain, me)?;
    if partial.progress.try_lock().is_err() {
        return Err(locked());
    }
    // Dropping the file being received discards its bytes; a completed upload is an
    // ordinary upload by now (`DELETE /attachments/{id}` removes it).
    api.state.tus.uploads.remove(id);
    Ok(tus_response(StatusCode::NO_CONTENT).finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_pairs_decode_as_tusd_reads_them() {
        let m =
            parse_metadata("filename d29ybGRfZG9taW5hdGlvbl9wbGFuLnBkZg==,is_confidential,bad !!!");
        assert_eq!(
            m,
            vec![
                (
                    "filename".to_owned(),
                    "world_domination_plan.pdf".to_owned()
                ),
                ("is_confidential".to_owned(), String::new()),
            ]
        );
        assert_eq!(
            name_and_type(&m),
            (
                "world_domination_plan.pdf".to_owned(),
                "application/pdf".to_owned()
            )
        );
        assert_eq!(
            name_and_type(&[("filename".to_owned(), "..".to_owned())]),
            (
                "uploaded-file".to_owned(),
                "application/octet-stream".to_owned()
            )
        );
    }
}
