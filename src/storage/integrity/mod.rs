//! The integrity room: corruption is never silent.
//!
//! It owns the reading of a realm's trees that start-up, `hearth check` and `hearth
//! recover` share (`scan`), the judgement of what they hold against the manifest's
//! marks (`judge`), and the refusal an operator reads (`damage`). It promises that a
//! realm whose trees lack anything the manifest counts durable (a missing or
//! undecodable snapshot or record at or below the mark, a WAL gap, a store behind its
//! mark) is named as damaged, never served partially; only a torn tail beyond the mark
//! is tolerated, and then cut by its caller. It writes nothing.
//!
//! It may call the `codec` room (to decode what it reads) and the `wal` room (the keys
//! of records, the manifest's marks). The offline commands, `hearth check` and `hearth
//! recover --accept-loss`, are `ops::check` and `ops::recover`, above storage.

mod damage;
mod judge;
mod scan;

pub use damage::{describe, Damage};
pub use judge::{judge, Problem, Verdict};
pub use scan::{scan, End, Scan};
