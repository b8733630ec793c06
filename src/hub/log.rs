//! The event log: released decisions rendered into events (on the renderer thread, in
//! decision order, each tagged with its decision's ticket), and events published
//! without a decision. Each event is appended once (O(1) per event, whatever the number
//! of queues) and shared by every queue that receives it; the waker thread then bumps
//! the head parked polls wait on.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use serde_json::{json, Map, Value};
use tokio::sync::watch;

use super::presence::RealmPresence;
use super::EventHub;
use crate::locks::{lock, write};
use crate::realm::events::{Audience, Event, MessageShape};
use crate::realm::messages::{flags, Message, MessageId, Recipient};
use crate::realm::{Change, Clock, Realm, UserId};

/// At most this many events are kept in a realm's log; older ones are pruned.
pub const MAX_LOG_EVENTS: usize = 200_000;

/// A user's flags on a message (`None`: they have no row for it): the message store's
/// `flags`, given to the hub at start (`EventHub::attach_flags`); it waits for the
/// message database to open (it runs on the renderer thread, never the actor).
pub type FlagReader = Arc<dyn Fn(UserId, MessageId) -> Option<u32> + Send + Sync>;

/// A message row by id (`None`: no such message): the message store's `get`, given to
/// the hub at start (`EventHub::attach_rows`), read on the renderer thread only.
pub type RowReader = Arc<dyn Fn(MessageId) -> Option<Message> + Send + Sync>;

/// What every queue that receives an event shares: its body, and how its message is
/// shaped per queue (a `message` event).
pub(super) struct Shared {
    pub body: Map<String, Value>,
    pub shape: Option<MessageShape>,
    /// `Event::empty_topic`: the name queues without `empty_topic_name` get for `""`.
    pub empty_topic: Option<String>,
    /// The event's JSON as every queue that does not reshape it sends it, up to its
    /// `id` (`queues::encode_events`): encoded by the first poll that answers it, then
    /// copied by the others.
    pub encoded: OnceLock<bytes::Bytes>,
}

impl Shared {
    pub fn new(body: Map<String, Value>, shape: Option<MessageShape>) -> Self {
        Shared {
            body,
            shape,
            empty_topic: None,
            encoded: OnceLock::new(),
        }
    }
}

/// One logged event.
pub(super) struct LogEntry {
    pub at_ms: i64,
    /// The decision whose events these are (`None`: published without a decision).
    pub ticket: Option<u64>,
    /// Its audience and capability (its body and shape are in `shared`).
    pub event: Event,
    pub shared: Arc<Shared>,
}

/// The realm's event log: `entries[i]` has sequence number `start + i`.
#[derive(Default)]
pub(super) struct EventLog {
    pub start: u64,
    pub entries: VecDeque<LogEntry>,
}

impl EventLog {
    pub fn end(&self) -> u64 {
        self.start + self.entries.len() as u64
    }
}

/// Changes of one decision and the version right after them (their events are rendered
/// from it): one change, or a run of changes that batch (`Change::batches_with`).
pub type Step = (Vec<Change>, Arc<Realm>);

/// Queues without a connected client for this long are collected (Zulip: 10 minutes),
/// so the log keeps every event at least this long, for a queue that comes back.
pub const QUEUE_TIMEOUT_MS: i64 = 600_000;

/// Released decisions on their way to the renderer thread.
pub(super) type RenderJob = Vec<(u64, Vec<Step>)>;

/// Renders released decisions into the log (the renderer thread).
pub(super) struct Renderer {
    pub clock: Arc<dyn Clock>,
    pub log: Arc<RwLock<EventLog>>,
    pub head: Arc<watch::Sender<u64>>,
    pub rendered: Arc<watch::Sender<u64>>,
    /// `EventHub::listeners`.
    pub listeners: Arc<AtomicUsize>,
    /// The version before the next decision to render (events that depend on what
    /// changed, such as who gained or lost access, compare it with the one after).
    pub previous: Arc<Mutex<Arc<Realm>>>,
    /// Users' message flags, for events that carry each recipient's own.
    pub flags: Arc<OnceLock<FlagReader>>,
    /// Message rows, for events that describe the messages they name.
    pub rows: Arc<OnceLock<RowReader>>,
    /// The realm's presence, which a change of `presence_enabled` refreshes.
    pub presence: Arc<RealmPresence>,
}

impl Renderer {
    pub fn render(&self, job: RenderJob) {
        let mut end = None;
        let mut last = None;
        let mut previous = lock(&self.previous);
        for (ticket, steps) in job {
            last = Some(ticket);
            let before = previous.clone();
            if let Some((_, after)) = steps.last() {
                *previous = after.clone();
            }
            // Presence is refreshed whether or not anyone listens.
            let mut presence = self.refresh_presence(ticket, &before, &steps).into_iter();
            // Published before this render, so any registration from now on has a
            // version that includes it: nobody can read these events.
            if self.listeners.load(Ordering::SeqCst) == 0 {
                continue;
            }
            let events = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut events = Vec::new();
                let mut before = &before;
                for (changes, after) in &steps {
                    let from = events.len();
                    for c in changes {
                        events.extend(after.events_for(before, c));
                    }
                    with_message_details(
                        &mut events[from..],
                        after,
                        self.flags.get(),
                        self.rows.get(),
                    );
                    events.extend(presence.next().unwrap_or_default());
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

impl Renderer {
    /// Makes the presence refreshes a decision's steps ask for
    /// (`Realm::presence_refresh`), and answers each step's `presence` events.
    fn refresh_presence(
        &self,
        ticket: u64,
        before: &Arc<Realm>,
        steps: &[Step],
    ) -> Vec<Vec<Event>> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let now_ms = self.presence.now_ms();
            let mut before = before;
            let mut out = Vec::with_capacity(steps.len());
            for (changes, after) in steps {
                let mut events = Vec::new();
                for c in changes {
                    let Some((user, on)) = after.presence_refresh(before, c) else {
                        continue;
                    };
                    let entry =
                        self.presence
                            .presence_setting_changed(user, on, now_ms.div_euclid(1000));
                    if let Some(u) = after.user(user) {
                        events.extend(after.presence_events(u, &entry, now_ms));
                    }
                }
                out.push(events);
                before = after;
            }
            out
        }))
        .unwrap_or_else(|_| {
            tracing::error!("refreshing the presence of decision {ticket} panicked");
            Vec::new()
        })
    }
}

/// Gives each recipient of an event with `flags_of` (an `update_message`) their own
/// `flags` on that message, as Zulip's `process_message_update_event` does with the
/// `users` of `do_update_message`: a user's flags where they have a row for the message,
/// else `["read"]` (Zulip's `subscriber_info`, for subscribers who can read the channel's
/// history). One event per distinct set of flags, so a queue still reads each event
/// once. Runs on the renderer thread: one flag read per recipient, never on the actor.
fn with_user_flags(events: Vec<Event>, reader: Option<&FlagReader>) -> Vec<Event> {
    let mut out = Vec::with_capacity(events.len());
    for mut event in events {
        let Some(id) = event.flags_of.take() else {
            out.push(event);
            continue;
        };
        let Audience::Users(users) = &event.audience else {
            out.push(event);
            continue;
        };
        let mut groups: BTreeMap<Vec<&'static str>, Vec<UserId>> = BTreeMap::new();
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
                shape: event.shape.clone(),
                flags_of: None,
                empty_topic: event.empty_topic.clone(),
            });
        }
    }
    out
}

/// Adds Zulip's `message_details` to `update_message_flags` events that mark messages
/// unread (`do_update_message_flags`): per message, its type, whether it mentions the
/// user, and its channel and topic or the other participants, so a client can put it
/// back in its unread counts without fetching it. Runs on the renderer thread: one row
/// and one flag read per message the request named, never on the actor.
fn with_message_details(
    events: &mut [Event],
    realm: &Realm,
    flag_reader: Option<&FlagReader>,
    rows: Option<&RowReader>,
) {
    for event in events.iter_mut() {
        let body = &event.body;
        let unread = body.get("type").and_then(Value::as_str) == Some("update_message_flags")
            && body.get("op").and_then(Value::as_str) == Some("remove")
            && body.get("flag").and_then(Value::as_str) == Some("read");
        let Audience::Users(users) = &event.audience else {
            continue;
        };
        let (true, [user]) = (unread, users.as_slice()) else {
            continue;
        };
        let ids: Vec<MessageId> = body
            .get("messages")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        let mut details = Map::new();
        let mut any_empty = false;
        for id in ids {
            let Some(m) = rows.and_then(|r| r(id)) else {
                continue;
            };
            let bits = flag_reader.and_then(|r| r(*user, id)).unwrap_or(0);
            let mut d = Map::new();
            match &m.recipient {
                Recipient::Channel { channel_id, topic } => {
                    d.insert("type".into(), "stream".into());
                    d.insert("stream_id".into(), (*channel_id).into());
                    d.insert("topic".into(), topic.clone().into());
                    any_empty |= topic.is_empty();
                    let muted = realm
                        .channel(*channel_id)
                        .and_then(|c| c.subs.get(user))
                        .is_some_and(|s| s.is_muted);
                    d.insert("unmuted_stream_msg".into(), (!muted).into());
                }
                Recipient::Direct { users } => {
                    d.insert("type".into(), "private".into());
                    let others: Vec<UserId> = users.iter().copied().filter(|u| u != user).collect();
                    d.insert("user_ids".into(), json!(others));
                }
            }
            if bits & flags::MENTION_BITS != 0 {
                d.insert("mentioned".into(), true.into());
            }
            details.insert(id.to_string(), Value::Object(d));
        }
        event
            .body
            .insert("message_details".into(), Value::Object(details));
        if any_empty {
            event.empty_topic = Some(realm.settings.empty_topic_display_name.clone());
        }
    }
}

/// Appends events to the log; returns its new end.
pub(super) fn append(
    log: &RwLock<EventLog>,
    clock: &dyn Clock,
    ticket: Option<u64>,
    events: Vec<Event>,
) -> u64 {
    let now = clock.now_ms();
    let mut log = write(log);
    log.entries.extend(events.into_iter().map(|mut event| {
        let mut shared = Shared::new(std::mem::take(&mut event.body), event.shape.take());
        shared.empty_topic = event.empty_topic.take();
        let shared = Arc::new(shared);
        LogEntry {
            at_ms: now,
            ticket,
            event,
            shared,
        }
    }));
    log.end()
}

impl EventHub {
    /// A renderer writing to this hub's log.
    pub(super) fn renderer(&self) -> Renderer {
        Renderer {
            clock: self.clock.clone(),
            log: self.log.clone(),
            head: self.head.clone(),
            rendered: self.rendered.clone(),
            listeners: self.listeners.clone(),
            previous: self.previous.clone(),
            flags: self.flags.clone(),
            rows: self.rows.clone(),
            presence: self.presence.clone(),
        }
    }

    /// Where the renderer reads message rows from (the realm's message store), for the
    /// `message_details` of events that mark messages unread. Set once, at start-up.
    pub fn attach_rows(&self, reader: RowReader) {
        if self.rows.set(reader).is_err() {
            tracing::warn!("the event hub's row reader is already attached");
        }
    }

    /// Where the renderer reads users' message flags from (the realm's message store),
    /// for the per-user `flags` of `update_message` events. Set once, at start-up.
    pub fn attach_flags(&self, reader: FlagReader) {
        if self.flags.set(reader).is_err() {
            tracing::warn!("the event hub's flag reader is already attached");
        }
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

    /// Prunes the log: entries older than a queue's lifetime, beyond `MAX_LOG_EVENTS`,
    /// or already read by every queue.
    pub(super) fn prune_log(&self, now: i64) {
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
