//! Stored record types of every schema version, frozen, and the steps that migrate
//! each version to the next (see `codec`).
//!
//! Snapshot schema 1 is today's `Realm` (identity migration). WAL schema 1 stored
//! `Change` as one flat enum; schema 2 nests it by resource: the flat enum is frozen in
//! `v1` with its migration. When a stored type changes, its old definition is copied
//! here first (with every type it contains that changes), and the old version's
//! migration becomes a real conversion. Copies are plain data with `Deserialize` only:
//! they are never written again.
//!
//! Example of the step after adding `pronouns: String` to `User` (a snapshot schema 2):
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

/// Schema 1: the first stored format. Its `Realm` is today's; its `Change` was one flat
/// enum, frozen here, which schema 2 nested by resource.
pub mod v1 {
    use serde::Deserialize;

    use crate::realm::channels::{
        Channel, ChannelFolder, ChannelId, ChannelUpdate, FolderId, FolderUpdate, NewSubscription,
        SubProperty,
    };
    use crate::realm::groups::UserGroup;
    use crate::realm::{
        ChannelChange, GroupChange, NewUser, RealmChange, RealmSettings, UserChange, UserId,
    };

    pub use crate::realm::Realm;

    /// Schema 1 is the current snapshot schema: nothing to migrate.
    pub fn realm_to_current(realm: Realm) -> crate::realm::Realm {
        realm
    }

    /// The WAL record's change as schema 1 stored it: one flat enum (variant order is
    /// the stored tag, so it never changes).
    #[derive(Debug, Deserialize)]
    pub enum Change {
        RealmCreated {
            settings: RealmSettings,
        },
        UserCreated(NewUser),
        CanCreateUsersSet {
            user_id: UserId,
            value: bool,
        },
        UserGroupCreated(UserGroup),
        ChannelCreated(Box<Channel>),
        Subscribed {
            subs: Vec<NewSubscription>,
        },
        Unsubscribed {
            subs: Vec<(ChannelId, UserId)>,
        },
        SubscriptionPropertySet {
            user_id: UserId,
            channel_id: ChannelId,
            property: SubProperty,
        },
        ChannelUpdated {
            channel_id: ChannelId,
            update: ChannelUpdate,
        },
        DefaultChannelSet {
            channel_id: ChannelId,
            is_default: bool,
        },
        ChannelFolderCreated(ChannelFolder),
        ChannelFolderUpdated {
            folder_id: FolderId,
            update: FolderUpdate,
        },
        ChannelFoldersReordered {
            order: Vec<i64>,
        },
    }

    /// Schema 1 to 2: each change goes under its resource.
    pub fn changes_to_current(changes: Vec<Change>) -> Vec<crate::realm::Change> {
        use crate::realm::Change as C;
        changes
            .into_iter()
            .map(|c| match c {
                Change::RealmCreated { settings } => {
                    C::Realm(RealmChange::RealmCreated { settings })
                }
                Change::UserCreated(n) => C::User(UserChange::UserCreated(n)),
                Change::CanCreateUsersSet { user_id, value } => {
                    C::User(UserChange::CanCreateUsersSet { user_id, value })
                }
                Change::UserGroupCreated(g) => C::Group(GroupChange::UserGroupCreated(g)),
                Change::ChannelCreated(ch) => C::Channel(ChannelChange::ChannelCreated(ch)),
                Change::Subscribed { subs } => C::Channel(ChannelChange::Subscribed { subs }),
                Change::Unsubscribed { subs } => C::Channel(ChannelChange::Unsubscribed { subs }),
                Change::SubscriptionPropertySet {
                    user_id,
                    channel_id,
                    property,
                } => C::Channel(ChannelChange::SubscriptionPropertySet {
                    user_id,
                    channel_id,
                    property,
                }),
                Change::ChannelUpdated { channel_id, update } => {
                    C::Channel(ChannelChange::ChannelUpdated { channel_id, update })
                }
                Change::DefaultChannelSet {
                    channel_id,
                    is_default,
                } => C::Channel(ChannelChange::DefaultChannelSet {
                    channel_id,
                    is_default,
                }),
                Change::ChannelFolderCreated(f) => {
                    C::Channel(ChannelChange::ChannelFolderCreated(f))
                }
                Change::ChannelFolderUpdated { folder_id, update } => {
                    C::Channel(ChannelChange::ChannelFolderUpdated { folder_id, update })
                }
                Change::ChannelFoldersReordered { order } => {
                    C::Channel(ChannelChange::ChannelFoldersReordered { order })
                }
            })
            .collect()
    }
}
