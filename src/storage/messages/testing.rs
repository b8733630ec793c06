//! Rows for the tests of the message room.

/// A direct message from `sender` to `to` (`realm::dev::testing::message`).
pub(super) fn message(id: u64, sender: u64, to: u64) -> crate::realm::messages::Message {
    let recipient = crate::realm::messages::Recipient::Direct {
        users: vec![sender, to],
    };
    crate::realm::dev::testing::message(id, sender, recipient, 1_700_000_000)
}
