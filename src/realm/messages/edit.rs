//! `PATCH /messages/{id}` and `DELETE /messages/{id}`: Zulip's `check_update_message`
//! and `validate_can_delete_message`, as decisions over rows read for them.
//!
//! The realm's message policies are Zulip's defaults for the development realm (the
//! group-valued realm settings are not editable yet): editing content for 600 s (plus
//! Zulip's 20 s grace), moving within and between channels for 3 days for everyone but
//! moderators, deleting any message for administrators and one's own for everyone,
//! without a time limit.

use super::content::Rendered;
use super::send::{normalize_body, normalize_topic};
use super::{EditRecord, Message, Recipient};
use crate::error::{ApiError, ApiResult};
use crate::realm::channels::ChannelSetting;
use crate::realm::groups::SystemGroup;
use crate::realm::{Realm, User};

/// `realm_message_content_edit_limit_seconds`.
pub const CONTENT_EDIT_LIMIT_SECS: i64 = 600;
/// Zulip's grace period on edit limits.
const EDIT_GRACE_SECS: i64 = 20;
/// `realm_move_messages_within_stream_limit_seconds` and `..._between_streams_...`.
pub const MOVE_LIMIT_SECS: i64 = 3 * 24 * 3600;

/// The realm's group for a message policy (Zulip's defaults, see the module doc).
fn policy(realm: &Realm, name: &str) -> SystemGroup {
    match name {
        "can_move_messages_between_channels_group" => SystemGroup::Members,
        "can_delete_any_message_group" => SystemGroup::Administrators,
        "can_move_messages_between_topics_group"
        | "can_resolve_topics_group"
        | "can_delete_own_message_group" => SystemGroup::Everyone,
        _ => {
            let _ = realm;
            SystemGroup::Nobody
        }
    }
}

fn in_policy(realm: &Realm, me: &User, name: &str) -> bool {
    realm.in_setting(me, &realm.system_setting(policy(realm, name)))
}

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
}

fn no_permission() -> ApiError {
    ApiError::bad_request("You don't have permission to edit this message")
}

impl Realm {
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
            if target.sender_id != me.id {
                return Err(no_permission());
            }
            if age > CONTENT_EDIT_LIMIT_SECS + EDIT_GRACE_SECS {
                return Err(ApiError::bad_request(
                    "The time limit for editing this message has passed",
                ));
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
        let content = match &r.content {
            Some(c) if c.trim_end().is_empty() => Some("(deleted)".to_owned()),
            Some(c) => Some(normalize_body(c)?),
            None => None,
        };
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
        if let (Some(t), Some(ch)) = (&topic, old_channel) {
            let old = target.recipient.topic().unwrap_or_default();
            let resolving = t.strip_prefix("✔ ") == Some(old) || old.strip_prefix("✔ ") == Some(t);
            if resolving {
                if !in_policy(self, me, "can_resolve_topics_group")
                    && !self.in_setting(me, &ch.setting(ChannelSetting::CanResolveTopics))
                {
                    return Err(ApiError::bad_request(
                        "You don't have permission to resolve topics in this channel.",
                    ));
                }
            } else {
                if !in_policy(self, me, "can_move_messages_between_topics_group")
                    && !self.in_setting(
                        me,
                        &ch.setting(ChannelSetting::CanMoveMessagesWithinChannel),
                    )
                {
                    return Err(no_permission());
                }
                if me.role > crate::realm::Role::Moderator
                    && age > MOVE_LIMIT_SECS + EDIT_GRACE_SECS
                {
                    return Err(ApiError::bad_request(
                        "The time limit for editing this message's topic has passed.",
                    ));
                }
            }
        }
        if let (Some(to), Some(from)) = (new_channel, old_channel) {
            if !in_policy(self, me, "can_move_messages_between_channels_group")
                && !self.in_setting(
                    me,
                    &from.setting(ChannelSetting::CanMoveMessagesOutOfChannel),
                )
            {
                return Err(ApiError::bad_request(
                    "You don't have permission to move this message",
                ));
            }
            if !self.in_setting(me, &to.setting(ChannelSetting::CanSendMessage)) {
                return Err(ApiError::bad_request(
                    "You do not have permission to post in this channel.",
                ));
            }
            if me.role > crate::realm::Role::Moderator && age > MOVE_LIMIT_SECS + EDIT_GRACE_SECS {
                return Err(ApiError::bad_request(
                    "The time limit for editing this message's channel has passed",
                ));
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
                    && (new_topic.strip_prefix("✔ ") == Some(old_topic.as_str())
                        || old_topic.strip_prefix("✔ ") == Some(new_topic.as_str()));
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

    /// Zulip's `validate_can_delete_message`.
    pub fn check_can_delete(&self, me: &User, m: &Message) -> ApiResult<()> {
        let channel = m.recipient.channel().and_then(|c| self.channel(c));
        if channel.is_some_and(|c| c.is_archived) {
            return Err(ApiError::bad_request("Invalid message(s)"));
        }
        if in_policy(self, me, "can_delete_any_message_group") {
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
        let own = in_policy(self, me, "can_delete_own_message_group")
            || channel.is_some_and(|c| {
                self.in_setting(me, &c.setting(ChannelSetting::CanDeleteOwnMessage))
            });
        if !own {
            return Err(denied());
        }
        Ok(())
    }
}
