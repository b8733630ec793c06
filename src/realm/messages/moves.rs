//! What a move tells the channels: the Notification Bot's messages in the old and new
//! topic when `PATCH /messages/{id}` moves messages (Zulip's `do_update_message` with
//! `send_notification_to_old_thread` / `send_notification_to_new_thread`, and
//! `send_message_moved_breadcrumbs`), and in a topic that is resolved or unresolved
//! (`maybe_send_resolve_topic_notifications`, with its undo within the grace period).
//!
//! The Notification Bot is one of Zulip's system ("cross-realm") bots: it belongs to
//! the server, not to a realm, so it is in no realm's user list and no one logs in as
//! it. hearth has it the same way: a fixed account (`NOTIFICATION_BOT`) outside
//! `Realm::users`, which `Realm::message_sender` finds for the messages it sends and
//! `/register` lists in `cross_realm_bots`. Its messages are `Notice` changes (a `Sent`
//! with the flags Zulip's `internal_send_stream_message` gives) in the same decision
//! as the move, so they are in the WAL like every other message.
//!
//! The texts are Zulip's, in English (Zulip renders them in the realm's default
//! language; hearth has no translations).

use std::sync::LazyLock;

use super::fetch::{MessageRows, RowsResult};
use super::{ChannelId, Message, MessageChange, MessageId, Recipient, TopicMax};
use crate::realm::{Change, Cx, Realm, Role, User, UserId};

/// The Notification Bot's user id: above every id a realm hands out in practice (and
/// within 32 bits, as clients store ids).
pub const NOTIFICATION_BOT_ID: UserId = i32::MAX as UserId;
/// Zulip's `settings.NOTIFICATION_BOT`.
pub const NOTIFICATION_BOT_EMAIL: &str = "notification-bot@zulip.com";
/// The realm Zulip's system bots belong to (`sender_realm_str` of their messages).
pub const SYSTEM_BOT_REALM: &str = "zulipinternal";
/// Zulip's `RESOLVED_TOPIC_PREFIX`.
const RESOLVED_TOPIC_PREFIX: &str = "✔ ";

/// The Notification Bot's account (a generic bot without an owner or a key).
pub static NOTIFICATION_BOT: LazyLock<User> = LazyLock::new(|| User {
    id: NOTIFICATION_BOT_ID,
    delivery_email: NOTIFICATION_BOT_EMAIL.to_owned(),
    full_name: "Notification Bot".to_owned(),
    role: Role::Member,
    is_active: true,
    bot_type: Some(1),
    bot_owner_id: None,
    timezone: String::new(),
    api_key: String::new(),
    password_hash: None,
    date_joined: 0,
    avatar_version: 1,
    can_create_users: false,
});

/// The Welcome Bot's user id (Zulip's `settings.WELCOME_BOT`), just below the
/// Notification Bot's.
pub const WELCOME_BOT_ID: UserId = NOTIFICATION_BOT_ID - 1;
/// Zulip's `settings.WELCOME_BOT`.
pub const WELCOME_BOT_EMAIL: &str = "welcome-bot@zulip.com";

/// The Welcome Bot's account: a system bot like the Notification Bot, which sends a
/// new realm's first channel messages and each new user's welcome
/// (`realm::onboarding`).
pub static WELCOME_BOT: LazyLock<User> = LazyLock::new(|| User {
    id: WELCOME_BOT_ID,
    delivery_email: WELCOME_BOT_EMAIL.to_owned(),
    full_name: "Welcome Bot".to_owned(),
    ..NOTIFICATION_BOT.clone()
});

/// Every address Zulip reserves for its system bots, in `INTERNAL_BOT_DOMAIN`
/// (`zulip.com`): `INTERNAL_BOTS` (with the two a production server adds),
/// `REALM_INTERNAL_BOTS` (none) and `DISABLED_REALM_INTERNAL_BOTS`. hearth runs only two
/// of them, but a person holding any other would receive what is meant for that bot
/// once it exists, so none can be taken.
pub const SYSTEM_BOT_EMAILS: [&str; 8] = [
    NOTIFICATION_BOT_EMAIL,
    "emailgateway@zulip.com",
    "nagios-send-bot@zulip.com",
    "nagios-receive-bot@zulip.com",
    WELCOME_BOT_EMAIL,
    "nagios-staging-send-bot@zulip.com",
    "nagios-staging-receive-bot@zulip.com",
    "reminder-bot@zulip.com",
];

/// Zulip's `is_cross_realm_bot_email` (case-insensitive, as addresses are compared).
pub fn is_system_bot_email(email: &str) -> bool {
    let email = email.trim();
    SYSTEM_BOT_EMAILS
        .iter()
        .any(|bot| bot.eq_ignore_ascii_case(email))
}

/// Whether a user id is a system bot's.
pub fn is_system_bot(id: UserId) -> bool {
    id == NOTIFICATION_BOT_ID || id == WELCOME_BOT_ID
}

/// The system bot with this id.
pub fn system_bot(id: UserId) -> Option<&'static User> {
    match id {
        NOTIFICATION_BOT_ID => Some(&NOTIFICATION_BOT),
        WELCOME_BOT_ID => Some(&WELCOME_BOT),
        _ => None,
    }
}

/// The system bot with this email (emails compare case-insensitively).
pub fn system_bot_by_email(email: &str) -> Option<&'static User> {
    system_bots()
        .into_iter()
        .find(|b| b.delivery_email.eq_ignore_ascii_case(email))
}

/// The system bots, as `/register` lists them in `cross_realm_bots`
/// (`get_cross_realm_dicts` sorts them by full name).
pub fn system_bots() -> [&'static User; 2] {
    [&NOTIFICATION_BOT, &WELCOME_BOT]
}

/// A move of messages, as `do_update_message` sees it when it notifies.
pub struct Move<'a> {
    /// The message the request named, before and after.
    pub before: &'a Message,
    pub after: &'a Message,
    /// How many messages moved (Zulip's `changed_messages_count`).
    pub count: usize,
    /// `propagate_mode` was `change_all`.
    pub change_all: bool,
    /// No message the mover can see is left in the old topic.
    pub old_topic_emptied: bool,
    /// The new topic had messages before the move (besides the moved ones).
    pub new_topic_had_messages: bool,
    pub send_to_old_thread: bool,
    pub send_to_new_thread: bool,
    /// The request edited the content too (then a resolve sends no notice).
    pub content_edited: bool,
    /// The target topic's newest message after the move, when the move toggles the
    /// resolved prefix and that message is a resolve notice younger than
    /// `RESOLVE_UNDO_GRACE_SECS` (`maybe_delete_previous_resolve_topic_notification`):
    /// the row (after the move) and the topic's newest message without it.
    pub undo: Option<(Message, Option<MessageId>)>,
    /// The realm's URL (message links are absolute).
    pub realm_url: &'a str,
}

impl Move<'_> {
    /// The resolve or unresolve this move is, when it sends (or undoes) a resolve
    /// notice: a topic edit of a channel message, without content or channel change
    /// (`do_update_message`'s condition for `maybe_send_resolve_topic_notifications`).
    pub fn resolve(&self) -> Option<Resolve> {
        match (&self.before.recipient, &self.after.recipient) {
            (
                Recipient::Channel {
                    channel_id: old_id,
                    topic: old,
                },
                Recipient::Channel {
                    channel_id: new_id,
                    topic: new,
                },
            ) if old_id == new_id && !self.content_edited => resolve_toggle(old, new),
            _ => None,
        }
    }
}

/// Zulip's `encode_hash_component`: URL-quoting (`*` kept) with `.` for `%`.
fn encode_hash_component(s: &str) -> String {
    let mut out = String::new();
    for b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'~' | b'*' => {
                out.push(*b as char)
            }
            b'.' => out.push_str(".2E"),
            b'(' => out.push_str(".28"),
            b')' => out.push_str(".29"),
            _ => out.push_str(&format!(".{b:02X}")),
        }
    }
    out
}

/// Zulip's `near_stream_message_url`: a channel message in the web client.
pub(crate) fn channel_near_link(
    realm_url: &str,
    channel_id: u64,
    channel_name: &str,
    topic: &str,
    message_id: u64,
) -> String {
    format!(
        "{realm_url}/#narrow/channel/{}/topic/{}/near/{message_id}",
        encode_channel(channel_id, channel_name),
        encode_hash_component(topic)
    )
}

/// Zulip's `encode_channel`: `id-name`, spaces as dashes.
fn encode_channel(id: u64, name: &str) -> String {
    format!("{id}-{}", encode_hash_component(&name.replace(' ', "-")))
}

/// Zulip's `will_produce_broken_stream_topic_link`.
fn breaks_link_syntax(s: &str) -> bool {
    s.contains(['`', '>', '*', '&', '[', ']']) || s.contains("$$")
}

/// Zulip's `escape_invalid_stream_topic_characters` (one pass, as its `re.sub`).
fn escape_link_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' => out.push_str("&#96;"),
            '>' => out.push_str("&gt;"),
            '*' => out.push_str("&#42;"),
            '&' => out.push_str("&amp;"),
            '[' => out.push_str("&#91;"),
            ']' => out.push_str("&#93;"),
            '$' if chars.peek() == Some(&'$') => {
                chars.next();
                out.push_str("&#36;&#36;");
            }
            c => out.push(c),
        }
    }
    out
}

/// Zulip's `get_stream_topic_link_syntax`: `#**channel>topic**`, or a plain Markdown
/// link where the names would break that syntax.
pub(crate) fn topic_link_syntax(
    realm: &Realm,
    channel_id: u64,
    channel: &str,
    topic: &str,
) -> String {
    if breaks_link_syntax(topic) || breaks_link_syntax(channel) {
        let shown = if topic.is_empty() {
            realm.settings.empty_topic_display_name.as_str()
        } else {
            topic
        };
        return format!(
            "[#{} > {}](#narrow/channel/{}/topic/{})",
            escape_link_text(channel),
            escape_link_text(shown),
            encode_channel(channel_id, channel),
            encode_hash_component(topic)
        );
    }
    format!("#**{channel}>{topic}**")
}

/// Zulip's `silent_mention_syntax_for_user`.
pub(crate) fn silent_mention(user: &User) -> String {
    format!("@_**{}|{}**", user.full_name, user.id)
}

/// A topic edit that only adds or takes away the resolved prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolve {
    Resolved,
    Unresolved,
}

/// Zulip's `topic_resolved` / `topic_unresolved` of `build_message_edit_request`: the
/// new topic is the old one behind the prefix, or the old one with its leading `✔` and
/// spaces stripped (`lstrip` of the prefix's characters).
pub fn resolve_toggle(old: &str, new: &str) -> Option<Resolve> {
    let had = old.starts_with(RESOLVED_TOPIC_PREFIX);
    let has = new.starts_with(RESOLVED_TOPIC_PREFIX);
    if has && !had && new.strip_prefix(RESOLVED_TOPIC_PREFIX) == Some(old) {
        Some(Resolve::Resolved)
    } else if had && !has && old.trim_start_matches(['✔', ' ']) == new {
        Some(Resolve::Unresolved)
    } else {
        None
    }
}

/// Zulip's `settings.RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS`: a resolve notice this
/// young is deleted by the opposite toggle instead of being answered by another.
pub const RESOLVE_UNDO_GRACE_SECS: i64 = 60;

/// The resolve notice that an opposite toggle deletes instead of answering it (Zulip's
/// `maybe_delete_previous_resolve_topic_notification`): the newest message of the
/// target topic once `moved` (rows after the move) are in it, when that is a resolve
/// notice younger than the grace period; with the topic's newest message without it.
pub fn resolve_undo(
    rows: &dyn MessageRows,
    moved: &[&Message],
    channel: ChannelId,
    topic: &str,
    now: i64,
) -> RowsResult<Option<(Message, Option<MessageId>)>> {
    let moved_ids: Vec<MessageId> = moved.iter().map(|m| m.id).collect();
    let moved_max = moved_ids.iter().copied().max();
    let stayed = rows.topic_max(channel, topic, &moved_ids)?;
    let Some(newest_id) = stayed.max(moved_max) else {
        return Ok(None);
    };
    let newest = match moved.iter().find(|m| m.id == newest_id) {
        Some(m) => Some((*m).clone()),
        // The index names it; the row must agree that it is in this topic.
        None => rows
            .row(newest_id)?
            .filter(|m| m.recipient.is_topic(channel, topic)),
    };
    let Some(newest) =
        newest.filter(|m| is_resolve_notice(m) && now - m.timestamp <= RESOLVE_UNDO_GRACE_SECS)
    else {
        return Ok(None);
    };
    let rest = if moved_max == Some(newest_id) {
        let others = moved_ids
            .iter()
            .copied()
            .filter(|id| *id != newest_id)
            .max();
        stayed.max(others)
    } else {
        let mut skip = moved_ids;
        skip.push(newest_id);
        rows.topic_max(channel, topic, &skip)?.max(moved_max)
    };
    Ok(Some((newest, rest)))
}

/// The texts of the resolve notices (`maybe_send_resolve_topic_notifications`).
const RESOLVED_NOTICE: &str = " has marked this topic as resolved.";
const UNRESOLVED_NOTICE: &str = " has marked this topic as unresolved.";

/// Whether a message is a resolve or unresolve notice (Zulip's message type
/// `RESOLVE_TOPIC_NOTIFICATION`). Only the server sends as the Notification Bot, and
/// these are its only texts that end so, after a silent mention.
pub fn is_resolve_notice(m: &Message) -> bool {
    is_system_bot(m.sender_id)
        && m.content.starts_with("@_**")
        && (m.content.ends_with(RESOLVED_NOTICE) || m.content.ends_with(UNRESOLVED_NOTICE))
}

impl Realm {
    /// The account that sent a message: a user of the realm, or a system bot.
    pub fn message_sender(&self, id: UserId) -> Option<&User> {
        self.user(id).or_else(|| system_bot(id))
    }

    /// A user by API email, or a system bot by its email (Zulip's
    /// `get_user_by_delivery_email` with cross-realm bots, as narrows and direct
    /// messages look them up).
    pub fn user_or_system_bot_by_email(&self, email: &str) -> Option<&User> {
        self.user_by_api_email(email)
            .or_else(|| system_bot_by_email(email))
    }

    /// The Notification Bot's messages about a move by `me`, in Zulip's order and with
    /// its texts and conditions: a resolve notice (or, for an undo within the grace
    /// period, the deletion of the previous one), then the new thread's notice, then the
    /// old thread's. Each is read at once by `me` where they receive it
    /// (`mark_as_read_for_acting_user`). Message ids follow the realm's next one.
    pub fn decide_move_notices(&self, me: &User, mv: &Move<'_>, cx: &Cx) -> Vec<Change> {
        let (
            Recipient::Channel {
                channel_id: old_id,
                topic: old_topic,
            },
            Recipient::Channel {
                channel_id: new_id,
                topic: new_topic,
            },
        ) = (&mv.before.recipient, &mv.after.recipient)
        else {
            return Vec::new();
        };
        let (Some(old_channel), Some(new_channel)) = (self.channel(*old_id), self.channel(*new_id))
        else {
            return Vec::new();
        };
        let channel_moved = old_id != new_id;
        let topic_moved = old_topic != new_topic;
        if !channel_moved && !topic_moved {
            return Vec::new();
        }
        let moved_all = mv.change_all || mv.old_topic_emptied;
        let user = silent_mention(me);
        let count = mv.count;
        let mut changes = Vec::new();
        // (channel, topic, content, read by every recipient), in the order Zulip sends.
        let mut notices: Vec<(u64, String, String, bool)> = Vec::new();
        match (mv.resolve(), &mv.undo) {
            (Some(_), Some((previous, max_id))) => {
                // An undo within the grace period deletes the previous notice instead.
                changes.push(Change::Message(MessageChange::Deleted {
                    messages: vec![previous.clone()],
                    topic_max: vec![TopicMax {
                        channel_id: *new_id,
                        topic: new_topic.clone(),
                        max_id: *max_id,
                    }],
                }));
            }
            (Some(resolve), None) => {
                let said = match resolve {
                    Resolve::Resolved => RESOLVED_NOTICE,
                    Resolve::Unresolved => UNRESOLVED_NOTICE,
                };
                // Read for everyone: hearth has no followed topics and no
                // `resolved_topic_notice_auto_read_policy` but its default,
                // `except_followed`, so Zulip's `limit_unread_user_ids` is empty.
                notices.push((*new_id, new_topic.clone(), format!("{user}{said}"), true));
            }
            (None, _) => {}
        }
        let new_eligible =
            channel_moved || (topic_moved && resolve_toggle(old_topic, new_topic).is_none());
        if mv.send_to_new_thread && new_eligible {
            let old_location = topic_link_syntax(self, *old_id, &old_channel.name, old_topic);
            let text = if !mv.new_topic_had_messages && moved_all {
                format!("This topic was moved here from {old_location} by {user}.")
            } else if count == 1 {
                let link = channel_near_link(
                    mv.realm_url,
                    *new_id,
                    &new_channel.name,
                    new_topic,
                    mv.after.id,
                );
                format!("[A message]({link}) was moved here from {old_location} by {user}.")
            } else {
                format!("{count} messages were moved here from {old_location} by {user}.")
            };
            notices.push((*new_id, new_topic.clone(), text, false));
        }
        if mv.send_to_old_thread {
            let new_location = topic_link_syntax(self, *new_id, &new_channel.name, new_topic);
            let text = if moved_all {
                format!("This topic was moved to {new_location} by {user}.")
            } else if count == 1 {
                format!("A message was moved from this topic to {new_location} by {user}.")
            } else {
                format!("{count} messages were moved from this topic to {new_location} by {user}.")
            };
            notices.push((*old_id, old_topic.clone(), text, false));
        }
        for (id, (channel_id, topic, content, all_read)) in (self.messages.next_id..).zip(notices) {
            let m = self.bot_message(id, channel_id, topic, content, cx.now_secs());
            changes.push(Change::Message(MessageChange::Notice {
                message: Box::new(m),
                read_by: me.id,
                all_read,
            }));
        }
        changes
    }

    /// A Notification Bot message as message `id` (Zulip's
    /// `internal_send_stream_message`), its content rendered now.
    pub(crate) fn bot_message(
        &self,
        id: MessageId,
        channel_id: ChannelId,
        topic: String,
        content: String,
        now: i64,
    ) -> Message {
        let rendered = self.render_message(&content);
        Message::internal(
            id,
            NOTIFICATION_BOT_ID,
            Recipient::Channel { channel_id, topic },
            content,
            rendered.html,
            now,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zulip_link_encodings() {
        assert_eq!(encode_channel(9, "Verona"), "9-Verona");
        assert_eq!(encode_channel(3, "core team"), "3-core-team");
        assert_eq!(encode_hash_component("a b.c(d)*"), "a.20b.2Ec.28d.29*");
        assert_eq!(encode_hash_component("✔"), ".E2.9C.94");
        assert!(breaks_link_syntax("a>b") && breaks_link_syntax("$$x"));
        assert!(!breaks_link_syntax("plain $ topic"));
        assert_eq!(escape_link_text("a>b*$$"), "a&gt;b&#42;&#36;&#36;");
    }

    #[test]
    fn resolve_toggles_follow_zulip() {
        assert_eq!(resolve_toggle("bug", "✔ bug"), Some(Resolve::Resolved));
        assert_eq!(resolve_toggle("✔ bug", "bug"), Some(Resolve::Unresolved));
        // The prefix is cut once to resolve, stripped wholly to unresolve.
        assert_eq!(resolve_toggle("✔bug", "✔ ✔bug"), Some(Resolve::Resolved));
        assert_eq!(resolve_toggle("✔ ✔ bug", "bug"), Some(Resolve::Unresolved));
        assert_eq!(resolve_toggle("bug", "✔ other"), None);
        assert_eq!(resolve_toggle("bug", "bugs"), None);
        assert_eq!(resolve_toggle("✔ bug", "✔ bug2"), None);
    }
}
