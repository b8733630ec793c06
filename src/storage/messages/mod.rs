//! The message room: every realm's message rows, in a second sled database beside the
//! main one, and the full-text index derived from them.
//!
//! It owns the layout of the message trees (`layout`: keys, bitmaps, rows), the
//! projection of a realm's changes into rows (`projection`), write planning with its
//! undo log (`plan`, `undo`) and the writing itself (`apply`), a realm's handle for
//! writes and reads (`store`, `reads`), the message database (`db`), its background
//! open with the moves of older folders and layouts (`open`, `migrate`), its writer
//! thread (`writer`), and each realm's search index (`search`).
//!
//! It promises: rows land in the order their records were decided, and a commit is
//! marked written (`Projected`) only once its rows are where readers find them;
//! everything is synced (`sync`, through the flusher's `wal::SyncedFirst` port) before
//! a snapshot may cover the records the rows came from, and a repair's rows before the
//! WAL's next flush of new records; a failed message database fails message reads
//! (503) and never the main store. The WAL stays the truth: every record after the
//! newest snapshot is projected again at start, idempotently.
//!
//! It may call the `codec` room (rows and undo entries are framed), the `wal` room (the
//! flusher's marks and the main database, for the opening's moves) and the sled
//! configuration (`storage::folder`). Within the room imports go one way: `reads`
//! stands on `store`; `store`, `open` and `writer` on `db`; `db` on `apply` and
//! `search`; `open` also on `migrate`; `apply` on `plan`; `plan` on `undo`; and
//! everything on `projection` and `layout`. `search` reads rows back through the
//! `RowTrees` port that `db` implements, so the database that owns the indexes is not
//! named there.
//!
//! # Writing
//!
//! Rows are computed for each change from the realm state right before it, after its
//! WAL record was appended: the realm actor hands a commit's rows to the message
//! database's writer thread (`add`, `commit`; see `db`), recovery writes them
//! while replaying (`project`); a replay writes them again, idempotently. The WAL record is the
//! truth until a snapshot covers it: a snapshot is written only after the message
//! database was made durable (`sync`), and every record after it is projected again at
//! start, so a row lost with an unflushed tail of this database is written again.
//!
//! Each key is a plain insert or remove, not a `sled::Batch`: a batch takes sled's
//! global write lock (every reader of every tree waits for it, and from the first
//! batch on every sled operation takes that lock's read side) and writes a batch
//! manifest, which made projection ~3× slower. Atomicity is not needed: every record
//! after the newest snapshot is projected again at start, and a snapshot is written
//! after the rows of every record it covers were made durable. Readers bound what they return by the
//! published version's `max_visible` id, so a message nobody may see yet (not durable)
//! is never returned, and they check that a row still matches the index entry that led
//! to it (an entry left behind by a decision dropped after a storage fault points at a
//! row that no longer matches).
//!
//! Rows run ahead of the WAL: they are written before the record is durable. An edit,
//! flag change, reaction or deletion of the actor (`project` with the record's number)
//! therefore first logs the earlier value of every key and bit it writes (`Op::Logged`,
//! the log entry inserted before the rows, and sled's log keeps that order on disk):
//! a bit is logged as the bit, not as its chunk, so that undoing it leaves the other
//! bits of the chunk (a later send's) alone. Records that never become durable are
//! undone from that log (`undo_after`): those a storage fault dropped, at the actor's
//! reset, and those lost with the WAL's unflushed tail, at start after the replay. A
//! snapshot trims the log up to the record it covers. Sends log nothing: their rows
//! are new keys and new bits, which `purge_from` removes.

mod apply;
mod db;
mod layout;
mod migrate;
mod open;
mod plan;
mod projection;
mod reads;
pub mod search;
mod store;
#[cfg(test)]
mod testing;
mod undo;
mod writer;

pub use db::{
    exists, has_marker, lost_writes, open_sled, set_cache_mb, set_inline_projection, synced,
    MessageDb, Readiness, DEFAULT_CACHE_MB, FOLDER, READY_WAIT, TREE_PREFIXES,
};
pub use layout::{decode_message, encode_message, tree_names, LEGACY_BITS_TREE, LEGACY_USER_TREES};
pub use open::{finish_swap, FRESH, REPLACED};
pub use projection::Projection;
pub use reads::Received;
pub use store::{ActorRows, MessageStore};
