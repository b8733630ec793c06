//! What a rule sees and returns, and the caller's credentials. A rule is run on an
//! HTTP worker against the published version (reads), or by the realm actor against its
//! working state (writes, wrapped in an `actor::Decide` by `ApiRequest::write`).

use serde_json::{Map, Value};

use super::params::Params;
use crate::error::{ApiError, ApiResult};
use crate::hub::EventHub;
use crate::realm::{Change, Cx, Realm, User};

/// Basic credentials as sent by the client.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub email: String,
    pub api_key: String,
    /// Where the authenticated user's id goes, for the request log.
    pub logged: super::middleware::logging::LoggedUser,
}

/// What a rule sees: the realm (read-only), the caller, the parameters, the context.
/// Reads get the published version on an HTTP worker; writes the actor's working state.
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

/// What a rule returns: the changes it decided and the success body.
#[derive(Default)]
pub struct Outcome {
    pub changes: Vec<Change>,
    pub body: Map<String, Value>,
    /// A value for the HTTP handler only, never sent (a password hash to verify off the
    /// actor, for instance).
    pub private: Option<String>,
}

impl Outcome {
    /// A read: no changes, this body.
    pub fn read(body: Map<String, Value>) -> Self {
        Outcome {
            changes: Vec::new(),
            body,
            private: None,
        }
    }

    /// A write: these changes, this body.
    pub fn write(changes: Vec<Change>, body: Map<String, Value>) -> Self {
        Outcome {
            changes,
            body,
            private: None,
        }
    }
}
