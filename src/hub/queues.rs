//! Client queues: `POST /register` creates one, `GET /events` long-polls it, `DELETE
//! /events` removes it. A queue reads the shared log from its cursor, keeps what its
//! options admit (audience, event types, capabilities, narrow) and renders it as its
//! options ask (`apply_markdown`, `client_gravatar`). A parked poll waits on the log's
//! head, on the tick channel of the second its heartbeat is due, or for a newer poll.
//!
//! Queues live in memory, like Zulip's Tornado queues: a restart forgets them and
//! clients re-register after `BAD_EVENT_QUEUE_ID`.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use tokio::sync::{watch, Notify};

use super::log::{Shared, QUEUE_TIMEOUT_MS};
use super::EventHub;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::locks::{lock, read};
use crate::realm::events::{Audience, Event, MessageShape};
use crate::realm::{Realm, UserId};

/// A parked poll answers a heartbeat after this much silence (Zulip: about a minute).
pub const HEARTBEAT_MS: i64 = 60_000;
/// Tick channels: one per second of a heartbeat period.
pub(super) const TICK_SLOTS: usize = (HEARTBEAT_MS / 1000) as usize;
/// The longest `queue_lifespan_secs` a client may ask for (Zulip: 7 days).
pub const MAX_QUEUE_TIMEOUT_SECS: i64 = 7 * 24 * 60 * 60;
/// What `POST /register` advertises as `event_queue_longpoll_timeout_seconds`.
pub const LONGPOLL_TIMEOUT_SECS: i64 = 90;
/// Most event queues one user may hold: registering one more collects their oldest.
/// (Zulip bounds queues only by their idle timeout; hearth also caps them per user, so
/// one client cannot hold an unbounded number.)
pub const MAX_QUEUES_PER_USER: usize = 64;
/// A queue holding more unacknowledged events than this is expired.
pub const MAX_PENDING_EVENTS: usize = 20_000;

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
    /// The `empty_topic_name` capability: topics as they are, `""` included.
    pub(super) fn empty_topic_name(&self) -> bool {
        self.capabilities
            .get("empty_topic_name")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    pub(super) fn timeout_ms(&self) -> i64 {
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
    pub(super) state: Mutex<QueueState>,
    /// Incremented by every poll; a poll that sees a newer one answers at once.
    polls: AtomicU64,
    superseded: Notify,
    /// Polls currently parked on this queue (a connected client is never collected).
    pub(super) connected: AtomicUsize,
    /// The ticket of the last decision the registration's state included: events of
    /// decisions up to it are skipped.
    since_ticket: u64,
}

pub(super) struct QueueState {
    /// Next log sequence number this queue has not looked at.
    pub cursor: u64,
    pending: VecDeque<(i64, Arc<Shared>)>,
    next_event_id: i64,
    last_active_ms: i64,
    expired: bool,
}

impl Queue {
    /// Whether the queue receives a logged event. `firehose`: the queue was registered
    /// with `all_public_streams` and its user may still read public channels.
    fn admits(&self, event: &Event, shared: &Shared, firehose: bool) -> bool {
        let kind = shared
            .body
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
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
            && (kind != "message" || self.narrow_admits(shared))
            // Zulip's `accepts_event`: a queue that asked for `user_topic` gets no
            // duplicate legacy `muted_topics`.
            && (kind != "muted_topics"
                || self
                    .options
                    .event_types
                    .as_ref()
                    .is_none_or(|t| !t.contains("user_topic")))
    }

    /// Whether a `message` event matches the queue's narrow (Zulip's
    /// `build_narrow_filter`, over the event as sent).
    fn narrow_admits(&self, shared: &Shared) -> bool {
        let body = &shared.body;
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
                    let content = shared
                        .shape
                        .as_ref()
                        .map_or("", |s| s.raw_content.as_str())
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

    fn push(st: &mut QueueState, event: Arc<Shared>) {
        st.pending.push_back((st.next_event_id, event));
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

/// `BAD_EVENT_QUEUE_ID`, Zulip's answer for a queue that does not exist (any more).
pub fn bad_queue(id: &str) -> ApiError {
    ApiError::new(
        400,
        ErrorCode::BadEventQueueId,
        format!("Bad event queue ID: {id}"),
    )
    .with("queue_id", id)
}

impl EventHub {
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

    /// Ends every queue (the realm left this node): each parked poll, and each later
    /// poll of these queues, answers `BAD_EVENT_QUEUE_ID`, so clients register again
    /// (through the router, on the realm's new node).
    pub fn expire_all_queues(&self) {
        let all: Vec<Arc<Queue>> = self.queues.iter().map(|q| q.clone()).collect();
        for q in all {
            lock(&q.state).expired = true;
            q.superseded.notify_waiters();
            self.remove_queue(&q.id);
        }
    }

    /// Removes a queue (deleted, expired or collected).
    pub(super) fn remove_queue(&self, id: &str) {
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

    /// Whether `user` has a live queue that receives `message` events (Zulip's
    /// `receiver_is_off_zulip` is its negation: such a user is on Zulip).
    pub fn receives_messages(&self, user: UserId) -> bool {
        let Some(ids) = self.by_user.get(&user).map(|ids| ids.clone()) else {
            return false;
        };
        ids.iter().any(|id| {
            self.queues.get(id).is_some_and(|q| {
                q.options
                    .event_types
                    .as_ref()
                    .is_none_or(|t| t.contains("message"))
            })
        })
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

    /// `DELETE /events`. A poll parked on the queue answers at once (the queue is
    /// gone), so its connection does not stay open, buffers and all, until its
    /// heartbeat when its client is gone too.
    pub fn delete(&self, user_id: UserId, queue_id: &str) -> ApiResult<()> {
        let q = self.queue_of(user_id, queue_id)?;
        lock(&q.state).expired = true;
        q.superseded.notify_waiters();
        self.remove_queue(queue_id);
        Ok(())
    }

    /// Moves the log entries this queue may see into its pending list. An expired queue
    /// answers `BAD_EVENT_QUEUE_ID`; the caller removes it once it has let go of `st`
    /// (see `poll_events`).
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
                if after && q.admits(&entry.event, &entry.shared, firehose) {
                    Queue::push(st, entry.shared.clone());
                }
            }
            st.cursor = log.end();
            if st.pending.len() > MAX_PENDING_EVENTS {
                st.expired = true;
            }
        }
        if st.expired {
            return Err(bad_queue(&q.id));
        }
        Ok(())
    }

    /// `poll_events`, decoded.
    pub async fn get_events(
        &self,
        user_id: UserId,
        queue_id: &str,
        last_event_id: Option<i64>,
        dont_block: bool,
    ) -> ApiResult<Vec<Value>> {
        let encoded = self
            .poll_events(user_id, queue_id, last_event_id, dont_block)
            .await?;
        serde_json::from_slice(&encoded).map_err(|_| ApiError::internal())
    }

    /// `GET /events`: acknowledges up to `last_event_id`, then answers the queue's events
    /// (a JSON list, encoded), at once when there are some or `dont_block`, else when one
    /// arrives, a newer poll supersedes this one, or a heartbeat is due.
    pub async fn poll_events(
        &self,
        user_id: UserId,
        queue_id: &str,
        last_event_id: Option<i64>,
        dont_block: bool,
    ) -> ApiResult<Vec<u8>> {
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
                if let Err(gone) = self.pull(&q, &mut st) {
                    // The queue's state is let go before the map of queues is locked to
                    // remove it: the ticker holds the map while it locks each queue's
                    // state (`collect_idle_queues`, `prune_log`), so the other order
                    // deadlocks (a poll of an expired queue, such as one just deleted,
                    // against the tick: both HTTP workers and the ticker stopped).
                    drop(st);
                    self.remove_queue(&q.id);
                    return Err(gone);
                }
                if !st.pending.is_empty() || dont_block {
                    return encode_events(&st.pending, &q.options);
                }
                if self.clock.now_ms() - parked_at >= HEARTBEAT_MS {
                    Queue::push(&mut st, Arc::new(heartbeat()));
                    return encode_events(&st.pending, &q.options);
                }
            }
            let superseded = q.superseded.notified();
            if q.polls.load(Ordering::SeqCst) != poll || self.closed.load(Ordering::SeqCst) {
                return Ok(b"[]".to_vec());
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

    /// The tick channel of the second `at_ms` falls in (rounded up).
    fn tick_slot(&self, at_ms: i64) -> &watch::Sender<u64> {
        let sec = at_ms.div_euclid(1000) + i64::from(at_ms.rem_euclid(1000) != 0);
        &self.ticks[sec.rem_euclid(TICK_SLOTS as i64) as usize]
    }

    /// Wakes the polls whose heartbeat fell due since the last tick: every second since
    /// then (a minute at most), once.
    pub(super) fn wake_due_polls(&self, now: i64) {
        let sec = now.div_euclid(1000);
        let mut last = lock(&self.last_tick_sec);
        let from = last.map_or(sec, |l| (l + 1).max(sec - TICK_SLOTS as i64 + 1));
        for s in from..=sec {
            self.ticks[s.rem_euclid(TICK_SLOTS as i64) as usize].send_modify(|t| *t += 1);
        }
        *last = Some(last.map_or(sec, |l| l.max(sec)));
    }

    /// Collects the queues no client polled for their lifetime.
    pub(super) fn collect_idle_queues(&self, now: i64) {
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
    }
}

fn heartbeat() -> Shared {
    Shared::new(
        match json!({"type": "heartbeat"}) {
            Value::Object(m) => m,
            _ => Map::new(),
        },
        None,
    )
}

/// One pending event as this queue asked for it, with its `id`: `type` first, then the
/// body's keys, then `id`.
fn render(id: i64, event: &Shared, options: &QueueOptions) -> Map<String, Value> {
    let body = &event.body;
    let mut m = Map::with_capacity(body.len() + 1);
    m.insert(
        "type".into(),
        body.get("type").cloned().unwrap_or(Value::Null),
    );
    for (k, v) in body.iter() {
        m.insert(k.clone(), v.clone());
    }
    shape_message(&mut m, event.shape.as_ref(), options);
    if let Some(name) = event
        .empty_topic
        .as_deref()
        .filter(|_| !options.empty_topic_name())
    {
        name_empty_topics(&mut m, name);
    }
    m.insert("id".into(), id.into());
    m
}

/// Zulip's `empty_topic_name` capability: a client without it gets the realm's display
/// name wherever an event names the empty topic of a channel (direct messages, whose
/// `subject` is also `""`, keep it).
fn name_empty_topics(m: &mut Map<String, Value>, name: &str) {
    if m.get("type").and_then(Value::as_str) == Some("private") {
        return;
    }
    for (key, value) in m.iter_mut() {
        match value {
            Value::String(s)
                if s.is_empty()
                    && matches!(
                        key.as_str(),
                        "subject" | "orig_subject" | "topic" | "topic_name"
                    ) =>
            {
                *s = name.to_owned();
            }
            Value::Object(inner) => name_empty_topics(inner, name),
            Value::Array(items) => {
                for inner in items.iter_mut().filter_map(Value::as_object_mut) {
                    name_empty_topics(inner, name);
                }
            }
            _ => {}
        }
    }
}

/// Whether this queue sends `event` as every queue that does not reshape it does: no
/// message reshaped (`shape_message`), no `id` of its own in the body.
fn unshaped(event: &Shared, options: &QueueOptions) -> bool {
    let shaped = event.shape.as_ref().is_some_and(|shape| {
        !options.apply_markdown || (options.client_gravatar && shape.gravatar)
    });
    let renamed = event.empty_topic.is_some() && !options.empty_topic_name();
    !shaped && !renamed && !event.body.contains_key("id")
}

/// The pending events as this queue asked for them, each with its `id`, as a JSON
/// list: the same bytes as encoding `render`'s maps. An event most queues send alike is
/// encoded once (`Shared::encoded`: its JSON up to the `id`), and each answer copies it.
fn encode_events(
    pending: &VecDeque<(i64, Arc<Shared>)>,
    options: &QueueOptions,
) -> ApiResult<Vec<u8>> {
    let encode_failed = |e: serde_json::Error| {
        tracing::error!("cannot encode an event: {e}");
        ApiError::internal()
    };
    let mut out = Vec::with_capacity(64 + pending.len() * 256);
    out.push(b'[');
    for (n, (id, event)) in pending.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        if !unshaped(event, options) {
            serde_json::to_writer(&mut out, &render(*id, event, options)).map_err(encode_failed)?;
            continue;
        }
        let head = match event.encoded.get() {
            Some(head) => head,
            None => {
                // `render` without `id`, its closing brace left off.
                let mut m = render(*id, event, options);
                m.shift_remove("id");
                let mut head = serde_json::to_vec(&m).map_err(encode_failed)?;
                head.pop();
                event.encoded.get_or_init(|| head.into())
            }
        };
        out.extend_from_slice(head);
        out.extend_from_slice(b",\"id\":");
        out.extend_from_slice(id.to_string().as_bytes());
        out.push(b'}');
    }
    out.push(b']');
    Ok(out)
}

/// A `message` event as this queue asked for it: raw Markdown without
/// `apply_markdown`, no `avatar_url` the client computes itself with `client_gravatar`.
fn shape_message(m: &mut Map<String, Value>, shape: Option<&MessageShape>, options: &QueueOptions) {
    let (Some(Value::Object(message)), Some(shape)) = (m.get_mut("message"), shape) else {
        return;
    };
    if !options.apply_markdown {
        message.insert("content".into(), shape.raw_content.clone().into());
        message.insert("content_type".into(), "text/x-markdown".into());
    }
    if options.client_gravatar && shape.gravatar {
        message.insert("avatar_url".into(), Value::Null);
    }
}
