//! The integration tests, linked into one binary (`cargo test --test api`): one module
//! per resource group or concern, all through the harness in `common` (a real server on
//! port 0 with a fresh data folder, or the real `hearth` binary in `common::child`).
//!
//! Run one module with a filter: `cargo test --test api groups::`.

mod common;
// nginx as the router, shared with `benches/archive.rs`.
#[path = "../../benches/common/nginx.rs"]
mod nginx;

mod archive;
mod auth;
mod authz;
mod botserver;
mod channel_roles;
mod channels;
mod cluster;
mod cluster_faults;
mod completeness;
mod compression;
mod events;
mod faults;
mod fidelity;
mod formats;
mod groups;
mod integrity;
mod invites;
mod js_client;
mod layers;
mod lifecycle;
mod limits;
mod linkifiers;
mod message_events;
mod message_layout;
mod message_rules;
mod messages;
mod metrics;
mod misc_endpoints;
mod missed_mail;
mod mobile_app;
mod navigation;
mod onboarding;
mod openapi_walk;
mod operator;
mod outgoing_webhooks;
mod password_reset;
mod people;
mod people_state;
mod persistence;
mod personal;
mod profile_fields;
mod properties;
mod push;
mod python_client;
mod read_state;
mod readpath;
mod realm_export;
mod realm_settings;
mod reqpath;
mod scheduled;
mod schemathesis;
mod search_index;
mod sends;
mod server;
mod settings;
mod snapshot_sections;
mod snapshots;
mod topics_policy;
mod uploads;
mod users;
mod web_client;
mod web_sessions;
mod webhooks;
