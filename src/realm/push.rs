//! Mobile push tokens (seed 2.14, 4.17, 4.18): the FCM registration tokens and APNs
//! device tokens each user registered, as Zulip's `zerver/views/push_notifications.py`
//! and `zerver/lib/push_notifications.py` check them (durable per-user state, no
//! events); and E2EE push devices (seed 4.22): registered with the push relay, then
//! sent encrypted test notifications through it (`crate::push_relay`).

use serde::{Deserialize, Serialize};

use super::events::{Audience, Event};
use super::{Change, Cx, Decided, PersonalChange, Realm, User, UserId};
use crate::error::{ApiError, ApiResult, ErrorCode};

/// Zulip's longest token (`validate_token`).
pub const MAX_TOKEN_LENGTH: usize = 4096;

/// Which service a token belongs to (Zulip's `PushDeviceToken.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PushTokenKind {
    Apns,
    Fcm,
}

/// A registered token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PushToken {
    pub kind: PushTokenKind,
    pub token: String,
    /// The iOS app id (`appid`) of an APNs token.
    pub ios_app_id: Option<String>,
    /// UNIX seconds.
    pub date_created: i64,
}

/// Zulip's `validate_token`: not empty, at most 4096 characters, and for APNs what
/// Python's `bytes.fromhex` accepts (hex digit pairs, ASCII whitespace between them).
pub fn validate_token(token: &str, kind: PushTokenKind) -> ApiResult<()> {
    if token.is_empty() || token.chars().count() > MAX_TOKEN_LENGTH {
        return Err(ApiError::bad_request("Empty or invalid length token"));
    }
    if kind == PushTokenKind::Apns && !is_python_hex(token) {
        return Err(ApiError::bad_request("Invalid APNS token"));
    }
    Ok(())
}

/// Whether `bytes.fromhex(s)` succeeds: whitespace may only come before a pair.
fn is_python_hex(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    loop {
        while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
            i += 1;
        }
        if i == b.len() {
            return true;
        }
        if i + 1 >= b.len() || !b[i].is_ascii_hexdigit() || !b[i + 1].is_ascii_hexdigit() {
            return false;
        }
        i += 2;
    }
}

/// The `ApnsAppId` type of Zulip's `add_apns_device_token`: `^[.a-zA-Z0-9-]+$`.
pub fn check_app_id(appid: &str) -> ApiResult<()> {
    if !appid.is_empty()
        && appid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
    {
        Ok(())
    } else {
        Err(ApiError::bad_request("appid has invalid format"))
    }
}

/// `POST /users/me/apns_device_token` and `/android_gcm_reg_id`, as sent.
#[derive(Debug, Clone)]
pub struct AddPushToken {
    pub kind: PushTokenKind,
    pub token: String,
    /// The iOS app id (`appid`, checked) of an APNs token.
    pub ios_app_id: Option<String>,
}

/// `DELETE /users/me/apns_device_token` and `/android_gcm_reg_id`, as sent.
#[derive(Debug, Clone)]
pub struct RemovePushToken {
    pub kind: PushTokenKind,
    pub token: String,
}

/// The relay's answer to a device registration, recorded by the task that asked it
/// after the request was answered.
#[derive(Debug, Clone)]
pub struct DeviceOutcome {
    pub push_account_id: i64,
    /// The relay's device id, or its error code.
    pub outcome: Result<i64, String>,
}

impl Realm {
    /// Zulip's `human_users_only`.
    pub fn require_human(&self, me: &User) -> ApiResult<()> {
        if me.is_bot() {
            Err(ApiError::bad_request(
                "This endpoint does not accept bot requests.",
            ))
        } else {
            Ok(())
        }
    }

    /// A user's tokens, in the order they were registered.
    pub fn push_tokens_of(&self, user: UserId) -> &[PushToken] {
        self.push_tokens
            .get(&user)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// `POST /users/me/apns_device_token` and `/android_gcm_reg_id` (token validated):
    /// registering a token the user already has changes nothing.
    pub fn decide_add_push_token(
        &self,
        me: &User,
        q: AddPushToken,
        cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_human(me)?;
        let AddPushToken {
            kind,
            token,
            ios_app_id,
        } = q;
        validate_token(&token, kind)?;
        if self
            .push_tokens_of(me.id)
            .iter()
            .any(|t| t.kind == kind && t.token == token)
        {
            return Ok(Decided::changes(Vec::new()));
        }
        Ok(Decided::changes(vec![Change::Personal(
            PersonalChange::PushTokenAdded {
                user_id: me.id,
                token: PushToken {
                    kind,
                    token,
                    ios_app_id,
                    date_created: cx.now_secs(),
                },
            },
        )]))
    }

    /// `DELETE /users/me/apns_device_token` and `/android_gcm_reg_id`: only the user's
    /// own token of that kind.
    pub fn decide_remove_push_token(
        &self,
        me: &User,
        q: RemovePushToken,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_human(me)?;
        let RemovePushToken { kind, token } = q;
        validate_token(&token, kind)?;
        if !self
            .push_tokens_of(me.id)
            .iter()
            .any(|t| t.kind == kind && t.token == token)
        {
            return Err(ApiError::bad_request("Token does not exist"));
        }
        Ok(Decided::changes(vec![Change::Personal(
            PersonalChange::PushTokenRemoved {
                user_id: me.id,
                kind,
                token,
            },
        )]))
    }

    pub(in crate::realm) fn apply_push_token_added(&mut self, user: UserId, token: &PushToken) {
        self.push_tokens
            .entry(user)
            .or_default()
            .push(token.clone());
    }

    pub(in crate::realm) fn apply_push_token_removed(
        &mut self,
        user: UserId,
        kind: PushTokenKind,
        token: &str,
    ) {
        if let Some(tokens) = self.push_tokens.get_mut(&user) {
            tokens.retain(|t| !(t.kind == kind && t.token == token));
            if tokens.is_empty() {
                self.push_tokens.remove(&user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_validated_as_zulip() {
        let msg = |t: &str, k| validate_token(t, k).map_err(|e| e.msg);
        assert_eq!(
            msg("", PushTokenKind::Fcm),
            Err("Empty or invalid length token".into())
        );
        assert_eq!(
            msg(&"a".repeat(4097), PushTokenKind::Fcm),
            Err("Empty or invalid length token".into())
        );
        assert_eq!(msg(&"ab".repeat(2048), PushTokenKind::Apns), Ok(()));
        assert_eq!(
            msg("not-hex", PushTokenKind::Apns),
            Err("Invalid APNS token".into())
        );
        assert_eq!(msg("not-hex", PushTokenKind::Fcm), Ok(()));
        assert_eq!(msg("c0ffeec0ffeec0ffee", PushTokenKind::Apns), Ok(()));
        assert_eq!(
            msg("abc", PushTokenKind::Apns),
            Err("Invalid APNS token".into())
        );
        assert_eq!(msg("ab cd", PushTokenKind::Apns), Ok(()));
        assert_eq!(
            msg("a bc", PushTokenKind::Apns),
            Err("Invalid APNS token".into())
        );
        assert_eq!(msg(" ", PushTokenKind::Apns), Ok(()));
        assert!(check_app_id("org.zulip.Zulip").is_ok());
        assert_eq!(
            check_app_id("bad app").map_err(|e| e.msg),
            Err("appid has invalid format".into())
        );
    }
}

// ---- E2EE push devices (`POST /mobile_push/register`, seed 4.22) -------------------

/// The first byte of a `push_key`: libsodium's `crypto_secretbox` (XSalsa20-Poly1305).
pub const PUSH_KEY_SECRETBOX: u8 = 0x31;
/// Length of a secretbox key.
pub const SECRETBOX_KEY_LENGTH: usize = 32;

/// A device registered for end-to-end encrypted notifications.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PushDevice {
    /// The client's random id for this registration.
    pub push_account_id: i64,
    pub token_kind: PushTokenKind,
    /// The key notifications are encrypted with, cryptosystem byte first.
    pub push_key: Vec<u8>,
    /// The relay's id for the device, once the relay registered it.
    pub device_id: Option<i64>,
    /// Why the relay refused the registration.
    pub error_code: Option<String>,
}

impl PushDevice {
    /// `active`, `pending` or `failed`.
    pub fn status(&self) -> &'static str {
        if self.error_code.is_some() {
            "failed"
        } else if self.device_id.is_some() {
            "active"
        } else {
            "pending"
        }
    }

    /// The secretbox key of `push_key`.
    pub fn secretbox_key(&self) -> &[u8] {
        self.push_key.get(1..).unwrap_or_default()
    }
}

/// `POST /mobile_push/register`, parsed and checked on the worker.
#[derive(Debug, Clone)]
pub struct RegisterPushDevice {
    pub push_account_id: i64,
    pub token_kind: PushTokenKind,
    /// The parsed `push_key`, cryptosystem byte first.
    pub push_key: Vec<u8>,
}

/// `token_kind`: `fcm` or `apns` (`Invalid token_kind`).
pub fn parse_token_kind(raw: &str) -> ApiResult<PushTokenKind> {
    match raw {
        "fcm" => Ok(PushTokenKind::Fcm),
        "apns" => Ok(PushTokenKind::Apns),
        _ => Err(ApiError::bad_request("Invalid token_kind")),
    }
}

/// A `push_key`: standard Base64 of the cryptosystem byte and its key (only
/// secretbox, `0x31` and 32 bytes, is supported).
pub fn parse_push_key(raw: &str) -> ApiResult<Vec<u8>> {
    use base64::Engine;
    let invalid = || ApiError::bad_request("Invalid push_key");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(raw)
        .map_err(|_| invalid())?;
    match bytes.split_first() {
        Some((&PUSH_KEY_SECRETBOX, key)) if key.len() == SECRETBOX_KEY_LENGTH => Ok(bytes),
        _ => Err(invalid()),
    }
}

impl Realm {
    /// A user's E2EE push devices, in registration order.
    pub fn push_devices_of(&self, user: UserId) -> &[PushDevice] {
        self.push_devices
            .get(&user)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The `push_devices` of `/register`: status and error code by push account id.
    pub fn view_push_devices(&self, me: &User) -> serde_json::Map<String, serde_json::Value> {
        self.push_devices_of(me.id)
            .iter()
            .map(|d| {
                (
                    d.push_account_id.to_string(),
                    serde_json::json!({"status": d.status(), "error_code": d.error_code}),
                )
            })
            .collect()
    }

    /// `POST /mobile_push/register`: a device, pending until the relay registers it.
    /// An active registration of the same push account changes nothing (Zulip's
    /// idempotency); a pending or failed one is registered again.
    pub fn decide_register_push_device(
        &self,
        me: &User,
        q: RegisterPushDevice,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_human(me)?;
        let RegisterPushDevice {
            push_account_id,
            token_kind,
            push_key,
        } = q;
        if self
            .push_devices_of(me.id)
            .iter()
            .any(|d| d.push_account_id == push_account_id && d.status() == "active")
        {
            return Ok(Decided::changes(Vec::new()));
        }
        Ok(Decided::changes(vec![Change::Personal(
            PersonalChange::PushDeviceRegistered {
                user_id: me.id,
                push_account_id,
                token_kind,
                push_key,
            },
        )]))
    }

    /// The relay's answer to a registration: the device is active (`Ok(device_id)`) or
    /// failed (`Err(error_code)`). Nothing changes unless the device is still pending.
    pub fn decide_push_device_outcome(
        &self,
        me: &User,
        q: DeviceOutcome,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let DeviceOutcome {
            push_account_id,
            outcome,
        } = q;
        let pending = self
            .push_devices_of(me.id)
            .iter()
            .any(|d| d.push_account_id == push_account_id && d.status() == "pending");
        if !pending {
            return Ok(Decided::changes(Vec::new()));
        }
        let change = match outcome {
            Ok(device_id) => PersonalChange::PushDeviceActivated {
                user_id: me.id,
                push_account_id,
                device_id,
            },
            Err(error_code) => PersonalChange::PushDeviceFailed {
                user_id: me.id,
                push_account_id,
                error_code,
            },
        };
        Ok(Decided::changes(vec![Change::Personal(change)]))
    }

    /// The devices a test notification goes to: the user's active ones (of this push
    /// account, if given), or `NO_ACTIVE_PUSH_DEVICE`.
    pub fn active_push_devices(
        &self,
        me: &User,
        push_account_id: Option<i64>,
    ) -> ApiResult<Vec<PushDevice>> {
        let devices: Vec<PushDevice> = self
            .push_devices_of(me.id)
            .iter()
            .filter(|d| d.status() == "active")
            .filter(|d| push_account_id.is_none_or(|a| a == d.push_account_id))
            .cloned()
            .collect();
        if devices.is_empty() {
            return Err(ApiError::new(
                400,
                ErrorCode::NoActivePushDevice,
                "No active registered push device",
            ));
        }
        Ok(devices)
    }

    /// A stable identifier of the realm for the push relay (Zulip's realm UUID): a
    /// name-based (version 3) UUID of the subdomain and creation time.
    pub fn push_relay_uuid(&self) -> String {
        use md5::{Digest, Md5};
        let name = format!(
            "hearth-realm:{}:{}",
            self.settings.subdomain, self.settings.date_created
        );
        let mut b: [u8; 16] = Md5::digest(name.as_bytes()).into();
        b[6] = (b[6] & 0x0f) | 0x30;
        b[8] = (b[8] & 0x3f) | 0x80;
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        )
    }

    pub(in crate::realm) fn apply_push_device(&mut self, change: &PersonalChange) {
        match change {
            PersonalChange::PushDeviceRegistered {
                user_id,
                push_account_id,
                token_kind,
                push_key,
            } => {
                let devices = self.push_devices.entry(*user_id).or_default();
                devices.retain(|d| d.push_account_id != *push_account_id);
                devices.push(PushDevice {
                    push_account_id: *push_account_id,
                    token_kind: *token_kind,
                    push_key: push_key.clone(),
                    device_id: None,
                    error_code: None,
                });
            }
            PersonalChange::PushDeviceActivated {
                user_id,
                push_account_id,
                device_id,
            } => {
                if let Some(d) = self.push_device_mut(*user_id, *push_account_id) {
                    d.device_id = Some(*device_id);
                }
            }
            PersonalChange::PushDeviceFailed {
                user_id,
                push_account_id,
                error_code,
            } => {
                if let Some(d) = self.push_device_mut(*user_id, *push_account_id) {
                    d.error_code = Some(error_code.clone());
                }
            }
            _ => {}
        }
    }

    fn push_device_mut(&mut self, user: UserId, push_account_id: i64) -> Option<&mut PushDevice> {
        self.push_devices
            .get_mut(&user)?
            .iter_mut()
            .find(|d| d.push_account_id == push_account_id)
    }

    /// `push_device` events (to the user): the registration's new status. Zulip's
    /// `push_account_id` is a string before feature level 450.
    pub(in crate::realm) fn push_device_events(&self, change: &PersonalChange) -> Vec<Event> {
        let (user_id, push_account_id) = match change {
            PersonalChange::PushDeviceRegistered {
                user_id,
                push_account_id,
                ..
            }
            | PersonalChange::PushDeviceActivated {
                user_id,
                push_account_id,
                ..
            }
            | PersonalChange::PushDeviceFailed {
                user_id,
                push_account_id,
                ..
            } => (*user_id, *push_account_id),
            _ => return Vec::new(),
        };
        let Some(device) = self
            .push_devices_of(user_id)
            .iter()
            .find(|d| d.push_account_id == push_account_id)
        else {
            return Vec::new();
        };
        let mut body = serde_json::json!({
            "type": "push_device",
            "push_account_id": push_account_id.to_string(),
            "status": device.status(),
        });
        if let Some(code) = &device.error_code {
            body["error_code"] = code.clone().into();
        }
        vec![Event::new(body, Audience::users(vec![user_id]))]
    }
}
