//! What `/register` (and `GET /users/me`) tell of a user's messages, read from the
//! message rows: `max_message_id`, `unread_msgs` (bounded by Zulip's
//! `MAX_UNREAD_MESSAGES`) and `starred_messages`.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::fetch::{MessageRows, Source};
use super::{flags, MessageId, Recipient, MAX_UNREAD_MESSAGES};
use crate::error::ApiResult;
use crate::realm::{Realm, User, UserId};

/// Zulip's `RECENT_CONVERSATIONS_LIMIT`: how many of a user's newest direct messages
/// `recent_private_conversations` is drawn from.
pub const RECENT_CONVERSATIONS_LIMIT: usize = 1000;

impl Realm {
    /// The newest message `me` received that still exists (`None`: none).
    pub fn max_message_id(
        &self,
        rows: &dyn MessageRows,
        me: &User,
    ) -> ApiResult<Option<MessageId>> {
        let max = self.messages.max_visible();
        // The index may still name deleted messages: the newest with a row.
        for id in rows.scan(&Source::User(me.id), 0, max, true)? {
            let id = id?;
            if rows.row(id)?.is_some() {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// Sets `max_message_id` (when the body has it): the newest message `me` received,
    /// or -1.
    pub fn fill_max_message_id(
        &self,
        rows: &dyn MessageRows,
        me: &User,
        body: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        if body.contains_key("max_message_id") {
            let newest = self.max_message_id(rows, me)?;
            body.insert(
                "max_message_id".into(),
                newest.map_or(json!(-1), |id| json!(id)),
            );
        }
        Ok(())
    }

    /// `unread_msgs`, `max_message_id` and `starred_messages` of `/register`, for those
    /// the body has (the register state asked for).
    pub fn register_message_state(
        &self,
        rows: &dyn MessageRows,
        me: &User,
        allow_empty_topic_name: bool,
        body: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        self.fill_max_message_id(rows, me, body)?;
        if body.contains_key("unread_msgs") {
            body.insert(
                "unread_msgs".into(),
                self.unread_msgs(rows, me, allow_empty_topic_name)?,
            );
        }
        if body.contains_key("recent_private_conversations") {
            body.insert(
                "recent_private_conversations".into(),
                self.recent_private_conversations(rows, me)?,
            );
        }
        if body.contains_key("starred_messages") {
            body.insert(
                "starred_messages".into(),
                self.starred_messages(rows, me)?.into(),
            );
        }
        Ok(())
    }

    /// Zulip's `recent_private_conversations` (`get_recent_private_conversations`): the
    /// direct-message conversations among `me`'s newest `RECENT_CONVERSATIONS_LIMIT`
    /// direct messages, newest first, each with its newest message and the other
    /// participants (`[]` for the conversation with oneself). Read on the worker.
    ///
    /// The scan walks `me`'s received messages newest first, channel messages
    /// included, until it has seen that many direct ones: the message database keeps no
    /// index of a user's direct messages (conversations are keyed by their sorted
    /// participants, a user's messages are one bitmap), and one would be a new kind of
    /// stored key with a migration of existing databases, or realm state rebuilt from
    /// every message at start.
    pub fn recent_private_conversations(
        &self,
        rows: &dyn MessageRows,
        me: &User,
    ) -> ApiResult<Value> {
        let max = self.messages.max_visible();
        let mut newest: BTreeMap<Vec<UserId>, MessageId> = BTreeMap::new();
        let mut seen = 0usize;
        for id in rows.scan(&Source::User(me.id), 0, max, true)? {
            if seen >= RECENT_CONVERSATIONS_LIMIT {
                break;
            }
            let id = id?;
            let Some(m) = rows.row(id)? else { continue };
            let Recipient::Direct { users } = &m.recipient else {
                continue;
            };
            seen += 1;
            let mut others: Vec<UserId> = users.iter().copied().filter(|u| *u != me.id).collect();
            others.sort_unstable();
            let max_id = newest.entry(others).or_insert(id);
            *max_id = (*max_id).max(id);
        }
        let mut list: Vec<(MessageId, Vec<UserId>)> =
            newest.into_iter().map(|(users, id)| (id, users)).collect();
        list.sort_unstable_by_key(|(id, _)| std::cmp::Reverse(*id));
        Ok(list
            .into_iter()
            .map(|(id, users)| json!({"max_message_id": id, "user_ids": users}))
            .collect())
    }

    /// The messages `me` starred that still exist, ascending.
    pub fn starred_messages(&self, rows: &dyn MessageRows, me: &User) -> ApiResult<Vec<MessageId>> {
        let max = self.messages.max_visible();
        let mut starred = Vec::new();
        for id in rows.scan(&Source::User(me.id), 0, max, false)? {
            let id = id?;
            if rows
                .user_flags(me.id, id)?
                .is_some_and(|f| f & flags::STARRED != 0)
                && rows.row(id)?.is_some()
            {
                starred.push(id);
            }
        }
        Ok(starred)
    }

    /// Zulip's `unread_msgs`: `me`'s unread messages by topic, direct conversation and
    /// group conversation, with their mentions.
    pub fn unread_msgs(
        &self,
        rows: &dyn MessageRows,
        me: &User,
        allow_empty_topic_name: bool,
    ) -> ApiResult<Value> {
        let max = self.messages.max_visible();
        let mut streams: BTreeMap<(u64, String), (String, Vec<u64>)> = BTreeMap::new();
        let mut pms: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        let mut huddles: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        let mut mentions = Vec::new();
        let mut count = 0usize;
        let mut missing = false;
        for id in rows.scan(&Source::Unread(me.id), 0, max, false)? {
            let id = id?;
            if count >= MAX_UNREAD_MESSAGES {
                missing = true;
                break;
            }
            let Some(m) = rows.row(id)? else { continue };
            count += 1;
            let bits = rows.user_flags(me.id, id)?.unwrap_or(0);
            if bits & flags::MENTION_BITS != 0 {
                mentions.push(id);
            }
            match &m.recipient {
                Recipient::Channel { channel_id, topic } => {
                    streams
                        .entry((*channel_id, topic.to_lowercase()))
                        .or_insert_with(|| (topic.clone(), Vec::new()))
                        .1
                        .push(id);
                }
                Recipient::Direct { users } if users.len() <= 2 => {
                    let other = users.iter().copied().find(|u| *u != me.id).unwrap_or(me.id);
                    pms.entry(other).or_default().push(id);
                }
                Recipient::Direct { users } => {
                    let key = users
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(",");
                    huddles.entry(key).or_default().push(id);
                }
            }
        }
        let streams: Vec<Value> = streams
            .into_iter()
            .map(|((channel_id, _), (topic, ids))| {
                json!({"stream_id": channel_id, "topic": self.topic_for_client(&topic, allow_empty_topic_name),
                       "unread_message_ids": ids})
            })
            .collect();
        let pms: Vec<Value> = pms
            .into_iter()
            .map(|(other, ids)| {
                json!({"other_user_id": other, "sender_id": other, "unread_message_ids": ids})
            })
            .collect();
        let huddles: Vec<Value> = huddles
            .into_iter()
            .map(|(key, ids)| json!({"user_ids_string": key, "unread_message_ids": ids}))
            .collect();
        Ok(json!({
            "pms": pms,
            "streams": streams,
            "huddles": huddles,
            "mentions": mentions,
            "count": count,
            "old_unreads_missing": missing,
        }))
    }
}
