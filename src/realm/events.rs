//! The mapping `Change` -> Zulip events + who receives them.
//!
//! `Realm::events_for` is called right after a change is applied (so the state already
//! includes it). Each resource group adds its variants here; every variant of `Change`
//! must be listed, so a new change cannot silently produce no event.
//!
//! | Change               | Events                                        | Recipients |
//! |----------------------|-----------------------------------------------|------------|
//! | `RealmCreated`       | none (no queue can exist yet)                 | -          |
//! | `UserCreated`        | `realm_user` `op:add` `{person}`              | every active user; `person.delivery_email` real for those who may see it, null for the rest |
//! | `CanCreateUsersSet`  | none (Zulip sends none: a server command)     | -          |
//! | `UserCreated` (bot)  | also `realm_bot` `op:add` `{bot}`             | administrators and the bot's owner |
//! | `Deactivated`, `Reactivated`, `RoleChanged`, `FullNameChanged` | `realm_user` `op:update`, `realm_bot` `op:update`, `subscription` peer events, `user_group` membership events, `stream` create/delete (table in `lifecycle.rs`) | active users; administrators and the bot's owner; ... |
//! | realm `Invite(_)`    | `invites_changed` (table in `invites.rs`)     | active administrators and the invitation's creator |
//! | `UserGroupCreated`   | none (system groups exist before any queue)   | -          |
//! | realm `PropertySet` | `realm` `update` `{property, value}` or `update_dict` `{property: "default", data}` (table in `settings.rs`) | every active user |
//! | other `GroupChange`s, realm `GroupSettingSet` | `user_group` `add`/`update`/`remove`/`add_members`/`remove_members`/`add_subgroups`/`remove_subgroups`, channel metadata-access events; `realm` `update_dict` (table in `groups/events.rs`) | every active user (by `include_deactivated_groups` for deactivation); those gaining or losing a channel |
//! | `NavigationViewAdded`/`Updated`/`Removed` | `navigation_view` `add` `{navigation_view}` / `update` `{fragment, data}` / `remove` `{fragment}` | the user |
//! | `PushTokenAdded`/`Removed` | none (Zulip sends none) | - |
//! | `PushDeviceRegistered`/`Activated`/`Failed` | `push_device` `{push_account_id, status, error_code?}` | the user |
//! | `UserTopicSet`, `UserMuted`/`UserUnmuted`, `AlertWordsSet` | `muted_topics` (queues without `user_topic`) then `user_topic`; `muted_users`; `alert_words` (tables in `user_topics.rs`, `muted_users.rs`, `alert_words.rs`) | the user |
//! | `ChannelCreated`     | `stream` `op:create` `{streams}`              | users who can see the channel |
//! | `Subscribed`         | `stream` `op:create` for newly visible private channels; `subscription` `op:add` `{subscriptions}` per user; `subscription` `op:peer_add` `{stream_ids, user_ids}`, batched as Zulip (`peer_events`) | the new subscriber; the new subscriber; others who can see subscribers |
//! | `Unsubscribed`       | `subscription` `op:remove` `{subscriptions:[{name, stream_id}]}`; `subscription` `op:peer_remove`; `stream` `op:delete` when access is lost | the removed user; others who can see subscribers; the removed user |
//! | `SubscriptionPropertySet` | `subscription` `op:update` `{stream_id, property, value}` (`is_muted`: `in_home_view` then `is_muted`) | the user |
//! | `ChannelUpdated`     | `stream` `op:update` `{stream_id, name, property, value, ...}`; archiving: `stream` `op:delete` / unarchiving: `stream` `op:create` for queues without `archived_channels`; privacy: `stream` `op:create` before the update to users who gain access, `op:delete` after it to users who lose it | users who can see the channel |
//! | `DefaultChannelSet`  | `default_streams` `{default_streams:[ids]}`   | active non-guest users |
//! | `ChannelFolderCreated` | `channel_folder` `op:add` `{channel_folder}` | active users |
//! | `ChannelFolderUpdated` | `channel_folder` `op:update` `{channel_folder_id, data}` | active users |
//! | `ChannelFoldersReordered` | `channel_folder` `op:reorder` `{order}` (as sent) | active users |
//! | `Linkifier(_)`       | `realm_linkifiers` `{realm_linkifiers}` (the whole list) | active users whose queue declared `linkifier_url_template` |
//! | `ProfileField` (fields) | `custom_profile_fields` `{fields}` (every field) | active users |
//! | `ProfileField` (values) | `realm_user` `op:update` `{person: {user_id, custom_profile_field: {id, value, rendered_value?}}}` (`value` null when removed) | active users |
//! | `Attachment::Created` / `Removed` / `Claimed`, `Released` | `attachment` `op:add` / `remove` / `update` `{attachment, upload_space_used}` | the uploader |
//! | `Attachment::Swept`  | none (as Zulip's sweep)                        | -          |
//! | `Status(Updated)`    | with `away`: `user_settings` `op:update` `{property: presence_enabled, value}` and legacy `update_global_notifications` (queues without `user_settings_object`); then `user_status` `{user_id, away?, status_text?, emoji_name?, emoji_code?, reaction_type?}` (the fields passed) | the user; the user; active users |
//! | `SettingSet`, `UserSettingDefaultSet`, `PasswordChanged` | `user_settings` `update` and the legacy events; `realm_user_settings_defaults` `update`; none (table in `user_settings.rs`) | the user; active users; - |
//! | `Emoji(Added)`, `Emoji(Deactivated)` | `realm_emoji` `op:update` `{realm_emoji}` (every custom emoji) | active users |
//!
//! Presence is soft state outside the WAL: its `presence` events are published by the
//! ping's handler (`api/presence.rs`), modern or legacy per the queue's
//! `simplified_presence_events` capability.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::channels::{ChannelId, ChannelUpdate, FolderUpdate};
use super::messages::json::MessageView;
use super::messages::{flags, Message, MessageChange, MessageId, Recipient};
use super::users::UserView;
use super::{Change, Realm, UserId};
use crate::realm::{ChannelChange, RealmChange, UserChange};

/// The map of a JSON object literal.
fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Who receives an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Audience {
    /// Every user of the realm.
    Everyone,
    /// These users (sorted, for binary search).
    Users(Vec<UserId>),
    /// Queues registered with `all_public_streams` (Zulip's
    /// `get_client_descriptors_for_realm_all_streams`) of users who may read public
    /// channels, except these users' (sorted): a public channel message's recipients,
    /// who get it with their own flags.
    AllPublicStreams { except: Vec<UserId> },
}

impl Audience {
    /// A user list, sorted and deduplicated.
    pub fn users(mut ids: Vec<UserId>) -> Self {
        ids.sort_unstable();
        ids.dedup();
        Audience::Users(ids)
    }

    pub fn includes(&self, user: UserId) -> bool {
        match self {
            Audience::Everyone => true,
            Audience::Users(ids) => ids.binary_search(&user).is_ok(),
            Audience::AllPublicStreams { .. } => false,
        }
    }
}

/// One event as the realm decides it: its body (with `type`, without `id`), its
/// audience, and what the event hub needs to fit it to each queue (never sent as such).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub body: Map<String, Value>,
    pub audience: Audience,
    /// Only queues whose `client_capabilities[name]` is (true) / is not (false) set.
    pub capability: Option<(&'static str, bool)>,
    /// A `message` event: how its message is shaped per queue.
    pub shape: Option<MessageShape>,
    /// An `update_message` event: the message whose `flags` each recipient gets, their
    /// own (the hub reads them from the message store and splits the event by them).
    pub flags_of: Option<MessageId>,
    /// The body names topics as they are, `""` included: queues without the
    /// `empty_topic_name` capability get this name (the realm's
    /// `empty_topic_display_name`) for the empty ones (the event hub).
    pub empty_topic: Option<String>,
}

/// What fits a `message` event's message to a queue.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MessageShape {
    /// The message's raw Markdown: its `content` for queues registered without
    /// `apply_markdown` (and what a queue's `search` narrow reads).
    pub raw_content: String,
    /// The sender's avatar is a gravatar, which `client_gravatar` queues compute
    /// themselves: they get no `avatar_url`.
    pub gravatar: bool,
}

impl Event {
    pub fn new(body: Value, audience: Audience) -> Self {
        let body = match body {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Event {
            body,
            audience,
            capability: None,
            shape: None,
            flags_of: None,
            empty_topic: None,
        }
    }

    /// Marks the body's topics as raw when one of them is empty (`empty_topic`).
    pub fn with_topics(mut self, realm: &Realm, topics: &[&str]) -> Self {
        if topics.iter().any(|t| t.is_empty()) {
            self.empty_topic = Some(realm.settings.empty_topic_display_name.clone());
        }
        self
    }

    /// Restricts the event to queues that declared (or did not declare) a capability.
    pub fn for_capability(mut self, name: &'static str, declared: bool) -> Self {
        self.capability = Some((name, declared));
        self
    }

    /// The event's `type`.
    pub fn kind(&self) -> &str {
        self.body
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

impl Realm {
    /// The events a just-applied change sends, with their recipients. `self` is the
    /// version right after the change, `before` the one right before it.
    pub fn events_for(&self, before: &Realm, change: &Change) -> Vec<Event> {
        match change {
            Change::Realm(RealmChange::RealmCreated { .. })
            | Change::User(UserChange::CanCreateUsersSet { .. }) => Vec::new(),
            Change::Realm(RealmChange::GroupSettingSet { setting, value }) => {
                self.realm_setting_events(*setting, value)
            }
            Change::Realm(RealmChange::PropertySet(p)) => self.realm_property_events(p),
            Change::Realm(RealmChange::UserSettingDefaultSet { name, value }) => {
                self.user_setting_default_events(name, value)
            }
            Change::User(UserChange::PasswordChanged { .. }) => Vec::new(),
            Change::Realm(RealmChange::Invite(c)) => self.invite_events(c),
            Change::Realm(
                RealmChange::PlaygroundAdded(_) | RealmChange::PlaygroundRemoved { .. },
            ) => self.playground_events(),
            Change::Group(g) => self.group_events(before, g),
            Change::Personal(p) => {
                let mut out = self.navigation_events(p);
                out.extend(self.push_device_events(p));
                out.extend(self.user_topic_events(p));
                out.extend(self.muted_user_events(p));
                out.extend(self.alert_word_events(p));
                out.extend(self.user_setting_events(p));
                out.extend(self.draft_events(p));
                out.extend(self.snippet_events(p));
                out.extend(self.reminder_events(p));
                out
            }
            Change::User(UserChange::UserCreated(n)) => {
                let mut out = self.user_added_events(n.user_id);
                out.extend(self.bot_added_events(n.user_id));
                out
            }
            Change::User(
                c @ (UserChange::Deactivated { .. }
                | UserChange::Reactivated { .. }
                | UserChange::RoleChanged { .. }
                | UserChange::FullNameChanged { .. }),
            ) => self.lifecycle_events(before, c),
            Change::Channel(c) => self.channel_events(before, c),
            Change::Message(m) => self.message_events(before, m),
            Change::Linkifier(c) => self.linkifier_events(c),
            Change::ProfileField(c) => self.profile_field_events(c),
            Change::Attachment(c) => self.attachment_events(before, c),
            Change::Status(c) => self.status_events(c),
            Change::Emoji(_) => vec![Event::new(
                json!({"type": "realm_emoji", "op": "update", "realm_emoji": self.view_realm_emoji()}),
                Audience::users(self.active_users(false)),
            )],
            Change::Export(_) => self.export_events(),
            Change::Session(_) => Vec::new(),
            Change::Bot(c) => self.bot_change_events(c),
            Change::Mail(_) => Vec::new(),
        }
    }

    /// Message events: `message` per group of recipients with the same flags;
    /// `update_message_flags` to the user whose flags changed.
    fn message_events(&self, before: &Realm, change: &MessageChange) -> Vec<Event> {
        match change {
            MessageChange::Sent(_) | MessageChange::Notice { .. } => {
                let Some((m, recipients)) = before.delivery(change) else {
                    return Vec::new();
                };
                let mut groups: BTreeMap<u32, Vec<UserId>> = BTreeMap::new();
                for (user, bits) in &recipients {
                    groups.entry(*bits).or_default().push(*user);
                }
                let raw = MessageView {
                    allow_empty_topic_name: true,
                    ..MessageView::default()
                };
                let message = Value::Object(self.message_json(m, raw, None));
                let topic = match &m.recipient {
                    Recipient::Channel { topic, .. } => Some(topic.as_str()),
                    Recipient::Direct { .. } => None,
                };
                let gravatar = self
                    .user(m.sender_id)
                    .is_some_and(|u| self.email_is_public(u));
                let event = |bits: u32, audience| Event {
                    shape: Some(MessageShape {
                        raw_content: m.content.clone(),
                        gravatar,
                    }),
                    ..Event::new(
                        json!({"type": "message", "message": message, "flags": flags::names(bits)}),
                        audience,
                    )
                    .with_topics(self, topic.as_slice())
                };
                let mut out: Vec<Event> = groups
                    .into_iter()
                    .map(|(bits, users)| event(bits, Audience::users(users)))
                    .collect();
                // Zulip's `get_client_info_for_message_event`: a public channel's
                // message also goes, without flags, to every `all_public_streams` queue
                // of a user who did not receive it.
                let public = m
                    .recipient
                    .channel()
                    .and_then(|c| before.channel(c))
                    .is_some_and(|c| c.is_public());
                if public {
                    let except = recipients.into_iter().map(|(u, _)| u).collect();
                    out.push(event(0, Audience::AllPublicStreams { except }));
                }
                out
            }
            MessageChange::FlagsChanged {
                user_id,
                flag,
                add,
                ids,
            } => {
                let name = flags::names(*flag).first().copied().unwrap_or_default();
                let op = if *add { "add" } else { "remove" };
                vec![Event::new(
                    json!({"type": "update_message_flags", "op": op, "operation": op,
                           "flag": name, "messages": ids, "all": false}),
                    Audience::users(vec![*user_id]),
                )]
            }
            MessageChange::Edited {
                user_id,
                propagate_mode,
                pairs,
                ..
            } => {
                let Some((before_row, after_row)) = pairs.first() else {
                    return Vec::new();
                };
                let edit_timestamp = after_row
                    .edits
                    .last()
                    .map_or(after_row.timestamp, |e| e.timestamp);
                let mut o = object(json!({
                    "type": "update_message",
                    "user_id": user_id,
                    "edit_timestamp": edit_timestamp,
                    "message_id": after_row.id,
                    "rendering_only": false,
                }));
                if before_row.content != after_row.content {
                    o.insert("orig_content".into(), before_row.content.clone().into());
                    o.insert(
                        "orig_rendered_content".into(),
                        before_row.rendered_content.clone().into(),
                    );
                    o.insert("content".into(), after_row.content.clone().into());
                    o.insert(
                        "rendered_content".into(),
                        after_row.rendered_content.clone().into(),
                    );
                    o.insert("is_me_message".into(), after_row.is_me_message.into());
                }
                let mut audience: Vec<UserId> = vec![*user_id];
                for row in [before_row, after_row] {
                    match &row.recipient {
                        Recipient::Channel { channel_id, .. } => {
                            if let Some(ch) = before.channel(*channel_id) {
                                audience.extend(ch.subscriber_ids());
                            }
                            if let Some(ch) = self.channel(*channel_id) {
                                audience.extend(ch.subscriber_ids());
                            }
                        }
                        Recipient::Direct { users } => audience.extend(users.iter().copied()),
                    }
                }
                let mut topics: Vec<String> = Vec::new();
                if let Recipient::Channel { channel_id, topic } = &before_row.recipient {
                    let name = before
                        .channel(*channel_id)
                        .map(|c| c.name.clone())
                        .unwrap_or_default();
                    o.insert("stream_name".into(), name.into());
                    o.insert("stream_id".into(), (*channel_id).into());
                    if before_row.recipient != after_row.recipient {
                        o.insert("propagate_mode".into(), propagate_mode.clone().into());
                        o.insert("orig_subject".into(), topic.clone().into());
                        topics.push(topic.clone());
                        if let Recipient::Channel {
                            channel_id: new_channel,
                            topic: new_topic,
                        } = &after_row.recipient
                        {
                            if new_topic != topic {
                                o.insert("subject".into(), new_topic.clone().into());
                                topics.push(new_topic.clone());
                                o.insert("topic_links".into(), json!([]));
                            }
                            if new_channel != channel_id {
                                o.insert("new_stream_id".into(), (*new_channel).into());
                            }
                        }
                    }
                }
                let mut ids: Vec<u64> = pairs.iter().map(|(_, a)| a.id).collect();
                ids.sort_unstable();
                o.insert("message_ids".into(), ids.into());
                // Each recipient gets their own flags on the message (the event hub).
                let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
                vec![Event {
                    flags_of: Some(after_row.id),
                    ..Event::new(Value::Object(o), Audience::users(audience))
                        .with_topics(self, &topics)
                }]
            }
            MessageChange::ReactionAdded {
                message_id,
                recipient,
                reaction,
            }
            | MessageChange::ReactionRemoved {
                message_id,
                recipient,
                reaction,
            } => {
                let op = match change {
                    MessageChange::ReactionAdded { .. } => "add",
                    _ => "remove",
                };
                let mut audience: Vec<UserId> = match recipient {
                    Recipient::Channel { channel_id, .. } => self
                        .channel(*channel_id)
                        .map(|c| c.subscriber_ids())
                        .unwrap_or_default(),
                    Recipient::Direct { users } => users.clone(),
                };
                audience.push(reaction.user_id);
                let user = self.user(reaction.user_id);
                vec![Event::new(
                    json!({"type": "reaction", "op": op, "message_id": message_id,
                           "user_id": reaction.user_id,
                           "user": {"user_id": reaction.user_id,
                                    "email": user.map(|u| self.api_email(u)).unwrap_or_default(),
                                    "full_name": user.map(|u| u.full_name.clone()).unwrap_or_default(),
                                    "is_mirror_dummy": false},
                           "emoji_name": reaction.emoji_name, "emoji_code": reaction.emoji_code,
                           "reaction_type": reaction.reaction_type}),
                    Audience::users(audience),
                )]
            }
            MessageChange::ScheduledCreated(s) => vec![Event::new(
                json!({"type": "scheduled_messages", "op": "add",
                       "scheduled_messages": [self.scheduled_json(s, true)]}),
                Audience::users(vec![s.sender_id]),
            )
            .with_topics(self, &[Realm::scheduled_topic(s)])],
            MessageChange::ScheduledUpdated(s) => vec![Event::new(
                json!({"type": "scheduled_messages", "op": "update",
                       "scheduled_message": self.scheduled_json(s, true)}),
                Audience::users(vec![s.sender_id]),
            )
            .with_topics(self, &[Realm::scheduled_topic(s)])],
            MessageChange::ScheduledFailed { id } => match self.messages.scheduled.get(id) {
                Some(s) => vec![Event::new(
                    json!({"type": "scheduled_messages", "op": "update",
                           "scheduled_message": self.scheduled_json(s, true)}),
                    Audience::users(vec![s.sender_id]),
                )
                .with_topics(self, &[Realm::scheduled_topic(s)])],
                None => Vec::new(),
            },
            MessageChange::ScheduledDeleted { id }
            | MessageChange::ScheduledDelivered { id, .. } => {
                match before.messages.scheduled.get(id) {
                    Some(s) => vec![Event::new(
                        json!({"type": "scheduled_messages", "op": "remove",
                               "scheduled_message_id": id}),
                        Audience::users(vec![s.sender_id]),
                    )],
                    None => Vec::new(),
                }
            }
            MessageChange::Deleted { messages, .. } => {
                // One event per conversation (Zulip's `do_delete_messages`: a channel's
                // topics compared lowercased, the event naming the lowercased topic) with
                // its ids sorted, for queues that handle bulk deletion; one per message
                // for the others.
                let mut groups: Vec<(Recipient, Vec<&Message>)> = Vec::new();
                for m in messages {
                    let key = match &m.recipient {
                        Recipient::Channel { channel_id, topic } => Recipient::Channel {
                            channel_id: *channel_id,
                            topic: topic.to_lowercase(),
                        },
                        direct => direct.clone(),
                    };
                    match groups.iter_mut().find(|(r, _)| *r == key) {
                        Some((_, list)) => list.push(m),
                        None => groups.push((key, vec![m])),
                    }
                }
                let mut out = Vec::new();
                for (recipient, list) in groups {
                    let mut audience: Vec<UserId> = Vec::new();
                    let mut o = object(json!({"type": "delete_message"}));
                    let mut raw_topic: Option<String> = None;
                    match &recipient {
                        Recipient::Channel { channel_id, topic } => {
                            if let Some(ch) = before.channel(*channel_id) {
                                audience.extend(ch.subscriber_ids());
                            }
                            o.insert("message_type".into(), "stream".into());
                            o.insert("stream_id".into(), (*channel_id).into());
                            o.insert("topic".into(), topic.clone().into());
                            raw_topic = Some(topic.clone());
                        }
                        Recipient::Direct { users } => {
                            audience.extend(users.iter().copied());
                            o.insert("message_type".into(), "private".into());
                        }
                    }
                    audience.extend(list.iter().map(|m| m.sender_id));
                    let audience = Audience::users(audience);
                    let mut ids: Vec<MessageId> = list.iter().map(|m| m.id).collect();
                    ids.sort_unstable();
                    let topics: Vec<&str> = raw_topic.as_deref().into_iter().collect();
                    let mut bulk = o.clone();
                    bulk.insert("message_ids".into(), json!(ids));
                    out.push(
                        Event::new(Value::Object(bulk), audience.clone())
                            .for_capability("bulk_message_deletion", true)
                            .with_topics(self, &topics),
                    );
                    for id in ids {
                        let mut one = o.clone();
                        one.insert("message_id".into(), id.into());
                        out.push(
                            Event::new(Value::Object(one), audience.clone())
                                .for_capability("bulk_message_deletion", false)
                                .with_topics(self, &topics),
                        );
                    }
                }
                out
            }
        }
    }

    /// `realm_bot` add, to administrators and the bot's owner.
    fn bot_added_events(&self, id: UserId) -> Vec<Event> {
        let Some(bot) = self.user(id).filter(|u| u.is_bot()) else {
            return Vec::new();
        };
        let ids: Vec<UserId> = self
            .users
            .values()
            .filter(|u| u.is_active && (u.is_admin() || Some(u.id) == bot.bot_owner_id))
            .map(|u| u.id)
            .collect();
        vec![Event::new(
            json!({"type": "realm_bot", "op": "add", "bot": self.bot_json(bot)}),
            Audience::users(ids),
        )]
    }

    pub(super) fn active_users(&self, non_guest: bool) -> Vec<UserId> {
        self.users
            .values()
            .filter(|u| u.is_active && !(non_guest && u.is_guest()))
            .map(|u| u.id)
            .collect()
    }

    fn channel_events(&self, before: &Realm, change: &ChannelChange) -> Vec<Event> {
        let mut out = Vec::new();
        match change {
            ChannelChange::ChannelCreated(ch) => {
                if let Some(ch) = self.channel(ch.id) {
                    out.push(Event::new(
                        json!({"type": "stream", "op": "create", "streams": [self.stream_json(ch)]}),
                        Audience::users(self.channel_viewers(ch)),
                    ));
                }
            }
            ChannelChange::Subscribed { subs } => {
                let mut by_user: BTreeMap<UserId, Vec<ChannelId>> = BTreeMap::new();
                let mut by_channel: BTreeMap<ChannelId, Vec<UserId>> = BTreeMap::new();
                for s in subs {
                    by_user.entry(s.user_id).or_default().push(s.channel_id);
                    by_channel.entry(s.channel_id).or_default().push(s.user_id);
                }
                for (uid, cids) in &by_user {
                    let Some(user) = self.user(*uid) else {
                        continue;
                    };
                    let newly_visible: Vec<Value> = cids
                        .iter()
                        .filter_map(|c| self.channel(*c))
                        .filter(|ch| {
                            (ch.invite_only && !user.is_admin())
                                || (user.is_guest() && !ch.is_web_public)
                        })
                        .map(|ch| Value::Object(self.stream_json(ch)))
                        .collect();
                    if !newly_visible.is_empty() {
                        out.push(Event::new(
                            json!({"type": "stream", "op": "create", "streams": newly_visible}),
                            Audience::users(vec![*uid]),
                        ));
                    }
                }
                for (uid, cids) in &by_user {
                    let Some(user) = self.user(*uid) else {
                        continue;
                    };
                    let subscriptions: Vec<Value> = cids
                        .iter()
                        .filter_map(|c| self.channel(*c))
                        .filter_map(|ch| {
                            let sub = ch.subs.get(uid)?;
                            let see = self.can_see_subscribers(user, ch);
                            let mut m = self.subscription_json(ch, sub, see);
                            m.entry("subscribers").or_insert_with(|| json!([]));
                            Some(Value::Object(m))
                        })
                        .collect();
                    out.push(Event::new(
                        json!({"type": "subscription", "op": "add", "subscriptions": subscriptions}),
                        Audience::users(vec![*uid]),
                    ));
                }
                out.extend(self.peer_events("peer_add", &by_channel));
            }
            ChannelChange::Unsubscribed { subs } => {
                let mut by_user: BTreeMap<UserId, Vec<ChannelId>> = BTreeMap::new();
                let mut by_channel: BTreeMap<ChannelId, Vec<UserId>> = BTreeMap::new();
                for (cid, uid) in subs {
                    by_user.entry(*uid).or_default().push(*cid);
                    by_channel.entry(*cid).or_default().push(*uid);
                }
                for (uid, cids) in &by_user {
                    let removed: Vec<Value> = cids
                        .iter()
                        .filter_map(|c| self.channel(*c))
                        .map(|ch| json!({"name": ch.name, "stream_id": ch.id}))
                        .collect();
                    out.push(Event::new(
                        json!({"type": "subscription", "op": "remove", "subscriptions": removed}),
                        Audience::users(vec![*uid]),
                    ));
                }
                out.extend(self.peer_events("peer_remove", &by_channel));
                for (uid, cids) in &by_user {
                    let Some(user) = self.user(*uid) else {
                        continue;
                    };
                    let lost: Vec<ChannelId> = cids
                        .iter()
                        .filter_map(|c| self.channel(*c))
                        .filter(|ch| !self.can_see_channel(user, ch))
                        .map(|ch| ch.id)
                        .collect();
                    if !lost.is_empty() {
                        let streams: Vec<Value> =
                            lost.iter().map(|id| json!({"stream_id": id})).collect();
                        out.push(Event::new(
                            json!({"type": "stream", "op": "delete", "streams": streams, "stream_ids": lost}),
                            Audience::users(vec![*uid]),
                        ));
                    }
                }
            }
            ChannelChange::SubscriptionPropertySet {
                user_id,
                channel_id,
                property,
            } => {
                for (name, value) in property.events() {
                    out.push(Event::new(
                        json!({"type": "subscription", "op": "update", "stream_id": channel_id, "property": name, "value": value}),
                        Audience::users(vec![*user_id]),
                    ));
                }
            }
            ChannelChange::ChannelUpdated { channel_id, update } => {
                let Some(ch) = self.channel(*channel_id) else {
                    return out;
                };
                let viewers = Audience::users(self.channel_viewers(ch));
                let mut body =
                    json!({"type": "stream", "op": "update", "stream_id": ch.id, "name": ch.name});
                let extra = match update {
                    ChannelUpdate::Name { old, new } => {
                        json!({"name": old, "property": "name", "value": new})
                    }
                    ChannelUpdate::Description {
                        description,
                        rendered,
                    } => {
                        json!({"property": "description", "value": description, "rendered_description": rendered})
                    }
                    ChannelUpdate::Privacy {
                        invite_only,
                        history_public_to_subscribers,
                        is_web_public,
                    } => {
                        json!({"property": "invite_only", "value": invite_only, "history_public_to_subscribers": history_public_to_subscribers, "is_web_public": is_web_public})
                    }
                    ChannelUpdate::Folder(f) => json!({"property": "folder_id", "value": f}),
                    ChannelUpdate::Setting(s, v) => {
                        json!({"property": s.name(), "value": v.json()})
                    }
                    ChannelUpdate::Archived(a) => {
                        json!({"property": "is_archived", "value": a})
                    }
                    ChannelUpdate::MessageRetentionDays(d) => {
                        json!({"property": "message_retention_days", "value": d})
                    }
                    ChannelUpdate::TopicsPolicy(p) => {
                        json!({"property": "topics_policy", "value": p.name()})
                    }
                };
                if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
                    b.extend(e);
                }
                match update {
                    ChannelUpdate::Archived(a) => {
                        out.push(
                            Event::new(body, viewers.clone())
                                .for_capability("archived_channels", true),
                        );
                        let legacy = if *a {
                            json!({"type": "stream", "op": "delete", "streams": [{"stream_id": ch.id}], "stream_ids": [ch.id]})
                        } else {
                            json!({"type": "stream", "op": "create", "streams": [self.stream_json(ch)]})
                        };
                        out.push(
                            Event::new(legacy, viewers).for_capability("archived_channels", false),
                        );
                    }
                    ChannelUpdate::Privacy { .. } => {
                        // As Zulip's `do_change_stream_permission`: users who gain
                        // access get the channel created first; users who lose it get
                        // it deleted after the update (which only viewers get).
                        let was: Vec<UserId> = before
                            .channel(ch.id)
                            .map(|old| before.channel_viewers(old))
                            .unwrap_or_default();
                        let now = self.channel_viewers(ch);
                        let gained: Vec<UserId> =
                            now.iter().filter(|u| !was.contains(u)).copied().collect();
                        let lost: Vec<UserId> =
                            was.iter().filter(|u| !now.contains(u)).copied().collect();
                        if !gained.is_empty() {
                            out.push(Event::new(
                                json!({"type": "stream", "op": "create", "streams": [self.stream_json(ch)]}),
                                Audience::users(gained),
                            ));
                        }
                        out.push(Event::new(body, viewers));
                        if !lost.is_empty() {
                            out.push(Event::new(
                                json!({"type": "stream", "op": "delete", "streams": [{"stream_id": ch.id}], "stream_ids": [ch.id]}),
                                Audience::users(lost),
                            ));
                        }
                    }
                    _ => out.push(Event::new(body, viewers)),
                }
            }
            ChannelChange::DefaultChannelSet { .. } => {
                let ids: Vec<ChannelId> = self.default_channels.iter().copied().collect();
                out.push(Event::new(
                    json!({"type": "default_streams", "default_streams": ids}),
                    Audience::users(self.active_users(true)),
                ));
            }
            ChannelChange::ChannelFolderCreated(f) => {
                if let Some(f) = self.folders.get(&f.id) {
                    out.push(Event::new(
                        json!({"type": "channel_folder", "op": "add", "channel_folder": self.folder_json(f)}),
                        Audience::users(self.active_users(false)),
                    ));
                }
            }
            ChannelChange::ChannelFolderUpdated { folder_id, update } => {
                let data = match update {
                    FolderUpdate::Name(n) => json!({"name": n}),
                    FolderUpdate::Description {
                        description,
                        rendered,
                    } => json!({"description": description, "rendered_description": rendered}),
                    FolderUpdate::Archived(a) => json!({"is_archived": a}),
                };
                out.push(Event::new(
                    json!({"type": "channel_folder", "op": "update", "channel_folder_id": folder_id, "data": data}),
                    Audience::users(self.active_users(false)),
                ));
            }
            ChannelChange::ChannelFoldersReordered { order } => {
                out.push(Event::new(
                    json!({"type": "channel_folder", "op": "reorder", "order": order}),
                    Audience::users(self.active_users(false)),
                ));
            }
            // Zulip sends no event for a channel's email token.
            ChannelChange::EmailTokenCreated { .. } => {}
        }
        out
    }

    /// `subscription` `peer_add`/`peer_remove`, batched as Zulip's
    /// `send_peer_subscriber_events`: a private channel gets its own event, to those who
    /// may see its subscribers; public channels whose set of altered users is the same
    /// share one event, to every active non-guest user (all active users for web-public
    /// channels), unless a guest subscribes to one, which then gets its own event. The
    /// users concerned are never told.
    pub(super) fn peer_events(
        &self,
        op: &str,
        by_channel: &BTreeMap<ChannelId, Vec<UserId>>,
    ) -> Vec<Event> {
        let event = |stream_ids: Vec<ChannelId>, altered: &[UserId], peers: Vec<UserId>| {
            Event::new(
                json!({"type": "subscription", "op": op, "stream_ids": stream_ids, "user_ids": altered}),
                Audience::users(peers),
            )
        };
        let not_altered = |ids: Vec<UserId>, altered: &[UserId]| -> Vec<UserId> {
            ids.into_iter().filter(|u| !altered.contains(u)).collect()
        };
        let mut out = Vec::new();
        // Public channels, by the (sorted) set of users whose subscription changed.
        let mut public: BTreeMap<Vec<UserId>, Vec<ChannelId>> = BTreeMap::new();
        for (cid, uids) in by_channel {
            let Some(ch) = self.channel(*cid) else {
                continue;
            };
            let mut altered = uids.clone();
            altered.sort_unstable();
            altered.dedup();
            if altered.is_empty() {
                continue;
            }
            if ch.invite_only {
                let peers = not_altered(self.subscriber_viewers(ch), &altered);
                if !peers.is_empty() {
                    out.push(event(vec![*cid], &altered, peers));
                }
            } else {
                public.entry(altered).or_default().push(*cid);
            }
        }
        if public.is_empty() {
            return out;
        }
        let non_guests = self.active_users(true);
        for (altered, cids) in public {
            let (mut web_public, mut without_guests) = (Vec::new(), Vec::new());
            for cid in cids {
                let Some(ch) = self.channel(cid) else {
                    continue;
                };
                if ch.is_web_public {
                    web_public.push(cid);
                    continue;
                }
                let guests: Vec<UserId> = ch
                    .subscriber_ids()
                    .into_iter()
                    .filter(|u| non_guests.binary_search(u).is_err())
                    .collect();
                if guests.is_empty() {
                    without_guests.push(cid);
                } else {
                    let mut peers = non_guests.clone();
                    peers.extend(guests);
                    out.push(event(vec![cid], &altered, not_altered(peers, &altered)));
                }
            }
            if !web_public.is_empty() {
                let peers = not_altered(self.active_users(false), &altered);
                out.push(event(web_public, &altered, peers));
            }
            if !without_guests.is_empty() {
                let peers = not_altered(non_guests.clone(), &altered);
                out.push(event(without_guests, &altered, peers));
            }
        }
        out
    }

    /// `realm_user` add, split by whether the recipient may see the real email.
    fn user_added_events(&self, id: UserId) -> Vec<Event> {
        let Some(user) = self.user(id) else {
            return Vec::new();
        };
        let view = UserView {
            client_gravatar: false,
            include_custom_profile_fields: true,
        };
        let (mut see, mut hidden) = (Vec::new(), Vec::new());
        for viewer in self.users.values().filter(|u| u.is_active) {
            if self.can_see_delivery_email(viewer, user) {
                see.push(viewer.id);
            } else {
                hidden.push(viewer.id);
            }
        }
        let mut out = Vec::new();
        for (ids, sample) in [(see, true), (hidden, false)] {
            let Some(&viewer_id) = ids.first() else {
                continue;
            };
            let Some(viewer) = self.user(viewer_id) else {
                continue;
            };
            let mut person = self.user_json(viewer, user, view);
            if !user.is_bot() {
                person.entry("profile_data").or_insert_with(|| json!({}));
            }
            debug_assert_eq!(person["delivery_email"].is_null(), !sample);
            out.push(Event::new(
                json!({"type": "realm_user", "op": "add", "person": person}),
                Audience::users(ids),
            ));
        }
        out
    }
}
