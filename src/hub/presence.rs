//! Presence: one realm's soft state of who is online, beside its event hub.
//!
//! A ping (`POST /users/me/presence`) never reaches the realm actor and never waits for
//! a disk: it authenticates against the published version on the HTTP worker, then
//! updates the user's entry here under a lock held for a map lookup (and, when the
//! entry changes, a move in the index of changes). Zulip's rules
//! (`realm::presence::ping_effect`) make most pings change nothing: a user's entry moves
//! at most once per `PRESENCE_UPDATE_MIN_FREQ_SECS`, and a ping that changes nothing
//! publishes nothing.
//!
//! Every change takes the next number of the realm's presence sequence
//! (`last_update_id`), so `last_update_id` polls answer only what changed since, from
//! an index by update id, without scanning the realm. Full listings (`GET
//! /realm/presence`, a first poll, `/register`) are rendered once per state of the
//! sequence and the realm and served from that cache until either moves.
//!
//! What changed since a poll's `last_update_id` is, in a busy realm, most of the realm
//! (every present user's entry moves about once a minute, and clients poll once a
//! minute), so those answers share their encoding too: the index of changes is cut
//! into chunks of `CHUNK` update ids, each chunk's entries are rendered once (against
//! the realm's users as they were) and kept until an entry leaves or joins the chunk
//! or the users change, and an answer is the chunks' bytes joined, with only the
//! chunks that moved rendered again.
//!
//! Answers to clients that take gzip send compressed copies of the same shared bytes
//! (`crate::gzip`): a cached full listing and each rendered chunk keep, beside their
//! text, their compressed piece, made by the first answer that needs it, so a thousand
//! clients do not compress the same listing a thousand times.
//!
//! Entries are persisted coalesced: changed entries are written to the realm's
//! presence tree (`storage::presence`) by a background flush at most once a minute,
//! and at a clean shutdown. A `kill -9` loses at most the last minute of presence,
//! which clients refresh with their next ping.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;

use crate::gzip::{self, Piece};
use crate::locks::lock;
use crate::realm::presence::{
    legacy_status, ping_effect, PresenceEntry, PresenceStatus, DEFAULT_HISTORY_LIMIT_DAYS,
    OFFLINE_THRESHOLD_SECS,
};
use crate::realm::{Clock, Realm, UserId};
use crate::storage::presence::PresenceTree;
use crate::storage::StorageError;

/// Update ids per rendered chunk of the index of changes (see the module doc).
const CHUNK: u64 = 256;

/// Changed entries are written at most this often (Zulip's presence is at most a
/// minute stale anyway).
pub const FLUSH_INTERVAL_MS: i64 = 60_000;
const DAY_SECS: i64 = 24 * 60 * 60;

/// Realm presences made in this process: their flushes' phases (`RealmPresence::new`).
static REALMS_MADE: AtomicU64 = AtomicU64::new(0);
/// The golden ratio's fraction: successive multiples of it, modulo 1, spread evenly.
const GOLDEN_FRACTION: f64 = 0.618_033_988_749_895;

/// How far into its flush interval the `n`th realm presence of the process starts.
fn flush_phase_ms(n: u64) -> i64 {
    ((n as f64 * GOLDEN_FRACTION).fract() * FLUSH_INTERVAL_MS as f64) as i64
}

/// What a listing asks for (`POST /users/me/presence`, `GET /realm/presence`,
/// `/register`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PresenceQuery {
    /// The modern format, keyed by user id (else legacy, keyed by API email).
    pub slim: bool,
    /// Only entries changed after this update id (`last_update_id`); those answers
    /// are always in the modern format (Zulip: `last_update_id` implies
    /// `slim_presence`).
    pub last_update_id: Option<i64>,
    /// How far back (days) a listing without `last_update_id > 0` reaches.
    pub history_limit_days: Option<i64>,
}

/// A rendered listing: the `presences` object as JSON text (shared, not copied, by the
/// answers that send it), and `presence_last_update_id`.
#[derive(Clone)]
pub struct Listing {
    pub presences: Bytes,
    pub last_update_id: i64,
    /// What the compressed `presences` is made of.
    source: Source,
}

/// Where a listing's compressed copy comes from.
#[derive(Clone)]
enum Source {
    /// Rendered for this answer alone: compressed for it.
    Own,
    /// A cached full listing: its piece, compressed once.
    Cached(Arc<Cached>),
    /// Chunks of the index of changes: `{`, their pieces (each compressed once) joined
    /// by commas, `}`.
    Chunks(Vec<Arc<Chunk>>),
}

impl std::fmt::Debug for Listing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let source = match &self.source {
            Source::Own => "own",
            Source::Cached(_) => "cached",
            Source::Chunks(_) => "chunks",
        };
        f.debug_struct("Listing")
            .field("presences", &self.presences.len())
            .field("last_update_id", &self.last_update_id)
            .field("source", &source)
            .finish()
    }
}

/// Text of this size or less is compressed for each answer that sends it, and a shared
/// piece of it is compressed at the per-answer level (see `shared_piece`).
const SMALL_TEXT: usize = 16 * 1024;

/// A realm with at most this many presence entries has its listings rendered on the
/// HTTP worker: a few hundred rows render and compress in tens of microseconds, less
/// than a hand-off to the blocking pool costs.
pub const INLINE_ENTRIES: usize = CHUNK as usize;

/// A shared piece of `text`. A small one is compressed at the per-answer level: in a
/// small realm the newest chunks and the full listing change with nearly every ping,
/// so their pieces are sent about as often as they are made, and level 6 costs twice
/// level 1 there for a fifth fewer bytes. A large one (a big realm's full listing,
/// served to many answers between changes) is compressed at the shared level.
fn shared_piece(text: &[u8]) -> Piece {
    let level = if text.len() <= SMALL_TEXT {
        gzip::per_answer_level()
    } else {
        gzip::shared_level()
    };
    Piece::new(text, level)
}

impl Listing {
    /// Whether `gzip_pieces` costs no more than a few small compressions (else run it
    /// off the HTTP worker).
    pub fn gzip_ready(&self) -> bool {
        match &self.source {
            Source::Own => self.presences.len() <= SMALL_TEXT,
            Source::Cached(c) => c.gz.get().is_some() || c.listing.presences.len() <= SMALL_TEXT,
            Source::Chunks(chunks) => chunks
                .iter()
                .all(|c| c.gz.get().is_some() || c.bytes.len() <= SMALL_TEXT),
        }
    }

    /// `presences` as gzip pieces, in order: shared ones are compressed by the first
    /// answer that asks and kept.
    pub fn gzip_pieces(&self) -> Vec<Piece> {
        match &self.source {
            Source::Own => vec![Piece::new(&self.presences, gzip::per_answer_level())],
            Source::Cached(c) => vec![c
                .gz
                .get_or_init(|| shared_piece(&c.listing.presences))
                .clone()],
            Source::Chunks(chunks) => {
                let mut pieces = Vec::with_capacity(chunks.len() * 2 + 1);
                pieces.push(Piece::stored(b"{"));
                let mut first = true;
                for chunk in chunks.iter().filter(|c| !c.bytes.is_empty()) {
                    if !first {
                        pieces.push(Piece::stored(b","));
                    }
                    first = false;
                    pieces.push(chunk.piece());
                }
                pieces.push(Piece::stored(b"}"));
                pieces
            }
        }
    }
}

/// What a ping did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PingOutcome {
    /// The user's entry after the ping, when the ping changed it.
    pub changed: Option<PresenceEntry>,
    /// Whether other users' clients should hear of it at once (a new entry, or an
    /// `active` ping after a silence).
    pub newsworthy: bool,
}

struct State {
    /// Every user's entry, by id.
    entries: BTreeMap<UserId, PresenceEntry>,
    /// `update_id` -> user: the entries in the order they last changed.
    by_update: BTreeMap<u64, UserId>,
    /// The realm's presence sequence: the update id of the last change.
    last_update_id: u64,
    /// Users whose entry changed since the last flush.
    dirty: HashSet<UserId>,
    /// The chunks of `by_update` that hold entries: chunk number (update id ÷
    /// `CHUNK`) -> when it last changed and its rendering.
    chunks: BTreeMap<u64, ChunkSlot>,
}

/// One chunk of the index of changes.
#[derive(Default)]
struct ChunkSlot {
    /// The sequence number at the chunk's last change (an entry left or joined it).
    touched: u64,
    /// Its entries rendered (modern format), while nothing left or joined it.
    render: Option<Arc<Chunk>>,
}

/// A chunk's entries, rendered.
struct Chunk {
    /// The realm's users the chunk was rendered against (compared by identity: any
    /// change to any user renders it again).
    users: imbl::OrdMap<UserId, Arc<crate::realm::User>>,
    /// `"id":{...}` entries joined by commas; empty when none is listed.
    bytes: Bytes,
    /// The largest update id listed.
    max_id: Option<u64>,
    /// `bytes` compressed, once an answer asked for it.
    gz: OnceLock<Piece>,
}

impl Chunk {
    fn piece(&self) -> Piece {
        self.gz.get_or_init(|| shared_piece(&self.bytes)).clone()
    }
}

/// A part of a `last_update_id` answer: a chunk rendered before, or rows to render.
enum Part {
    Ready(Arc<Chunk>),
    Rows {
        /// The chunk, when the rows are all of it (its rendering is then kept).
        whole: Option<u64>,
        rows: Vec<(UserId, PresenceEntry)>,
    },
}

/// A full listing, valid while the sequence, the realm version and the time window
/// stay as they were.
struct Cached {
    update_id: u64,
    /// Held, so that the pointer compared cannot be reused by another version.
    realm: Arc<Realm>,
    /// The first second at which an included entry falls out of the 14-day window.
    valid_until: i64,
    listing: Listing,
    /// The largest update id listed (`None`: empty).
    max_id: Option<u64>,
    /// `listing.presences` compressed, once an answer asked for it.
    gz: OnceLock<Piece>,
}

/// One realm's presence (see the module doc). Every update under its locks is a few
/// assignments that leave the data consistent, so a poisoned lock is recovered
/// (`crate::locks`).
pub struct RealmPresence {
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    /// Full listings: `[legacy, modern]`.
    cache: Mutex<[Option<Arc<Cached>>; 2]>,
    /// Where changed entries are written; `None` for a realm kept in memory only.
    tree: Mutex<Option<PresenceTree>>,
    last_flush_ms: AtomicI64,
    flushing: AtomicBool,
    /// Entries written so far (tests, tooling).
    written: AtomicU64,
}

impl RealmPresence {
    /// An empty presence, in memory until `attach`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        let now = clock.now_ms();
        // The realms of a node flush at phases spread over the interval (each one's
        // number times the golden ratio, modulo 1), not all in the same second: every
        // flush ends in a checkpoint of the node's database, and a hundred at once hold
        // up the commits of message writes queued behind them.
        let phase = flush_phase_ms(REALMS_MADE.fetch_add(1, Ordering::Relaxed));
        RealmPresence {
            clock,
            state: Mutex::new(State {
                entries: BTreeMap::new(),
                by_update: BTreeMap::new(),
                last_update_id: 0,
                dirty: HashSet::new(),
                chunks: BTreeMap::new(),
            }),
            cache: Mutex::new([None, None]),
            tree: Mutex::new(None),
            last_flush_ms: AtomicI64::new(now - phase),
            flushing: AtomicBool::new(false),
            written: AtomicU64::new(0),
        }
    }

    /// Now, in milliseconds, on the realm's clock.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Takes the entries loaded from `tree` and writes later changes there.
    pub fn attach(&self, tree: PresenceTree, entries: Vec<(UserId, PresenceEntry)>) {
        let mut st = lock(&self.state);
        for (user, entry) in entries {
            st.last_update_id = st.last_update_id.max(entry.update_id);
            st.by_update.insert(entry.update_id, user);
            st.entries.insert(user, entry);
            st.chunks.entry(entry.update_id / CHUNK).or_default();
        }
        drop(st);
        *lock(&self.tree) = Some(tree);
    }

    /// Stores the new times of `user`'s entry under the next update id.
    fn record(
        st: &mut State,
        user: UserId,
        last_active: Option<i64>,
        last_connected: i64,
    ) -> PresenceEntry {
        st.last_update_id += 1;
        let entry = PresenceEntry {
            last_active,
            last_connected,
            update_id: st.last_update_id,
        };
        let now = st.last_update_id;
        if let Some(old) = st.entries.insert(user, entry) {
            st.by_update.remove(&old.update_id);
            let chunk = old.update_id / CHUNK;
            let (from, to) = (chunk * CHUNK, chunk * CHUNK + CHUNK);
            if st.by_update.range(from..to).next().is_none() {
                st.chunks.remove(&chunk);
            } else if let Some(slot) = st.chunks.get_mut(&chunk) {
                *slot = ChunkSlot {
                    touched: now,
                    render: None,
                };
            }
        }
        st.by_update.insert(entry.update_id, user);
        st.chunks.insert(
            entry.update_id / CHUNK,
            ChunkSlot {
                touched: now,
                render: None,
            },
        );
        st.dirty.insert(user);
        entry
    }

    /// A ping of `user` at `now` (UNIX seconds), for a user whose presence is enabled.
    pub fn ping(&self, user: UserId, now: i64, status: PresenceStatus) -> PingOutcome {
        crate::metrics::PRESENCE_PINGS.inc();
        let mut st = lock(&self.state);
        let effect = ping_effect(st.entries.get(&user), now, status);
        let changed = effect
            .changed
            .map(|(active, connected)| Self::record(&mut st, user, active, connected));
        PingOutcome {
            changed,
            newsworthy: effect.newsworthy(),
        }
    }

    /// What Zulip's `do_change_user_setting` does to presence when `presence_enabled`
    /// changes, at `now`: enabled, an `active` ping; disabled, the entry is replaced by
    /// an `idle` one old enough to show the user offline. Returns the entry after it,
    /// for the event that is always sent.
    pub fn presence_setting_changed(&self, user: UserId, enabled: bool, now: i64) -> PresenceEntry {
        let mut st = lock(&self.state);
        if enabled {
            let effect = ping_effect(st.entries.get(&user), now, PresenceStatus::Active);
            match (effect.changed, st.entries.get(&user)) {
                (Some((active, connected)), _) => Self::record(&mut st, user, active, connected),
                (None, Some(entry)) => *entry,
                (None, None) => Self::record(&mut st, user, Some(now), now),
            }
        } else {
            let at = now - (OFFLINE_THRESHOLD_SECS + 120);
            Self::record(&mut st, user, None, at)
        }
    }

    /// One user's entry.
    pub fn get(&self, user: UserId) -> Option<PresenceEntry> {
        lock(&self.state).entries.get(&user).copied()
    }

    /// Whether a listing of this realm is cheap enough to render on the HTTP worker (at
    /// most `INLINE_ENTRIES` entries).
    pub fn renders_inline(&self) -> bool {
        lock(&self.state).entries.len() <= INLINE_ENTRIES
    }

    /// The realm's presence sequence (0: nothing ever changed).
    pub fn last_update_id(&self) -> u64 {
        lock(&self.state).last_update_id
    }

    /// Entries written to disk so far.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::SeqCst)
    }

    /// The listing a query asks for when it is a cached full listing (no rendering).
    pub fn cached(&self, realm: &Arc<Realm>, q: PresenceQuery, now: i64) -> Option<Listing> {
        if q.last_update_id.is_some_and(|id| id > 0) || q.history_limit_days.is_some() {
            return None;
        }
        let update_id = self.last_update_id();
        let cached = lock(&self.cache)[usize::from(q.slim)].clone().filter(|c| {
            c.update_id == update_id && Arc::ptr_eq(&c.realm, realm) && now < c.valid_until
        })?;
        Some(Self::answer(&cached, q))
    }

    /// A cached listing's answer to `q` (its `presence_last_update_id`).
    fn answer(cached: &Arc<Cached>, q: PresenceQuery) -> Listing {
        let mut listing = cached.listing.clone();
        listing.source = Source::Cached(cached.clone());
        listing.last_update_id = match (cached.max_id, q.last_update_id) {
            (Some(max), _) => max as i64,
            (None, Some(client)) => client,
            (None, None) => -1,
        };
        listing
    }

    /// The listing a query asks for, rendered against `realm` (active humans only) at
    /// `now` (UNIX seconds): Zulip's `get_presence_dict_by_realm`. Full listings come
    /// from the cache when nothing moved since they were rendered.
    pub fn listing(&self, realm: &Arc<Realm>, q: PresenceQuery, now: i64) -> Listing {
        let since = q.last_update_id.filter(|id| *id > 0);
        if since.is_some() || q.history_limit_days.is_some() {
            return self.render(realm, q, now);
        }
        if let Some(hit) = self.cached(realm, q, now) {
            return hit;
        }
        let cached = Arc::new(self.render_full(realm, q.slim, now));
        let mut cache = lock(&self.cache);
        let slot = &mut cache[usize::from(q.slim)];
        // A concurrent render of a newer state wins.
        if slot
            .as_ref()
            .is_none_or(|c| c.update_id <= cached.update_id)
        {
            *slot = Some(cached.clone());
        }
        Self::answer(&cached, q)
    }

    /// What changed since `since` (> 0), in the modern format: the chunks of the index
    /// of changes, rendered ones shared, the others rendered (outside the lock) and
    /// kept for the next answers.
    fn render_since(&self, realm: &Realm, since: u64, client: i64) -> Listing {
        let rows_of = |st: &State, from: u64, to: u64| -> Vec<(UserId, PresenceEntry)> {
            st.by_update
                .range(from..to)
                .filter_map(|(_, user)| Some((*user, *st.entries.get(user)?)))
                .collect()
        };
        let (parts, seen) = {
            let st = lock(&self.state);
            let first = since + 1;
            let mut parts = Vec::new();
            let mut next_chunk = first / CHUNK;
            if !first.is_multiple_of(CHUNK) {
                parts.push(Part::Rows {
                    whole: None,
                    rows: rows_of(&st, first, next_chunk * CHUNK + CHUNK),
                });
                next_chunk += 1;
            }
            for (chunk, slot) in st.chunks.range(next_chunk..) {
                match &slot.render {
                    Some(r) if r.users.ptr_eq(&realm.users) => parts.push(Part::Ready(r.clone())),
                    _ => parts.push(Part::Rows {
                        whole: Some(*chunk),
                        rows: rows_of(&st, chunk * CHUNK, chunk * CHUNK + CHUNK),
                    }),
                }
            }
            (parts, st.last_update_id)
        };
        let mut rendered = Vec::with_capacity(parts.len());
        let mut keep = Vec::new();
        for part in parts {
            match part {
                Part::Ready(chunk) => rendered.push(chunk),
                Part::Rows { whole, rows } => {
                    let (bytes, max_id) = render_modern(realm, &rows);
                    let chunk = Arc::new(Chunk {
                        users: realm.users.clone(),
                        bytes: Bytes::from(bytes),
                        max_id,
                        gz: OnceLock::new(),
                    });
                    if let Some(n) = whole {
                        keep.push((n, chunk.clone()));
                    }
                    rendered.push(chunk);
                }
            }
        }
        if !keep.is_empty() {
            let mut st = lock(&self.state);
            for (n, chunk) in keep {
                // Kept only if nothing left or joined the chunk since its rows were read.
                if let Some(slot) = st.chunks.get_mut(&n).filter(|s| s.touched <= seen) {
                    slot.render = Some(chunk);
                }
            }
        }
        let len: usize = rendered.iter().map(|c| c.bytes.len() + 1).sum();
        let mut out = Vec::with_capacity(len + 2);
        out.push(b'{');
        for chunk in rendered.iter().filter(|c| !c.bytes.is_empty()) {
            if out.len() > 1 {
                out.push(b',');
            }
            out.extend_from_slice(&chunk.bytes);
        }
        out.push(b'}');
        let max_id = rendered.iter().filter_map(|c| c.max_id).max();
        Listing {
            presences: Bytes::from(out),
            last_update_id: max_id.map_or(client, |m| m as i64),
            source: Source::Chunks(rendered),
        }
    }

    /// Copies the entries a query selects (under the lock), then renders them.
    fn render(&self, realm: &Realm, q: PresenceQuery, now: i64) -> Listing {
        let since = q.last_update_id.filter(|id| *id > 0);
        if let (Some(since), false) = (since, q.history_limit_days == Some(0)) {
            return self.render_since(realm, since as u64, since);
        }
        let days = q.history_limit_days.unwrap_or(DEFAULT_HISTORY_LIMIT_DAYS);
        let mut rows: Vec<(UserId, PresenceEntry)> = if q.history_limit_days == Some(0) {
            // The client wants no presence data at all.
            Vec::new()
        } else {
            let from = now.saturating_sub(days.saturating_mul(DAY_SECS));
            lock(&self.state)
                .entries
                .iter()
                .filter(|(_, e)| e.last_connected >= from)
                .map(|(u, e)| (*u, *e))
                .collect()
        };
        rows.sort_unstable_by_key(|(u, _)| *u);
        let (presences, max_id, _) = render_rows(realm, &rows, q.slim);
        let last_update_id = match (max_id, q.last_update_id) {
            (Some(max), _) => max as i64,
            (None, Some(client)) => client,
            (None, None) => -1,
        };
        Listing {
            presences: Bytes::from(presences),
            last_update_id,
            source: Source::Own,
        }
    }

    /// Renders the default full listing (the last 14 days) for the cache.
    fn render_full(&self, realm: &Arc<Realm>, slim: bool, now: i64) -> Cached {
        let from = now - DEFAULT_HISTORY_LIMIT_DAYS * DAY_SECS;
        let (rows, update_id) = {
            let st = lock(&self.state);
            let rows: Vec<(UserId, PresenceEntry)> = st
                .entries
                .iter()
                .filter(|(_, e)| e.last_connected >= from)
                .map(|(u, e)| (*u, *e))
                .collect();
            (rows, st.last_update_id)
        };
        let (presences, max_id, oldest) = render_rows(realm, &rows, slim);
        let valid_until =
            oldest.map_or(i64::MAX, |t| t + DEFAULT_HISTORY_LIMIT_DAYS * DAY_SECS + 1);
        Cached {
            update_id,
            realm: realm.clone(),
            valid_until,
            listing: Listing {
                presences: Bytes::from(presences),
                last_update_id: -1,
                source: Source::Own,
            },
            max_id,
            gz: OnceLock::new(),
        }
    }

    /// Periodic work (the server's one-second ticker): starts a background flush when
    /// the last one is `FLUSH_INTERVAL_MS` old and something changed.
    pub fn tick(self: &Arc<Self>) {
        let now = self.clock.now_ms();
        if now - self.last_flush_ms.load(Ordering::SeqCst) < FLUSH_INTERVAL_MS {
            return;
        }
        if lock(&self.state).dirty.is_empty() || lock(&self.tree).is_none() {
            return;
        }
        if self.flushing.swap(true, Ordering::SeqCst) {
            return;
        }
        self.last_flush_ms.store(now, Ordering::SeqCst);
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("hearth-presence".into())
            .spawn(move || {
                if let Err(e) = me.flush() {
                    tracing::warn!("presence not saved (tried again in a minute): {e}");
                }
                me.flushing.store(false, Ordering::SeqCst);
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start a presence flush: {e}");
            self.flushing.store(false, Ordering::SeqCst);
        }
    }

    /// Writes every entry changed since the last flush (blocking I/O). On failure they
    /// stay to be written by the next flush. Returns how many were written.
    pub fn flush(&self) -> Result<usize, StorageError> {
        let Some(tree) = lock(&self.tree).clone() else {
            return Ok(0);
        };
        let batch: Vec<(UserId, PresenceEntry)> = {
            let mut st = lock(&self.state);
            let dirty: Vec<UserId> = st.dirty.drain().collect();
            dirty
                .into_iter()
                .filter_map(|u| Some((u, *st.entries.get(&u)?)))
                .collect()
        };
        if batch.is_empty() {
            return Ok(0);
        }
        if let Err(e) = tree.write(&batch) {
            lock(&self.state)
                .dirty
                .extend(batch.iter().map(|(u, _)| *u));
            return Err(e);
        }
        self.written.fetch_add(batch.len() as u64, Ordering::SeqCst);
        Ok(batch.len())
    }
}

/// Renders rows in the modern format as `"id":{...}` entries joined by commas
/// (active humans only), with the largest update id listed.
fn render_modern(realm: &Realm, rows: &[(UserId, PresenceEntry)]) -> (Vec<u8>, Option<u64>) {
    let mut out: Vec<u8> = Vec::with_capacity(rows.len() * 64);
    let mut max_id = None::<u64>;
    let mut n = itoa::Buffer::new();
    for (user, e) in rows {
        let Some(u) = realm.presence_listed(*user) else {
            continue;
        };
        max_id = Some(max_id.map_or(e.update_id, |m| m.max(e.update_id)));
        if !out.is_empty() {
            out.push(b',');
        }
        write_modern(&mut out, u, e, &mut n);
    }
    (out, max_id)
}

/// One user's modern entry: `"id":{"active_timestamp":..,"idle_timestamp":..}`.
fn write_modern(
    out: &mut Vec<u8>,
    u: &crate::realm::User,
    e: &PresenceEntry,
    n: &mut itoa::Buffer,
) {
    out.push(b'"');
    out.extend_from_slice(n.format(u.id).as_bytes());
    out.extend_from_slice(b"\":{\"active_timestamp\":");
    out.extend_from_slice(n.format(e.last_active.unwrap_or(u.date_joined)).as_bytes());
    out.extend_from_slice(b",\"idle_timestamp\":");
    out.extend_from_slice(n.format(e.last_connected).as_bytes());
    out.push(b'}');
}

/// Renders rows (sorted by user) as the `presences` object: legacy entries keyed by API
/// email, or modern ones keyed by id; active humans only. Returns the JSON text, the
/// largest update id listed and the oldest `last_connected` listed.
fn render_rows(
    realm: &Realm,
    rows: &[(UserId, PresenceEntry)],
    slim: bool,
) -> (Vec<u8>, Option<u64>, Option<i64>) {
    use std::io::Write;
    let mut out: Vec<u8> = Vec::with_capacity(16 + rows.len() * if slim { 56 } else { 200 });
    let (mut max_id, mut oldest) = (None::<u64>, None::<i64>);
    let mut n = itoa::Buffer::new();
    out.push(b'{');
    let mut first = true;
    for (user, e) in rows {
        let Some(u) = realm.presence_listed(*user) else {
            continue;
        };
        max_id = Some(max_id.map_or(e.update_id, |m| m.max(e.update_id)));
        oldest = Some(oldest.map_or(e.last_connected, |o| o.min(e.last_connected)));
        if !first {
            out.push(b',');
        }
        first = false;
        // Writing to a Vec cannot fail.
        if slim {
            write_modern(&mut out, u, e, &mut n);
        } else {
            let _ = serde_json::to_writer(&mut out, &realm.api_email(u));
            let (status, ts) = legacy_status(e, u.date_joined);
            let _ = write!(
                out,
                ":{{\"aggregated\":{{\"client\":\"website\",\"status\":\"{status}\",\"timestamp\":{ts}}},\"website\":{{\"client\":\"website\",\"status\":\"{status}\",\"timestamp\":{ts},\"pushable\":false}}}}"
            );
        }
    }
    out.push(b'}');
    (out, max_id, oldest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realm::dev::testing;
    use crate::realm::{Cx, ManualClock};
    use crate::storage::{DurabilityMode, Store};
    use serde_json::Value;

    fn dev_realm() -> Arc<Realm> {
        Arc::new(testing::dev_realm(&mut Cx::seeded(1_700_000_000_000, 1)))
    }

    fn id(realm: &Realm, email: &str) -> UserId {
        realm.user_by_delivery_email(email).expect("user").id
    }

    fn json(l: &Listing) -> Value {
        serde_json::from_slice(&l.presences).expect("json")
    }

    #[test]
    fn listings_follow_the_sequence() {
        let clock = ManualClock::new(1_800_000_000_000);
        let p = RealmPresence::new(Arc::new(clock.clone()));
        let realm = dev_realm();
        let (hamlet, iago) = (id(&realm, "hamlet@zulip.com"), id(&realm, "iago@zulip.com"));
        let now = 1_800_000_000;
        let full = p.listing(&realm, PresenceQuery::default(), now);
        assert_eq!(json(&full), serde_json::json!({}));
        assert_eq!(full.last_update_id, -1);

        assert!(p.ping(hamlet, now, PresenceStatus::Active).newsworthy);
        let again = p.ping(hamlet, now + 30, PresenceStatus::Active);
        assert_eq!(
            again,
            PingOutcome {
                changed: None,
                newsworthy: false
            }
        );
        p.ping(iago, now + 40, PresenceStatus::Idle);

        let legacy = p.listing(&realm, PresenceQuery::default(), now + 40);
        assert_eq!(legacy.last_update_id, 2);
        let l = json(&legacy);
        let hamlet_email = realm.api_email(realm.user(hamlet).expect("hamlet"));
        assert_eq!(l[&hamlet_email]["aggregated"]["status"], "active");
        assert_eq!(l[&hamlet_email]["website"]["pushable"], false);
        // Served from the cache until the sequence moves.
        let again = p.listing(&realm, PresenceQuery::default(), now + 41);
        assert_eq!(again.presences.as_ptr(), legacy.presences.as_ptr());

        let modern = PresenceQuery {
            slim: true,
            last_update_id: Some(1),
            history_limit_days: None,
        };
        let since = p.listing(&realm, modern, now + 40);
        assert_eq!(
            json(&since),
            serde_json::json!({iago.to_string(): {"active_timestamp": realm.user(iago).expect("iago").date_joined, "idle_timestamp": now + 40}})
        );
        assert_eq!(since.last_update_id, 2);
        let none = p.listing(
            &realm,
            PresenceQuery {
                last_update_id: Some(2),
                ..modern
            },
            now + 40,
        );
        assert_eq!(json(&none), serde_json::json!({}));
        assert_eq!(none.last_update_id, 2);
        let zero_days = PresenceQuery {
            last_update_id: None,
            history_limit_days: Some(0),
            slim: true,
        };
        assert_eq!(
            json(&p.listing(&realm, zero_days, now)),
            serde_json::json!({})
        );

        // Entries older than 14 days drop out of the default listing.
        let later = now + 14 * DAY_SECS + 35;
        let old = json(&p.listing(&realm, PresenceQuery::default(), later));
        assert_eq!(old.as_object().map(|m| m.len()), Some(1), "{old}");
    }

    #[test]
    fn a_small_realm_renders_inline_and_its_small_pieces_at_the_fast_level() {
        let p = RealmPresence::new(Arc::new(ManualClock::new(1_800_000_000_000)));
        let now = 1_800_000_000;
        for user in 0..INLINE_ENTRIES as UserId {
            p.ping(user + 1_000_000, now, PresenceStatus::Active);
        }
        assert!(p.renders_inline());
        p.ping(2_000_000, now, PresenceStatus::Active);
        assert!(
            !p.renders_inline(),
            "one entry more goes to the blocking pool"
        );

        // A small shared piece costs what a per-answer one does, and decompresses to
        // its text; a large one is compressed harder.
        let entries = |n: u64| {
            (0..n)
                .map(|i| {
                    format!(
                        r#""{}":{{"active_timestamp":{},"idle_timestamp":{}}}"#,
                        1000 + i * 7,
                        1_800_000_000 + i * 13 % 61,
                        1_800_000_000 + i * 17 % 59
                    )
                })
                .collect::<Vec<_>>()
                .join(",")
                .into_bytes()
        };
        let (small, large) = (entries(100), entries(400));
        assert!(small.len() <= SMALL_TEXT && large.len() > SMALL_TEXT);
        let sized = |text: &[u8], level| {
            let mut j = gzip::Joined::new();
            j.push(&Piece::new(text, level));
            j.finish().iter().map(Bytes::len).sum::<usize>()
        };
        let joined_len = |piece: &Piece| {
            let mut j = gzip::Joined::new();
            j.push(piece);
            let parts = j.finish();
            let body: Vec<u8> = parts.iter().flat_map(|b| b.iter().copied()).collect();
            let mut text = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut text)
                .expect("gzip");
            (body.len(), text)
        };
        // The two levels differ on both texts, so the sizes tell which was used.
        for text in [&small, &large] {
            assert_ne!(
                sized(text, gzip::per_answer_level()),
                sized(text, gzip::shared_level())
            );
        }
        let (len, text) = joined_len(&shared_piece(&small));
        assert_eq!(text, small);
        assert_eq!(len, sized(&small, gzip::per_answer_level()));
        let (len, text) = joined_len(&shared_piece(&large));
        assert_eq!(text, large);
        assert_eq!(len, sized(&large, gzip::shared_level()));
    }

    #[test]
    fn the_realms_of_a_node_flush_at_phases_spread_over_the_interval() {
        // 91 realms (a node of the 100,000 run): no gap between their phases is over 3 s
        // (one phase for all would leave a gap of the whole interval).
        let mut phases: Vec<i64> = (0..91).map(flush_phase_ms).collect();
        phases.sort_unstable();
        assert!(phases.iter().all(|p| (0..FLUSH_INTERVAL_MS).contains(p)));
        let widest = phases
            .windows(2)
            .map(|w| w[1] - w[0])
            .chain([phases[0] + FLUSH_INTERVAL_MS - phases[90]])
            .max();
        assert!(widest.is_some_and(|g| g <= 3_000), "{widest:?} {phases:?}");
        // A new presence's first flush is due within one interval.
        let clock = ManualClock::new(1_800_000_000_000);
        let p = RealmPresence::new(Arc::new(clock));
        let last = p.last_flush_ms.load(Ordering::SeqCst);
        assert!((1_800_000_000_000 - FLUSH_INTERVAL_MS + 1..=1_800_000_000_000).contains(&last));
    }

    #[test]
    fn bots_and_disabled_presence() {
        let clock = ManualClock::new(1_800_000_000_000);
        let p = RealmPresence::new(Arc::new(clock));
        let realm = dev_realm();
        let bot = id(&realm, "default-bot@zulip.com");
        p.ping(bot, 100, PresenceStatus::Active);
        assert_eq!(
            json(&p.listing(&realm, PresenceQuery::default(), 100)),
            serde_json::json!({})
        );
        let hamlet = id(&realm, "hamlet@zulip.com");
        p.ping(hamlet, 100, PresenceStatus::Active);
        let off = p.presence_setting_changed(hamlet, false, 1000);
        assert_eq!(off.last_active, None);
        assert_eq!(off.last_connected, 1000 - OFFLINE_THRESHOLD_SECS - 120);
        let on = p.presence_setting_changed(hamlet, true, 1000);
        assert_eq!((on.last_active, on.last_connected), (Some(1000), 1000));
    }

    /// `last_update_id` answers built from shared chunks equal the entries changed
    /// since, whatever moved in between, and follow changes to the users.
    #[test]
    fn answers_since_follow_every_change() {
        use rand::{Rng, SeedableRng};
        let clock = ManualClock::new(1_800_000_000_000);
        let p = RealmPresence::new(Arc::new(clock));
        let mut realm = dev_realm();
        let users: Vec<UserId> = realm
            .users
            .values()
            .filter(|u| !u.is_bot())
            .map(|u| u.id)
            .collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut now = 1_800_000_000;
        let expected = |p: &RealmPresence, realm: &Realm, since: u64| -> (Value, i64) {
            let st = lock(&p.state);
            let mut map = serde_json::Map::new();
            let mut max = None::<u64>;
            for (user, e) in st.entries.iter().filter(|(_, e)| e.update_id > since) {
                let Some(u) = realm.presence_listed(*user) else {
                    continue;
                };
                max = max.max(Some(e.update_id));
                map.insert(
                    user.to_string(),
                    serde_json::json!({"active_timestamp": e.last_active.unwrap_or(u.date_joined), "idle_timestamp": e.last_connected}),
                );
            }
            (Value::Object(map), max.map_or(since as i64, |m| m as i64))
        };
        for round in 0..400 {
            // Many users move at each step (each move takes a new update id), so the
            // answers span many chunks.
            now += rng.gen_range(20..90);
            for _ in 0..rng.gen_range(1..users.len() * 4) {
                let user = users[rng.gen_range(0..users.len())];
                let status = if rng.gen_bool(0.5) {
                    PresenceStatus::Active
                } else {
                    PresenceStatus::Idle
                };
                p.ping(user, now + rng.gen_range(0..60), status);
            }
            if round % 50 == 49 {
                // A user deactivated: the users change, and every chunk renders again.
                let victim = users[rng.gen_range(0..users.len())];
                let mut next = (*realm).clone();
                if let Some(u) = next.users.get(&victim).cloned() {
                    let mut u = (*u).clone();
                    u.is_active = !u.is_active;
                    next.users.insert(victim, Arc::new(u));
                }
                realm = Arc::new(next);
            }
            let last = p.last_update_id();
            for _ in 0..4 {
                let since = rng.gen_range(1..=last.max(1));
                let q = PresenceQuery {
                    slim: true,
                    last_update_id: Some(since as i64),
                    history_limit_days: None,
                };
                let got = p.listing(&realm, q, now);
                let (want, want_id) = expected(&p, &realm, since);
                assert_eq!(json(&got), want, "round {round}, since {since}");
                // No user twice (a parser would keep one of them silently).
                let entries =
                    memchr::memmem::find_iter(&got.presences, b"active_timestamp").count();
                assert_eq!(Some(entries), want.as_object().map(|m| m.len()));
                assert_eq!(got.last_update_id, want_id, "round {round}, since {since}");
            }
        }
        assert!(
            p.last_update_id() > 10 * CHUNK,
            "the answers spanned chunks"
        );
    }

    #[test]
    fn flushes_are_coalesced_and_reload() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(dir.path(), DurabilityMode::Never).expect("store");
        let clock = ManualClock::new(1_800_000_000_000);
        let p = Arc::new(RealmPresence::new(Arc::new(clock.clone())));
        p.attach(store.presence("zulip"), Vec::new());
        for i in 0..10 {
            p.ping(7, 1_800_000_000 + i * 60, PresenceStatus::Active);
        }
        assert_eq!(p.last_update_id(), 10);
        assert_eq!(p.flush().expect("flush"), 1, "one write for ten changes");
        assert_eq!(p.flush().expect("flush"), 0);
        let loaded = store.presence("zulip").load().expect("load");
        assert_eq!(loaded, vec![(7, p.get(7).expect("entry"))]);
        let again = RealmPresence::new(Arc::new(clock));
        again.attach(store.presence("zulip"), loaded);
        assert_eq!(again.last_update_id(), 10);
        assert_eq!(again.get(7), p.get(7));
    }
}
