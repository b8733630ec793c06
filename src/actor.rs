//! `RealmActor`: the one owner of a realm's state. It authenticates each call, runs the
//! call's rule against the realm, appends the decided changes to the WAL, applies them,
//! and takes snapshots. It never blocks on I/O other than the WAL append, and never
//! awaits inside `handle`: durability is awaited by the HTTP handler.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use actix::prelude::*;
use serde_json::{Map, Value};

use crate::api::params::Params;
use crate::error::{ApiError, ApiResult};
use crate::events::EventHub;
use crate::realm::{Change, Clock, Cx, DurabilityClass, Realm, User};
use crate::storage::RealmStore;

/// Basic credentials as sent by the client.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub email: String,
    pub api_key: String,
    /// Where the authenticated user's id goes, for the request log.
    pub logged: crate::logging::LoggedUser,
}

/// Who a call must be made by.
#[derive(Debug, Clone)]
pub enum Auth {
    /// No authentication (server settings, key fetches).
    Anonymous,
    /// A valid user; `Err` carries why the Authorization header was unusable.
    User(Result<Credentials, ApiError>),
}

/// What a rule sees: the realm (read-only), the caller, the parameters, the context.
pub struct Ctx<'a> {
    pub realm: &'a Realm,
    me: Option<&'a User>,
    pub params: &'a mut Params,
    pub cx: &'a mut Cx,
    /// The realm's event queues (`POST /register` creates one while reading state).
    pub hub: &'a EventHub,
    /// The server's public URL (see `Realm::url`).
    pub server_url: &'a str,
}

impl<'a> Ctx<'a> {
    /// The authenticated caller (calls made with `Auth::User` always have one).
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

/// A rule, run inside the actor.
pub type Rule = Box<dyn FnOnce(&mut Ctx<'_>) -> ApiResult<Outcome> + Send>;

/// One API call sent to a realm.
pub struct Call {
    pub auth: Auth,
    pub params: Params,
    pub rule: Rule,
}

/// The actor's answer: the body, the durability ticket to await, the unused params.
pub struct Reply {
    pub body: Map<String, Value>,
    pub ticket: Option<u64>,
    pub ignored: Vec<String>,
    pub private: Option<String>,
}

impl Message for Call {
    type Result = ApiResult<Reply>;
}

/// Asks the actor to write a snapshot now (shutdown).
pub struct TakeSnapshot;

impl Message for TakeSnapshot {
    type Result = Result<(), String>;
}

/// Reads a copy of the whole realm (tests, tooling).
pub struct CloneRealm;

impl Message for CloneRealm {
    type Result = Realm;
}

/// The realm actor.
pub struct RealmActor {
    /// The state; only `apply` mutates it.
    realm: Realm,
    /// WAL and snapshots of this realm.
    store: RealmStore,
    /// Time source of every decision (injected in tests).
    clock: Arc<dyn Clock>,
    /// Event log and client queues; every applied change is published here.
    hub: Arc<EventHub>,
    /// The server's public URL: the URL of realms created without one (`--dev`).
    server_url: Arc<str>,
    /// Records appended since the last snapshot.
    since_snapshot: u64,
    /// Take a snapshot after this many records (0: only on shutdown).
    snapshot_every: u64,
}

impl RealmActor {
    pub fn new(
        realm: Realm,
        store: RealmStore,
        clock: Arc<dyn Clock>,
        hub: Arc<EventHub>,
        server_url: Arc<str>,
        snapshot_every: u64,
    ) -> Self {
        RealmActor {
            realm,
            store,
            clock,
            hub,
            server_url,
            since_snapshot: 0,
            snapshot_every,
        }
    }

    /// Appends, applies; returns the ticket to await when a durable change is among them.
    fn commit(&mut self, changes: &[Change]) -> ApiResult<Option<u64>> {
        if changes.is_empty() {
            return Ok(None);
        }
        let ticket = self.store.append(changes).map_err(|e| {
            tracing::error!("WAL append failed: {e}");
            ApiError::internal()
        })?;
        let mut events = Vec::new();
        for change in changes {
            self.realm.apply(change);
            events.extend(self.realm.events_for(change));
        }
        self.hub.publish(events);
        self.since_snapshot += 1;
        if self.snapshot_every > 0 && self.since_snapshot >= self.snapshot_every {
            self.snapshot();
        }
        let durable = changes
            .iter()
            .any(|c| c.durability() == DurabilityClass::Durable);
        Ok(durable.then_some(ticket))
    }

    fn snapshot(&mut self) {
        match self.store.snapshot(&self.realm) {
            Ok(()) => self.since_snapshot = 0,
            Err(e) => tracing::error!(
                "snapshot of realm '{}' failed: {e}",
                self.realm.settings.subdomain
            ),
        }
    }

    fn run(&mut self, call: Call) -> ApiResult<Reply> {
        let me = match call.auth {
            Auth::Anonymous => None,
            Auth::User(Err(e)) => return Err(e),
            Auth::User(Ok(c)) => {
                let id = self.realm.authenticate(&c.email, &c.api_key)?.id;
                c.logged.set(id);
                Some(id)
            }
        };
        let mut params = call.params;
        let mut cx = Cx::new(&*self.clock);
        let realm = &self.realm;
        let hub = &*self.hub;
        let server_url = &*self.server_url;
        let rule = call.rule;
        // A rule only reads state, so a panic in one leaves the realm intact.
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let me = me.and_then(|id| realm.user(id));
            rule(&mut Ctx {
                realm,
                me,
                params: &mut params,
                cx: &mut cx,
                hub,
                server_url,
            })
        }))
        .map_err(|_| {
            tracing::error!("a rule panicked");
            ApiError::internal()
        })??;
        let ticket = self.commit(&outcome.changes)?;
        Ok(Reply {
            body: outcome.body,
            ticket,
            ignored: params.unused(),
            private: outcome.private,
        })
    }
}

impl Actor for RealmActor {
    type Context = Context<Self>;
}

impl Handler<Call> for RealmActor {
    type Result = ApiResult<Reply>;

    fn handle(&mut self, call: Call, _ctx: &mut Self::Context) -> Self::Result {
        self.run(call)
    }
}

impl Handler<TakeSnapshot> for RealmActor {
    type Result = Result<(), String>;

    fn handle(&mut self, _: TakeSnapshot, _ctx: &mut Self::Context) -> Self::Result {
        self.store
            .snapshot(&self.realm)
            .map_err(|e| e.to_string())?;
        self.since_snapshot = 0;
        Ok(())
    }
}

impl Handler<CloneRealm> for RealmActor {
    type Result = MessageResult<CloneRealm>;

    fn handle(&mut self, _: CloneRealm, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.realm.clone())
    }
}

/// Creates a realm from its first changes: recorded in the WAL, then snapshotted.
pub fn create_realm(store: &mut RealmStore, changes: &[Change]) -> Result<Realm, String> {
    let mut realm = changes
        .first()
        .and_then(Realm::from_first_change)
        .ok_or("a realm starts with RealmCreated")?;
    store.append(changes).map_err(|e| e.to_string())?;
    changes.iter().for_each(|c| realm.apply(c));
    store.snapshot(&realm).map_err(|e| e.to_string())?;
    Ok(realm)
}
