//! Data exports of the organization: `POST /export/realm`, `GET /export/realm`,
//! `DELETE /export/realm/{export_id}`, `GET /export/realm/consents`, and the download
//! of a written export. Administrators only, checked before any parameter (Zulip's
//! `require_realm_admin`); the rules are in `realm/realm_export.rs`.
//!
//! An export is a realm archive (`crate::archive::export_running_filtered`) holding
//! the messages its type keeps (`Realm::export_filter`): the request records
//! it as pending on the actor and answers; a task then writes the archive on a blocking
//! thread (the actor only hands over its published point, O(1)) and records the
//! outcome with a second write. The file goes into the realm's upload folder,
//! `<data>/uploads/realm-<hex>/exports/<token>/<name>`, and downloads without
//! credentials from Zulip's URL of an export on local storage,
//! `<realm URL>/user_avatars/exports/<realm>/<token>/<name>` (the random token, 18
//! bytes as Zulip's `secrets.token_urlsafe(18)`, is the secret).

use std::path::Path;

use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use base64::Engine;
use serde_json::{Map, Value};

use super::params::path_int;
use super::{success, ApiRequest, ApiResponse, AppState, CallOpts, Outcome};
use crate::actor::RealmClient;
use crate::error::ApiError;
use crate::realm::realm_export::{
    too_large, DeleteExport, ExportId, ExportType, FinishExport, RequestExport,
};
use crate::realm::Realm;

fn one(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.to_owned(), value);
    m
}

/// Where a new export goes: a random token (Zulip's `secrets.token_urlsafe(18)`) and
/// a file name, `<token>/hearth-export-<8 random letters and digits>.archive`.
fn new_file() -> String {
    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 18]>());
    let suffix: String = {
        use rand::Rng;
        let mut rng = rand::thread_rng();
        (0..8)
            .map(|_| {
                let i = rng.gen_range(0..36u8);
                char::from(if i < 10 { b'0' + i } else { b'a' + i - 10 })
            })
            .collect()
    };
    format!("{token}/hearth-export-{suffix}.archive")
}

/// # `POST /export/realm`
pub async fn export_realm(req: ApiRequest) -> ApiResponse {
    let server_url = req.server_url();
    let now = req.now_secs();
    let parsed = req.parse(|realm, me, p| {
        realm.require_admin(me)?;
        let export_type = match p.opt_str("export_type") {
            Some(raw) => ExportType::parse(&raw)?,
            None => ExportType::Public,
        };
        // Zulip's order: the rate limit (the rule checks it again), then the size.
        realm.check_export_rate(now)?;
        if realm.export_too_large() {
            return Err(too_large(&realm.export_contact()));
        }
        let file = new_file();
        let url = format!(
            "{}/user_avatars/exports/{}/{file}",
            realm.url(&server_url).trim_end_matches('/'),
            realm.emoji_url_segment()
        );
        Ok(RequestExport {
            export_type,
            file,
            url,
        })
    })?;
    let (file, kind) = (parsed.req.file.clone(), parsed.req.export_type);
    let id = req.commit(parsed, Realm::decide_request_export).await?;
    let subdomain = req.hub.current().settings.subdomain.clone();
    actix_web::rt::spawn(write_export(req.writer(), subdomain, id, file, kind));
    req.reply(one("id", Value::from(id)))
}

/// Writes export `id`'s archive off the actor (the messages its type `kind` keeps,
/// `Realm::export_filter`), then records how it ended.
async fn write_export(
    client: RealmClient,
    subdomain: String,
    id: ExportId,
    file: String,
    kind: ExportType,
) {
    let store = client.store();
    let dir = client.exports_dir(&subdomain);
    let out = dir.join(&file);
    if std::env::var("HEARTH_REALM_EXPORT_FAULT").as_deref() == Ok("abort") {
        // Tests: the server ends as `kill -9` would, with the export recorded as pending.
        tracing::error!("HEARTH_REALM_EXPORT_FAULT: ending the process");
        std::process::abort();
    }
    let made = match out.parent().map(Path::to_path_buf) {
        Some(folder) => web::block(move || std::fs::create_dir_all(folder))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string())),
        None => Err("no folder".to_owned()),
    };
    let written = match made {
        Ok(()) => crate::archive::export_running_filtered(
            store.clone(),
            client.addr(),
            &subdomain,
            &out,
            Some(kind),
        )
        .await
        .map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    let size = match written {
        Ok(manifest) => {
            let synced = {
                let (out, dir) = (out.clone(), dir.clone());
                web::block(move || -> std::io::Result<u64> {
                    // The token's folder in `exports/`, `exports/` in the realm's folder
                    // and that in `uploads/` are durable with the file.
                    for d in dir.ancestors().take(3) {
                        std::fs::File::open(d)?.sync_all()?;
                    }
                    Ok(std::fs::metadata(&out)?.len())
                })
                .await
            };
            match synced {
                Ok(Ok(size)) => {
                    tracing::info!(
                        "realm '{subdomain}': data export {id} written at record {} ({size} bytes)",
                        manifest.seq
                    );
                    Some(size)
                }
                Ok(Err(e)) => {
                    tracing::error!("realm '{subdomain}': data export {id} failed: {e}");
                    None
                }
                Err(e) => {
                    tracing::error!("realm '{subdomain}': data export {id} failed: {e}");
                    None
                }
            }
        }
        Err(e) => {
            tracing::error!("realm '{subdomain}': data export {id} failed: {e}");
            None
        }
    };
    if size.is_none() {
        remove_export_file(&dir, &file).await;
    }
    if let Err(e) = client
        .commit_system(FinishExport { id, size }, Realm::decide_finish_export)
        .await
    {
        tracing::error!("realm '{subdomain}': data export {id}: its end not recorded: {e}");
    }
}

/// Removes an export's file and its token's folder (what is left of it). Logged, never
/// an error: nothing names the file any more.
async fn remove_export_file(dir: &Path, file: &str) {
    let path = dir.join(file);
    let removed = web::block(move || {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let mut partial = path.clone().into_os_string();
        partial.push(".partial");
        let _ = std::fs::remove_file(partial);
        if let Some(token) = path.parent() {
            let _ = std::fs::remove_dir(token);
        }
        Ok(())
    })
    .await;
    match removed {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!("cannot remove an export's file {file}: {e}"),
        Err(e) => tracing::warn!("cannot remove an export's file {file}: {e}"),
    }
}

/// At start: the exports of `client`'s realm up to `up_to` that were being written
/// when the server stopped are marked failed, and their leftovers removed.
pub async fn fail_interrupted(client: RealmClient, subdomain: String, up_to: ExportId) {
    match client
        .commit_system(up_to, Realm::decide_fail_interrupted_exports)
        .await
    {
        Ok(files) => {
            let dir = client.exports_dir(&subdomain);
            for file in files {
                tracing::warn!(
                    "realm '{subdomain}': a data export was cut off by the last stop; marked failed"
                );
                remove_export_file(&dir, &file).await;
            }
        }
        Err(e) => tracing::error!("realm '{subdomain}': cannot mark cut-off exports: {e}"),
    }
}

/// # `GET /export/realm`
pub async fn get_realm_exports(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        c.realm.require_admin(c.me()?)?;
        Ok(Outcome::read(one(
            "exports",
            Value::Array(c.realm.view_exports()),
        )))
    })
    .await
    .map(success)
}

/// # `DELETE /export/realm/{export_id}`
pub async fn delete_realm_export(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let raw = path.into_inner();
    let file = req
        .write(
            |realm, me, _| {
                realm.require_admin(me)?;
                Ok(DeleteExport {
                    id: path_int("export_id", &raw)?,
                })
            },
            Realm::decide_delete_export,
        )
        .await?;
    let subdomain = req.hub.current().settings.subdomain.clone();
    let dir = req.writer().exports_dir(&subdomain);
    remove_export_file(&dir, &file).await;
    req.reply(Map::new())
}

/// # `GET /export/realm/consents`
pub async fn get_export_consents(req: ApiRequest) -> ApiResponse {
    req.read_large(CallOpts::USER, |c| {
        c.realm.require_admin(c.me()?)?;
        Ok(Outcome::read(one(
            "export_consents",
            Value::Array(c.realm.view_export_consents()),
        )))
    })
    .await
}

/// # `GET /user_avatars/exports/{realm}/{token}/{file_name}`: a written export, without
/// credentials (the token is the secret), on its realm's host only.
pub async fn download(req: HttpRequest, path: web::Path<(String, String, String)>) -> HttpResponse {
    let (segment, token, name) = path.into_inner();
    let not_found = || super::error::not_found_error().error_response();
    let Some(state) = req.app_data::<web::Data<AppState>>() else {
        return ApiError::internal().error_response();
    };
    let Some(handle) = state.registry.for_host(&super::origin::host(&req)) else {
        return not_found();
    };
    let realm = handle.hub.current();
    let file = format!("{token}/{name}");
    if segment != realm.emoji_url_segment() || realm.export_by_file(&file).is_none() {
        return not_found();
    }
    let path = handle
        .client
        .exports_dir(&realm.settings.subdomain)
        .join(&file);
    let opened = web::block(move || {
        let f = std::fs::File::open(&path)?;
        let len = f.metadata()?.len();
        Ok::<_, std::io::Error>((f, len))
    })
    .await;
    let (file, len) = match opened {
        Ok(Ok(x)) => x,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => return not_found(),
        Ok(Err(e)) => {
            tracing::error!("cannot read a data export: {e}");
            return ApiError::internal().error_response();
        }
        Err(_) => return ApiError::internal().error_response(),
    };
    let pieces = super::file_pieces(file, ());
    super::user_content(&mut HttpResponse::Ok())
        .content_type("application/octet-stream")
        .insert_header((
            "Content-Disposition",
            format!("attachment; filename=\"{name}\""),
        ))
        .no_chunking(len)
        .streaming(pieces)
}
