//! `GET /messages`: narrows, anchors and the walk over the message store.
//!
//! The walk reads rows through `MessageRows` (the message store implements it), so
//! this file knows nothing of sled and is tested against an in-memory store. A narrow
//! picks one ordered source of candidate ids (a topic, a channel, a conversation, a
//! sender, the caller's unread or received messages); every term is then checked on
//! each candidate row, together with the caller's access.

use serde_json::Value;

use super::search::SearchQuery;
use super::{flags, Message, MessageId, Recipient, LARGER_THAN_MAX_MESSAGE_ID};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::realm::channels::ChannelId;
use crate::realm::{Realm, User, UserId};

/// Where a narrow's candidate ids come from: one ordered range of keys.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Messages a user received (their user-message rows).
    User(UserId),
    /// A user's unread messages.
    Unread(UserId),
    Channel(ChannelId),
    Topic(ChannelId, String),
    /// A conversation: its participants, sorted, sender included.
    Conversation(Vec<UserId>),
    Sender(UserId),
}

pub use super::rows::{MessageRows, RowsError, RowsResult};

/// One narrow term.
#[derive(Debug, Clone, PartialEq)]
pub enum Term {
    Channel(ChannelId),
    /// `channels:public`.
    PublicChannels,
    Topic(String),
    /// The conversation with these users (the caller added, sorted).
    Dm(Vec<UserId>),
    DmIncluding(UserId),
    Sender(UserId),
    Is(String),
    /// A `search` operand (see `search`): found through the index when the message
    /// store has one, and checked on every candidate row.
    Search(SearchQuery),
    Id(MessageId),
    Has(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct NarrowTerm {
    pub term: Term,
    pub negated: bool,
}

/// Zulip's `BadNarrowOperatorError`.
pub fn bad_narrow(desc: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        400,
        ErrorCode::BadNarrow,
        format!("Invalid narrow operator: {desc}"),
    )
}

fn operand_str(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl Realm {
    fn narrow_user(&self, v: &Value) -> ApiResult<UserId> {
        let found = match v {
            Value::Number(n) => n.as_u64().and_then(|id| self.message_sender(id)),
            Value::String(s) => s
                .trim()
                .parse::<UserId>()
                .ok()
                .and_then(|id| self.message_sender(id))
                .or_else(|| self.user_or_system_bot_by_email(s.trim())),
            _ => None,
        };
        found.map(|u| u.id).ok_or_else(|| {
            bad_narrow(format!(
                "unknown user {}",
                operand_str(v).unwrap_or_default()
            ))
        })
    }

    fn narrow_users(&self, v: &Value) -> ApiResult<Vec<UserId>> {
        match v {
            Value::Array(items) => items.iter().map(|i| self.narrow_user(i)).collect(),
            Value::String(s) if s.contains(',') => s
                .split(',')
                .map(|e| self.narrow_user(&Value::String(e.trim().to_owned())))
                .collect(),
            other => Ok(vec![self.narrow_user(other)?]),
        }
    }

    /// Parses the `narrow` parameter (a JSON list of `{operator, operand, negated}`
    /// objects or legacy `[operator, operand]` pairs).
    pub fn parse_narrow(&self, me: &User, narrow: &Value) -> ApiResult<Vec<NarrowTerm>> {
        let Value::Array(items) = narrow else {
            return Err(ApiError::bad_request("narrow is not a list"));
        };
        let mut out = Vec::new();
        // Zulip's `update_narrow_terms_containing_empty_topic_fallback_name`: the first
        // topic term naming the empty topic's display name means the empty topic.
        let mut topic_seen = false;
        for item in items {
            let (operator, operand, negated) = match item {
                Value::Array(pair) if pair.len() == 2 => (
                    pair[0].as_str().unwrap_or_default().to_owned(),
                    pair[1].clone(),
                    false,
                ),
                Value::Object(o) => {
                    let operator = o.get("operator").and_then(Value::as_str);
                    let operand = o.get("operand");
                    match (operator, operand) {
                        (Some(op), Some(v)) => (
                            op.to_owned(),
                            v.clone(),
                            o.get("negated").and_then(Value::as_bool).unwrap_or(false),
                        ),
                        _ => return Err(ApiError::bad_request("Invalid narrow[0]")),
                    }
                }
                _ => return Err(ApiError::bad_request("Invalid narrow")),
            };
            // Zulip's `NarrowBuilder.add_term` calls `by_` + the operator with `-` read
            // as `_`: `pm_with` (the terminal client's spelling) is `pm-with`.
            let term = match operator.replace('-', "_").as_str() {
                "channel" | "stream" => {
                    let ch = match &operand {
                        Value::Number(n) => n.as_u64().and_then(|id| self.channel(id)),
                        Value::String(s) => self
                            .channel_by_name(s)
                            .or_else(|| s.parse::<u64>().ok().and_then(|id| self.channel(id))),
                        _ => None,
                    };
                    let ch = ch.filter(|c| self.can_see_channel(me, c)).ok_or_else(|| {
                        bad_narrow(format!(
                            "unknown channel {}",
                            operand_str(&operand).unwrap_or_default()
                        ))
                    })?;
                    Term::Channel(ch.id)
                }
                "channels" | "streams" => {
                    if operand_str(&operand).as_deref() != Some("public") {
                        return Err(bad_narrow(format!(
                            "invalid channels operand {}",
                            operand_str(&operand).unwrap_or_default()
                        )));
                    }
                    Term::PublicChannels
                }
                "topic" | "subject" => {
                    let mut topic = operand_str(&operand).unwrap_or_default();
                    if !std::mem::replace(&mut topic_seen, true)
                        && topic == self.settings.empty_topic_display_name
                    {
                        topic.clear();
                    }
                    Term::Topic(topic)
                }
                "dm" | "pm_with" => {
                    let mut users = self.narrow_users(&operand)?;
                    users.push(me.id);
                    users.sort_unstable();
                    users.dedup();
                    Term::Dm(users)
                }
                "dm_including" | "group_pm_with" => Term::DmIncluding(self.narrow_user(&operand)?),
                "sender" => Term::Sender(self.narrow_user(&operand)?),
                "is" => {
                    let v = operand_str(&operand).unwrap_or_default();
                    let v = match v.as_str() {
                        "private" => "dm".to_owned(),
                        _ => v,
                    };
                    if ![
                        "dm",
                        "starred",
                        "unread",
                        "mentioned",
                        "alerted",
                        "resolved",
                        "followed",
                        "muted",
                    ]
                    .contains(&v.as_str())
                    {
                        return Err(bad_narrow(format!("unknown 'is' operand {v}")));
                    }
                    Term::Is(v)
                }
                "search" => {
                    // Zulip's `NarrowParameter`: a `search` operand is a required string.
                    let text = operand_str(&operand).unwrap_or_default();
                    if text.trim().is_empty() {
                        return Err(ApiError::bad_request("operand cannot be blank."));
                    }
                    Term::Search(SearchQuery::parse(&text))
                }
                "id" | "near" | "with" => {
                    let id = match &operand {
                        Value::Number(n) => n.as_u64(),
                        Value::String(s) => s.trim().parse().ok(),
                        _ => None,
                    }
                    .ok_or_else(|| {
                        bad_narrow(format!(
                            "invalid message ID {}",
                            operand_str(&operand).unwrap_or_default()
                        ))
                    })?;
                    if operator == "id" {
                        Term::Id(id)
                    } else {
                        // `near` and `with` only move the view; they filter nothing.
                        continue;
                    }
                }
                "has" => {
                    let v = operand_str(&operand).unwrap_or_default();
                    if !["link", "image", "attachment", "reaction"].contains(&v.as_str()) {
                        return Err(bad_narrow(format!("unknown 'has' operand {v}")));
                    }
                    Term::Has(v)
                }
                other => return Err(bad_narrow(format!("unknown operator {other}"))),
            };
            out.push(NarrowTerm { term, negated });
        }
        Ok(out)
    }
}

/// A parsed narrow, ready to walk.
pub struct Narrow<'r> {
    pub realm: &'r Realm,
    pub me: &'r User,
    pub terms: Vec<NarrowTerm>,
}

impl Narrow<'_> {
    fn positive(&self) -> impl Iterator<Item = &Term> {
        self.terms.iter().filter(|t| !t.negated).map(|t| &t.term)
    }

    /// The candidates of the narrow's (not negated) search terms from the full-text
    /// index, ascending (those of every term); `None`: no search term, or no index.
    pub fn search_hits(&self, rows: &dyn MessageRows) -> RowsResult<Option<Vec<MessageId>>> {
        let mut hits: Option<Vec<MessageId>> = None;
        for t in self.positive() {
            let Term::Search(q) = t else { continue };
            let Some(found) = rows.search(q)? else {
                return Ok(None);
            };
            hits = Some(match hits {
                None => found,
                Some(before) => before
                    .into_iter()
                    .filter(|id| found.binary_search(id).is_ok())
                    .collect(),
            });
        }
        Ok(hits)
    }

    /// The lexemes the narrow's (not negated) search terms highlight.
    pub fn highlighted_lexemes(&self) -> Vec<String> {
        super::search::highlighted_lexemes(self.positive().filter_map(|t| match t {
            Term::Search(q) => Some(q),
            _ => None,
        }))
    }

    /// Whether the narrow is to one channel: then the channel's history is included
    /// for those who may read it (Zulip's `ok_to_include_history`).
    fn channel(&self) -> Option<ChannelId> {
        self.positive().find_map(|t| match t {
            Term::Channel(c) => Some(*c),
            _ => None,
        })
    }

    /// Zulip's `ok_to_include_history`: narrowed to a channel, and no `is:` term other
    /// than `is:resolved`.
    fn history_channel(&self) -> Option<ChannelId> {
        if self
            .terms
            .iter()
            .any(|t| matches!(&t.term, Term::Is(w) if w != "resolved"))
        {
            return None;
        }
        self.positive().find_map(|t| match t {
            Term::Channel(c) => Some(*c),
            _ => None,
        })
    }

    /// The source of candidate ids.
    pub fn source(&self) -> Source {
        let topic = self.positive().find_map(|t| match t {
            Term::Topic(t) => Some(t.clone()),
            _ => None,
        });
        if let Some(ch) = self.channel() {
            return match topic {
                Some(t) => Source::Topic(ch, t),
                None => Source::Channel(ch),
            };
        }
        if let Some(users) = self.positive().find_map(|t| match t {
            Term::Dm(u) => Some(u.clone()),
            _ => None,
        }) {
            return Source::Conversation(users);
        }
        if self.positive().any(|t| t == &Term::Is("unread".into())) {
            return Source::Unread(self.me.id);
        }
        if let Some(s) = self.positive().find_map(|t| match t {
            Term::Sender(s) => Some(*s),
            _ => None,
        }) {
            return Source::Sender(s);
        }
        Source::User(self.me.id)
    }

    /// Whether the caller may read a channel's history without having received it.
    fn reads_history(&self, ch: ChannelId) -> bool {
        let Some(c) = self.realm.channel(ch) else {
            return false;
        };
        if c.invite_only {
            c.history_public_to_subscribers && c.is_subscribed(self.me.id)
        } else {
            !self.me.is_guest() || c.is_subscribed(self.me.id)
        }
    }

    /// Whether the caller sees `m` (with their flags on it) in this narrow.
    pub fn admits(&self, m: &Message, user_flags: Option<u32>) -> bool {
        let visible = match (user_flags, self.history_channel(), m.recipient.channel()) {
            (Some(_), _, _) => true,
            (None, Some(narrowed), Some(ch)) => narrowed == ch && self.reads_history(ch),
            _ => false,
        };
        visible
            && self
                .terms
                .iter()
                .all(|t| self.term_matches(&t.term, m, user_flags) != t.negated)
    }

    fn term_matches(&self, term: &Term, m: &Message, user_flags: Option<u32>) -> bool {
        let bits = user_flags.unwrap_or(flags::READ | flags::HISTORICAL);
        match term {
            Term::Channel(c) => m.recipient.channel() == Some(*c),
            Term::PublicChannels => m
                .recipient
                .channel()
                .and_then(|c| self.realm.channel(c))
                .is_some_and(|c| !c.invite_only),
            Term::Topic(t) => m
                .recipient
                .topic()
                .is_some_and(|topic| topic.to_lowercase() == t.to_lowercase()),
            Term::Dm(users) => matches!(&m.recipient, Recipient::Direct { users: u } if u == users),
            Term::DmIncluding(user) => {
                matches!(&m.recipient, Recipient::Direct { users } if users.contains(user))
            }
            Term::Sender(s) => m.sender_id == *s,
            Term::Is(what) => match what.as_str() {
                "dm" => matches!(m.recipient, Recipient::Direct { .. }),
                "starred" => bits & flags::STARRED != 0,
                "unread" => bits & flags::READ == 0,
                "mentioned" => {
                    bits & (flags::MENTIONED
                        | flags::STREAM_WILDCARD_MENTIONED
                        | flags::TOPIC_WILDCARD_MENTIONED)
                        != 0
                }
                "alerted" => bits & flags::HAS_ALERT_WORD != 0,
                "resolved" => m.recipient.topic().is_some_and(|t| t.starts_with("✔ ")),
                _ => false,
            },
            Term::Search(q) => q.matches(m),
            Term::Id(id) => m.id == *id,
            Term::Has(what) => match what.as_str() {
                "link" => m.rendered_content.contains("<a "),
                "image" => m.rendered_content.contains("<img"),
                "attachment" => m.content.contains("/user_uploads/"),
                "reaction" => !m.reactions.is_empty(),
                _ => false,
            },
        }
    }
}

/// Where a fetch starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Anchor {
    Newest,
    Oldest,
    FirstUnread,
    Id(MessageId),
}

/// Zulip's `parse_anchor_value`.
pub fn parse_anchor(raw: Option<&str>) -> ApiResult<Anchor> {
    let Some(raw) = raw else {
        return Err(ApiError::bad_request("Missing 'anchor' argument."));
    };
    match raw {
        "newest" => Ok(Anchor::Newest),
        "oldest" => Ok(Anchor::Oldest),
        "first_unread" => Ok(Anchor::FirstUnread),
        other => other
            .trim()
            .parse::<i128>()
            .map(|n| Anchor::Id(n.clamp(0, i128::from(LARGER_THAN_MAX_MESSAGE_ID)) as u64))
            .map_err(|_| ApiError::bad_request("Invalid anchor")),
    }
}

/// What a fetch found.
pub struct Fetched {
    pub messages: Vec<(Message, Option<u32>)>,
    pub anchor: MessageId,
    pub found_anchor: bool,
    pub found_oldest: bool,
    pub found_newest: bool,
}

/// At most this many candidate rows are read per direction of one fetch: a narrow that
/// matches almost nothing stops there (and reports that it did not reach the end).
pub const MAX_SCAN: usize = 200_000;

/// Walks `narrow` around `anchor`: Zulip's `get_messages_backend` with
/// `limit_query_to_range` and `post_process_limited_query`.
pub fn fetch(
    rows: &dyn MessageRows,
    narrow: &Narrow<'_>,
    anchor: Anchor,
    num_before: usize,
    num_after: usize,
    include_anchor: bool,
) -> ApiResult<Fetched> {
    let max = narrow.realm.messages.max_visible();
    let source = narrow.source();
    let me = narrow.me.id;
    let anchor = match anchor {
        Anchor::Newest => LARGER_THAN_MAX_MESSAGE_ID,
        Anchor::Oldest => 0,
        Anchor::Id(n) => n,
        Anchor::FirstUnread => {
            let mut first = None;
            for id in rows
                .scan(&Source::Unread(me), 0, max, false)?
                .take(MAX_SCAN)
            {
                let id = id?;
                if let Some((m, f)) = candidate(rows, narrow, &source, id)? {
                    let _ = m;
                    let _ = f;
                    first = Some(id);
                    break;
                }
            }
            first.unwrap_or(LARGER_THAN_MAX_MESSAGE_ID)
        }
    };
    // A search asks the full-text index for its candidates instead of reading every
    // row of the source (`MessageRows::search`); each is still checked on its row.
    let hits = narrow.search_hits(rows)?;
    let hits = hits.as_deref();
    let anchored_to_left = anchor == 0;
    let anchored_to_right = anchor >= LARGER_THAN_MAX_MESSAGE_ID;
    let mut before = Vec::new();
    let mut found_oldest = anchored_to_left;
    if !anchored_to_left && num_before > 0 {
        let top = if anchored_to_right {
            max
        } else {
            anchor.saturating_sub(1).min(max)
        };
        let mut exhausted = true;
        let mut seen = 0;
        for id in walk(rows, &source, hits, 0, top, true)? {
            let id = id?;
            seen += 1;
            if seen > MAX_SCAN {
                exhausted = false;
                break;
            }
            if let Some(found) = candidate(rows, narrow, &source, id)? {
                before.push(found);
                if before.len() == num_before {
                    break;
                }
            }
        }
        before.reverse();
        found_oldest = before.len() < num_before && exhausted;
    }
    let mut anchor_row = None;
    if include_anchor && !anchored_to_right && !anchored_to_left && anchor <= max {
        anchor_row = candidate(rows, narrow, &source, anchor)?;
    }
    let found_anchor = anchor_row.is_some();
    let mut after = Vec::new();
    let mut found_newest = anchored_to_right;
    if !anchored_to_right {
        if num_after > 0 {
            let from = if anchored_to_left && include_anchor {
                0
            } else {
                anchor.saturating_add(1)
            };
            let mut exhausted = true;
            let mut seen = 0;
            for id in walk(rows, &source, hits, from, max, false)? {
                let id = id?;
                seen += 1;
                if seen > MAX_SCAN {
                    exhausted = false;
                    break;
                }
                if let Some(found) = candidate(rows, narrow, &source, id)? {
                    after.push(found);
                    if after.len() == num_after {
                        break;
                    }
                }
            }
            found_newest = after.len() < num_after && exhausted;
        } else {
            found_newest = false;
        }
    }
    let mut messages = before;
    messages.extend(anchor_row);
    messages.extend(after);
    Ok(Fetched {
        messages,
        anchor,
        found_anchor,
        found_oldest,
        found_newest,
    })
}

/// The ids a fetch walks in `[from, to]`: the search's candidates when it has them
/// (`hits`), else the source's.
fn walk<'a>(
    rows: &'a dyn MessageRows,
    source: &Source,
    hits: Option<&'a [MessageId]>,
    from: MessageId,
    to: MessageId,
    reverse: bool,
) -> RowsResult<Box<dyn Iterator<Item = RowsResult<MessageId>> + 'a>> {
    let Some(hits) = hits else {
        return rows.scan(source, from, to, reverse);
    };
    let lo = hits.partition_point(|&id| id < from);
    let hi = hits.partition_point(|&id| id <= to).max(lo);
    let ids = hits[lo..hi].iter().map(|&id| Ok(id));
    Ok(if reverse {
        Box::new(ids.rev())
    } else {
        Box::new(ids)
    })
}

/// The row of `id` and the caller's flags, when the narrow admits it.
fn candidate(
    rows: &dyn MessageRows,
    narrow: &Narrow<'_>,
    source: &Source,
    id: MessageId,
) -> ApiResult<Option<(Message, Option<u32>)>> {
    if id > narrow.realm.messages.max_visible() {
        return Ok(None);
    }
    let Some(m) = rows.row(id)? else {
        return Ok(None);
    };
    // The index entry must still describe the row (see `storage::messages`).
    let consistent = match source {
        Source::Channel(c) => m.recipient.channel() == Some(*c),
        Source::Topic(c, t) => m.recipient.is_topic(*c, t),
        Source::Conversation(users) => {
            matches!(&m.recipient, Recipient::Direct { users: u } if u == users)
        }
        Source::Sender(s) => m.sender_id == *s,
        Source::User(_) | Source::Unread(_) => true,
    };
    if !consistent {
        return Ok(None);
    }
    let f = rows.user_flags(narrow.me.id, id)?;
    Ok(narrow.admits(&m, f).then_some((m, f)))
}

/// Whether `me` may read message `m` at all (`GET /messages/{id}`, edits, flags):
/// received it, or may read its channel's history.
pub fn can_read(realm: &Realm, me: &User, m: &Message, user_flags: Option<u32>) -> bool {
    if user_flags.is_some() {
        return true;
    }
    match m.recipient.channel() {
        Some(ch) => Narrow {
            realm,
            me,
            terms: Vec::new(),
        }
        .reads_history(ch),
        None => false,
    }
}
