//! Snapshot sections: a realm's snapshot is one section per resource, each with its
//! own version, so that a change to one resource's shape freezes that resource's old
//! type alone (never the whole `Realm`, as `legacy.rs` had to for schemas 1 to 6), and
//! a new resource is a new section that older snapshots simply lack (it starts empty).
//!
//! - Snapshot schema 9 (today's) is `Vec<Section>`: every section below, in this
//!   order. Each section's bytes are the bincode of its resource's type at its version.
//! - Schema 7 was the `Realm` struct itself. Its record is exactly the first version of
//!   the first 28 sections below, one after another (bincode is positional, and a
//!   tuple or struct is its fields in order): `realm_of_record_v7` reads it section by
//!   section through the same decode arms as a schema 9 snapshot.
//! - Schema 8 was schema 7's record followed by the sections of the resources added
//!   after it (`bot_services`, `missed_mail`).
//!
//! Changing a resource's stored shape (a field added to `User`, say) therefore means,
//! all in this file: keep the section's current type as its `…V1` alias over a frozen
//! copy of the old struct (with `Deserialize` only), add the `…V2` alias, bump the
//! version in `SECTIONS`, and make the old version's arm in `put_section` convert
//! (schemas 7 and 8 read their records through that arm too). The other sections,
//! their versions and their bytes stay as they were; `tests/api/snapshot_sections.rs`
//! checks that section by section against the golden fixture.
//!
//! A section this build does not know, or a version newer than it reads, is an error
//! (the snapshot was written by a newer hearth, and dropping its state would lose it);
//! so is a section given twice or a snapshot without its `settings`.

use std::collections::BTreeMap;
use std::sync::Arc;

use imbl::{OrdMap, OrdSet};
use serde::de::DeserializeOwned;
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
    let used = put_section(r, &s.name, s.version, &s.bytes)?;
    if used != s.bytes.len() {
        return Err(CodecError::Trailing(s.bytes.len() - used));
    }
    Ok(())
}

/// Decodes one value of `T` at the start of `bytes`: the value and the bytes it took.
fn take<T: DeserializeOwned>(bytes: &[u8]) -> Result<(T, usize), CodecError> {
    Ok(bincode::serde::decode_from_slice(bytes, config())?)
}

/// Decodes the state of section `name` stored at `version` from the start of `bytes`,
/// puts it into `r`, and returns the bytes it took. The one place that knows where
/// each section's state goes in a `Realm`.
fn put_section(r: &mut Realm, name: &str, version: u16, b: &[u8]) -> Result<usize, CodecError> {
    if version != 1 {
        return Err(CodecError::Section(name.to_owned(), version));
    }
    // Every section is at version 1 today; a later version adds its own arm, and the
    // older one's arm converts.
    macro_rules! put {
        ($ty:ty, |$v:ident| $assign:expr) => {{
            let ($v, used) = take::<$ty>(b)?;
            $assign;
            used
        }};
    }
    Ok(match name {
        n if n == SETTINGS.0 => put!(SettingsV1, |v| r.settings = v),
        n if n == USERS.0 => put!(UsersV1, |v| (r.users, r.next_user_id) = v),
        n if n == GROUPS.0 => put!(GroupsV1, |v| (r.groups, r.next_group_id) = v),
        n if n == CHANNELS.0 => put!(ChannelsV1, |v| (
            r.channels,
            r.next_channel_id,
            r.default_channels,
            r.folders,
            r.next_folder_id,
        ) = v),
        n if n == MESSAGES.0 => put!(MessagesV1, |v| r.messages = v),
        n if n == LINKIFIERS.0 => {
            put!(LinkifiersV1, |v| (r.linkifiers, r.next_linkifier_id) = v)
        }
        n if n == PROFILE_FIELDS.0 => put!(ProfileFieldsV1, |v| (
            r.profile_fields,
            r.next_profile_field_id,
            r.profile_values
        ) = v),
        n if n == ATTACHMENTS.0 => {
            put!(AttachmentsV1, |v| (r.attachments, r.next_attachment_id) = v)
        }
        n if n == GROUP_CONFIGS.0 => put!(GroupConfigsV1, |v| r.group_configs = v),
        n if n == REALM_GROUP_SETTINGS.0 => {
            put!(RealmGroupSettingsV1, |v| r.realm_group_settings = v)
        }
        n if n == NAVIGATION_VIEWS.0 => put!(NavigationViewsV1, |v| r.navigation_views = v),
        n if n == PUSH.0 => put!(PushV1, |v| (r.push_tokens, r.push_devices) = v),
        n if n == STATUS.0 => put!(StatusV1, |v| r.status = v),
        n if n == EMOJI.0 => put!(EmojiV1, |v| r.emoji = v),
        n if n == PROPERTIES.0 => put!(PropertiesV1, |v| r.properties = v),
        n if n == USER_TOPICS.0 => put!(UserTopicsV1, |v| r.user_topics = v),
        n if n == MUTED_USERS.0 => put!(MutedUsersV1, |v| r.muted_users = v),
        n if n == ALERT_WORDS.0 => put!(AlertWordsV1, |v| r.alert_words = v),
        n if n == USER_SETTINGS.0 => put!(UserSettingsV1, |v| r.user_settings = v),
        n if n == USER_SETTINGS_DEFAULTS.0 => {
            put!(UserSettingsDefaultsV1, |v| r.user_settings_defaults = v)
        }
        n if n == DRAFTS.0 => put!(DraftsV1, |v| r.drafts = v),
        n if n == SAVED_SNIPPETS.0 => put!(SavedSnippetsV1, |v| r.saved_snippets = v),
        n if n == REMINDERS.0 => put!(RemindersV1, |v| r.reminders = v),
        n if n == INVITES.0 => put!(InvitesV1, |v| r.invites = v),
        n if n == CHANNEL_EMAIL_TOKENS.0 => {
            put!(ChannelEmailTokensV1, |v| r.channel_email_tokens = v)
        }
        n if n == PLAYGROUNDS.0 => put!(PlaygroundsV1, |v| r.playgrounds = v),
        n if n == EXPORTS.0 => put!(ExportsV1, |v| r.exports = v),
        n if n == SESSIONS.0 => put!(SessionsV1, |v| r.sessions = v),
        n if n == BOT_SERVICES.0 => put!(BotServicesV1, |v| r.bot_services = v),
        n if n == MISSED_MAIL.0 => put!(MissedMailV1, |v| r.missed_mail = v),
        _ => return Err(CodecError::Section(name.to_owned(), version)),
    })
}

/// How many sections the realm record of snapshot schemas 7 and 8 holds: the first
/// version of each of the first 28 of `SECTIONS`, one after another, exactly as the
/// `Realm` struct was laid out when those schemas were written (bincode is
/// positional: a struct is its fields in order).
const RECORD_V7_SECTIONS: usize = 28;

/// The realm of a schema 7 record at the start of `bytes` (the later sections empty),
/// and the bytes it took (schema 8 follows the record with its sections).
pub(super) fn realm_of_record_v7(bytes: &[u8]) -> Result<(Realm, usize), CodecError> {
    let (settings, mut at) = take::<SettingsV1>(bytes)?;
    let mut realm = Realm::new(settings);
    for (name, _) in &SECTIONS[1..RECORD_V7_SECTIONS] {
        at += put_section(&mut realm, name, 1, &bytes[at..])?;
    }
    Ok((realm, at))
}
