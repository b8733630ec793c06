//! `Change`: a fact already decided, the WAL record and the source of client events.
//!
//! Every value a change needs (ids, times, keys, password hashes) is inside it, so that
//! `Realm::apply` is deterministic and replaying the WAL rebuilds the same realm.

use serde::{Deserialize, Serialize};

pub use super::attachments::AttachmentChange;
use super::channels::{
    Channel, ChannelFolder, ChannelId, ChannelUpdate, FolderId, FolderUpdate, NewSubscription,
    SubProperty,
};

use super::drafts::{Draft, DraftId};
use super::emoji::EmojiChange;
use super::groups::{GroupConfig, GroupId, GroupSetting, GroupUpdate, RealmSetting, UserGroup};
pub use super::invites::InviteChange;
pub use super::linkifiers::LinkifierChange;
use super::messages::reminders::{Reminder, ReminderId};
use super::messages::MessageChange;
use super::navigation::NavigationView;
pub use super::profile_fields::ProfileFieldChange;
use super::push::{PushToken, PushTokenKind};
pub use super::realm_export::ExportChange;
use super::saved_snippets::{SavedSnippet, SnippetId};
pub use super::sessions::SessionChange;
use super::settings::RealmProperty;
use super::status::StatusChange;
use super::user_settings::SettingValue;
use super::user_topics::VisibilityPolicy;
use super::{RealmSettings, Role, UserId};

/// One decided fact, by the resource it is about. Never a generic patch: one variant
/// per kind of fact, and every match over a resource's changes is exhaustive, so a new
/// kind of fact cannot silently produce no state or no event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Change {
    // WAL records name variants by position: a new kind of fact goes at the end.
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
    /// Data exports (`/export/realm`).
    Export(ExportChange),
    /// Browser sessions (logins and logouts of the web client).
    Session(SessionChange),
    /// Outgoing-webhook services, bot storage and promised deliveries.
    Bot(super::bot_services::BotChange),
    /// Missed-message emails promised and done.
    Mail(super::missed_mail::MailChange),
}

/// Facts about the realm itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RealmChange {
    /// The realm came into being with these settings (first record of every realm).
    RealmCreated { settings: RealmSettings },
    /// One of the realm's group-valued settings changed.
    GroupSettingSet {
        setting: RealmSetting,
        value: GroupSetting,
    },
    /// One of the realm's plain settings changed (`PATCH /realm`).
    PropertySet(RealmProperty),
    /// The realm's default of a personal setting for new users changed.
    UserSettingDefaultSet { name: String, value: SettingValue },
    /// Invitations were created, revoked or accepted.
    Invite(InviteChange),
    /// A code playground was added.
    PlaygroundAdded(super::playgrounds::Playground),
    /// A code playground was removed.
    PlaygroundRemoved {
        id: super::playgrounds::PlaygroundId,
    },
}

/// Facts about accounts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum UserChange {
    /// A user or bot account was created.
    UserCreated(NewUser),
    /// A user's `can_create_users` permission was granted or revoked (a server command).
    CanCreateUsersSet { user_id: UserId, value: bool },
    /// An account was deactivated (a user's bots each get their own record first).
    Deactivated { user_id: UserId },
    /// A deactivated account was reactivated.
    Reactivated { user_id: UserId },
    /// A user's role changed.
    RoleChanged { user_id: UserId, role: Role },
    /// A user's full name changed (already validated and stripped).
    FullNameChanged { user_id: UserId, full_name: String },
    /// A user changed their password (the new argon2 PHC string).
    PasswordChanged {
        user_id: UserId,
        password_hash: String,
    },
}

/// Facts about user groups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum GroupChange {
    /// A user group was created (the system groups, at realm creation).
    UserGroupCreated(UserGroup),
    /// A user created a named group (its subgroups follow in `SubgroupsAdded`).
    GroupCreated {
        group: UserGroup,
        config: GroupConfig,
    },
    /// One property of a named group changed (deactivation included).
    GroupUpdated {
        group_id: GroupId,
        update: GroupUpdate,
    },
    /// Users became direct members of a group (ids in order, none already members).
    MembersAdded {
        group_id: GroupId,
        user_ids: Vec<UserId>,
    },
    /// Users stopped being direct members of a group.
    MembersRemoved {
        group_id: GroupId,
        user_ids: Vec<UserId>,
    },
    /// Groups became direct subgroups of a group.
    SubgroupsAdded {
        group_id: GroupId,
        subgroup_ids: Vec<GroupId>,
    },
    /// Groups stopped being direct subgroups of a group.
    SubgroupsRemoved {
        group_id: GroupId,
        subgroup_ids: Vec<GroupId>,
    },
}

/// Facts about one user's own state: navigation views, push tokens, topic visibility,
/// muted users, alert words, settings, drafts, saved snippets and reminders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PersonalChange {
    /// A user configured a built-in view or added a custom one.
    NavigationViewAdded {
        user_id: UserId,
        view: NavigationView,
    },
    /// A user's view changed: the fields given.
    NavigationViewUpdated {
        user_id: UserId,
        fragment: String,
        name: Option<String>,
        is_pinned: Option<bool>,
    },
    /// A user removed a view.
    NavigationViewRemoved { user_id: UserId, fragment: String },
    /// A user registered a push token.
    PushTokenAdded { user_id: UserId, token: PushToken },
    /// A user removed a push token.
    PushTokenRemoved {
        user_id: UserId,
        kind: PushTokenKind,
        token: String,
    },
    /// A user registered an E2EE push device; pending until the relay answers.
    PushDeviceRegistered {
        user_id: UserId,
        push_account_id: i64,
        token_kind: PushTokenKind,
        push_key: Vec<u8>,
    },
    /// The relay registered a pending device under this id.
    PushDeviceActivated {
        user_id: UserId,
        push_account_id: i64,
        device_id: i64,
    },
    /// The relay refused a pending device.
    PushDeviceFailed {
        user_id: UserId,
        push_account_id: i64,
        error_code: String,
    },
    /// A user set a topic's visibility policy (`Inherit` removes their row).
    UserTopicSet {
        user_id: UserId,
        channel_id: ChannelId,
        /// The topic as the request named it (an existing row keeps its own spelling).
        topic: String,
        policy: VisibilityPolicy,
        /// UNIX seconds.
        last_updated: i64,
    },
    /// A user muted another user (UNIX seconds).
    UserMuted {
        user_id: UserId,
        muted_user_id: UserId,
        timestamp: i64,
    },
    /// A user unmuted another user.
    UserUnmuted {
        user_id: UserId,
        muted_user_id: UserId,
    },
    /// A user's alert words are now these (added or removed: the whole list after).
    AlertWordsSet { user_id: UserId, words: Vec<String> },
    /// A user changed one of their personal settings (`user_settings::SETTINGS`).
    SettingSet {
        user_id: UserId,
        name: String,
        value: SettingValue,
    },
    /// A user saved drafts (`POST /drafts`), in the order sent.
    DraftsAdded { user_id: UserId, drafts: Vec<Draft> },
    /// A user's draft was replaced (`PATCH /drafts/{draft_id}`).
    DraftUpdated { user_id: UserId, draft: Draft },
    /// A user deleted a draft.
    DraftRemoved { user_id: UserId, draft_id: DraftId },
    /// A user created (`created`) or edited a saved snippet: the whole snippet.
    SnippetSaved {
        user_id: UserId,
        snippet: SavedSnippet,
        created: bool,
    },
    /// A user deleted a saved snippet.
    SnippetRemoved {
        user_id: UserId,
        snippet_id: SnippetId,
    },
    /// A user asked to be reminded of a message.
    ReminderAdded { user_id: UserId, reminder: Reminder },
    /// A reminder is gone: deleted by its user, or delivered (the Notification Bot's
    /// message precedes it in the same decision).
    ReminderRemoved {
        user_id: UserId,
        reminder_id: ReminderId,
    },
}

impl PersonalChange {
    /// The user whose state it changes.
    pub fn user_id(&self) -> UserId {
        match self {
            PersonalChange::NavigationViewAdded { user_id, .. }
            | PersonalChange::NavigationViewUpdated { user_id, .. }
            | PersonalChange::NavigationViewRemoved { user_id, .. }
            | PersonalChange::PushTokenAdded { user_id, .. }
            | PersonalChange::PushTokenRemoved { user_id, .. }
            | PersonalChange::PushDeviceRegistered { user_id, .. }
            | PersonalChange::PushDeviceActivated { user_id, .. }
            | PersonalChange::PushDeviceFailed { user_id, .. }
            | PersonalChange::UserTopicSet { user_id, .. }
            | PersonalChange::UserMuted { user_id, .. }
            | PersonalChange::UserUnmuted { user_id, .. }
            | PersonalChange::AlertWordsSet { user_id, .. }
            | PersonalChange::SettingSet { user_id, .. }
            | PersonalChange::DraftsAdded { user_id, .. }
            | PersonalChange::DraftUpdated { user_id, .. }
            | PersonalChange::DraftRemoved { user_id, .. }
            | PersonalChange::SnippetSaved { user_id, .. }
            | PersonalChange::SnippetRemoved { user_id, .. }
            | PersonalChange::ReminderAdded { user_id, .. }
            | PersonalChange::ReminderRemoved { user_id, .. } => *user_id,
        }
    }
}

/// Facts about channels, subscriptions, default channels and channel folders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ChannelChange {
    /// A channel was created (without subscribers: `Subscribed` follows).
    ChannelCreated(Box<Channel>),
    /// Users were subscribed to channels (one request's worth, with their colors).
    Subscribed { subs: Vec<NewSubscription> },
    /// Users were unsubscribed from channels: `(channel, user)` pairs.
    Unsubscribed { subs: Vec<(ChannelId, UserId)> },
    /// One personal property of a subscription changed.
    SubscriptionPropertySet {
        user_id: UserId,
        channel_id: ChannelId,
        property: SubProperty,
    },
    /// One property of a channel changed.
    ChannelUpdated {
        channel_id: ChannelId,
        update: ChannelUpdate,
    },
    /// A channel joined or left the set of default channels.
    DefaultChannelSet {
        channel_id: ChannelId,
        is_default: bool,
    },
    /// A channel folder was created.
    ChannelFolderCreated(ChannelFolder),
    /// One property of a channel folder changed.
    ChannelFolderUpdated {
        folder_id: FolderId,
        update: FolderUpdate,
    },
    /// Channel folders were reordered; `order` is the list as the client sent it.
    ChannelFoldersReordered { order: Vec<i64> },
    /// A channel's email-gateway token was made for a creator and sender.
    EmailTokenCreated {
        key: super::channels::email::EmailTokenKey,
        token: String,
    },
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
    /// Whether `next`, right after `self` in one decision, may be applied before the
    /// events of `self` are rendered: true only where neither can change the other's
    /// events (channels created together). Lets the actor take one version for a long
    /// run of such changes instead of one per change.
    pub fn batches_with(&self, next: &Change) -> bool {
        matches!(
            (self, next),
            (
                Change::Channel(ChannelChange::ChannelCreated(_)),
                Change::Channel(ChannelChange::ChannelCreated(_))
            )
        )
    }

    /// How durable this change must be before its request is answered.
    pub fn durability(&self) -> DurabilityClass {
        match self {
            Change::Realm(_)
            | Change::User(_)
            | Change::Group(_)
            | Change::Channel(_)
            | Change::Message(_)
            | Change::Linkifier(_)
            | Change::ProfileField(_)
            | Change::Attachment(_)
            | Change::Personal(_)
            | Change::Status(_)
            | Change::Emoji(_)
            | Change::Export(_)
            | Change::Session(_)
            | Change::Bot(_)
            | Change::Mail(_) => DurabilityClass::Durable,
        }
    }
}
