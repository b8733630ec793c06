//! The realm registry: Host -> realm actor and event hub; and how a realm is brought
//! up from its storage (`recover`, `start`), at start-up and when the admin listener
//! activates a realm moved in.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use arc_swap::ArcSwapOption;

use actix::{Actor, ArbiterHandle};
use dashmap::{DashMap, DashSet};

use crate::actor::{RealmActor, RealmClient};
use crate::hub::EventHub;
use crate::realm::messages::rows::MessageRowsHandle;
use crate::realm::Clock;
use crate::storage::realm::Recovered;
use crate::storage::{Damage, RealmStore, StorageError, Store};

/// How handlers reach a realm: its actor (writes), and its event hub (the published
/// version every read and authentication uses; long-polls wait there too).
#[derive(Clone)]
pub struct RealmHandle {
    /// Writes: the actor, behind the durability wait and the release.
    pub client: RealmClient,
    pub hub: Arc<EventHub>,
    /// The clock of decisions and reads.
    pub clock: Arc<dyn Clock>,
    /// The server's public URL (see `Realm::url`).
    pub server_url: Arc<str>,
    /// The realm's message rows (reads run on the HTTP workers).
    pub messages: crate::realm::messages::rows::MessageRowsHandle,
}

/// Every realm this server serves, by subdomain.
#[derive(Default)]
pub struct Registry {
    realms: DashMap<String, RealmHandle>,
    /// Realms dropped from this node since it started: their Hosts answer as unknown
    /// realms (never as another realm of the node), and their event queues' polls
    /// `BAD_EVENT_QUEUE_ID`.
    departed: DashSet<String>,
    /// The only realm, while there is one and none left this node (every host selects
    /// it): one pointer load per request instead of counting the maps' shards.
    only: ArcSwapOption<(String, RealmHandle)>,
    /// Held while the maps change, so that `only` follows them.
    changing: Mutex<()>,
}

impl Registry {
    pub fn insert(&self, subdomain: &str, handle: RealmHandle) {
        let _changing = self.changing.lock().unwrap_or_else(|e| e.into_inner());
        self.departed.remove(subdomain);
        self.realms.insert(subdomain.to_owned(), handle);
        self.settle_only();
    }

    /// Takes a realm out (dropped from this node): from now on its Host finds nothing.
    pub fn remove(&self, subdomain: &str) -> Option<RealmHandle> {
        let _changing = self.changing.lock().unwrap_or_else(|e| e.into_inner());
        let removed = self.realms.remove(subdomain).map(|(_, h)| h);
        if removed.is_some() {
            self.departed.insert(subdomain.to_owned());
        }
        self.settle_only();
        removed
    }

    /// Sets `only` from the maps (under `changing`).
    fn settle_only(&self) {
        let only = (self.realms.len() == 1 && self.departed.is_empty())
            .then(|| {
                self.realms
                    .iter()
                    .next()
                    .map(|e| Arc::new((e.key().clone(), e.value().clone())))
            })
            .flatten();
        self.only.store(only);
    }

    /// The subdomain of the realm a host name selects: the only realm when there is one
    /// (and none left this node); else the realm whose subdomain is the host's first
    /// label; else the root realm (subdomain ""). A realm that left selects nothing.
    pub fn subdomain_for_host(&self, host: &str) -> Option<String> {
        let label = host.split('.').next().unwrap_or_default();
        if self.departed.contains(label) {
            return None;
        }
        if let Some(only) = &*self.only.load() {
            return Some(only.0.clone());
        }
        [label, ""]
            .into_iter()
            .find(|s| self.realms.contains_key(*s))
            .map(str::to_owned)
    }

    /// The realm for a host name (see `subdomain_for_host`).
    pub fn for_host(&self, host: &str) -> Option<RealmHandle> {
        if let Some(only) = &*self.only.load() {
            // The only realm (`subdomain_for_host`), without copying its name.
            return Some(only.1.clone());
        }
        let subdomain = self.subdomain_for_host(host)?;
        self.realms.get(&subdomain).map(|e| e.value().clone())
    }

    /// Whether the host names a realm that was dropped from this node.
    pub fn departed(&self, host: &str) -> bool {
        let label = host.split('.').next().unwrap_or_default();
        self.departed.contains(label)
            || (self.departed.contains("") && self.subdomain_for_host(host).is_none())
    }

    /// The handle of a realm by subdomain.
    pub fn get(&self, subdomain: &str) -> Option<RealmHandle> {
        self.realms.get(subdomain).map(|e| e.value().clone())
    }

    /// The subdomains served.
    pub fn subdomains(&self) -> Vec<String> {
        self.realms.iter().map(|e| e.key().clone()).collect()
    }

    /// Every realm (shutdown snapshots, the ticker).
    pub fn all(&self) -> Vec<RealmHandle> {
        self.realms.iter().map(|e| e.value().clone()).collect()
    }

    pub fn len(&self) -> usize {
        self.realms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.realms.is_empty()
    }
}

/// Reads one realm back: its newest snapshot and the WAL records after it (the message
/// rows of the replayed records are written as it goes).
pub fn recover(store: &Store, subdomain: &str) -> Result<(RealmStore, Recovered), StorageError> {
    let recovering = Instant::now();
    let mut realm_store = store.realm(subdomain)?;
    let recovered = realm_store.recover()?.ok_or_else(|| {
        StorageError::Damaged(Box::new(Damage {
            folder: store.durability.dir().to_path_buf(),
            realm: Some(subdomain.to_owned()),
            expected: "the realm's snapshot or its first WAL record".into(),
            found: "neither".into(),
        }))
    })?;
    tracing::info!(
        "realm '{subdomain}': recovered in {} ms",
        recovering.elapsed().as_millis()
    );
    tracing::info!(
        "realm '{subdomain}': {} users, {} WAL records replayed, {} cut",
        recovered.realm.users.len(),
        recovered.replayed,
        recovered.cut
    );
    Ok((realm_store, recovered))
}

/// What a realm needs from the server to run, beside its own storage.
#[derive(Clone)]
pub struct RealmRuntime {
    /// Take a snapshot after this many WAL records (`--snapshot-every`).
    pub snapshot_every: u64,
    /// The clock of decisions and reads.
    pub clock: Arc<dyn Clock>,
    /// The server's public URL.
    pub server_url: Arc<str>,
}

/// Starts a recovered realm: its event hub (with the message store's flags and the
/// stored presence attached) and its actor on `arbiter`.
pub fn start(
    store: &Store,
    subdomain: &str,
    realm_store: RealmStore,
    recovered: Recovered,
    arbiter: &ArbiterHandle,
    runtime: &RealmRuntime,
) -> Result<RealmHandle, StorageError> {
    let clock = runtime.clock.clone();
    let hub = Arc::new(EventHub::new(
        clock.clone(),
        Arc::new(recovered.realm.clone()),
    ));
    let messages = realm_store.messages().clone();
    // Its search index opens (or is rebuilt) on its own thread from now on.
    messages.start_search_index();
    let rows = messages.clone();
    hub.attach_flags(Arc::new(move |user, id| {
        rows.flags(user, id).unwrap_or_else(|e| {
            tracing::error!("message store read failed: {e}");
            None
        })
    }));
    let rows = messages.clone();
    hub.attach_rows(Arc::new(move |id| {
        rows.get(id).unwrap_or_else(|e| {
            tracing::error!("message store read failed: {e}");
            None
        })
    }));
    // A decision becomes visible only once its message rows are written.
    let written = messages.clone();
    hub.bound_release(Arc::new(move || written.projected_upto()));
    let presence = store.presence(subdomain);
    hub.presence().attach(presence.clone(), presence.load()?);
    let actor = RealmActor::new(
        recovered.realm,
        realm_store,
        clock.clone(),
        hub.clone(),
        runtime.snapshot_every,
        recovered.replayed,
    );
    let addr = RealmActor::start_in_arbiter(arbiter, move |_| actor);
    Ok(RealmHandle {
        client: RealmClient::new(addr, hub.clone(), store.clone(), messages.clone()),
        hub,
        clock,
        server_url: runtime.server_url.clone(),
        messages: MessageRowsHandle::new(Arc::new(messages)),
    })
}
