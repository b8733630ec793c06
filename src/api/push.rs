//! Mobile push tokens (seed 4.17, 4.18): register and remove the caller's FCM and APNs
//! tokens. Bots are refused before any parameter is read (`human_users_only`).

use serde_json::Map;

use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::error::ApiError;
use crate::realm::push::{check_app_id, PushTokenKind};

async fn add(req: ApiRequest, kind: PushTokenKind) -> ApiResponse {
    req.call(CallOpts::USER, move |c| {
        let me = c.me()?;
        c.realm.require_human(me)?;
        let p = &*c.params;
        let required: &[&str] = match kind {
            PushTokenKind::Apns => &["appid", "token"],
            PushTokenKind::Fcm => &["token"],
        };
        if let Some(missing) = required.iter().find(|n| p.peek(n).is_none()) {
            return Err(ApiError::missing(missing));
        }
        let appid = match kind {
            PushTokenKind::Apns => {
                let appid = p.str("appid")?;
                check_app_id(&appid)?;
                Some(appid)
            }
            PushTokenKind::Fcm => None,
        };
        let token = p.str("token")?;
        let changes = c
            .realm
            .decide_add_push_token(me, kind, &token, appid, c.cx)?;
        Ok(Outcome::write(changes, Map::new()))
    })
    .await
    .map(success)
}

async fn remove(req: ApiRequest, kind: PushTokenKind) -> ApiResponse {
    req.call(CallOpts::USER, move |c| {
        let me = c.me()?;
        c.realm.require_human(me)?;
        let token = c.params.str("token")?;
        let changes = c.realm.decide_remove_push_token(me, kind, &token)?;
        Ok(Outcome::write(changes, Map::new()))
    })
    .await
    .map(success)
}

/// # `POST /users/me/apns_device_token`
pub async fn add_apns_device_token(req: ApiRequest) -> ApiResponse {
    add(req, PushTokenKind::Apns).await
}

/// # `DELETE /users/me/apns_device_token`
pub async fn remove_apns_device_token(req: ApiRequest) -> ApiResponse {
    remove(req, PushTokenKind::Apns).await
}

/// # `POST /users/me/android_gcm_reg_id`
pub async fn add_android_reg_id(req: ApiRequest) -> ApiResponse {
    add(req, PushTokenKind::Fcm).await
}

/// # `DELETE /users/me/android_gcm_reg_id`
pub async fn remove_android_reg_id(req: ApiRequest) -> ApiResponse {
    remove(req, PushTokenKind::Fcm).await
}
