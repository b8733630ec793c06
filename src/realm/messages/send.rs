//! `POST /messages`: Zulip's `check_send_message`, as a decision.

use serde_json::Value;

use std::collections::BTreeSet;

use super::content::Rendered;
use super::fetch::{MessageRows, Source};
use super::{Message, MessageChange, MessageId, Recipient, Wildcard};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::realm::channels::{Channel, ChannelSetting};
use crate::realm::groups::{GroupSetting, RealmSetting, SystemGroup};
use crate::realm::{Change, Cx, Decided, Realm, User, UserId};

/// Zulip's `Realm.WILDCARD_MENTION_THRESHOLD`: wildcard mentions reaching more users
/// need `can_mention_many_users_group`.
pub const WILDCARD_MENTION_THRESHOLD: usize = 15;

/// Zulip's `max_message_length`.
pub const MAX_MESSAGE_LENGTH: usize = 10_000;
/// Zulip's `max_topic_length`.
pub const MAX_TOPIC_LENGTH: usize = 60;

/// A channel named by id or by name.
#[derive(Debug, Clone, PartialEq)]
pub enum ChannelRef {
    Id(i64),
    Name(String),
}

/// Who a message goes to, as the client named them.
#[derive(Debug, Clone, PartialEq)]
pub enum Addressee {
    Channel {
        channel: ChannelRef,
        topic: String,
    },
    /// User ids or API emails.
    Direct {
        ids: Vec<i64>,
        emails: Vec<String>,
    },
}

/// A send, parsed on the HTTP worker and rendered against the published version.
#[derive(Debug, Clone)]
pub struct SendRequest {
    pub to: Addressee,
    /// Normalized content (`normalize_body`).
    pub content: String,
    pub rendered: Rendered,
    pub client: String,
    pub read_by_sender: bool,
    /// With a topic wildcard mention: the topic's participants, read on the worker
    /// (`topic_participants`).
    pub topic_participants: Vec<UserId>,
}

/// Zulip's `participants_for_topic`: who sent or reacted to a message of the topic,
/// deactivated users included. Reading stops once more than
/// `WILDCARD_MENTION_THRESHOLD` are found, which is all a decision needs.
pub fn topic_participants(
    rows: &dyn MessageRows,
    channel: crate::realm::channels::ChannelId,
    topic: &str,
    max_id: MessageId,
) -> ApiResult<Vec<UserId>> {
    let mut found = BTreeSet::new();
    let source = Source::Topic(channel, topic.to_owned());
    for id in rows.scan(&source, 0, max_id, false)? {
        let Some(m) = rows.row(id?)? else {
            continue;
        };
        if !m.recipient.is_topic(channel, topic) {
            continue;
        }
        found.insert(m.sender_id);
        found.extend(m.reactions.iter().map(|r| r.user_id));
        if found.len() > WILDCARD_MENTION_THRESHOLD {
            break;
        }
    }
    Ok(found.into_iter().collect())
}

/// Whether the direct message conversation of `users` (sender included, sorted)
/// holds a message: the first entry of its index.
pub fn conversation_has_messages(rows: &dyn MessageRows, users: &[UserId]) -> ApiResult<bool> {
    for id in rows.scan(
        &Source::Conversation(users.to_vec()),
        0,
        MessageId::MAX,
        false,
    )? {
        if let Some(m) = rows.row(id?)? {
            if matches!(&m.recipient, Recipient::Direct { users: u } if u == users) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Zulip's `normalize_body`: trailing whitespace and leading newlines go; empty and
/// NUL are refused; too long is truncated with a note.
pub fn normalize_body(raw: &str) -> ApiResult<String> {
    let body = raw.trim_end().trim_start_matches('\n');
    if body.is_empty() {
        return Err(ApiError::bad_request("Message must not be empty"));
    }
    if body.contains('\0') {
        return Err(ApiError::bad_request("Message must not contain null bytes"));
    }
    Ok(truncate(body, MAX_MESSAGE_LENGTH, "\n[message truncated]"))
}

/// Truncates to `max` characters, ending with `suffix` when cut.
pub fn truncate(s: &str, max: usize, suffix: &str) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let keep = max.saturating_sub(suffix.chars().count());
    let mut out: String = s.chars().take(keep).collect();
    out.push_str(suffix);
    out
}

/// A topic as given (alias `subject`), stripped; `(no topic)` and the realm's
/// empty-topic display name read as the empty topic; too long is cut with "...".
pub fn normalize_topic(realm: &Realm, raw: &str) -> ApiResult<String> {
    let t = raw.trim();
    if let Some(pos) = t.chars().position(|c| c.is_control() || is_noncharacter(c)) {
        return Err(ApiError::bad_request(format!(
            "Invalid character in topic, at position {}!",
            pos + 1
        )));
    }
    if t == "(no topic)" || t == realm.settings.empty_topic_display_name {
        return Ok(String::new());
    }
    Ok(truncate(t, MAX_TOPIC_LENGTH, "..."))
}

/// Unicode non-characters (U+FDD0..U+FDEF and the last two of every plane).
fn is_noncharacter(c: char) -> bool {
    let n = c as u32;
    (0xFDD0..=0xFDEF).contains(&n) || n & 0xFFFE == 0xFFFE
}

/// Zulip's `extract_stream_indicator`: a JSON id, a JSON one-item list, or a name.
pub fn parse_channel_to(raw: &str) -> ApiResult<ChannelRef> {
    let v = match serde_json::from_str::<Value>(raw) {
        Ok(v) => v,
        Err(_) => return Ok(ChannelRef::Name(raw.to_owned())),
    };
    let v = match v {
        Value::Array(mut items) => {
            if items.len() != 1 {
                return Err(ApiError::bad_request("Expected exactly one channel"));
            }
            items.remove(0)
        }
        other => other,
    };
    match v {
        Value::String(s) => Ok(ChannelRef::Name(s)),
        Value::Number(n) => n
            .as_i64()
            .map(ChannelRef::Id)
            .ok_or_else(|| ApiError::bad_request("Invalid data type for channel")),
        _ => Err(ApiError::bad_request("Invalid data type for channel")),
    }
}

/// Zulip's `extract_private_recipients`: a JSON list of ids or of emails, or emails
/// separated by commas. The first item decides which; an item of the other kind is
/// refused as a mix.
pub fn parse_direct_to(raw: &str) -> ApiResult<(Vec<i64>, Vec<String>)> {
    let invalid = || ApiError::bad_request("Invalid data type for recipients");
    let mixed =
        || ApiError::bad_request("Recipient lists may contain emails or user IDs, but not both.");
    let items = match serde_json::from_str::<Value>(raw) {
        Ok(Value::Array(items)) => items,
        Ok(Value::String(s)) => s.split(',').map(|e| Value::String(e.to_owned())).collect(),
        Ok(_) => return Err(invalid()),
        Err(_) => raw
            .split(',')
            .map(|e| Value::String(e.to_owned()))
            .collect(),
    };
    let (mut ids, mut emails) = (Vec::new(), Vec::new());
    match items.first() {
        None => {}
        Some(Value::String(_)) => {
            for item in &items {
                let email = item.as_str().ok_or_else(mixed)?.trim();
                if !email.is_empty() && !emails.iter().any(|e: &String| e == email) {
                    emails.push(email.to_owned());
                }
            }
        }
        Some(first) if first.as_i64().is_some() => {
            for item in &items {
                ids.push(item.as_i64().ok_or_else(mixed)?);
            }
        }
        Some(_) => return Err(invalid()),
    }
    ids.sort_unstable();
    ids.dedup();
    Ok((ids, emails))
}

/// STREAM_DOES_NOT_EXIST for a name.
pub fn channel_name_missing(name: &str) -> ApiError {
    ApiError::new(
        400,
        ErrorCode::StreamDoesNotExist,
        format!("Channel '{name}' does not exist"),
    )
    .with("stream", html_escape(name))
}

/// Django's `escape`.
fn html_escape(s: &str) -> String {
    crate::escape::with(s, crate::escape::DJANGO)
}

/// STREAM_DOES_NOT_EXIST for an id.
pub fn channel_id_missing(id: i64) -> ApiError {
    ApiError::new(
        400,
        ErrorCode::StreamDoesNotExist,
        format!("Channel with ID '{id}' does not exist"),
    )
    .with("stream_id", id)
}

impl Realm {
    /// The channel a send names, if the sender can see it.
    pub fn channel_for_send(&self, me: &User, r: &ChannelRef) -> ApiResult<&Channel> {
        match r {
            ChannelRef::Id(id) => u64::try_from(*id)
                .ok()
                .and_then(|id| self.channel(id))
                .filter(|c| self.can_see_channel(me, c))
                .ok_or_else(|| channel_id_missing(*id)),
            ChannelRef::Name(name) => self
                .channel_by_name(name.trim())
                .filter(|c| self.can_see_channel(me, c))
                .ok_or_else(|| channel_name_missing(name.trim())),
        }
    }

    /// Zulip's `access_stream_for_send_message`.
    pub fn check_can_post(&self, me: &User, ch: &Channel) -> ApiResult<()> {
        if ch.is_archived {
            return Err(ApiError::bad_request(format!(
                "Not authorized to send to channel '{}'",
                ch.name
            )));
        }
        if !self.in_setting(me, &ch.setting(ChannelSetting::CanSendMessage)) {
            return Err(ApiError::bad_request(
                "You do not have permission to post in this channel.",
            ));
        }
        if ch.is_public() && !me.is_guest() || ch.is_subscribed(me.id) {
            return Ok(());
        }
        Err(ApiError::bad_request(format!(
            "Not authorized to send to channel '{}'",
            ch.name
        )))
    }

    /// Zulip's `get_user_profiles` / `get_user_profiles_by_ids`: every named user
    /// exists (deactivated ones included).
    pub fn lookup_direct_recipients(&self, ids: &[i64], emails: &[String]) -> ApiResult<()> {
        for email in emails {
            if self.user_or_system_bot_by_email(email.trim()).is_none() {
                return Err(ApiError::bad_request(format!("Invalid email '{email}'")));
            }
        }
        for id in ids {
            if u64::try_from(*id)
                .ok()
                .and_then(|id| self.message_sender(id))
                .is_none()
            {
                return Err(ApiError::bad_request(format!("Invalid user ID {id}")));
            }
        }
        Ok(())
    }

    /// The participants of a direct message (sender included, sorted).
    pub fn direct_recipients(
        &self,
        me: &User,
        ids: &[i64],
        emails: &[String],
    ) -> ApiResult<Vec<UserId>> {
        let mut users = vec![me.id];
        for id in ids {
            let user = u64::try_from(*id)
                .ok()
                .and_then(|id| self.message_sender(id))
                .ok_or_else(|| ApiError::bad_request(format!("Invalid user ID {id}")))?;
            if !user.is_active {
                return Err(ApiError::bad_request(format!(
                    "'{}' is no longer using Zulip.",
                    self.api_email(user)
                )));
            }
            users.push(user.id);
        }
        for email in emails {
            let user = self
                .user_or_system_bot_by_email(email.trim())
                .ok_or_else(|| ApiError::bad_request(format!("Invalid email '{email}'")))?;
            if !user.is_active {
                return Err(ApiError::bad_request(format!(
                    "'{}' is no longer using Zulip.",
                    self.api_email(user)
                )));
            }
            users.push(user.id);
        }
        users.sort_unstable();
        users.dedup();
        Ok(users)
    }

    /// Zulip's `check_can_send_direct_message`: some participant must be in
    /// `direct_message_permission_group`, and a sender outside
    /// `direct_message_initiator_group` may only write to conversations that already
    /// hold messages. Bots, and conversations with only bots, are exempt.
    pub fn check_can_send_direct(
        &self,
        me: &User,
        users: &[UserId],
        rows: &dyn MessageRows,
    ) -> ApiResult<()> {
        if me.is_bot() {
            return Ok(());
        }
        let participants: Vec<&User> = users.iter().filter_map(|u| self.user(*u)).collect();
        if participants.iter().all(|u| u.is_bot() || u.id == me.id) {
            return Ok(());
        }
        let permission = self.realm_setting(RealmSetting::DirectMessagePermission);
        if !participants.iter().any(|u| self.in_setting(u, &permission)) {
            let nobody = GroupSetting::Named(self.system_group_id(SystemGroup::Nobody));
            return Err(ApiError::bad_request(if permission == nobody {
                "Direct messages are disabled in this organization."
            } else {
                "This conversation does not include any users who can authorize it."
            }));
        }
        let initiator = self.realm_setting(RealmSetting::DirectMessageInitiator);
        if self.in_setting(me, &initiator) || conversation_has_messages(rows, users)? {
            return Ok(());
        }
        Err(ApiError::bad_request(
            "You are not allowed to start direct message conversations.",
        ))
    }

    /// Zulip's `stream_wildcard_mention_allowed` and `topic_wildcard_mention_allowed`:
    /// a wildcard mention reaching more than `WILDCARD_MENTION_THRESHOLD` users (the
    /// channel's subscribers, or the topic's participants with the sender) needs
    /// `can_mention_many_users_group`.
    pub fn check_wildcard_mentions(
        &self,
        sender: &User,
        ch: &Channel,
        wildcard: Wildcard,
        topic_participants: &[UserId],
    ) -> ApiResult<()> {
        if wildcard == Wildcard::None
            || self.has_realm_permission(sender, RealmSetting::CanMentionManyUsers)
        {
            return Ok(());
        }
        match wildcard {
            Wildcard::Channel => {
                let subscribers = ch
                    .subs
                    .iter()
                    .filter(|(u, sub)| sub.active && self.user(**u).is_some_and(|u| u.is_active))
                    .take(WILDCARD_MENTION_THRESHOLD + 1)
                    .count();
                if subscribers > WILDCARD_MENTION_THRESHOLD {
                    return Err(ApiError::new(
                        400,
                        ErrorCode::StreamWildcardMentionNotAllowed,
                        "You do not have permission to use channel wildcard mentions in this channel.",
                    ));
                }
            }
            Wildcard::Topic => {
                let mut participants: BTreeSet<UserId> =
                    topic_participants.iter().copied().collect();
                participants.insert(sender.id);
                if participants.len() > WILDCARD_MENTION_THRESHOLD {
                    return Err(ApiError::new(
                        400,
                        ErrorCode::TopicWildcardMentionNotAllowed,
                        "You do not have permission to use topic wildcard mentions in this topic.",
                    ));
                }
            }
            Wildcard::None => {}
        }
        Ok(())
    }

    /// Zulip's `check_user_group_mention_allowed`: each group a message mentions (not
    /// silently) must let the sender mention it (`can_mention_group`).
    pub fn check_group_mentions(
        &self,
        sender: &User,
        groups: &[crate::realm::groups::GroupId],
    ) -> ApiResult<()> {
        use crate::realm::groups::GroupPermission;
        for g in groups.iter().filter_map(|id| self.group(*id)) {
            let setting = self.group_permission(g, GroupPermission::CanMention);
            if !self.in_setting(sender, &setting) {
                return Err(ApiError::bad_request(format!(
                    "You are not allowed to mention user group '{}'.",
                    g.name
                )));
            }
        }
        Ok(())
    }

    /// A send as the worker prepares it: `content` (normalized) rendered against this
    /// version, so that mentions and channel links resolve as the sender saw the realm,
    /// and with a topic wildcard mention, the topic's participants read from `rows`.
    pub fn send_request(
        &self,
        rows: &dyn MessageRows,
        to: Addressee,
        content: String,
        client: String,
        read_by_sender: bool,
    ) -> ApiResult<SendRequest> {
        let rendered = self.render_message(&content);
        let mut participants = Vec::new();
        if let (Wildcard::Topic, Addressee::Channel { channel, topic }) = (rendered.wildcard, &to) {
            let ch = match channel {
                ChannelRef::Id(id) => u64::try_from(*id).ok().and_then(|id| self.channel(id)),
                ChannelRef::Name(name) => self.channel_by_name(name.trim()),
            };
            if let Some(ch) = ch {
                participants = topic_participants(rows, ch.id, topic, self.messages.max_visible())?;
            }
        }
        Ok(SendRequest {
            to,
            content,
            rendered,
            client,
            read_by_sender,
            topic_participants: participants,
        })
    }

    /// `POST /messages`: the message, and the uploads it links that its sender may
    /// read claimed for it. Answers the message's id.
    pub fn decide_send(
        &self,
        me: &User,
        q: SendRequest,
        cx: &mut Cx,
    ) -> ApiResult<Decided<MessageId>> {
        let rows = cx.rows()?;
        let mentioned = q.rendered.mentioned.clone();
        let m = self.send_row(me, q, cx, rows)?;
        let id = m.id;
        let claims = self.claim_uploads(rows, me, &m);
        let reply = self.welcome_bot_reply(&m, cx.now_secs());
        let mut next = self.bot_services.outbox.next_id;
        let deliveries = self.service_deliveries(&m, me, &mentioned, cx.now_secs(), &mut next);
        let mut next_mail = self.missed_mail.next_id;
        let mails = self.missed_mail_for(&m, cx.now_secs(), &mut next_mail);
        let mut changes = vec![sent(m)];
        changes.extend(claims);
        changes.extend(reply);
        changes.extend(deliveries);
        changes.extend(mails);
        Ok(Decided::new(changes, id))
    }

    /// The users a rendering mentions who get the `mentioned` flag: a direct message's
    /// participants, a channel's subscribers (and the sender, who may mention
    /// themselves).
    pub(crate) fn mentioned_recipients(
        &self,
        recipient: &Recipient,
        mentioned: &[UserId],
        sender: UserId,
    ) -> Vec<UserId> {
        match recipient {
            Recipient::Channel { channel_id, .. } => {
                let ch = self.channel(*channel_id);
                mentioned
                    .iter()
                    .copied()
                    .filter(|u| ch.is_some_and(|c| c.is_subscribed(*u)) || *u == sender)
                    .collect()
            }
            Recipient::Direct { users } => mentioned
                .iter()
                .copied()
                .filter(|u| users.contains(u))
                .collect(),
        }
    }

    /// Decides a send: the message with its id and time. `rows` is the message store,
    /// for the one lookup a direct message may need (`check_can_send_direct`).
    pub(crate) fn send_row(
        &self,
        me: &User,
        r: SendRequest,
        cx: &Cx,
        rows: &dyn MessageRows,
    ) -> ApiResult<Message> {
        let recipient = match &r.to {
            Addressee::Channel { channel, topic } => {
                let ch = self.channel_for_send(me, channel)?;
                self.check_can_post(me, ch)?;
                self.check_topics_policy(ch, topic)?;
                self.check_wildcard_mentions(me, ch, r.rendered.wildcard, &r.topic_participants)?;
                Recipient::Channel {
                    channel_id: ch.id,
                    topic: topic.clone(),
                }
            }
            Addressee::Direct { ids, emails } => {
                if ids.is_empty() && emails.is_empty() {
                    return Err(ApiError::bad_request("Message must have recipients"));
                }
                let users = self.direct_recipients(me, ids, emails)?;
                self.check_can_send_direct(me, &users, rows)?;
                Recipient::Direct { users }
            }
        };
        self.check_group_mentions(me, &r.rendered.mentioned_groups)?;
        Ok(self.message_row(self.messages.next_id, me.id, recipient, r, cx.now_secs()))
    }

    /// The message a checked send becomes: id `id` from `sender` to `recipient`, at
    /// `now`, with the flags its content and rendering give it.
    pub(crate) fn message_row(
        &self,
        id: MessageId,
        sender: UserId,
        recipient: Recipient,
        r: SendRequest,
        now: i64,
    ) -> Message {
        let is_me_message = r.content.starts_with("/me ") && !r.content.contains('\n');
        let mentioned = self.mentioned_recipients(&recipient, &r.rendered.mentioned, sender);
        Message {
            id,
            sender_id: sender,
            recipient,
            content: r.content,
            rendered_content: r.rendered.html,
            timestamp: now,
            client: r.client,
            is_me_message,
            mentioned,
            wildcard: r.rendered.wildcard,
            sender_read: r.read_by_sender,
            edits: Vec::new(),
            last_edit_timestamp: None,
            last_moved_timestamp: None,
            reactions: Vec::new(),
        }
    }
}

impl Realm {
    /// The flags a recipient's own state gives a message at delivery: `read` when they
    /// muted its sender (Zulip's `muted_sender_user_ids`), `has_alert_word` when one of
    /// their alert words occurs in it (`alerted`: `alert_word_users` of its content;
    /// the sender's own words count too, as Zulip's renderer counts them).
    pub(crate) fn personal_delivery_flags(
        &self,
        m: &Message,
        user: UserId,
        alerted: &BTreeSet<UserId>,
    ) -> u32 {
        let mut bits = 0;
        if user != m.sender_id && self.has_muted(user, m.sender_id) {
            bits |= super::flags::READ;
        }
        if alerted.contains(&user) {
            bits |= super::flags::HAS_ALERT_WORD;
        }
        bits
    }
}

/// The change that records a decided send.
pub fn sent(m: Message) -> Change {
    Change::Message(MessageChange::Sent(Box::new(m)))
}
