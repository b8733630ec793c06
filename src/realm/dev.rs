//! The development realm (`hearth serve --dev`): Zulip's development server realm,
//! described in `dev_realm.json`, so scripts written against it run unchanged.
//!
//! Seeding is ordinary decisions: it yields the `Change`s a realm is built from, which
//! go through the WAL like any other write.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::channels::{
    pick_color, render_description, Channel, ChannelFolder, ChannelSetting, NewSubscription,
};
use super::emoji::{EmojiChange, RealmEmoji};
use super::groups::{
    system_group_changes, GroupConfig, GroupPermission, GroupSetting, SystemGroup, UserGroup,
};
use super::linkifiers::{Linkifier, LinkifierChange};
use super::profile_fields::{ProfileField, ProfileFieldChange};
use super::{Change, Cx, EmailVisibility, NewUser, RealmSettings, Role};
use crate::realm::settings::RealmProperty;
use crate::realm::{ChannelChange, GroupChange, RealmChange, UserChange};

const DEV_REALM_JSON: &str = include_str!("dev_realm.json");

/// The image of the development realm's `green_tick` custom emoji (a PNG drawn for
/// hearth).
pub const GREEN_TICK_PNG: &[u8] = include_bytes!("green_tick.png");

/// The images the development realm's custom emoji use, by emoji name: the server
/// stores them in the realm's folder of uploaded files (`storage::uploads`) when it
/// seeds the realm.
pub const DEV_EMOJI_IMAGES: &[(&str, &[u8], &str)] = &[("green_tick", GREEN_TICK_PNG, "png")];

/// The first user id of the development realm (Zulip's system bots hold 1-5 there).
const FIRST_DEV_USER_ID: u64 = 6;

#[derive(Deserialize)]
struct DevRealm {
    realm: DevRealmSettings,
    users: Vec<DevUser>,
    channels: Vec<DevChannel>,
    channel_folders: Vec<DevFolder>,
    custom_profile_fields: Vec<DevProfileField>,
    linkifiers: Vec<DevLinkifier>,
    realm_emoji: Vec<DevEmoji>,
    user_groups: Vec<DevUserGroup>,
}

#[derive(Deserialize)]
struct DevUserGroup {
    name: String,
    description: String,
    is_system_group: bool,
    deactivated: bool,
    direct_members: Vec<String>,
    direct_subgroups: Vec<String>,
    settings: BTreeMap<String, DevGroupSetting>,
}

#[derive(Deserialize)]
struct DevProfileField {
    name: String,
    #[serde(rename = "type")]
    field_type: u8,
    hint: String,
    field_data: String,
    order: i64,
    required: bool,
    editable_by_user: bool,
}

#[derive(Deserialize)]
struct DevLinkifier {
    pattern: String,
    url_template: String,
}

#[derive(Deserialize)]
struct DevEmoji {
    name: String,
    deactivated: bool,
    author: String,
}

#[derive(Deserialize)]
struct DevChannel {
    name: String,
    invite_only: bool,
    is_web_public: bool,
    description: String,
    is_archived: bool,
    history_public_to_subscribers: bool,
    folder: Option<String>,
    is_default_channel: bool,
    subscribers: Vec<String>,
    group_settings: BTreeMap<String, DevGroupSetting>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum DevGroupSetting {
    Named(String),
    Anonymous {
        direct_members: Vec<String>,
        direct_subgroups: Vec<String>,
    },
}

#[derive(Deserialize)]
struct DevFolder {
    name: String,
    description: String,
    is_archived: bool,
}

#[derive(Deserialize)]
struct DevRealmSettings {
    name: String,
    subdomain: String,
    empty_topic_display_name: String,
}

#[derive(Deserialize)]
struct DevUser {
    delivery_email: String,
    full_name: String,
    role: i64,
    bot_type: Option<u8>,
    bot_owner: Option<String>,
    timezone: String,
}

/// The development realm's description (Zulip's `populate_db`; `GET /server_settings`
/// of a running development server shows it rendered).
pub const DEV_REALM_DESCRIPTION: &str =
    "The Zulip development environment default organization.  It's great for testing!";

/// The administrator who holds `can_create_users` in the development realm.
pub const DEV_USER_CREATOR: &str = "iago@zulip.com";

/// The changes that create the development realm. Its URL is not stored: it is the
/// server's (`Realm::url`), wherever the server is started.
pub fn dev_realm_changes(cx: &mut Cx) -> Result<Vec<Change>, String> {
    let dev: DevRealm =
        serde_json::from_str(DEV_REALM_JSON).map_err(|e| format!("dev_realm.json: {e}"))?;
    let mut changes = vec![Change::Realm(RealmChange::RealmCreated {
        settings: RealmSettings {
            name: dev.realm.name,
            subdomain: dev.realm.subdomain,
            url: String::new(),
            dev: true,
            email_visibility: EmailVisibility::AdminsOnly,
            fake_email_domain: "zulipdev.com".into(),
            empty_topic_display_name: dev.realm.empty_topic_display_name,
            date_created: cx.now_secs(),
        },
    })];
    changes.push(Change::Realm(RealmChange::PropertySet(
        RealmProperty::Description(DEV_REALM_DESCRIPTION.into()),
    )));
    let id_of = |email: &str| {
        dev.users
            .iter()
            .position(|u| u.delivery_email.eq_ignore_ascii_case(email))
            .map(|i| FIRST_DEV_USER_ID + i as u64)
    };
    for (i, u) in dev.users.iter().enumerate() {
        let role = Role::from_value(u.role).ok_or_else(|| format!("bad role {}", u.role))?;
        let bot_owner_id = match &u.bot_owner {
            Some(owner) => Some(id_of(owner).ok_or_else(|| format!("unknown bot owner {owner}"))?),
            None => None,
        };
        changes.push(Change::User(UserChange::UserCreated(NewUser {
            user_id: FIRST_DEV_USER_ID + i as u64,
            delivery_email: u.delivery_email.clone(),
            full_name: u.full_name.clone(),
            role,
            bot_type: u.bot_type,
            bot_owner_id,
            timezone: u.timezone.clone(),
            api_key: cx.api_key(),
            password_hash: None,
            date_joined: cx.now_secs(),
        })));
    }
    let creator = id_of(DEV_USER_CREATOR).ok_or("the development realm has no iago")?;
    changes.push(Change::User(UserChange::CanCreateUsersSet {
        user_id: creator,
        value: true,
    }));
    let now = cx.now_secs();
    changes.extend(system_group_changes(1, now));
    let group_id = |name: &str| {
        SystemGroup::from_name(name)
            .and_then(|g| SystemGroup::ALL.iter().position(|x| *x == g))
            .map(|i| 1 + i as u64)
            .ok_or_else(|| format!("unknown group {name}"))
    };
    let mut folder_ids = BTreeMap::new();
    for (i, f) in dev.channel_folders.iter().enumerate() {
        let id = 1 + i as u64;
        folder_ids.insert(f.name.clone(), id);
        changes.push(Change::Channel(ChannelChange::ChannelFolderCreated(
            ChannelFolder {
                id,
                name: f.name.clone(),
                rendered_description: render_description(&f.description),
                description: f.description.clone(),
                order: 1 + i as i64,
                date_created: now,
                creator_id: Some(creator),
                is_archived: f.is_archived,
            },
        )));
    }
    let mut colors: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for (i, c) in dev.channels.iter().enumerate() {
        let id = 1 + i as u64;
        let mut settings = BTreeMap::new();
        for (name, v) in &c.group_settings {
            let setting = ChannelSetting::from_name(name)
                .ok_or_else(|| format!("unknown channel setting {name}"))?;
            let value = match v {
                DevGroupSetting::Named(g) => GroupSetting::Named(group_id(g)?),
                DevGroupSetting::Anonymous {
                    direct_members,
                    direct_subgroups,
                } => GroupSetting::Anonymous {
                    members: direct_members
                        .iter()
                        .map(|e| id_of(e).ok_or_else(|| format!("unknown user {e}")))
                        .collect::<Result<_, _>>()?,
                    subgroups: direct_subgroups
                        .iter()
                        .map(|g| group_id(g))
                        .collect::<Result<_, _>>()?,
                },
            };
            settings.insert(setting, value);
        }
        let folder_id = match &c.folder {
            Some(f) => Some(
                *folder_ids
                    .get(f)
                    .ok_or_else(|| format!("unknown folder {f}"))?,
            ),
            None => None,
        };
        changes.push(Change::Channel(ChannelChange::ChannelCreated(Box::new(
            Channel {
                id,
                name: c.name.clone(),
                rendered_description: render_description(&c.description),
                description: c.description.clone(),
                invite_only: c.invite_only,
                is_web_public: c.is_web_public,
                history_public_to_subscribers: c.history_public_to_subscribers,
                is_archived: c.is_archived,
                folder_id,
                date_created: now,
                creator_id: None,
                message_retention_days: None,
                topics_policy: Default::default(),
                settings,
                subs: imbl::OrdMap::new(),
            },
        ))));
        if c.is_default_channel {
            changes.push(Change::Channel(ChannelChange::DefaultChannelSet {
                channel_id: id,
                is_default: true,
            }));
        }
        let mut subs = Vec::new();
        for email in &c.subscribers {
            let user_id = id_of(email).ok_or_else(|| format!("unknown subscriber {email}"))?;
            let used = colors.entry(user_id).or_default();
            let color = pick_color(used);
            used.push(color.clone());
            subs.push(NewSubscription {
                channel_id: id,
                user_id,
                color,
            });
        }
        if !subs.is_empty() {
            changes.push(Change::Channel(ChannelChange::Subscribed { subs }));
        }
    }
    for (i, e) in dev.realm_emoji.iter().enumerate() {
        let (_, bytes, extension) = DEV_EMOJI_IMAGES
            .iter()
            .find(|(name, _, _)| *name == e.name)
            .ok_or_else(|| format!("no image for the emoji {}", e.name))?;
        let author = id_of(&e.author).ok_or_else(|| format!("unknown author {}", e.author))?;
        changes.push(Change::Emoji(EmojiChange::Added(RealmEmoji {
            id: 1 + i as u64,
            name: e.name.clone(),
            file_name: format!("{}.{extension}", super::attachments::content_hash(bytes)),
            author_id: Some(author),
            deactivated: e.deactivated,
        })));
    }
    Ok(changes)
}

/// The changes that seed the development realm: `dev_realm_changes` (the realm, its
/// users, groups and channels; the golden WAL records of `tests/formats.rs` are made of
/// exactly these), then its custom profile fields, linkifiers and named user groups.
pub fn seed_changes(cx: &mut Cx) -> Result<Vec<Change>, String> {
    let mut changes = dev_realm_changes(cx)?;
    changes.extend(dev_realm_content_changes()?);
    changes.extend(dev_user_group_changes(cx.now_secs())?);
    Ok(changes)
}

/// The development realm as `hearth serve --dev` seeds it: `seed_changes`, then with
/// `history` its message history (`dev_history`).
pub fn seed_changes_with_history(cx: &mut Cx, history: bool) -> Result<Vec<Change>, String> {
    let mut changes = seed_changes(cx)?;
    if history {
        let more = super::dev_history::history_changes(&changes, cx)?;
        changes.extend(more);
    }
    Ok(changes)
}

/// The development realm's named user groups ("hamletcharacters"), ids after the
/// system groups, with their members and settings as `dev_realm.json` lists them.
fn dev_user_group_changes(now: i64) -> Result<Vec<Change>, String> {
    let dev: DevRealm =
        serde_json::from_str(DEV_REALM_JSON).map_err(|e| format!("dev_realm.json: {e}"))?;
    let id_of = |email: &str| {
        dev.users
            .iter()
            .position(|u| u.delivery_email.eq_ignore_ascii_case(email))
            .map(|i| FIRST_DEV_USER_ID + i as u64)
            .ok_or_else(|| format!("unknown user {email}"))
    };
    let system_id = |name: &str| {
        SystemGroup::from_name(name)
            .and_then(|g| SystemGroup::ALL.iter().position(|x| *x == g))
            .map(|i| 1 + i as u64)
            .ok_or_else(|| format!("unknown group {name}"))
    };
    let mut changes = Vec::new();
    let named = dev.user_groups.iter().filter(|g| !g.is_system_group);
    for (id, g) in (1 + SystemGroup::ALL.len() as u64..).zip(named) {
        let mut settings = BTreeMap::new();
        for perm in GroupPermission::ALL {
            let value = match g.settings.get(perm.name()) {
                Some(DevGroupSetting::Named(name)) => GroupSetting::Named(system_id(name)?),
                Some(DevGroupSetting::Anonymous {
                    direct_members,
                    direct_subgroups,
                }) => GroupSetting::Anonymous {
                    members: direct_members
                        .iter()
                        .map(|e| id_of(e))
                        .collect::<Result<_, _>>()?,
                    subgroups: direct_subgroups
                        .iter()
                        .map(|n| system_id(n))
                        .collect::<Result<_, _>>()?,
                },
                None => return Err(format!("group {} has no {}", g.name, perm.name())),
            };
            settings.insert(perm, value);
        }
        changes.push(Change::Group(GroupChange::GroupCreated {
            group: UserGroup {
                id,
                name: g.name.clone(),
                description: g.description.clone(),
                system: None,
                members: g
                    .direct_members
                    .iter()
                    .map(|e| id_of(e))
                    .collect::<Result<_, _>>()?,
                subgroups: g
                    .direct_subgroups
                    .iter()
                    .map(|n| system_id(n))
                    .collect::<Result<_, _>>()?,
                date_created: now,
                creator_id: None,
            },
            config: GroupConfig {
                settings,
                deactivated: g.deactivated,
            },
        }));
    }
    Ok(changes)
}

/// The development realm's custom profile fields (ids 1-9, as Zulip's) and linkifiers.
pub fn dev_realm_content_changes() -> Result<Vec<Change>, String> {
    let dev: DevRealm =
        serde_json::from_str(DEV_REALM_JSON).map_err(|e| format!("dev_realm.json: {e}"))?;
    let mut changes = Vec::new();
    for (i, f) in dev.custom_profile_fields.iter().enumerate() {
        changes.push(Change::ProfileField(ProfileFieldChange::Created(
            ProfileField {
                id: 1 + i as u64,
                name: f.name.clone(),
                hint: f.hint.clone(),
                field_type: f.field_type,
                field_data: f.field_data.clone(),
                order: f.order,
                required: f.required,
                editable_by_user: f.editable_by_user,
                display_in_profile_summary: false,
            },
        )));
    }
    for (i, l) in dev.linkifiers.iter().enumerate() {
        changes.push(Change::Linkifier(LinkifierChange::Added(Linkifier {
            id: 1 + i as u64,
            pattern: l.pattern.clone(),
            url_template: l.url_template.clone(),
            order: i as i64,
        })));
    }
    Ok(changes)
}

/// The changes that create a production realm with its owner (`hearth realm create`).
pub fn new_realm_changes(
    settings: RealmSettings,
    owner_email: &str,
    owner_name: &str,
    password_hash: Option<String>,
    cx: &mut Cx,
) -> Vec<Change> {
    let now = cx.now_secs();
    let mut changes = vec![
        Change::Realm(RealmChange::RealmCreated { settings }),
        Change::User(UserChange::UserCreated(NewUser {
            user_id: 1,
            delivery_email: owner_email.to_owned(),
            full_name: owner_name.to_owned(),
            role: Role::Owner,
            bot_type: None,
            bot_owner_id: None,
            timezone: String::new(),
            api_key: cx.api_key(),
            password_hash,
            date_joined: cx.now_secs(),
        })),
        Change::User(UserChange::CanCreateUsersSet {
            user_id: 1,
            value: true,
        }),
    ];
    changes.extend(system_group_changes(1, now));
    changes
}

/// The development realm built in memory for unit tests, as a start replays it.
#[cfg(test)]
pub mod testing {
    use super::*;
    use crate::realm::Realm;

    /// The realm `changes` make, the first creating it.
    pub fn realm_of(changes: &[Change]) -> Realm {
        let mut realm = Realm::from_first_change(&changes[0]).expect("a realm's first change");
        changes.iter().for_each(|c| realm.apply(c));
        realm
    }

    /// The development realm (`dev_realm_changes`), its ids and times from `cx`.
    pub fn dev_realm(cx: &mut Cx) -> Realm {
        realm_of(&dev_realm_changes(cx).expect("the development realm's changes"))
    }

    /// A plain message row ("hi", unedited, without mentions or reactions), read by
    /// its sender.
    pub fn message(
        id: u64,
        sender: crate::realm::UserId,
        recipient: crate::realm::messages::Recipient,
        timestamp: i64,
    ) -> crate::realm::messages::Message {
        crate::realm::messages::Message {
            id,
            sender_id: sender,
            recipient,
            content: "hi".into(),
            rendered_content: "<p>hi</p>".into(),
            timestamp,
            client: "test".into(),
            is_me_message: false,
            mentioned: Vec::new(),
            wildcard: crate::realm::messages::Wildcard::None,
            sender_read: true,
            edits: Vec::new(),
            last_edit_timestamp: None,
            last_moved_timestamp: None,
            reactions: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_realm_seeds_users_and_bots() {
        let mut cx = Cx::seeded(1_700_000_000_000, 7);
        let realm = testing::realm_of(&seed_changes(&mut cx).expect("seed"));
        let iago = realm
            .user_by_delivery_email("IAGO@zulip.com")
            .expect("iago");
        assert!(iago.is_admin() && iago.can_create_users);
        let bot = realm
            .user_by_delivery_email("default-bot@zulip.com")
            .expect("bot");
        let owner = realm
            .user(bot.bot_owner_id.expect("owner"))
            .expect("owner user");
        assert_eq!(owner.delivery_email, "desdemona@zulip.com");
        assert_eq!(
            realm.api_email(iago),
            format!("user{}@zulipdev.com", iago.id)
        );
        assert_eq!(realm.api_email(bot), "default-bot@zulip.com");
        let verona = realm.channel_by_name("verona").expect("Verona");
        assert!(verona.is_subscribed(iago.id));
        assert!(realm.default_channels.contains(&verona.id));
        let core = realm.channel_by_name("core team").expect("core team");
        assert!(core.invite_only && !core.is_subscribed(iago.id));
        let devel = realm.channel_by_name("devel").expect("devel");
        assert_eq!(
            devel
                .folder_id
                .and_then(|f| realm.folders.get(&f))
                .map(|f| f.name.as_str()),
            Some("Engineering")
        );
        let admins = realm.system_group_id(SystemGroup::Administrators);
        assert!(realm.is_group_member(iago, admins));
        let desdemona = realm
            .user_by_delivery_email("desdemona@zulip.com")
            .expect("d");
        assert!(realm.is_group_member(desdemona, admins));
        let hamlet = realm.user_by_delivery_email("hamlet@zulip.com").expect("h");
        assert!(!realm.is_group_member(hamlet, admins));
        assert_eq!(realm.groups.len(), 9);
        let characters = realm.group_by_name("hamletcharacters").expect("group");
        assert_eq!(characters.description, "Characters of Hamlet");
        let cordelia = realm
            .user_by_delivery_email("cordelia@zulip.com")
            .expect("c");
        assert_eq!(characters.members, vec![cordelia.id, hamlet.id]);
        let fields: Vec<&str> = realm
            .profile_fields_ordered()
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(fields.len(), 9);
        assert_eq!(fields[0], "Phone number");
        assert_eq!(fields[8], "Pronouns");
        assert_eq!(realm.linkifiers.len(), 3);
        assert_eq!(realm.compiled_linkifiers().len(), 3);
        let tick = realm.active_realm_emoji("green_tick").expect("green_tick");
        assert_eq!(tick.author_id, Some(iago.id));
        assert!(tick.file_name.ends_with(".png"));
    }
}
