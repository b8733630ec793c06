//! Read state in bulk and the small message reads beside it: `POST /mark_all_as_read`,
//! `/mark_stream_as_read` and `/mark_topic_as_read` as Zulip's `do_mark_all_as_read`
//! and `do_mark_stream_messages_as_read` decide them, and what
//! `GET /messages/matches_narrow` answers.
//!
//! The marks produce the very change `POST /messages/flags` produces (`FlagsChanged`
//! with the `read` bit added), so they persist nothing new and publish the same
//! `update_message_flags` event. Their cost is bounded: the caller's unread index is
//! walked newest first, at most `MARK_READ_SCAN` entries, and `mark_all_as_read` marks
//! at most one batch, answering `complete: false` when more remain (Zulip marks in
//! batches of 2000 until a timeout, and answers the same way when it runs out of
//! time).

use serde_json::{json, Map, Value};

use super::fetch::{MessageRows, Narrow, Source};
use super::search::search_fields;
use super::{flags, Message, MessageChange, MessageId, MAX_UNREAD_MESSAGES};
use crate::error::{ApiError, ApiResult};
use crate::realm::{Change, Cx, Decided, Realm, User};

/// At most this many messages are marked read by one `POST /mark_all_as_read`.
pub const MARK_ALL_BATCH: usize = 5000;

/// At most this many unread-index entries are read by one mark-as-read request
/// (Zulip's `MAX_UNREAD_MESSAGES`: no more are ever shown as unread).
pub const MARK_READ_SCAN: usize = MAX_UNREAD_MESSAGES;

/// `POST /mark_all_as_read`: at most `batch` messages per request.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkAllRead {
    pub batch: usize,
}

/// `POST /mark_stream_as_read` (`topic: None`) and `/mark_topic_as_read`, parsed on
/// the worker (the topic as given, the realm's empty-topic name read as the empty
/// topic).
#[derive(Debug, Clone, PartialEq)]
pub struct MarkChannelRead {
    pub stream_id: i64,
    pub topic: Option<String>,
}

/// The unread messages of `me` that `keep` accepts, newest first: at most `batch`,
/// reading at most `MARK_READ_SCAN` index entries; and whether none is left beyond.
/// Index entries of deleted messages are skipped (the store leaves them behind).
pub(in crate::realm) fn unread_where(
    rows: &dyn MessageRows,
    me: &User,
    batch: usize,
    keep: impl Fn(&Message) -> bool,
) -> ApiResult<(Vec<MessageId>, bool)> {
    let mut ids = Vec::new();
    for (seen, id) in rows
        .scan(&Source::Unread(me.id), 0, u64::MAX, true)?
        .enumerate()
    {
        let id = id?;
        if seen >= MARK_READ_SCAN || ids.len() >= batch {
            return Ok((ids, false));
        }
        let unread = rows
            .user_flags(me.id, id)?
            .is_some_and(|bits| bits & flags::READ == 0);
        if !unread {
            continue;
        }
        if rows.row(id)?.is_some_and(|m| keep(&m)) {
            ids.push(id);
        }
    }
    Ok((ids, true))
}

/// The change marking `ids` read for `me` (none when there is nothing to mark).
pub(in crate::realm) fn mark_read(me: &User, mut ids: Vec<MessageId>) -> Vec<Change> {
    if ids.is_empty() {
        return Vec::new();
    }
    ids.sort_unstable();
    ids.dedup();
    vec![Change::Message(MessageChange::FlagsChanged {
        user_id: me.id,
        flag: flags::READ,
        add: true,
        ids,
    })]
}

impl Realm {
    /// `POST /mark_all_as_read`: the newest unread messages of `me`, one batch. Answers
    /// whether none is left unread.
    pub fn decide_mark_all_as_read(
        &self,
        me: &User,
        q: MarkAllRead,
        cx: &mut Cx,
    ) -> ApiResult<Decided<bool>> {
        let rows = cx.rows()?;
        let (ids, complete) = unread_where(rows, me, q.batch, |_| true)?;
        Ok(Decided::new(mark_read(me, ids), complete))
    }

    /// `POST /mark_stream_as_read` and `/mark_topic_as_read`: the channel must be
    /// accessible and not archived ("Invalid channel ID"), a named topic must hold a message `me`
    /// received ("No such topic 'x'"); then its unread messages of `me` are marked
    /// read. Answers how many.
    pub fn decide_mark_channel_read(
        &self,
        me: &User,
        q: MarkChannelRead,
        cx: &mut Cx,
    ) -> ApiResult<Decided<usize>> {
        // Zulip's `access_stream_by_id` requires an active channel.
        let ch = self.access_channel(me, q.stream_id)?;
        if ch.is_archived {
            return Err(ApiError::bad_request("Invalid channel ID"));
        }
        let ch = ch.id;
        let rows = cx.rows()?;
        if let Some(topic) = q.topic.as_deref().filter(|t| !t.is_empty()) {
            if !self.received_in_topic(rows, me, ch, topic)? {
                return Err(ApiError::bad_request(format!("No such topic '{topic}'")));
            }
        }
        let (ids, _) = unread_where(rows, me, MARK_READ_SCAN, |m| match &q.topic {
            Some(topic) => m.recipient.is_topic(ch, topic),
            None => m.recipient.channel() == Some(ch),
        })?;
        let count = ids.len();
        Ok(Decided::new(mark_read(me, ids), count))
    }

    /// Zulip's `user_message_exists_for_topic`: whether `me` received a message of the
    /// topic (the topic's index, newest first, at most `fetch::MAX_SCAN` entries).
    fn received_in_topic(
        &self,
        rows: &dyn MessageRows,
        me: &User,
        channel: u64,
        topic: &str,
    ) -> ApiResult<bool> {
        let source = Source::Topic(channel, topic.to_owned());
        for id in rows
            .scan(&source, 0, u64::MAX, true)?
            .take(super::fetch::MAX_SCAN)
        {
            let id = id?;
            if rows.user_flags(me.id, id)?.is_some()
                && rows
                    .row(id)?
                    .is_some_and(|m| m.recipient.is_topic(channel, topic))
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// `GET /messages/matches_narrow`: of `ids`, those `me` received that `narrow`
    /// admits, each with its rendered content and HTML-escaped topic (Zulip's
    /// `messages_in_narrow_backend`, the words of the narrow's search terms highlighted
    /// as its `get_search_fields` does: `search::search_fields`), by id ascending.
    pub fn messages_matching_narrow(
        &self,
        rows: &dyn MessageRows,
        me: &User,
        ids: &[i64],
        narrow: &Value,
    ) -> ApiResult<Map<String, Value>> {
        let terms = self.parse_narrow(me, narrow)?;
        let narrow = Narrow {
            realm: self,
            me,
            terms,
        };
        let lexemes = narrow.highlighted_lexemes();
        let max = self.messages.max_visible();
        let mut ids: Vec<MessageId> = ids
            .iter()
            .filter_map(|id| u64::try_from(*id).ok())
            .filter(|id| *id <= max)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let mut out = Map::new();
        for id in ids {
            // Zulip reads the caller's user-message rows: received messages only.
            let Some(bits) = rows.user_flags(me.id, id)? else {
                continue;
            };
            let Some(m) = rows.row(id)? else { continue };
            if !narrow.admits(&m, Some(bits)) {
                continue;
            }
            let (content, topic) = search_fields(&m, &lexemes);
            out.insert(
                id.to_string(),
                json!({ "match_content": content, "match_subject": topic }),
            );
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::content::escape;

    #[test]
    fn escapes_topics_as_zulip() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
    }
}
