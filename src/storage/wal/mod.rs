//! The WAL room: how a decided write becomes durable, and how far it is known to be.
//!
//! It owns the WAL's records as keys and stored bytes (`records`), the commit journal
//! that a group commit writes and `fdatasync`s (`journal`), group commit and the
//! flusher thread (`durability`), storage faults and their recovery (`faults`), and
//! the manifest: per realm, the last record and the newest snapshot known durable
//! (`manifest`, kept by the flusher's marks).
//!
//! It promises, in `always`: a ticket counts durable only after the `fdatasync` that
//! covers its record returned, and tickets become durable (and visible) in the order
//! they were taken; the journal is emptied only after sled holds its records; the
//! manifest never names more than a finished flush covered; the database that
//! `SyncedFirst` names (the message database) is synced before every checkpoint that
//! could let a snapshot cover its rows; a flush that keeps failing fails the waiting
//! writers with `StorageFailed`, never hangs them.
//!
//! It may call only the `codec` room (to frame what the journal writes) and the sled
//! configuration (`storage::folder`); the rooms above reach it through `Durability`,
//! and it reaches the message database only through the `SyncedFirst` port.
//! `Durability`'s fields are shared with `faults` within the room.

mod durability;
mod faults;
pub mod journal;
pub mod manifest;
mod records;

pub use durability::{Durability, DurabilityMode, Reset, StorageFailed, SyncedFirst};
pub use records::{key_seq, tail, Records};
