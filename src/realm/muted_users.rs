//! Muted users: `POST`/`DELETE /users/me/muted_users/{muted_user_id}`, as Zulip's
//! `zerver/views/muted_users.py` and `do_mute_user` decide them.
//!
//! Muting marks the muted user's unread messages read for the muter (Zulip's
//! `do_mark_muted_user_messages_as_read`: the same `FlagsChanged` as
//! `/messages/flags`, bounded as `/mark_all_as_read` is), and messages the muted user
//! sends later arrive already read (`Realm::delivery_flags`).
//!
//! | Change                   | Events                                              | Recipients |
//! |--------------------------|-----------------------------------------------------|------------|
//! | `UserMuted`, `UserUnmuted` | `muted_users` `{muted_users: [{id, timestamp}]}` (the whole list) | the user |

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::events::{Audience, Event};
use super::messages::moves::NOTIFICATION_BOT_ID;
use super::messages::read::{mark_read, unread_where, MARK_READ_SCAN};
use super::{Change, Cx, Decided, PersonalChange, Realm, User, UserId};
use crate::error::{ApiError, ApiResult};

/// One muted user of a user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MutedUser {
    pub id: UserId,
    /// UNIX seconds.
    pub timestamp: i64,
}

/// `POST /users/me/muted_users/{muted_user_id}` (`mute: true`) and `DELETE` (`false`).
#[derive(Debug, Clone, PartialEq)]
pub struct MuteUser {
    pub muted_user_id: i64,
    pub mute: bool,
}

impl Realm {
    /// A user's muted users, in the order muted.
    pub fn muted_users_of(&self, user: UserId) -> &[MutedUser] {
        self.muted_users
            .get(&user)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Whether `user` muted `other`.
    pub fn has_muted(&self, user: UserId, other: UserId) -> bool {
        self.muted_users_of(user).iter().any(|m| m.id == other)
    }

    /// `muted_users` of `/register` and of the event (Zulip's `get_user_mutes`).
    pub fn view_muted_users(&self, user: UserId) -> Vec<Value> {
        self.muted_users_of(user)
            .iter()
            .map(|m| json!({"id": m.id, "timestamp": m.timestamp}))
            .collect()
    }

    /// Zulip's `access_user_by_id_including_cross_realm` with bots and deactivated
    /// users allowed: "No such user" otherwise.
    fn mutable_user(&self, id: i64) -> ApiResult<UserId> {
        u64::try_from(id)
            .ok()
            .filter(|id| *id == NOTIFICATION_BOT_ID || self.users.contains_key(id))
            .ok_or_else(|| ApiError::bad_request("No such user"))
    }

    /// Mutes or unmutes a user. Muting also marks the muted user's unread messages read
    /// (at most `MARK_READ_SCAN` unread-index entries are read).
    pub fn decide_mute_user(&self, me: &User, q: MuteUser, cx: &mut Cx) -> ApiResult<Decided<()>> {
        if !q.mute {
            let other = self.mutable_user(q.muted_user_id)?;
            if !self.has_muted(me.id, other) {
                return Err(ApiError::bad_request("User is not muted"));
            }
            return Ok(Decided::changes(vec![Change::Personal(
                PersonalChange::UserUnmuted {
                    user_id: me.id,
                    muted_user_id: other,
                },
            )]));
        }
        if u64::try_from(q.muted_user_id).is_ok_and(|id| id == me.id) {
            return Err(ApiError::bad_request("Cannot mute self"));
        }
        let other = self.mutable_user(q.muted_user_id)?;
        if self.has_muted(me.id, other) {
            return Err(ApiError::bad_request("User already muted"));
        }
        let timestamp = cx.now_secs();
        let rows = cx.rows()?;
        let (ids, _) = unread_where(rows, me, MARK_READ_SCAN, |m| m.sender_id == other)?;
        let mut changes = mark_read(me, ids);
        changes.push(Change::Personal(PersonalChange::UserMuted {
            user_id: me.id,
            muted_user_id: other,
            timestamp,
        }));
        Ok(Decided::changes(changes))
    }

    pub(in crate::realm) fn apply_muted_user(&mut self, change: &PersonalChange) {
        match change {
            PersonalChange::UserMuted {
                user_id,
                muted_user_id,
                timestamp,
            } => {
                let list = self.muted_users.entry(*user_id).or_default();
                if !list.iter().any(|m| m.id == *muted_user_id) {
                    list.push(MutedUser {
                        id: *muted_user_id,
                        timestamp: *timestamp,
                    });
                }
            }
            PersonalChange::UserUnmuted {
                user_id,
                muted_user_id,
            } => {
                if let Some(list) = self.muted_users.get_mut(user_id) {
                    list.retain(|m| m.id != *muted_user_id);
                    if list.is_empty() {
                        self.muted_users.remove(user_id);
                    }
                }
            }
            _ => {}
        }
    }

    /// The `muted_users` event of a `UserMuted` / `UserUnmuted`.
    pub(in crate::realm) fn muted_user_events(&self, change: &PersonalChange) -> Vec<Event> {
        match change {
            PersonalChange::UserMuted { user_id, .. }
            | PersonalChange::UserUnmuted { user_id, .. } => vec![Event::new(
                json!({"type": "muted_users", "muted_users": self.view_muted_users(*user_id)}),
                Audience::users(vec![*user_id]),
            )],
            _ => Vec::new(),
        }
    }
}
