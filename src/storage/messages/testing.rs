//! Rows for the tests of the message room.

pub(super) fn message(id: u64, sender: u64, to: u64) -> crate::realm::messages::Message {
    use crate::realm::messages::{Message, Recipient, Wildcard};
    Message {
        id,
        sender_id: sender,
        recipient: Recipient::Direct {
            users: vec![sender, to],
        },
        rendered_content: "<p>hi</p>".into(),
        content: "hi".into(),
        timestamp: 1_700_000_000,
        client: "test".into(),
        is_me_message: false,
        mentioned: Vec::new(),
        wildcard: Wildcard::None,
        sender_read: true,
        edits: Vec::new(),
        last_edit_timestamp: None,
        last_moved_timestamp: None,
        reactions: Vec::new(),
    }
}
