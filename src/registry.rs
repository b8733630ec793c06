//! The realm registry: Host -> realm actor and event hub.

use std::sync::Arc;

use dashmap::DashMap;

use crate::actor::RealmClient;
use crate::hub::EventHub;
use crate::realm::Clock;

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
}

impl Registry {
    pub fn insert(&self, subdomain: &str, handle: RealmHandle) {
        self.realms.insert(subdomain.to_owned(), handle);
    }

    /// The realm for a host name: the only realm when there is one; else the realm whose
    /// subdomain is the host's first label; else the root realm (subdomain "").
    pub fn for_host(&self, host: &str) -> Option<RealmHandle> {
        if self.realms.len() == 1 {
            return self.realms.iter().next().map(|e| e.value().clone());
        }
        let label = host.split('.').next().unwrap_or_default();
        self.realms
            .get(label)
            .or_else(|| self.realms.get(""))
            .map(|e| e.value().clone())
    }

    /// The subdomain of the realm `for_host` picks (the request log).
    pub fn subdomain_for_host(&self, host: &str) -> Option<String> {
        if self.realms.len() == 1 {
            return self.realms.iter().next().map(|e| e.key().clone());
        }
        let label = host.split('.').next().unwrap_or_default();
        [label, ""]
            .into_iter()
            .find(|s| self.realms.contains_key(*s))
            .map(str::to_owned)
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
