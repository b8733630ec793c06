//! `RealmActor`: the one writer of a realm's state. It runs each write's rule against
//! its working state, appends the decided changes to the WAL, applies them, and stages
//! the resulting immutable versions with the realm's `EventHub`, which makes them
//! visible once they are durable. It never blocks on I/O other than the WAL append,
//! never awaits inside `handle`, and does no work that grows with the realm: callers
//! authenticate and read on the HTTP workers against the published version, events are
//! rendered when a decision is released, and snapshots are encoded and written on a
//! background thread from an immutable version.
//!
//! After a storage fault (the flusher could not make the WAL durable), the actor is told
//! through the failure watch of `Durability` (or notices on its next call): it drops
//! every staged decision, goes back to the published version (exactly the durable
//! state), and hands that state to its store (`RealmStore::reset`), which the flusher
//! writes once the disk accepts writes again. Decisions answered with a 503 thus never
//! become visible, before or after a restart.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;

use crate::error::{ApiError, ApiResult};
use crate::hub::{EventHub, Step};
use crate::realm::messages::fetch::MessageRows;
use crate::realm::{
    Change, Clock, Cx, Decided, DurabilityClass, Realm, Rule, SystemRule, User, UserId,
};
use crate::storage::messages::{MessageStore, Projection};
use crate::storage::{Durability, RealmStore, SnapshotJob, Store};

/// One write sent to a realm: the caller (authenticated on the HTTP worker), the request
/// parsed there, and the rule that decides it (`Realm::decide_*`).
pub struct Write<Q, A> {
    pub me: UserId,
    pub req: Q,
    pub decide: Rule<Q, A>,
}

/// The actor's answer to a `Write`: the durability ticket to await (none when nothing
/// durable was written), and the rule's answer.
pub struct Committed<A> {
    pub ticket: Option<u64>,
    pub answer: A,
}

impl<Q: Send + 'static, A: Send + 'static> Message for Write<Q, A> {
    type Result = ApiResult<Committed<A>>;
}

/// A write the server makes on its own behalf (the upload sweep): no caller.
pub struct SystemWrite<Q, A> {
    pub req: Q,
    pub decide: SystemRule<Q, A>,
}

impl<Q: Send + 'static, A: Send + 'static> Message for SystemWrite<Q, A> {
    type Result = ApiResult<Committed<A>>;
}

/// Asks the actor for a snapshot job of its current state (shutdown); the caller runs it.
/// The state is shared with the version the last commit staged, not copied.
pub struct TakeSnapshot;

impl Message for TakeSnapshot {
    type Result = Result<(SnapshotJob, Arc<Realm>), String>;
}

/// Delivers the scheduled messages that are due (the server's ticker sends it every
/// second; tests send it after moving their clock). Answers how many changes it made.
pub struct DeliverScheduled;

impl Message for DeliverScheduled {
    type Result = usize;
}

/// The point an online export of the realm starts from: the last WAL record appended
/// and the working state after it (every record up to it applied, its message rows
/// projected), shared, not copied: the version the last commit staged for the hub,
/// which becomes the published one once that record is durable. The caller makes the
/// record durable before it relies on it (`archive::export_running`).
pub struct ExportPoint;

impl Message for ExportPoint {
    type Result = Result<(u64, Arc<Realm>), String>;
}

/// Puts the realm into a write freeze (`true`) or ends it (`false`): while frozen every
/// write the actor handles, also those already queued in its mailbox, is refused with
/// `ApiError::frozen` and changes nothing. Answers the last WAL record appended: every
/// write acknowledged before the freeze, or ever during it, is at or below it (the
/// caller makes it durable before it reports the freeze done).
pub struct Freeze(pub bool);

impl Message for Freeze {
    type Result = u64;
}

/// Whether the realm is frozen, and its last WAL record (the admin's status).
pub struct Position;

impl Message for Position {
    type Result = (bool, u64);
}

/// Keeps the WAL records after a position from snapshots (`RealmStore::hold`).
pub struct HoldWal(pub Option<u64>);

impl Message for HoldWal {
    type Result = ();
}

/// Stops the actor for good (the realm is dropped from this node): it refuses every
/// write from now on and stops; its store is closed with it.
/// Answers its last WAL record and the flag of a snapshot under way (which the caller
/// waits out before removing the realm's data).
pub struct Retire;

impl Message for Retire {
    type Result = (u64, Arc<AtomicBool>);
}

/// Reads a copy of the whole working realm (tests, tooling).
pub struct CloneRealm;

impl Message for CloneRealm {
    type Result = Realm;
}

/// The realm actor.
pub struct RealmActor {
    /// The working state: every applied decision, durable or not; only `apply` mutates
    /// it. Readers never see it: they see the hub's published version.
    realm: Realm,
    /// WAL and snapshots of this realm.
    store: RealmStore,
    /// Time source of every decision (injected in tests).
    clock: Arc<dyn Clock>,
    /// Published version, event log and client queues; every decision is staged here.
    hub: Arc<EventHub>,
    /// Records appended (or replayed at start) since the last snapshot began.
    since_snapshot: u64,
    /// Take a snapshot after this many records (0: only on shutdown).
    snapshot_every: u64,
    /// Set while a background snapshot runs: at most one at a time.
    snapshotting: Arc<AtomicBool>,
    /// The message rows rules read (`Cx::rows`): the store's, shared.
    rows: Arc<dyn MessageRows + Send + Sync>,
    /// In a write freeze (`Freeze`): every write is refused.
    frozen: bool,
    /// `realm` shared, exactly as after the WAL's last record: the version the last
    /// commit staged, or one copy made for a snapshot or an export since a start or a
    /// reset. Snapshots and exports take it instead of copying the realm (`version`).
    version: Option<Arc<Realm>>,
}

impl RealmActor {
    /// `replayed`: records replayed at start, which count toward the next snapshot.
    pub fn new(
        realm: Realm,
        store: RealmStore,
        clock: Arc<dyn Clock>,
        hub: Arc<EventHub>,
        snapshot_every: u64,
        replayed: u64,
    ) -> Self {
        // Every commit's rows written before a rule reads any (the writer thread may
        // still hold some: `MessageStore::for_actor`).
        let rows = Arc::new(store.messages().for_actor());
        RealmActor {
            realm,
            rows,
            store,
            clock,
            hub,
            since_snapshot: replayed,
            snapshot_every,
            snapshotting: Arc::new(AtomicBool::new(false)),
            frozen: false,
            version: None,
        }
    }

    /// The working state after the WAL's last record (`store.last_seq()`), shared: the
    /// version the last commit staged (no copy), or, the first time after a start or a
    /// reset, one copy, kept until the next commit.
    fn version(&mut self) -> Arc<Realm> {
        match &self.version {
            Some(v) => v.clone(),
            None => {
                let v = Arc::new(self.realm.clone());
                self.version = Some(v.clone());
                v
            }
        }
    }

    /// Appends, applies, stages; returns the ticket to await when a durable change is
    /// among them.
    fn commit(&mut self, changes: Vec<Change>) -> ApiResult<Option<u64>> {
        if changes.is_empty() {
            return Ok(None);
        }
        if self.frozen {
            return Err(ApiError::frozen());
        }
        if self.store.needs_reset() {
            self.reset_after_fault();
        }
        let ticket = self.store.append(&changes).map_err(|e| {
            tracing::error!("WAL append failed: {e}");
            ApiError::storage_failed()
        })?;
        let seq = self.store.last_seq();
        let durable = changes
            .iter()
            .any(|c| c.durability() == DurabilityClass::Durable);
        // A version after each change, or after each run of changes that batch (ten
        // thousand channels created by one request): cheap, since the collections are
        // structurally shared and each later mutation copies only the paths it touches.
        let mut steps: Vec<Step> = Vec::new();
        let mut run: Vec<Change> = Vec::new();
        let mut rows = Projection::default();
        for (place, change) in (0u32..).zip(changes) {
            if run.last().is_some_and(|r| !r.batches_with(&change)) {
                steps.push((std::mem::take(&mut run), Arc::new(self.realm.clone())));
            }
            // Message rows follow the WAL record, computed from the state before the
            // change.
            self.store
                .messages()
                .add(&mut rows, &self.realm, &change, (seq, place));
            self.realm.apply(&change);
            run.push(change);
        }
        if !run.is_empty() {
            steps.push((run, Arc::new(self.realm.clone())));
        }
        // The last step's version is the working state after record `seq`.
        self.version = steps.last().map(|(_, v)| v.clone());
        // Written by the message database's writer thread, off this one; the hub
        // releases the decision only once they are (a failed write fails the message
        // database only, logged there, and a restart writes the rows again).
        self.store.messages().commit(rows, ticket);
        self.hub.stage(ticket, seq, steps);
        // The release task may have woken for this ticket before it was staged: a
        // decision no request handler releases (a scheduled delivery, a sweep) would
        // then wait for the next write. Wake it again; it releases off this thread.
        let durability = self.store.durability();
        if ticket <= durability.visible() {
            durability.wake_release();
        }
        self.since_snapshot += 1;
        if self.snapshot_every > 0 && self.since_snapshot >= self.snapshot_every {
            self.start_snapshot();
        }
        Ok(durable.then_some(ticket))
    }

    /// Starts a snapshot of the current state on a background thread, unless one runs.
    fn start_snapshot(&mut self) {
        if self.snapshotting.swap(true, Ordering::SeqCst) {
            return;
        }
        // Counted from now: a failed snapshot is tried again after another
        // `snapshot_every` records, never on every write.
        self.since_snapshot = 0;
        let job = match self.store.snapshot_job() {
            Ok(job) => job,
            Err(e) => {
                tracing::error!("cannot plan a snapshot: {e}");
                self.snapshotting.store(false, Ordering::SeqCst);
                return;
            }
        };
        let version = self.version();
        let running = self.snapshotting.clone();
        let subdomain = self.realm.settings.subdomain.clone();
        let spawned = std::thread::Builder::new()
            .name("hearth-snapshot".into())
            .spawn(move || {
                let started = Instant::now();
                let seq = job.seq;
                match job.run(&version) {
                    Ok(()) => tracing::info!(
                        "realm '{subdomain}': snapshot at record {seq} in {} ms",
                        started.elapsed().as_millis()
                    ),
                    Err(e) => tracing::error!("snapshot of realm '{subdomain}' failed: {e}"),
                }
                running.store(false, Ordering::SeqCst);
            });
        if let Err(e) = spawned {
            tracing::error!("cannot start a snapshot thread: {e}");
            self.snapshotting.store(false, Ordering::SeqCst);
        }
    }

    /// After a storage fault: makes visible what did become durable, drops the rest
    /// (memory then agrees with the disk), and hands the state to the store to write
    /// once the disk accepts writes again. Idempotent per fault.
    fn reset_after_fault(&mut self) {
        if !self.store.needs_reset() {
            return;
        }
        let durability = self.store.durability().clone();
        // What becomes visible below must be readable: the rows of every commit first.
        self.store.messages().caught_up();
        let released = match durability.mode() {
            crate::storage::DurabilityMode::Always => durability.durable(),
            _ => durability.visible(),
        };
        self.hub.release(released);
        let dropped = self.hub.discard_staged();
        let seq = match dropped.iter().min() {
            Some(first) => first.saturating_sub(1),
            None => self.store.last_seq(),
        };
        self.realm = (*self.hub.current()).clone();
        self.version = None;
        self.since_snapshot = 0;
        let subdomain = &self.realm.settings.subdomain;
        tracing::warn!(
            "realm '{subdomain}': storage fault, {} decisions that were not durable dropped; \
             state reset to WAL record {seq}",
            dropped.len()
        );
        // Rows the dropped decisions changed are put back; rows the dropped sends wrote
        // must not meet the ids given again. Both are queued before the reset is
        // acknowledged: the store's recovery syncs the message database only once every
        // realm has acknowledged, and that sync must cover them before the WAL hands
        // out these records' numbers again.
        if let Err(e) = self.store.messages().undo_after(seq) {
            tracing::error!("realm '{subdomain}': message rows of dropped writes kept: {e}");
        }
        if let Err(e) = self.store.messages().purge_from(&self.realm) {
            tracing::error!("realm '{subdomain}': message rows of dropped sends kept: {e}");
        }
        if let Err(e) = self.store.reset(seq, &self.realm) {
            tracing::error!("realm '{subdomain}': cannot reset after the storage fault: {e}");
        }
    }

    /// Runs a write's rule (as `me`, when it has a caller) and commits what it decided.
    fn write<A>(
        &mut self,
        me: Option<UserId>,
        decide: impl FnOnce(&Realm, Option<&User>, &mut Cx) -> ApiResult<Decided<A>>,
    ) -> ApiResult<Committed<A>> {
        let mut cx = Cx::new(&*self.clock).with_rows(self.rows.clone());
        let realm = &self.realm;
        let me = match me {
            None => None,
            // Authenticated against a published version, which this state includes.
            Some(id) => Some(
                realm
                    .user(id)
                    .filter(|u| u.is_active)
                    .ok_or_else(ApiError::user_deactivated)?,
            ),
        };
        // A decision only reads state, so a panic in one leaves the realm intact.
        let decided =
            catch_unwind(AssertUnwindSafe(|| decide(realm, me, &mut cx))).map_err(|_| {
                tracing::error!("a rule panicked");
                ApiError::internal()
            })??;
        let ticket = self.commit(decided.changes)?;
        Ok(Committed {
            ticket,
            answer: decided.answer,
        })
    }
}

impl Actor for RealmActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Storage failures, as they happen: reset at once rather than on the next write.
        let failures = self.store.durability().subscribe_failures();
        ctx.add_stream(futures_util::stream::unfold(
            failures,
            |mut rx| async move {
                rx.changed().await.ok()?;
                let n = *rx.borrow_and_update();
                Some((StorageFault(n), rx))
            },
        ));
    }
}

/// The store failed (the failure count): reset to the durable state.
pub struct StorageFault(pub u64);

impl StreamHandler<StorageFault> for RealmActor {
    fn handle(&mut self, _: StorageFault, _ctx: &mut Self::Context) {
        self.reset_after_fault();
    }

    /// The store is gone (shutdown): the actor keeps serving until stopped.
    fn finished(&mut self, _ctx: &mut Self::Context) {}
}

impl<Q: Send + 'static, A: Send + 'static> Handler<Write<Q, A>> for RealmActor {
    type Result = ApiResult<Committed<A>>;

    fn handle(&mut self, w: Write<Q, A>, _ctx: &mut Self::Context) -> Self::Result {
        let (decide, req) = (w.decide, w.req);
        self.write(Some(w.me), move |realm, me, cx| match me {
            Some(me) => decide(realm, me, req, cx),
            None => Err(ApiError::internal()),
        })
    }
}

impl<Q: Send + 'static, A: Send + 'static> Handler<SystemWrite<Q, A>> for RealmActor {
    type Result = ApiResult<Committed<A>>;

    fn handle(&mut self, w: SystemWrite<Q, A>, _ctx: &mut Self::Context) -> Self::Result {
        let (decide, req) = (w.decide, w.req);
        self.write(None, move |realm, _, cx| decide(realm, req, cx))
    }
}

impl Handler<TakeSnapshot> for RealmActor {
    type Result = MessageResult<TakeSnapshot>;

    fn handle(&mut self, _: TakeSnapshot, _ctx: &mut Self::Context) -> Self::Result {
        self.since_snapshot = 0;
        if self.store.needs_reset() {
            self.reset_after_fault();
        }
        let job = self.store.snapshot_job().map_err(|e| e.to_string());
        MessageResult(job.map(|job| (job, self.version())))
    }
}

impl Handler<ExportPoint> for RealmActor {
    type Result = MessageResult<ExportPoint>;

    fn handle(&mut self, _: ExportPoint, _ctx: &mut Self::Context) -> Self::Result {
        if self.store.needs_reset() {
            self.reset_after_fault();
        }
        if self.store.needs_reset() {
            return MessageResult(Err("the store failed; try again".into()));
        }
        // The point's message rows written (the writer thread may hold the last ones):
        // the export reads them.
        self.store.messages().caught_up();
        // The version the last commit staged: no copy of the realm on the actor.
        MessageResult(Ok((self.store.last_seq(), self.version())))
    }
}

impl Handler<DeliverScheduled> for RealmActor {
    type Result = usize;

    fn handle(&mut self, _: DeliverScheduled, _ctx: &mut Self::Context) -> Self::Result {
        // Deliveries read message rows: until the message database is open (the first
        // moments after a start) they wait for a later tick rather than block the actor.
        // Reminders are delivered in the same tick, their messages numbered after the
        // scheduled ones.
        let nothing_due = self.realm.messages.due.is_empty() && self.realm.reminders.due.is_empty();
        if nothing_due || !self.store.messages().is_open() {
            return 0;
        }
        // The actor's rows, as every rule reads them: each earlier commit's rows are
        // written before a delivery reads one (a scheduled message's topic, its
        // participants, a direct conversation's history).
        let mut cx = Cx::new(&*self.clock).with_rows(self.rows.clone());
        let realm = &self.realm;
        let rows: &dyn MessageRows = &*self.rows;
        let changes = match catch_unwind(AssertUnwindSafe(|| {
            let mut changes = realm.decide_due_scheduled(&mut cx, rows);
            let sent = changes
                .iter()
                .filter(|c| matches!(c, Change::Message(m) if m.delivered().is_some()))
                .count() as u64;
            let first_id = realm.messages.next_id + sent;
            changes.extend(realm.decide_due_reminders(&mut cx, rows, first_id));
            changes
        })) {
            Ok(changes) => changes,
            Err(_) => {
                tracing::error!("deciding scheduled deliveries panicked");
                return 0;
            }
        };
        let n = changes.len();
        if let Err(e) = self.commit(changes) {
            tracing::error!("scheduled deliveries not committed: {}", e.msg);
            return 0;
        }
        n
    }
}

impl Handler<Freeze> for RealmActor {
    type Result = u64;

    fn handle(&mut self, Freeze(on): Freeze, _ctx: &mut Self::Context) -> u64 {
        self.frozen = on;
        self.store.last_seq()
    }
}

impl Handler<Position> for RealmActor {
    type Result = MessageResult<Position>;

    fn handle(&mut self, _: Position, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult((self.frozen, self.store.last_seq()))
    }
}

impl Handler<HoldWal> for RealmActor {
    type Result = ();

    fn handle(&mut self, HoldWal(after): HoldWal, _ctx: &mut Self::Context) {
        self.store.hold(after);
    }
}

impl Handler<Retire> for RealmActor {
    type Result = MessageResult<Retire>;

    fn handle(&mut self, _: Retire, ctx: &mut Self::Context) -> Self::Result {
        self.frozen = true;
        ctx.stop();
        MessageResult((self.store.last_seq(), self.snapshotting.clone()))
    }
}

impl Handler<CloneRealm> for RealmActor {
    type Result = MessageResult<CloneRealm>;

    fn handle(&mut self, _: CloneRealm, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.realm.clone())
    }
}

/// How the rest of the server writes to a realm: sends a typed `Write` to its actor,
/// awaits the flush that makes it durable, and releases the published version that
/// holds it, so what an answer acknowledges is visible before the answer is sent.
#[derive(Clone)]
pub struct RealmClient {
    addr: Addr<RealmActor>,
    hub: Arc<EventHub>,
    /// The server's store: its durability (the flush an answer awaits), its data folder.
    store: Store,
    /// The realm's message store: an answer waits for its commit's rows too.
    messages: MessageStore,
}

impl RealmClient {
    pub fn new(
        addr: Addr<RealmActor>,
        hub: Arc<EventHub>,
        store: Store,
        messages: MessageStore,
    ) -> Self {
        RealmClient {
            addr,
            hub,
            store,
            messages,
        }
    }

    /// The realm's actor (messages other than writes: ticks, snapshots, tests).
    pub fn addr(&self) -> &Addr<RealmActor> {
        &self.addr
    }

    /// The server's durability (its data folder; an export's flush).
    pub fn durability(&self) -> std::sync::Arc<Durability> {
        self.store.durability.clone()
    }

    /// The server's store (an export reads the realm's rows and files from it).
    pub fn store(&self) -> Store {
        self.store.clone()
    }

    /// The 32-byte key in the data folder's file `name`, made the first time (keys
    /// that sign what must outlive a restart, such as password reset links).
    pub fn server_key(&self, name: &str) -> std::io::Result<[u8; 32]> {
        crate::storage::folder::server_key(self.store.durability.dir(), name)
    }

    /// The folder of the realm `subdomain`'s data exports, in the data folder.
    pub fn exports_dir(&self, subdomain: &str) -> std::path::PathBuf {
        crate::storage::uploads::UploadStore::new(self.store.durability.dir())
            .exports_dir(subdomain)
    }

    /// Decides `req` with `decide` as `me` on the actor; once what it wrote is durable,
    /// releases it and returns the rule's answer.
    pub async fn commit<Q, A>(&self, me: UserId, req: Q, decide: Rule<Q, A>) -> ApiResult<A>
    where
        Q: Send + 'static,
        A: Send + 'static,
    {
        let in_flight = crate::metrics::InFlight::start(&self.hub.current().settings.subdomain);
        let committed = self.send(Write { me, req, decide }).await;
        drop(in_flight);
        let committed = committed?;
        self.settle(committed.ticket).await?;
        Ok(committed.answer)
    }

    /// As `commit`, for a write the server makes on its own behalf.
    pub async fn commit_system<Q, A>(&self, req: Q, decide: SystemRule<Q, A>) -> ApiResult<A>
    where
        Q: Send + 'static,
        A: Send + 'static,
    {
        let committed = self.send(SystemWrite { req, decide }).await?;
        self.settle(committed.ticket).await?;
        Ok(committed.answer)
    }

    /// Sends a write to the actor and returns what it committed.
    async fn send<M, A>(&self, write: M) -> ApiResult<Committed<A>>
    where
        M: Message<Result = ApiResult<Committed<A>>> + Send + 'static,
        RealmActor: Handler<M>,
        A: Send + 'static,
    {
        self.addr.send(write).await.map_err(|e| {
            tracing::error!("realm actor unavailable: {e}");
            ApiError::internal()
        })?
    }

    /// Awaits the durability of `ticket` and the writing of its message rows (which
    /// run side by side), and releases what became durable.
    async fn settle(&self, ticket: Option<u64>) -> ApiResult<()> {
        if let Some(ticket) = ticket {
            self.store.durability.wait(ticket).await.map_err(|e| {
                tracing::error!("a write was not made durable: {e}");
                ApiError::storage_failed()
            })?;
            self.messages.projected(ticket).await;
        }
        // Read-your-writes: what this answer acknowledges is visible before it is sent.
        self.hub.release(self.store.durability.visible());
        Ok(())
    }
}

/// Creates a realm from its first changes: recorded in the WAL, then snapshotted.
pub fn create_realm(store: &mut RealmStore, changes: &[Change]) -> Result<Realm, String> {
    let mut realm = changes
        .first()
        .and_then(Realm::from_first_change)
        .ok_or("a realm starts with RealmCreated")?;
    store.append(changes).map_err(|e| e.to_string())?;
    for c in changes {
        // Message rows (a new realm's first messages) are written as the actor writes
        // them: from the state right before the change.
        store
            .messages()
            .project(&realm, c, None)
            .map_err(|e| e.to_string())?;
        realm.apply(c);
    }
    store.snapshot(&realm).map_err(|e| e.to_string())?;
    Ok(realm)
}
