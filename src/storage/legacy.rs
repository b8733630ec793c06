//! Stored record types of every schema version, frozen, and the steps that migrate
//! each version to the next (see `codec`).
//!
//! Snapshot schema 1 is the `Realm` before messages, frozen in `v1`; schema 2 added the
//! message state, group settings, linkifiers, profile fields, attachments, navigation
//! views, push, status and emoji, frozen in `v2`
//! (`tests/fixtures/snapshot-v2-dev-realm.bin`); schema 3 is today's: it added the
//! realm's plain settings (`properties`: description, message policies;
//! `tests/fixtures/snapshot-v3-dev-realm.bin`). The next change to `Realm` copies
//! today's shape here as `v3` and bumps the schema. WAL schema 1 stored
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

/// Schema 1: the first stored format. Its `Realm` had no message state; its `Change`
/// was one flat enum, frozen here, which schema 2 nested by resource.
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

    use crate::realm::channels::ChannelFolder as Folder;
    use crate::realm::groups::GroupId;
    use crate::realm::{RealmSettings as Settings, User};
    use imbl::{OrdMap, OrdSet};
    use std::sync::Arc;

    /// The snapshot's realm as schema 1 stored it: before messages.
    #[derive(Debug, Deserialize)]
    pub struct Realm {
        pub settings: Settings,
        pub users: OrdMap<UserId, Arc<User>>,
        pub next_user_id: UserId,
        pub groups: OrdMap<GroupId, UserGroup>,
        pub next_group_id: GroupId,
        pub channels: OrdMap<ChannelId, Arc<Channel>>,
        pub next_channel_id: ChannelId,
        pub default_channels: OrdSet<ChannelId>,
        pub folders: OrdMap<FolderId, Folder>,
        pub next_folder_id: FolderId,
    }

    /// Schema 2 added the realm's message state (empty for a realm of schema 1).
    pub fn realm_to_current(r: Realm) -> crate::realm::Realm {
        let mut realm = crate::realm::Realm::new(r.settings);
        realm.users = r.users;
        realm.next_user_id = r.next_user_id;
        realm.groups = r.groups;
        realm.next_group_id = r.next_group_id;
        realm.channels = r.channels;
        realm.next_channel_id = r.next_channel_id;
        realm.default_channels = r.default_channels;
        realm.folders = r.folders;
        realm.next_folder_id = r.next_folder_id;
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

/// Snapshot schema 2: today's `Realm` without `properties` (every type inside it is
/// unchanged since, so they are today's).
pub mod v2 {
    use serde::Deserialize;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use imbl::{OrdMap, OrdSet};

    use crate::realm::channels::{Channel, ChannelFolder, ChannelId, FolderId};
    use crate::realm::groups::{GroupConfig, GroupId, GroupSetting, RealmSetting, UserGroup};
    use crate::realm::{
        attachments, emoji, linkifiers, messages, navigation, profile_fields, push, status,
        RealmSettings, User, UserId,
    };

    /// The snapshot's realm as schema 2 stored it (its serialized fields, in order).
    #[derive(Debug, Deserialize)]
    pub struct Realm {
        pub settings: RealmSettings,
        pub users: OrdMap<UserId, Arc<User>>,
        pub next_user_id: UserId,
        pub groups: OrdMap<GroupId, UserGroup>,
        pub next_group_id: GroupId,
        pub channels: OrdMap<ChannelId, Arc<Channel>>,
        pub next_channel_id: ChannelId,
        pub default_channels: OrdSet<ChannelId>,
        pub folders: OrdMap<FolderId, ChannelFolder>,
        pub next_folder_id: FolderId,
        pub messages: messages::MessageState,
        pub linkifiers: OrdMap<linkifiers::LinkifierId, linkifiers::Linkifier>,
        pub next_linkifier_id: linkifiers::LinkifierId,
        pub profile_fields: OrdMap<profile_fields::FieldId, profile_fields::ProfileField>,
        pub next_profile_field_id: profile_fields::FieldId,
        pub profile_values:
            OrdMap<profile_fields::FieldId, OrdMap<UserId, profile_fields::ProfileValue>>,
        pub attachments: OrdMap<attachments::AttachmentId, attachments::Attachment>,
        pub next_attachment_id: attachments::AttachmentId,
        pub group_configs: OrdMap<GroupId, GroupConfig>,
        pub realm_group_settings: BTreeMap<RealmSetting, GroupSetting>,
        pub navigation_views: OrdMap<UserId, Vec<navigation::NavigationView>>,
        pub push_tokens: OrdMap<UserId, Vec<push::PushToken>>,
        pub push_devices: OrdMap<UserId, Vec<push::PushDevice>>,
        pub status: status::StatusState,
        pub emoji: emoji::EmojiState,
    }

    /// Schema 3 added the realm's plain settings: Zulip's defaults for a realm of
    /// schema 2 (which could not change them).
    pub fn realm_to_current(r: Realm) -> crate::realm::Realm {
        let mut realm = crate::realm::Realm::new(r.settings);
        realm.users = r.users;
        realm.next_user_id = r.next_user_id;
        realm.groups = r.groups;
        realm.next_group_id = r.next_group_id;
        realm.channels = r.channels;
        realm.next_channel_id = r.next_channel_id;
        realm.default_channels = r.default_channels;
        realm.folders = r.folders;
        realm.next_folder_id = r.next_folder_id;
        realm.messages = r.messages;
        realm.linkifiers = r.linkifiers;
        realm.next_linkifier_id = r.next_linkifier_id;
        realm.profile_fields = r.profile_fields;
        realm.next_profile_field_id = r.next_profile_field_id;
        realm.profile_values = r.profile_values;
        realm.attachments = r.attachments;
        realm.next_attachment_id = r.next_attachment_id;
        realm.group_configs = r.group_configs;
        realm.realm_group_settings = r.realm_group_settings;
        realm.navigation_views = r.navigation_views;
        realm.push_tokens = r.push_tokens;
        realm.push_devices = r.push_devices;
        realm.status = r.status;
        realm.emoji = r.emoji;
        realm
    }
}
