//! The admin listener: operator commands to a running node (`hearth serve
//! --admin-bind ADDR`, default `127.0.0.1:9993`, `off` for none), the pieces a realm's
//! move between nodes is made of.
//!
//! # Authentication
//!
//! At each start the node writes a fresh random token (64 hex digits) to
//! `DATA/admin-token`, mode 0600 (a temporary file, fsynced, renamed). Every request
//! carries it as `Authorization: Bearer <token>`; anything else answers 401. No
//! credential is ever on a command line: tools read the file (`--admin-token-file`).
//!
//! # Protocol
//!
//! JSON over HTTP. Answers are `{"result": "success", ...}` or `{"result": "error",
//! "msg": "..."}` with a 4xx/5xx status (400 bad request, 401 token, 404 no such realm,
//! 409 the realm is not in the state the operation needs). `realm` is a subdomain
//! (`""` for the root domain's realm). A realm here is **active** (served), **frozen**
//! (served, writes refused) or **staged** (in the data folder, not served: see
//! `storage::staging`). Positions are WAL record numbers.
//!
//! | request | body | answer |
//! |---|---|---|
//! | `GET /admin/status` | | `realms`: `[{"realm", "state": "active"\|"frozen"\|"staged", "position"}]` |
//! | `POST /admin/freeze` | `{"realm"}` | `position`: every write acknowledged, now or later, is at or below it, and durable |
//! | `POST /admin/unfreeze` | `{"realm"}` | `position` |
//! | `POST /admin/hold` | `{"realm", "after"}` | snapshots keep the WAL records after `after` (to ship them later) |
//! | `POST /admin/release` | `{"realm"}` | the hold is gone |
//! | `GET /admin/wal?realm=S&after=N` | | `application/octet-stream`: the records after N up to the last durable one (header `x-hearth-position`), framed as below |
//! | `POST /admin/wal?realm=S` | the same bytes | appends them to the STAGED realm S; the first must follow its position (a gap or an overlap is a 409); `position` |
//! | `POST /admin/export` | `{"realm"}` | `application/octet-stream`: the realm's archive (`crate::archive`) written from the actor's last record while writes go on (header `x-hearth-position`: its WAL position) |
//! | `GET /admin/files?realm=S` | | `files`: the names (SHA-256) of the realm's stored files (uploads, emoji) |
//! | `GET /admin/file?realm=S&sha256=H` | | `application/octet-stream`: that file |
//! | `POST /admin/file?realm=S` | a file | stores it for the STAGED realm S under its SHA-256; `sha256` (files uploaded on the source after its export travel this way, not in the WAL) |
//! | `POST /admin/import` | an archive | imports it STAGED (never served before `activate`); `realm`, `position` |
//! | `POST /admin/settle` | `{"realm"}` | the STAGED realm S recovered (snapshot + the records appended) and snapshotted again at its last record, so that its activation replays only what is appended after; `position` |
//! | `POST /admin/activate` | `{"realm"}` | loads the staged realm (snapshot + WAL replay), serves it, unstages it; `position` |
//! | `POST /admin/drop` | `{"realm"}` | takes the realm out (its Host then answers as an unknown realm; its queues' polls `BAD_EVENT_QUEUE_ID`), stops its actor, removes its data |
//!
//! A write refused by a freeze answers 503 with `Retry-After` (see `ApiError::frozen`);
//! the freeze is checked by the realm's actor, so writes already queued there are
//! refused too.
//!
//! WAL records travel as the bytes the WAL stores (versioned, checksummed frames of
//! `Vec<Change>`, see `storage::codec`), each preceded by its sequence number (u64,
//! big-endian) and its length (u32, big-endian): `encode_records` / `decode_records`.
//! `client::AdminClient` speaks this protocol.
//!
//! # A node killed in the middle of an operation (tests)
//!
//! `HEARTH_ADMIN_FAULT=after:<op>` ends the node's process, as `kill -9` would, once
//! the first admin request of that kind has done its work and before it answers (what it
//! made durable stays; its caller sees the connection close): `op` is one of `status`,
//! `freeze`, `unfreeze`, `hold`, `release`, `ship` (`GET /admin/wal`), `append` (`POST
//! /admin/wal`), `export`, `files`, `file-get`, `file-put`, `import`, `settle`, `activate`,
//! `drop`. The crash tests of a move (`tests/api/cluster_faults.rs`) kill the source or
//! the target at each of its steps this way.

pub mod client;

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::ArbiterHandle;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServerHandle, ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::middleware::{from_fn, Next};
use actix_web::{web, HttpResponse, ResponseError};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::actor::{Freeze, HoldWal, Position, Retire};
use crate::api::AppState;
use crate::registry::{self, RealmRuntime};
use crate::storage::uploads::UploadStore;
use crate::storage::{StorageError, Store};

/// The token file's name in the data folder.
pub const TOKEN_FILE: &str = "admin-token";

/// What the admin handlers reach.
pub struct AdminState {
    /// The HTTP layer's state: its registry is the realms served.
    pub app: web::Data<AppState>,
    pub store: Store,
    /// The realm arbiters; an activated realm goes to the next one.
    pub arbiters: Vec<ArbiterHandle>,
    next_arbiter: AtomicUsize,
    pub runtime: RealmRuntime,
    pub uploads: Arc<UploadStore>,
    /// The bearer token.
    token: String,
    /// One operation at a time (a move's steps are sequential anyway).
    busy: tokio::sync::Mutex<()>,
}

impl AdminState {
    pub fn new(
        app: web::Data<AppState>,
        store: Store,
        arbiters: Vec<ArbiterHandle>,
        runtime: RealmRuntime,
        uploads: Arc<UploadStore>,
        token: String,
    ) -> Self {
        AdminState {
            app,
            store,
            arbiters,
            next_arbiter: AtomicUsize::new(0),
            runtime,
            uploads,
            token,
            busy: tokio::sync::Mutex::new(()),
        }
    }
}

/// An admin error: a status and a message for the operator.
#[derive(Debug)]
pub struct AdminError {
    pub status: StatusCode,
    pub msg: String,
}

impl AdminError {
    fn new(status: StatusCode, msg: impl Into<String>) -> Self {
        AdminError {
            status,
            msg: msg.into(),
        }
    }
    fn bad(msg: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, msg)
    }
    fn conflict(msg: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, msg)
    }
    fn no_realm(realm: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            format!("no realm '{realm}' on this node"),
        )
    }
    fn internal(msg: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, msg.to_string())
    }
}

impl std::fmt::Display for AdminError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.msg)
    }
}

impl ResponseError for AdminError {
    fn status_code(&self) -> StatusCode {
        self.status
    }
    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status).json(json!({"result": "error", "msg": self.msg}))
    }
}

impl From<StorageError> for AdminError {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::Invalid(msg) => AdminError::conflict(msg),
            e => AdminError::internal(e),
        }
    }
}

type AdminResult = Result<HttpResponse, AdminError>;

fn ok(mut body: Value) -> HttpResponse {
    if let Value::Object(m) = &mut body {
        m.insert("result".into(), "success".into());
    }
    HttpResponse::Ok().json(body)
}

/// `{"realm": S}`.
#[derive(Deserialize)]
struct RealmArg {
    realm: String,
}

/// `{"realm": S, "after": N}`.
#[derive(Deserialize)]
struct HoldArg {
    realm: String,
    after: u64,
}

/// `?realm=S&after=N`.
#[derive(Deserialize)]
struct WalQuery {
    realm: String,
    after: Option<u64>,
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, AdminError> {
    serde_json::from_slice(body).map_err(|e| AdminError::bad(format!("bad JSON body: {e}")))
}

/// The admin operations `HEARTH_ADMIN_FAULT` names.
const FAULT_OPS: &[&str] = &[
    "status", "freeze", "unfreeze", "hold", "release", "ship", "append", "export", "files",
    "file-get", "file-put", "import", "settle", "activate", "drop",
];

/// Marks the admin operation `op` done: ends the process there (before the answer) when
/// `HEARTH_ADMIN_FAULT=after:<op>` names it.
fn done(op: &'static str) {
    static OP: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    let named = *OP.get_or_init(|| {
        let f = std::env::var("HEARTH_ADMIN_FAULT").ok()?;
        let op = f.strip_prefix("after:")?;
        FAULT_OPS.iter().copied().find(|o| *o == op)
    });
    if named == Some(op) {
        tracing::warn!("HEARTH_ADMIN_FAULT: the node ends its process after '{op}'");
        std::process::abort();
    }
}

/// Frames WAL records for shipping (see the module doc).
pub fn encode_records(records: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(records.iter().map(|(_, b)| b.len() + 12).sum());
    for (seq, bytes) in records {
        out.extend_from_slice(&seq.to_be_bytes());
        out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// Reads records framed by `encode_records`.
pub fn decode_records(mut body: &[u8]) -> Result<Vec<(u64, Vec<u8>)>, String> {
    let mut out = Vec::new();
    while !body.is_empty() {
        if body.len() < 12 {
            return Err(format!(
                "a record header is cut short ({} bytes)",
                body.len()
            ));
        }
        let (head, rest) = body.split_at(12);
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&head[..8]);
        let mut len = [0u8; 4];
        len.copy_from_slice(&head[8..]);
        let len = u32::from_be_bytes(len) as usize;
        if rest.len() < len {
            return Err(format!(
                "record {} is cut short ({} of {len} bytes)",
                u64::from_be_bytes(seq),
                rest.len()
            ));
        }
        let (bytes, rest) = rest.split_at(len);
        out.push((u64::from_be_bytes(seq), bytes.to_vec()));
        body = rest;
    }
    Ok(out)
}

/// Writes a fresh random token to `DATA/admin-token` (mode 0600, atomically) and
/// returns it.
pub fn write_token(data: &Path) -> std::io::Result<String> {
    use rand::RngCore;
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut raw = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut raw);
    let token = hex::encode(raw);
    let tmp = data.join(format!("{TOKEN_FILE}.tmp"));
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(token.as_bytes())?;
    f.write_all(b"\n")?;
    f.sync_all()?;
    std::fs::rename(&tmp, data.join(TOKEN_FILE))?;
    std::fs::File::open(data)?.sync_all()?;
    Ok(token)
}

/// Reads a token file (`--admin-token-file`).
pub fn read_token(path: &Path) -> std::io::Result<String> {
    Ok(std::fs::read_to_string(path)?.trim().to_owned())
}

/// The token file of a data folder.
pub fn token_path(data: &Path) -> PathBuf {
    data.join(TOKEN_FILE)
}

/// Middleware: the bearer token, compared in constant time.
async fn authorize(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    use subtle::ConstantTimeEq;
    let allowed = match req.app_data::<web::Data<AdminState>>() {
        Some(state) => req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| bool::from(t.trim().as_bytes().ct_eq(state.token.as_bytes()))),
        None => false,
    };
    if !allowed {
        let res = AdminError::new(
            StatusCode::UNAUTHORIZED,
            "missing or wrong admin token (Authorization: Bearer <DATA/admin-token>)",
        )
        .error_response();
        return Ok(req.into_response(res));
    }
    next.call(req)
        .await
        .map(ServiceResponse::map_into_boxed_body)
}

/// The admin routes.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/status", web::get().to(status))
        .route("/admin/freeze", web::post().to(freeze))
        .route("/admin/unfreeze", web::post().to(unfreeze))
        .route("/admin/hold", web::post().to(hold))
        .route("/admin/release", web::post().to(release))
        .route("/admin/wal", web::get().to(ship))
        .route("/admin/wal", web::post().to(append))
        .route("/admin/export", web::post().to(export))
        .route("/admin/files", web::get().to(files))
        .route("/admin/file", web::get().to(file_get))
        .route("/admin/file", web::post().to(file_put))
        .route("/admin/import", web::post().to(import))
        .route("/admin/settle", web::post().to(settle))
        .route("/admin/activate", web::post().to(activate))
        .route("/admin/drop", web::post().to(drop_realm));
}

/// Starts the admin listener on `listener`; returns its server handle.
pub fn start(
    listener: TcpListener,
    state: web::Data<AdminState>,
) -> std::io::Result<(SocketAddr, ServerHandle)> {
    let bound = listener.local_addr()?;
    let server = actix_web::HttpServer::new(move || {
        actix_web::App::new()
            .app_data(state.clone())
            // WAL tails of a short freeze are small (an archive comes as a stream).
            .app_data(web::PayloadConfig::new(256 * 1024 * 1024))
            .wrap(from_fn(authorize))
            .configure(routes)
    })
    .disable_signals()
    .workers(1)
    .listen(listener)?
    .run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    tracing::info!("admin on http://{bound}/admin");
    Ok((bound, handle))
}

fn actor_gone(e: actix::MailboxError) -> AdminError {
    AdminError::internal(format!("the realm's actor is gone: {e}"))
}

/// # `GET /admin/status`
async fn status(state: web::Data<AdminState>) -> AdminResult {
    let mut realms = Vec::new();
    let mut served = state.app.registry.subdomains();
    served.sort();
    for realm in served {
        let Some(handle) = state.app.registry.get(&realm) else {
            continue;
        };
        let (frozen, position) = handle
            .client
            .addr()
            .send(Position)
            .await
            .map_err(actor_gone)?;
        let st = if frozen { "frozen" } else { "active" };
        realms.push(json!({"realm": realm, "state": st, "position": position}));
    }
    let store = state.store.clone();
    let staged = web::block(move || -> Result<Vec<Value>, StorageError> {
        let mut out = Vec::new();
        let mut names = store.staged_realms();
        names.sort();
        for realm in names {
            let position = store.realm(&realm)?.last_seq();
            out.push(json!({"realm": realm, "state": "staged", "position": position}));
        }
        Ok(out)
    })
    .await
    .map_err(AdminError::internal)??;
    realms.extend(staged);
    done("status");
    Ok(ok(json!({ "realms": realms })))
}

/// Freezes (`on`) or unfreezes a served realm; answers its last WAL record, durable.
async fn set_frozen(state: &AdminState, realm: &str, on: bool) -> AdminResult {
    let handle = served(state, realm)?;
    let position = handle
        .client
        .addr()
        .send(Freeze(on))
        .await
        .map_err(actor_gone)?;
    // Everything appended up to the freeze is made durable before it is reported
    // done: whatever was acknowledged, in any durability mode, is then shippable. The
    // freeze itself is durable too (a restart freezes the realm again).
    let store = state.store.clone();
    let name = realm.to_owned();
    web::block(move || -> Result<(), StorageError> {
        store.mark_frozen(&name, on)?;
        Ok(store.durability.flush_now()?)
    })
    .await
    .map_err(AdminError::internal)?
    .map_err(|e| AdminError::internal(format!("cannot flush: {e}")))?;
    tracing::info!(
        "realm '{realm}': {} at record {position}",
        if on { "frozen" } else { "unfrozen" }
    );
    done(if on { "freeze" } else { "unfreeze" });
    Ok(ok(json!({"realm": realm, "position": position})))
}

/// # `POST /admin/freeze`
async fn freeze(state: web::Data<AdminState>, body: web::Bytes) -> AdminResult {
    let arg: RealmArg = parse(&body)?;
    let _busy = state.busy.lock().await;
    set_frozen(&state, &arg.realm, true).await
}

/// # `POST /admin/unfreeze`
async fn unfreeze(state: web::Data<AdminState>, body: web::Bytes) -> AdminResult {
    let arg: RealmArg = parse(&body)?;
    let _busy = state.busy.lock().await;
    set_frozen(&state, &arg.realm, false).await
}

/// # `POST /admin/hold`
async fn hold(state: web::Data<AdminState>, body: web::Bytes) -> AdminResult {
    let arg: HoldArg = parse(&body)?;
    let handle = served(&state, &arg.realm)?;
    handle
        .client
        .addr()
        .send(HoldWal(Some(arg.after)))
        .await
        .map_err(actor_gone)?;
    done("hold");
    Ok(ok(json!({"realm": arg.realm, "after": arg.after})))
}

/// # `POST /admin/release`
async fn release(state: web::Data<AdminState>, body: web::Bytes) -> AdminResult {
    let arg: RealmArg = parse(&body)?;
    let handle = served(&state, &arg.realm)?;
    handle
        .client
        .addr()
        .send(HoldWal(None))
        .await
        .map_err(actor_gone)?;
    done("release");
    Ok(ok(json!({"realm": arg.realm})))
}

/// # `GET /admin/wal?realm=S&after=N`
async fn ship(state: web::Data<AdminState>, q: web::Query<WalQuery>) -> AdminResult {
    let WalQuery { realm, after } = q.into_inner();
    let after = after.ok_or_else(|| AdminError::bad("missing 'after' (a WAL position)"))?;
    known(&state, &realm)?;
    let store = state.store.clone();
    let (records, upto) = web::block(move || store.wal_tail(&realm, after))
        .await
        .map_err(AdminError::internal)??;
    done("ship");
    Ok(HttpResponse::Ok()
        .content_type("application/octet-stream")
        .insert_header(("x-hearth-position", upto.to_string()))
        .insert_header(("x-hearth-records", records.len().to_string()))
        .body(encode_records(&records)))
}

/// # `POST /admin/wal?realm=S`
async fn append(
    state: web::Data<AdminState>,
    q: web::Query<WalQuery>,
    body: web::Bytes,
) -> AdminResult {
    let realm = q.into_inner().realm;
    let records = decode_records(&body).map_err(AdminError::bad)?;
    let _busy = state.busy.lock().await;
    staged_only(&state, &realm)?;
    let store = state.store.clone();
    let name = realm.clone();
    let position = web::block(move || store.realm(&name)?.append_shipped(&records))
        .await
        .map_err(AdminError::internal)??;
    done("append");
    Ok(ok(json!({"realm": realm, "position": position})))
}

/// The archives an export or an import keeps while it runs: a temporary folder in the
/// data folder (same file system as the data; removed when dropped).
fn scratch(state: &AdminState) -> Result<tempfile::TempDir, AdminError> {
    tempfile::Builder::new()
        .prefix("admin-archive-")
        .tempdir_in(state.store.durability.dir())
        .map_err(|e| AdminError::internal(format!("cannot make a temporary folder: {e}")))
}

/// Archive errors: refusals are the operator's (409), the rest the node's.
fn archive_error(e: crate::archive::ArchiveError) -> AdminError {
    use crate::archive::ArchiveError;
    match e {
        ArchiveError::Refused(msg) => AdminError::conflict(msg),
        ArchiveError::Format(e) => AdminError::bad(e.to_string()),
        e => AdminError::internal(e),
    }
}

/// # `POST /admin/export`
///
/// Writes the archive into the data folder's scratch space while the realm keeps
/// taking writes, then streams it back in pieces; the file goes with the answer.
async fn export(state: web::Data<AdminState>, body: web::Bytes) -> AdminResult {
    let arg: RealmArg = parse(&body)?;
    let handle = served(&state, &arg.realm)?;
    let dir = scratch(&state)?;
    let out = dir.path().join("realm.archive");
    let manifest =
        crate::archive::export_running(state.store.clone(), handle.client.addr(), &arg.realm, &out)
            .await
            .map_err(archive_error)?;
    let file = std::fs::File::open(&out).map_err(AdminError::internal)?;
    let len = file.metadata().map_err(AdminError::internal)?.len();
    tracing::info!(
        "realm '{}': exported at record {} ({} bytes)",
        arg.realm,
        manifest.seq,
        len
    );
    done("export");
    // The folder lives as long as the stream (the file is removed with it).
    let pieces = crate::api::file_pieces(file, dir);
    Ok(HttpResponse::Ok()
        .content_type("application/octet-stream")
        .insert_header(("x-hearth-position", manifest.seq.to_string()))
        .body(actix_web::body::SizedStream::new(len, pieces)))
}

/// # `POST /admin/import`
///
/// Takes an archive (streamed to the data folder's scratch space) and imports its realm
/// STAGED: marked before its first tree is written, so no restart serves it before
/// `activate`. Refuses a realm this node has (served, staged or in its folder).
async fn import(state: web::Data<AdminState>, payload: web::Payload) -> AdminResult {
    let dir = scratch(&state)?;
    let path = dir.path().join("realm.archive");
    receive(payload, &path).await?;
    let _busy = state.busy.lock().await;
    let store = state.store.clone();
    let served = state.app.registry.subdomains();
    let imported = web::block(
        move || -> Result<crate::archive::ImportedRealm, AdminError> {
            let checked = crate::storage::archive::verify(&path)
                .map_err(|e| AdminError::bad(e.to_string()))?;
            let subdomain = checked.0.subdomain.clone();
            if served.contains(&subdomain) || store.realm_subdomains().contains(&subdomain) {
                return Err(AdminError::conflict(format!(
                    "realm '{subdomain}' exists on this node (drop it first to import it again)"
                )));
            }
            store.stage(&subdomain)?;
            let fault = crate::archive::Fault::from_env();
            match crate::archive::import_verified(&store, &path, checked, fault) {
                Ok(imported) => Ok(imported),
                Err(e) => {
                    // Nothing of the realm is left (the import removes what it wrote).
                    if !store.realm_subdomains().contains(&subdomain) {
                        store.unstage(&subdomain)?;
                    }
                    Err(archive_error(e))
                }
            }
        },
    )
    .await
    .map_err(AdminError::internal)??;
    drop(dir);
    tracing::info!(
        "realm '{}': imported staged at record {}",
        imported.subdomain,
        imported.seq
    );
    done("import");
    // A data export's owners get their new keys here (the export held none).
    Ok(ok(json!({
        "realm": imported.subdomain,
        "position": imported.seq,
        "new_owner_keys": imported.new_owner_keys,
    })))
}

/// Writes an upload to `path` as its pieces come, never holding more than a few pieces
/// in memory, and makes it durable; the writes run on tokio's blocking threads, so the
/// admin listener's one worker goes on answering (`GET /admin/status`) meanwhile.
async fn receive(mut payload: web::Payload, path: &Path) -> Result<u64, AdminError> {
    use futures_util::StreamExt;
    use tokio::io::AsyncWriteExt;
    let file = tokio::fs::File::create(path)
        .await
        .map_err(AdminError::internal)?;
    // Pieces are gathered up to 1 MiB per write: one blocking hop per MiB, not per piece.
    let mut out = tokio::io::BufWriter::with_capacity(1 << 20, file);
    let mut total = 0u64;
    while let Some(piece) = payload.next().await {
        let piece = piece.map_err(|e| AdminError::bad(format!("reading the archive: {e}")))?;
        total += piece.len() as u64;
        out.write_all(&piece).await.map_err(AdminError::internal)?;
    }
    out.flush().await.map_err(AdminError::internal)?;
    let file = out.into_inner();
    file.sync_all().await.map_err(AdminError::internal)?;
    Ok(total)
}

/// `?realm=S&sha256=H`.
#[derive(Deserialize)]
struct FileQuery {
    realm: String,
    sha256: Option<String>,
}

/// The handle of a realm this node serves (not a staged one).
fn served(state: &AdminState, realm: &str) -> Result<crate::registry::RealmHandle, AdminError> {
    state
        .app
        .registry
        .get(realm)
        .ok_or_else(|| AdminError::no_realm(realm))
}

/// A realm this node has, served or staged.
fn known(state: &AdminState, realm: &str) -> Result<(), AdminError> {
    if state.app.registry.get(realm).is_none() && !state.store.is_staged(realm) {
        return Err(AdminError::no_realm(realm));
    }
    Ok(())
}

/// # `GET /admin/files?realm=S`
async fn files(state: web::Data<AdminState>, q: web::Query<FileQuery>) -> AdminResult {
    let realm = q.into_inner().realm;
    known(&state, &realm)?;
    let dir = state.uploads.realm_dir(&realm);
    let names = web::block(move || -> std::io::Result<Vec<String>> {
        let mut names = Vec::new();
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(names),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if crate::storage::uploads::is_hash(&name) {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    })
    .await
    .map_err(AdminError::internal)?
    .map_err(AdminError::internal)?;
    done("files");
    Ok(ok(json!({"realm": realm, "files": names})))
}

/// # `GET /admin/file?realm=S&sha256=H`
async fn file_get(state: web::Data<AdminState>, q: web::Query<FileQuery>) -> AdminResult {
    let FileQuery { realm, sha256 } = q.into_inner();
    known(&state, &realm)?;
    let sha256 = sha256.ok_or_else(|| AdminError::bad("missing 'sha256'"))?;
    let uploads = state.uploads.clone();
    let name = sha256.clone();
    let bytes = web::block(move || uploads.read(&realm, &name))
        .await
        .map_err(AdminError::internal)?
        .map_err(AdminError::internal)?
        .ok_or_else(|| AdminError::new(StatusCode::NOT_FOUND, format!("no file {sha256}")))?;
    done("file-get");
    Ok(HttpResponse::Ok()
        .content_type("application/octet-stream")
        .body(bytes))
}

/// # `POST /admin/file?realm=S`
async fn file_put(
    state: web::Data<AdminState>,
    q: web::Query<FileQuery>,
    body: web::Bytes,
) -> AdminResult {
    let FileQuery { realm, sha256 } = q.into_inner();
    staged_only(&state, &realm)?;
    let uploads = state.uploads.clone();
    let name = realm.clone();
    let stored = web::block(move || uploads.put(&name, &body).map(|held| held.sha256.clone()))
        .await
        .map_err(AdminError::internal)?
        .map_err(AdminError::internal)?;
    if let Some(expected) = sha256 {
        if expected != stored {
            return Err(AdminError::bad(format!(
                "the file's SHA-256 is {stored}, not {expected}"
            )));
        }
    }
    done("file-put");
    Ok(ok(json!({"realm": realm, "sha256": stored})))
}

/// A realm that is staged here and not served.
fn staged_only(state: &AdminState, realm: &str) -> Result<(), AdminError> {
    if state.app.registry.get(realm).is_some() {
        return Err(AdminError::conflict(format!(
            "realm '{realm}' is active on this node, not staged"
        )));
    }
    if !state.store.is_staged(realm) {
        return Err(AdminError::new(
            StatusCode::NOT_FOUND,
            format!("no staged realm '{realm}' on this node"),
        ));
    }
    Ok(())
}

/// # `POST /admin/settle`
///
/// Brings a staged realm's snapshot up to its last appended record: the recovery an
/// activation would run (the snapshot, then every shipped record replayed and its
/// message rows projected), then a snapshot of the result. A move settles the target's
/// copy after its catch-up rounds, before the freeze, so that the activation inside
/// the freeze replays only the records shipped in it, not all those written while the
/// archive was exported and imported.
async fn settle(state: web::Data<AdminState>, body: web::Bytes) -> AdminResult {
    let arg: RealmArg = parse(&body)?;
    let _busy = state.busy.lock().await;
    staged_only(&state, &arg.realm)?;
    let store = state.store.clone();
    let name = arg.realm.clone();
    let (position, replayed) = web::block(move || -> Result<(u64, u64), StorageError> {
        let (mut realm_store, recovered) = registry::recover(&store, &name)?;
        if recovered.replayed > 0 {
            realm_store.snapshot(&recovered.realm)?;
        }
        Ok((realm_store.last_seq(), recovered.replayed))
    })
    .await
    .map_err(AdminError::internal)??;
    tracing::info!(
        "realm '{}': settled at record {position} ({replayed} records replayed)",
        arg.realm
    );
    done("settle");
    Ok(ok(
        json!({"realm": arg.realm, "position": position, "replayed": replayed}),
    ))
}

/// # `POST /admin/activate`
async fn activate(state: web::Data<AdminState>, body: web::Bytes) -> AdminResult {
    let arg: RealmArg = parse(&body)?;
    let _busy = state.busy.lock().await;
    activate_realm(&state, &arg.realm).await
}

/// Loads a staged realm through the start's recovery, unstages it and serves it.
pub async fn activate_realm(state: &AdminState, realm: &str) -> AdminResult {
    staged_only(state, realm)?;
    let store = state.store.clone();
    let name = realm.to_owned();
    let (realm_store, recovered) = web::block(move || registry::recover(&store, &name))
        .await
        .map_err(AdminError::internal)??;
    let position = realm_store.last_seq();
    let i = state.next_arbiter.fetch_add(1, Ordering::SeqCst) % state.arbiters.len().max(1);
    let arbiter = state
        .arbiters
        .get(i)
        .ok_or_else(|| AdminError::internal("no realm arbiter"))?;
    let handle = registry::start(
        &state.store,
        realm,
        realm_store,
        recovered,
        arbiter,
        &state.runtime,
    )?;
    // Unstaged (durably) before it is served: a restart from here on loads it.
    let store = state.store.clone();
    let name = realm.to_owned();
    web::block(move || {
        store.unstage(&name)?;
        store.write_manifest()
    })
    .await
    .map_err(AdminError::internal)??;
    state.app.registry.insert(realm, handle);
    tracing::info!("realm '{realm}': activated at record {position}");
    done("activate");
    Ok(ok(json!({"realm": realm, "position": position})))
}

/// # `POST /admin/drop`
async fn drop_realm(state: web::Data<AdminState>, body: web::Bytes) -> AdminResult {
    let arg: RealmArg = parse(&body)?;
    let _busy = state.busy.lock().await;
    let realm = arg.realm;
    let mut position = None;
    if let Some(handle) = state.app.registry.remove(&realm) {
        handle.hub.expire_all_queues();
        let (last, snapshotting) = handle
            .client
            .addr()
            .send(Retire)
            .await
            .map_err(actor_gone)?;
        position = Some(last);
        // A snapshot under way would name the realm in the manifest again.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while snapshotting.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    } else if !state.store.is_staged(&realm) {
        return Err(AdminError::no_realm(&realm));
    }
    let store = state.store.clone();
    let dir = state.uploads.realm_dir(&realm);
    let name = realm.clone();
    web::block(move || store.drop_realm(&name, &dir))
        .await
        .map_err(AdminError::internal)??;
    tracing::info!("realm '{realm}': dropped from this node");
    done("drop");
    Ok(ok(json!({"realm": realm, "position": position})))
}
