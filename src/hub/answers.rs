//! Answers kept between requests: each user's `GET /users/me` body, rendered once and
//! sent again while nothing it is made of changed.
//!
//! The body (`Realm::own_user_json`) is made of the user (their `Arc<User>`: every
//! change to a user replaces it), the realm's email visibility and fake email domain
//! (the API `email`), and the custom profile fields and their values (`profile_data`).
//! An entry keeps those inputs as it rendered them (the user's `Arc`, the maps' roots:
//! the versions share them structurally, so keeping them costs a pointer each) and is
//! used only while the version asked about has the same ones; otherwise it is rendered
//! again. `max_message_id` is not in it: it is kept apart, per user, with the message
//! store's write generation and the newest visible message id it was read under
//! (`newest_received`), and read again once either moved.
//!
//! In debug builds every hit is compared with a fresh rendering (`hearth`'s test suite
//! runs them), so an input this list misses shows up as a failed test, not a stale
//! answer.

use std::sync::Arc;

use bytes::Bytes;
use dashmap::DashMap;
use imbl::OrdMap;

use crate::realm::profile_fields::{FieldId, ProfileField, ProfileValue};
use crate::realm::{EmailVisibility, Realm, User, UserId};

/// Most users whose body is kept (about a kilobyte each); past it the cache starts
/// again empty.
pub const OWN_USER_ENTRIES: usize = 4096;

/// What one user's body was rendered from.
struct Inputs {
    user: Arc<User>,
    email_visibility: EmailVisibility,
    fake_email_domain: String,
    profile_fields: OrdMap<FieldId, ProfileField>,
    profile_values: OrdMap<FieldId, OrdMap<UserId, ProfileValue>>,
}

impl Inputs {
    fn of(realm: &Realm, user: &Arc<User>) -> Self {
        Inputs {
            user: user.clone(),
            email_visibility: realm.settings.email_visibility,
            fake_email_domain: realm.settings.fake_email_domain.clone(),
            profile_fields: realm.profile_fields.clone(),
            profile_values: realm.profile_values.clone(),
        }
    }

    /// Whether `realm` would render `user`'s body from the same inputs.
    fn same(&self, realm: &Realm, user: &Arc<User>) -> bool {
        Arc::ptr_eq(&self.user, user)
            && self.email_visibility == realm.settings.email_visibility
            && self.fake_email_domain == realm.settings.fake_email_domain
            && self.profile_fields.ptr_eq(&realm.profile_fields)
            && self.profile_values.ptr_eq(&realm.profile_values)
    }
}

struct Entry {
    inputs: Inputs,
    body: Bytes,
}

/// The kept `GET /users/me` bodies of one realm.
#[derive(Default)]
pub struct OwnUserBodies {
    entries: DashMap<UserId, Arc<Entry>>,
    /// Per user: (write generation, newest visible id) → the newest message received.
    newest: DashMap<UserId, (NewestKey, Option<u64>)>,
}

/// What a user's newest received message was read under: the message store's write
/// generation (`MessageStore::generation`, read before the rows) and the version's
/// newest visible message id.
pub type NewestKey = (u64, u64);

impl OwnUserBodies {
    /// `user`'s body as `render` makes it from `realm`: the kept one when its inputs
    /// are `realm`'s, else `render`'s (then kept). `render` failing keeps nothing.
    pub fn get_or_render<E>(
        &self,
        realm: &Realm,
        user: &Arc<User>,
        render: impl FnOnce() -> Result<Bytes, E>,
    ) -> Result<Bytes, E> {
        let kept = self.entries.get(&user.id).map(|e| e.value().clone());
        if let Some(entry) = kept.filter(|e| e.inputs.same(realm, user)) {
            #[cfg(debug_assertions)]
            if let Ok(fresh) = render() {
                debug_assert_eq!(
                    fresh, entry.body,
                    "a kept /users/me body differs from a fresh one: an input is missing"
                );
            }
            return Ok(entry.body.clone());
        }
        let body = render()?;
        if self.entries.len() >= OWN_USER_ENTRIES {
            self.entries.clear();
        }
        self.entries.insert(
            user.id,
            Arc::new(Entry {
                inputs: Inputs::of(realm, user),
                body: body.clone(),
            }),
        );
        Ok(body)
    }

    /// `user`'s newest received message as `read` finds it under `key`: the kept one
    /// when it was read under the same key, else `read`'s (then kept). `read` failing
    /// keeps nothing.
    pub fn newest_received<E>(
        &self,
        user: UserId,
        key: NewestKey,
        read: impl FnOnce() -> Result<Option<u64>, E>,
    ) -> Result<Option<u64>, E> {
        let kept = self.newest.get(&user).map(|e| *e.value());
        if let Some((_, newest)) = kept.filter(|(k, _)| *k == key) {
            #[cfg(debug_assertions)]
            if let Ok(fresh) = read() {
                debug_assert_eq!(
                    fresh, newest,
                    "a kept max_message_id differs from a fresh one: a write did not \
                     bump the message store's generation"
                );
            }
            return Ok(newest);
        }
        let newest = read()?;
        if self.newest.len() >= OWN_USER_ENTRIES {
            self.newest.clear();
        }
        self.newest.insert(user, (key, newest));
        Ok(newest)
    }

    /// Number of bodies kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
