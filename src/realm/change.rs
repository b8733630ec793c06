//! `Change`: a fact already decided, the WAL record and the source of client events.
//!
//! Every value a change needs (ids, times, keys, password hashes) is inside it, so that
//! `Realm::apply` is deterministic and replaying the WAL rebuilds the same realm.

use serde::{Deserialize, Serialize};

use super::{RealmSettings, Role, UserId};

/// One decided fact. Never a generic patch: one variant per kind of fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Change {
    /// The realm came into being with these settings (first record of every realm).
    RealmCreated { settings: RealmSettings },
    /// A user or bot account was created.
    UserCreated(NewUser),
    /// A user's `can_create_users` permission was granted or revoked (a server command).
    CanCreateUsersSet { user_id: UserId, value: bool },
}

/// Everything a new account holds when it is created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewUser {
    pub user_id: UserId,
    pub delivery_email: String,
    pub full_name: String,
    pub role: Role,
    /// `Some(type)` for bots: 1 generic, 2 incoming webhook, 3 outgoing webhook, 4 embedded.
    pub bot_type: Option<u8>,
    pub bot_owner_id: Option<UserId>,
    pub timezone: String,
    pub api_key: String,
    /// argon2 PHC string; `None` for accounts that cannot log in with a password.
    pub password_hash: Option<String>,
    /// UNIX seconds.
    pub date_joined: i64,
}

/// Whether a change must be on disk before its write is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurabilityClass {
    /// Answered only once the WAL record covering it is flushed (in `always` mode).
    Durable,
    /// Soft state (presence pings): applied in memory, never waits for a flush.
    Soft,
}

impl Change {
    /// How durable this change must be before its request is answered.
    pub fn durability(&self) -> DurabilityClass {
        match self {
            Change::RealmCreated { .. }
            | Change::UserCreated(_)
            | Change::CanCreateUsersSet { .. } => DurabilityClass::Durable,
        }
    }
}
