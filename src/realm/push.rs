//! Mobile push tokens (seed 2.14, 4.17, 4.18): the FCM registration tokens and APNs
//! device tokens each user registered, as Zulip's `zerver/views/push_notifications.py`
//! and `zerver/lib/push_notifications.py` check them. Durable per-user state; no
//! events.

use serde::{Deserialize, Serialize};

use super::{Change, Cx, PersonalChange, Realm, User, UserId};
use crate::error::{ApiError, ApiResult};

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
        kind: PushTokenKind,
        token: &str,
        ios_app_id: Option<String>,
        cx: &Cx,
    ) -> ApiResult<Vec<Change>> {
        validate_token(token, kind)?;
        if self
            .push_tokens_of(me.id)
            .iter()
            .any(|t| t.kind == kind && t.token == token)
        {
            return Ok(Vec::new());
        }
        Ok(vec![Change::Personal(PersonalChange::PushTokenAdded {
            user_id: me.id,
            token: PushToken {
                kind,
                token: token.to_owned(),
                ios_app_id,
                date_created: cx.now_secs(),
            },
        })])
    }

    /// `DELETE /users/me/apns_device_token` and `/android_gcm_reg_id`: only the user's
    /// own token of that kind.
    pub fn decide_remove_push_token(
        &self,
        me: &User,
        kind: PushTokenKind,
        token: &str,
    ) -> ApiResult<Vec<Change>> {
        validate_token(token, kind)?;
        if !self
            .push_tokens_of(me.id)
            .iter()
            .any(|t| t.kind == kind && t.token == token)
        {
            return Err(ApiError::bad_request("Token does not exist"));
        }
        Ok(vec![Change::Personal(PersonalChange::PushTokenRemoved {
            user_id: me.id,
            kind,
            token: token.to_owned(),
        })])
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
