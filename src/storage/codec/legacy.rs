//! Stored record types of every schema version, frozen, and the steps that migrate
//! each version to the next (see `codec`).
//!
//! Snapshot schema 1 is the `Realm` before messages, frozen in `v1`; schema 2 added the
//! message state, group settings, linkifiers, profile fields, attachments, navigation
//! views, push, status and emoji, frozen in `v2`
//! (`tests/fixtures/snapshot-v2-dev-realm.bin`); schema 3 added the realm's plain
//! settings (`properties`: description, message policies), frozen in `v3`
//! (`tests/fixtures/snapshot-v3-dev-realm.bin`); schema 4 is today's: the topics policy
//! of the realm (`properties.topics_policy`) and of each channel
//! (`Channel::topics_policy`; `tests/fixtures/snapshot-v4-dev-realm.bin`), frozen in
//! `v4`; schema 5 (`tests/fixtures/snapshot-v5-dev-realm.bin`) added each user's
//! personal state and the realm settings that came with it, frozen in `v5`; schema 6
//! (`tests/fixtures/snapshot-v6-dev-realm.bin`) added the realm's data exports
//! (`Realm::exports`), frozen in `v6`; schema 7
//! (`tests/fixtures/snapshot-v7-dev-realm.bin`) added the web client's sessions
//! (`Realm::sessions`). From schema 7 on, snapshots are read through their resources'
//! sections (`sections.rs`), so no later realm is frozen here: a resource's changed
//! shape is frozen in its section alone.
//!
//! WAL schema 1 stored `Change` as one flat enum; schema 2 nests it by resource: the
//! flat enum is frozen in `v1` with its migration. Schema 3 is today's: a created
//! channel (`ChannelChange::ChannelCreated`) carries its topics policy; schema 2's
//! `Change` is frozen in `v2` (`tests/fixtures/wal-v3-dev-realm.bin` is schema 3).
//! Adding a variant at the end of an enum keeps every older record decodable (bincode
//! names variants by position), so only a changed struct needs a new schema.
//!
//! The channel before its topics policy (`v1::Channel`) is stored by snapshot schemas
//! 1–3 and WAL schemas 1–2; it becomes an `inherit` channel.
//!
//! When a stored type changes, its old definition is copied here first (with every
//! type it contains that changes), and the old version's migration becomes a real
//! conversion. Copies are plain data with `Deserialize` only: they are never written
//! again.
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
/// was one flat enum, frozen here, which schema 2 nested by resource. Its `Channel`
/// (kept until snapshot schema 3 and WAL schema 2) had no topics policy.
pub mod v1 {
    use serde::Deserialize;
    use std::collections::BTreeMap;

    use crate::realm::channels::{
        ChannelFolder, ChannelId, ChannelSetting, ChannelUpdate, FolderId, FolderUpdate,
        NewSubscription, SubProperty, Subscription,
    };
    use crate::realm::groups::{GroupSetting, UserGroup};
    use crate::realm::topics_policy::TopicsPolicy;
    use crate::realm::{
        ChannelChange, GroupChange, NewUser, RealmChange, RealmSettings, UserChange, UserId,
    };

    use crate::realm::channels::ChannelFolder as Folder;
    use crate::realm::groups::GroupId;
    use crate::realm::{RealmSettings as Settings, User};
    use imbl::{OrdMap, OrdSet};
    use std::sync::Arc;

    /// A channel as snapshot schemas 1 to 3 and WAL schemas 1 and 2 stored it: before
    /// its topics policy.
    #[derive(Debug, Clone, Deserialize)]
    pub struct Channel {
        pub id: ChannelId,
        pub name: String,
        pub description: String,
        pub rendered_description: String,
        pub invite_only: bool,
        pub is_web_public: bool,
        pub history_public_to_subscribers: bool,
        pub is_archived: bool,
        pub folder_id: Option<FolderId>,
        pub date_created: i64,
        pub creator_id: Option<UserId>,
        pub message_retention_days: Option<i64>,
        pub settings: BTreeMap<ChannelSetting, GroupSetting>,
        pub subs: OrdMap<UserId, Subscription>,
    }

    /// Snapshot schema 4 and WAL schema 3 added the channel's topics policy: the
    /// realm's (`inherit`) for a channel stored before, which could not change it.
    pub fn channel_to_current(c: Channel) -> crate::realm::channels::Channel {
        crate::realm::channels::Channel {
            id: c.id,
            name: c.name,
            description: c.description,
            rendered_description: c.rendered_description,
            invite_only: c.invite_only,
            is_web_public: c.is_web_public,
            history_public_to_subscribers: c.history_public_to_subscribers,
            is_archived: c.is_archived,
            folder_id: c.folder_id,
            date_created: c.date_created,
            creator_id: c.creator_id,
            message_retention_days: c.message_retention_days,
            topics_policy: TopicsPolicy::Inherit,
            settings: c.settings,
            subs: c.subs,
        }
    }

    /// The channels of an old snapshot, converted.
    pub fn channels_to_current(
        channels: OrdMap<ChannelId, Arc<Channel>>,
    ) -> OrdMap<ChannelId, Arc<crate::realm::channels::Channel>> {
        channels
            .into_iter()
            .map(|(id, c)| (id, Arc::new(channel_to_current(Arc::unwrap_or_clone(c)))))
            .collect()
    }

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
        realm.channels = channels_to_current(r.channels);
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
                Change::ChannelCreated(ch) => C::Channel(ChannelChange::ChannelCreated(Box::new(
                    channel_to_current(*ch),
                ))),
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

/// Snapshot schema 2: schema 3's `Realm` without `properties` (its channels are
/// `v1::Channel`; every other type inside it is unchanged since, so they are today's).
/// WAL schema 2: today's nested `Change`, with `v1::Channel` in `ChannelCreated`.
pub mod v2 {
    use serde::Deserialize;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use imbl::{OrdMap, OrdSet};

    use super::v1::{channel_to_current, channels_to_current, Channel};
    use crate::realm::change::{
        AttachmentChange, LinkifierChange, PersonalChange, ProfileFieldChange,
    };
    use crate::realm::channels::{
        ChannelFolder, ChannelId, ChannelUpdate, FolderId, FolderUpdate, NewSubscription,
        SubProperty,
    };
    use crate::realm::emoji::EmojiChange;
    use crate::realm::groups::{GroupConfig, GroupId, GroupSetting, RealmSetting, UserGroup};
    use crate::realm::messages::MessageChange;
    use crate::realm::status::StatusChange;
    use crate::realm::{
        attachments, emoji, linkifiers, messages, navigation, profile_fields, push, status,
        ChannelChange as CurrentChannelChange, GroupChange, RealmChange, RealmSettings, User,
        UserChange, UserId,
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
        realm.channels = channels_to_current(r.channels);
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

    /// The WAL record's change as schema 2 stored it (variant order is the stored tag).
    #[derive(Debug, Deserialize)]
    pub enum Change {
        Realm(RealmChange),
        User(UserChange),
        Group(GroupChange),
        Channel(ChannelChange),
        Message(MessageChange),
        Linkifier(LinkifierChange),
        ProfileField(ProfileFieldChange),
        Attachment(AttachmentChange),
        Personal(PersonalChange),
        Status(StatusChange),
        Emoji(EmojiChange),
    }

    /// Schema 2's channel facts: a created channel had no topics policy.
    #[derive(Debug, Deserialize)]
    pub enum ChannelChange {
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

    /// Schema 2 to 3: a created channel gets the realm's topics policy (`inherit`).
    pub fn changes_to_current(changes: Vec<Change>) -> Vec<crate::realm::Change> {
        use crate::realm::Change as C;
        use CurrentChannelChange as CC;
        changes
            .into_iter()
            .map(|c| match c {
                Change::Realm(x) => C::Realm(x),
                Change::User(x) => C::User(x),
                Change::Group(x) => C::Group(x),
                Change::Channel(x) => C::Channel(match x {
                    ChannelChange::ChannelCreated(ch) => {
                        CC::ChannelCreated(Box::new(channel_to_current(*ch)))
                    }
                    ChannelChange::Subscribed { subs } => CC::Subscribed { subs },
                    ChannelChange::Unsubscribed { subs } => CC::Unsubscribed { subs },
                    ChannelChange::SubscriptionPropertySet {
                        user_id,
                        channel_id,
                        property,
                    } => CC::SubscriptionPropertySet {
                        user_id,
                        channel_id,
                        property,
                    },
                    ChannelChange::ChannelUpdated { channel_id, update } => {
                        CC::ChannelUpdated { channel_id, update }
                    }
                    ChannelChange::DefaultChannelSet {
                        channel_id,
                        is_default,
                    } => CC::DefaultChannelSet {
                        channel_id,
                        is_default,
                    },
                    ChannelChange::ChannelFolderCreated(f) => CC::ChannelFolderCreated(f),
                    ChannelChange::ChannelFolderUpdated { folder_id, update } => {
                        CC::ChannelFolderUpdated { folder_id, update }
                    }
                    ChannelChange::ChannelFoldersReordered { order } => {
                        CC::ChannelFoldersReordered { order }
                    }
                }),
                Change::Message(x) => C::Message(x),
                Change::Linkifier(x) => C::Linkifier(x),
                Change::ProfileField(x) => C::ProfileField(x),
                Change::Attachment(x) => C::Attachment(x),
                Change::Personal(x) => C::Personal(x),
                Change::Status(x) => C::Status(x),
                Change::Emoji(x) => C::Emoji(x),
            })
            .collect()
    }
}

/// Snapshot schema 3: today's `Realm` before the topics policies: its channels are
/// `v1::Channel` and its `properties` had no `topics_policy` (every other type inside
/// it is unchanged since, so they are today's).
pub mod v3 {
    use serde::Deserialize;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use imbl::{OrdMap, OrdSet};

    use super::v1::{channels_to_current, Channel};
    use crate::realm::channels::{ChannelFolder, ChannelId, FolderId};
    use crate::realm::groups::{GroupConfig, GroupId, GroupSetting, RealmSetting, UserGroup};
    use crate::realm::settings::RealmProperties as CurrentProperties;
    use crate::realm::topics_policy::TopicsPolicy;
    use crate::realm::{
        attachments, emoji, linkifiers, messages, navigation, profile_fields, push, status,
        RealmSettings, User, UserId,
    };

    /// The realm's plain settings as schema 3 stored them.
    #[derive(Debug, Deserialize)]
    pub struct RealmProperties {
        pub description: String,
        pub allow_message_editing: bool,
        pub message_content_edit_limit_seconds: Option<i64>,
        pub message_content_delete_limit_seconds: Option<i64>,
        pub move_messages_within_stream_limit_seconds: Option<i64>,
        pub move_messages_between_streams_limit_seconds: Option<i64>,
    }

    /// The snapshot's realm as schema 3 stored it (its serialized fields, in order).
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
        pub properties: RealmProperties,
    }

    /// Schema 4 added the topics policies: Zulip's defaults (`allow_empty_topic` for
    /// the realm, `inherit` for its channels) for a realm of schema 3, which could not
    /// change them.
    pub fn realm_to_current(r: Realm) -> crate::realm::Realm {
        let mut realm = crate::realm::Realm::new(r.settings);
        realm.users = r.users;
        realm.next_user_id = r.next_user_id;
        realm.groups = r.groups;
        realm.next_group_id = r.next_group_id;
        realm.channels = channels_to_current(r.channels);
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
        let p = r.properties;
        realm.properties = CurrentProperties {
            description: p.description,
            allow_message_editing: p.allow_message_editing,
            message_content_edit_limit_seconds: p.message_content_edit_limit_seconds,
            message_content_delete_limit_seconds: p.message_content_delete_limit_seconds,
            move_messages_within_stream_limit_seconds: p.move_messages_within_stream_limit_seconds,
            move_messages_between_streams_limit_seconds: p
                .move_messages_between_streams_limit_seconds,
            topics_policy: TopicsPolicy::AllowEmptyTopic,
            ..CurrentProperties::default()
        };
        realm
    }
}

/// Schema 4: the realm before each user's personal state (settings, muted topics and
/// users, alert words, drafts, snippets, reminders) and the realm settings that came
/// with them. Everything it stored is still stored, in the same shape; what schema 5
/// added starts at Zulip's defaults.
pub mod v4 {
    use serde::Deserialize;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use imbl::{OrdMap, OrdSet};

    use crate::realm::channels::{Channel, ChannelFolder, ChannelId, FolderId};
    use crate::realm::groups::{GroupConfig, GroupId, GroupSetting, RealmSetting, UserGroup};
    use crate::realm::settings::RealmProperties as CurrentProperties;
    use crate::realm::topics_policy::TopicsPolicy;
    use crate::realm::{
        attachments, emoji, linkifiers, messages, navigation, profile_fields, push, status,
        RealmSettings, User, UserId,
    };

    /// The realm's plain settings as schema 4 stored them.
    #[derive(Debug, Deserialize)]
    pub struct RealmProperties {
        pub description: String,
        pub allow_message_editing: bool,
        pub message_content_edit_limit_seconds: Option<i64>,
        pub message_content_delete_limit_seconds: Option<i64>,
        pub move_messages_within_stream_limit_seconds: Option<i64>,
        pub move_messages_between_streams_limit_seconds: Option<i64>,
        pub topics_policy: TopicsPolicy,
    }

    /// The snapshot's realm as schema 4 stored it (its serialized fields, in order).
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
        pub properties: RealmProperties,
    }

    /// Everything schema 4 stored, as it was; the rest at its defaults.
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
        let p = r.properties;
        realm.properties = CurrentProperties {
            description: p.description,
            allow_message_editing: p.allow_message_editing,
            message_content_edit_limit_seconds: p.message_content_edit_limit_seconds,
            message_content_delete_limit_seconds: p.message_content_delete_limit_seconds,
            move_messages_within_stream_limit_seconds: p.move_messages_within_stream_limit_seconds,
            move_messages_between_streams_limit_seconds: p
                .move_messages_between_streams_limit_seconds,
            topics_policy: p.topics_policy,
            ..CurrentProperties::default()
        };
        realm
    }
}

/// Snapshot schema 5: the realm before its data exports (`Realm::exports`). Every type
/// inside it is today's; schema 6 appended the exports, which start empty.
pub mod v5 {
    use serde::Deserialize;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use imbl::{OrdMap, OrdSet};

    use crate::realm::channels::email::EmailTokens;
    use crate::realm::channels::{Channel, ChannelFolder, ChannelId, FolderId};
    use crate::realm::groups::{GroupConfig, GroupId, GroupSetting, RealmSetting, UserGroup};
    use crate::realm::messages::reminders::ReminderState;
    use crate::realm::settings::RealmProperties;
    use crate::realm::user_settings::UserSettingsMap;
    use crate::realm::{
        attachments, drafts, emoji, invites, linkifiers, messages, muted_users, navigation,
        playgrounds, profile_fields, push, saved_snippets, status, user_topics, RealmSettings,
        User, UserId,
    };

    /// The snapshot's realm as schema 5 stored it (its serialized fields, in order).
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
        pub properties: RealmProperties,
        pub user_topics: OrdMap<UserId, Vec<user_topics::UserTopic>>,
        pub muted_users: OrdMap<UserId, Vec<muted_users::MutedUser>>,
        pub alert_words: OrdMap<UserId, Vec<String>>,
        pub user_settings: OrdMap<UserId, UserSettingsMap>,
        pub user_settings_defaults: UserSettingsMap,
        pub drafts: drafts::DraftState,
        pub saved_snippets: saved_snippets::SnippetState,
        pub reminders: ReminderState,
        pub invites: invites::InviteState,
        pub channel_email_tokens: EmailTokens,
        pub playgrounds: playgrounds::PlaygroundState,
    }

    /// Everything schema 5 stored, as it was; no exports.
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
        realm.properties = r.properties;
        realm.user_topics = r.user_topics;
        realm.muted_users = r.muted_users;
        realm.alert_words = r.alert_words;
        realm.user_settings = r.user_settings;
        realm.user_settings_defaults = r.user_settings_defaults;
        realm.drafts = r.drafts;
        realm.saved_snippets = r.saved_snippets;
        realm.reminders = r.reminders;
        realm.invites = r.invites;
        realm.channel_email_tokens = r.channel_email_tokens;
        realm.playgrounds = r.playgrounds;
        realm
    }
}

pub mod v6 {
    use serde::Deserialize;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use imbl::{OrdMap, OrdSet};

    use crate::realm::channels::email::EmailTokens;
    use crate::realm::channels::{Channel, ChannelFolder, ChannelId, FolderId};
    use crate::realm::groups::{GroupConfig, GroupId, GroupSetting, RealmSetting, UserGroup};
    use crate::realm::messages::reminders::ReminderState;
    use crate::realm::settings::RealmProperties;
    use crate::realm::user_settings::UserSettingsMap;
    use crate::realm::{
        attachments, drafts, emoji, invites, linkifiers, messages, muted_users, navigation,
        playgrounds, profile_fields, push, realm_export, saved_snippets, status, user_topics,
        RealmSettings, User, UserId,
    };

    /// The snapshot's realm as schema 6 stored it (its serialized fields, in order).
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
        pub properties: RealmProperties,
        pub user_topics: OrdMap<UserId, Vec<user_topics::UserTopic>>,
        pub muted_users: OrdMap<UserId, Vec<muted_users::MutedUser>>,
        pub alert_words: OrdMap<UserId, Vec<String>>,
        pub user_settings: OrdMap<UserId, UserSettingsMap>,
        pub user_settings_defaults: UserSettingsMap,
        pub drafts: drafts::DraftState,
        pub saved_snippets: saved_snippets::SnippetState,
        pub reminders: ReminderState,
        pub invites: invites::InviteState,
        pub channel_email_tokens: EmailTokens,
        pub playgrounds: playgrounds::PlaygroundState,
        pub exports: realm_export::ExportState,
    }

    /// Everything schema 6 stored, as it was; no sessions.
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
        realm.properties = r.properties;
        realm.user_topics = r.user_topics;
        realm.muted_users = r.muted_users;
        realm.alert_words = r.alert_words;
        realm.user_settings = r.user_settings;
        realm.user_settings_defaults = r.user_settings_defaults;
        realm.drafts = r.drafts;
        realm.saved_snippets = r.saved_snippets;
        realm.reminders = r.reminders;
        realm.invites = r.invites;
        realm.channel_email_tokens = r.channel_email_tokens;
        realm.playgrounds = r.playgrounds;
        realm.exports = r.exports;
        realm
    }
}
