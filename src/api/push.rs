//! Mobile push: the caller's FCM and APNs tokens (seed 4.17, 4.18), E2EE push devices
//! registered with the push relay, and E2EE test notifications (seed 4.22). Bots are
//! refused before any parameter is read (`human_users_only`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::{success, with_ignored, ApiRequest, ApiResponse, Parsed};
use crate::actor::RealmClient;
use crate::error::{ApiError, ErrorCode};
use crate::push_relay::{admin_action_required, seal, PushRelay};
use crate::realm::push::{
    check_app_id, parse_push_key, parse_token_kind, AddPushToken, DeviceOutcome, PushTokenKind,
    RegisterPushDevice, RemovePushToken,
};
use crate::realm::{Realm, UserId};

async fn add(req: ApiRequest, kind: PushTokenKind) -> ApiResponse {
    req.write(
        |realm, me, p| {
            realm.require_human(me)?;
            let required: &[&str] = match kind {
                PushTokenKind::Apns => &["appid", "token"],
                PushTokenKind::Fcm => &["token"],
            };
            if let Some(missing) = required.iter().find(|n| p.peek(n).is_none()) {
                return Err(ApiError::missing(missing));
            }
            let ios_app_id = match kind {
                PushTokenKind::Apns => {
                    let appid = p.str("appid")?;
                    check_app_id(&appid)?;
                    Some(appid)
                }
                PushTokenKind::Fcm => None,
            };
            let token = p.str("token")?;
            Ok(AddPushToken {
                kind,
                token,
                ios_app_id,
            })
        },
        Realm::decide_add_push_token,
    )
    .await?;
    req.reply(Map::new())
}

async fn remove(req: ApiRequest, kind: PushTokenKind) -> ApiResponse {
    req.write(
        |realm, me, p| {
            realm.require_human(me)?;
            let token = p.str("token")?;
            Ok(RemovePushToken { kind, token })
        },
        Realm::decide_remove_push_token,
    )
    .await?;
    req.reply(Map::new())
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

// ---- E2EE push devices (seed 4.22) -------------------------------------------------

/// How long a registration the relay could not take is tried again (Zulip's
/// `PUSH_REGISTRATION_LIVENESS_TIMEOUT`); after that it fails with `REQUEST_EXPIRED`.
const REGISTRATION_LIVENESS: Duration = Duration::from_secs(24 * 60 * 60);
/// The longest wait between two tries.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

/// What a registration sends to the relay.
struct Registration {
    user_id: UserId,
    push_account_id: i64,
    realm_uuid: String,
    encrypted_push_registration: String,
    bouncer_public_key: String,
}

/// # `POST /mobile_push/register`
pub async fn register_push_device(req: ApiRequest) -> ApiResponse {
    let relay = req.state.push_relay.clone();
    // Zulip's order: bots, then the parameters, then the configuration, then the key.
    let parsed = req.parse(|realm, me, p| {
        realm.require_human(me)?;
        let required = [
            "token_kind",
            "push_account_id",
            "push_key",
            "bouncer_public_key",
            "encrypted_push_registration",
        ];
        if let Some(missing) = required.iter().find(|n| p.peek(n).is_none()) {
            return Err(ApiError::missing(missing));
        }
        let token_kind = parse_token_kind(&p.str("token_kind")?)?;
        let push_account_id = p.int("push_account_id")?;
        let push_key = p.str("push_key")?;
        let bouncer_public_key = p.str("bouncer_public_key")?;
        let encrypted_push_registration = p.str("encrypted_push_registration")?;
        if relay.is_none() {
            return Err(ApiError::new(
                400,
                ErrorCode::PushServiceNotConfigured,
                "Server is not configured to use push notification service.",
            ));
        }
        let push_key = parse_push_key(&push_key)?;
        let already_active = realm
            .push_devices_of(me.id)
            .iter()
            .any(|d| d.push_account_id == push_account_id && d.status() == "active");
        let registration = Registration {
            user_id: me.id,
            push_account_id,
            realm_uuid: realm.push_relay_uuid(),
            encrypted_push_registration,
            bouncer_public_key,
        };
        let q = RegisterPushDevice {
            push_account_id,
            token_kind,
            push_key,
        };
        Ok((q, registration, already_active))
    })?;
    let Parsed {
        me,
        req: (q, registration, already_active),
    } = parsed;
    req.commit(Parsed { me, req: q }, Realm::decide_register_push_device)
        .await?;
    if let (Some(relay), false) = (relay, already_active) {
        // The relay is asked off the request, as Zulip's queue worker does: the device
        // is pending until it answers.
        actix_web::rt::spawn(register_with_relay(req.writer(), relay, registration));
    }
    req.reply(Map::new())
}

/// Registers a device with the relay, trying again while the relay cannot be reached
/// or fails, then records the outcome.
async fn register_with_relay(writer: RealmClient, relay: Arc<PushRelay>, r: Registration) {
    let started = Instant::now();
    let mut delay = Duration::from_secs(1);
    let outcome = loop {
        let answer = relay
            .register_device(
                &r.realm_uuid,
                r.push_account_id,
                &r.encrypted_push_registration,
                &r.bouncer_public_key,
            )
            .await;
        match answer {
            Ok(device_id) => break Ok(device_id),
            Err(e) if e.is_transient() && started.elapsed() < REGISTRATION_LIVENESS => {
                tracing::warn!(
                    "push device registration of user {}: {e}; trying again in {delay:?}",
                    r.user_id
                );
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(MAX_RETRY_DELAY);
            }
            Err(e) if e.is_transient() => break Err("REQUEST_EXPIRED".to_owned()),
            Err(e) => {
                tracing::warn!("push device registration of user {}: {e}", r.user_id);
                break Err(e.error_code());
            }
        }
    };
    let outcome = DeviceOutcome {
        push_account_id: r.push_account_id,
        outcome,
    };
    let written = writer
        .commit(r.user_id, outcome, Realm::decide_push_device_outcome)
        .await;
    if let Err(e) = written {
        tracing::error!(
            "push device registration of user {}: outcome not recorded: {e}",
            r.user_id
        );
    }
}

/// # `POST /mobile_push/e2ee/test_notification`
pub async fn e2ee_test_notification(req: ApiRequest) -> ApiResponse {
    let (devices, realm_uuid, payload) = req.check(|realm, me| {
        realm.require_human(me)?;
        let push_account_id = req.params.opt_int("push_account_id")?;
        let devices = realm.active_push_devices(me, push_account_id)?;
        let payload = json!({
            "realm_name": realm.settings.name,
            "realm_url": realm.url(&req.server_url),
            "time": req.clock.now_secs(),
            "type": "test",
            "user_id": me.id,
        });
        Ok((devices, realm.push_relay_uuid(), payload))
    })?;
    let relay = req
        .state
        .push_relay
        .clone()
        .ok_or_else(admin_action_required)?;
    let plaintext = payload.to_string();
    let mut payloads = Map::new();
    for d in &devices {
        let (Some(device_id), Some(sealed)) =
            (d.device_id, seal(d.secretbox_key(), plaintext.as_bytes()))
        else {
            return Err(ApiError::internal());
        };
        payloads.insert(device_id.to_string(), Value::String(sealed));
    }
    relay.notify(&realm_uuid, payloads).await.map_err(|e| {
        tracing::warn!("E2EE test notification: {e}");
        e.to_api_error()
    })?;
    Ok(success(with_ignored(Map::new(), req.params.unused())))
}

/// # `POST /mobile_push/test_notification`
///
/// Zulip's `send_test_push_notification_api` (deprecated at feature level 420): a test
/// notification to the caller's device with this legacy `token`, or to every one of
/// their tokens, each sent through the push relay (Zulip's `push/test_notification`
/// bouncer endpoint). hearth sends notifications only through a relay: without one it
/// answers Zulip's "not configured" error.
pub async fn test_notification(req: ApiRequest) -> ApiResponse {
    let (tokens, realm_uuid, base_payload, me) = req.check(|realm, me| {
        realm.require_human(me)?;
        let token = req.params.opt_str("token");
        let all = realm.push_tokens_of(me.id);
        let tokens: Vec<_> = match token {
            Some(t) => {
                let found: Vec<_> = all.iter().filter(|d| d.token == t).cloned().collect();
                if found.is_empty() {
                    return Err(ApiError::new(
                        400,
                        ErrorCode::InvalidPushDeviceToken,
                        "Device not recognized",
                    ));
                }
                found
            }
            None => all.to_vec(),
        };
        // Zulip's `get_base_payload` (hearth has no realm id to add).
        let url = realm.url(&req.server_url);
        let host = url.split("://").nth(1).unwrap_or(url).trim_end_matches('/');
        let base_payload = json!({
            "server": host,
            "realm_uri": url,
            "realm_url": url,
            "realm_name": realm.settings.name,
            "user_id": me.id,
        });
        Ok((tokens, realm.push_relay_uuid(), base_payload, me.id))
    })?;
    let relay = req.state.push_relay.clone().ok_or_else(|| {
        ApiError::new(
            400,
            ErrorCode::PushServiceNotConfigured,
            "Server is not configured to use push notification service.",
        )
    })?;
    for t in &tokens {
        let kind = match t.kind {
            PushTokenKind::Apns => 1,
            PushTokenKind::Fcm => 2,
        };
        relay
            .test_notification(&realm_uuid, me, &t.token, kind, base_payload.clone())
            .await
            .map_err(|e| {
                tracing::warn!("test notification: {e}");
                match &e {
                    crate::push_relay::RelayError::Refused {
                        code: Some(code),
                        msg,
                    } if code == "INVALID_REMOTE_PUSH_DEVICE_TOKEN" => {
                        ApiError::new(400, ErrorCode::InvalidRemotePushDeviceToken, msg.clone())
                    }
                    _ => e.to_api_error(),
                }
            })?;
    }
    Ok(success(with_ignored(Map::new(), req.params.unused())))
}
