//! The realm: one organization's whole state and rules, plain Rust.
//!
//! Nothing here knows HTTP, actix or storage. Rules are `decide_*` (read state, return
//! `Change`s) and `view_*` (read state, return JSON); `apply` turns a change into state
//! and cannot fail.
//!
//! # The one deliberate circle
//!
//! The resource files of this folder and three hubs import each other: `Realm` (here)
//! holds every resource's state, `change::Change` names every resource's facts (the
//! WAL's vocabulary, one closed enum so that a record decodes to exactly one fact),
//! and `events` renders them; each resource's rules are `impl Realm` blocks that read
//! other resources and return `Change`s. The circle is the realm being one aggregate
//! with one writer, not an accident of placement: a resource file may use any other
//! (`realm::channels` from `realm::messages`), and nothing outside `realm/` is
//! imported into it but leaves (`error`, `escape`, `version`). The other folders
//! (`api/`, `hub/`, `storage/`) have no circle.

pub mod alert_words;
pub mod attachments;
pub mod bot_services;
pub mod change;
pub mod channels;
pub mod cx;
pub mod dev;
pub mod dev_history;
pub mod drafts;
pub mod emoji;
pub mod events;
pub mod groups;
pub mod invites;
pub mod lifecycle;
pub mod linkifiers;
pub mod markdown;
pub mod messages;
pub mod missed_mail;
pub mod muted_users;
pub mod navigation;
pub mod onboarding;
pub mod password_reset;
pub mod playgrounds;
pub mod presence;
pub mod profile_fields;
pub mod push;
pub mod realm_export;
pub mod register;
pub mod saved_snippets;
pub mod sessions;
pub mod settings;
pub mod status;
pub mod topics_policy;
pub mod uri_template;
pub mod user_settings;
pub mod user_topics;
pub mod users;
pub mod write;

use std::sync::Arc;

use imbl::{HashMap, OrdMap, OrdSet};

use serde::{Deserialize, Serialize};

pub use change::{
    Change, ChannelChange, DurabilityClass, GroupChange, NewUser, PersonalChange, RealmChange,
    UserChange,
};
pub use cx::{Clock, Cx, ManualClock, SystemClock};
pub use write::{Decided, Rule, SystemRule};

use crate::error::{ApiError, ApiResult};

/// A user id, unique within a realm.
pub type UserId = u64;

/// Zulip's roles, with their wire values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Role {
    Owner,
    Administrator,
    Moderator,
    Member,
    Guest,
}

impl Role {
    pub fn value(self) -> u16 {
        match self {
            Role::Owner => 100,
            Role::Administrator => 200,
            Role::Moderator => 300,
            Role::Member => 400,
            Role::Guest => 600,
        }
    }

    pub fn from_value(v: i64) -> Option<Role> {
        Some(match v {
            100 => Role::Owner,
            200 => Role::Administrator,
            300 => Role::Moderator,
            400 => Role::Member,
            600 => Role::Guest,
            _ => return None,
        })
    }
}

/// Who may see a human user's real email address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EmailVisibility {
    /// Everyone sees the real address; the API email is the real one.
    Everyone,
    /// Only administrators (and the user) see it; the API email is `user<ID>@<domain>`.
    AdminsOnly,
}

/// The realm's own settings, fixed at creation (later issues make some editable).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RealmSettings {
    pub name: String,
    /// The Host prefix that selects this realm when a server holds several.
    pub subdomain: String,
    /// Shown in `realm_url` (`GET /server_settings`).
    pub url: String,
    /// Development realms answer `POST /dev_fetch_api_key`.
    pub dev: bool,
    /// Default email visibility of human users.
    pub email_visibility: EmailVisibility,
    /// Domain of the fake API emails (`user<ID>@<domain>`).
    pub fake_email_domain: String,
    /// How clients show the empty topic.
    pub empty_topic_display_name: String,
    /// UNIX seconds.
    pub date_created: i64,
}

/// An account: a human or a bot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    pub id: UserId,
    /// The real address; the API `email` may be a fake one (see `EmailVisibility`).
    pub delivery_email: String,
    pub full_name: String,
    pub role: Role,
    pub is_active: bool,
    pub bot_type: Option<u8>,
    pub bot_owner_id: Option<UserId>,
    /// IANA time zone, or "" when unset.
    pub timezone: String,
    /// 32 alphanumeric characters; compared in constant time.
    pub api_key: String,
    pub password_hash: Option<String>,
    pub date_joined: i64,
    pub avatar_version: u32,
    /// Zulip's `can_create_users` flag, granted by a server command.
    pub can_create_users: bool,
}

impl User {
    pub fn is_bot(&self) -> bool {
        self.bot_type.is_some()
    }

    pub fn is_admin(&self) -> bool {
        self.role <= Role::Administrator
    }

    pub fn is_owner(&self) -> bool {
        self.role == Role::Owner
    }

    pub fn is_guest(&self) -> bool {
        self.role == Role::Guest
    }

    /// Zulip's `can_access_public_streams`: everyone but guests.
    pub fn can_access_public_channels(&self) -> bool {
        !self.is_guest()
    }
}

/// One organization's state. Owned by exactly one realm actor.
///
/// Not an encoding: a snapshot stores it as one section per resource
/// (`storage::codec::sections`), so adding a field here adds it to a resource's
/// section, never changes the whole record. Fields marked derived are rebuilt after
/// loading (`rebuild_indexes`).
#[derive(Debug, Clone, PartialEq)]
pub struct Realm {
    pub settings: RealmSettings,
    /// Every account, active or not, by id (ordered, so listings are stable).
    pub users: OrdMap<UserId, Arc<User>>,
    /// The next id `decide_*` hands out; ids are never reused.
    pub next_user_id: UserId,
    /// User groups by id (the system groups, created with the realm).
    pub groups: OrdMap<groups::GroupId, groups::UserGroup>,
    pub next_group_id: groups::GroupId,
    /// Channels by id, archived ones included, with their subscriptions.
    pub channels: OrdMap<channels::ChannelId, Arc<channels::Channel>>,
    pub next_channel_id: channels::ChannelId,
    /// The channels new users join (seed 4.20).
    pub default_channels: OrdSet<channels::ChannelId>,
    /// Channel folders by id (seed 4.19).
    pub folders: OrdMap<channels::FolderId, channels::ChannelFolder>,
    pub next_folder_id: channels::FolderId,
    /// Next message id and topics per channel (message rows live in the message store).
    pub messages: messages::MessageState,
    /// Lower-cased delivery email -> id. Derived from `users`; rebuilt after loading.
    by_email: HashMap<String, UserId>,
    /// API key -> id, for the webhook URLs that carry only a key. Derived from
    /// `users`; rebuilt after loading.
    by_api_key: HashMap<String, UserId>,
    /// Lower-cased channel name -> id. Derived from `channels`; rebuilt after loading.
    channel_by_name: HashMap<String, channels::ChannelId>,
    /// Palette use of each user's subscriptions. Derived from `channels`; rebuilt after
    /// loading.
    color_use: HashMap<UserId, channels::ColorUse>,
    /// Linkifiers by id (seed 4.11).
    pub linkifiers: OrdMap<linkifiers::LinkifierId, linkifiers::Linkifier>,
    pub next_linkifier_id: linkifiers::LinkifierId,
    /// The linkifiers compiled for rendering. Derived from `linkifiers`.
    linkifier_cache: linkifiers::LinkifierCache,
    /// Custom profile fields by id (seed 4.3).
    pub profile_fields: OrdMap<profile_fields::FieldId, profile_fields::ProfileField>,
    pub next_profile_field_id: profile_fields::FieldId,
    /// Users' values, by field then user (deleting a field drops its map).
    pub profile_values:
        OrdMap<profile_fields::FieldId, OrdMap<UserId, profile_fields::ProfileValue>>,
    /// Uploaded files' metadata by id (seed 4.14); the bytes are under the data folder.
    pub attachments: OrdMap<attachments::AttachmentId, attachments::Attachment>,
    pub next_attachment_id: attachments::AttachmentId,
    /// `path_id` -> attachment. Derived from `attachments`.
    attachment_by_path: HashMap<String, attachments::AttachmentId>,
    /// Attachments per stored file (`sha256`). Derived from `attachments`.
    attachment_shas: HashMap<String, u64>,
    /// Each user's attachments. Derived from `attachments`.
    attachments_by_owner: HashMap<UserId, OrdSet<attachments::AttachmentId>>,
    /// Total size of the uploads. Derived from `attachments`.
    upload_space_used: u64,
    /// What named groups hold besides their `UserGroup`: permissions, deactivation.
    pub group_configs: OrdMap<groups::GroupId, groups::GroupConfig>,
    /// The realm's group settings that differ from Zulip's defaults (`realm_setting`).
    pub realm_group_settings:
        std::collections::BTreeMap<groups::RealmSetting, groups::GroupSetting>,
    /// Each user's configured navigation views (seed 4.8, 4.10).
    pub navigation_views: OrdMap<UserId, Vec<navigation::NavigationView>>,
    /// Each user's registered push tokens (seed 4.17, 4.18).
    pub push_tokens: OrdMap<UserId, Vec<push::PushToken>>,
    /// Each user's E2EE push devices (seed 4.22).
    pub push_devices: OrdMap<UserId, Vec<push::PushDevice>>,
    /// Group name -> id. Derived from `groups`; rebuilt after loading.
    group_by_name: HashMap<String, groups::GroupId>,
    /// Where each group is used (settings, supergroups). Derived; rebuilt after loading.
    group_uses: groups::uses::GroupUses,
    /// User statuses and who turned presence off (seed 4.4).
    pub status: status::StatusState,
    /// Custom emoji.
    pub emoji: emoji::EmojiState,
    /// The settings `PATCH /realm` changes besides the name and the group settings
    /// (description, message policies); Zulip's defaults until changed.
    pub properties: settings::RealmProperties,
    /// Each user's topic visibility policies (`POST /user_topics`).
    pub user_topics: OrdMap<UserId, Vec<user_topics::UserTopic>>,
    /// Each user's muted users, in the order muted.
    pub muted_users: OrdMap<UserId, Vec<muted_users::MutedUser>>,
    /// Each user's alert words, in the order added.
    pub alert_words: OrdMap<UserId, Vec<String>>,
    /// Every active user's alert words, compiled for matching. Derived from
    /// `alert_words`.
    alert_word_index: alert_words::AlertWordIndex,
    /// Who has a visibility policy for each topic. Derived from `user_topics`.
    topic_policy_index: user_topics::TopicPolicyIndex,
    /// Each user's personal settings that differ from Zulip's defaults (`user_settings`).
    pub user_settings: OrdMap<UserId, user_settings::UserSettingsMap>,
    /// The realm's defaults for new users that differ from Zulip's (`user_settings`).
    pub user_settings_defaults: user_settings::UserSettingsMap,
    /// Each user's drafts (`/drafts`).
    pub drafts: drafts::DraftState,
    /// Each user's saved snippets (`/saved_snippets`).
    pub saved_snippets: saved_snippets::SnippetState,
    /// Pending message reminders (`/reminders`), with their due-time index.
    pub reminders: messages::reminders::ReminderState,
    /// Email invitations and reusable invitation links.
    pub invites: invites::InviteState,
    /// Channels' email-gateway tokens (`GET /streams/{id}/email_address`).
    pub channel_email_tokens: channels::email::EmailTokens,
    /// Code playgrounds (`POST /realm/playgrounds`).
    pub playgrounds: playgrounds::PlaygroundState,
    /// Data exports (`/export/realm`), by id.
    pub exports: realm_export::ExportState,
    /// Browser sessions of the web client, by their cookie's digest.
    pub sessions: sessions::SessionState,
    /// Outgoing-webhook services, bot storage and the delivery outbox.
    pub bot_services: bot_services::BotServiceState,
    /// The missed-message emails owed.
    pub missed_mail: missed_mail::MissedMailState,
    /// Who asked for channel emails (derived, rebuilt on load).
    pub(crate) mail_index: missed_mail::MailIndex,
}

impl Realm {
    /// An empty realm with these settings (what `Change::Realm(RealmChange::RealmCreated)` yields).
    pub fn new(settings: RealmSettings) -> Self {
        Realm {
            settings,
            users: OrdMap::new(),
            next_user_id: 1,
            groups: OrdMap::new(),
            next_group_id: 1,
            channels: OrdMap::new(),
            next_channel_id: 1,
            default_channels: OrdSet::new(),
            folders: OrdMap::new(),
            next_folder_id: 1,
            messages: messages::MessageState::new(),
            by_email: HashMap::new(),
            by_api_key: HashMap::new(),
            channel_by_name: HashMap::new(),
            color_use: HashMap::new(),
            linkifiers: OrdMap::new(),
            next_linkifier_id: 1,
            linkifier_cache: Default::default(),
            profile_fields: OrdMap::new(),
            next_profile_field_id: 1,
            profile_values: OrdMap::new(),
            attachments: OrdMap::new(),
            next_attachment_id: 1,
            attachment_by_path: HashMap::new(),
            attachment_shas: HashMap::new(),
            attachments_by_owner: HashMap::new(),
            upload_space_used: 0,
            group_configs: OrdMap::new(),
            realm_group_settings: Default::default(),
            navigation_views: OrdMap::new(),
            push_tokens: OrdMap::new(),
            push_devices: OrdMap::new(),
            group_by_name: HashMap::new(),
            group_uses: Default::default(),
            status: status::StatusState::default(),
            emoji: emoji::EmojiState::default(),
            properties: settings::RealmProperties::default(),
            user_topics: OrdMap::new(),
            muted_users: OrdMap::new(),
            alert_words: OrdMap::new(),
            alert_word_index: Default::default(),
            topic_policy_index: Default::default(),
            user_settings: OrdMap::new(),
            user_settings_defaults: Default::default(),
            drafts: drafts::DraftState::default(),
            saved_snippets: saved_snippets::SnippetState::default(),
            reminders: messages::reminders::ReminderState::default(),
            invites: invites::InviteState::default(),
            channel_email_tokens: Default::default(),
            playgrounds: Default::default(),
            exports: Default::default(),
            sessions: Default::default(),
            bot_services: Default::default(),
            missed_mail: Default::default(),
            mail_index: Default::default(),
        }
    }

    /// Builds a realm from its first change, which must be `RealmCreated`.
    pub fn from_first_change(change: &Change) -> Option<Self> {
        match change {
            Change::Realm(RealmChange::RealmCreated { settings }) => {
                Some(Realm::new(settings.clone()))
            }
            _ => None,
        }
    }

    /// Every field of `Realm`, named once, so that a new one does not compile until it is
    /// placed: state a snapshot keeps (a section of its resource in
    /// `storage::codec::sections`, `sections_of` and `put_section`, or a new section
    /// there), or an index derived from that state (`rebuild_indexes`).
    #[allow(dead_code)]
    fn every_field_is_kept_or_derived(&self) {
        let Realm {
            // Kept by a snapshot section.
            settings: _,
            users: _,
            next_user_id: _,
            groups: _,
            next_group_id: _,
            channels: _,
            next_channel_id: _,
            default_channels: _,
            folders: _,
            next_folder_id: _,
            messages: _,
            linkifiers: _,
            next_linkifier_id: _,
            profile_fields: _,
            next_profile_field_id: _,
            profile_values: _,
            attachments: _,
            next_attachment_id: _,
            group_configs: _,
            realm_group_settings: _,
            navigation_views: _,
            push_tokens: _,
            push_devices: _,
            status: _,
            emoji: _,
            properties: _,
            user_topics: _,
            muted_users: _,
            alert_words: _,
            user_settings: _,
            user_settings_defaults: _,
            drafts: _,
            saved_snippets: _,
            reminders: _,
            invites: _,
            channel_email_tokens: _,
            playgrounds: _,
            exports: _,
            sessions: _,
            bot_services: _,
            missed_mail: _,
            // Derived: rebuilt from the kept state.
            by_email: _,
            by_api_key: _,
            channel_by_name: _,
            color_use: _,
            linkifier_cache: _,
            attachment_by_path: _,
            attachment_shas: _,
            attachments_by_owner: _,
            upload_space_used: _,
            group_by_name: _,
            group_uses: _,
            alert_word_index: _,
            topic_policy_index: _,
            mail_index: _,
        } = self;
    }

    /// Rebuilds the derived indexes; called after decoding a snapshot.
    pub fn rebuild_indexes(&mut self) {
        self.by_email = self
            .users
            .values()
            .map(|u| (u.delivery_email.to_lowercase(), u.id))
            .collect();
        self.by_api_key = self
            .users
            .values()
            .filter(|u| !u.api_key.is_empty())
            .map(|u| (u.api_key.clone(), u.id))
            .collect();
        self.channel_by_name = self
            .channels
            .values()
            .map(|c| (c.name.to_lowercase(), c.id))
            .collect();
        let mut color_use: HashMap<UserId, channels::ColorUse> = HashMap::new();
        for ch in self.channels.values() {
            for (user, sub) in ch.subs.iter() {
                color_use.entry(*user).or_default().add(&sub.color);
            }
        }
        self.color_use = color_use;
        self.messages.rebuild_due();
        self.reminders.rebuild_due();
        self.rebuild_mail_index();
        self.rebuild_linkifier_cache();
        self.rebuild_attachment_indexes();
        self.emoji.rebuild_index();
        self.sessions.rebuild_index();
        self.rebuild_group_uses();
        self.rebuild_alert_word_index();
        self.rebuild_topic_policy_index();
        self.invites.rebuild_index();
    }

    /// Turns a decided fact into state. Infallible: `decide_*` validated it.
    pub fn apply(&mut self, change: &Change) {
        match change {
            Change::Realm(RealmChange::RealmCreated { settings }) => {
                self.settings = settings.clone()
            }
            Change::User(UserChange::UserCreated(n)) => {
                self.by_email
                    .insert(n.delivery_email.to_lowercase(), n.user_id);
                if !n.api_key.is_empty() {
                    self.by_api_key.insert(n.api_key.clone(), n.user_id);
                }
                self.next_user_id = self.next_user_id.max(n.user_id + 1);
                self.users.insert(
                    n.user_id,
                    Arc::new(User {
                        id: n.user_id,
                        delivery_email: n.delivery_email.clone(),
                        full_name: n.full_name.clone(),
                        role: n.role,
                        is_active: true,
                        bot_type: n.bot_type,
                        bot_owner_id: n.bot_owner_id,
                        timezone: n.timezone.clone(),
                        api_key: n.api_key.clone(),
                        password_hash: n.password_hash.clone(),
                        date_joined: n.date_joined,
                        avatar_version: 1,
                        can_create_users: false,
                    }),
                );
                self.apply_new_user_settings(n.user_id);
            }
            Change::User(UserChange::CanCreateUsersSet { user_id, value }) => {
                if let Some(u) = self.users.get_mut(user_id) {
                    Arc::make_mut(u).can_create_users = *value;
                }
            }
            Change::User(
                c @ (UserChange::Deactivated { .. }
                | UserChange::Reactivated { .. }
                | UserChange::RoleChanged { .. }
                | UserChange::FullNameChanged { .. }),
            ) => self.apply_lifecycle_change(c),
            Change::Realm(RealmChange::GroupSettingSet { setting, value }) => {
                self.apply_realm_group_setting(*setting, value)
            }
            Change::Realm(RealmChange::PropertySet(p)) => self.apply_realm_property(p),
            Change::Realm(RealmChange::UserSettingDefaultSet { name, value }) => {
                self.apply_user_setting_default(name, value)
            }
            Change::User(UserChange::PasswordChanged {
                user_id,
                password_hash,
            }) => {
                if let Some(u) = self.users.get_mut(user_id) {
                    Arc::make_mut(u).password_hash = Some(password_hash.clone());
                }
                self.end_user_sessions(*user_id);
            }
            Change::Realm(RealmChange::Invite(c)) => self.apply_invite_change(c),
            Change::Realm(
                c @ (RealmChange::PlaygroundAdded(_) | RealmChange::PlaygroundRemoved { .. }),
            ) => self.apply_playground_change(c),
            Change::Group(g) => self.apply_group_change(g),
            Change::Channel(c) => {
                self.index_channel_change(c);
                self.apply_channel_change(c)
            }
            Change::Message(m) => self.messages.apply(m),
            Change::Linkifier(c) => self.apply_linkifier_change(c),
            Change::ProfileField(c) => self.apply_profile_field_change(c),
            Change::Attachment(c) => self.apply_attachment_change(c),
            Change::Personal(p) => match p {
                PersonalChange::NavigationViewAdded { user_id, view } => {
                    self.apply_navigation_added(*user_id, view)
                }
                PersonalChange::NavigationViewUpdated {
                    user_id,
                    fragment,
                    name,
                    is_pinned,
                } => self.apply_navigation_updated(*user_id, fragment, name, *is_pinned),
                PersonalChange::NavigationViewRemoved { user_id, fragment } => {
                    self.apply_navigation_removed(*user_id, fragment)
                }
                PersonalChange::PushTokenAdded { user_id, token } => {
                    self.apply_push_token_added(*user_id, token)
                }
                PersonalChange::PushTokenRemoved {
                    user_id,
                    kind,
                    token,
                } => self.apply_push_token_removed(*user_id, *kind, token),
                PersonalChange::PushDeviceRegistered { .. }
                | PersonalChange::PushDeviceActivated { .. }
                | PersonalChange::PushDeviceFailed { .. } => self.apply_push_device(p),
                PersonalChange::UserTopicSet { .. } => self.apply_user_topic(p),
                PersonalChange::UserMuted { .. } | PersonalChange::UserUnmuted { .. } => {
                    self.apply_muted_user(p)
                }
                PersonalChange::AlertWordsSet { user_id, words } => {
                    self.apply_alert_words(*user_id, words)
                }
                PersonalChange::SettingSet {
                    user_id,
                    name,
                    value,
                } => self.apply_user_setting(*user_id, name, value),
                PersonalChange::DraftsAdded { .. }
                | PersonalChange::DraftUpdated { .. }
                | PersonalChange::DraftRemoved { .. } => self.apply_draft_change(p),
                PersonalChange::SnippetSaved { .. } | PersonalChange::SnippetRemoved { .. } => {
                    self.apply_snippet_change(p)
                }
                PersonalChange::ReminderAdded { .. } | PersonalChange::ReminderRemoved { .. } => {
                    self.apply_reminder_change(p)
                }
            },
            Change::Status(c) => self.apply_status_change(c),
            Change::Emoji(c) => self.apply_emoji_change(c),
            Change::Export(c) => self.apply_export_change(c),
            Change::Session(c) => self.apply_session_change(c),
            Change::Bot(c) => self.apply_bot_change(c),
            Change::Mail(c) => self.apply_mail_change(c),
        }
    }

    pub fn user(&self, id: UserId) -> Option<&User> {
        self.users.get(&id).map(Arc::as_ref)
    }

    /// Looks a user up by real (delivery) email, case-insensitively.
    pub fn user_by_delivery_email(&self, email: &str) -> Option<&User> {
        // Most clients send the address as stored, in lower case: no copy then.
        let id = self.by_email.get(lowercased(email).as_ref());
        id.and_then(|id| self.user(*id))
    }

    /// Whether `user`'s real address is the API email everyone sees.
    pub fn email_is_public(&self, user: &User) -> bool {
        user.is_bot() || self.settings.email_visibility == EmailVisibility::Everyone
    }

    /// The API `email` of a user: real when public, else `user<ID>@<fake domain>`.
    pub fn api_email(&self, user: &User) -> String {
        if self.email_is_public(user) {
            user.delivery_email.clone()
        } else {
            format!("user{}@{}", user.id, self.settings.fake_email_domain)
        }
    }

    /// Looks a user up by API email (how `principals` and the Basic user name match).
    pub fn user_by_api_email(&self, email: &str) -> Option<&User> {
        if let Some(rest) = email.to_lowercase().strip_prefix("user").and_then(|r| {
            r.strip_suffix(&format!(
                "@{}",
                self.settings.fake_email_domain.to_lowercase()
            ))
        }) {
            if let Ok(id) = rest.parse::<UserId>() {
                if let Some(u) = self.users.get(&id) {
                    if !self.email_is_public(u) {
                        return Some(u);
                    }
                }
            }
        }
        self.user_by_delivery_email(email)
            .filter(|u| self.email_is_public(u))
    }

    /// The realm's public URL: the one it was created with, else the server's.
    pub fn url<'a>(&'a self, server_url: &'a str) -> &'a str {
        if self.settings.url.is_empty() {
            server_url
        } else {
            &self.settings.url
        }
    }

    /// Zulip's `require_realm_admin`.
    pub fn require_admin(&self, me: &User) -> ApiResult<()> {
        if me.is_admin() {
            Ok(())
        } else {
            Err(ApiError::must_be_admin())
        }
    }
}

/// `s.to_lowercase()`, copied only when it changes anything: what clients send (an
/// email, a host name) is usually lower case already.
pub fn lowercased(s: &str) -> std::borrow::Cow<'_, str> {
    if s.bytes().any(|b| b.is_ascii_uppercase()) || !s.is_ascii() {
        std::borrow::Cow::Owned(s.to_lowercase())
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}
