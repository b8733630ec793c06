//! What readers and event queues see of a realm: its published version, its event log,
//! and the client queues (`POST /register`, `GET /events` long-polls, `DELETE /events`).
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
//! Queues live in memory, like Zulip's Tornado queues: a restart forgets them and
//! clients re-register after `BAD_EVENT_QUEUE_ID`.
//!
//! After a storage fault the actor `discard_staged`s what was never durable: those
//! decisions never become visible, and their events are never sent. A poisoned lock
//! (a panic while holding it) never drops events: every lock here guards data that
//! stays consistent, so the guard is recovered.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{
    Arc, Mutex, MutexGuard, OnceLock, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard,
};

use arc_swap::ArcSwap;
use dashmap::DashMap;
use serde_json::{json, Map, Value};
use tokio::sync::{watch, Notify};

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::realm::events::{Audience, Event};
use crate::realm::messages::{flags, MessageId};
use crate::realm::{Change, Clock, Realm, UserId};

/// A parked poll answers a heartbeat after this much silence (Zulip: about a minute).
pub const HEARTBEAT_MS: i64 = 60_000;
/// Tick channels: one per second of a heartbeat period.
const TICK_SLOTS: usize = (HEARTBEAT_MS / 1000) as usize;
/// Queues without a connected client for this long are collected (Zulip: 10 minutes).
pub const QUEUE_TIMEOUT_MS: i64 = 600_000;
/// The longest `queue_lifespan_secs` a client may ask for (Zulip: 7 days).
pub const MAX_QUEUE_TIMEOUT_SECS: i64 = 7 * 24 * 60 * 60;
/// What `POST /register` advertises as `event_queue_longpoll_timeout_seconds`.
pub const LONGPOLL_TIMEOUT_SECS: i64 = 90;
/// At most this many events are kept in a realm's log; older ones are pruned.
pub const MAX_LOG_EVENTS: usize = 200_000;
/// Most event queues one user may hold: registering one more collects their oldest.
/// (Zulip bounds queues only by their idle timeout; hearth also caps them per user, so
/// one client cannot hold an unbounded number.)
pub const MAX_QUEUES_PER_USER: usize = 64;
/// A queue holding more unacknowledged events than this is expired.
pub const MAX_PENDING_EVENTS: usize = 20_000;

/// A user's flags on a message (`None`: they have no row for it): the message store's
/// `flags`, given to the hub at start (`EventHub::attach_flags`); it waits for the
/// message database to open (it runs on the renderer thread, never the actor).
pub type FlagReader = Arc<dyn Fn(UserId, MessageId) -> Option<u32> + Send + Sync>;

/// One logged event; its body is shared by every queue that receives it.
struct LogEntry {
    at_ms: i64,
    /// The decision whose events these are (`None`: published without a decision).
    ticket: Option<u64>,
    event: Event,
    body: Arc<Map<String, Value>>,
}

/// The realm's event log: `entries[i]` has sequence number `start + i`.
#[derive(Default)]
struct EventLog {
    start: u64,
    entries: VecDeque<LogEntry>,
}

impl EventLog {
    fn end(&self) -> u64 {
        self.start + self.entries.len() as u64
    }
}

/// What a client asked for at registration.
#[derive(Debug, Clone, Default)]
pub struct QueueOptions {
    /// Only these event types (None: all).
    pub event_types: Option<HashSet<String>>,
    pub all_public_streams: bool,
    /// `client_capabilities` as sent.
    pub capabilities: Map<String, Value>,
    /// `queue_lifespan_secs`: how long the queue lives unpolled; 0 is Zulip's default
    /// (`QUEUE_TIMEOUT_MS`), and at most `MAX_QUEUE_TIMEOUT_SECS`.
    pub lifespan_secs: i64,
    /// `narrow`: `(operator, operand)` terms every `message` event must match.
    pub narrow: Vec<(String, String)>,
    /// `apply_markdown`: message content as HTML (else raw Markdown).
    pub apply_markdown: bool,
    /// `client_gravatar`: no `avatar_url` where the client computes a gravatar.
    pub client_gravatar: bool,
}

impl QueueOptions {
    /// Zulip's `ClientDescriptor.queue_timeout`, in milliseconds.
    fn timeout_ms(&self) -> i64 {
        if self.lifespan_secs == 0 {
            QUEUE_TIMEOUT_MS
        } else {
            self.lifespan_secs.min(MAX_QUEUE_TIMEOUT_SECS) * 1000
        }
    }
}

/// A client's queue.
pub struct Queue {
    pub id: String,
    pub user_id: UserId,
    pub options: QueueOptions,
    state: Mutex<QueueState>,
    /// Incremented by every poll; a poll that sees a newer one answers at once.
    polls: AtomicU64,
    superseded: Notify,
    /// Polls currently parked on this queue (a connected client is never collected).
    connected: AtomicUsize,
    /// The ticket of the last decision the registration's state included: events of
    /// decisions up to it are skipped.
    since_ticket: u64,
}

struct QueueState {
    /// Next log sequence number this queue has not looked at.
    cursor: u64,
    pending: VecDeque<(i64, Arc<Map<String, Value>>)>,
    next_event_id: i64,
    last_active_ms: i64,
    expired: bool,
}

impl Queue {
    /// Whether the queue receives a logged event. `firehose`: the queue was registered
    /// with `all_public_streams` and its user may still read public channels.
    fn admits(&self, event: &Event, body: &Map<String, Value>, firehose: bool) -> bool {
        let kind = body.get("type").and_then(Value::as_str).unwrap_or_default();
        let addressed = match &event.audience {
            Audience::AllPublicStreams { except } => {
                firehose && except.binary_search(&self.user_id).is_err()
            }
            audience => audience.includes(self.user_id),
        };
        addressed
            && self
                .options
                .event_types
                .as_ref()
                .is_none_or(|t| t.contains(kind))
            && event.capability.is_none_or(|(name, declared)| {
                self.options
                    .capabilities
                    .get(name)
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
                    == declared
            })
            && (kind != "message" || self.narrow_admits(body))
    }

    /// Whether a `message` event matches the queue's narrow.
    fn narrow_admits(&self, body: &Map<String, Value>) -> bool {
        let Some(m) = body.get("message") else {
            return true;
        };
        let text = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or_default();
        let flags = body.get("flags").and_then(Value::as_array);
        let has_flag = |f: &str| flags.is_some_and(|l| l.iter().any(|x| x == f));
        self.options
            .narrow
            .iter()
            .all(|(op, operand)| match op.as_str() {
                "stream" => {
                    text("type") == "stream"
                        && (text("display_recipient").eq_ignore_ascii_case(operand)
                            || m.get("stream_id").map(Value::to_string).as_deref()
                                == Some(operand.as_str()))
                }
                "topic" => {
                    text("type") == "stream" && text("subject").eq_ignore_ascii_case(operand)
                }
                "sender" => {
                    text("sender_email").eq_ignore_ascii_case(operand)
                        || m.get("sender_id").map(Value::to_string).as_deref()
                            == Some(operand.as_str())
                }
                "is" => match operand.as_str() {
                    "dm" | "private" => text("type") == "private",
                    "starred" => has_flag("starred"),
                    "mentioned" => has_flag("mentioned") || has_flag("wildcard_mentioned"),
                    "alerted" => has_flag("has_alert_word"),
                    "unread" => !has_flag("read"),
                    _ => false,
                },
                "search" => {
                    let content = body
                        .get(SHAPE_RAW_CONTENT)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_lowercase();
                    operand
                        .to_lowercase()
                        .split_whitespace()
                        .all(|w| content.contains(w))
                }
                "dm" => {
                    text("type") == "private"
                        && m.get("display_recipient")
                            .and_then(Value::as_array)
                            .is_some_and(|users| {
                                operand.split(',').all(|e| {
                                    let e = e.trim();
                                    users.iter().any(|u| {
                                        u.get("email")
                                            .and_then(Value::as_str)
                                            .is_some_and(|x| x.eq_ignore_ascii_case(e))
                                            || u.get("id").map(Value::to_string).as_deref()
                                                == Some(e)
                                    })
                                })
                            })
                }
                _ => false,
            })
    }

    fn push(st: &mut QueueState, body: Arc<Map<String, Value>>) {
        st.pending.push_back((st.next_event_id, body));
        st.next_event_id += 1;
    }
}

/// Decrements a counter when a poll ends or stops waiting (or is dropped).
struct Connected<'a>(&'a AtomicUsize);

impl Drop for Connected<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Changes of one decision and the version right after them (their events are rendered
/// from it): one change, or a run of changes that batch (`Change::batches_with`).
pub type Step = (Vec<Change>, Arc<Realm>);

/// One decision applied by the realm actor and not yet visible.
struct Staged {
    /// The durability ticket of its WAL record.
    ticket: u64,
    /// The sequence number of its WAL record.
    seq: u64,
    steps: Vec<Step>,
}

/// The version reads see, and the ticket of the last decision it includes.
struct Published {
    realm: Arc<Realm>,
    ticket: u64,
}

/// Released decisions on their way to the renderer thread.
type RenderJob = Vec<(u64, Vec<Step>)>;

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
    closed: std::sync::atomic::AtomicBool,
    /// Who is online: soft state that pings change without the realm actor.
    presence: Arc<crate::presence::RealmPresence>,
    /// `Renderer::flags`.
    flags: Arc<OnceLock<FlagReader>>,
}

fn bad_queue(id: &str) -> ApiError {
    ApiError::new(
        400,
        ErrorCode::BadEventQueueId,
        format!("Bad event queue ID: {id}"),
    )
    .with("queue_id", id)
}

impl EventHub {
    /// A hub whose readers see `realm` until the first release.
    pub fn new(clock: Arc<dyn Clock>, realm: Arc<Realm>) -> Self {
        let generation = format!("{:x}", clock.now_ms());
        let head = Arc::new(watch::channel(0).0);
        let (waker, ends) = std::sync::mpsc::channel::<u64>();
        let woken = head.clone();
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
        let log = Arc::new(RwLock::new(EventLog::default()));
        let rendered = Arc::new(watch::channel(0).0);
        let (render, jobs) = std::sync::mpsc::channel::<RenderJob>();
        let listeners = Arc::new(AtomicUsize::new(0));
        let previous = Arc::new(Mutex::new(realm.clone()));
        let flags = Arc::new(OnceLock::new());
        let renderer = Renderer {
            clock: clock.clone(),
            log: log.clone(),
            head: head.clone(),
            rendered: rendered.clone(),
            listeners: listeners.clone(),
            previous: previous.clone(),
            flags: flags.clone(),
        };
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
        EventHub {
            presence: Arc::new(crate::presence::RealmPresence::new(clock.clone())),
            clock,
            version: ArcSwap::new(Arc::new(Published { realm, ticket: 0 })),
            staged: Mutex::new(VecDeque::new()),
            log,
            render: Mutex::new(render),
            previous,
            rendered,
            head,
            waker: Mutex::new(waker),
            ticks: (0..TICK_SLOTS).map(|_| watch::channel(0).0).collect(),
            last_tick_sec: Mutex::new(None),
            queues: DashMap::new(),
            by_user: DashMap::new(),
            listeners,
            next_queue: AtomicU64::new(1),
            generation,
            closed: std::sync::atomic::AtomicBool::new(false),
            parked: AtomicUsize::new(0),
            flags,
        }
    }

    /// Where the renderer reads users' message flags from (the realm's message store),
    /// for the per-user `flags` of `update_message` events. Set once, at start-up.
    pub fn attach_flags(&self, reader: FlagReader) {
        if self.flags.set(reader).is_err() {
            tracing::warn!("the event hub's flag reader is already attached");
        }
    }

    /// The realm's presence (soft state beside the published version).
    pub fn presence(&self) -> &Arc<crate::presence::RealmPresence> {
        &self.presence
    }

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
        let mut staged = lock(&self.staged);
        let mut job = Vec::new();
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
                Renderer {
                    clock: self.clock.clone(),
                    log: self.log.clone(),
                    head: self.head.clone(),
                    rendered: self.rendered.clone(),
                    listeners: self.listeners.clone(),
                    previous: self.previous.clone(),
                    flags: self.flags.clone(),
                }
                .render(job);
            }
        }
    }

    /// Waits until the events of every decision visible now are in the log.
    pub async fn settled(&self) {
        let target = self.version.load().ticket;
        let mut rendered = self.rendered.subscribe();
        // The sender lives as long as `self`.
        let _ = rendered.wait_for(|r| *r >= target).await;
    }

    /// Appends events to the log (without a new version) and wakes parked polls.
    pub fn publish(&self, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        let end = append(&self.log, &*self.clock, None, events);
        let sent = lock(&self.waker).send(end).is_ok();
        if !sent {
            // No waker thread: wake the polls here rather than not at all.
            self.head.send_replace(end);
        }
    }

    /// Creates a queue that sees every event published after the version it returns:
    /// the state a registration answers with.
    pub fn register(&self, user_id: UserId, options: QueueOptions) -> (String, Arc<Realm>) {
        let n = self.next_queue.fetch_add(1, Ordering::SeqCst);
        let id = format!("{}:{n}", self.generation);
        // Counted before anything is read: from here on the renderer renders, and
        // `tick` prunes nothing this registration could still need. The count stays
        // with the queue and goes when it is removed (`remove_queue`).
        self.listeners.fetch_add(1, Ordering::SeqCst);
        // The log's end first, then the version: every entry before the cursor belongs
        // to a decision the version includes, and entries after it of such decisions
        // are skipped by their ticket.
        let cursor = read(&self.log).end();
        let published = self.version.load_full();
        let queue = Queue {
            id: id.clone(),
            user_id,
            options,
            state: Mutex::new(QueueState {
                cursor,
                pending: VecDeque::new(),
                next_event_id: 0,
                last_active_ms: self.clock.now_ms(),
                expired: false,
            }),
            polls: AtomicU64::new(0),
            superseded: Notify::new(),
            connected: AtomicUsize::new(0),
            since_ticket: published.ticket,
        };
        self.queues.insert(id.clone(), Arc::new(queue));
        self.cap_queues(user_id, &id);
        (id, published.realm.clone())
    }

    /// Records a user's new queue; beyond `MAX_QUEUES_PER_USER` collects their oldest
    /// queue no poll is waiting on (else their oldest, whose waiting poll answers and
    /// whose next poll is told the queue is gone).
    fn cap_queues(&self, user_id: UserId, new: &str) {
        let evicted: Vec<String> = {
            let mut ids = self.by_user.entry(user_id).or_default();
            ids.push_back(new.to_owned());
            let mut evicted = Vec::new();
            while ids.len() > MAX_QUEUES_PER_USER {
                let idle = ids.iter().take(ids.len() - 1).position(|id| {
                    self.queues
                        .get(id)
                        .is_none_or(|q| q.connected.load(Ordering::SeqCst) == 0)
                });
                if let Some(old) = ids.remove(idle.unwrap_or(0)) {
                    evicted.push(old);
                }
            }
            evicted
        };
        for id in evicted {
            if let Some(q) = self.queues.get(&id).map(|q| q.clone()) {
                lock(&q.state).expired = true;
                q.superseded.notify_waiters();
            }
            self.remove_queue(&id);
        }
    }

    /// Removes a queue (deleted, expired or collected).
    fn remove_queue(&self, id: &str) {
        if let Some((_, q)) = self.queues.remove(id) {
            self.listeners.fetch_sub(1, Ordering::SeqCst);
            if let Some(mut ids) = self.by_user.get_mut(&q.user_id) {
                ids.retain(|x| x != id);
            }
            self.by_user.remove_if(&q.user_id, |_, ids| ids.is_empty());
        }
    }

    /// Number of polls waiting for an event right now.
    pub fn parked_polls(&self) -> usize {
        self.parked.load(Ordering::SeqCst)
    }

    /// Removes every queue of these users (deactivated accounts). O(queues).
    pub fn remove_user_queues(&self, user_ids: &[UserId]) {
        if user_ids.is_empty() {
            return;
        }
        let ids: Vec<String> = self
            .queues
            .iter()
            .filter(|q| user_ids.contains(&q.user_id))
            .map(|q| q.id.clone())
            .collect();
        ids.iter().for_each(|id| self.remove_queue(id));
    }

    /// Number of live queues.
    pub fn queue_count(&self) -> usize {
        self.queues.len()
    }

    fn queue_of(&self, user_id: UserId, queue_id: &str) -> ApiResult<Arc<Queue>> {
        let q = self
            .queues
            .get(queue_id)
            .map(|q| q.clone())
            .ok_or_else(|| bad_queue(queue_id))?;
        // Another user's queue answers as an unknown one (Zulip's
        // `access_client_descriptor`): its existence is not revealed.
        if q.user_id != user_id {
            return Err(bad_queue(queue_id));
        }
        Ok(q)
    }

    /// `DELETE /events`.
    pub fn delete(&self, user_id: UserId, queue_id: &str) -> ApiResult<()> {
        self.queue_of(user_id, queue_id)?;
        self.remove_queue(queue_id);
        Ok(())
    }

    /// Moves the log entries this queue may see into its pending list.
    fn pull(&self, q: &Queue, st: &mut QueueState) -> ApiResult<()> {
        let log = read(&self.log);
        if st.cursor < log.start {
            st.expired = true;
        } else {
            let from = (st.cursor - log.start) as usize;
            // Zulip checks `can_access_public_streams` at registration; checked again
            // here, a user who became a guest (or was deactivated) since gets no more.
            let firehose = q.options.all_public_streams
                && self
                    .current()
                    .user(q.user_id)
                    .is_some_and(|u| u.is_active && u.can_access_public_channels());
            for entry in log.entries.iter().skip(from) {
                let after = entry.ticket.is_none_or(|t| t > q.since_ticket);
                if after && q.admits(&entry.event, &entry.body, firehose) {
                    Queue::push(st, entry.body.clone());
                }
            }
            st.cursor = log.end();
            if st.pending.len() > MAX_PENDING_EVENTS {
                st.expired = true;
            }
        }
        if st.expired {
            drop(log);
            self.remove_queue(&q.id);
            return Err(bad_queue(&q.id));
        }
        Ok(())
    }

    /// `GET /events`: acknowledges up to `last_event_id`, then answers the queue's events,
    /// at once when there are some or `dont_block`, else when one arrives, a newer poll
    /// supersedes this one, or a heartbeat is due.
    pub async fn get_events(
        &self,
        user_id: UserId,
        queue_id: &str,
        last_event_id: Option<i64>,
        dont_block: bool,
    ) -> ApiResult<Vec<Value>> {
        let q = self.queue_of(user_id, queue_id)?;
        // Read-your-writes for events: a write answered before this poll has its events
        // in the log before the poll reads it.
        self.settled().await;
        let poll = q.polls.fetch_add(1, Ordering::SeqCst) + 1;
        q.superseded.notify_waiters();
        q.connected.fetch_add(1, Ordering::SeqCst);
        let _connected = Connected(&q.connected);
        let parked_at = self.clock.now_ms();
        let mut head = self.head.subscribe();
        let mut tick = self.tick_slot(parked_at + HEARTBEAT_MS).subscribe();
        let mut first = true;
        loop {
            head.borrow_and_update();
            tick.borrow_and_update();
            {
                let mut st = lock(&q.state);
                if first {
                    if let Some(last) = last_event_id {
                        while st.pending.front().is_some_and(|(id, _)| *id <= last) {
                            st.pending.pop_front();
                        }
                    }
                    first = false;
                }
                st.last_active_ms = self.clock.now_ms();
                self.pull(&q, &mut st)?;
                if !st.pending.is_empty() || dont_block {
                    return Ok(render(&st.pending, &q.options));
                }
                if self.clock.now_ms() - parked_at >= HEARTBEAT_MS {
                    Queue::push(&mut st, Arc::new(heartbeat()));
                    return Ok(render(&st.pending, &q.options));
                }
            }
            let superseded = q.superseded.notified();
            if q.polls.load(Ordering::SeqCst) != poll || self.closed.load(Ordering::SeqCst) {
                return Ok(Vec::new());
            }
            self.parked.fetch_add(1, Ordering::SeqCst);
            let _parked = Connected(&self.parked);
            tokio::select! {
                _ = head.changed() => {}
                _ = tick.changed() => {}
                _ = superseded => {}
            }
        }
    }

    /// Answers every parked poll (with what it has) and parks no more: server shutdown.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.ticks.iter().for_each(|t| t.send_modify(|t| *t += 1));
    }

    /// The tick channel of the second `at_ms` falls in (rounded up).
    fn tick_slot(&self, at_ms: i64) -> &watch::Sender<u64> {
        let sec = at_ms.div_euclid(1000) + i64::from(at_ms.rem_euclid(1000) != 0);
        &self.ticks[sec.rem_euclid(TICK_SLOTS as i64) as usize]
    }

    /// Periodic work (every second in a server; by hand in tests): wakes parked polls so
    /// they can send heartbeats, collects idle queues, prunes the log: entries older than
    /// a queue's lifetime, beyond `MAX_LOG_EVENTS`, or already read by every queue; and
    /// starts the presence flush when one is due.
    pub fn tick(&self) {
        let now = self.clock.now_ms();
        self.presence.tick();
        {
            // Every second since the last tick (a minute at most), once.
            let sec = now.div_euclid(1000);
            let mut last = lock(&self.last_tick_sec);
            let from = last.map_or(sec, |l| (l + 1).max(sec - TICK_SLOTS as i64 + 1));
            for s in from..=sec {
                self.ticks[s.rem_euclid(TICK_SLOTS as i64) as usize].send_modify(|t| *t += 1);
            }
            *last = Some(last.map_or(sec, |l| l.max(sec)));
        }
        let idle: Vec<String> = self
            .queues
            .iter()
            .filter(|q| {
                q.connected.load(Ordering::SeqCst) == 0
                    && now - lock(&q.state).last_active_ms >= q.options.timeout_ms()
            })
            .map(|q| q.id.clone())
            .collect();
        idle.iter().for_each(|id| self.remove_queue(id));
        // Read before the log's end: a registration counted later starts at the end.
        let registering = self.listeners.load(Ordering::SeqCst) > self.queues.len();
        // Kept as long as the longest-lived queue may still come back for it.
        let keep_ms = self
            .queues
            .iter()
            .map(|q| q.options.timeout_ms())
            .fold(QUEUE_TIMEOUT_MS, i64::max);
        // Queue states are read before the log is locked: `pull` holds a queue's state
        // while it reads the log, so the other order deadlocks. Cursors only move
        // forward, so a minimum read a moment early trims no more than it may.
        let min_cursor = if registering {
            None
        } else {
            self.queues.iter().map(|q| lock(&q.state).cursor).min()
        };
        let mut log = write(&self.log);
        let read_by_all = if registering {
            log.start
        } else {
            min_cursor.unwrap_or(log.end())
        };
        while log.entries.front().is_some_and(|e| {
            log.start < read_by_all
                || now - e.at_ms >= keep_ms
                || log.entries.len() > MAX_LOG_EVENTS
        }) {
            log.entries.pop_front();
            log.start += 1;
        }
    }
}

// A panic while holding one of these locks leaves its data consistent (each update is a
// single push, pop or assignment), so a poisoned lock is recovered, never given up on.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

/// Renders released decisions into the log (the renderer thread).
struct Renderer {
    clock: Arc<dyn Clock>,
    log: Arc<RwLock<EventLog>>,
    head: Arc<watch::Sender<u64>>,
    rendered: Arc<watch::Sender<u64>>,
    /// `EventHub::listeners`.
    listeners: Arc<AtomicUsize>,
    /// The version before the next decision to render (events that depend on what
    /// changed, such as who gained or lost access, compare it with the one after).
    previous: Arc<Mutex<Arc<Realm>>>,
    /// Users' message flags, for events that carry each recipient's own.
    flags: Arc<OnceLock<FlagReader>>,
}

impl Renderer {
    fn render(&self, job: RenderJob) {
        let mut end = None;
        let mut last = None;
        let mut previous = lock(&self.previous);
        for (ticket, steps) in job {
            last = Some(ticket);
            let before = previous.clone();
            if let Some((_, after)) = steps.last() {
                *previous = after.clone();
            }
            // Published before this render, so any registration from now on has a
            // version that includes it: nobody can read these events.
            if self.listeners.load(Ordering::SeqCst) == 0 {
                continue;
            }
            let events = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut events = Vec::new();
                let mut before = &before;
                for (changes, after) in &steps {
                    for c in changes {
                        events.extend(after.events_for(before, c));
                    }
                    before = after;
                }
                with_user_flags(events, self.flags.get())
            }))
            .unwrap_or_else(|_| {
                tracing::error!("rendering the events of decision {ticket} panicked");
                Vec::new()
            });
            end = Some(append(&self.log, &*self.clock, Some(ticket), events));
        }
        if let Some(end) = end {
            self.head.send_replace(end);
        }
        if let Some(ticket) = last {
            self.rendered.send_modify(|r| *r = (*r).max(ticket));
        }
    }
}

/// Gives each recipient of an event marked `SHAPE_FLAGS_OF` (an `update_message`) their
/// own `flags` on that message, as Zulip's `process_message_update_event` does with the
/// `users` of `do_update_message`: a user's flags where they have a row for the message,
/// else `["read"]` (Zulip's `subscriber_info`, for subscribers who can read the channel's
/// history). One event per distinct set of flags, so a queue still reads each event
/// once. Runs on the renderer thread: one flag read per recipient, never on the actor.
fn with_user_flags(events: Vec<Event>, reader: Option<&FlagReader>) -> Vec<Event> {
    let mut out = Vec::with_capacity(events.len());
    for mut event in events {
        let Some(id) = event.body.remove(SHAPE_FLAGS_OF).and_then(|v| v.as_u64()) else {
            out.push(event);
            continue;
        };
        let Audience::Users(users) = &event.audience else {
            out.push(event);
            continue;
        };
        let mut groups: std::collections::BTreeMap<Vec<&'static str>, Vec<UserId>> =
            std::collections::BTreeMap::new();
        for user in users {
            let names = match reader.and_then(|r| r(*user, id)) {
                Some(bits) => flags::names(bits),
                None => flags::names(flags::READ),
            };
            groups.entry(names).or_default().push(*user);
        }
        for (names, users) in groups {
            let mut body = event.body.clone();
            body.insert("flags".into(), json!(names));
            out.push(Event {
                body,
                audience: Audience::users(users),
                capability: event.capability,
            });
        }
    }
    out
}

/// Appends events to the log; returns its new end.
fn append(
    log: &RwLock<EventLog>,
    clock: &dyn Clock,
    ticket: Option<u64>,
    events: Vec<Event>,
) -> u64 {
    let now = clock.now_ms();
    let mut log = write(log);
    log.entries.extend(events.into_iter().map(|mut event| {
        let body = Arc::new(std::mem::take(&mut event.body));
        LogEntry {
            at_ms: now,
            ticket,
            event,
            body,
        }
    }));
    log.end()
}

fn heartbeat() -> Map<String, Value> {
    match json!({"type": "heartbeat"}) {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn render(
    pending: &VecDeque<(i64, Arc<Map<String, Value>>)>,
    options: &QueueOptions,
) -> Vec<Value> {
    pending
        .iter()
        .map(|(id, body)| {
            let mut m = Map::with_capacity(body.len() + 1);
            m.insert(
                "type".into(),
                body.get("type").cloned().unwrap_or(Value::Null),
            );
            for (k, v) in body.iter() {
                if !k.starts_with(SHAPE_PREFIX) {
                    m.insert(k.clone(), v.clone());
                }
            }
            shape_message(&mut m, body, options);
            m.insert("id".into(), (*id).into());
            Value::Object(m)
        })
        .collect()
}

/// Keys of an event body that shape it per queue and are never sent.
pub const SHAPE_PREFIX: &str = "__";
/// The raw Markdown of a `message` event's message (for `apply_markdown: false`).
pub const SHAPE_RAW_CONTENT: &str = "__raw_content";
/// Set when the sender's avatar is a gravatar a `client_gravatar` client computes.
pub const SHAPE_GRAVATAR: &str = "__gravatar";
/// The message whose per-user `flags` each recipient of the event gets
/// (`with_user_flags`); removed before the event is logged.
pub const SHAPE_FLAGS_OF: &str = "__flags_of";

/// A `message` event as this queue asked for it: raw Markdown without
/// `apply_markdown`, no `avatar_url` the client computes itself with `client_gravatar`.
fn shape_message(m: &mut Map<String, Value>, body: &Map<String, Value>, options: &QueueOptions) {
    let Some(Value::Object(message)) = m.get_mut("message") else {
        return;
    };
    if !options.apply_markdown {
        if let Some(raw) = body.get(SHAPE_RAW_CONTENT) {
            message.insert("content".into(), raw.clone());
            message.insert("content_type".into(), "text/x-markdown".into());
        }
    }
    if options.client_gravatar && body.get(SHAPE_GRAVATAR) == Some(&Value::Bool(true)) {
        message.insert("avatar_url".into(), Value::Null);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realm::ManualClock;
    use crate::realm::{ChannelChange, UserChange};

    fn hub(clock: ManualClock) -> EventHub {
        let realm = crate::realm::Realm::new(crate::realm::RealmSettings {
            name: "test".into(),
            subdomain: "test".into(),
            url: String::new(),
            dev: false,
            email_visibility: crate::realm::EmailVisibility::Everyone,
            fake_email_domain: "test.invalid".into(),
            empty_topic_display_name: "general chat".into(),
            date_created: 0,
        });
        EventHub::new(Arc::new(clock), Arc::new(realm))
    }

    fn event(kind: &str, audience: Audience) -> Event {
        Event::new(json!({"type": kind, "op": "add"}), audience)
    }

    #[tokio::test]
    async fn queue_sees_only_its_events_after_registration() {
        let clock = ManualClock::new(1_000_000);
        let hub = hub(clock.clone());
        hub.publish(vec![event("before", Audience::Everyone)]);
        let (q, _) = hub.register(7, QueueOptions::default());
        hub.publish(vec![
            event("mine", Audience::users(vec![7])),
            event("other", Audience::users(vec![8])),
        ]);
        let evs = hub.get_events(7, &q, Some(-1), true).await.expect("events");
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0]["type"], "mine");
        assert_eq!(evs[0]["id"], 0);
        // Not acknowledged yet: delivered again; acknowledged: gone.
        assert_eq!(
            hub.get_events(7, &q, Some(-1), true)
                .await
                .expect("again")
                .len(),
            1
        );
        assert!(hub
            .get_events(7, &q, Some(0), true)
            .await
            .expect("acked")
            .is_empty());
        assert_eq!(
            hub.get_events(8, &q, None, true).await.map_err(|e| e.msg),
            Err(format!("Bad event queue ID: {q}"))
        );
    }

    #[tokio::test]
    async fn event_types_filter() {
        let hub = hub(ManualClock::new(0));
        let opts = QueueOptions {
            event_types: Some(["b".to_owned()].into()),
            ..Default::default()
        };
        let (q, _) = hub.register(1, opts);
        hub.publish(vec![
            event("a", Audience::Everyone),
            event("b", Audience::Everyone),
        ]);
        let evs = hub.get_events(1, &q, None, true).await.expect("events");
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0]["type"], "b");
    }

    #[tokio::test]
    async fn parked_poll_wakes_on_publish_and_heartbeat() {
        let clock = ManualClock::new(0);
        let hub = Arc::new(hub(clock.clone()));
        let (q, _) = hub.register(1, QueueOptions::default());
        let (h, id) = (hub.clone(), q.clone());
        let poll = tokio::spawn(async move { h.get_events(1, &id, None, false).await });
        tokio::task::yield_now().await;
        hub.publish(vec![event("x", Audience::Everyone)]);
        let evs = poll.await.expect("join").expect("events");
        assert_eq!(evs[0]["type"], "x");

        let (h, id) = (hub.clone(), q.clone());
        let poll = tokio::spawn(async move { h.get_events(1, &id, Some(0), false).await });
        tokio::task::yield_now().await;
        hub.tick();
        tokio::task::yield_now().await;
        assert!(!poll.is_finished(), "no heartbeat before a minute");
        clock.advance_ms(HEARTBEAT_MS);
        hub.tick();
        let evs = poll.await.expect("join").expect("events");
        assert_eq!(evs, vec![json!({"type": "heartbeat", "id": 1})]);
    }

    /// The events a spawned poll answered with (a hang guard of 5 s, not a timing).
    async fn answered(poll: tokio::task::JoinHandle<ApiResult<Vec<Value>>>) -> Vec<Value> {
        tokio::time::timeout(std::time::Duration::from_secs(5), poll)
            .await
            .expect("woken")
            .expect("join")
            .expect("events")
    }

    /// A poll parked in the middle of a second hears its heartbeat at the tick of the
    /// second after it is due; ticks in between leave it parked.
    #[tokio::test]
    async fn heartbeats_come_due_by_the_second_they_fall_in() {
        let clock = ManualClock::new(1_000_400);
        let hub = Arc::new(hub(clock.clone()));
        hub.tick();
        let (q, _) = hub.register(1, QueueOptions::default());
        let (h, id) = (hub.clone(), q.clone());
        let poll = tokio::spawn(async move { h.get_events(1, &id, None, false).await });
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        for step in [700, 29_000, 30_000] {
            clock.advance_ms(step);
            hub.tick();
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            assert!(!poll.is_finished(), "no heartbeat {step} ms later");
        }
        // 59.7 s after parking; the heartbeat is due at 60.4 s, and is sent by the tick
        // of the second after (at most a second late).
        clock.advance_ms(1000);
        hub.tick();
        assert_eq!(
            answered(poll).await,
            vec![json!({"type": "heartbeat", "id": 0})]
        );
        // A clock that jumps ahead more than a minute still wakes every second's polls.
        let (h, id) = (hub.clone(), q.clone());
        let poll = tokio::spawn(async move { h.get_events(1, &id, Some(0), false).await });
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        clock.advance_ms(5 * HEARTBEAT_MS + 123);
        hub.tick();
        assert_eq!(answered(poll).await[0]["type"], "heartbeat");
    }

    #[tokio::test]
    async fn idle_queues_are_collected_and_answer_bad_queue_id() {
        let clock = ManualClock::new(0);
        let hub = hub(clock.clone());
        let (q, _) = hub.register(1, QueueOptions::default());
        clock.advance_ms(QUEUE_TIMEOUT_MS);
        hub.tick();
        let err = hub.get_events(1, &q, None, true).await.expect_err("gone");
        assert_eq!(err.code, ErrorCode::BadEventQueueId);
        assert_eq!(err.msg, format!("Bad event queue ID: {q}"));
        assert_eq!(err.extra["queue_id"], q);
    }

    #[tokio::test]
    async fn a_poisoned_lock_drops_no_staged_decision_nor_event() {
        let hub = hub(ManualClock::new(0));
        let (q, _) = hub.register(1, QueueOptions::default());
        let poison = |f: &(dyn Fn() + Sync)| {
            let _ = std::thread::scope(|s| s.spawn(f).join());
        };
        poison(&|| {
            let _g = hub.staged.lock();
            panic!("poison staged");
        });
        poison(&|| {
            let _g = hub.log.write();
            panic!("poison log");
        });
        poison(&|| {
            let _g = hub.waker.lock();
            panic!("poison waker");
        });
        assert!(hub.staged.is_poisoned() && hub.log.is_poisoned());
        let mut next = (*hub.current()).clone();
        next.settings.name = "renamed".into();
        let change = Change::User(UserChange::CanCreateUsersSet {
            user_id: 1,
            value: true,
        });
        hub.stage(1, 1, vec![(vec![change], Arc::new(next))]);
        assert_eq!(hub.staged_len(), 1);
        hub.release(1);
        assert_eq!(hub.current().settings.name, "renamed");
        hub.publish(vec![event("x", Audience::Everyone)]);
        let evs = hub.get_events(1, &q, None, true).await.expect("events");
        assert_eq!(evs.last().expect("an event")["type"], "x");

        // Discarded decisions never become visible.
        hub.stage(
            2,
            2,
            vec![(
                vec![Change::User(UserChange::CanCreateUsersSet {
                    user_id: 1,
                    value: false,
                })],
                Arc::new(crate::realm::Realm::clone(&hub.current())),
            )],
        );
        assert_eq!(hub.discard_staged(), vec![2]);
        hub.release(2);
        assert_eq!(hub.current().settings.name, "renamed");
    }

    fn log_len(hub: &EventHub) -> usize {
        read(&hub.log).entries.len()
    }

    #[tokio::test]
    async fn nothing_is_logged_for_nobody_and_read_entries_are_pruned() {
        let hub = hub(ManualClock::new(0));
        let default_set = |ticket: u64| {
            let version = Arc::new(crate::realm::Realm::clone(&hub.current()));
            let change = Change::Channel(ChannelChange::DefaultChannelSet {
                channel_id: 1,
                is_default: true,
            });
            hub.stage(ticket, ticket, vec![(vec![change], version)]);
            hub.release(ticket);
        };
        // No queue: a released decision renders nothing, yet counts as rendered.
        default_set(1);
        hub.settled().await;
        assert_eq!(log_len(&hub), 0);

        let (q, _) = hub.register(7, QueueOptions::default());
        default_set(2);
        hub.settled().await;
        assert_eq!(log_len(&hub), 1);
        hub.tick();
        assert_eq!(log_len(&hub), 1, "not read yet");
        // (The realm has no users, so the event is for nobody; the poll reads past it.)
        hub.get_events(7, &q, None, true).await.expect("events");
        hub.tick();
        assert_eq!(log_len(&hub), 0, "read by every queue");
        hub.delete(7, &q).expect("delete");
        default_set(3);
        hub.settled().await;
        assert_eq!(log_len(&hub), 0, "the last queue is gone");
    }

    #[tokio::test]
    async fn a_user_holds_at_most_max_queues_oldest_collected_first() {
        let clock = ManualClock::new(0);
        let hub = hub(clock.clone());
        let ids: Vec<String> = (0..MAX_QUEUES_PER_USER + 2)
            .map(|_| hub.register(1, QueueOptions::default()).0)
            .collect();
        let (other, _) = hub.register(2, QueueOptions::default());
        assert_eq!(hub.queue_count(), MAX_QUEUES_PER_USER + 1);
        let err = hub.get_events(1, &ids[0], None, true).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::BadEventQueueId);
        assert!(hub.get_events(1, &ids[1], None, true).await.is_err());
        assert!(hub.get_events(1, &ids[2], None, true).await.is_ok());
        assert!(hub
            .get_events(1, &ids[ids.len() - 1], None, true)
            .await
            .is_ok());
        assert!(hub.get_events(2, &other, None, true).await.is_ok());
        // A deleted queue frees its place.
        hub.delete(1, &ids[2]).expect("delete");
        hub.register(1, QueueOptions::default());
        assert!(hub.get_events(1, &ids[3], None, true).await.is_ok());
    }

    #[tokio::test]
    async fn queue_lifespan_is_zulips() {
        let clock = ManualClock::new(0);
        let hub = hub(clock.clone());
        let with = |secs| QueueOptions {
            lifespan_secs: secs,
            ..Default::default()
        };
        let (default, _) = hub.register(1, with(0));
        let (short, _) = hub.register(1, with(30));
        let (long, _) = hub.register(1, with(3600));
        let (capped, _) = hub.register(1, with(MAX_QUEUE_TIMEOUT_SECS * 10));
        clock.advance_ms(30_000);
        hub.tick();
        assert_eq!(hub.queue_count(), 3, "the 30 s queue is gone");
        clock.advance_ms(QUEUE_TIMEOUT_MS);
        hub.tick();
        assert!(hub.get_events(1, &default, None, true).await.is_err());
        assert!(hub.get_events(1, &short, None, true).await.is_err());
        assert!(hub.get_events(1, &long, None, true).await.is_ok());
        clock.advance_ms(MAX_QUEUE_TIMEOUT_SECS * 1000);
        hub.tick();
        assert!(hub.get_events(1, &capped, None, true).await.is_err());
    }

    #[tokio::test]
    async fn a_new_poll_finishes_the_previous_one() {
        let hub = Arc::new(hub(ManualClock::new(0)));
        let (q, _) = hub.register(1, QueueOptions::default());
        let (h, id) = (hub.clone(), q.clone());
        let first = tokio::spawn(async move { h.get_events(1, &id, None, false).await });
        tokio::task::yield_now().await;
        let (h, id) = (hub.clone(), q.clone());
        let second = tokio::spawn(async move { h.get_events(1, &id, None, false).await });
        assert_eq!(
            first.await.expect("join").expect("events"),
            Vec::<Value>::new()
        );
        hub.publish(vec![event("x", Audience::Everyone)]);
        assert_eq!(second.await.expect("join").expect("events").len(), 1);
    }
}
