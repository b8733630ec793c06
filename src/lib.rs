//! hearth: a team-chat server that speaks the Zulip REST API.
//!
//! # Layout
//!
//! - `api/`: HTTP only. Parses Zulip-style parameters and credentials, authenticates
//!   against the published version, runs reads on the worker (`read`, `read_large`) or
//!   sends a write's rule to the realm actor (`call`), renders the reply. One file per
//!   resource group.
//! - `realm/`: the domain, plain Rust. `decide_*` validates and returns `Change`s,
//!   `view_*` reads, `apply` turns changes into state and cannot fail. Its collections
//!   are structurally shared (`imbl`), so a version is cheap to take.
//! - `actor.rs`: one actix actor per realm, the only writer: runs write rules, appends
//!   to the WAL, applies, stages versions; starts background snapshots.
//! - `events.rs`: what readers see: the published version (visible once durable), the
//!   event log (rendered off the actor), client queues, long-polls.
//! - `storage/`: sled WAL with group commit, snapshots, the versioned codec; uploaded
//!   files, attachments and custom emoji images, one folder per realm
//!   (`storage::uploads`); the manifest and the integrity checks of start-up,
//!   `hearth check` and `hearth recover` (`storage::manifest`, `storage::integrity`).
//! - `presence.rs`: who is online, soft state beside the event hub: pings update it on
//!   the HTTP workers, never through the actor or the WAL; written coalesced, at most
//!   once a minute, to the realm's presence tree.
//! - `registry.rs`: Host -> realm actor.
//! - `passwords.rs`: argon2 hashing and verifying on a few threads, bounded in memory.
//! - `push_relay.rs`: the push relay client (E2EE mobile notifications).
//! - `config.rs`: the command line.
//! - `logging.rs`: log set-up and the one-line-per-request middleware.
//! - `backup.rs`: `hearth backup` and `hearth restore`.
//!
//! A write travels: handler (authenticate) -> actor (`decide`, WAL append, `apply`,
//! stage) -> handler awaits the flush that covers it -> release (the version becomes
//! visible, events go to the renderer) -> answer. A read never reaches the actor.
//! Nothing answered `success` is lost on `kill -9` in the default `always` mode, and
//! nothing is visible to anyone before it is durable.

// The register state is one large `json!` literal.
#![recursion_limit = "256"]

pub mod actor;
pub mod api;
pub mod backup;
pub mod config;
pub mod error;
pub mod events;
pub mod limits;
pub mod logging;
pub mod metrics;
pub mod passwords;
pub mod presence;
pub mod push_relay;
pub mod realm;
pub mod registry;
pub mod storage;
pub mod wire;

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;

use actix::{Actor, Arbiter};
use actix_web::{dev::ServerHandle, web};

use crate::actor::{create_realm, RealmActor, RealmClient, TakeSnapshot};
use crate::api::AppState;
use crate::config::ServeConfig;
use crate::events::EventHub;
use crate::realm::{dev, Clock, Cx, SystemClock};
use crate::registry::{RealmHandle, Registry};
use crate::storage::{DurabilityMode, StorageError, Store};

/// The Zulip API feature level hearth implements.
pub const ZULIP_FEATURE_LEVEL: u32 = 420;
/// The version string hearth reports in `zulip_version`.
pub const ZULIP_VERSION: &str = concat!("11.0-hearth-", env!("CARGO_PKG_VERSION"));
/// Subdomain of the development realm.
pub const DEV_SUBDOMAIN: &str = "zulip";
/// Realm actors run on this many arbiter threads.
const REALM_ARBITERS: usize = 2;

/// Why the server, or a command on its data folder, could not start. Each message is
/// one line that names what it is about, for the operator.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("storage: {0}")]
    Storage(storage::StorageError),
    /// The data folder does not hold what its manifest says (see `storage`).
    #[error("{0}")]
    Damaged(Box<storage::Damage>),
    #[error("{0}")]
    Realm(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("data folder {path}: {cause}")]
    DataFolder { path: String, cause: String },
    #[error("data folder {0} is in use by another hearth process; stop it first")]
    Locked(String),
    #[error(
        "no realm in {0}: create one with `hearth realm create --subdomain S --name NAME \
         --owner-email E`, or run `hearth serve --dev` for the development realm"
    )]
    NoRealm(String),
    #[error("{0}")]
    Backup(String),
}

impl From<StorageError> for StartError {
    fn from(e: StorageError) -> StartError {
        match e {
            StorageError::Damaged(d) => StartError::Damaged(d),
            e => StartError::Storage(e),
        }
    }
}

impl StartError {
    fn data_folder(path: &Path, cause: impl ToString) -> StartError {
        StartError::DataFolder {
            path: path.display().to_string(),
            cause: cause.to_string(),
        }
    }
}

/// Whether a database error is sled's "the folder is locked by another process".
pub(crate) fn is_lock_error(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.to_string().contains("could not acquire lock"))
}

/// Names the folder in a sled open error: locked, or why it cannot be used.
pub(crate) fn open_error(path: &Path, e: sled::Error) -> StartError {
    if is_lock_error(&e) {
        StartError::Locked(path.display().to_string())
    } else if let sled::Error::Io(io) = &e {
        StartError::data_folder(path, io)
    } else {
        StartError::data_folder(path, e)
    }
}

/// Opens (creating it if needed) the data folder. Returns the store and whether this
/// call created the folder, so that a failed start can remove what it made.
pub fn open_data_folder(path: &Path, mode: DurabilityMode) -> Result<(Store, bool), StartError> {
    if path.exists() && !path.is_dir() {
        return Err(StartError::data_folder(path, "not a folder"));
    }
    let created = !path.exists();
    std::fs::create_dir_all(path).map_err(|e| StartError::data_folder(path, e))?;
    match Store::open(path, mode) {
        Ok(store) => Ok((store, created)),
        Err(e) => {
            if created {
                let _ = std::fs::remove_dir_all(path);
            }
            Err(match e {
                StorageError::Sled(e) => open_error(path, e),
                StorageError::Damaged(d) => StartError::Damaged(d),
                other => StartError::data_folder(path, other),
            })
        }
    }
}

/// Closes a store and removes the data folder a failed start created.
fn discard_new_folder(store: Store, path: &Path) {
    store.durability.shutdown();
    drop(store);
    if let Err(e) = std::fs::remove_dir_all(path) {
        tracing::warn!("cannot remove {}: {e}", path.display());
    }
}

/// A running server.
pub struct Running {
    /// The address it listens on (the real port when started on port 0).
    pub addr: SocketAddr,
    /// The metrics listener's address and server, when `--metrics-bind` is not `off`.
    metrics: Option<(SocketAddr, ServerHandle)>,
    handle: ServerHandle,
    /// Ends idle connections when the server stops.
    closer: wire::Closer,
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

    /// `http://addr/metrics` of the metrics listener, unless it is off.
    pub fn metrics_url(&self) -> Option<String> {
        self.metrics
            .as_ref()
            .map(|(a, _)| format!("http://{a}/metrics"))
    }

    /// Snapshots every realm, flushes, stops the HTTP server (SIGTERM / SIGINT).
    pub async fn shutdown(self) {
        for realm in self.state.registry.all() {
            realm.hub.close();
        }
        for realm in self.state.registry.all() {
            match realm.client.addr().send(TakeSnapshot).await {
                Ok(Err(e)) => tracing::error!("shutdown snapshot impossible: {e}"),
                Ok(Ok((job, version))) => match web::block(move || job.run(&version)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::error!("shutdown snapshot failed: {e}"),
                    Err(e) => tracing::error!("shutdown snapshot failed: {e}"),
                },
                Err(e) => tracing::error!("realm actor gone at shutdown: {e}"),
            }
        }
        self.closer.close();
        self.handle.stop(true).await;
        if let Some((_, metrics)) = &self.metrics {
            metrics.stop(true).await;
        }
        // Presence is written coalesced, in the background: the last changes now that no
        // ping can come.
        for realm in self.state.registry.all() {
            let presence = realm.hub.presence().clone();
            match web::block(move || presence.flush()).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::error!("presence not saved at shutdown: {e}"),
                Err(e) => tracing::error!("presence not saved at shutdown: {e}"),
            }
        }
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
        self.state.registry.for_host(host).map(|r| r.client.addr().clone())
    }

    /// The server's flusher and database (tests and tooling: failure state, snapshot
    /// counts).
    pub fn durability(&self) -> Arc<storage::Durability> {
        self.store.durability.clone()
    }

    /// Sweeps unclaimed uploads now (tests; the server does it hourly); returns how many
    /// attachments were deleted.
    pub async fn sweep_uploads(&self) -> usize {
        api::attachments::sweep_uploads(&self.state).await
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
    // Listen first: a busy port must not leave a new, empty data folder behind.
    let bind_error = |source| StartError::Bind {
        addr: config.bind,
        source,
    };
    let push_relay = match &config.push_relay_url {
        Some(url) => Some(Arc::new(
            push_relay::PushRelay::new(url).map_err(StartError::Realm)?,
        )),
        None => None,
    };
    let listener = TcpListener::bind(config.bind).map_err(bind_error)?;
    let addr = listener.local_addr().map_err(bind_error)?;
    let metrics_listener = match config.metrics_bind.0 {
        Some(at) => {
            let error = |source| StartError::Bind { addr: at, source };
            let l = TcpListener::bind(at).map_err(error)?;
            let bound = l.local_addr().map_err(error)?;
            Some((l, bound))
        }
        None => None,
    };
    let opening = std::time::Instant::now();
    let (store, created) = open_data_folder(&config.data, config.durability_mode())?;
    let opened_in = opening.elapsed();
    // The address actually bound (port 0 becomes the real port).
    let url: Arc<str> = config
        .url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}"))
        .into();

    // A realm the manifest names must be there: never seed a new one in its place.
    store.verify_realms()?;
    let uploads = Arc::new(storage::uploads::UploadStore::new(&config.data));
    let mut subdomains = store.realm_subdomains();
    if config.dev && !subdomains.iter().any(|s| s == DEV_SUBDOMAIN) {
        let mut realm_store = store.realm(DEV_SUBDOMAIN)?;
        let changes = dev::seed_changes(&mut Cx::new(&*clock)).map_err(StartError::Realm)?;
        // The emoji images first: the realm's records name them.
        for (_, bytes, _) in dev::DEV_EMOJI_IMAGES {
            uploads
                .put(DEV_SUBDOMAIN, bytes)
                .map_err(|e| StartError::data_folder(&config.data, e))?;
        }
        create_realm(&mut realm_store, &changes).map_err(StartError::Realm)?;
        tracing::info!("seeded the development realm");
        subdomains.push(DEV_SUBDOMAIN.to_owned());
    }
    if subdomains.is_empty() {
        if created {
            discard_new_folder(store, &config.data);
        }
        return Err(StartError::NoRealm(config.data.display().to_string()));
    }
    tracing::info!(
        "opened the data folder {} in {} ms",
        config.data.display(),
        opened_in.as_millis()
    );

    let arbiters: Vec<Arbiter> = (0..REALM_ARBITERS).map(|_| Arbiter::new()).collect();
    let registry = Registry::default();
    // Emoji images an earlier hearth stored outside the realms' folders: the files each
    // realm's emoji name, moved into its folder before anything is served.
    let legacy_uploads = uploads.has_legacy_files();
    let mut emoji_images = Vec::new();
    for (i, subdomain) in subdomains.iter().enumerate() {
        let recovering = std::time::Instant::now();
        let mut realm_store = store.realm(subdomain)?;
        let recovered = realm_store.recover()?.ok_or_else(|| {
            StartError::Damaged(Box::new(storage::Damage {
                folder: config.data.clone(),
                realm: Some(subdomain.clone()),
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
        if legacy_uploads {
            emoji_images.push((subdomain.clone(), recovered.realm.emoji.image_shas()));
        }
        let hub = Arc::new(EventHub::new(
            clock.clone(),
            Arc::new(recovered.realm.clone()),
        ));
        let messages = realm_store.messages().clone();
        let rows = messages.clone();
        hub.attach_flags(Arc::new(move |user, id| {
            rows.flags(user, id).unwrap_or_else(|e| {
                tracing::error!("message store read failed: {e}");
                None
            })
        }));
        let presence = store.presence(subdomain);
        hub.presence().attach(presence.clone(), presence.load()?);
        let actor = RealmActor::new(
            recovered.realm,
            realm_store,
            clock.clone(),
            hub.clone(),
            config.snapshot_every,
            recovered.replayed,
        );
        let addr =
            RealmActor::start_in_arbiter(&arbiters[i % arbiters.len()].handle(), move |_| actor);
        registry.insert(
            subdomain,
            RealmHandle {
                client: RealmClient::new(addr, hub.clone(), store.durability.clone()),
                hub,
                clock: clock.clone(),
                server_url: url.clone(),
                messages,
            },
        );
    }

    if legacy_uploads {
        let moved = uploads
            .migrate_legacy(&emoji_images)
            .map_err(|e| StartError::data_folder(&config.data, e))?;
        tracing::info!(
            "moved the emoji images of the old layout into the realms' folders: {} copied, \
             {} old files removed",
            moved.copied,
            moved.removed
        );
    }

    // What start-up read is the durable state now: the manifest says so.
    store.write_manifest()?;

    let state = web::Data::new(AppState {
        registry,
        durability: store.durability.clone(),
        dev: config.dev,
        uploads: Arc::new(api::attachments::Uploads::new(
            uploads,
            config.max_file_upload_size_mib,
            config.upload_sweep_days,
        )),
        push_relay,
        rate_limits: Arc::new(limits::RateLimiter::new(
            config.rate_limited(),
            config.rate_limit_per_user,
            config.rate_limit_per_ip,
        )),
    });
    let closer = wire::Closer::default();
    let mut net_limits = config.net_limits();
    net_limits.max_connections = wire::fit_to_open_files(net_limits.max_connections);
    let server = wire::start(
        listener,
        state.clone(),
        net_limits,
        config.workers,
        closer.clone(),
    )
    .map_err(|source| StartError::Bind { addr, source })?;
    let handle = server.handle();
    actix_web::rt::spawn(server);
    let metrics_server = match metrics_listener {
        Some((listener, bound)) => {
            let metrics_state = state.clone();
            let server = actix_web::HttpServer::new(move || {
                actix_web::App::new()
                    .app_data(metrics_state.clone())
                    .route("/metrics", web::get().to(metrics::metrics))
            })
            .disable_signals()
            .workers(1)
            .listen(listener)
            .map_err(|source| StartError::Bind {
                addr: bound,
                source,
            })?
            .run();
            let metrics_handle = server.handle();
            actix_web::rt::spawn(server);
            tracing::info!("metrics on http://{bound}/metrics");
            Some((bound, metrics_handle))
        }
        None => None,
    };
    spawn_release_task(&state);
    if config.tick {
        spawn_upload_sweeper(&state);
    }
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
                    // No request handler releases a delivery: the release task does
                    // (woken again by the actor if the ticket was visible before it
                    // was staged).
                    realm.client.addr().do_send(actor::DeliverScheduled);
                }
            }
        });
    }
    Ok(Running {
        addr,
        metrics: metrics_server,
        handle,
        closer,
        state,
        store,
        _arbiters: arbiters,
    })
}

/// Sweeps unclaimed uploads once an hour (the first right away).
fn spawn_upload_sweeper(state: &web::Data<AppState>) {
    // Weak: the task ends with the server instead of keeping its state alive.
    let weak = Arc::downgrade(&state.clone().into_inner());
    actix_web::rt::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(3600));
        loop {
            every.tick().await;
            let Some(state) = weak.upgrade() else { break };
            let swept = api::attachments::sweep_uploads(&state).await;
            if swept > 0 {
                tracing::info!("swept {swept} unclaimed uploads");
            }
        }
    });
}

/// Makes decisions visible as soon as they are durable, also those whose handler is
/// gone (a client that disconnected while its write was being flushed). Handlers release
/// their own decision before answering, so this is only the safety net.
fn spawn_release_task(state: &web::Data<AppState>) {
    let mut visible = state.durability.subscribe_visible();
    // Weak: the task ends with the server instead of keeping its state alive.
    let weak = Arc::downgrade(&state.clone().into_inner());
    actix_web::rt::spawn(async move {
        while visible.changed().await.is_ok() {
            let upto = *visible.borrow_and_update();
            let Some(state) = weak.upgrade() else { break };
            for realm in state.registry.all() {
                realm.hub.release(upto);
            }
        }
    });
}

/// `hearth realm create`: creates a production realm and its owner in `data`.
/// Returns the owner's API key and user id.
pub fn create_production_realm(c: &config::CreateRealm) -> Result<(String, u64), StartError> {
    // Arguments first: a refused command leaves no data folder behind.
    if !realm::users::email_is_valid(&c.owner_email) {
        return Err(StartError::Realm(format!(
            "'{}' is not a valid email address",
            c.owner_email
        )));
    }
    if let Some(pw) = &c.owner_password {
        if !realm::users::password_is_strong(pw) {
            return Err(StartError::Realm(format!(
                "the owner password is too weak: use at least {} characters that are hard \
                 to guess (a few unrelated words, not a common word or pattern)",
                realm::users::PASSWORD_MIN_LENGTH
            )));
        }
    }
    let (store, _) = open_data_folder(&c.data, DurabilityMode::Always)?;
    store.verify_realms()?;
    if store.realm_subdomains().iter().any(|s| s == &c.subdomain) {
        return Err(StartError::Realm(format!(
            "realm '{}' already exists in {}",
            c.subdomain,
            c.data.display()
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
