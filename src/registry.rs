//! The realm registry: Host -> realm actor.

use actix::Addr;
use dashmap::DashMap;

use crate::actor::RealmActor;

/// Every realm this server serves, by subdomain.
#[derive(Default)]
pub struct Registry {
    realms: DashMap<String, Addr<RealmActor>>,
}

impl Registry {
    pub fn insert(&self, subdomain: &str, addr: Addr<RealmActor>) {
        self.realms.insert(subdomain.to_owned(), addr);
    }

    /// The realm for a host name: the only realm when there is one; else the realm whose
    /// subdomain is the host's first label; else the root realm (subdomain "").
    pub fn for_host(&self, host: &str) -> Option<Addr<RealmActor>> {
        if self.realms.len() == 1 {
            return self.realms.iter().next().map(|e| e.value().clone());
        }
        let label = host.split('.').next().unwrap_or_default();
        self.realms.get(label).or_else(|| self.realms.get("")).map(|e| e.value().clone())
    }

    /// Every realm actor (shutdown snapshots).
    pub fn all(&self) -> Vec<Addr<RealmActor>> {
        self.realms.iter().map(|e| e.value().clone()).collect()
    }

    pub fn len(&self) -> usize {
        self.realms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.realms.is_empty()
    }
}
