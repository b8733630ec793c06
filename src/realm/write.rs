//! The shape of every write.
//!
//! A handler parses its parameters on the HTTP worker into a request type that lives
//! beside its rule (`realm/<resource>.rs`), and sends the realm actor a typed message
//! naming that rule: a plain function `Rule<Q, A>` (`Realm::decide_*`), never a closure.
//! The actor runs the rule against its working state, commits the changes it returns
//! and hands the typed answer back; the handler renders that answer on its worker.

use super::{Change, Cx, Realm, User};
use crate::error::ApiResult;

/// What a write's rule decided: the facts to commit, and an answer for the caller (an
/// id, a list, nothing): plain data, rendered by the HTTP layer.
#[derive(Debug)]
pub struct Decided<A> {
    pub changes: Vec<Change>,
    pub answer: A,
}

impl<A> Decided<A> {
    pub fn new(changes: Vec<Change>, answer: A) -> Self {
        Decided { changes, answer }
    }
}

impl Decided<()> {
    /// Changes, no answer beyond success.
    pub fn changes(changes: Vec<Change>) -> Self {
        Decided {
            changes,
            answer: (),
        }
    }
}

impl From<Vec<Change>> for Decided<()> {
    fn from(changes: Vec<Change>) -> Self {
        Decided::changes(changes)
    }
}

/// A write's rule: reads the realm (and, through `Cx::rows`, message rows) and the
/// caller, and decides. Run by the realm actor; pure with respect to the realm.
pub type Rule<Q, A> = fn(&Realm, &User, Q, &mut Cx) -> ApiResult<Decided<A>>;

/// A write the server makes on its own (sweeps, timers): no caller.
pub type SystemRule<Q, A> = fn(&Realm, Q, &mut Cx) -> ApiResult<Decided<A>>;
