//! hearth: a team-chat server that speaks the Zulip REST API.
//!
//! # Layout
//!
//! The modules stand in layers; each uses only what stands below it.
//!
//! 1. The command (`main.rs`) and start-up:
//!    - `startup`: from a `ServeConfig` to a `Running` server, in named steps (open
//!      the storage, recover the realms, start their actors, the HTTP server, the
//!      metrics listener, the background tasks); `StartError`, `open_data_folder`.
//!    - `admin/`: the admin listener (`--admin-bind`): status, write freeze, WAL
//!      shipping, activate and drop of a realm, for moving realms between nodes; its
//!      client (`admin::client`).
//!    - `ops/`: the operator's commands on a stopped server's data folder: `realm
//!      create`, `backup`/`restore`, `check`, `recover`.
//!    - `config`: the server's configuration (`ServeConfig`); the command table is
//!      the binary's (`src/cli.rs`). `hearth load` and `hearth torture` live in the
//!      `hearth-tools` workspace member (`tools/`), which depends on this library.
//! 2. `api/`: HTTP only. The route table and the `ApiRequest` extractor (`mod.rs`), one
//!    file per resource group, the connection layer (`wire`), and the middlewares
//!    (`middleware/`: metrics, request log, rate limit, gzip, JSON errors; `/metrics`).
//!    Handlers parse parameters and credentials, authenticate against the published
//!    version, run reads on the worker, send writes to the realm actor, render the
//!    reply.
//! 3. The realms' runtime:
//!    - `registry`: Host -> realm (its actor, its hub, its message store).
//!    - `actor`: one actix actor per realm, the only writer: runs write rules, appends
//!      to the WAL, applies, stages versions; starts background snapshots.
//!    - `outbox/`: the outbox worker: the deliveries realms promised to
//!      outgoing-webhook bots, POSTed off the actors through an address guard, their
//!      outcomes written back as system writes.
//!    - `missed_mail/`: the mail worker: the missed-message emails realms promised,
//!      re-checked when due, composed and sent through `mail`, recorded as done by
//!      system writes.
//! 4. `hub/`: what readers see of a realm: the published version (visible once
//!    durable), the event log and its renderer, client queues and long-polls, and
//!    presence (soft state, written coalesced).
//! 5. `storage/`: the `Store` of a data folder (`mod.rs`) and one realm's store
//!    (`storage::realm`: WAL, snapshots, holds, shipping, recovery), standing on its
//!    rooms, each a folder whose `mod.rs` says what it owns, promises and may call, with
//!    imports going one way:
//!    - `messages/`: the message database beside the main one: the trees' layout, the
//!      projection of changes into rows, write planning with its undo log, the writer
//!      thread, the background open with its migrations, reads, and each realm's
//!      full-text index (`messages::search`, derived from the rows).
//!    - `integrity/`: the reading of a realm's trees that start-up, `check` and
//!      `recover` share, the judgement against the manifest, the damage report.
//!    - `wal/`: WAL records, the commit journal, group commit and the flusher, storage
//!      faults, the manifest; the message database is synced first through its
//!      `SyncedFirst` port.
//!    - `codec/`: the frame, every record's schema versions, the snapshot as one
//!      section per resource (each with its own version), the frozen older schemas.
//!    - beside them: `staging` (staged imports, dropped realms), `presence` (coalesced
//!      presence), `archive` (the realm archive's format), `uploads` (files, one folder
//!      per realm), `folder` (sled's configuration, making it durable, open refusals).
//! 6. `realm/`: the domain, plain Rust. `decide_*` validates and returns `Change`s,
//!    `view_*` reads, `apply` turns changes into state and cannot fail, `events_for`
//!    says which events a change sends. Its collections are structurally shared
//!    (`imbl`), so a version is cheap to take.
//! 7. Leaves, used from anywhere above:
//!    - `error`: `ApiError`, Zulip's error codes and texts.
//!    - `escape`: HTML escaping, the one place for the four quote rules of the HTML
//!      the server writes.
//!    - `health`: the storage's health as the HTTP layer reads it (storage implements it).
//!    - `metrics`: the process-wide counters, histograms and gauges.
//!    - `limits`: the rate limiter's buckets and password attempts.
//!    - `logging`: the log's set-up.
//!    - `version`: the Zulip version and feature level, the development subdomain.
//!    - `locks`: locks that survive a panic.
//!    - `passwords`: argon2 hashing and verifying on a few threads, bounded in memory.
//!    - `push_relay`: the push relay client (E2EE mobile notifications).
//!    - `mail`: outgoing email through an SMTP server (`--smtp-url`).
//!    - `gzip`: gzip bodies, whole or joined from pieces compressed once and shared.
//!    - `integrations/`: incoming webhooks, one module per service: a pure function
//!      from a request's headers, body and parameters to a topic and Markdown, which
//!      `api/webhooks.rs` sends as an ordinary message.
//!
//! A write travels: handler (authenticate) -> actor (`decide`, WAL append, `apply`,
//! stage) -> handler awaits the flush that covers it -> release (the version becomes
//! visible, events go to the renderer) -> answer. A read never reaches the actor.
//! Nothing answered `success` is lost on `kill -9` in the default `always` mode, and
//! nothing is visible to anyone before it is durable.

// The register state is one large `json!` literal.
#![recursion_limit = "256"]

pub mod actor;
pub mod admin;
pub mod api;
pub mod archive;
pub mod config;
pub mod error;
pub mod escape;
pub mod gzip;
pub mod health;
pub mod hub;
pub mod integrations;
pub mod limits;
pub mod locks;
pub mod logging;
pub mod mail;
pub mod metrics;
pub mod missed_mail;
pub mod ops;
pub mod outbox;
pub mod passwords;
pub mod push_relay;
pub mod realm;
pub mod registry;
pub mod startup;
pub mod storage;
pub mod version;

pub use ops::create_production_realm;
pub use startup::{open_data_folder, spawn, spawn_with_clock, Running, StartError};
pub use version::{DEV_SUBDOMAIN, ZULIP_FEATURE_LEVEL, ZULIP_VERSION};
