//! Browser sessions: what the `sessionid` cookie of the web client stands for.
//!
//! A session is realm state, decided and written through the WAL like every other fact,
//! so it survives a restart and a `kill -9`, and ending it (logout, a password change,
//! a deactivation) is as durable as starting it. The realm holds only the SHA-256 digest
//! of each cookie's secret: a snapshot, a WAL record or an operator's archive does not
//! hand out sessions, and a data export holds none (`strip_secrets`).
//!
//! A session lasts two weeks (Zulip's `SESSION_COOKIE_AGE`), counted from the last load
//! of the client's page, as Django counts it from the last request that saved the
//! session: a page load more than a day after the session's last renewal renews it
//! (one write a day per browser at most). Each user
//! keeps at most `MAX_SESSIONS_PER_USER`: a new one first drops the user's expired
//! sessions, then the oldest beyond the bound.
//!
//! | Change | Events | To |
//! |--------|--------|----|
//! | `SessionChange::*` | none (Zulip sends none for logins) | - |

use imbl::{OrdMap, OrdSet};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Change, Cx, Decided, Realm, User, UserId};
use crate::error::{ApiError, ApiResult};

/// How long a session lasts: two weeks (Zulip's `SESSION_COOKIE_AGE`).
pub const SESSION_AGE_SECS: i64 = 14 * 24 * 60 * 60;

/// How long after its last renewal a page load renews a session.
pub const RENEW_AFTER_SECS: i64 = 24 * 60 * 60;

/// The most sessions one user keeps (browsers and devices at once).
pub const MAX_SESSIONS_PER_USER: usize = 32;

/// The SHA-256 digest of a session cookie's secret: how the realm names a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SessionDigest(pub [u8; 32]);

impl SessionDigest {
    /// The digest of a cookie's secret.
    pub fn of(secret: &str) -> Self {
        SessionDigest(Sha256::digest(secret.as_bytes()).into())
    }
}

/// One session: whose, and when it started and ends (UNIX seconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub user_id: UserId,
    pub started: i64,
    pub expires: i64,
}

/// The realm's sessions, by digest; each user's, derived (rebuilt after loading).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionState {
    pub by_digest: OrdMap<SessionDigest, Session>,
    #[serde(skip)]
    by_user: OrdMap<UserId, OrdSet<SessionDigest>>,
}

impl SessionState {
    /// Rebuilds `by_user` from `by_digest`.
    pub fn rebuild_index(&mut self) {
        let mut by_user: OrdMap<UserId, OrdSet<SessionDigest>> = OrdMap::new();
        for (digest, s) in &self.by_digest {
            by_user.entry(s.user_id).or_default().insert(*digest);
        }
        self.by_user = by_user;
    }

    /// Every session, gone (a data export holds none).
    pub fn clear(&mut self) {
        *self = SessionState::default();
    }

    /// How many sessions `user` has (expired ones included until they are dropped).
    pub fn count_of(&self, user: UserId) -> usize {
        self.by_user.get(&user).map_or(0, OrdSet::len)
    }

    fn insert(&mut self, digest: SessionDigest, session: Session) {
        let user = session.user_id;
        self.by_digest.insert(digest, session);
        self.by_user.entry(user).or_default().insert(digest);
    }

    fn remove(&mut self, digest: &SessionDigest) {
        if let Some(s) = self.by_digest.remove(digest) {
            if let Some(set) = self.by_user.get_mut(&s.user_id) {
                set.remove(digest);
                if set.is_empty() {
                    self.by_user.remove(&s.user_id);
                }
            }
        }
    }

    /// Ends every session of `user`.
    fn end_all(&mut self, user: UserId) {
        if let Some(set) = self.by_user.remove(&user) {
            for d in set {
                self.by_digest.remove(&d);
            }
        }
    }

    /// Drops `user`'s sessions expired at `now`, then the oldest beyond the bound
    /// less `room` (the places new sessions are about to take).
    fn prune(&mut self, user: UserId, now: i64, room: usize) {
        let Some(set) = self.by_user.get(&user) else {
            return;
        };
        let mut live: Vec<(i64, SessionDigest)> = Vec::new();
        let mut gone: Vec<SessionDigest> = Vec::new();
        for d in set {
            match self.by_digest.get(d) {
                Some(s) if s.expires > now => live.push((s.started, *d)),
                _ => gone.push(*d),
            }
        }
        live.sort();
        let keep = MAX_SESSIONS_PER_USER.saturating_sub(room);
        if live.len() > keep {
            gone.extend(live[..live.len() - keep].iter().map(|(_, d)| *d));
        }
        for d in gone {
            self.remove(&d);
        }
    }
}

/// Facts about sessions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SessionChange {
    /// A user logged in: the session of this digest is theirs until `expires`.
    Started {
        digest: SessionDigest,
        session: Session,
    },
    /// A session was ended (logout).
    Ended { digest: SessionDigest },
    /// A page load renewed a session: it now ends at `expires`.
    Renewed { digest: SessionDigest, expires: i64 },
}

/// A login, checked on the worker (password, development login): start a session.
#[derive(Debug, Clone)]
pub struct StartSession {
    pub user_id: UserId,
    /// The digest of the secret the worker chose and will put in the cookie.
    pub digest: SessionDigest,
}

/// A load of the client's page with this session: renew it when it is due.
#[derive(Debug, Clone)]
pub struct RenewSession {
    pub digest: SessionDigest,
}

/// `POST /accounts/logout/`: end the session of this digest.
#[derive(Debug, Clone)]
pub struct EndSession {
    pub digest: SessionDigest,
}

impl Realm {
    /// A login: the user must still be an active human (the password or development
    /// login was checked against an older version).
    pub fn decide_start_session(&self, q: StartSession, cx: &mut Cx) -> ApiResult<Decided<()>> {
        let user = self
            .user(q.user_id)
            .ok_or_else(|| ApiError::unauthorized("Your username or password is incorrect"))?;
        if !user.is_active {
            return Err(ApiError::new(
                401,
                crate::error::ErrorCode::UserDeactivated,
                "Account is deactivated",
            ));
        }
        if user.is_bot() {
            return Err(ApiError::bad_request("Bots cannot log in."));
        }
        let started = cx.now_ms.div_euclid(1000);
        Ok(Decided::changes(vec![Change::Session(
            SessionChange::Started {
                digest: q.digest,
                session: Session {
                    user_id: q.user_id,
                    started,
                    expires: started + SESSION_AGE_SECS,
                },
            },
        )]))
    }

    /// A logout: ends the session if it is still there (twice is no error).
    pub fn decide_end_session(&self, q: EndSession, _cx: &mut Cx) -> ApiResult<Decided<()>> {
        if !self.sessions.by_digest.contains_key(&q.digest) {
            return Ok(Decided::changes(Vec::new()));
        }
        Ok(Decided::changes(vec![Change::Session(
            SessionChange::Ended { digest: q.digest },
        )]))
    }

    /// A page load: renews the session for two weeks from now when its last renewal
    /// is more than `RENEW_AFTER_SECS` old; answers whether it did.
    pub fn decide_renew_session(&self, q: RenewSession, cx: &mut Cx) -> ApiResult<Decided<bool>> {
        let now = cx.now_ms.div_euclid(1000);
        self.session_user(&q.digest, now)?;
        if !self.session_due_for_renewal(&q.digest, now) {
            return Ok(Decided::new(Vec::new(), false));
        }
        Ok(Decided::new(
            vec![Change::Session(SessionChange::Renewed {
                digest: q.digest,
                expires: now + SESSION_AGE_SECS,
            })],
            true,
        ))
    }

    /// Whether a page load at `now` renews this session.
    pub fn session_due_for_renewal(&self, digest: &SessionDigest, now: i64) -> bool {
        self.sessions
            .by_digest
            .get(digest)
            .is_some_and(|s| now - (s.expires - SESSION_AGE_SECS) >= RENEW_AFTER_SECS)
    }

    /// The user a session cookie stands for at `now` (UNIX seconds): an unknown or
    /// expired session, or one of a deactivated user, is no login.
    pub fn session_user(&self, digest: &SessionDigest, now: i64) -> ApiResult<&User> {
        let session = self
            .sessions
            .by_digest
            .get(digest)
            .filter(|s| s.expires > now)
            .ok_or_else(session_required)?;
        match self.user(session.user_id) {
            Some(u) if u.is_active => Ok(u),
            _ => Err(session_required()),
        }
    }

    pub(super) fn apply_session_change(&mut self, change: &SessionChange) {
        match change {
            SessionChange::Started { digest, session } => {
                self.sessions.prune(session.user_id, session.started, 1);
                self.sessions.insert(*digest, session.clone());
            }
            SessionChange::Ended { digest } => self.sessions.remove(digest),
            SessionChange::Renewed { digest, expires } => {
                if let Some(s) = self.sessions.by_digest.get_mut(digest) {
                    s.expires = *expires;
                }
            }
        }
    }

    /// Ends every session of `user`: what a password change or a deactivation does
    /// besides its own fact (a password change in the web client starts that browser a
    /// new session; see `api::session`).
    pub(super) fn end_user_sessions(&mut self, user: UserId) {
        self.sessions.end_all(user);
    }
}

/// The 401 of a `/json` request without a valid session (Zulip's, with the
/// `Session` challenge).
pub fn session_required() -> ApiError {
    let mut e = ApiError::not_logged_in();
    e.challenge = Some("Session realm=\"zulip\"");
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(user: UserId, at: i64) -> Session {
        Session {
            user_id: user,
            started: at,
            expires: at + SESSION_AGE_SECS,
        }
    }

    #[test]
    fn pruning_drops_expired_then_oldest() {
        let mut s = SessionState::default();
        for i in 0..MAX_SESSIONS_PER_USER as u8 {
            s.insert(SessionDigest([i; 32]), started(7, i64::from(i)));
        }
        s.insert(SessionDigest([200; 32]), started(8, 0));
        s.prune(7, 10, 1);
        assert_eq!(s.count_of(7), MAX_SESSIONS_PER_USER - 1);
        assert!(!s.by_digest.contains_key(&SessionDigest([0; 32])));
        assert!(s.by_digest.contains_key(&SessionDigest([1; 32])));
        // Two weeks on, all of user 7's are expired; user 8's is untouched.
        s.prune(7, SESSION_AGE_SECS + 100, 0);
        assert_eq!(s.count_of(7), 0);
        assert_eq!(s.count_of(8), 1);
        s.end_all(8);
        assert!(s.by_digest.is_empty());
    }

    #[test]
    fn the_index_is_rebuilt_from_the_sessions() {
        let mut s = SessionState::default();
        s.insert(SessionDigest([1; 32]), started(3, 0));
        s.insert(SessionDigest([2; 32]), started(3, 0));
        let mut copy = SessionState {
            by_digest: s.by_digest.clone(),
            by_user: OrdMap::new(),
        };
        copy.rebuild_index();
        assert_eq!(copy, s);
    }

    #[test]
    fn a_digest_is_sha256_of_the_secret() {
        assert_eq!(
            hex::encode(SessionDigest::of("abc").0),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
