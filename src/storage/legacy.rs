//! Stored record types of every schema version, frozen, and the steps that migrate
//! each version to the next (see `codec`).
//!
//! Schema 1 is today's `Realm` and `Change`: the module re-exports them, and its
//! migration steps are the identity. When a stored type changes, its schema-1
//! definition is copied here first (with every type it contains that changes), the
//! re-export is replaced by that copy, and `realm_to_current` / `changes_to_current`
//! become real conversions; the new version's module is then the re-export. Copies are
//! plain data with `Deserialize` only: they are never written again.
//!
//! Example of the step after adding `pronouns: String` to `User` (schema 2):
//!
//! ```text
//! pub mod v1 {
//!     #[derive(Deserialize)] pub struct User { /* fields as of schema 1 */ }
//!     #[derive(Deserialize)] pub struct Realm { pub users: OrdMap<UserId, User>, .. }
//!     pub fn realm_to_current(r: Realm) -> crate::realm::Realm {
//!         crate::realm::Realm { users: r.users.into_iter()
//!             .map(|(id, u)| (id, User { pronouns: String::new(), ..u.into() })).collect(), .. }
//!     }
//! }
//! ```

/// Schema 1: the first stored format (today's types).
pub mod v1 {
    pub use crate::realm::{Change, Realm};

    /// Schema 1 is the current snapshot schema: nothing to migrate.
    pub fn realm_to_current(realm: Realm) -> crate::realm::Realm {
        realm
    }

    /// Schema 1 is the current WAL schema: nothing to migrate.
    pub fn changes_to_current(changes: Vec<Change>) -> Vec<crate::realm::Change> {
        changes
    }
}
