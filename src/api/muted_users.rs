//! Muted users: `POST` and `DELETE /users/me/muted_users/{muted_user_id}`. Zulip's
//! views take no other parameter and are not typed endpoints: their answers never
//! list `ignored_parameters_unsupported`.

use actix_web::web;
use serde_json::Map;

use super::{success, ApiRequest, ApiResponse};
use crate::error::ApiResult;
use crate::realm::muted_users::MuteUser;
use crate::realm::Realm;

/// Zulip's `<int:muted_user_id>` path converter: anything but digits is no route (404).
fn muted_user_id(raw: &str) -> ApiResult<i64> {
    if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) {
        Ok(raw.parse().unwrap_or(-1))
    } else {
        Err(super::error::not_found_error())
    }
}

async fn mute(req: ApiRequest, path: web::Path<String>, mute: bool) -> ApiResponse {
    let muted_user_id = muted_user_id(&path.into_inner())?;
    req.message_store().await?;
    req.write(
        move |_, _, _| {
            Ok(MuteUser {
                muted_user_id,
                mute,
            })
        },
        Realm::decide_mute_user,
    )
    .await?;
    Ok(success(Map::new()))
}

/// # `POST /users/me/muted_users/{muted_user_id}`
pub async fn mute_user(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    mute(req, path, true).await
}

/// # `DELETE /users/me/muted_users/{muted_user_id}`
pub async fn unmute_user(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    mute(req, path, false).await
}
