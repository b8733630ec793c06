//! Per-user message flags: their bits and names, `POST /messages/flags` (and
//! `/messages/flags/narrow`, whose narrow is walked on the worker) as Zulip's
//! `do_update_message_flags` decides it, and the mention flags a content edit
//! recomputes (`update_user_message_flags`), which the store writes.

use super::{Message, MessageChange, MessageId};
use crate::error::{ApiError, ApiResult};
use crate::realm::{Change, Cx, Decided, Realm, User, UserId};

pub const READ: u32 = 1;
pub const STARRED: u32 = 1 << 1;
pub const COLLAPSED: u32 = 1 << 2;
pub const MENTIONED: u32 = 1 << 3;
pub const STREAM_WILDCARD_MENTIONED: u32 = 1 << 4;
pub const TOPIC_WILDCARD_MENTIONED: u32 = 1 << 5;
pub const HAS_ALERT_WORD: u32 = 1 << 6;
pub const HISTORICAL: u32 = 1 << 7;

/// Zulip's names, in the order Zulip lists them.
pub const NAMES: [(u32, &str); 8] = [
    (READ, "read"),
    (STARRED, "starred"),
    (COLLAPSED, "collapsed"),
    (MENTIONED, "mentioned"),
    (STREAM_WILDCARD_MENTIONED, "stream_wildcard_mentioned"),
    (TOPIC_WILDCARD_MENTIONED, "topic_wildcard_mentioned"),
    (HAS_ALERT_WORD, "has_alert_word"),
    (HISTORICAL, "historical"),
];

/// Flags a user may change with `POST /messages/flags`.
pub const EDITABLE: [&str; 3] = ["read", "starred", "collapsed"];

/// A flag's bit by name (any Zulip flag).
pub fn by_name(name: &str) -> Option<u32> {
    match name {
        "wildcard_mentioned" => Some(STREAM_WILDCARD_MENTIONED),
        _ => NAMES.iter().find(|(_, n)| *n == name).map(|(b, _)| *b),
    }
}

/// The names of the set bits, in Zulip's order.
pub fn names(bits: u32) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = NAMES
        .iter()
        .filter(|(b, _)| bits & b != 0)
        .map(|(_, n)| *n)
        .collect();
    // Zulip still sends the legacy name beside the new one.
    if bits & (STREAM_WILDCARD_MENTIONED | TOPIC_WILDCARD_MENTIONED) != 0 {
        out.push("wildcard_mentioned");
    }
    out
}

/// The flags a content edit may recompute.
pub const MENTION_BITS: u32 = MENTIONED | STREAM_WILDCARD_MENTIONED | TOPIC_WILDCARD_MENTIONED;

/// `op` and `flag` of a flags request, checked as `do_update_message_flags` checks
/// them: whether the flag is added, and its bit.
pub fn parse_flag_op(op: &str, flag: &str) -> ApiResult<(bool, u32)> {
    let Some(bit) = by_name(flag) else {
        return Err(ApiError::bad_request(format!("Invalid flag: '{flag}'")));
    };
    if !EDITABLE.contains(&flag) {
        return Err(ApiError::bad_request(format!(
            "Flag not editable: '{flag}'"
        )));
    }
    match op {
        "add" => Ok((true, bit)),
        "remove" => Ok((false, bit)),
        other => Err(ApiError::bad_request(format!(
            "Invalid message flag operation: '{other}'"
        ))),
    }
}

/// A flags change, parsed on the worker (for `/messages/flags/narrow`, the ids the
/// narrow found there).
#[derive(Debug, Clone, PartialEq)]
pub struct FlagsRequest {
    pub ids: Vec<i64>,
    pub add: bool,
    pub flag: u32,
}

/// The mention flags a content edit recomputes for one message: within `mask`, each
/// listed user's bits after the edit (applied to the users who have a row for it).
#[derive(Debug, Clone, PartialEq)]
pub struct MentionFlags {
    pub id: MessageId,
    pub mask: u32,
    pub users: Vec<(UserId, u32)>,
}

impl Realm {
    /// `POST /messages/flags`: the ids whose flag changes (a message the caller did not
    /// receive is checked for access and becomes historical). Answers how many
    /// changed.
    pub fn decide_update_flags(
        &self,
        me: &User,
        q: FlagsRequest,
        cx: &mut Cx,
    ) -> ApiResult<Decided<usize>> {
        let rows = cx.rows()?;
        let mut changed: Vec<MessageId> = Vec::new();
        for id in &q.ids {
            let Ok(uid) = u64::try_from(*id) else {
                return Err(ApiError::bad_request("Invalid message(s)"));
            };
            match rows.user_flags(me.id, uid)? {
                Some(bits) => {
                    if (bits & q.flag != 0) != q.add {
                        changed.push(uid);
                    }
                }
                None => {
                    // Not received: read and historical, until a change makes it differ.
                    let base = READ | HISTORICAL;
                    let new = if q.add { base | q.flag } else { base & !q.flag };
                    if new != base {
                        self.access_message(rows, me, *id)?;
                        changed.push(uid);
                    }
                }
            }
        }
        changed.sort_unstable();
        changed.dedup();
        let count = changed.len();
        let changes = if changed.is_empty() {
            Vec::new()
        } else {
            vec![Change::Message(MessageChange::FlagsChanged {
                user_id: me.id,
                flag: q.flag,
                add: q.add,
                ids: changed,
            })]
        };
        Ok(Decided::new(changes, count))
    }

    /// The `has_alert_word` flags a content edit recomputes (Zulip's
    /// `update_user_message_flags` with the new rendering's alert-word users): set for
    /// the users with an alert word in the new content, cleared for those who had one
    /// only in the old; `None` when no one's flag changes. Costs the two contents, not
    /// the channel's size.
    pub fn edit_alert_words(&self, before: &Message, after: &Message) -> Option<MentionFlags> {
        if before.content == after.content {
            return None;
        }
        let was = self.alert_word_users(&before.content);
        let now = self.alert_word_users(&after.content);
        if was == now {
            return None;
        }
        let users = was
            .symmetric_difference(&now)
            .map(|u| (*u, if now.contains(u) { HAS_ALERT_WORD } else { 0 }))
            .collect();
        Some(MentionFlags {
            id: after.id,
            mask: HAS_ALERT_WORD,
            users,
        })
    }

    /// The mention flags a content edit recomputes (Zulip's `update_user_message_flags`).
    /// With the wildcard unchanged only users mentioned before or after can change, so
    /// only they are listed (an edit costs its mentions, not its channel's size); a
    /// wildcard that came or went concerns every recipient.
    pub fn edit_mentions(&self, before: &Message, after: &Message) -> MentionFlags {
        if before.wildcard != after.wildcard {
            let mut users = self.message_recipients(after);
            // Mentioned before and no longer a recipient: cleared too.
            for u in &before.mentioned {
                if !users.iter().any(|(r, _)| r == u) {
                    users.push((*u, 0));
                }
            }
            return MentionFlags {
                id: after.id,
                mask: MENTION_BITS,
                users,
            };
        }
        let mut users: Vec<UserId> = before
            .mentioned
            .iter()
            .chain(&after.mentioned)
            .copied()
            .collect();
        users.sort_unstable();
        users.dedup();
        MentionFlags {
            id: after.id,
            mask: MENTIONED,
            users: users
                .into_iter()
                .map(|u| {
                    let bits = if after.mentioned.contains(&u) {
                        MENTIONED
                    } else {
                        0
                    };
                    (u, bits)
                })
                .collect(),
        }
    }
}
