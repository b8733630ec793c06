//! Custom emoji: list, upload, deactivate, and their images.

use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use serde_json::{Map, Value};

use super::{success, ApiRequest, ApiResponse, AppState, CallOpts, Outcome};
use crate::error::ApiError;
use crate::realm::emoji::{
    check_emoji_image, image_content_type, served_content_type, AddRealmEmoji, DeactivateRealmEmoji,
};
use crate::realm::Realm;

/// # `GET /realm/emoji`
pub async fn get_realm_emoji(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        c.me()?;
        let mut body = Map::new();
        body.insert("emoji".into(), Value::Object(c.realm.view_realm_emoji()));
        Ok(Outcome::read(body))
    })
    .await
    .map(success)
}

/// # `POST /realm/emoji/{emoji_name}`
///
/// Zulip's checks in its order: who may add, the name, the one file, its size and
/// image type. The image is stored in the realm's folder of uploaded files
/// (content-addressed, fsynced, as attachments are) before the emoji is recorded, so a
/// recorded emoji always has its image; the upload holds the file until then.
pub async fn upload_emoji(mut req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let raw_name = path.into_inner();
    let files = std::mem::take(&mut req.files);
    req.check(|realm, me| realm.check_new_realm_emoji(me, &raw_name, files.len()))?;
    let file = files.into_iter().next().ok_or_else(ApiError::internal)?;
    let content_type = image_content_type(file.content_type.as_deref(), &file.file_name);
    let image = check_emoji_image(&file.bytes, &content_type)?;
    let store = req.state.uploads.store.clone();
    let subdomain = req.hub.current().settings.subdomain.clone();
    let held = web::block(move || store.put(&subdomain, &file.bytes))
        .await
        .map_err(|_| ApiError::internal())?
        .map_err(|e| {
            tracing::error!("cannot store an emoji image: {e}");
            ApiError::storage_failed()
        })?;
    let q = AddRealmEmoji {
        raw_name,
        files: 1,
        file_name: format!("{}.{}", held.sha256, image.extension),
    };
    let written = req
        .write(|_, _, _| Ok(q), Realm::decide_add_realm_emoji)
        .await;
    // Recorded (and visible) or refused: either way the upload no longer holds it.
    drop(held);
    written?;
    req.reply(Map::new())
}

/// # `DELETE /realm/emoji/{emoji_name}`
///
/// Deactivates the emoji: it stays listed (`deactivated: true`) and its image stays.
pub async fn deactivate_emoji(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let name = path.into_inner();
    req.write(
        |_, _, _| Ok(DeactivateRealmEmoji { name }),
        Realm::decide_deactivate_realm_emoji,
    )
    .await?;
    req.reply(Map::new())
}

/// # `GET /user_avatars/{realm}/emoji/images/{file_name}`
///
/// A custom emoji's image (its `source_url`), without authentication as Zulip serves
/// uploaded avatars and emoji.
pub async fn emoji_image(req: HttpRequest, path: web::Path<(String, String)>) -> HttpResponse {
    let (segment, file_name) = path.into_inner();
    let not_found = || super::error::not_found_error().error_response();
    let Some(state) = req.app_data::<web::Data<AppState>>() else {
        return ApiError::internal().error_response();
    };
    let Some(handle) = state.registry.for_host(&super::origin::host(&req)) else {
        return not_found();
    };
    let realm = handle.hub.current();
    if segment != realm.emoji_url_segment() {
        return not_found();
    }
    let Some(emoji) = realm.realm_emoji_by_file(&file_name) else {
        return not_found();
    };
    let sha = emoji.sha256().to_owned();
    let subdomain = realm.settings.subdomain.clone();
    let store = state.uploads.store.clone();
    match web::block(move || store.read(&subdomain, &sha)).await {
        Ok(Ok(Some(bytes))) => crate::api::user_content(&mut HttpResponse::Ok())
            .content_type(served_content_type(&file_name))
            .insert_header(("Cache-Control", "public, max-age=31536000, immutable"))
            .body(bytes),
        Ok(Ok(None)) => not_found(),
        Ok(Err(e)) => {
            tracing::error!("cannot read an emoji image: {e}");
            ApiError::internal().error_response()
        }
        Err(_) => ApiError::internal().error_response(),
    }
}
