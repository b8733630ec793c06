//! hearth: a team-chat server that speaks the Zulip REST API.
//!
//! # Layout
//!
//! - `api/`: HTTP only. Parses Zulip-style parameters and credentials, sends one rule to
//!   the realm actor, renders the reply. One file per resource group.
//! - `realm/`: the domain, plain Rust. `decide_*` validates and returns `Change`s,
//!   `view_*` reads, `apply` turns changes into state and cannot fail.
//! - `actor.rs`: one actix actor per realm; authenticates, runs rules, owns the WAL.
//! - `events.rs`: event queues: the realm's event log, client queues, long-polls.
//! - `storage/`: sled WAL with group commit, snapshots, the versioned codec.
//! - `registry.rs`: Host -> realm actor.
//! - `passwords.rs`: argon2 hashing and verifying on a few threads, bounded in memory.
//! - `config.rs`: the command line.
//!
//! A write travels: handler -> actor (`decide`, WAL append, `apply`) -> handler awaits
//! the flush that covers it -> answer. Nothing answered `success` is lost on `kill -9`
//! in the default `always` durability mode.

// The register state is one large `json!` literal.
#![recursion_limit = "256"]

pub mod actor;
pub mod api;
pub mod config;
pub mod error;
pub mod events;
pub mod passwords;
pub mod realm;
pub mod registry;
pub mod storage;

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use actix::{Actor, Arbiter};
use actix_web::{dev::ServerHandle, web, App, HttpServer};

use crate::actor::{create_realm, RealmActor, TakeSnapshot};
use crate::api::AppState;
use crate::config::ServeConfig;
use crate::events::EventHub;
use crate::realm::{dev, Clock, Cx, SystemClock};
use crate::registry::{RealmHandle, Registry};
use crate::storage::Store;

/// The Zulip API feature level hearth implements.
pub const ZULIP_FEATURE_LEVEL: u32 = 420;
/// The version string hearth reports in `zulip_version`.
pub const ZULIP_VERSION: &str = concat!("11.0-hearth-", env!("CARGO_PKG_VERSION"));
/// Subdomain of the development realm.
pub const DEV_SUBDOMAIN: &str = "zulip";
/// Realm actors run on this many arbiter threads.
const REALM_ARBITERS: usize = 2;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("storage: {0}")]
    Storage(#[from] storage::StorageError),
    #[error("{0}")]
    Realm(String),
    #[error("cannot listen: {0}")]
    Io(#[from] std::io::Error),
    #[error(
        "no realm in {0}: create one with `hearth realm create --subdomain S --name NAME \
         --owner-email E`, or run `hearth serve --dev` for the development realm"
    )]
    NoRealm(String),
}

/// A running server.
pub struct Running {
    /// The address it listens on (the real port when started on port 0).
    pub addr: SocketAddr,
    handle: ServerHandle,
    state: web::Data<AppState>,
    store: Store,
    /// Keeps the realm arbiters alive as long as the server.
    _arbiters: Vec<Arbiter>,
}

impl Running {
    /// `http://addr`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Snapshots every realm, flushes, stops the HTTP server (SIGTERM / SIGINT).
    pub async fn shutdown(self) {
        for realm in self.state.registry.all() {
            realm.hub.close();
        }
        for realm in self.state.registry.all() {
            match realm.addr.send(TakeSnapshot).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::error!("shutdown snapshot failed: {e}"),
                Err(e) => tracing::error!("realm actor gone at shutdown: {e}"),
            }
        }
        self.handle.stop(true).await;
        // Actors own their realm's storage: wait until they are gone, so the database
        // is released when this returns (a restart in the same process can reopen it).
        for arbiter in self._arbiters {
            arbiter.stop();
            if arbiter.join().is_err() {
                tracing::error!("a realm arbiter panicked");
            }
        }
        let durability = self.store.durability.clone();
        durability.shutdown();
        drop(self.state);
        drop(self.store);
        // HTTP workers drop their copy of the app state shortly after they stop.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while Arc::strong_count(&durability) > 1 && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        if Arc::strong_count(&durability) > 1 {
            tracing::warn!("the database is still in use after shutdown");
        }
    }

    /// The realm actor serving `host` (tests, tooling).
    pub fn realm(&self, host: &str) -> Option<actix::Addr<RealmActor>> {
        self.state.registry.for_host(host).map(|r| r.addr)
    }

    /// The event hub of the realm serving `host` (tests drive its ticker by hand).
    pub fn hub(&self, host: &str) -> Option<Arc<EventHub>> {
        self.state.registry.for_host(host).map(|r| r.hub)
    }
}

/// Opens the data folder, recovers or seeds realms, starts the actors and the HTTP
/// server. Must run inside an actix `System`.
pub async fn spawn(config: ServeConfig) -> Result<Running, StartError> {
    spawn_with_clock(config, Arc::new(SystemClock)).await
}

/// As `spawn`, with an injected clock (tests).
pub async fn spawn_with_clock(
    config: ServeConfig,
    clock: Arc<dyn Clock>,
) -> Result<Running, StartError> {
    std::fs::create_dir_all(&config.data)?;
    let store = Store::open(&config.data, config.durability_mode())?;
    let listener = TcpListener::bind(config.bind)?;
    let addr = listener.local_addr()?;
    // The address actually bound (port 0 becomes the real port).
    let url: Arc<str> = config
        .url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}"))
        .into();

    let mut subdomains = store.realm_subdomains();
    if config.dev && !subdomains.iter().any(|s| s == DEV_SUBDOMAIN) {
        let mut realm_store = store.realm(DEV_SUBDOMAIN)?;
        let changes = dev::dev_realm_changes(&mut Cx::new(&*clock)).map_err(StartError::Realm)?;
        create_realm(&mut realm_store, &changes).map_err(StartError::Realm)?;
        tracing::info!("seeded the development realm");
        subdomains.push(DEV_SUBDOMAIN.to_owned());
    }
    if subdomains.is_empty() {
        return Err(StartError::NoRealm(config.data.display().to_string()));
    }

    let arbiters: Vec<Arbiter> = (0..REALM_ARBITERS).map(|_| Arbiter::new()).collect();
    let registry = Registry::default();
    for (i, subdomain) in subdomains.iter().enumerate() {
        let mut realm_store = store.realm(subdomain)?;
        let recovered = realm_store
            .recover()?
            .ok_or_else(|| StartError::Realm(format!("realm '{subdomain}' has no history")))?;
        tracing::info!(
            "realm '{subdomain}': {} users, {} WAL records replayed, {} cut",
            recovered.realm.users.len(),
            recovered.replayed,
            recovered.cut
        );
        let hub = Arc::new(EventHub::new(clock.clone()));
        let actor = RealmActor::new(
            recovered.realm,
            realm_store,
            clock.clone(),
            hub.clone(),
            url.clone(),
            config.snapshot_every,
        );
        let addr =
            RealmActor::start_in_arbiter(&arbiters[i % arbiters.len()].handle(), move |_| actor);
        registry.insert(subdomain, RealmHandle { addr, hub });
    }

    let state = web::Data::new(AppState {
        registry,
        durability: store.durability.clone(),
        dev: config.dev,
    });
    let app_state = state.clone();
    let mut server = HttpServer::new(move || {
        App::new()
            .app_data(app_state.clone())
            .wrap(tracing_actix())
            .configure(api::routes)
    })
    .disable_signals()
    .listen(listener)?;
    if let Some(workers) = config.workers {
        server = server.workers(workers);
    }
    let server = server.run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    if config.tick {
        // Weak: the ticker ends with the server instead of keeping its state alive.
        let ticking = Arc::downgrade(&state.clone().into_inner());
        actix_web::rt::spawn(async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(1));
            loop {
                every.tick().await;
                let Some(state) = ticking.upgrade() else {
                    break;
                };
                for realm in state.registry.all() {
                    realm.hub.tick();
                }
            }
        });
    }
    Ok(Running {
        addr,
        handle,
        state,
        store,
        _arbiters: arbiters,
    })
}

/// Request logging at debug level (`RUST_LOG=hearth=debug`).
fn tracing_actix() -> actix_web::middleware::Logger {
    actix_web::middleware::Logger::new("%r %s %Dms").log_target("hearth::http")
}

/// `hearth realm create`: creates a production realm and its owner in `data`.
/// Returns the owner's API key and user id.
pub fn create_production_realm(c: &config::CreateRealm) -> Result<(String, u64), StartError> {
    std::fs::create_dir_all(&c.data)?;
    let store = Store::open(&c.data, storage::DurabilityMode::Always)?;
    if store.realm_subdomains().iter().any(|s| s == &c.subdomain) {
        return Err(StartError::Realm(format!(
            "realm '{}' already exists",
            c.subdomain
        )));
    }
    if !realm::users::email_is_valid(&c.owner_email) {
        return Err(StartError::Realm(format!(
            "'{}' is not a valid email address",
            c.owner_email
        )));
    }
    let password_hash = match &c.owner_password {
        Some(pw) => Some(realm::users::hash_password(pw).map_err(|e| StartError::Realm(e.msg))?),
        None => None,
    };
    let name = c.owner_name.clone().unwrap_or_else(|| {
        c.owner_email
            .split('@')
            .next()
            .unwrap_or_default()
            .to_owned()
    });
    let clock = SystemClock;
    let mut cx = Cx::new(&clock);
    let settings = realm::RealmSettings {
        name: c.name.clone(),
        subdomain: c.subdomain.clone(),
        url: c.url.clone(),
        dev: false,
        email_visibility: realm::EmailVisibility::Everyone,
        fake_email_domain: "hearth.invalid".into(),
        empty_topic_display_name: "general chat".into(),
        date_created: cx.now_secs(),
    };
    let changes = dev::new_realm_changes(settings, &c.owner_email, &name, password_hash, &mut cx);
    let mut realm_store = store.realm(&c.subdomain)?;
    let realm = create_realm(&mut realm_store, &changes).map_err(StartError::Realm)?;
    store.durability.shutdown();
    let owner = realm
        .user_by_delivery_email(&c.owner_email)
        .ok_or_else(|| StartError::Realm("owner missing after creation".into()))?;
    Ok((owner.api_key.clone(), owner.id))
}
