//! Who may read a message: Zulip's `access_message`, over the message rows.

use super::fetch::{can_read, MessageRows};
use super::Message;
use crate::error::{ApiError, ApiResult};
use crate::realm::{Realm, User};

impl Realm {
    /// Zulip's `access_message`: message `id` with `me`'s flags on it, if `me` may read
    /// it (received it, or may read its channel's history); else "Invalid message(s)".
    /// Ids above this version's newest visible one do not exist yet.
    pub fn access_message(
        &self,
        rows: &dyn MessageRows,
        me: &User,
        id: i64,
    ) -> ApiResult<(Message, Option<u32>)> {
        let invalid = || ApiError::bad_request("Invalid message(s)");
        let id = u64::try_from(id).map_err(|_| invalid())?;
        if id > self.messages.max_visible() {
            return Err(invalid());
        }
        let m = rows.row(id)?.ok_or_else(invalid)?;
        let f = rows.user_flags(me.id, id)?;
        if can_read(self, me, &m, f) {
            Ok((m, f))
        } else {
            Err(invalid())
        }
    }
}
