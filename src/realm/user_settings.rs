//! Personal settings (`PATCH /settings`, its legacy aliases `PATCH /settings/display`
//! and `PATCH /settings/notifications`) and the realm's defaults for new users
//! (`PATCH /realm/user_settings_defaults`), after Zulip's
//! `zerver/views/user_settings.py` (`json_change_settings`), `zerver/views/realm.py`
//! (`update_realm_user_settings_defaults`), `zerver/models/users.py`
//! (`UserBaseSettings`: types, choices, defaults, the legacy groups) and
//! `zerver/actions/user_settings.py` (`do_change_user_setting`: events).
//!
//! `SETTINGS` is the one table every part reads: `/register` (`user_settings`, the
//! legacy top-level copies, `realm_user_settings_defaults`), the parsers of both
//! endpoints, the events and the defaults new users start from.
//!
//! Storage: each user's settings that differ from Zulip's defaults (`Realm::
//! user_settings`), and the realm's defaults that differ from Zulip's (`Realm::
//! user_settings_defaults`), both keyed by the setting's name. Two settings live where
//! they lived before: `timezone` in `User::timezone` (it is part of every user's
//! `realm_user` data) and `presence_enabled` in `StatusState::presence_disabled` (which
//! `away` also changes). A new account starts from the realm's defaults: applying
//! `UserCreated` copies them (replay applies the same defaults in the same order).
//!
//! | Change | Events | To |
//! |--------|--------|----|
//! | `SettingSet` | `user_settings` `update` `{property, value}` (+ `language_name`); legacy `update_global_notifications` / `update_display_settings` for queues without `user_settings_object` (settings of those legacy groups, and `timezone`); `timezone`: also `realm_user` `update` `{person: {email, user_id, timezone}}`; `allow_private_data_export` of a human: also `realm_export_consent` `{user_id, consented}` | the user; the user; every active user; active human administrators |
//! | `UserSettingDefaultSet` | `realm_user_settings_defaults` `update` `{property, value}` | every active user |
//! | `PasswordChanged` | none (Zulip sends none) | - |

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::events::{Audience, Event};
use super::users::check_full_name;
use super::{Change, Cx, Decided, PersonalChange, Realm, RealmChange, User, UserChange, UserId};
use crate::error::{ApiError, ApiResult};

/// A setting's value as stored and sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SettingValue {
    Bool(bool),
    Int(i64),
    Str(String),
}

impl SettingValue {
    pub fn json(&self) -> Value {
        match self {
            SettingValue::Bool(b) => json!(b),
            SettingValue::Int(i) => json!(i),
            SettingValue::Str(s) => json!(s),
        }
    }
}

/// A setting's type and the values Zulip's parser accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `Json[bool]`.
    Bool,
    /// `Json[int]`, any integer.
    Int,
    /// `Json[int]` with `check_int_in_validator`.
    IntIn(&'static [i64]),
    /// A plain string with `check_string_in_validator` (a `Literal` at the realm level).
    StrIn(&'static [&'static str]),
    /// `Json[int]`, then `check_settings_values`: 1 second to one week.
    BatchingPeriod,
    /// A plain string, then `check_settings_values`: a known sound or "none".
    Sound,
    /// A plain string, then `check_settings_values`: a known language code.
    Language,
    /// A plain string, `timezone_validator`.
    Timezone,
    /// A plain string, `parse_enum_from_string_value` over
    /// `ResolvedTopicNoticeAutoReadPolicyEnum`.
    ResolvedTopicPolicy,
}

/// The legacy event group a setting belongs to (`UserBaseSettings.*_legacy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Legacy {
    /// `display_settings_legacy`: `update_display_settings`.
    Display,
    /// `notification_settings_legacy`: `update_global_notifications`.
    Notification,
    /// Added after feature level 89: only `user_settings` events.
    None,
}

/// A default value in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dflt {
    Bool(bool),
    Int(i64),
    Str(&'static str),
}

impl Dflt {
    pub fn value(self) -> SettingValue {
        match self {
            Dflt::Bool(b) => SettingValue::Bool(b),
            Dflt::Int(i) => SettingValue::Int(i),
            Dflt::Str(s) => SettingValue::Str(s.to_owned()),
        }
    }
}

/// One personal setting.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    pub name: &'static str,
    pub kind: Kind,
    /// Zulip's default (`UserBaseSettings`).
    pub default: Dflt,
    pub legacy: Legacy,
    /// Whether `PATCH /realm/user_settings_defaults` may set it.
    pub realm_default: bool,
}

const fn s(
    name: &'static str,
    kind: Kind,
    default: Dflt,
    legacy: Legacy,
    realm_default: bool,
) -> Setting {
    Setting {
        name,
        kind,
        default,
        legacy,
        realm_default,
    }
}

use Dflt as D;
use Kind as K;
use Legacy as L;

/// `WEB_MARK_READ_ON_SCROLL_POLICY_CHOICES`, `COLOR_SCHEME_CHOICES`, ... (1..=3).
const ONE_TO_THREE: &[i64] = &[1, 2, 3];
/// `WEB_CHANNEL_DEFAULT_VIEW_CHOICES`, `DESKTOP_ICON_COUNT_DISPLAY_CHOICES`,
/// `AUTOMATICALLY_CHANGE_VISIBILITY_POLICY_CHOICES` (1..=4).
const ONE_TO_FOUR: &[i64] = &[1, 2, 3, 4];
/// `EMAIL_ADDRESS_VISIBILITY_TYPES`.
const EMAIL_VISIBILITY: &[i64] = &[1, 2, 5, 3, 4];
/// `EMOJISET_CHOICES`' keys.
pub const EMOJISETS: &[&str] = &["google", "twitter", "text", "google-blob"];
/// `web_home_view_options`.
const HOME_VIEWS: &[&str] = &["recent_topics", "inbox", "all_messages"];
/// `web_animate_image_previews_options`.
const ANIMATE: &[&str] = &["always", "on_hover", "never"];
/// `ResolvedTopicNoticeAutoReadPolicyEnum`'s names.
pub const RESOLVED_POLICIES: &[&str] = &["always", "except_followed", "never"];
/// The notification sounds this server has (`get_available_notification_sounds`).
pub const NOTIFICATION_SOUNDS: &[&str] = &["zulip"];

/// The languages `default_language` takes (`get_available_language_codes`), with the
/// names Zulip's language list gives them (`language_name` of the events).
pub const LANGUAGES: &[(&str, &str)] = &[
    ("de", "Deutsch"),
    ("en", "English"),
    ("es", "Español"),
    ("fr", "Français"),
    ("it", "Italiano"),
    ("ja", "日本語"),
    ("ko", "한국어"),
    ("nl", "Nederlands"),
    ("pl", "Polski"),
    ("pt", "Português"),
    ("ru", "Русский"),
    ("zh-hans", "简体中文"),
];

/// Every personal setting, in the order `/register` lists them.
pub const SETTINGS: &[Setting] = &[
    s(
        "twenty_four_hour_time",
        K::Bool,
        D::Bool(false),
        L::Display,
        true,
    ),
    s(
        "web_mark_read_on_scroll_policy",
        K::IntIn(ONE_TO_THREE),
        D::Int(1),
        L::None,
        true,
    ),
    s(
        "web_channel_default_view",
        K::IntIn(ONE_TO_FOUR),
        D::Int(1),
        L::None,
        true,
    ),
    s(
        "starred_message_counts",
        K::Bool,
        D::Bool(true),
        L::Display,
        true,
    ),
    s(
        "receives_typing_notifications",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s(
        "web_suggest_update_timezone",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s(
        "fluid_layout_width",
        K::Bool,
        D::Bool(false),
        L::Display,
        true,
    ),
    s(
        "high_contrast_mode",
        K::Bool,
        D::Bool(false),
        L::Display,
        true,
    ),
    s("web_font_size_px", K::Int, D::Int(16), L::None, true),
    s(
        "web_line_height_percent",
        K::Int,
        D::Int(140),
        L::None,
        true,
    ),
    s(
        "color_scheme",
        K::IntIn(ONE_TO_THREE),
        D::Int(1),
        L::Display,
        true,
    ),
    s(
        "translate_emoticons",
        K::Bool,
        D::Bool(false),
        L::Display,
        true,
    ),
    s(
        "display_emoji_reaction_users",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s(
        "default_language",
        K::Language,
        D::Str("en"),
        L::Display,
        false,
    ),
    s(
        "web_home_view",
        K::StrIn(HOME_VIEWS),
        D::Str("inbox"),
        L::Display,
        true,
    ),
    s(
        "web_escape_navigates_to_home_view",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s(
        "left_side_userlist",
        K::Bool,
        D::Bool(false),
        L::Display,
        true,
    ),
    s(
        "emojiset",
        K::StrIn(EMOJISETS),
        D::Str("google"),
        L::Display,
        true,
    ),
    s(
        "demote_inactive_streams",
        K::IntIn(ONE_TO_THREE),
        D::Int(1),
        L::Display,
        true,
    ),
    s(
        "user_list_style",
        K::IntIn(ONE_TO_THREE),
        D::Int(3),
        L::None,
        true,
    ),
    s(
        "web_animate_image_previews",
        K::StrIn(ANIMATE),
        D::Str("on_hover"),
        L::None,
        true,
    ),
    s(
        "web_stream_unreads_count_display_policy",
        K::IntIn(ONE_TO_THREE),
        D::Int(2),
        L::None,
        true,
    ),
    s("hide_ai_features", K::Bool, D::Bool(false), L::None, true),
    s(
        "web_inbox_show_channel_folders",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s(
        "web_left_sidebar_show_channel_folders",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s(
        "web_left_sidebar_unreads_count_summary",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s("timezone", K::Timezone, D::Str(""), L::Display, false),
    s("enter_sends", K::Bool, D::Bool(false), L::Display, true),
    s(
        "enable_drafts_synchronization",
        K::Bool,
        D::Bool(true),
        L::Display,
        true,
    ),
    s(
        "enable_stream_desktop_notifications",
        K::Bool,
        D::Bool(false),
        L::Notification,
        true,
    ),
    s(
        "enable_stream_email_notifications",
        K::Bool,
        D::Bool(false),
        L::Notification,
        true,
    ),
    s(
        "enable_stream_push_notifications",
        K::Bool,
        D::Bool(false),
        L::Notification,
        true,
    ),
    s(
        "enable_stream_audible_notifications",
        K::Bool,
        D::Bool(false),
        L::Notification,
        true,
    ),
    s(
        "notification_sound",
        K::Sound,
        D::Str("zulip"),
        L::Notification,
        true,
    ),
    s(
        "enable_desktop_notifications",
        K::Bool,
        D::Bool(true),
        L::Notification,
        true,
    ),
    s(
        "enable_sounds",
        K::Bool,
        D::Bool(true),
        L::Notification,
        true,
    ),
    s(
        "enable_followed_topic_desktop_notifications",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s(
        "enable_followed_topic_email_notifications",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s(
        "enable_followed_topic_push_notifications",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s(
        "enable_followed_topic_audible_notifications",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s(
        "email_notifications_batching_period_seconds",
        K::BatchingPeriod,
        D::Int(120),
        L::Notification,
        true,
    ),
    s(
        "enable_offline_email_notifications",
        K::Bool,
        D::Bool(true),
        L::Notification,
        true,
    ),
    s(
        "enable_offline_push_notifications",
        K::Bool,
        D::Bool(true),
        L::Notification,
        true,
    ),
    s(
        "enable_online_push_notifications",
        K::Bool,
        D::Bool(true),
        L::Notification,
        true,
    ),
    s(
        "enable_digest_emails",
        K::Bool,
        D::Bool(true),
        L::Notification,
        true,
    ),
    s(
        "enable_marketing_emails",
        K::Bool,
        D::Bool(true),
        L::Notification,
        false,
    ),
    s(
        "enable_login_emails",
        K::Bool,
        D::Bool(true),
        L::Notification,
        false,
    ),
    s(
        "message_content_in_email_notifications",
        K::Bool,
        D::Bool(true),
        L::Notification,
        true,
    ),
    s(
        "pm_content_in_desktop_notifications",
        K::Bool,
        D::Bool(true),
        L::Notification,
        true,
    ),
    s(
        "wildcard_mentions_notify",
        K::Bool,
        D::Bool(true),
        L::Notification,
        true,
    ),
    s(
        "enable_followed_topic_wildcard_mentions_notify",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s(
        "desktop_icon_count_display",
        K::IntIn(ONE_TO_FOUR),
        D::Int(1),
        L::Notification,
        true,
    ),
    s(
        "realm_name_in_email_notifications_policy",
        K::IntIn(ONE_TO_THREE),
        D::Int(1),
        L::Notification,
        true,
    ),
    s(
        "automatically_follow_topics_policy",
        K::IntIn(ONE_TO_FOUR),
        D::Int(3),
        L::None,
        true,
    ),
    s(
        "automatically_unmute_topics_in_muted_streams_policy",
        K::IntIn(ONE_TO_FOUR),
        D::Int(2),
        L::None,
        true,
    ),
    s(
        "automatically_follow_topics_where_mentioned",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s(
        "resolved_topic_notice_auto_read_policy",
        K::ResolvedTopicPolicy,
        D::Str("except_followed"),
        L::None,
        true,
    ),
    s(
        "presence_enabled",
        K::Bool,
        D::Bool(true),
        L::Notification,
        true,
    ),
    s(
        "send_private_typing_notifications",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s(
        "send_stream_typing_notifications",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
    s("send_read_receipts", K::Bool, D::Bool(true), L::None, true),
    s(
        "allow_private_data_export",
        K::Bool,
        D::Bool(false),
        L::None,
        false,
    ),
    s(
        "email_address_visibility",
        K::IntIn(EMAIL_VISIBILITY),
        D::Int(1),
        L::None,
        true,
    ),
    s(
        "web_navigate_to_sent_message",
        K::Bool,
        D::Bool(true),
        L::None,
        true,
    ),
];

/// The table entry of a setting.
pub fn setting(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

/// The names in Zulip's parameter order (its signatures list them alphabetically, and
/// `typed_endpoint` reports the first bad one in that order).
pub fn sorted() -> Vec<&'static Setting> {
    let mut v: Vec<&'static Setting> = SETTINGS.iter().collect();
    v.sort_by_key(|s| s.name);
    v
}

/// Every zone name `zoneinfo.available_timezones()` knows (tzdata's zones and links).
const TIMEZONES: &str = include_str!("timezones.txt");

/// Zulip's `canonicalize_timezone`: the names Python's zoneinfo knows under another one.
pub fn canonicalize_timezone(tz: &str) -> &str {
    match tz {
        "America/Godthab" => "America/Nuuk",
        "Asia/Calcutta" => "Asia/Kolkata",
        "Asia/Saigon" => "Asia/Ho_Chi_Minh",
        "Europe/Kiev" => "Europe/Kyiv",
        "US/Pacific-New" => "America/Los_Angeles",
        other => other,
    }
}

/// Whether `tz` is a time zone Zulip's `check_timezone` accepts.
pub fn is_timezone(tz: &str) -> bool {
    let tz = canonicalize_timezone(tz);
    TIMEZONES.lines().any(|l| l == tz)
}

/// `typed_endpoint`'s words for a validator's `ValueError`.
pub fn value_error(name: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("Invalid {name}: Value error, {why}"))
}

pub fn not_in_list(name: &str) -> ApiError {
    value_error(name, "Not in the list of possible values")
}

/// Zulip's `check_settings_values`, in its order: the language, the sound, the
/// batching period.
pub fn check_values(values: &[(&'static Setting, SettingValue)]) -> ApiResult<()> {
    let get = |k: Kind| values.iter().find(|(s, _)| s.kind == k).map(|(_, v)| v);
    if let Some(SettingValue::Str(lang)) = get(K::Language) {
        if !LANGUAGES.iter().any(|(code, _)| code == lang) {
            return Err(ApiError::bad_request("Invalid default_language"));
        }
    }
    if let Some(SettingValue::Str(sound)) = get(K::Sound) {
        if !NOTIFICATION_SOUNDS.contains(&sound.as_str()) && sound != "none" {
            return Err(ApiError::bad_request(format!(
                "Invalid notification sound '{sound}'"
            )));
        }
    }
    if let Some(SettingValue::Int(secs)) = get(K::BatchingPeriod) {
        if *secs <= 0 || *secs > 7 * 24 * 60 * 60 {
            return Err(ApiError::bad_request(format!(
                "Invalid email batching period: {secs} seconds"
            )));
        }
    }
    Ok(())
}

/// A password change, checked on the worker: the old password matched `old_hash`
/// (the rule refuses if the stored hash changed since), the new one is strong, hashed.
#[derive(Debug, Clone)]
pub struct PasswordChange {
    pub old_hash: Option<String>,
    pub new_hash: String,
}

/// `PATCH /settings`, its parameters parsed in Zulip's order.
#[derive(Debug, Clone, Default)]
pub struct SettingsUpdate {
    pub full_name: Option<String>,
    pub email: Option<String>,
    /// `new_password` given: the old one's check comes from the worker.
    pub password: Option<PasswordChange>,
    /// The settings given, in the parser's (alphabetical) order.
    pub values: Vec<(&'static Setting, SettingValue)>,
}

/// `PATCH /realm/user_settings_defaults`, its settings parsed.
#[derive(Debug, Clone, Default)]
pub struct DefaultsUpdate {
    pub values: Vec<(&'static Setting, SettingValue)>,
}

/// The text Zulip's email change answers when the realm forbids it.
pub const EMAIL_CHANGES_DISABLED: &str = "Email address changes are disabled in this organization.";

/// hearth sends no email, so it cannot confirm a new address as Zulip does (a link
/// mailed to it): a valid change request is refused with this text.
pub const EMAIL_CHANGE_UNAVAILABLE: &str =
    "Email address changes need a confirmation email, and this server does not send email.";

impl Realm {
    /// A user's value of a setting.
    pub fn user_setting(&self, user: &User, st: &Setting) -> SettingValue {
        match st.name {
            "timezone" => SettingValue::Str(user.timezone.clone()),
            "presence_enabled" => SettingValue::Bool(self.presence_enabled(user.id)),
            name => self
                .user_settings
                .get(&user.id)
                .and_then(|m| m.get(name))
                .cloned()
                .unwrap_or_else(|| st.default.value()),
        }
    }

    /// Whether a user lets others see that they read messages.
    pub fn sends_read_receipts(&self, user: UserId) -> bool {
        !matches!(
            self.user_settings
                .get(&user)
                .and_then(|m| m.get("send_read_receipts")),
            Some(SettingValue::Bool(false))
        )
    }

    /// The realm's default of a setting for new users.
    pub fn user_setting_default(&self, st: &Setting) -> SettingValue {
        self.user_settings_defaults
            .get(st.name)
            .cloned()
            .unwrap_or_else(|| st.default.value())
    }

    /// `user_settings` of `/register`: every setting, with the lists clients choose
    /// from.
    pub fn user_settings_json(&self, me: &User) -> Map<String, Value> {
        let mut m = Map::new();
        for st in SETTINGS {
            m.insert(st.name.into(), self.user_setting(me, st).json());
        }
        m.insert(
            "available_notification_sounds".into(),
            json!(NOTIFICATION_SOUNDS),
        );
        m.insert("emojiset_choices".into(), emojiset_choices());
        m
    }

    /// `realm_user_settings_defaults` of `/register` (every setting but `timezone`).
    pub fn user_settings_defaults_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        for st in SETTINGS.iter().filter(|s| s.name != "timezone") {
            m.insert(st.name.into(), self.user_setting_default(st).json());
        }
        m.insert(
            "available_notification_sounds".into(),
            json!(NOTIFICATION_SOUNDS),
        );
        m.insert("emojiset_choices".into(), emojiset_choices());
        m
    }

    /// `PATCH /settings` (Zulip's `json_change_settings` after its parser): bots are
    /// refused; the password (checked on the worker), the email, the name, then each
    /// setting that differs, then the time zone.
    pub fn decide_update_settings(
        &self,
        me: &User,
        u: SettingsUpdate,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        super::status::require_human(me)?;
        let mut changes = Vec::new();
        if let Some(pw) = u.password {
            // The worker checked the old password against this hash; a change since
            // then (another password change) makes that check stale.
            if pw.old_hash != me.password_hash || pw.old_hash.is_none() {
                return Err(ApiError::bad_request("Wrong password!"));
            }
            changes.push(Change::User(UserChange::PasswordChanged {
                user_id: me.id,
                password_hash: pw.new_hash,
            }));
        }
        if let Some(email) = &u.email {
            let new = email.trim();
            if me.delivery_email != new {
                self.check_email_change(me, new)?;
                return Err(ApiError::bad_request(EMAIL_CHANGE_UNAVAILABLE));
            }
        }
        if let Some(name) = &u.full_name {
            let disabled = self.properties.name_changes_disabled && !me.is_admin();
            // Zulip fails silently when name changes are disabled.
            if me.full_name != *name && !disabled {
                let full_name = check_full_name(name)?;
                changes.push(Change::User(UserChange::FullNameChanged {
                    user_id: me.id,
                    full_name,
                }));
            }
        }
        let (tz, rest): (Vec<_>, Vec<_>) = u
            .values
            .into_iter()
            .partition(|(s, _)| s.name == "timezone");
        for (st, v) in rest.into_iter().chain(tz) {
            if self.user_setting(me, st) != v {
                changes.push(Change::Personal(PersonalChange::SettingSet {
                    user_id: me.id,
                    name: st.name.to_owned(),
                    value: v,
                }));
            }
        }
        Ok(Decided::changes(changes))
    }

    /// Zulip's `validate_email_change_request`, in its order.
    fn check_email_change(&self, me: &User, new: &str) -> ApiResult<()> {
        if self.properties.email_changes_disabled && !me.is_admin() {
            return Err(ApiError::bad_request(EMAIL_CHANGES_DISABLED));
        }
        if !super::users::email_is_valid(new) {
            return Err(ApiError::bad_request("Invalid address."));
        }
        // `validate_email_not_already_in_realm(verbose=False)`.
        match self.user_by_delivery_email(new) {
            Some(u) if u.is_active => Err(ApiError::bad_request("Already has an account.")),
            Some(_) => Err(ApiError::bad_request("Account has been deactivated.")),
            None => Ok(()),
        }?;
        Ok(())
    }

    /// `PATCH /realm/user_settings_defaults`: administrators; each setting that
    /// differs from the realm's default.
    pub fn decide_update_settings_defaults(
        &self,
        me: &User,
        u: DefaultsUpdate,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_admin(me)?;
        let changes = u
            .values
            .into_iter()
            .filter(|(st, v)| self.user_setting_default(st) != *v)
            .map(|(st, value)| {
                Change::Realm(RealmChange::UserSettingDefaultSet {
                    name: st.name.to_owned(),
                    value,
                })
            })
            .collect();
        Ok(Decided::changes(changes))
    }

    /// Applies `SettingSet`.
    pub(super) fn apply_user_setting(&mut self, user_id: UserId, name: &str, value: &SettingValue) {
        let Some(st) = setting(name) else {
            return;
        };
        match (name, value) {
            ("timezone", SettingValue::Str(tz)) => {
                if let Some(u) = self.users.get_mut(&user_id) {
                    std::sync::Arc::make_mut(u).timezone = tz.clone();
                }
            }
            ("presence_enabled", SettingValue::Bool(on)) => {
                if *on {
                    self.status.presence_disabled.remove(&user_id);
                } else {
                    self.status.presence_disabled.insert(user_id);
                }
            }
            _ => {
                // Zulip's `do_change_user_setting`: turning synchronization off deletes
                // the drafts on the server, without events (the clients keep theirs).
                if (name, value) == ("enable_drafts_synchronization", &SettingValue::Bool(false)) {
                    self.drafts.by_user.remove(&user_id);
                }
                if name == "enable_stream_email_notifications" {
                    self.mail_index
                        .set_stream_email(user_id, *value == SettingValue::Bool(true));
                }
                let mine = self.user_settings.entry(user_id).or_default();
                if *value == st.default.value() {
                    mine.remove(name);
                } else {
                    mine.insert(name.to_owned(), value.clone());
                }
                if mine.is_empty() {
                    self.user_settings.remove(&user_id);
                }
            }
        }
    }

    /// Applies `UserSettingDefaultSet`.
    pub(super) fn apply_user_setting_default(&mut self, name: &str, value: &SettingValue) {
        let Some(st) = setting(name) else {
            return;
        };
        if *value == st.default.value() {
            self.user_settings_defaults.remove(name);
        } else {
            self.user_settings_defaults
                .insert(name.to_owned(), value.clone());
        }
    }

    /// A new account's settings: the realm's defaults (Zulip's `copy_default_settings`).
    pub(super) fn apply_new_user_settings(&mut self, user_id: UserId) {
        let defaults: Vec<(String, SettingValue)> = self
            .user_settings_defaults
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (name, value) in defaults {
            self.apply_user_setting(user_id, &name, &value);
        }
    }

    /// The events of `SettingSet` (see the module table).
    pub(super) fn user_setting_events(&self, change: &PersonalChange) -> Vec<Event> {
        let PersonalChange::SettingSet {
            user_id,
            name,
            value,
        } = change
        else {
            return Vec::new();
        };
        let (Some(user), Some(st)) = (self.user(*user_id), setting(name)) else {
            return Vec::new();
        };
        let me = Audience::users(vec![*user_id]);
        let language_name = match value {
            SettingValue::Str(code) if name == "default_language" => {
                LANGUAGES.iter().find(|(c, _)| c == code).map(|(_, n)| *n)
            }
            _ => None,
        };
        let mut event = json!({"type": "user_settings", "op": "update", "property": name, "value": value.json()});
        if let Some(n) = language_name {
            event["language_name"] = n.into();
        }
        let mut out = vec![Event::new(event, me.clone())];
        let legacy = match st.legacy {
            L::Notification => Some(json!({
                "type": "update_global_notifications",
                "user": self.api_email(user),
                "notification_name": name,
                "setting": value.json(),
            })),
            L::Display => {
                let mut e = json!({
                    "type": "update_display_settings",
                    "user": self.api_email(user),
                    "setting_name": name,
                    "setting": value.json(),
                });
                if let Some(n) = language_name {
                    e["language_name"] = n.into();
                }
                Some(e)
            }
            L::None => None,
        };
        if let Some(e) = legacy {
            out.push(Event::new(e, me).for_capability("user_settings_object", false));
        }
        // Zulip's `do_change_user_setting`: administrators see a change of consent.
        if name == "allow_private_data_export" && !user.is_bot() {
            out.push(Event::new(
                json!({"type": "realm_export_consent", "user_id": user.id, "consented": value.json()}),
                Audience::users(self.human_admins()),
            ));
        }
        if name == "timezone" {
            out.push(Event::new(
                json!({"type": "realm_user", "op": "update", "person": {"email": self.api_email(user), "user_id": user.id, "timezone": user.timezone}}),
                Audience::users(self.active_users(false)),
            ));
        }
        out
    }

    /// The event of `UserSettingDefaultSet`.
    pub(super) fn user_setting_default_events(
        &self,
        name: &str,
        value: &SettingValue,
    ) -> Vec<Event> {
        vec![Event::new(
            json!({"type": "realm_user_settings_defaults", "op": "update", "property": name, "value": value.json()}),
            Audience::users(self.active_users(false)),
        )]
    }
}

/// `emojiset_choices`: Zulip's `UserProfile.emojiset_choices()`.
fn emojiset_choices() -> Value {
    json!([
        {"key": "google", "text": "Google"},
        {"key": "twitter", "text": "Twitter"},
        {"key": "text", "text": "Plain text"},
        {"key": "google-blob", "text": "Google blobs"},
    ])
}

/// Each user's settings that differ from Zulip's defaults.
pub type UserSettingsMap = BTreeMap<String, SettingValue>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_consistent() {
        let mut names: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "a setting is listed twice");
        for st in SETTINGS {
            let ok = match (st.kind, st.default) {
                (K::Bool, D::Bool(_)) => true,
                (K::Int | K::BatchingPeriod, D::Int(_)) => true,
                (K::IntIn(allowed), D::Int(i)) => allowed.contains(&i),
                (K::StrIn(allowed), D::Str(v)) => allowed.contains(&v),
                (K::Sound, D::Str(v)) => NOTIFICATION_SOUNDS.contains(&v),
                (K::Language, D::Str(v)) => LANGUAGES.iter().any(|(c, _)| *c == v),
                (K::Timezone, D::Str(v)) => v.is_empty(),
                (K::ResolvedTopicPolicy, D::Str(v)) => RESOLVED_POLICIES.contains(&v),
                _ => false,
            };
            assert!(ok, "{}: the default does not fit the kind", st.name);
        }
    }

    #[test]
    fn time_zones() {
        assert!(is_timezone("America/New_York"));
        assert!(is_timezone("UTC"));
        assert!(is_timezone("US/Eastern"));
        assert!(is_timezone("Asia/Calcutta"));
        assert!(!is_timezone("Mars/Olympus"));
        assert!(!is_timezone(""));
    }
}
