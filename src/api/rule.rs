//! What a read sees and returns, and the caller's credentials. A read runs on an HTTP
//! worker against the published version; writes are typed requests decided by the
//! realm actor (`ApiRequest::write`, `realm::write`).

use serde_json::{Map, Value};

use super::params::Params;
use crate::error::{ApiError, ApiResult};
use crate::hub::EventHub;
use crate::realm::{Cx, Realm, User};

/// A request's credentials: Basic credentials as sent by the client, or the session
/// of a `/json` request (`api::session`).
#[derive(Debug, Clone)]
pub struct Credentials {
    pub email: String,
    pub api_key: String,
    /// A `/json` request's session (its cookie's digest): then `email` and `api_key`
    /// are empty and unused.
    pub session: Option<crate::realm::sessions::SessionDigest>,
    /// Where the authenticated user's id goes, for the request log.
    pub logged: super::middleware::logging::LoggedUser,
}

impl Credentials {
    /// The active user these credentials stand for in `realm` at `now` (UNIX seconds),
    /// with Zulip's 401 texts.
    pub fn user_in<'r>(&self, realm: &'r Realm, now: i64) -> crate::error::ApiResult<&'r User> {
        match &self.session {
            Some(digest) => realm.session_user(digest, now),
            None => realm.authenticate(&self.email, &self.api_key),
        }
    }
}

/// What a read sees: the published version, the caller, the parameters, the context.
pub struct Ctx<'a> {
    pub realm: &'a Realm,
    me: Option<&'a User>,
    pub params: &'a mut Params,
    pub cx: &'a mut Cx,
    /// The realm's event queues (`POST /register` creates one).
    pub hub: &'a EventHub,
    /// The server's public URL (see `Realm::url`).
    pub server_url: &'a str,
}

impl<'a> Ctx<'a> {
    pub fn new(
        realm: &'a Realm,
        me: Option<&'a User>,
        params: &'a mut Params,
        cx: &'a mut Cx,
        hub: &'a EventHub,
        server_url: &'a str,
    ) -> Self {
        Ctx {
            realm,
            me,
            params,
            cx,
            hub,
            server_url,
        }
    }

    /// The authenticated caller (calls made with credentials always have one).
    pub fn me(&self) -> ApiResult<&'a User> {
        self.me.ok_or_else(ApiError::not_logged_in)
    }
}

/// What a read returns: the success body.
#[derive(Default)]
pub struct Outcome {
    pub body: Map<String, Value>,
    /// A value for the HTTP handler only, never sent (a password hash to verify off the
    /// actor, for instance).
    pub private: Option<String>,
}

impl Outcome {
    /// This body, nothing private.
    pub fn read(body: Map<String, Value>) -> Self {
        Outcome {
            body,
            private: None,
        }
    }
}
