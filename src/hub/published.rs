//! The published version: what every read and authentication sees. The realm actor
//! stages each decision it applied (its changes, and the versions after them); once
//! the decision's WAL record is durable, `release` makes its version visible and hands
//! it to the renderer thread (`log`).

use std::sync::Arc;

use super::log::{RenderJob, Step};
use super::EventHub;
use crate::locks::lock;
use crate::realm::Realm;

/// The highest ticket whose decision may be released (its message rows are written),
/// read at each `release` (`EventHub::bound_release`).
pub type ReleaseBound = Arc<dyn Fn() -> u64 + Send + Sync>;

/// One decision applied by the realm actor and not yet visible.
pub(super) struct Staged {
    /// The durability ticket of its WAL record.
    pub ticket: u64,
    /// The sequence number of its WAL record.
    pub seq: u64,
    pub steps: Vec<Step>,
}

/// The version reads see, and the ticket of the last decision it includes.
pub(super) struct Published {
    pub realm: Arc<Realm>,
    pub ticket: u64,
}

impl EventHub {
    /// The newest durable version of the realm (lock-free).
    pub fn current(&self) -> Arc<Realm> {
        self.version.load().realm.clone()
    }

    /// Records a decision the actor applied, invisible until `release` reaches `ticket`.
    /// Called by the realm actor only, in ticket order; O(1).
    pub fn stage(&self, ticket: u64, seq: u64, steps: Vec<Step>) {
        if steps.is_empty() {
            return;
        }
        lock(&self.staged).push_back(Staged { ticket, seq, steps });
    }

    /// Drops every staged decision (a storage fault: none of them will be durable);
    /// returns the WAL sequence numbers of their records. They never become visible.
    pub fn discard_staged(&self) -> Vec<u64> {
        lock(&self.staged).drain(..).map(|s| s.seq).collect()
    }

    /// Number of staged decisions (not yet durable).
    pub fn staged_len(&self) -> usize {
        lock(&self.staged).len()
    }

    /// Makes every decision staged with a ticket up to `durable` visible: publishes the
    /// newest version among them and hands them to the renderer thread. O(decisions);
    /// runs on the caller's thread (an HTTP worker that awaited its ticket, or the
    /// release task), never on the realm actor. Idempotent.
    pub fn release(&self, durable: u64) {
        let durable = match self.bound.get() {
            Some(bound) => durable.min(bound()),
            None => durable,
        };
        let mut staged = lock(&self.staged);
        let mut job: RenderJob = Vec::new();
        while staged.front().is_some_and(|s| s.ticket <= durable) {
            if let Some(decision) = staged.pop_front() {
                job.push((decision.ticket, decision.steps));
            }
        }
        let newest = job
            .last()
            .and_then(|(ticket, steps)| Some((*ticket, steps.last()?.1.clone())));
        if let Some((ticket, realm)) = newest {
            // Still under `staged`: versions and render jobs go out in ticket order.
            self.version.store(Arc::new(Published { realm, ticket }));
            if let Err(std::sync::mpsc::SendError(job)) = lock(&self.render).send(job) {
                // No renderer thread: render here rather than lose the events.
                self.renderer().render(job);
            }
        }
    }

    /// Bounds every later `release` by `bound` (set once, at start-up): a decision is
    /// released only once what it wrote beside its WAL record (message rows) is
    /// readable.
    pub fn bound_release(&self, bound: ReleaseBound) {
        if self.bound.set(bound).is_err() {
            tracing::warn!("the event hub's release bound is already set");
        }
    }

    /// Waits until the events of every decision visible now are in the log.
    pub async fn settled(&self) {
        let target = self.version.load().ticket;
        let mut rendered = self.rendered.subscribe();
        // The sender lives as long as `self`.
        let _ = rendered.wait_for(|r| *r >= target).await;
    }
}
