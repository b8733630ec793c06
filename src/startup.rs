//! Start-up: from a `ServeConfig` to a running server, in named steps: lock an existing
//! data folder (`lock_existing_folder`), bind the listeners (`bind`), open the storage
//! (`open_storage`: the data folder, its realms, the development realm seeded when
//! asked), recover every realm and start its actor (`start_realms`), start the HTTP
//! server (`start_http`), the metrics listener (`start_metrics`) and the admin listener
//! (`start_admin`, see `crate::admin`), and the background
//! tasks (`start_tasks`: the release safety net, the upload sweeper, the one-second
//! ticker). `Running` stops it all again.
//!
//! Each failure is a `StartError`, one line for the operator; a data folder the start
//! created is removed again when there turns out to be no realm to serve.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use actix::Arbiter;
use actix_web::{dev::ServerHandle, web};

use crate::actor::{create_realm, DeliverScheduled, RealmActor, TakeSnapshot};
use crate::admin::{self, AdminState};
use crate::api::middleware::logging::AccessLogPolicy;
use crate::api::middleware::metrics::metrics;
use crate::api::{attachments, wire, AppState};
use crate::config::ServeConfig;
use crate::hub::EventHub;
use crate::limits::RateLimiter;
use crate::mail::{MailQueue, Mailer, QUEUE_CAPACITY};
use crate::push_relay::PushRelay;
use crate::realm::{dev, Clock, Cx, SystemClock};
use crate::registry::{self, RealmRuntime, Registry};
use crate::storage::uploads::UploadStore;
use crate::storage::{self, DurabilityMode, FolderError, StorageError, Store};
use crate::version::DEV_SUBDOMAIN;

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
    /// `listener` names the listener and its flag: "metrics listener (--metrics-bind)".
    #[error("{listener} cannot listen on {addr}: {source}")]
    Bind {
        listener: &'static str,
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
    /// `--dev` on a folder that holds a realm `realm create` made.
    #[error(
        "data folder {path} holds realm '{subdomain}', which is not the development realm: \
         --dev turns rate limits off and hands out API keys without a password, so it \
         serves a folder of its own; \
         give it another folder (--data ./dev-data), or serve this one without --dev"
    )]
    DevBesideProduction { path: String, subdomain: String },
}

impl From<StorageError> for StartError {
    fn from(e: StorageError) -> StartError {
        match e {
            StorageError::Damaged(d) => StartError::Damaged(d),
            e => StartError::Storage(e),
        }
    }
}

impl From<FolderError> for StartError {
    fn from(e: FolderError) -> StartError {
        match e {
            FolderError::Locked(path) => StartError::Locked(path),
            FolderError::Unusable { path, cause } => StartError::DataFolder { path, cause },
        }
    }
}

impl StartError {
    pub(crate) fn data_folder(path: &Path, cause: impl ToString) -> StartError {
        FolderError::unusable(path, cause).into()
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
                StorageError::Sled(e) => storage::open_error(path, e).into(),
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
    /// The admin listener's address and server, when `--admin-bind` is not `off`.
    admin: Option<(SocketAddr, ServerHandle)>,
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

    /// `http://addr` of the admin listener, unless it is off.
    pub fn admin_url(&self) -> Option<String> {
        self.admin.as_ref().map(|(a, _)| format!("http://{a}"))
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
        if let Some((_, admin)) = &self.admin {
            admin.stop(true).await;
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
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while Arc::strong_count(&durability) > 1 && Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        if Arc::strong_count(&durability) > 1 {
            tracing::warn!("the database is still in use after shutdown");
        }
    }

    /// The realm actor serving `host` (tests, tooling).
    pub fn realm(&self, host: &str) -> Option<actix::Addr<RealmActor>> {
        self.state
            .registry
            .for_host(host)
            .map(|r| r.client.addr().clone())
    }

    /// The server's flusher and database (tests and tooling: failure state, snapshot
    /// counts).
    pub fn durability(&self) -> Arc<storage::Durability> {
        self.store.durability.clone()
    }

    /// The server's store (tests and tooling: an online export).
    pub fn store(&self) -> Store {
        self.store.clone()
    }

    /// The message database (tests and tooling: waiting for its opening).
    pub fn message_db(&self) -> Arc<storage::messages::MessageDb> {
        self.store.message_db().clone()
    }

    /// Sweeps unclaimed uploads now (tests; the server does it hourly); returns how many
    /// attachments were deleted.
    pub async fn sweep_uploads(&self) -> usize {
        attachments::sweep_uploads(&self.state).await
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
    let push_relay = match &config.push_relay_url {
        Some(url) => Some(Arc::new(PushRelay::new(url).map_err(StartError::Realm)?)),
        None => None,
    };
    let mailer = match &config.smtp_url {
        Some(url) => Some(Arc::new(
            Mailer::smtp(url, config.smtp_from.clone()).map_err(StartError::Realm)?,
        )),
        None if config.dev => Some(Arc::new(Mailer::log_only(config.smtp_from.clone()))),
        None => None,
    }
    .map(|m| MailQueue::start(m, QUEUE_CAPACITY));
    // An existing data folder is opened (locked) before listening: a second server on a
    // folder in use is told so even when its ports are taken too. A new folder is
    // created only once the listeners are bound: a busy port leaves none behind.
    let locked = lock_existing_folder(&config)?;
    let bound = match bind(&config) {
        Ok(bound) => bound,
        Err(e) => {
            if let Some((store, _)) = locked {
                store.durability.shutdown();
            }
            return Err(e);
        }
    };
    let opened = open_storage(&config, &*clock, locked)?;
    // The address actually bound (port 0 becomes the real port).
    let url: Arc<str> = config
        .url
        .clone()
        .unwrap_or_else(|| format!("http://{}", bound.addr))
        .into();
    warn_if_private_url(&url, config.dev);
    let runtime = RealmRuntime {
        snapshot_every: config.snapshot_every,
        clock,
        server_url: url,
    };
    let (registry, arbiters) = start_realms(&config, &opened, &runtime)?;
    let Opened { store, uploads, .. } = opened;
    // A realm frozen for a move before a restart is frozen again before the first
    // request can reach its actor (its mailbox takes this message first).
    for subdomain in store.frozen_realms() {
        if let Some(handle) = registry.get(&subdomain) {
            handle.client.addr().do_send(crate::actor::Freeze(true));
            tracing::info!("realm '{subdomain}': still frozen (a move out is under way)");
        }
    }
    // What start-up read is the durable state now: the manifest says so.
    store.write_manifest()?;

    let state = web::Data::new(AppState {
        registry,
        health: store.durability.clone(),
        dev: config.dev,
        webhook_allow_private: config.webhook_allow_private,
        owner_notices: Default::default(),
        uploads: Arc::new(attachments::Uploads::new(
            uploads.clone(),
            config.max_file_upload_size_mib,
            config.upload_sweep_days,
        )),
        tus: Default::default(),
        push_relay,
        mailer,
        rate_limits: Arc::new(RateLimiter::new(
            config.rate_limited(),
            config.rate_limit_per_user,
            config.rate_limit_per_ip,
        )),
        trusted_proxies: config.trusted_proxies.clone().into(),
        access_log: AccessLogPolicy {
            mode: config.access_log,
            slow: std::time::Duration::from_millis(config.slow_request_ms),
        },
    });
    let (handle, closer) = start_http(&config, bound.api, bound.addr, &state)?;
    let metrics = start_metrics(bound.metrics, &state)?;
    let admin = match bound.admin {
        Some(listener) => {
            let token = admin::write_token(&config.data)
                .map_err(|e| StartError::data_folder(&config.data, e))?;
            let admin_state = web::Data::new(AdminState::new(
                state.clone(),
                store.clone(),
                arbiters.iter().map(|a| a.handle()).collect(),
                runtime,
                uploads,
                token,
            ));
            let addr = listener.local_addr().ok();
            Some(
                admin::start(listener, admin_state).map_err(|source| StartError::Bind {
                    listener: "admin listener (--admin-bind)",
                    addr: addr.unwrap_or(config.bind),
                    source,
                })?,
            )
        }
        None => None,
    };
    start_tasks(&state, &store, config.tick);
    // Data exports cut off by the last stop are marked failed (as Zulip's worker does).
    for realm in state.registry.all() {
        let version = realm.hub.current();
        if let Some(up_to) = version.last_pending_export() {
            let subdomain = version.settings.subdomain.clone();
            actix_web::rt::spawn(crate::api::realm_export::fail_interrupted(
                realm.client.clone(),
                subdomain,
                up_to,
            ));
        }
    }
    // Started: the message database's opening may speak now.
    store.message_db().start_finished();
    Ok(Running {
        addr: bound.addr,
        metrics,
        admin,
        handle,
        closer,
        state,
        store,
        _arbiters: arbiters,
    })
}

/// The listeners, bound before anything else.
struct Bound {
    api: TcpListener,
    /// The API listener's address (the real port when asked for port 0).
    addr: SocketAddr,
    /// The metrics listener and its address, unless `--metrics-bind off`.
    metrics: Option<(TcpListener, SocketAddr)>,
    /// The admin listener, unless `--admin-bind off`.
    admin: Option<TcpListener>,
}

/// Opens the data folder when it exists already, which takes its lock: `Locked` when
/// another process holds it. `None` when there is no folder yet.
fn lock_existing_folder(config: &ServeConfig) -> Result<Option<(Store, bool)>, StartError> {
    storage::messages::set_cache_mb(config.message_cache_mb);
    storage::messages::search::set_enabled(config.search_index);
    storage::messages::search::set_writer_mb(config.search_writer_mb);
    storage::messages::set_inline_projection(
        config.message_projection == crate::config::MessageProjection::Inline,
    );
    if !config.data.exists() {
        return Ok(None);
    }
    open_data_folder(&config.data, config.durability_mode()).map(Some)
}

/// Binds the API listener and the metrics listener.
fn bind(config: &ServeConfig) -> Result<Bound, StartError> {
    let listen = |listener: &'static str, addr: SocketAddr| {
        let error = move |source| StartError::Bind {
            listener,
            addr,
            source,
        };
        let l = TcpListener::bind(addr).map_err(error)?;
        let bound = l.local_addr().map_err(error)?;
        Ok::<_, StartError>((l, bound))
    };
    let (api, addr) = listen("API listener (--bind)", config.bind)?;
    let metrics = match config.metrics_bind.0 {
        Some(at) => Some(listen("metrics listener (--metrics-bind)", at)?),
        None => None,
    };
    let admin = match config.admin_bind.0 {
        Some(at) => Some(listen("admin listener (--admin-bind)", at)?.0),
        None => None,
    };
    Ok(Bound {
        api,
        addr,
        metrics,
        admin,
    })
}

/// The opened data folder: its database, its uploaded files, and the realms to serve.
struct Opened {
    store: Store,
    uploads: Arc<UploadStore>,
    subdomains: Vec<String>,
}

/// Opens the data folder (unless `lock_existing_folder` did), holds its realms against
/// the manifest, and seeds the
/// development realm when `--dev` asks for it and it is not there yet. No realm to
/// serve refuses the start (and removes the folder if this start created it).
fn open_storage(
    config: &ServeConfig,
    clock: &dyn Clock,
    locked: Option<(Store, bool)>,
) -> Result<Opened, StartError> {
    let opening = Instant::now();
    storage::messages::set_cache_mb(config.message_cache_mb);
    storage::messages::search::set_enabled(config.search_index);
    storage::messages::search::set_writer_mb(config.search_writer_mb);
    if !config.search_index {
        // Writes made without the indexes would be missing from them: a later start
        // with them rebuilds them whole.
        storage::messages::search::remove_all(&config.data);
    }
    let (store, created) = match locked {
        Some(opened) => opened,
        None => open_data_folder(&config.data, config.durability_mode())?,
    };
    let opened_in = opening.elapsed();
    let uploads = Arc::new(UploadStore::new(&config.data));
    // A realm dropped from this node whose removal a crash cut short: finished first,
    // so it is never served again.
    for dropped in store.dropped_realms() {
        tracing::warn!("realm '{dropped}': finishing its removal (dropped from this node)");
        store.drop_realm(&dropped, &uploads.realm_dir(&dropped))?;
    }
    // A realm the manifest names must be there: never seed a new one in its place.
    store.verify_realms()?;
    let mut subdomains = store.served_subdomains();
    let staged = store.staged_realms();
    if !staged.is_empty() {
        tracing::info!(
            "staged realms, not served until activated: {}",
            staged
                .iter()
                .map(|s| format!("'{s}'"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    // Realms but no development realm: a production folder, where `--dev` must not seed
    // one (a folder holding both is refused once the realms are read, `start_realms`).
    if config.dev && !config.dev_beside_production {
        if let Some(other) = subdomains.iter().find(|s| *s != DEV_SUBDOMAIN) {
            if !subdomains.iter().any(|s| s == DEV_SUBDOMAIN) {
                return Err(StartError::DevBesideProduction {
                    path: config.data.display().to_string(),
                    subdomain: other.clone(),
                });
            }
        }
    }
    if config.dev && !subdomains.iter().any(|s| s == DEV_SUBDOMAIN) {
        seed_dev_realm(
            &store,
            &uploads,
            clock,
            &config.data,
            !config.dev_without_history,
        )?;
        subdomains.push(DEV_SUBDOMAIN.to_owned());
    }
    // A node of several may start with no realm yet, to receive one through its admin
    // listener: in a folder the operator made for it (a mistyped --data that did not
    // exist is still refused).
    let awaits_import = !created && config.admin_bind.0.is_some();
    if subdomains.is_empty() && staged.is_empty() && awaits_import {
        tracing::warn!(
            "no realm in {}: serving none until one is imported and activated through \
             the admin listener",
            config.data.display()
        );
    } else if subdomains.is_empty() && staged.is_empty() {
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
    Ok(Opened {
        store,
        uploads,
        subdomains,
    })
}

/// Creates the development realm, its emoji images first (its records name them).
fn seed_dev_realm(
    store: &Store,
    uploads: &Arc<UploadStore>,
    clock: &dyn Clock,
    data: &Path,
    history: bool,
) -> Result<(), StartError> {
    store.discard_remains(DEV_SUBDOMAIN)?;
    let mut realm_store = store.realm(DEV_SUBDOMAIN)?;
    let changes =
        dev::seed_changes_with_history(&mut Cx::new(clock), history).map_err(StartError::Realm)?;
    for (_, bytes, _) in dev::DEV_EMOJI_IMAGES {
        uploads
            .put(DEV_SUBDOMAIN, bytes)
            .map_err(|e| StartError::data_folder(data, e))?;
    }
    create_realm(&mut realm_store, &changes).map_err(StartError::Realm)?;
    tracing::info!("seeded the development realm");
    Ok(())
}

/// Recovers every realm and starts its actor, on `REALM_ARBITERS` threads; then moves
/// the emoji images an earlier hearth stored outside the realms' folders into them,
/// before anything is served.
fn start_realms(
    config: &ServeConfig,
    opened: &Opened,
    runtime: &RealmRuntime,
) -> Result<(Registry, Vec<Arbiter>), StartError> {
    let arbiters: Vec<Arbiter> = (0..REALM_ARBITERS).map(|_| Arbiter::new()).collect();
    let registry = Registry::default();
    let legacy_uploads = opened.uploads.has_legacy_files();
    let mut emoji_images = Vec::new();
    for (i, subdomain) in opened.subdomains.iter().enumerate() {
        let (realm_store, recovered) = registry::recover(&opened.store, subdomain)?;
        if config.dev && !config.dev_beside_production && !recovered.realm.settings.dev {
            return Err(StartError::DevBesideProduction {
                path: config.data.display().to_string(),
                subdomain: subdomain.clone(),
            });
        }
        if legacy_uploads {
            emoji_images.push((subdomain.clone(), recovered.realm.emoji.image_shas()));
        }
        let handle = registry::start(
            &opened.store,
            subdomain,
            realm_store,
            recovered,
            &arbiters[i % arbiters.len()].handle(),
            runtime,
        )?;
        registry.insert(subdomain, handle);
    }
    if legacy_uploads {
        let moved = opened
            .uploads
            .migrate_legacy(&emoji_images)
            .map_err(|e| StartError::data_folder(&config.data, e))?;
        tracing::info!(
            "moved the emoji images of the old layout into the realms' folders: {} copied, \
             {} old files removed",
            moved.copied,
            moved.removed
        );
    }
    Ok((registry, arbiters))
}

/// Starts the HTTP server on the API listener (`api::wire`); returns its handle and
/// what ends its idle connections at shutdown.
fn start_http(
    config: &ServeConfig,
    listener: TcpListener,
    addr: SocketAddr,
    state: &web::Data<AppState>,
) -> Result<(ServerHandle, wire::Closer), StartError> {
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
    .map_err(|source| StartError::Bind {
        listener: "API listener (--bind)",
        addr,
        source,
    })?;
    let handle = server.handle();
    actix_web::rt::spawn(server);
    Ok((handle, closer))
}

/// Starts `GET /metrics` on the metrics listener, when there is one.
fn start_metrics(
    listener: Option<(TcpListener, SocketAddr)>,
    state: &web::Data<AppState>,
) -> Result<Option<(SocketAddr, ServerHandle)>, StartError> {
    let Some((listener, bound)) = listener else {
        return Ok(None);
    };
    let metrics_state = state.clone();
    let server = actix_web::HttpServer::new(move || {
        actix_web::App::new()
            .app_data(metrics_state.clone())
            .route("/metrics", web::get().to(metrics))
    })
    .disable_signals()
    .workers(1)
    .listen(listener)
    .map_err(|source| StartError::Bind {
        listener: "metrics listener (--metrics-bind)",
        addr: bound,
        source,
    })?
    .run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    tracing::info!("metrics on http://{bound}/metrics");
    Ok(Some((bound, handle)))
}

/// The background tasks: the release safety net always; with `tick` (`--tick`, on
/// outside tests that drive time by hand), the hourly upload sweeper and the
/// one-second ticker.
fn start_tasks(state: &web::Data<AppState>, store: &Store, tick: bool) {
    spawn_release_task(state, store);
    spawn_outbox(state);
    spawn_missed_mail(state);
    if tick {
        spawn_upload_sweeper(state);
        spawn_ticker(state);
    }
}

/// Every second: each realm's hub ticks (heartbeats, idle queues, the log, presence
/// flushes) and its actor delivers the scheduled messages that are due.
fn spawn_ticker(state: &web::Data<AppState>) {
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
                realm.client.addr().do_send(DeliverScheduled);
            }
        }
    });
}

/// The mail worker (missed-message emails), over every realm of the registry.
fn spawn_missed_mail(state: &web::Data<AppState>) {
    // Weak: the worker ends with the server instead of keeping its state alive.
    let weak = Arc::downgrade(&state.clone().into_inner());
    let mailer = state.mailer.as_ref().map(|q| q.mailer_arc());
    crate::missed_mail::spawn(move || weak.upgrade().map(|s| s.registry.all()), mailer);
}

/// The outbox worker (outgoing webhooks), over every realm of the registry.
fn spawn_outbox(state: &web::Data<AppState>) {
    // Weak: the worker ends with the server instead of keeping its state alive.
    let weak = Arc::downgrade(&state.clone().into_inner());
    let policy = crate::outbox::guard::Policy {
        allow_private: state.webhook_allow_private,
        allow_loopback: state.dev,
    };
    crate::outbox::spawn(move || weak.upgrade().map(|s| s.registry.all()), policy);
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
            let swept = attachments::sweep_uploads(&state).await;
            if swept > 0 {
                tracing::info!("swept {swept} unclaimed uploads");
            }
        }
    });
}

/// Makes decisions visible as soon as they are durable, also those whose handler is
/// gone (a client that disconnected while its write was being flushed). Handlers release
/// their own decision before answering, so this is only the safety net.
fn spawn_release_task(state: &web::Data<AppState>, store: &Store) {
    let mut visible = store.durability.subscribe_visible();
    // Message rows written by the writer thread let a durable decision out too.
    let mut written = store.message_db().subscribe_progress();
    // Weak: the task ends with the server instead of keeping its state alive.
    let weak = Arc::downgrade(&state.clone().into_inner());
    actix_web::rt::spawn(async move {
        loop {
            let changed = tokio::select! {
                v = visible.changed() => v,
                w = written.changed() => w,
            };
            if changed.is_err() {
                break;
            }
            let upto = *visible.borrow_and_update();
            let Some(state) = weak.upgrade() else { break };
            for realm in state.registry.all() {
                realm.hub.release(upto);
            }
        }
    });
}

/// Clients store the server's public URL (`realm_url`) as the account's address: the
/// mobile app keeps it for every later request. A loopback or wildcard address there
/// works for nothing but a client on this machine, so a server that is not a
/// development server says so at start.
fn warn_if_private_url(url: &str, dev: bool) {
    if dev || !url_is_private(url) {
        return;
    }
    tracing::warn!(
        url,
        "the server's public URL is a loopback or wildcard address: clients elsewhere \
         (the mobile app stores it as the account's address) cannot reach it; \
         start the server with --url https://<your domain>"
    );
}

/// Whether a URL's host is a loopback (`localhost`, `127.x`, `::1`) or wildcard
/// (`0.0.0.0`, `::`) address.
pub fn url_is_private(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    let host = host.to_ascii_lowercase();
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback() || ip.is_unspecified(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod url_tests {
    use super::url_is_private;

    #[test]
    fn loopback_and_wildcard_addresses_are_private() {
        for url in [
            "http://127.0.0.1:9991",
            "http://0.0.0.0:80",
            "http://[::1]:9991",
            "http://[::]:9991",
            "http://localhost:9991",
            "http://zulip.localhost:9991/",
        ] {
            assert!(url_is_private(url), "{url}");
        }
        for url in [
            "https://chat.example.com",
            "http://192.168.1.5:9991",
            "http://[2001:db8::1]",
        ] {
            assert!(!url_is_private(url), "{url}");
        }
    }
}
