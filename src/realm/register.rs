//! The initial state of `POST /register`, per `fetch_event_types`.
//!
//! Every data type hearth serves is answered from the realm's real state; data types
//! hearth does not hold yet (messages, drafts, ...) are answered as the empty values a
//! Zulip server gives a realm that has none, so clients find every key they read.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use super::groups::RealmSetting;
use super::user_settings::{Legacy, SETTINGS};
use super::users::{gravatar_url, gravatar_url_medium, UserView};
use super::{Realm, User};

/// Zulip's `max_message_length`.
pub const MAX_MESSAGE_LENGTH: u32 = 10_000;
/// Zulip's `max_topic_length`.
pub const MAX_TOPIC_LENGTH: u32 = 60;
/// Zulip's `max_stream_name_length`.
pub const MAX_STREAM_NAME_LENGTH: u32 = 60;
/// Zulip's `max_stream_description_length`.
pub const MAX_STREAM_DESCRIPTION_LENGTH: u32 = 1024;
/// Zulip's presence intervals (`PRESENCE_PING_INTERVAL_SECS`, `OFFLINE_THRESHOLD_SECS`).
pub const PRESENCE_PING_INTERVAL_SECS: i64 = super::presence::PRESENCE_PING_INTERVAL_SECS;
pub const PRESENCE_OFFLINE_THRESHOLD_SECS: i64 = super::presence::OFFLINE_THRESHOLD_SECS;

/// Options of a registration that shape the state.
#[derive(Debug, Clone)]
pub struct RegisterOptions {
    /// None: every type.
    pub fetch_event_types: Option<HashSet<String>>,
    pub client_gravatar: bool,
    pub include_subscribers: bool,
    pub slim_presence: bool,
    pub user_avatar_url_field_optional: bool,
    /// The `include_deactivated_groups` client capability.
    pub include_deactivated_groups: bool,
    /// The `empty_topic_name` client capability: the empty topic as `""`, else as the
    /// realm's `empty_topic_display_name`.
    pub empty_topic_name: bool,
    /// The `notification_settings_null` client capability: channel notification
    /// settings left to the user's defaults come as `null`, else as those defaults.
    pub notification_settings_null: bool,
    /// The `user_settings_object` client capability: the settings come only in
    /// `user_settings`, never as the legacy top-level keys (Zulip's
    /// `fetch_initial_state_data`).
    pub user_settings_object: bool,
    pub longpoll_timeout_secs: i64,
    /// The realm's public URL (`Realm::url`).
    pub realm_url: String,
    /// `client_capabilities.linkifier_url_template`: without it `realm_linkifiers` is
    /// empty (Zulip, feature level 176).
    pub linkifier_url_template: bool,
    /// The server's upload limit (`max_file_upload_size_mib`).
    pub max_file_upload_size_mib: u64,
}

impl RegisterOptions {
    fn wants(&self, kind: &str) -> bool {
        self.fetch_event_types
            .as_ref()
            .is_none_or(|t| t.contains(kind))
    }
}

fn put(m: &mut Map<String, Value>, v: Value) {
    if let Value::Object(o) = v {
        m.extend(o);
    }
}

impl Realm {
    /// The initial state for `me`, before `queue_id`/`last_event_id` are added.
    pub fn register_state(&self, me: &User, o: &RegisterOptions) -> Map<String, Value> {
        let mut m = Map::new();
        put(
            &mut m,
            json!({
                "zulip_version": crate::version::ZULIP_VERSION,
                "zulip_feature_level": crate::version::ZULIP_FEATURE_LEVEL,
                "zulip_merge_base": "",
            }),
        );
        if o.wants("realm") {
            put(&mut m, self.realm_state(o));
            put(&mut m, self.realm_feature_defaults(o));
            m.extend(self.realm_properties_state());
            for s in RealmSetting::ALL {
                m.insert(
                    format!("realm_{}", s.name()),
                    self.setting_json(&self.realm_setting(s)),
                );
            }
        }
        if o.wants("realm_user") {
            put(&mut m, self.realm_user_state(me, o));
        }
        if o.wants("realm_bot") {
            let bots: Vec<Value> = self
                .users
                .values()
                .filter(|u| {
                    u.is_bot() && u.is_active && (me.is_admin() || u.bot_owner_id == Some(me.id))
                })
                .map(|b| self.bot_json(b))
                .collect();
            m.insert("realm_bots".into(), bots.into());
        }
        if o.wants("subscription") {
            let mut subs = self.subscription_state(me, o.include_subscribers);
            if !o.notification_settings_null {
                self.fill_notification_settings(me, &mut subs);
            }
            put(&mut m, subs);
        }
        if o.wants("stream") {
            let streams: Vec<Value> = self
                .channels
                .values()
                .filter(|ch| !ch.is_archived && self.can_see_channel(me, ch))
                .map(|ch| Value::Object(self.stream_json(ch)))
                .collect();
            m.insert("streams".into(), streams.into());
        }
        if o.wants("realm_user_groups") {
            let groups = self.view_user_groups(o.include_deactivated_groups);
            m.insert("realm_user_groups".into(), groups.into());
        }
        if o.wants("custom_profile_fields") {
            put(
                &mut m,
                json!({"custom_profile_fields": self.view_profile_fields(), "custom_profile_field_types": custom_profile_field_types()}),
            );
        }
        if o.wants("user_status") {
            m.insert(
                "user_status".into(),
                Value::Object(self.user_status_state()),
            );
        }
        // `presence` (`presences`, `server_timestamp`, `presence_last_update_id`) is soft
        // state outside the realm: `api/events.rs` adds it from the realm's presence.
        if o.wants("navigation_views") {
            m.insert(
                "navigation_views".into(),
                self.view_navigation_views(me).into(),
            );
        }
        if o.wants("push_device") {
            m.insert("push_devices".into(), self.view_push_devices(me).into());
        }
        if o.wants("realm_linkifiers") {
            let linkifiers = if o.linkifier_url_template {
                self.view_linkifiers()
            } else {
                Vec::new()
            };
            m.insert("realm_linkifiers".into(), linkifiers.into());
        }
        if o.wants("realm_filters") {
            m.insert("realm_filters".into(), json!([]));
        }
        if o.wants("realm_playgrounds") {
            m.insert("realm_playgrounds".into(), self.view_playgrounds().into());
        }
        if o.wants("default_streams") {
            let ids: Vec<u64> = self.default_channels.iter().copied().collect();
            m.insert("realm_default_streams".into(), ids.into());
        }
        if o.wants("default_stream_groups") {
            m.insert("realm_default_stream_groups".into(), json!([]));
        }
        if o.wants("channel_folders") {
            let folders: Vec<Value> = self
                .folders_sorted(true)
                .into_iter()
                .map(|f| self.folder_json(f))
                .collect();
            m.insert("channel_folders".into(), folders.into());
        }
        if o.wants("scheduled_messages") {
            m.insert(
                "scheduled_messages".into(),
                self.view_scheduled(me, o.empty_topic_name).into(),
            );
        }
        if o.wants("message") {
            // Filled from the message store by the caller (`api::messages`).
            m.insert("max_message_id".into(), json!(-1));
        }
        if o.wants("update_message_flags") && o.wants("message") {
            m.insert(
                "unread_msgs".into(),
                json!({"count": 0, "pms": [], "streams": [], "huddles": [], "mentions": [], "old_unreads_missing": false}),
            );
        }
        if o.wants("starred_messages") {
            m.insert("starred_messages".into(), json!([]));
        }
        // Topics and people: `muted_topics` only for clients that did not also ask for
        // `user_topic` (Zulip's `fetch_initial_state_data`).
        if o.wants("muted_topics") && (o.fetch_event_types.is_none() || !o.wants("user_topic")) {
            m.insert("muted_topics".into(), self.view_muted_topics(me.id).into());
        }
        if o.wants("user_topic") {
            let mut topics = self.view_user_topics(me);
            if !o.empty_topic_name {
                for t in topics.iter_mut() {
                    if let Some(Value::String(name)) = t.get_mut("topic_name") {
                        let shown = self.topic_for_client(name, false);
                        *name = shown;
                    }
                }
            }
            m.insert("user_topics".into(), topics.into());
        }
        if o.wants("muted_users") {
            m.insert("muted_users".into(), self.view_muted_users(me.id).into());
        }
        if o.wants("alert_words") {
            m.insert("alert_words".into(), self.alert_words_of(me.id).into());
        }
        // Personal data: drafts, saved snippets, reminders.
        if o.wants("drafts") {
            m.insert("drafts".into(), super::drafts::register_drafts(self, me));
        }
        if o.wants("saved_snippets") {
            m.insert("saved_snippets".into(), self.view_saved_snippets(me).into());
        }
        if o.wants("reminders") {
            m.insert("reminders".into(), self.view_reminders(me).into());
        }
        if o.wants("recent_private_conversations") {
            // Filled from the message store by the caller (`register_message_state`).
            m.insert("recent_private_conversations".into(), json!([]));
        }
        if o.wants("onboarding_steps") {
            m.insert("onboarding_steps".into(), json!([]));
            m.insert("navigation_tour_video_url".into(), Value::Null);
        }
        // Data types of features hearth does not have: Zulip's answers for a server
        // without them.
        if o.wants("giphy") {
            m.insert("giphy_api_key".into(), "".into());
        }
        if o.wants("video_calls") {
            m.insert("has_zoom_token".into(), false.into());
        }
        if o.wants("realm_billing") {
            m.insert(
                "realm_billing".into(),
                json!({"has_pending_sponsorship_request": false}),
            );
        }
        if o.wants("realm_embedded_bots") {
            m.insert("realm_embedded_bots".into(), json!([]));
        }
        if o.wants("realm_incoming_webhook_bots") {
            m.insert("realm_incoming_webhook_bots".into(), json!([]));
        }
        if o.wants("stop_words") {
            m.insert("stop_words".into(), json!([]));
        }
        if o.wants("realm_emoji") {
            m.insert("realm_emoji".into(), Value::Object(self.view_realm_emoji()));
        }
        if o.wants("realm_domains") {
            m.insert("realm_domains".into(), json!([]));
        }
        // Personal settings and the realm's defaults (`user_settings.rs`).
        if o.wants("user_settings") {
            m.insert(
                "user_settings".into(),
                Value::Object(self.user_settings_json(me)),
            );
        }
        if o.wants("update_display_settings") && !o.user_settings_object {
            // Legacy: `display_settings_legacy` at the top level.
            for st in SETTINGS.iter().filter(|s| s.legacy == Legacy::Display) {
                m.insert(st.name.to_owned(), self.user_setting(me, st).json());
            }
            let all = self.user_settings_json(me);
            m.insert("emojiset_choices".into(), all["emojiset_choices"].clone());
        }
        if o.wants("update_global_notifications") && !o.user_settings_object {
            for st in SETTINGS.iter().filter(|s| s.legacy == Legacy::Notification) {
                m.insert(st.name.to_owned(), self.user_setting(me, st).json());
            }
            m.insert(
                "available_notification_sounds".into(),
                json!(super::user_settings::NOTIFICATION_SOUNDS),
            );
        }
        if o.wants("realm_user_settings_defaults") {
            m.insert(
                "realm_user_settings_defaults".into(),
                Value::Object(self.user_settings_defaults_json()),
            );
        }
        m
    }

    /// Zulip's answer to clients without the `notification_settings_null` capability:
    /// a channel's notification setting left to the user's default is that default,
    /// not `null`.
    fn fill_notification_settings(&self, me: &User, subs: &mut Value) {
        const DEFAULTS: [(&str, &str); 5] = [
            (
                "desktop_notifications",
                "enable_stream_desktop_notifications",
            ),
            (
                "audible_notifications",
                "enable_stream_audible_notifications",
            ),
            ("push_notifications", "enable_stream_push_notifications"),
            ("email_notifications", "enable_stream_email_notifications"),
            ("wildcard_mentions_notify", "wildcard_mentions_notify"),
        ];
        let settings = self.user_settings_json(me);
        for list in ["subscriptions", "unsubscribed"] {
            let Some(Value::Array(items)) = subs.get_mut(list) else {
                continue;
            };
            for sub in items.iter_mut().filter_map(Value::as_object_mut) {
                for (field, default) in DEFAULTS {
                    if sub.get(field).is_some_and(Value::is_null) {
                        let value = settings.get(default).cloned().unwrap_or(Value::Null);
                        sub.insert(field.into(), value);
                    }
                }
            }
        }
    }

    /// `subscriptions`, `unsubscribed` and `never_subscribed` (archived channels are left
    /// out, as for clients without the `archived_channels` capability).
    fn subscription_state(&self, me: &User, include_subscribers: bool) -> Value {
        let (mut subscribed, mut unsubscribed, mut never) = (Vec::new(), Vec::new(), Vec::new());
        for ch in self.channels.values().filter(|c| !c.is_archived) {
            let see_subs = include_subscribers && self.can_see_subscribers(me, ch);
            match ch.subs.get(&me.id) {
                Some(sub) if sub.active => {
                    subscribed.push(Value::Object(self.subscription_json(ch, sub, see_subs)))
                }
                Some(sub) if self.can_see_channel(me, ch) => {
                    unsubscribed.push(Value::Object(self.subscription_json(ch, sub, see_subs)))
                }
                Some(_) => {}
                None if self.can_see_channel(me, ch) => {
                    let mut j = self.stream_json(ch);
                    if see_subs {
                        j.insert("subscribers".into(), ch.subscriber_ids().into());
                    }
                    never.push(Value::Object(j));
                }
                None => {}
            }
        }
        json!({"subscriptions": subscribed, "unsubscribed": unsubscribed, "never_subscribed": never})
    }

    fn realm_state(&self, o: &RegisterOptions) -> Value {
        let s = &self.settings;
        json!({
            "realm_url": o.realm_url,
            "realm_uri": o.realm_url,
            "realm_date_created": s.date_created,
            "realm_empty_topic_display_name": s.empty_topic_display_name,
            "realm_message_retention_days": -1,
            "realm_allow_edit_history": true,
            "realm_message_edit_history_visibility_policy": "all",
            "realm_presence_disabled": false,
            "realm_email_auth_enabled": true,
            "realm_password_auth_enabled": true,
            "realm_push_notifications_enabled": false,
            "realm_invite_required": true,
            "realm_enable_spectator_access": false,
            "realm_plan_type": 1,
            "realm_org_type": 0,
            "realm_default_language": "en",
            "realm_icon_url": format!("{}/static/images/logo/zulip-icon-128x128.png", o.realm_url),
            "realm_icon_source": "G",
            "realm_emails_restricted_to_domains": false,
            "realm_disallow_disposable_email_addresses": true,
            "realm_waiting_period_threshold": 0,
            "realm_authentication_methods": {"Email": {"enabled": true, "available": true}, "Dev": {"enabled": s.dev, "available": s.dev}},
            "max_message_length": MAX_MESSAGE_LENGTH,
            "max_topic_length": MAX_TOPIC_LENGTH,
            "max_stream_name_length": MAX_STREAM_NAME_LENGTH,
            "max_stream_description_length": MAX_STREAM_DESCRIPTION_LENGTH,
            "max_channel_folder_name_length": 60,
            "max_channel_folder_description_length": 1024,
            "max_file_upload_size_mib": o.max_file_upload_size_mib,
            "max_avatar_file_size_mib": 0,
            "max_icon_file_size_mib": 0,
            "max_logo_file_size_mib": 0,
            "max_bulk_new_subscription_messages": 100,
            "max_reminder_note_length": 1000,
            "password_min_length": if s.dev { 0 } else { 6 },
            "password_min_guesses": if s.dev { 0 } else { 10000 },
            "password_max_length": 100,
            "event_queue_longpoll_timeout_seconds": o.longpoll_timeout_secs,
            "server_presence_ping_interval_seconds": PRESENCE_PING_INTERVAL_SECS,
            "server_presence_offline_threshold_seconds": PRESENCE_OFFLINE_THRESHOLD_SECS,
            "server_generation": s.date_created,
            "server_needs_upgrade": false,
            "server_avatar_changes_disabled": false,
            "server_name_changes_disabled": false,
            "server_web_public_streams_enabled": false,
            "server_inline_image_preview": true,
            "server_inline_url_embed_preview": false,
            "server_typing_started_expiry_period_milliseconds": 45000,
            "server_typing_started_wait_period_milliseconds": 10000,
            "server_typing_stopped_wait_period_milliseconds": 5000,
            "development_environment": s.dev,
            "zulip_plan_is_not_limited": true,
        })
    }

    /// The `realm` fields of features hearth does not have, with Zulip's values for a
    /// realm without them: no logos, GIPHY, digests or announcement channels, Jitsi as
    /// the call provider, no upload quota, no thumbnailing.
    fn realm_feature_defaults(&self, o: &RegisterOptions) -> Value {
        json!({
            "realm_wildcard_mention_policy": self.wildcard_mention_policy(),
            "realm_create_public_stream_policy": 1,
            "realm_create_private_stream_policy": 1,
            "realm_create_web_public_stream_policy": 7,
            "realm_default_external_accounts": default_external_accounts(),
            "server_emoji_data_url": format!("{}{}", o.realm_url, super::emoji::EMOJI_DATA_PATH),
            "realm_avatar_changes_disabled": false,
            "realm_bot_domain": host_of(&o.realm_url),
            "realm_default_code_block_language": "",
            "realm_digest_emails_enabled": false,
            "realm_digest_weekday": 1,
            "realm_enable_guest_user_dm_warning": true,
            "realm_enable_guest_user_indicator": true,
            "realm_gif_rating_policy": 2,
            "gif_rating_policy_options": gif_rating_policy_options(),
            "realm_inline_image_preview": true,
            "realm_inline_url_embed_preview": false,
            "realm_logo_source": "D",
            "realm_logo_url": format!("{}/static/images/logo/zulip-org-logo.svg?version=0", o.realm_url),
            "realm_night_logo_source": "D",
            "realm_night_logo_url": format!("{}/static/images/logo/zulip-org-logo.svg?version=0", o.realm_url),
            "upgrade_text_for_wide_organization_logo": "",
            "realm_message_content_allowed_in_email_notifications": true,
            "realm_new_stream_announcements_stream_id": -1,
            "realm_signup_announcements_stream_id": -1,
            "realm_zulip_update_announcements_stream_id": -1,
            "realm_push_notifications_enabled_end_timestamp": null,
            "realm_require_e2ee_push_notifications": false,
            "realm_require_unique_names": false,
            "realm_send_welcome_emails": true,
            "realm_upload_quota_mib": null,
            "realm_want_advertise_in_communities_directory": false,
            "realm_video_chat_provider": 1,
            "realm_available_video_chat_providers": {
                "disabled": {"name": "None", "id": 0},
                "jitsi_meet": {"name": "Jitsi Meet", "id": 1},
            },
            "realm_jitsi_server_url": null,
            "server_jitsi_server_url": JITSI_SERVER_URL,
            "jitsi_server_url": JITSI_SERVER_URL,
            "server_min_deactivated_realm_deletion_days": 14,
            "server_max_deactivated_realm_deletion_days": null,
            "server_supported_permission_settings": {"realm": {}, "stream": {}, "group": {}},
            "server_thumbnail_formats": [],
            "settings_send_digest_emails": false,
        })
    }

    /// The deprecated `wildcard_mention_policy` that corresponds to
    /// `can_mention_many_users_group` where it is a role group (Zulip's
    /// `WildcardMentionPolicyEnum`); administrators only otherwise, Zulip's default.
    fn wildcard_mention_policy(&self) -> u8 {
        let group = match self.realm_setting(RealmSetting::CanMentionManyUsers) {
            super::groups::GroupSetting::Named(id) => self.groups.get(&id).map(|g| g.name.clone()),
            _ => None,
        };
        match group.as_deref() {
            Some("role:everyone") => 1,
            Some("role:members") => 2,
            Some("role:fullmembers") => 3,
            Some("role:nobody") => 6,
            Some("role:moderators") => 7,
            _ => 5,
        }
    }

    fn realm_user_state(&self, me: &User, o: &RegisterOptions) -> Value {
        let view = UserView {
            client_gravatar: o.client_gravatar,
            include_custom_profile_fields: true,
        };
        let render = |u: &User| {
            let mut j = self.user_json(me, u, view);
            if o.user_avatar_url_field_optional && j.get("avatar_url").is_some_and(Value::is_null) {
                j.remove("avatar_url");
            }
            Value::Object(j)
        };
        let active: Vec<Value> = self
            .users
            .values()
            .filter(|u| u.is_active)
            .map(|u| render(u))
            .collect();
        let inactive: Vec<Value> = self
            .users
            .values()
            .filter(|u| !u.is_active)
            .map(|u| render(u))
            .collect();
        // Zulip's system bots (`get_cross_realm_dicts`): the Notification Bot and the
        // Welcome Bot.
        let cross_realm_bots: Vec<Value> = super::messages::moves::system_bots()
            .into_iter()
            .map(|b| {
                let mut bot = render(b);
                if let Value::Object(o) = &mut bot {
                    o.insert("is_system_bot".into(), true.into());
                }
                bot
            })
            .collect();
        let avatar = gravatar_url(&me.delivery_email, me.avatar_version);
        let can_create_public = self.has_realm_permission(me, RealmSetting::CanCreatePublicChannel);
        let can_create_private =
            self.has_realm_permission(me, RealmSetting::CanCreatePrivateChannel);
        let can_create_web_public =
            self.has_realm_permission(me, RealmSetting::CanCreateWebPublicChannel);
        json!({
            "realm_users": active,
            "realm_non_active_users": inactive,
            "cross_realm_bots": cross_realm_bots,
            "user_id": me.id,
            "email": self.api_email(me),
            "delivery_email": me.delivery_email,
            "full_name": me.full_name,
            "is_admin": me.is_admin(),
            "is_owner": me.is_owner(),
            "is_moderator": me.role == super::Role::Moderator,
            "is_guest": me.is_guest(),
            "avatar_source": "G",
            "avatar_url": avatar,
            "avatar_url_medium": gravatar_url_medium(&me.delivery_email, me.avatar_version),
            "can_create_streams": can_create_public || can_create_private || can_create_web_public,
            "can_create_public_streams": can_create_public,
            "can_create_private_streams": can_create_private,
            "can_create_web_public_streams": can_create_web_public,
            "can_subscribe_other_users": self.has_realm_permission(me, RealmSetting::CanAddSubscribers),
            "can_invite_others_to_realm": self.has_realm_permission(me, RealmSetting::CanInviteUsers),
        })
    }

    pub(crate) fn bot_json(&self, b: &User) -> Value {
        json!({
            "user_id": b.id,
            "full_name": b.full_name,
            "email": b.delivery_email,
            "api_key": b.api_key,
            "avatar_url": gravatar_url(&b.delivery_email, b.avatar_version),
            "is_active": b.is_active,
            "bot_type": b.bot_type,
            "owner_id": b.bot_owner_id,
            "default_sending_stream": null,
            "default_events_register_stream": null,
            "default_all_public_streams": false,
            "services": self.bot_services_json(b.id),
        })
    }
}

/// Zulip's `JITSI_SERVER_URL` default.
const JITSI_SERVER_URL: &str = "https://meet.jit.si";

/// The host of a URL (`realm_bot_domain`: Zulip's fake email domain is the realm's host).
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?']).next().unwrap_or(rest);
    host.rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(host, |(h, _)| h)
}

/// Zulip's `DEFAULT_EXTERNAL_ACCOUNTS`.
fn default_external_accounts() -> Value {
    json!({
        "github": {"name": "GitHub", "text": "GitHub", "hint": "Enter your GitHub username", "url_pattern": "https://github.com/%(username)s"},
        "twitter": {"name": "Twitter", "text": "Twitter", "hint": "Enter your Twitter username", "url_pattern": "https://twitter.com/%(username)s"},
    })
}

/// Zulip's `GIPHY_RATING_OPTIONS`.
fn gif_rating_policy_options() -> Value {
    json!({
        "disabled": {"name": "GIPHY integration disabled", "id": 0},
        "y": {"name": "Allow GIFs rated Y (Very young audience)", "id": 1},
        "g": {"name": "Allow GIFs rated G (General audience)", "id": 2},
        "pg": {"name": "Allow GIFs rated PG (Parental guidance)", "id": 3},
        "pg-13": {"name": "Allow GIFs rated PG-13 (Parental guidance - under 13)", "id": 4},
        "r": {"name": "Allow GIFs rated R (Restricted)", "id": 5},
    })
}

fn custom_profile_field_types() -> Value {
    json!({
        "SHORT_TEXT": {"id": 1, "name": "Text (short)"},
        "LONG_TEXT": {"id": 2, "name": "Text (long)"},
        "SELECT": {"id": 3, "name": "List of options"},
        "DATE": {"id": 4, "name": "Date picker"},
        "URL": {"id": 5, "name": "Link"},
        "USER": {"id": 6, "name": "Person picker"},
        "EXTERNAL_ACCOUNT": {"id": 7, "name": "External account"},
        "PRONOUNS": {"id": 8, "name": "Pronouns"},
    })
}
