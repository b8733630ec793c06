//! The mapping `Change` -> Zulip events + who receives them.
//!
//! `Realm::events_for` is called right after a change is applied (so the state already
//! includes it). Each resource group adds its variants here; every variant of `Change`
//! must be listed, so a new change cannot silently produce no event.
//!
//! | Change               | Events                                        | Recipients |
//! |----------------------|-----------------------------------------------|------------|
//! | `RealmCreated`       | none (no queue can exist yet)                 | -          |
//! | `UserCreated`        | `realm_user` `op:add` `{person}`              | every active user; `person.delivery_email` real for those who may see it, null for the rest |
//! | `CanCreateUsersSet`  | none (Zulip sends none: a server command)     | -          |

use serde_json::{json, Map, Value};

use super::users::UserView;
use super::{Change, Realm, UserId};

/// Who receives an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Audience {
    /// Every user of the realm.
    Everyone,
    /// These users (sorted, for binary search).
    Users(Vec<UserId>),
}

impl Audience {
    /// A user list, sorted and deduplicated.
    pub fn users(mut ids: Vec<UserId>) -> Self {
        ids.sort_unstable();
        ids.dedup();
        Audience::Users(ids)
    }

    pub fn includes(&self, user: UserId) -> bool {
        match self {
            Audience::Everyone => true,
            Audience::Users(ids) => ids.binary_search(&user).is_ok(),
        }
    }
}

/// One event as the realm decides it: its body (with `type`, without `id`) and audience.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub body: Map<String, Value>,
    pub audience: Audience,
}

impl Event {
    pub fn new(body: Value, audience: Audience) -> Self {
        let body = match body {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Event { body, audience }
    }

    /// The event's `type`.
    pub fn kind(&self) -> &str {
        self.body
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

impl Realm {
    /// The events a just-applied change sends, with their recipients.
    pub fn events_for(&self, change: &Change) -> Vec<Event> {
        match change {
            Change::RealmCreated { .. } | Change::CanCreateUsersSet { .. } => Vec::new(),
            Change::UserCreated(n) => self.user_added_events(n.user_id),
        }
    }

    /// `realm_user` add, split by whether the recipient may see the real email.
    fn user_added_events(&self, id: UserId) -> Vec<Event> {
        let Some(user) = self.user(id) else {
            return Vec::new();
        };
        let view = UserView {
            client_gravatar: false,
            include_custom_profile_fields: true,
        };
        let (mut see, mut hidden) = (Vec::new(), Vec::new());
        for viewer in self.users.values().filter(|u| u.is_active) {
            if self.can_see_delivery_email(viewer, user) {
                see.push(viewer.id);
            } else {
                hidden.push(viewer.id);
            }
        }
        let mut out = Vec::new();
        for (ids, sample) in [(see, true), (hidden, false)] {
            let Some(&viewer_id) = ids.first() else {
                continue;
            };
            let Some(viewer) = self.user(viewer_id) else {
                continue;
            };
            let mut person = self.user_json(viewer, user, view);
            if !user.is_bot() {
                person.entry("profile_data").or_insert_with(|| json!({}));
            }
            debug_assert_eq!(person["delivery_email"].is_null(), !sample);
            out.push(Event::new(
                json!({"type": "realm_user", "op": "add", "person": person}),
                Audience::users(ids),
            ));
        }
        out
    }
}
