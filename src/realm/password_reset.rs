//! Password reset links, as Zulip's web app has them (`/accounts/password/reset/`): a
//! person who forgot their password asks for a link by email, and the link lets them
//! set a new one.
//!
//! A link is signed, not stored: `/accounts/password/reset/{user_id}/{expires}-{mac}/`,
//! where `mac` is HMAC-SHA256, under the server's reset key (a file in the data folder,
//! so links outlive a restart), of the realm, the user, the expiry, the user's delivery
//! email and their password hash as it is when the link is made. So a link:
//!
//! - works for three days (Django's `PASSWORD_RESET_TIMEOUT` default, the framework
//!   Zulip's reset stands on);
//! - works once: setting a password changes the hash it was signed with, and so does
//!   any other password change; a changed email ends it too;
//! - is refused for a deactivated account or a bot, and on another realm.
//!
//! The new password is set by a system write (`decide_reset_password`) that checks
//! again, on the actor, that the hash the link was checked against is still the user's:
//! two uses of one link at once set one password. The change ends the user's browser
//! sessions, as every password change does.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::{Change, Cx, Decided, Realm, User, UserChange, UserId};
use crate::error::{ApiError, ApiResult};

type HmacSha256 = Hmac<Sha256>;

/// How long a link works, in seconds.
pub const RESET_LINK_SECS: i64 = 3 * 24 * 3600;

/// The answer to a link that does not (or no longer) work.
pub const LINK_INVALID: &str =
    "This password reset link is not valid: it was used, has expired, or its address changed.";

/// A reset link's parts, as its path carries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResetLink {
    pub user_id: UserId,
    /// UNIX seconds.
    pub expires: i64,
    pub mac: [u8; 32],
}

impl ResetLink {
    /// The parts of a link's path segments (`{user_id}` and `{expires}-{mac}`), or
    /// `None` when they are not a link's.
    pub fn parse(user_id: &str, token: &str) -> Option<ResetLink> {
        let (expires, mac) = token.split_once('-')?;
        if user_id.len() > 20 || expires.len() > 20 || mac.len() != 64 {
            return None;
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(mac, &mut bytes).ok()?;
        Some(ResetLink {
            user_id: user_id.parse().ok()?,
            expires: expires.parse().ok()?,
            mac: bytes,
        })
    }

    /// The link's path on the realm's site.
    pub fn path(&self) -> String {
        format!(
            "/accounts/password/reset/{}/{}-{}/",
            self.user_id,
            self.expires,
            hex::encode(self.mac)
        )
    }
}

/// The MAC of a link for `user` until `expires`.
fn mac(key: &[u8; 32], subdomain: &str, user: &User, expires: i64) -> HmacSha256 {
    #[allow(clippy::expect_used)] // HMAC takes a key of any length.
    let mut mac = HmacSha256::new_from_slice(key).expect("an HMAC key of 32 bytes");
    let hash = user.password_hash.as_deref().unwrap_or("");
    mac.update(b"hearth-password-reset\0");
    for part in [subdomain, user.delivery_email.as_str(), hash] {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part.as_bytes());
    }
    mac.update(&user.id.to_be_bytes());
    mac.update(&expires.to_be_bytes());
    mac
}

/// A password set through a reset link the worker checked against `expected_hash`.
#[derive(Debug, Clone)]
pub struct ResetPassword {
    pub user_id: UserId,
    /// The user's password hash the link was signed with and checked against.
    pub expected_hash: Option<String>,
    /// The new password's hash (strength checked on the worker).
    pub new_hash: String,
}

impl Realm {
    /// Whether a reset link may be made for this account: an active human's.
    fn resettable(user: &User) -> bool {
        user.is_active && !user.is_bot()
    }

    /// A link for `user` made at `now` (UNIX seconds), under `key`.
    pub fn reset_link(&self, key: &[u8; 32], user: &User, now: i64) -> ResetLink {
        let expires = now + RESET_LINK_SECS;
        let mac = mac(key, &self.settings.subdomain, user, expires);
        ResetLink {
            user_id: user.id,
            expires,
            mac: mac.finalize().into_bytes().into(),
        }
    }

    /// The account a link lets set a password at `now`, if it works (its MAC compared
    /// in constant time).
    pub fn reset_link_user(&self, key: &[u8; 32], link: &ResetLink, now: i64) -> Option<&User> {
        let user = self.user(link.user_id).filter(|u| Self::resettable(u))?;
        if now >= link.expires || link.expires > now + RESET_LINK_SECS {
            return None;
        }
        mac(key, &self.settings.subdomain, user, link.expires)
            .verify_slice(&link.mac)
            .ok()?;
        Some(user)
    }

    /// Sets a password through a reset link (a system write: the link is the
    /// credential). Refused when the account can no longer use it, or when its
    /// password changed after the worker checked the link.
    pub fn decide_reset_password(&self, q: ResetPassword, _cx: &mut Cx) -> ApiResult<Decided<()>> {
        let user = self
            .user(q.user_id)
            .filter(|u| Self::resettable(u))
            .ok_or_else(|| ApiError::bad_request(LINK_INVALID))?;
        if user.password_hash != q.expected_hash {
            return Err(ApiError::bad_request(LINK_INVALID));
        }
        Ok(Decided::changes(vec![Change::User(
            UserChange::PasswordChanged {
                user_id: q.user_id,
                password_hash: q.new_hash,
            },
        )]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realm::dev::testing::dev_realm;

    const KEY: [u8; 32] = [7; 32];
    const NOW: i64 = 1_800_000_000;

    #[test]
    fn a_link_works_until_it_expires_and_only_for_its_user_and_key() {
        let realm = dev_realm(&mut Cx::seeded(NOW * 1000, 1));
        let hamlet = realm.user_by_delivery_email("hamlet@zulip.com").unwrap();
        let link = realm.reset_link(&KEY, hamlet, NOW);
        let path = link.path();
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        assert_eq!(parts[..3], ["accounts", "password", "reset"]);
        assert_eq!(ResetLink::parse(parts[3], parts[4]), Some(link.clone()));
        assert_eq!(
            realm.reset_link_user(&KEY, &link, NOW).map(|u| u.id),
            Some(hamlet.id)
        );
        let last = link.expires - 1;
        assert!(realm.reset_link_user(&KEY, &link, last).is_some());
        assert!(realm.reset_link_user(&KEY, &link, link.expires).is_none());
        assert!(realm.reset_link_user(&[8; 32], &link, NOW).is_none());
        let othello = realm.user_by_delivery_email("othello@zulip.com").unwrap();
        let moved = ResetLink {
            user_id: othello.id,
            ..link.clone()
        };
        assert!(realm.reset_link_user(&KEY, &moved, NOW).is_none());
        let later = ResetLink {
            expires: link.expires + 1,
            ..link.clone()
        };
        assert!(realm.reset_link_user(&KEY, &later, NOW).is_none());
    }

    #[test]
    fn a_password_change_or_deactivation_ends_a_link() {
        let mut realm = dev_realm(&mut Cx::seeded(NOW * 1000, 1));
        let hamlet = realm
            .user_by_delivery_email("hamlet@zulip.com")
            .unwrap()
            .clone();
        let link = realm.reset_link(&KEY, &hamlet, NOW);
        let q = ResetPassword {
            user_id: hamlet.id,
            expected_hash: hamlet.password_hash.clone(),
            new_hash: "$argon2id$new".into(),
        };
        let mut cx = Cx::seeded(NOW * 1000, 1);
        let decided = realm.decide_reset_password(q.clone(), &mut cx).unwrap();
        decided.changes.iter().for_each(|c| realm.apply(c));
        assert!(
            realm.reset_link_user(&KEY, &link, NOW).is_none(),
            "used once"
        );
        assert!(realm.decide_reset_password(q, &mut cx).is_err(), "stale");

        let othello = realm
            .user_by_delivery_email("othello@zulip.com")
            .unwrap()
            .clone();
        let link = realm.reset_link(&KEY, &othello, NOW);
        realm.apply(&Change::User(UserChange::Deactivated {
            user_id: othello.id,
        }));
        assert!(realm.reset_link_user(&KEY, &link, NOW).is_none());
        assert!(ResetLink::parse("1", "12-zz").is_none());
        assert!(ResetLink::parse("x", &format!("1-{}", "0".repeat(64))).is_none());
    }
}
