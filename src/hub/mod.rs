//! The hub: what readers and event queues see of a realm: its published version
//! (`published`), its event log and the renderer that fills it (`log`), the client
//! queues (`queues`: `POST /register`, `GET /events` long-polls, `DELETE /events`), and
//! who is online (`presence`, soft state beside them).
//!
//! Each realm has one `EventHub`. The realm actor applies a decision to its working
//! state and `stage`s it: its changes, and the immutable versions after them
//! (structurally shared, so taking one is cheap). Nothing staged is visible. Once the
//! WAL record of a decision is durable, `release` makes its version the one every read
//! sees (O(1)) and hands the decision to the realm's renderer thread, which turns its
//! changes into events and appends them to the log, in decision order, tagged with the
//! decision's ticket. So a write is answered as soon as it is durable and visible, and
//! a large decision's events never hold up the next writer.
//!
//! A registration answers the published version and starts its queue at the log's
//! current end, skipping the events of decisions its version already includes (their
//! ticket is at most the version's): state and queue always agree. A poll first waits
//! until the events of every decision visible when it started are in the log, so a
//! client that polls after a write is answered sees that write's events.
//!
//! The log is append-only: each event is appended once (O(1) per event, whatever the
//! number of queues) and a watch channel is bumped; parked long-polls run on the HTTP
//! workers, wake on the bump, pull what their queue may see from their cursor, and
//! answer. So 10 000 parked clients cost the actor nothing, and each costs its HTTP
//! worker one small task.
//!
//! The hub stands above storage and the realm: it reads the realm's versions and their
//! `events_for`, and the message store's flags; the actor and the HTTP layer above it
//! call it.
//!
//! After a storage fault the actor `discard_staged`s what was never durable: those
//! decisions never become visible, and their events are never sent. A poisoned lock
//! (a panic while holding it) never drops events: every lock here guards data that
//! stays consistent, so the guard is recovered (`crate::locks`).

pub mod answers;
mod log;
pub mod presence;
mod published;
mod queues;
#[cfg(test)]
mod tests;

pub use log::{FlagReader, RowReader, Step, MAX_LOG_EVENTS, QUEUE_TIMEOUT_MS};
pub use published::ReleaseBound;
pub use queues::{
    bad_queue, Queue, QueueOptions, HEARTBEAT_MS, LONGPOLL_TIMEOUT_SECS, MAX_PENDING_EVENTS,
    MAX_QUEUES_PER_USER, MAX_QUEUE_TIMEOUT_SECS,
};

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use arc_swap::ArcSwap;
use dashmap::DashMap;
use tokio::sync::watch;

use crate::realm::{Clock, Realm, UserId};
use log::{EventLog, RenderJob, Renderer};
use presence::RealmPresence;
use published::{Published, Staged};

/// The published version, event log and queues of one realm.
pub struct EventHub {
    clock: Arc<dyn Clock>,
    /// The newest version whose every change is durable: what reads see.
    version: ArcSwap<Published>,
    /// Decisions applied but not yet durable, in ticket order.
    staged: Mutex<VecDeque<Staged>>,
    log: Arc<RwLock<EventLog>>,
    /// Released decisions go to the renderer thread, in ticket order.
    render: Mutex<std::sync::mpsc::Sender<RenderJob>>,
    /// `Renderer::previous`, for rendering on the caller's thread without a renderer.
    previous: Arc<Mutex<Arc<Realm>>>,
    /// The ticket of the last decision whose events are in the log.
    rendered: Arc<watch::Sender<u64>>,
    /// Bumped after every publish (by the waker thread); parked polls wait on it.
    head: Arc<watch::Sender<u64>>,
    /// Hands the new log end to the waker thread, which bumps `head`. Waking N parked
    /// polls costs O(N); this keeps that cost off the realm actor.
    waker: Mutex<std::sync::mpsc::Sender<u64>>,
    /// Bumped by the ticker, one per second of the minute: a parked poll waits on the
    /// one of the second its heartbeat is due, so a tick wakes only the polls due
    /// then (about 1/60 of them), not all of them every second.
    ticks: Vec<watch::Sender<u64>>,
    /// The last second (of the realm's clock) the ticker bumped.
    last_tick_sec: Mutex<Option<i64>>,
    queues: DashMap<String, Arc<Queue>>,
    /// Each user's queue ids, oldest first (`MAX_QUEUES_PER_USER`).
    by_user: DashMap<UserId, VecDeque<String>>,
    /// Live queues plus registrations under way. While it is 0 no queue can ever read
    /// an event rendered now, so the renderer renders nothing.
    listeners: Arc<AtomicUsize>,
    next_queue: AtomicU64,
    /// Distinguishes queue ids across restarts.
    generation: String,
    /// Polls currently waiting for an event.
    parked: AtomicUsize,
    /// Set at shutdown: parked polls answer at once so the server can stop.
    closed: AtomicBool,
    /// Who is online: soft state that pings change without the realm actor.
    presence: Arc<RealmPresence>,
    /// `Renderer::flags`.
    flags: Arc<OnceLock<FlagReader>>,
    /// `Renderer::rows`.
    rows: Arc<OnceLock<RowReader>>,
    /// The highest ticket `release` may reach beyond durability: the realm's message
    /// store's (`EventHub::bound_release`); unbounded when not set.
    bound: OnceLock<ReleaseBound>,
    /// Each user's `GET /users/me` body, kept while its inputs are unchanged.
    own_user: answers::OwnUserBodies,
}

impl EventHub {
    /// A hub whose readers see `realm` until the first release.
    pub fn new(clock: Arc<dyn Clock>, realm: Arc<Realm>) -> Self {
        let generation = format!("{:x}", clock.now_ms());
        let (waker, ends) = std::sync::mpsc::channel::<u64>();
        let (render, jobs) = std::sync::mpsc::channel::<RenderJob>();
        let hub = EventHub {
            presence: Arc::new(RealmPresence::new(clock.clone())),
            clock,
            version: ArcSwap::new(Arc::new(Published {
                realm: realm.clone(),
                ticket: 0,
            })),
            staged: Mutex::new(VecDeque::new()),
            log: Arc::new(RwLock::new(EventLog::default())),
            render: Mutex::new(render),
            previous: Arc::new(Mutex::new(realm)),
            rendered: Arc::new(watch::channel(0).0),
            head: Arc::new(watch::channel(0).0),
            waker: Mutex::new(waker),
            ticks: (0..queues::TICK_SLOTS)
                .map(|_| watch::channel(0).0)
                .collect(),
            last_tick_sec: Mutex::new(None),
            queues: DashMap::new(),
            by_user: DashMap::new(),
            listeners: Arc::new(AtomicUsize::new(0)),
            next_queue: AtomicU64::new(1),
            generation,
            closed: AtomicBool::new(false),
            parked: AtomicUsize::new(0),
            flags: Arc::new(OnceLock::new()),
            rows: Arc::new(OnceLock::new()),
            bound: OnceLock::new(),
            own_user: answers::OwnUserBodies::default(),
        };
        let woken = hub.head.clone();
        // The thread ends when the hub (the only sender) is dropped.
        let spawned = std::thread::Builder::new()
            .name("hearth-events".into())
            .spawn(move || {
                while let Ok(mut end) = ends.recv() {
                    // Coalesce: one wake-up covers every publish made meanwhile.
                    while let Ok(later) = ends.try_recv() {
                        end = end.max(later);
                    }
                    woken.send_replace(end);
                }
            });
        if let Err(e) = spawned {
            tracing::error!("cannot start the event waker thread: {e}");
        }
        let renderer: Renderer = hub.renderer();
        // The thread ends when the hub (the only sender) is dropped.
        let spawned = std::thread::Builder::new()
            .name("hearth-render".into())
            .spawn(move || {
                while let Ok(job) = jobs.recv() {
                    renderer.render(job);
                }
            });
        if let Err(e) = spawned {
            // Start-up cannot go on without it: events would never be delivered.
            tracing::error!("cannot start the event renderer thread: {e}");
        }
        hub
    }

    /// The realm's presence (soft state beside the published version).
    pub fn presence(&self) -> &Arc<RealmPresence> {
        &self.presence
    }

    /// The kept `GET /users/me` bodies (`answers`).
    pub fn own_user_bodies(&self) -> &answers::OwnUserBodies {
        &self.own_user
    }

    /// Answers every parked poll (with what it has) and parks no more: server shutdown.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.ticks.iter().for_each(|t| t.send_modify(|t| *t += 1));
    }

    /// Periodic work (every second in a server; by hand in tests): wakes parked polls so
    /// they can send heartbeats, collects idle queues, prunes the log: entries older than
    /// a queue's lifetime, beyond `MAX_LOG_EVENTS`, or already read by every queue; and
    /// starts the presence flush when one is due.
    pub fn tick(&self) {
        let now = self.clock.now_ms();
        self.presence.tick();
        self.wake_due_polls(now);
        self.collect_idle_queues(now);
        self.prune_log(now);
    }
}
