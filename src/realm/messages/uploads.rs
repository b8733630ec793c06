//! The uploads a message links: claimed when it is sent or edited to link them,
//! released when an edit unlinks them or the message is deleted (Zulip's
//! `do_claim_attachments` and the attachment bookkeeping of `do_update_message` and
//! `do_delete_messages`), through the attachment rules of `realm::attachments`.

use super::fetch::MessageRows;
use super::{Message, MessageId};
use crate::realm::attachments::{upload_path_ids, Attachment};
use crate::realm::{Change, Realm, User};

impl Realm {
    /// Zulip's `do_claim_attachments`: the uploads `m`'s content links that `me` (its
    /// sender) may read now belong to `m` too.
    pub fn claim_uploads(&self, rows: &dyn MessageRows, me: &User, m: &Message) -> Vec<Change> {
        let paths = upload_path_ids(&m.content);
        if paths.is_empty() {
            return Vec::new();
        }
        self.decide_claim_attachments(me, m.id, m.timestamp * 1000, &paths, &|u, id| {
            self.access_message(rows, u, id as i64).is_ok()
        })
    }

    /// The uploads `before` linked and `after` no longer does: the release changes, and
    /// the attachments those leave without any message (detached).
    pub fn release_uploads(
        &self,
        message_id: MessageId,
        before: &str,
        after: &str,
        deleted: bool,
    ) -> (Vec<Change>, Vec<Attachment>) {
        let now: Vec<String> = upload_path_ids(after);
        let gone: Vec<String> = upload_path_ids(before)
            .into_iter()
            .filter(|p| !now.contains(p))
            .collect();
        let changes = self.decide_release_attachments(message_id, &gone, deleted);
        let detached = gone
            .iter()
            .filter_map(|p| self.attachment_by_path(p))
            .filter(|a| a.messages.len() == 1 && a.messages.contains_key(&message_id))
            .cloned()
            .collect();
        (changes, detached)
    }
}
