//! What hearth says it is: the Zulip version and API feature level it implements, and
//! the subdomain of its development realm.

/// The Zulip API feature level hearth implements.
pub const ZULIP_FEATURE_LEVEL: u32 = 420;
/// The version string hearth reports in `zulip_version`.
pub const ZULIP_VERSION: &str = concat!("11.0-hearth-", env!("CARGO_PKG_VERSION"));
/// Subdomain of the development realm.
pub const DEV_SUBDOMAIN: &str = "zulip";
