//! Presence rules and shapes (seed 2.13 and 4.15), after Zulip's
//! `zerver/actions/presence.py` and `zerver/lib/presence.py`: how a ping updates a
//! user's entry, when it is news worth an event, and the legacy and modern formats.
//!
//! The entries themselves are soft state, kept beside the event hub
//! (the hub's `RealmPresence`), never in the realm's WAL: this file only says
//! what a ping does to one entry and how entries look on the wire.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::events::{Audience, Event};
use super::{Realm, User, UserId};
use crate::error::{ApiError, ApiResult};

/// Zulip's `PRESENCE_PING_INTERVAL_SECS`: how often clients ping (advertised by
/// `/register` as `server_presence_ping_interval_seconds`).
pub const PRESENCE_PING_INTERVAL_SECS: i64 = 60;
/// Zulip's `OFFLINE_THRESHOLD_SECS` (`PRESENCE_PING_INTERVAL_SECS * 3 + 20`): a user
/// not seen for longer is offline (`server_presence_offline_threshold_seconds`).
pub const OFFLINE_THRESHOLD_SECS: i64 = 200;
/// Zulip's `PRESENCE_UPDATE_MIN_FREQ_SECONDS`: a timestamp moves only when the new one
/// is at least this much newer, so several open clients cost one update a minute.
pub const PRESENCE_UPDATE_MIN_FREQ_SECS: i64 = 55;
/// Zulip's `PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS`: in the legacy format a
/// user is `active` when last active at most this long before last connected.
pub const PRESENCE_LEGACY_ACTIVITY_OFFSET_SECS: i64 = 70;
/// Zulip's `USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS`: larger realms get no
/// "came online" events (clients poll), except forced ones.
pub const USER_LIMIT_FOR_PRESENCE_EVENTS: usize = 100;
/// How far back presence listings reach by default (Zulip: 14 days).
pub const DEFAULT_HISTORY_LIMIT_DAYS: i64 = 14;

/// What a client reports (`status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PresenceStatus {
    Active,
    Idle,
}

impl PresenceStatus {
    /// `active` or `idle`, else Zulip's `Invalid status: x`.
    pub fn parse(s: &str) -> ApiResult<PresenceStatus> {
        match s {
            "active" => Ok(PresenceStatus::Active),
            "idle" => Ok(PresenceStatus::Idle),
            _ => Err(ApiError::bad_request(format!("Invalid status: {s}"))),
        }
    }
}

/// One user's presence (Zulip's `UserPresence` row). Times are UNIX seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PresenceEntry {
    /// Last time a client reported the user `active`; `None` if never.
    pub last_active: Option<i64>,
    /// Last time any client of the user pinged.
    pub last_connected: i64,
    /// The realm's presence sequence number of the entry's last change.
    pub update_id: u64,
}

/// What a ping does to an entry (Zulip's `do_update_user_presence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PingEffect {
    /// The entry's new times, when they change (the caller gives it a new update id).
    pub changed: Option<(Option<i64>, i64)>,
    /// Whether the user had no entry.
    pub creating: bool,
    /// Whether an `active` ping comes after a silence long enough for other clients
    /// to show the user offline soon.
    pub became_online: bool,
}

impl PingEffect {
    /// Whether the ping is news for other users' clients (an event, in small realms).
    pub fn newsworthy(&self) -> bool {
        self.creating || self.became_online
    }
}

/// Zulip's `do_update_user_presence` on one entry, at `now`.
pub fn ping_effect(old: Option<&PresenceEntry>, now: i64, status: PresenceStatus) -> PingEffect {
    let active = status == PresenceStatus::Active;
    let Some(old) = old else {
        // A new entry is news by itself (`became_online` compares with the entry just
        // made, as Zulip does, so it is false).
        return PingEffect {
            changed: Some((active.then_some(now), now)),
            creating: true,
            became_online: false,
        };
    };
    const NEVER: i64 = 24 * 60 * 60;
    let since_active = old.last_active.map_or(NEVER, |t| now - t);
    let since_connected = now - old.last_connected;
    let now_online = since_active > OFFLINE_THRESHOLD_SECS - PRESENCE_PING_INTERVAL_SECS - 10;
    let (mut last_active, mut last_connected) = (old.last_active, old.last_connected);
    let mut update = false;
    if since_connected > PRESENCE_UPDATE_MIN_FREQ_SECS {
        last_connected = now;
        update = true;
    }
    if active && since_active > PRESENCE_UPDATE_MIN_FREQ_SECS {
        last_active = Some(now);
        update = true;
        if now > last_connected {
            last_connected = now;
        }
    }
    PingEffect {
        changed: update.then_some((last_active, last_connected)),
        creating: false,
        became_online: active && now_online,
    }
}

/// Zulip's `format_legacy_presence_dict`: `active` at the last active time, or `idle`
/// at the last connection. Missing times default to the user's join date.
pub fn legacy_status(e: &PresenceEntry, date_joined: i64) -> (&'static str, i64) {
    let last_active = e.last_active.unwrap_or(date_joined);
    if last_active + PRESENCE_LEGACY_ACTIVITY_OFFSET_SECS >= e.last_connected {
        ("active", last_active)
    } else {
        ("idle", e.last_connected)
    }
}

/// The legacy entry of a user: `{aggregated: {client, status, timestamp}, website:
/// {client, status, timestamp, pushable}}` (seed 2.13).
pub fn legacy_json(e: &PresenceEntry, date_joined: i64) -> Value {
    let (status, timestamp) = legacy_status(e, date_joined);
    json!({
        "aggregated": {"client": "website", "status": status, "timestamp": timestamp},
        "website": {"client": "website", "status": status, "timestamp": timestamp, "pushable": false},
    })
}

/// The modern entry of a user: `{active_timestamp, idle_timestamp}`.
pub fn modern_json(e: &PresenceEntry, date_joined: i64) -> Value {
    json!({
        "active_timestamp": e.last_active.unwrap_or(date_joined),
        "idle_timestamp": e.last_connected,
    })
}

impl Realm {
    /// Whether `user`'s presence is listed at all: active humans only.
    pub fn presence_listed(&self, user_id: UserId) -> Option<&User> {
        self.user(user_id).filter(|u| u.is_active && !u.is_bot())
    }

    /// Whether "came online" events go out: realms of at most
    /// `USER_LIMIT_FOR_PRESENCE_EVENTS` active users (counted up to the limit).
    pub fn sends_presence_events(&self) -> bool {
        self.users
            .values()
            .filter(|u| u.is_active)
            .take(USER_LIMIT_FOR_PRESENCE_EVENTS + 1)
            .count()
            <= USER_LIMIT_FOR_PRESENCE_EVENTS
    }

    /// The `presence` events of one user's entry: the modern shape for queues with the
    /// `simplified_presence_events` capability, the legacy one for the others; to every
    /// active user (Zulip's `send_presence_changed`). `now_ms` is `server_timestamp`.
    pub fn presence_events(&self, user: &User, e: &PresenceEntry, now_ms: i64) -> Vec<Event> {
        let audience = Audience::users(self.active_users(false));
        let mut presences = Map::new();
        presences.insert(user.id.to_string(), modern_json(e, user.date_joined));
        let (status, timestamp) = legacy_status(e, user.date_joined);
        vec![
            Event::new(
                json!({"type": "presence", "presences": presences}),
                audience.clone(),
            )
            .for_capability("simplified_presence_events", true),
            Event::new(
                json!({
                    "type": "presence",
                    "email": self.api_email(user),
                    "user_id": user.id,
                    "server_timestamp": now_ms as f64 / 1000.0,
                    "presence": {"website": {"client": "website", "status": status, "timestamp": timestamp, "pushable": false}},
                }),
                audience,
            )
            .for_capability("simplified_presence_events", false),
        ]
    }

    /// `GET /users/{user_id_or_email}/presence` (Zulip's `get_presence_backend`):
    /// `entry` is the user's presence, if any.
    pub fn view_user_presence(
        &self,
        target: &User,
        key: &str,
        entry: Option<&PresenceEntry>,
        slim: bool,
        now: i64,
    ) -> ApiResult<Value> {
        if target.is_bot() {
            return Err(ApiError::bad_request(
                "Presence is not supported for bot users.",
            ));
        }
        let Some(e) = entry else {
            return Err(ApiError::bad_request(format!("No presence data for {key}")));
        };
        if slim {
            return Ok(modern_json(e, target.date_joined));
        }
        // The legacy entry without `client` and `pushable`; `aggregated` says `offline`
        // past the threshold.
        let (status, timestamp) = legacy_status(e, target.date_joined);
        let aggregated = if now - timestamp > OFFLINE_THRESHOLD_SECS {
            "offline"
        } else {
            status
        };
        Ok(json!({
            "aggregated": {"status": aggregated, "timestamp": timestamp},
            "website": {"status": status, "timestamp": timestamp},
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(active: Option<i64>, connected: i64) -> PresenceEntry {
        PresenceEntry {
            last_active: active,
            last_connected: connected,
            update_id: 1,
        }
    }

    #[test]
    fn first_ping_creates() {
        let e = ping_effect(None, 1000, PresenceStatus::Active);
        assert_eq!(e.changed, Some((Some(1000), 1000)));
        assert!(e.creating && !e.became_online && e.newsworthy());
        let e = ping_effect(None, 1000, PresenceStatus::Idle);
        assert_eq!(e.changed, Some((None, 1000)));
        assert!(e.creating && !e.became_online);
    }

    #[test]
    fn pings_within_a_minute_change_nothing() {
        let old = entry(Some(1000), 1000);
        let e = ping_effect(Some(&old), 1055, PresenceStatus::Active);
        assert_eq!(e.changed, None);
        assert!(!e.newsworthy());
        let e = ping_effect(Some(&old), 1056, PresenceStatus::Idle);
        assert_eq!(e.changed, Some((Some(1000), 1056)));
        let e = ping_effect(Some(&old), 1056, PresenceStatus::Active);
        assert_eq!(e.changed, Some((Some(1056), 1056)));
        assert!(!e.became_online, "still online");
    }

    #[test]
    fn coming_back_after_a_silence_is_news() {
        let old = entry(Some(1000), 1000);
        let e = ping_effect(Some(&old), 1131, PresenceStatus::Active);
        assert!(e.became_online);
        let e = ping_effect(Some(&old), 1130, PresenceStatus::Active);
        assert!(!e.became_online);
        let e = ping_effect(Some(&old), 5000, PresenceStatus::Idle);
        assert!(!e.became_online, "idle is not online");
    }

    #[test]
    fn legacy_status_is_zulips() {
        assert_eq!(legacy_status(&entry(Some(1000), 1070), 0), ("active", 1000));
        assert_eq!(legacy_status(&entry(Some(1000), 1071), 0), ("idle", 1071));
        assert_eq!(legacy_status(&entry(None, 1071), 1000), ("idle", 1071));
        assert_eq!(
            modern_json(&entry(None, 1071), 5),
            json!({"active_timestamp": 5, "idle_timestamp": 1071})
        );
    }
}
