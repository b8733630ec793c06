//! The projection of a realm's changes into rows: what each change writes (`Op`),
//! computed on the realm actor from the state right before it (`op_for`), and a
//! commit's rows in order (`Projection`).

use crate::realm::messages::flags::MentionFlags;
use crate::realm::messages::{Message, MessageChange, MessageId};
use crate::realm::{Change, Realm, UserId};
use std::sync::Arc;

/// What one change writes, computed from the realm state of its moment (so that it can
/// wait in `MessageDb`'s queue while the database opens): everything `apply` needs.
pub(super) enum Op {
    Sent {
        message: Message,
        /// Each recipient's flag bits.
        recipients: Vec<(UserId, u32)>,
    },
    Flags {
        user_id: UserId,
        flag: u32,
        add: bool,
        ids: Vec<MessageId>,
    },
    Edited {
        pairs: Vec<(Message, Message)>,
        /// Per message whose mentions or alert words changed: the flags the realm
        /// recomputed (`Realm::edit_mentions`, `Realm::edit_alert_words`), applied to the
        /// users who have a row for it.
        mentions: Vec<MentionFlags>,
    },
    Reaction {
        message_id: MessageId,
        reaction: crate::realm::messages::Reaction,
        add: bool,
    },
    Deleted(Vec<Message>),
    /// Removes what rows exist of messages from the realm's next id on, with the
    /// per-user rows of its users for them: rows whose WAL record was lost (see
    /// `MessageStore::purge_from`). The realm (a structurally shared clone) is read only
    /// when such rows exist, so the usual case costs no pass over its users.
    Purge(Arc<Realm>),
    /// `op` (an edit, flag change, reaction or deletion) of WAL record `seq`, whose
    /// rows' earlier values go to the undo log first, so that they can be put back if
    /// the record is lost (`Undo`). `change`: its change's place in the record.
    Logged {
        seq: u64,
        change: u32,
        op: Box<Op>,
    },
    /// Puts back what the logged writes of WAL records after `after` replaced, newest
    /// first, and forgets them: those records were dropped after a storage fault or
    /// lost with an unflushed WAL tail.
    Undo {
        after: u64,
    },
    /// Forgets the undo log up to WAL record `upto`, which a durable snapshot covers.
    Trim {
        upto: u64,
    },
}

impl Op {
    /// Whether this op repairs rows of lost records (see `db`'s module doc).
    pub(super) fn is_repair(&self) -> bool {
        matches!(self, Op::Undo { .. } | Op::Purge(_))
    }
}

/// The rows of one commit of the realm actor, in order (`MessageStore::add`).
#[derive(Default)]
pub struct Projection(pub(super) Vec<Op>);

/// What a change writes (`None`: nothing, it is not about message rows); see
/// `MessageStore::project`.
pub(super) fn op_for(realm: &Realm, change: &Change, at: Option<(u64, u32)>) -> Option<Op> {
    let Change::Message(change) = change else {
        return None;
    };
    let op = match change {
        MessageChange::Sent(_) | MessageChange::Notice { .. } => {
            let (m, recipients) = realm.delivery(change)?;
            Op::Sent {
                message: m.clone(),
                recipients,
            }
        }
        MessageChange::FlagsChanged {
            user_id,
            flag,
            add,
            ids,
        } => Op::Flags {
            user_id: *user_id,
            flag: *flag,
            add: *add,
            ids: ids.clone(),
        },
        MessageChange::Edited { pairs, .. } => Op::Edited {
            pairs: pairs.clone(),
            mentions: pairs
                .iter()
                .filter(|(b, a)| b.mentioned != a.mentioned || b.wildcard != a.wildcard)
                .map(|(before, after)| realm.edit_mentions(before, after))
                .chain(
                    pairs
                        .iter()
                        .filter_map(|(before, after)| realm.edit_alert_words(before, after)),
                )
                .collect(),
        },
        MessageChange::ReactionAdded {
            message_id,
            reaction,
            ..
        } => Op::Reaction {
            message_id: *message_id,
            reaction: reaction.clone(),
            add: true,
        },
        MessageChange::ReactionRemoved {
            message_id,
            reaction,
            ..
        } => Op::Reaction {
            message_id: *message_id,
            reaction: reaction.clone(),
            add: false,
        },
        MessageChange::ScheduledCreated(_)
        | MessageChange::ScheduledUpdated(_)
        | MessageChange::ScheduledDeleted { .. }
        | MessageChange::ScheduledDelivered { .. }
        | MessageChange::ScheduledFailed { .. } => return None,
        MessageChange::Deleted { messages, .. } => Op::Deleted(messages.clone()),
    };
    Some(match (at, op) {
        (_, op @ Op::Sent { .. }) | (None, op) => op,
        (Some((seq, change)), op) => Op::Logged {
            seq,
            change,
            op: Box::new(op),
        },
    })
}
