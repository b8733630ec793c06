//! `PATCH /messages/{id}` and `DELETE /messages/{id}`: Zulip's `check_update_message`
//! and `validate_can_delete_message`, as decisions over rows read for them.
//!
//! The realm's message policies come from `PATCH /realm`: its group settings
//! (`can_move_messages_between_topics_group`, `can_resolve_topics_group`,
//! `can_move_messages_between_channels_group`, `can_delete_any_message_group`,
//! `can_delete_own_message_group`, `can_mention_many_users_group`), whether content may
//! be edited, and its time limits (`Realm::message_limit`), besides each channel's own
//! settings.

use std::collections::BTreeMap;

use super::content::Rendered;
use super::fetch::{MessageRows, Source};
use super::moves::{resolve_undo, Move};
use super::send::{normalize_body, normalize_topic, topic_participants};
use super::{EditRecord, Message, MessageChange, MessageId, Recipient, TopicMax, Wildcard};
use crate::error::{ApiError, ApiResult};
use crate::realm::attachments::Attachment;
use crate::realm::channels::{Channel, ChannelSetting};
use crate::realm::groups::RealmSetting;
use crate::realm::settings::MessageLimit;
use crate::realm::{Change, Cx, Decided, Realm, Role, User, UserId};

/// The most rows of its topic a propagated move reads on the worker (the HTTP
/// layer's longest list, `MAX_LIST_ITEMS`).
pub const MAX_PROPAGATED: usize = 10_000;

/// Zulip's grace period on edit and move limits (`edit_limit_buffer`).
const EDIT_GRACE_SECS: i64 = 20;

/// How far an edit reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagate {
    One,
    Later,
    All,
}

impl Propagate {
    pub fn parse(s: &str) -> ApiResult<Propagate> {
        match s {
            "change_one" => Ok(Propagate::One),
            "change_later" => Ok(Propagate::Later),
            "change_all" => Ok(Propagate::All),
            _ => Err(ApiError::bad_request("Invalid propagate_mode")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Propagate::One => "change_one",
            Propagate::Later => "change_later",
            Propagate::All => "change_all",
        }
    }
}

/// An edit as the client asked for it (content rendered on the worker).
#[derive(Debug, Clone)]
pub struct EditRequest {
    pub content: Option<String>,
    pub rendered: Option<Rendered>,
    pub topic: Option<String>,
    pub channel_id: Option<i64>,
    pub propagate: Propagate,
    /// With a topic wildcard mention in new content: the topic's participants, read on
    /// the worker up to `WILDCARD_MENTION_THRESHOLD + 1` of them.
    pub topic_participants: Vec<UserId>,
}

/// New content as an edit stores it (Zulip's order): emptied content is "(deleted)",
/// the rest normalized and truncated as a send's.
pub fn edited_content(raw: &str) -> ApiResult<String> {
    if raw.trim_end().is_empty() {
        return Ok("(deleted)".to_owned());
    }
    normalize_body(raw)
}

/// `PATCH /messages/{id}`, parsed and prepared on the worker
/// (`Realm::update_message_request`).
#[derive(Debug, Clone)]
pub struct UpdateMessage {
    /// The message, as given.
    pub id: i64,
    pub edit: EditRequest,
    /// The rest of the target's topic, for a propagated move (read on the worker).
    pub others: Vec<Message>,
    /// `send_notification_to_old_thread` / `send_notification_to_new_thread`.
    pub send_to_old_thread: bool,
    pub send_to_new_thread: bool,
    /// The realm's URL: move notices link messages absolutely.
    pub realm_url: String,
}

/// `DELETE /messages/{id}`, the id as given.
#[derive(Debug, Clone, Copy)]
pub struct DeleteMessage {
    pub id: i64,
}

fn no_permission() -> ApiError {
    ApiError::bad_request("You don't have permission to edit this message")
}

impl Realm {
    /// An edit as the worker prepares it: new content rendered against this version
    /// (as `decide_edit` stores it), with a topic wildcard mention the topic's
    /// participants, and for a propagated move the rest of the topic, read from `rows`.
    pub fn update_message_request(
        &self,
        rows: &dyn MessageRows,
        id: i64,
        mut edit: EditRequest,
        (send_to_old_thread, send_to_new_thread): (bool, bool),
        realm_url: String,
    ) -> ApiResult<UpdateMessage> {
        // Rendered as `decide_edit` stores it (which reports a bad body).
        edit.rendered = edit.content.as_deref().map(|c| {
            let c = edited_content(c).unwrap_or_else(|_| c.to_owned());
            self.render_message(&c)
        });
        let target = || {
            u64::try_from(id)
                .ok()
                .and_then(|i| rows.row(i).ok().flatten())
        };
        let max = self.messages.max_visible();
        if edit
            .rendered
            .as_ref()
            .is_some_and(|r| r.wildcard == Wildcard::Topic)
        {
            if let Some(Recipient::Channel { channel_id, topic }) = target().map(|m| m.recipient) {
                edit.topic_participants = topic_participants(rows, channel_id, &topic, max)?;
            }
        }
        let mut others = Vec::new();
        let moving = edit.topic.is_some() || edit.channel_id.is_some();
        if moving && edit.propagate != Propagate::One {
            if let Some(Recipient::Channel { channel_id, topic }) = target().map(|m| m.recipient) {
                let source = Source::Topic(channel_id, topic);
                for mid in rows.scan(&source, 0, max, false)?.take(MAX_PROPAGATED) {
                    if let Some(m) = rows.row(mid?)? {
                        others.push(m);
                    }
                }
            }
        }
        Ok(UpdateMessage {
            id,
            edit,
            others,
            send_to_old_thread,
            send_to_new_thread,
            realm_url,
        })
    }

    /// `PATCH /messages/{id}`: Zulip's `check_update_message` and `do_update_message`.
    /// The edit (every moved row, before and after), the topics it leaves and joins,
    /// the uploads released and claimed by new content, and the Notification Bot's
    /// messages about a move. Answers the uploads the edit leaves without a message
    /// (`detached_uploads`).
    pub fn decide_update_message(
        &self,
        me: &User,
        q: UpdateMessage,
        cx: &mut Cx,
    ) -> ApiResult<Decided<Vec<Attachment>>> {
        let rows = cx.rows()?;
        let now = cx.now_secs();
        let (target, _) = self.access_message(rows, me, q.id)?;
        // Rows read on the worker that moved meanwhile are left where they are.
        let others: Vec<Message> = q
            .others
            .into_iter()
            .filter(|m| m.recipient == target.recipient)
            .collect();
        let pairs = self.decide_edit(me, &target, &others, &q.edit, now)?;
        let before: Vec<&Message> = pairs.iter().map(|(b, _)| b).collect();
        let after: Vec<&Message> = pairs.iter().map(|(_, a)| a).collect();
        let topic_max = if before
            .iter()
            .zip(&after)
            .any(|(b, a)| b.recipient != a.recipient)
        {
            self.topic_max_after(rows, &before, &after)?
        } else {
            Vec::new()
        };
        let (first_before, first_after) = (before[0].clone(), after[0].clone());
        let moved_ids: Vec<MessageId> = after.iter().map(|m| m.id).collect();
        let mut policies = Vec::new();
        let notices = match (&first_before.recipient, &first_after.recipient) {
            (
                Recipient::Channel {
                    channel_id: old_channel,
                    topic: old_topic,
                },
                Recipient::Channel {
                    channel_id: new_channel,
                    topic: new_topic,
                },
            ) if first_before.recipient != first_after.recipient => {
                let old_topic_emptied = rows
                    .topic_max(*old_channel, old_topic, &moved_ids)?
                    .is_none();
                let new_topic_had_messages = rows
                    .topic_max(*new_channel, new_topic, &moved_ids)?
                    .is_some();
                let mut mv = Move {
                    before: &first_before,
                    after: &first_after,
                    count: moved_ids.len(),
                    change_all: q.edit.propagate == Propagate::All,
                    old_topic_emptied,
                    new_topic_had_messages,
                    send_to_old_thread: q.send_to_old_thread,
                    send_to_new_thread: q.send_to_new_thread,
                    content_edited: q.edit.content.is_some(),
                    undo: None,
                    realm_url: &q.realm_url,
                };
                if mv.resolve().is_some() {
                    mv.undo = resolve_undo(rows, &after, *new_channel, new_topic, now)?;
                }
                // The topic's visibility policies go with it when the mover moved all
                // of it they can see (Zulip's `moved_all_visible_messages`); their
                // events come before the edit's, as Zulip's do.
                if old_topic_emptied {
                    policies = self.move_topic_policies(
                        (*old_channel, old_topic),
                        (*new_channel, new_topic),
                        new_topic_had_messages,
                        now,
                    );
                }
                self.decide_move_notices(me, &mv, cx)
            }
            _ => Vec::new(),
        };
        let mut changes = std::mem::take(&mut policies);
        changes.push(Change::Message(MessageChange::Edited {
            user_id: me.id,
            propagate_mode: q.edit.propagate.name().to_owned(),
            pairs,
            topic_max,
        }));
        let mut detached = Vec::new();
        if first_before.content != first_after.content {
            let (released, gone) = self.release_uploads(
                first_after.id,
                &first_before.content,
                &first_after.content,
                false,
            );
            changes.extend(released);
            changes.extend(self.claim_uploads(rows, me, &first_after));
            detached = gone;
        }
        changes.extend(notices);
        Ok(Decided::new(changes, detached))
    }

    /// `DELETE /messages/{id}`: Zulip's `do_delete_messages` of one message, after
    /// `validate_can_delete_message`. Answers the uploads the deletion leaves without
    /// a message (deleted with it; their files go once no attachment names them).
    pub fn decide_delete_message(
        &self,
        me: &User,
        q: DeleteMessage,
        cx: &mut Cx,
    ) -> ApiResult<Decided<Vec<Attachment>>> {
        let rows = cx.rows()?;
        let (m, _) = self.access_message(rows, me, q.id)?;
        self.check_can_delete(me, &m, cx.now_secs())?;
        let topic_max = self.topic_max_after(rows, &[&m], &[])?;
        let (releases, gone) = self.release_uploads(m.id, &m.content, "", true);
        let mut changes = vec![Change::Message(MessageChange::Deleted {
            messages: vec![m],
            topic_max,
        })];
        changes.extend(releases);
        Ok(Decided::new(changes, gone))
    }

    /// The topics that `removed` left and `added` joined (rows before and after), with
    /// their newest messages afterwards, read from the rows as the actor sees them.
    pub fn topic_max_after(
        &self,
        rows: &dyn MessageRows,
        removed: &[&Message],
        added: &[&Message],
    ) -> ApiResult<Vec<TopicMax>> {
        let skip: Vec<MessageId> = removed.iter().map(|m| m.id).collect();
        let mut out: BTreeMap<(u64, String), TopicMax> = BTreeMap::new();
        for m in removed {
            if let Recipient::Channel { channel_id, topic } = &m.recipient {
                let key = (*channel_id, topic.to_lowercase());
                if out.contains_key(&key) {
                    continue;
                }
                let max_id = rows.topic_max(*channel_id, topic, &skip)?;
                let name = self
                    .messages
                    .topics
                    .get(channel_id)
                    .and_then(|t| t.get(&topic.to_lowercase()))
                    .map_or_else(|| topic.clone(), |t| t.name.clone());
                out.insert(
                    key,
                    TopicMax {
                        channel_id: *channel_id,
                        topic: name,
                        max_id,
                    },
                );
            }
        }
        for m in added {
            if let Recipient::Channel { channel_id, topic } = &m.recipient {
                let key = (*channel_id, topic.to_lowercase());
                let existing = out.get(&key).map(|t| t.max_id).unwrap_or_else(|| {
                    self.messages
                        .topics
                        .get(channel_id)
                        .and_then(|t| t.get(&topic.to_lowercase()))
                        .map(|t| t.max_id)
                });
                let max_id = existing.map_or(m.id, |e| e.max(m.id));
                out.insert(
                    key,
                    TopicMax {
                        channel_id: *channel_id,
                        topic: topic.clone(),
                        max_id: Some(max_id),
                    },
                );
            }
        }
        Ok(out.into_values().collect())
    }

    /// Decides an edit of `target` (`others`: the rest of its topic, ascending, for a
    /// propagated move). Returns the rows before and after, the named message first.
    pub fn decide_edit(
        &self,
        me: &User,
        target: &Message,
        others: &[Message],
        r: &EditRequest,
        now: i64,
    ) -> ApiResult<Vec<(Message, Message)>> {
        let age = now - target.timestamp;
        let is_channel = matches!(target.recipient, Recipient::Channel { .. });
        if let Some(ch) = target.recipient.channel().and_then(|c| self.channel(c)) {
            if ch.is_archived {
                return Err(ApiError::bad_request("Invalid message(s)"));
            }
        }
        if r.content.is_some() {
            // Zulip's `validate_user_can_edit_message`.
            if !self.properties.allow_message_editing {
                return Err(ApiError::bad_request(
                    "Your organization has turned off message editing",
                ));
            }
            if target.sender_id != me.id {
                return Err(no_permission());
            }
            if let Some(limit) = self.message_limit(MessageLimit::ContentEdit) {
                if age > limit + EDIT_GRACE_SECS {
                    return Err(ApiError::bad_request(
                        "The time limit for editing this message has passed",
                    ));
                }
            }
        }
        // An unchanged topic counts as not given.
        let topic = match &r.topic {
            Some(t) => {
                let t = normalize_topic(self, t)?;
                (Some(t.as_str()) != target.recipient.topic() || !is_channel).then_some(t)
            }
            None => None,
        };
        let channel = r
            .channel_id
            .filter(|id| Some(*id) != target.recipient.channel().map(|c| c as i64));
        if topic.is_none() && r.content.is_none() && channel.is_none() {
            return Err(ApiError::bad_request("Nothing to change"));
        }
        if !is_channel {
            if channel.is_some() {
                return Err(ApiError::bad_request(
                    "Direct messages cannot be moved to channels.",
                ));
            }
            if topic.is_some() {
                return Err(ApiError::bad_request("Direct messages cannot have topics."));
            }
        }
        if r.propagate != Propagate::One && topic.is_none() && channel.is_none() {
            return Err(ApiError::bad_request(
                "Invalid propagate_mode without topic edit",
            ));
        }
        if let Some(t) = &topic {
            if t == "✔" || t == "✔ general chat" {
                return Err(ApiError::bad_request(
                    "General chat cannot be marked as resolved",
                ));
            }
        }
        if channel.is_some() && r.content.is_some() {
            return Err(ApiError::bad_request(
                "Cannot change message content while changing channel",
            ));
        }
        let content = r.content.as_deref().map(edited_content).transpose()?;
        let new_channel = match channel {
            Some(id) => Some(
                u64::try_from(id)
                    .ok()
                    .and_then(|c| self.channel(c))
                    .filter(|c| self.can_access_channel(me, c) && !c.is_archived)
                    .ok_or_else(|| ApiError::bad_request("Invalid channel ID"))?,
            ),
            None => None,
        };
        let old_channel = target.recipient.channel().and_then(|c| self.channel(c));
        // Zulip's `build_message_edit_request`: the policy of the channel the messages
        // end in, for the topic they end in.
        if let Some(from) = old_channel {
            let to = new_channel.unwrap_or(from);
            let ends_in = topic
                .as_deref()
                .or(target.recipient.topic())
                .unwrap_or_default();
            self.check_move_topics_policy(to, ends_in, topic.is_some() || new_channel.is_some())?;
        }
        let moderator = me.role <= Role::Moderator;
        if let (Some(t), Some(from)) = (&topic, old_channel) {
            let to = new_channel.unwrap_or(from);
            let old = target.recipient.topic().unwrap_or_default();
            if super::moves::resolve_toggle(old, t).is_some() {
                if !self.can_resolve_topics(me, from, to) {
                    return Err(ApiError::bad_request(
                        "You don't have permission to resolve topics in this channel.",
                    ));
                }
            } else {
                if !self.can_edit_topic(me, from, to) {
                    return Err(no_permission());
                }
                if let Some(limit) = self.message_limit(MessageLimit::MoveWithinStream) {
                    if !moderator && age > limit + EDIT_GRACE_SECS {
                        return Err(ApiError::bad_request(
                            "The time limit for editing this message's topic has passed.",
                        ));
                    }
                }
            }
        }
        if let (Some(rendered), true) = (&r.rendered, r.content.is_some()) {
            self.check_group_mentions(me, &rendered.mentioned_groups)?;
        }
        if let (Some(rendered), Some(ch)) = (&r.rendered, old_channel) {
            if r.content.is_some() {
                // Checked for the message's sender, who alone edits content.
                self.check_wildcard_mentions(me, ch, rendered.wildcard, &r.topic_participants)?;
            }
        }
        if let (Some(to), Some(from)) = (new_channel, old_channel) {
            if !self.can_move_messages_out_of_channel(me, from) {
                return Err(ApiError::bad_request(
                    "You don't have permission to move this message",
                ));
            }
            if !self.in_setting(me, &to.setting(ChannelSetting::CanSendMessage)) {
                return Err(ApiError::bad_request(
                    "You do not have permission to post in this channel.",
                ));
            }
            if let Some(limit) = self.message_limit(MessageLimit::MoveBetweenStreams) {
                if !moderator && age > limit + EDIT_GRACE_SECS {
                    return Err(ApiError::bad_request(
                        "The time limit for editing this message's channel has passed",
                    ));
                }
            }
        }
        let rendered = r.rendered.clone().unwrap_or_default();
        let mut pairs = Vec::new();
        let moves = topic.is_some() || new_channel.is_some();
        let mut targets = vec![target];
        if moves {
            targets.extend(others.iter().filter(|m| match r.propagate {
                Propagate::One => false,
                Propagate::Later => m.id > target.id,
                Propagate::All => m.id != target.id,
            }));
        }
        for (i, m) in targets.into_iter().enumerate() {
            let mut after = m.clone();
            let mut record = EditRecord {
                user_id: me.id,
                timestamp: now,
                prev_content: None,
                prev_rendered_content: None,
                prev_topic: None,
                prev_channel: None,
                topic: None,
                channel: None,
            };
            if i == 0 {
                if let Some(c) = &content {
                    record.prev_content = Some(m.content.clone());
                    record.prev_rendered_content = Some(m.rendered_content.clone());
                    after.content = c.clone();
                    after.rendered_content = rendered.html.clone();
                    after.mentioned = rendered.mentioned.clone();
                    after.wildcard = rendered.wildcard;
                    after.is_me_message = c.starts_with("/me ") && !c.contains('\n');
                    after.last_edit_timestamp = Some(now);
                }
            }
            if let Recipient::Channel {
                channel_id,
                topic: old_topic,
            } = &m.recipient
            {
                let new_topic = topic.clone().unwrap_or_else(|| old_topic.clone());
                let new_channel_id = new_channel.map_or(*channel_id, |c| c.id);
                if &new_topic != old_topic {
                    record.prev_topic = Some(old_topic.clone());
                    record.topic = Some(new_topic.clone());
                }
                if new_channel_id != *channel_id {
                    record.prev_channel = Some(*channel_id);
                    record.channel = Some(new_channel_id);
                }
                let resolve_only = record.prev_channel.is_none()
                    && super::moves::resolve_toggle(old_topic, &new_topic).is_some();
                if moves && !resolve_only {
                    after.last_moved_timestamp = Some(now);
                }
                after.recipient = Recipient::Channel {
                    channel_id: new_channel_id,
                    topic: new_topic,
                };
            }
            after.edits.push(record);
            pairs.push((m.clone(), after));
        }
        Ok(pairs)
    }

    /// Zulip's `can_move_messages_within_channel`.
    fn can_move_messages_within_channel(&self, me: &User, ch: &Channel) -> bool {
        self.can_administer_channel(me, ch)
            || self.in_setting(
                me,
                &ch.setting(ChannelSetting::CanMoveMessagesWithinChannel),
            )
    }

    /// Zulip's `can_edit_topic`: the realm's permission, or the channel's in the
    /// original or the target channel.
    fn can_edit_topic(&self, me: &User, from: &Channel, to: &Channel) -> bool {
        self.has_realm_permission(me, RealmSetting::CanMoveMessagesBetweenTopics)
            || self.can_move_messages_within_channel(me, from)
            || (from.id != to.id && self.can_move_messages_within_channel(me, to))
    }

    /// Zulip's `can_resolve_topics`.
    fn can_resolve_topics(&self, me: &User, from: &Channel, to: &Channel) -> bool {
        let in_channel =
            |ch: &Channel| self.in_setting(me, &ch.setting(ChannelSetting::CanResolveTopics));
        self.has_realm_permission(me, RealmSetting::CanResolveTopics)
            || in_channel(from)
            || (from.id != to.id && in_channel(to))
    }

    /// Zulip's `can_move_messages_out_of_channel`.
    fn can_move_messages_out_of_channel(&self, me: &User, ch: &Channel) -> bool {
        me.is_admin()
            || self.has_realm_permission(me, RealmSetting::CanMoveMessagesBetweenChannels)
            || self.can_administer_channel(me, ch)
            || self.in_setting(me, &ch.setting(ChannelSetting::CanMoveMessagesOutOfChannel))
    }

    /// Zulip's `validate_can_delete_message`, at time `now`.
    pub fn check_can_delete(&self, me: &User, m: &Message, now: i64) -> ApiResult<()> {
        let channel = m.recipient.channel().and_then(|c| self.channel(c));
        if channel.is_some_and(|c| c.is_archived) {
            return Err(ApiError::bad_request("Invalid message(s)"));
        }
        if self.has_realm_permission(me, RealmSetting::CanDeleteAnyMessage) {
            return Ok(());
        }
        if channel
            .is_some_and(|c| self.in_setting(me, &c.setting(ChannelSetting::CanDeleteAnyMessage)))
        {
            return Ok(());
        }
        let denied = || ApiError::bad_request("You don't have permission to delete this message");
        let sender_owner = self.user(m.sender_id).and_then(|u| u.bot_owner_id);
        if m.sender_id != me.id && sender_owner != Some(me.id) {
            return Err(denied());
        }
        if !self.has_realm_permission(me, RealmSetting::CanDeleteOwnMessage) {
            // Channel messages may still be deleted with the channel's permission.
            let Some(c) = channel else {
                return Err(denied());
            };
            if !self.in_setting(me, &c.setting(ChannelSetting::CanDeleteOwnMessage)) {
                return Err(denied());
            }
        }
        if let Some(limit) = self.message_limit(MessageLimit::ContentDelete) {
            if now - m.timestamp > limit {
                return Err(ApiError::bad_request(
                    "The time limit for deleting this message has passed",
                ));
            }
        }
        Ok(())
    }
}

/// The most messages one `POST /streams/{id}/delete_topic` deletes; the answer says
/// `complete: false` while more remain (Zulip deletes in batches until 50 seconds
/// have passed, and answers the same way when time runs out).
pub const DELETE_TOPIC_BATCH: usize = 1000;

/// The most index entries of the topic one request reads (messages the caller cannot
/// read, in a channel with protected history, are passed over).
pub const DELETE_TOPIC_SCAN: usize = 50_000;

/// `POST /streams/{stream_id}/delete_topic`: the channel id as given, the topic (the
/// realm's empty-topic name read as the empty topic), at most `batch` messages.
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteTopic {
    pub stream_id: i64,
    pub topic: String,
    pub batch: usize,
}

impl Realm {
    /// Zulip's `delete_in_topic`: an administrator (`require_realm_admin`) with access
    /// to the channel deletes the topic's messages they may read, newest first, one
    /// batch per request. Answers whether the topic is now empty of such messages.
    pub fn decide_delete_topic(
        &self,
        me: &User,
        q: DeleteTopic,
        cx: &mut Cx,
    ) -> ApiResult<Decided<bool>> {
        self.require_admin(me)?;
        let ch = self.access_channel(me, q.stream_id)?;
        if ch.is_archived {
            return Err(ApiError::bad_request("Invalid channel ID"));
        }
        let rows = cx.rows()?;
        let source = Source::Topic(ch.id, q.topic.clone());
        let mut doomed: Vec<Message> = Vec::new();
        let mut complete = true;
        for (seen, id) in rows
            .scan(&source, 0, self.messages.max_visible(), true)?
            .enumerate()
        {
            if seen >= DELETE_TOPIC_SCAN || doomed.len() >= q.batch {
                complete = false;
                break;
            }
            let id = id?;
            let Some(m) = rows.row(id)? else { continue };
            if !m.recipient.is_topic(ch.id, &q.topic) {
                continue;
            }
            if super::fetch::can_read(self, me, &m, rows.user_flags(me.id, id)?) {
                doomed.push(m);
            }
        }
        if doomed.is_empty() {
            return Ok(Decided::new(Vec::new(), complete));
        }
        doomed.sort_by_key(|m| m.id);
        let gone: Vec<&Message> = doomed.iter().collect();
        let topic_max = self.topic_max_after(rows, &gone, &[])?;
        // An upload linked only from deleted messages goes with the last of them.
        let mut links: BTreeMap<u64, usize> = BTreeMap::new();
        let mut releases = Vec::new();
        for m in &doomed {
            let mut paths = crate::realm::attachments::upload_path_ids(&m.content);
            paths.sort_unstable();
            paths.dedup();
            for path in paths {
                let Some(a) = self
                    .attachment_by_path(&path)
                    .filter(|a| a.messages.contains_key(&m.id))
                else {
                    continue;
                };
                let left = links.entry(a.id).or_insert(a.messages.len());
                *left = left.saturating_sub(1);
                releases.push(Change::Attachment(
                    crate::realm::attachments::AttachmentChange::Released {
                        message_id: m.id,
                        ids: vec![a.id],
                        deleted: if *left == 0 { vec![a.id] } else { Vec::new() },
                    },
                ));
            }
        }
        let mut changes = vec![Change::Message(MessageChange::Deleted {
            messages: doomed,
            topic_max,
        })];
        changes.extend(releases);
        Ok(Decided::new(changes, complete))
    }
}
