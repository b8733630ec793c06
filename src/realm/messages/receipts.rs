//! `GET /messages/{message_id}/read_receipts`, after Zulip's
//! `zerver/views/read_receipts.py`: who read a message, read on the HTTP worker through
//! the message-rows port.

use super::fetch::MessageRows;
use super::{flags, Recipient};
use crate::error::{ApiError, ApiResult};
use crate::realm::{Realm, User, UserId};

/// The refusal when the realm turned read receipts off.
pub const READ_RECEIPTS_DISABLED: &str = "Read receipts are disabled in this organization.";

impl Realm {
    /// The users who have message `id` marked as read, ascending: `me` must be able to
    /// read the message (`access_message`, first), the realm must show read receipts;
    /// the sender, deactivated users, users whose `send_read_receipts` is off, users
    /// who muted `me` (their instant reads would tell `me` so) and users `me` muted are
    /// left out.
    /// Bots are included, as in Zulip. Channel messages ask every active user's flags
    /// (anyone may hold a row, `historical` ones included); direct messages ask their
    /// participants'.
    pub fn view_read_receipts(
        &self,
        rows: &dyn MessageRows,
        me: &User,
        id: i64,
    ) -> ApiResult<Vec<UserId>> {
        let (m, _) = self.access_message(rows, me, id)?;
        if !self.properties.enable_read_receipts {
            return Err(ApiError::bad_request(READ_RECEIPTS_DISABLED));
        }
        let candidates: Vec<UserId> = match &m.recipient {
            Recipient::Direct { users } => users.clone(),
            Recipient::Channel { .. } => self.users.keys().copied().collect(),
        };
        let mut out = Vec::new();
        for user in candidates {
            if user == m.sender_id
                || !self.user(user).is_some_and(|u| u.is_active)
                || !self.sends_read_receipts(user)
                || self.has_muted(user, me.id)
                || self.has_muted(me.id, user)
            {
                continue;
            }
            if rows
                .user_flags(user, m.id)?
                .is_some_and(|f| f & flags::READ != 0)
            {
                out.push(user);
            }
        }
        Ok(out)
    }
}
