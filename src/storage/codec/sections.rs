//! Snapshot sections: a realm's snapshot is one section per resource, each with its
//! own version, so that a change to one resource's shape freezes that resource's old
//! type alone (never the whole `Realm`, as `legacy.rs` had to for schemas 1 to 6), and
//! a new resource is a new section that older snapshots simply lack (it starts empty).
//!
//! - Snapshot schema 9 (today's) is `Vec<Section>`: every section below, in this
//!   order. Each section's bytes are the bincode of its resource's type at its version.
//! - Schema 7 was the `Realm` struct itself. Its record is exactly the first version of
//!   the first 28 sections below, one after another (bincode is positional, and a
//!   tuple or struct is its fields in order): `RecordV7` reads it with those types.
//! - Schema 8 was schema 7's record followed by the sections of the resources added
//!   after it (`bot_services`, `missed_mail`).
//!
//! Changing a resource's stored shape (a field added to `User`, say) therefore means,
//! all in this file: keep the section's current type as its `…V1` alias over a frozen
//! copy of the old struct (with `Deserialize` only), add the `…V2` alias, bump the
//! version in `SECTIONS`, and make the old version's decode arm (and `RecordV7`'s
//! field, which keeps the V1 type) convert. The other sections, their versions and
//! their bytes stay as they were; `tests/api/formats.rs` checks that section by
//! section against the golden fixture.
//!
//! A section this build does not know, or a version newer than it reads, is an error
//! (the snapshot was written by a newer hearth, and dropping its state would lose it);
//! so is a section given twice or a snapshot without its `settings`.

use std::collections::BTreeMap;
use std::sync::Arc;

use imbl::{OrdMap, OrdSet};
use serde::{Deserialize, Serialize};

use super::frame::{config, decode_payload, CodecError};
use crate::realm::channels::{email::EmailTokens, Channel, ChannelFolder, ChannelId, FolderId};
use crate::realm::groups::{GroupConfig, GroupId, GroupSetting, RealmSetting, UserGroup};
use crate::realm::{
    attachments, bot_services, drafts, emoji, invites, linkifiers, messages, missed_mail,
    muted_users, navigation, playgrounds, profile_fields, push, realm_export, saved_snippets,
    sessions, settings, status, user_settings, user_topics,
};
use crate::realm::{Realm, RealmSettings, User, UserId};

/// One resource's state in a snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    pub name: String,
    pub version: u16,
    pub bytes: Vec<u8>,
}

/// Every section's name and the version this build writes, in the order written.
pub const SECTIONS: [(&str, u16); 30] = [
    SETTINGS,
    USERS,
    GROUPS,
    CHANNELS,
    MESSAGES,
    LINKIFIERS,
    PROFILE_FIELDS,
    ATTACHMENTS,
    GROUP_CONFIGS,
    REALM_GROUP_SETTINGS,
    NAVIGATION_VIEWS,
    PUSH,
    STATUS,
    EMOJI,
    PROPERTIES,
    USER_TOPICS,
    MUTED_USERS,
    ALERT_WORDS,
    USER_SETTINGS,
    USER_SETTINGS_DEFAULTS,
    DRAFTS,
    SAVED_SNIPPETS,
    REMINDERS,
    INVITES,
    CHANNEL_EMAIL_TOKENS,
    PLAYGROUNDS,
    EXPORTS,
    SESSIONS,
    BOT_SERVICES,
    MISSED_MAIL,
];

const SETTINGS: (&str, u16) = ("settings", 1);
const USERS: (&str, u16) = ("users", 1);
const GROUPS: (&str, u16) = ("groups", 1);
const CHANNELS: (&str, u16) = ("channels", 1);
const MESSAGES: (&str, u16) = ("messages", 1);
const LINKIFIERS: (&str, u16) = ("linkifiers", 1);
const PROFILE_FIELDS: (&str, u16) = ("profile_fields", 1);
const ATTACHMENTS: (&str, u16) = ("attachments", 1);
const GROUP_CONFIGS: (&str, u16) = ("group_configs", 1);
const REALM_GROUP_SETTINGS: (&str, u16) = ("realm_group_settings", 1);
const NAVIGATION_VIEWS: (&str, u16) = ("navigation_views", 1);
const PUSH: (&str, u16) = ("push", 1);
const STATUS: (&str, u16) = ("status", 1);
const EMOJI: (&str, u16) = ("emoji", 1);
const PROPERTIES: (&str, u16) = ("properties", 1);
const USER_TOPICS: (&str, u16) = ("user_topics", 1);
const MUTED_USERS: (&str, u16) = ("muted_users", 1);
const ALERT_WORDS: (&str, u16) = ("alert_words", 1);
const USER_SETTINGS: (&str, u16) = ("user_settings", 1);
const USER_SETTINGS_DEFAULTS: (&str, u16) = ("user_settings_defaults", 1);
const DRAFTS: (&str, u16) = ("drafts", 1);
const SAVED_SNIPPETS: (&str, u16) = ("saved_snippets", 1);
const REMINDERS: (&str, u16) = ("reminders", 1);
const INVITES: (&str, u16) = ("invites", 1);
const CHANNEL_EMAIL_TOKENS: (&str, u16) = ("channel_email_tokens", 1);
const PLAYGROUNDS: (&str, u16) = ("playgrounds", 1);
const EXPORTS: (&str, u16) = ("exports", 1);
const SESSIONS: (&str, u16) = ("sessions", 1);
const BOT_SERVICES: (&str, u16) = ("bot_services", 1);
const MISSED_MAIL: (&str, u16) = ("missed_mail", 1);

// Each section's stored type, by version. A version's type never changes once
// written: when today's type changes, its alias here is pointed at a frozen copy.
type SettingsV1 = RealmSettings;
type UsersV1 = (OrdMap<UserId, Arc<User>>, UserId);
type GroupsV1 = (OrdMap<GroupId, UserGroup>, GroupId);
/// Channels, the next channel id, the default channels, folders, the next folder id.
type ChannelsV1 = (
    OrdMap<ChannelId, Arc<Channel>>,
    ChannelId,
    OrdSet<ChannelId>,
    OrdMap<FolderId, ChannelFolder>,
    FolderId,
);
type MessagesV1 = messages::MessageState;
type LinkifiersV1 = (
    OrdMap<linkifiers::LinkifierId, linkifiers::Linkifier>,
    linkifiers::LinkifierId,
);
/// Fields, the next field id, the values by field then user.
type ProfileFieldsV1 = (
    OrdMap<profile_fields::FieldId, profile_fields::ProfileField>,
    profile_fields::FieldId,
    OrdMap<profile_fields::FieldId, OrdMap<UserId, profile_fields::ProfileValue>>,
);
type AttachmentsV1 = (
    OrdMap<attachments::AttachmentId, attachments::Attachment>,
    attachments::AttachmentId,
);
type GroupConfigsV1 = OrdMap<GroupId, GroupConfig>;
type RealmGroupSettingsV1 = BTreeMap<RealmSetting, GroupSetting>;
type NavigationViewsV1 = OrdMap<UserId, Vec<navigation::NavigationView>>;
/// Push tokens, then E2EE push devices.
type PushV1 = (
    OrdMap<UserId, Vec<push::PushToken>>,
    OrdMap<UserId, Vec<push::PushDevice>>,
);
type StatusV1 = status::StatusState;
type EmojiV1 = emoji::EmojiState;
type PropertiesV1 = settings::RealmProperties;
type UserTopicsV1 = OrdMap<UserId, Vec<user_topics::UserTopic>>;
type MutedUsersV1 = OrdMap<UserId, Vec<muted_users::MutedUser>>;
type AlertWordsV1 = OrdMap<UserId, Vec<String>>;
type UserSettingsV1 = OrdMap<UserId, user_settings::UserSettingsMap>;
type UserSettingsDefaultsV1 = user_settings::UserSettingsMap;
type DraftsV1 = drafts::DraftState;
type SavedSnippetsV1 = saved_snippets::SnippetState;
type RemindersV1 = messages::reminders::ReminderState;
type InvitesV1 = invites::InviteState;
type ChannelEmailTokensV1 = EmailTokens;
type PlaygroundsV1 = playgrounds::PlaygroundState;
type ExportsV1 = realm_export::ExportState;
type SessionsV1 = sessions::SessionState;
type BotServicesV1 = bot_services::BotServiceState;
type MissedMailV1 = missed_mail::MissedMailState;

fn section<T: Serialize>((name, version): (&str, u16), value: &T) -> Result<Section, CodecError> {
    Ok(Section {
        name: name.to_owned(),
        version,
        bytes: bincode::serde::encode_to_vec(value, config())?,
    })
}

/// The sections of a realm, every one, in `SECTIONS`' order.
pub fn sections_of(r: &Realm) -> Result<Vec<Section>, CodecError> {
    Ok(vec![
        section(SETTINGS, &r.settings)?,
        section(USERS, &(&r.users, r.next_user_id))?,
        section(GROUPS, &(&r.groups, r.next_group_id))?,
        section(
            CHANNELS,
            &(
                &r.channels,
                r.next_channel_id,
                &r.default_channels,
                &r.folders,
                r.next_folder_id,
            ),
        )?,
        section(MESSAGES, &r.messages)?,
        section(LINKIFIERS, &(&r.linkifiers, r.next_linkifier_id))?,
        section(
            PROFILE_FIELDS,
            &(
                &r.profile_fields,
                r.next_profile_field_id,
                &r.profile_values,
            ),
        )?,
        section(ATTACHMENTS, &(&r.attachments, r.next_attachment_id))?,
        section(GROUP_CONFIGS, &r.group_configs)?,
        section(REALM_GROUP_SETTINGS, &r.realm_group_settings)?,
        section(NAVIGATION_VIEWS, &r.navigation_views)?,
        section(PUSH, &(&r.push_tokens, &r.push_devices))?,
        section(STATUS, &r.status)?,
        section(EMOJI, &r.emoji)?,
        section(PROPERTIES, &r.properties)?,
        section(USER_TOPICS, &r.user_topics)?,
        section(MUTED_USERS, &r.muted_users)?,
        section(ALERT_WORDS, &r.alert_words)?,
        section(USER_SETTINGS, &r.user_settings)?,
        section(USER_SETTINGS_DEFAULTS, &r.user_settings_defaults)?,
        section(DRAFTS, &r.drafts)?,
        section(SAVED_SNIPPETS, &r.saved_snippets)?,
        section(REMINDERS, &r.reminders)?,
        section(INVITES, &r.invites)?,
        section(CHANNEL_EMAIL_TOKENS, &r.channel_email_tokens)?,
        section(PLAYGROUNDS, &r.playgrounds)?,
        section(EXPORTS, &r.exports)?,
        section(SESSIONS, &r.sessions)?,
        section(BOT_SERVICES, &r.bot_services)?,
        section(MISSED_MAIL, &r.missed_mail)?,
    ])
}

/// The realm of a schema 9 snapshot's sections (indexes not rebuilt). A resource whose
/// section is absent starts as a new realm has it.
pub fn realm_of_sections(sections: Vec<Section>) -> Result<Realm, CodecError> {
    let settings = sections
        .iter()
        .find(|s| s.name == SETTINGS.0)
        .ok_or(CodecError::MissingSection(SETTINGS.0))?;
    let settings: SettingsV1 = match settings.version {
        1 => decode_payload(&settings.bytes)?,
        v => return Err(CodecError::Section(SETTINGS.0.to_owned(), v)),
    };
    let mut realm = Realm::new(settings);
    apply_sections(&mut realm, sections)?;
    Ok(realm)
}

/// Puts each section's state into `realm`.
pub fn apply_sections(realm: &mut Realm, sections: Vec<Section>) -> Result<(), CodecError> {
    let mut seen = std::collections::HashSet::new();
    for s in sections {
        if !seen.insert(s.name.clone()) {
            return Err(CodecError::DuplicateSection(s.name));
        }
        apply_section(realm, s)?;
    }
    Ok(())
}

fn apply_section(r: &mut Realm, s: Section) -> Result<(), CodecError> {
    let b = &s.bytes;
    if s.version != 1 {
        return Err(CodecError::Section(s.name, s.version));
    }
    // Every section is at version 1 today; a later version adds its own arm, and the
    // older one's arm converts.
    match s.name.as_str() {
        n if n == SETTINGS.0 => r.settings = decode_payload::<SettingsV1>(b)?,
        n if n == USERS.0 => (r.users, r.next_user_id) = decode_payload::<UsersV1>(b)?,
        n if n == GROUPS.0 => (r.groups, r.next_group_id) = decode_payload::<GroupsV1>(b)?,
        n if n == CHANNELS.0 => {
            (
                r.channels,
                r.next_channel_id,
                r.default_channels,
                r.folders,
                r.next_folder_id,
            ) = decode_payload::<ChannelsV1>(b)?
        }
        n if n == MESSAGES.0 => r.messages = decode_payload::<MessagesV1>(b)?,
        n if n == LINKIFIERS.0 => {
            (r.linkifiers, r.next_linkifier_id) = decode_payload::<LinkifiersV1>(b)?
        }
        n if n == PROFILE_FIELDS.0 => {
            (r.profile_fields, r.next_profile_field_id, r.profile_values) =
                decode_payload::<ProfileFieldsV1>(b)?
        }
        n if n == ATTACHMENTS.0 => {
            (r.attachments, r.next_attachment_id) = decode_payload::<AttachmentsV1>(b)?
        }
        n if n == GROUP_CONFIGS.0 => r.group_configs = decode_payload::<GroupConfigsV1>(b)?,
        n if n == REALM_GROUP_SETTINGS.0 => {
            r.realm_group_settings = decode_payload::<RealmGroupSettingsV1>(b)?
        }
        n if n == NAVIGATION_VIEWS.0 => {
            r.navigation_views = decode_payload::<NavigationViewsV1>(b)?
        }
        n if n == PUSH.0 => (r.push_tokens, r.push_devices) = decode_payload::<PushV1>(b)?,
        n if n == STATUS.0 => r.status = decode_payload::<StatusV1>(b)?,
        n if n == EMOJI.0 => r.emoji = decode_payload::<EmojiV1>(b)?,
        n if n == PROPERTIES.0 => r.properties = decode_payload::<PropertiesV1>(b)?,
        n if n == USER_TOPICS.0 => r.user_topics = decode_payload::<UserTopicsV1>(b)?,
        n if n == MUTED_USERS.0 => r.muted_users = decode_payload::<MutedUsersV1>(b)?,
        n if n == ALERT_WORDS.0 => r.alert_words = decode_payload::<AlertWordsV1>(b)?,
        n if n == USER_SETTINGS.0 => r.user_settings = decode_payload::<UserSettingsV1>(b)?,
        n if n == USER_SETTINGS_DEFAULTS.0 => {
            r.user_settings_defaults = decode_payload::<UserSettingsDefaultsV1>(b)?
        }
        n if n == DRAFTS.0 => r.drafts = decode_payload::<DraftsV1>(b)?,
        n if n == SAVED_SNIPPETS.0 => r.saved_snippets = decode_payload::<SavedSnippetsV1>(b)?,
        n if n == REMINDERS.0 => r.reminders = decode_payload::<RemindersV1>(b)?,
        n if n == INVITES.0 => r.invites = decode_payload::<InvitesV1>(b)?,
        n if n == CHANNEL_EMAIL_TOKENS.0 => {
            r.channel_email_tokens = decode_payload::<ChannelEmailTokensV1>(b)?
        }
        n if n == PLAYGROUNDS.0 => r.playgrounds = decode_payload::<PlaygroundsV1>(b)?,
        n if n == EXPORTS.0 => r.exports = decode_payload::<ExportsV1>(b)?,
        n if n == SESSIONS.0 => r.sessions = decode_payload::<SessionsV1>(b)?,
        n if n == BOT_SERVICES.0 => r.bot_services = decode_payload::<BotServicesV1>(b)?,
        n if n == MISSED_MAIL.0 => r.missed_mail = decode_payload::<MissedMailV1>(b)?,
        _ => return Err(CodecError::Section(s.name, s.version)),
    }
    Ok(())
}

/// The realm record of snapshot schemas 7 and 8: the first version of each of the
/// first 28 sections, one after another, exactly as the `Realm` struct was laid out
/// when those schemas were written.
#[derive(Deserialize)]
pub(super) struct RecordV7 {
    settings: SettingsV1,
    users: UsersV1,
    groups: GroupsV1,
    channels: ChannelsV1,
    messages: MessagesV1,
    linkifiers: LinkifiersV1,
    profile_fields: ProfileFieldsV1,
    attachments: AttachmentsV1,
    group_configs: GroupConfigsV1,
    realm_group_settings: RealmGroupSettingsV1,
    navigation_views: NavigationViewsV1,
    push: PushV1,
    status: StatusV1,
    emoji: EmojiV1,
    properties: PropertiesV1,
    user_topics: UserTopicsV1,
    muted_users: MutedUsersV1,
    alert_words: AlertWordsV1,
    user_settings: UserSettingsV1,
    user_settings_defaults: UserSettingsDefaultsV1,
    drafts: DraftsV1,
    saved_snippets: SavedSnippetsV1,
    reminders: RemindersV1,
    invites: InvitesV1,
    channel_email_tokens: ChannelEmailTokensV1,
    playgrounds: PlaygroundsV1,
    exports: ExportsV1,
    sessions: SessionsV1,
}

impl RecordV7 {
    /// The realm this record holds (the later sections empty).
    pub(super) fn into_realm(self) -> Realm {
        let mut r = Realm::new(self.settings);
        (r.users, r.next_user_id) = self.users;
        (r.groups, r.next_group_id) = self.groups;
        (
            r.channels,
            r.next_channel_id,
            r.default_channels,
            r.folders,
            r.next_folder_id,
        ) = self.channels;
        r.messages = self.messages;
        (r.linkifiers, r.next_linkifier_id) = self.linkifiers;
        (r.profile_fields, r.next_profile_field_id, r.profile_values) = self.profile_fields;
        (r.attachments, r.next_attachment_id) = self.attachments;
        r.group_configs = self.group_configs;
        r.realm_group_settings = self.realm_group_settings;
        r.navigation_views = self.navigation_views;
        (r.push_tokens, r.push_devices) = self.push;
        r.status = self.status;
        r.emoji = self.emoji;
        r.properties = self.properties;
        r.user_topics = self.user_topics;
        r.muted_users = self.muted_users;
        r.alert_words = self.alert_words;
        r.user_settings = self.user_settings;
        r.user_settings_defaults = self.user_settings_defaults;
        r.drafts = self.drafts;
        r.saved_snippets = self.saved_snippets;
        r.reminders = self.reminders;
        r.invites = self.invites;
        r.channel_email_tokens = self.channel_email_tokens;
        r.playgrounds = self.playgrounds;
        r.exports = self.exports;
        r.sessions = self.sessions;
        r
    }
}
