//! The full-text index of one realm's messages: derived data beside the message store,
//! for `search` narrows (what a search means: `realm::messages::search`).
//!
//! # Why tantivy
//!
//! A `search` narrow used to read every candidate row and test it, so a rare word in a
//! realm of a million messages read them all (bounded by `fetch::MAX_SCAN`, then not
//! even found). An inverted index answers with the few ids that hold every word.
//! tantivy is an embeddable Rust library (no server, no C), with English stemming and
//! stop words as token filters, segment files written beside the data folder, and a
//! writer with a memory budget. The index keeps no document (the rows live in the
//! message store): per message its id (indexed, to replace it; a fast field, to read it
//! back) and its words (doc ids only: no frequencies, positions or norms, since results
//! go by id and every candidate is checked on its row), so it stays small.
//!
//! # Layout
//!
//! `<data>/search/realm-<hex subdomain>/`: tantivy's files, `hearth-layout` (the
//! layout version, `LAYOUT`, written once the index was built whole) and, while the
//! message store may hold rows the index has not committed, `hearth-dirty`. A folder
//! that is missing, damaged (tantivy cannot open it), of another layout, or dirty is
//! removed and rebuilt from the message store's rows at its realm's start, on the
//! index's own thread, with its progress in the log. Never in the WAL.
//!
//! # Writes: the same row writes, off the realm actor
//!
//! The message database applies every projection (`db`, `writer`: the writer thread, the
//! queue applied while opening, recovery's replay, imports) and then tells the realm's
//! index which messages it wrote (`touch`: a send, an edit or a move, a deletion); a
//! repair that changed rows asks for a rebuild. `touch` only records the ids in memory
//! (the `pending` set) and wakes the index's thread; the realm actor never reaches
//! tantivy. That thread gathers touches for `COMMIT_DELAY`, reads each row as it is now,
//! replaces its document (or deletes it), commits and reloads its reader, then drops
//! from `pending` the ids no later write touched again. A new message (an id above any
//! the index ever held, `max_indexed`) only adds its document: no delete is queued for
//! it, which would otherwise be looked up in every segment at each commit.
//!
//! # Read-your-writes: the watermark is the pending set
//!
//! What the committed index answers is right for every message not in `pending`. A
//! search reads `pending` first, then the committed index; its candidates are the
//! index's hits and every pending id, each checked on its current row by the fetch
//! (`SearchQuery::matches`). A write is touched before its commit is marked written,
//! which is before the send, edit, move or deletion is acknowledged, so a search after
//! an answer always sees it, without a commit per search. While the index opens or
//! rebuilds, `candidates` answers `None` and the fetch scans as it did without an index.
//!
//! # Crashes
//!
//! A touch lives in memory until committed. Rows reach the disk only with the message
//! database's `sync` (before each snapshot) or with sled's own log writes of records the
//! WAL replays at the next start (which touches them again). So `sync` first makes the
//! dirty marker durable when an index has uncommitted touches (`mark_dirty`), and a
//! start that finds it rebuilds.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::indexer::IndexWriterOptions;
use tantivy::query::{BooleanQuery, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::store::Compressor;
use tantivy::{
    DocId, Index, IndexReader, IndexSettings, IndexWriter, ReloadPolicy, Score, SegmentOrdinal,
    SegmentReader, TantivyDocument, Term,
};

use super::layout::{decode_message, Trees};
use super::projection::Op;
use crate::locks::{lock, read, wait_timeout_while, write};
use crate::realm::messages::search::{analyzer, indexed_text, SearchQuery};
use crate::realm::messages::MessageId;
use crate::storage::StorageError;

/// The folder of the search indexes inside a data folder.
pub const FOLDER: &str = "search";
/// The layout of an index folder; another one is rebuilt.
pub const LAYOUT: u32 = 1;
/// The file holding `LAYOUT`, written once the index was built whole.
pub const LAYOUT_FILE: &str = "hearth-layout";
/// Present while the message store may hold rows the index has not committed.
pub const DIRTY_FILE: &str = "hearth-dirty";
/// The tokenizer name of the words field.
pub(super) const TOKENIZER: &str = "hearth";
/// The writer's memory budget by default, in MiB (`serve --search-writer-mb`).
pub const DEFAULT_WRITER_MB: u64 = 50;
/// tantivy's smallest budget per writer thread.
pub(super) const MIN_WRITER_MB: u64 = 15;
/// How long touches gather before the index thread writes and commits them. Each
/// commit makes a segment (files, fsyncs, a reader reload, later merges), so under a
/// stream of sends fewer, larger commits cost the server less CPU per message (about
/// 0.95× against 0.82× of the CPU per send without an index, at 1 s against 200 ms:
/// `benches/RESULTS.md`). Searches never wait for it: pending ids are candidates.
pub(super) const COMMIT_DELAY: Duration = Duration::from_secs(1);
/// A rebuild says how far it got every this many messages.
pub(super) const PROGRESS_EVERY: u64 = 100_000;
/// After a failed rebuild, the next try waits this long (searches scan meanwhile).
pub(super) const RETRY_AFTER: Duration = Duration::from_secs(30);

pub(super) static ENABLED: AtomicBool = AtomicBool::new(true);
pub(super) static WRITER_MB: AtomicU64 = AtomicU64::new(DEFAULT_WRITER_MB);

/// Whether realms keep a search index (`serve --search-index off`: searches scan).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::SeqCst);
}

/// Whether realms keep a search index.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::SeqCst)
}

/// The index writer's memory budget per realm, in MiB (at least tantivy's 15).
pub fn set_writer_mb(mb: u64) {
    WRITER_MB.store(mb.max(MIN_WRITER_MB), Ordering::SeqCst);
}

/// Removes every index of a data folder (`serve --search-index false`: writes made
/// meanwhile would be missing from them, so a later start rebuilds them).
pub fn remove_all(data: &Path) {
    match std::fs::remove_dir_all(data.join(FOLDER)) {
        Ok(()) => tracing::info!("search indexes removed (--search-index false)"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!("cannot remove the search indexes: {e}"),
    }
}

/// Where a realm's index lives in a data folder.
pub fn realm_dir(data: &Path, subdomain: &str) -> PathBuf {
    data.join(FOLDER)
        .join(format!("realm-{}", hex::encode(subdomain)))
}

/// The messages a projection writes, for `touch` (`None`: it may change any row, so
/// the index is rebuilt).
pub(super) fn touched(op: &Op, ids: &mut Vec<MessageId>) -> bool {
    match op {
        Op::Sent { message, .. } => ids.push(message.id),
        Op::Edited { pairs, .. } => ids.extend(pairs.iter().map(|(_, after)| after.id)),
        Op::Deleted(messages) => ids.extend(messages.iter().map(|m| m.id)),
        Op::Logged { op, .. } => return touched(op, ids),
        Op::Flags { .. } | Op::Reaction { .. } | Op::Trim { .. } => {}
        Op::Undo { .. } | Op::Purge(_) => return false,
    }
    true
}

/// The fields of the index.
#[derive(Clone, Copy)]
pub(super) struct Fields {
    pub(super) id: Field,
    pub(super) words: Field,
}

pub(super) fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let id = b.add_u64_field("id", NumericOptions::default().set_indexed().set_fast());
    let words = b.add_text_field(
        "words",
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(TOKENIZER)
                .set_index_option(IndexRecordOption::Basic)
                .set_fieldnorms(false),
        ),
    );
    (b.build(), Fields { id, words })
}

/// An open index: what searches read.
pub(super) struct Engine {
    pub(super) reader: IndexReader,
    pub(super) fields: Fields,
}

/// What the index thread is asked to do.
#[derive(Default)]
pub(super) struct Work {
    /// Touched messages not yet committed, each with the number of its latest touch.
    pub(super) pending: HashMap<MessageId, u64>,
    /// Touches so far.
    pub(super) seq: u64,
    /// Ids taken by the thread and not yet committed (still pending too).
    pub(super) in_flight: bool,
    pub(super) rebuild: bool,
    pub(super) stop: bool,
    /// `DIRTY_FILE` exists.
    pub(super) dirty: bool,
}

/// Where an index reads a realm's rows back: the message database (`db`), which owns
/// the indexes and tells them of its writes. A port, so that this file does not name
/// the database that names it.
pub(super) trait RowTrees: Send + Sync {
    /// The trees of the realm of `names` (see `MessageDb::trees`).
    fn trees(&self, names: &Arc<[String; 5]>) -> Result<Trees, StorageError>;
}

/// One realm's index; see the module doc.
pub struct SearchIndex {
    pub(super) subdomain: String,
    pub(super) dir: PathBuf,
    pub(super) names: Arc<[String; 5]>,
    pub(super) db: Weak<dyn RowTrees>,
    /// `None` while opening or rebuilding (searches scan).
    pub(super) engine: RwLock<Option<Arc<Engine>>>,
    pub(super) work: Mutex<Work>,
    pub(super) wake: Condvar,
    pub(super) thread: Mutex<Option<JoinHandle<()>>>,
    /// The highest message id any document of the index has held, deleted ones
    /// included (the index thread's): a touched id above it is a new message, with no
    /// document to replace, so its write queues no delete.
    pub(super) max_indexed: AtomicU64,
}

impl SearchIndex {
    /// Starts the index of a realm: its thread opens it (or rebuilds it) and keeps it.
    pub(super) fn start(
        data: &Path,
        names: Arc<[String; 5]>,
        db: Weak<dyn RowTrees>,
    ) -> Arc<SearchIndex> {
        let subdomain = names[0]
            .strip_prefix("msg:")
            .unwrap_or(&names[0])
            .to_owned();
        let index = Arc::new(SearchIndex {
            dir: realm_dir(data, &subdomain),
            subdomain,
            names,
            db,
            engine: RwLock::new(None),
            work: Mutex::new(Work::default()),
            wake: Condvar::new(),
            max_indexed: AtomicU64::new(0),
            thread: Mutex::new(None),
        });
        let me = index.clone();
        match std::thread::Builder::new()
            .name("hearth-search".into())
            .spawn(move || me.run())
        {
            Ok(handle) => *lock(&index.thread) = Some(handle),
            Err(e) => tracing::error!(
                "no search index thread for realm '{}' ({e}): its searches scan",
                index.subdomain
            ),
        }
        index
    }

    /// Records that the rows of `ids` were written (see the module doc).
    pub(super) fn touch(&self, ids: &[MessageId]) {
        if ids.is_empty() {
            return;
        }
        let mut w = lock(&self.work);
        for id in ids {
            w.seq += 1;
            let seq = w.seq;
            w.pending.insert(*id, seq);
        }
        drop(w);
        self.wake.notify_all();
    }

    /// Asks for a rebuild from the message store (rows changed in ways `touch` does not
    /// name: a repair).
    pub(super) fn rebuild(&self) {
        lock(&self.work).rebuild = true;
        self.wake.notify_all();
    }

    /// Makes `DIRTY_FILE` durable when touches are not committed yet (before the
    /// message database syncs: see the module doc).
    pub(super) fn mark_dirty(&self) {
        let mut w = lock(&self.work);
        if w.dirty || (w.pending.is_empty() && !w.in_flight) {
            return;
        }
        self.write_dirty_mark(
            &mut w,
            "a crash before its next commit may leave it behind its messages",
        );
    }

    /// Rows were written after this index's thread was told to stop (the database is
    /// closing): the index stays dirty, so the next start rebuilds it.
    pub(super) fn leave_dirty(&self) {
        let mut w = lock(&self.work);
        w.rebuild = true;
        if w.dirty {
            return;
        }
        self.write_dirty_mark(&mut w, "it may lack messages written while hearth stopped");
    }

    /// Writes the dirty mark (durably) and records it; a failure is logged with what it
    /// risks, and the mark is tried again next time.
    fn write_dirty_mark(&self, w: &mut Work, risk: &str) {
        match write_durably(&self.dir, DIRTY_FILE, b"") {
            Ok(()) => w.dirty = true,
            Err(e) => tracing::warn!(
                "cannot mark the search index of realm '{}' dirty ({e}): {risk}",
                self.subdomain
            ),
        }
    }

    /// Stops the thread after it committed what is pending, and waits for it.
    pub(super) fn stop(&self) {
        lock(&self.work).stop = true;
        self.wake.notify_all();
        let handle = lock(&self.thread).take();
        if let Some(handle) = handle {
            if handle.join().is_err() {
                tracing::error!("the search index thread of '{}' panicked", self.subdomain);
            }
        }
    }

    /// Stops the index and removes its folder (its realm's rows are gone or replaced).
    pub(super) fn remove(&self) {
        self.stop();
        match std::fs::remove_dir_all(&self.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("cannot remove {}: {e}", self.dir.display()),
        }
    }

    /// The ids that may match `q`, ascending: the committed index's hits and every
    /// message written since (see the module doc). `None`: no index to ask now.
    pub fn candidates(&self, q: &SearchQuery) -> Result<Option<Vec<MessageId>>, String> {
        if q.lexemes.is_empty() {
            // Nothing matches a query without words.
            return Ok(Some(Vec::new()));
        }
        // Pending first: a commit that lands between the two reads is then in both.
        let mut ids: Vec<MessageId> = lock(&self.work).pending.keys().copied().collect();
        let Some(engine) = read(&self.engine).clone() else {
            return Ok(None);
        };
        let searcher = engine.reader.searcher();
        let query = BooleanQuery::intersection(
            q.lexemes
                .iter()
                .map(|l| {
                    Box::new(TermQuery::new(
                        Term::from_field_text(engine.fields.words, l),
                        IndexRecordOption::Basic,
                    )) as Box<dyn Query>
                })
                .collect(),
        );
        let hits = searcher
            .search(&query, &IdCollector)
            .map_err(|e| format!("search index of '{}': {e}", self.subdomain))?;
        ids.extend(hits);
        ids.sort_unstable();
        ids.dedup();
        Ok(Some(ids))
    }

    /// The index thread (see the module doc).
    pub(super) fn run(&self) {
        let mut writer = match self.open() {
            Ok(w) => Some(w),
            Err(why) => {
                tracing::info!(
                    "search index of realm '{}': {why}; rebuilding it from the message store",
                    self.subdomain
                );
                lock(&self.work).rebuild = true;
                None
            }
        };
        let mut failed_at: Option<Instant> = None;
        loop {
            let (rebuild, stop, pending) = {
                let w = wait_timeout_while(
                    &self.wake,
                    lock(&self.work),
                    Duration::from_millis(500),
                    |w| !w.rebuild && !w.stop && w.pending.is_empty(),
                );
                (w.rebuild, w.stop, !w.pending.is_empty())
            };
            if self.db.strong_count() == 0 {
                return;
            }
            if rebuild && !stop {
                if failed_at.is_some_and(|t| t.elapsed() < RETRY_AFTER) {
                    // Searches scan meanwhile; touches wait in `pending`.
                    std::thread::sleep(Duration::from_millis(500));
                    continue;
                }
                writer = None;
                match self.rebuild_now() {
                    Ok(w) => {
                        writer = Some(w);
                        failed_at = None;
                    }
                    Err(e) => {
                        let mut w = lock(&self.work);
                        if !w.stop {
                            tracing::error!(
                                "search index of realm '{}' cannot be rebuilt: {e}; its \
                                 searches scan, and it is tried again",
                                self.subdomain
                            );
                            w.rebuild = true;
                            failed_at = Some(Instant::now());
                        }
                    }
                }
                continue;
            }
            if pending {
                if !stop {
                    // Gather what the next moments write into the same commit.
                    std::thread::sleep(COMMIT_DELAY);
                }
                if let Some(w) = writer.as_mut() {
                    if let Err(e) = self.commit_pending(w) {
                        tracing::error!(
                            "search index of realm '{}' cannot be written: {e}; rebuilding it",
                            self.subdomain
                        );
                        lock(&self.work).rebuild = true;
                    }
                }
            }
            if stop {
                let w = writer.take();
                *write(&self.engine) = None;
                if let Some(w) = w {
                    if let Err(e) = w.wait_merging_threads() {
                        tracing::warn!("search index of '{}': {e}", self.subdomain);
                    }
                }
                return;
            }
        }
    }

    /// Opens the index as it is on disk, when it is whole, clean and of this layout.
    pub(super) fn open(&self) -> Result<IndexWriter, String> {
        let layout = std::fs::read_to_string(self.dir.join(LAYOUT_FILE))
            .map_err(|_| "no index yet".to_owned())?;
        if layout.trim() != LAYOUT.to_string() {
            return Err(format!(
                "an index of layout {} (not {LAYOUT})",
                layout.trim()
            ));
        }
        if self.dir.join(DIRTY_FILE).exists() {
            return Err("it may lack writes made before hearth stopped".into());
        }
        self.open_folder()
    }

    /// Opens the index in the folder, whose layout (and, at a start, cleanness) the
    /// caller has judged.
    fn open_folder(&self) -> Result<IndexWriter, String> {
        let index = Index::open_in_dir(&self.dir).map_err(|e| format!("damaged ({e})"))?;
        let (schema, fields) = schema();
        if index.schema() != schema {
            return Err("an index of another schema".into());
        }
        self.serve(index, fields)
    }

    /// Registers the analyzer, opens the writer and the reader, and serves searches.
    pub(super) fn serve(&self, index: Index, fields: Fields) -> Result<IndexWriter, String> {
        index.tokenizers().register(TOKENIZER, analyzer());
        let writer = new_writer(&index).map_err(|e| format!("no writer ({e})"))?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| format!("no reader ({e})"))?;
        let max = reader
            .searcher()
            .segment_readers()
            .iter()
            .map(|s| s.fast_fields().u64("id").map(|c| c.max_value()))
            .try_fold(0, |max, v| v.map(|v| max.max(v)))
            .map_err(|e| format!("damaged ({e})"))?;
        self.max_indexed.store(max, Ordering::SeqCst);
        *write(&self.engine) = Some(Arc::new(Engine { reader, fields }));
        Ok(writer)
    }

    /// Removes the folder and indexes every row of the realm again.
    pub(super) fn rebuild_now(&self) -> Result<IndexWriter, String> {
        *write(&self.engine) = None;
        let started = Instant::now();
        {
            // The old folder goes with its dirty marker. A sync while the rows are read
            // again (touches pending) marks the new folder, so the marker is made
            // anew there, under this lock, never into a folder that is not there.
            let mut w = lock(&self.work);
            w.rebuild = false;
            match std::fs::remove_dir_all(&self.dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.to_string()),
            }
            std::fs::create_dir_all(&self.dir).map_err(|e| e.to_string())?;
            w.dirty = false;
        }
        let (schema, fields) = schema();
        let index = Index::builder()
            .schema(schema)
            .settings(IndexSettings {
                docstore_compression: Compressor::None,
                ..IndexSettings::default()
            })
            .create_in_dir(&self.dir)
            .map_err(|e| e.to_string())?;
        index.tokenizers().register(TOKENIZER, analyzer());
        let mut writer = new_writer(&index).map_err(|e| e.to_string())?;
        let db = self.db.upgrade().ok_or("the message database is closed")?;
        let trees = db.trees(&self.names).map_err(|e| e.to_string())?;
        drop(db);
        let mut n = 0u64;
        for item in trees.rows.iter() {
            if lock(&self.work).stop {
                return Err("stopped".into());
            }
            let (_, v) = item.map_err(|e| e.to_string())?;
            let m = decode_message(&v).map_err(|e| e.to_string())?;
            let mut doc = TantivyDocument::default();
            doc.add_u64(fields.id, m.id);
            doc.add_text(fields.words, indexed_text(&m));
            writer.add_document(doc).map_err(|e| e.to_string())?;
            n += 1;
            if n.is_multiple_of(PROGRESS_EVERY) {
                tracing::info!(
                    "search index of realm '{}': {n} messages indexed ({} s)",
                    self.subdomain,
                    started.elapsed().as_secs()
                );
            }
        }
        writer.commit().map_err(|e| e.to_string())?;
        drop(writer);
        write_durably(&self.dir, LAYOUT_FILE, LAYOUT.to_string().as_bytes())
            .map_err(|e| e.to_string())?;
        tracing::info!(
            "search index of realm '{}' rebuilt: {n} messages in {} ms",
            self.subdomain,
            started.elapsed().as_millis()
        );
        // What was touched meanwhile is pending, and a sync meanwhile left the folder
        // dirty until those touches are committed: the folder is opened as it is.
        self.open_folder()
    }

    /// Writes the documents of the pending ids as their rows are now, commits, and
    /// forgets the ids no later write touched.
    pub(super) fn commit_pending(&self, writer: &mut IndexWriter) -> Result<(), String> {
        let taken: Vec<(MessageId, u64)> = {
            let mut w = lock(&self.work);
            w.in_flight = true;
            w.pending.iter().map(|(id, seq)| (*id, *seq)).collect()
        };
        let written = self.write_docs(writer, &taken);
        let mut w = lock(&self.work);
        w.in_flight = false;
        written?;
        for (id, seq) in &taken {
            if w.pending.get(id) == Some(seq) {
                w.pending.remove(id);
            }
        }
        // A rebuild asked for meanwhile replaces the folder; until then it stays dirty.
        if w.dirty && w.pending.is_empty() && !w.rebuild {
            match std::fs::remove_file(self.dir.join(DIRTY_FILE)) {
                Ok(()) => w.dirty = false,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => w.dirty = false,
                Err(e) => tracing::warn!("cannot remove {DIRTY_FILE}: {e}"),
            }
        }
        Ok(())
    }

    pub(super) fn write_docs(
        &self,
        writer: &mut IndexWriter,
        taken: &[(MessageId, u64)],
    ) -> Result<(), String> {
        let engine = read(&self.engine).clone().ok_or("the index is not open")?;
        let fields = engine.fields;
        let db = self.db.upgrade().ok_or("the message database is closed")?;
        let trees = db.trees(&self.names).map_err(|e| e.to_string())?;
        drop(db);
        let mut max = self.max_indexed.load(Ordering::SeqCst);
        for (id, _) in taken {
            if *id <= max {
                writer.delete_term(Term::from_field_u64(fields.id, *id));
            }
            let row = trees
                .rows
                .get(id.to_be_bytes())
                .map_err(|e| e.to_string())?;
            if let Some(v) = row {
                let m = decode_message(&v).map_err(|e| e.to_string())?;
                let mut doc = TantivyDocument::default();
                doc.add_u64(fields.id, m.id);
                doc.add_text(fields.words, indexed_text(&m));
                writer.add_document(doc).map_err(|e| e.to_string())?;
                max = max.max(m.id);
            }
        }
        writer.commit().map_err(|e| e.to_string())?;
        self.max_indexed.store(max, Ordering::SeqCst);
        engine.reader.reload().map_err(|e| e.to_string())?;
        Ok(())
    }
}

/// The index's writer: one indexing thread and one merging thread, within the budget.
pub(super) fn new_writer(index: &Index) -> tantivy::Result<IndexWriter> {
    let budget = WRITER_MB.load(Ordering::SeqCst).max(MIN_WRITER_MB) * 1024 * 1024;
    index.writer_with_options(
        IndexWriterOptions::builder()
            .memory_budget_per_thread(usize::try_from(budget).unwrap_or(usize::MAX))
            .num_worker_threads(1)
            .num_merge_threads(1)
            .build(),
    )
}

/// Writes a small file and makes it and its name durable.
pub(super) fn write_durably(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join(name))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::File::open(dir)?.sync_all()
}

/// Collects the message ids of the matching documents (their `id` fast field).
pub(super) struct IdCollector;

pub(super) struct SegmentIds {
    pub(super) column: Column<u64>,
    pub(super) ids: Vec<MessageId>,
}

impl Collector for IdCollector {
    type Fruit = Vec<MessageId>;
    type Child = SegmentIds;

    fn for_segment(
        &self,
        _segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentIds> {
        Ok(SegmentIds {
            column: reader.fast_fields().u64("id")?,
            ids: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<Vec<MessageId>>) -> tantivy::Result<Vec<MessageId>> {
        Ok(fruits.concat())
    }
}

impl SegmentCollector for SegmentIds {
    type Fruit = Vec<MessageId>;

    fn collect(&mut self, doc: DocId, _score: Score) {
        self.ids.extend(self.column.first(doc));
    }

    fn harvest(self) -> Vec<MessageId> {
        self.ids
    }
}

/// Marks the index of realm `subdomain` dirty on disk when it has a folder: rows were
/// written after its thread stopped (see `MessageDb::close`).
pub(super) fn left_behind(data: &Path, subdomain: &str) {
    if !enabled() {
        return;
    }
    let dir = realm_dir(data, subdomain);
    if !dir.join(LAYOUT_FILE).exists() {
        return;
    }
    if let Err(e) = write_durably(&dir, DIRTY_FILE, b"") {
        tracing::warn!(
            "cannot mark the search index of realm '{subdomain}' dirty ({e}): it may lack \
             messages written while hearth stopped"
        );
    }
}

/// The search indexes of a message database's realms, started on first use, until the
/// database closes (`close`): no index starts after that, so none holds the database's
/// trees (and its lock) past its close.
#[derive(Default)]
pub(super) struct Indexes(Mutex<Started>);

#[derive(Default)]
pub(super) struct Started {
    by_realm: HashMap<Arc<[String; 5]>, Arc<SearchIndex>>,
    closed: bool,
}

impl Indexes {
    /// The index of the realm of `names`, started if it is not yet (`None`: disabled,
    /// or the database is closing).
    pub(super) fn get(
        &self,
        data: &Path,
        names: &Arc<[String; 5]>,
        db: &Weak<dyn RowTrees>,
    ) -> Option<Arc<SearchIndex>> {
        if !enabled() {
            return None;
        }
        let mut started = lock(&self.0);
        if started.closed {
            return None;
        }
        if let Some(ix) = started.by_realm.get(names) {
            return Some(ix.clone());
        }
        let ix = SearchIndex::start(data, names.clone(), db.clone());
        started.by_realm.insert(names.clone(), ix.clone());
        Some(ix)
    }

    /// Every started index.
    pub(super) fn all(&self) -> Vec<Arc<SearchIndex>> {
        lock(&self.0).by_realm.values().cloned().collect()
    }

    /// Takes a realm's index out (it is then stopped or removed by the caller).
    pub(super) fn take(&self, names: &[String; 5]) -> Option<Arc<SearchIndex>> {
        let mut started = lock(&self.0);
        let key = started.by_realm.keys().find(|k| ***k == *names).cloned()?;
        started.by_realm.remove(&key)
    }

    /// Starts no index from now on and hands over every started one, to be stopped.
    pub(super) fn close(&self) -> Vec<Arc<SearchIndex>> {
        let mut started = lock(&self.0);
        started.closed = true;
        started.by_realm.values().cloned().collect()
    }

    /// After `close`: the realm's index if one was started (`Some(None)`: none was);
    /// before it, `None`.
    pub(super) fn closed_one(&self, names: &[String; 5]) -> Option<Option<Arc<SearchIndex>>> {
        let started = lock(&self.0);
        started.closed.then(|| {
            started
                .by_realm
                .iter()
                .find(|(k, _)| ***k == *names)
                .map(|(_, ix)| ix.clone())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::messages::layout::encode_message;
    use crate::storage::messages::testing::message;

    type Hook = Box<dyn FnOnce() + Send>;

    /// A realm's trees in a temporary database; `while_read` runs the first time the
    /// index asks for them (a rebuild about to read every row again).
    struct Rows {
        db: sled::Db,
        while_read: Mutex<Option<Hook>>,
    }

    impl RowTrees for Rows {
        fn trees(&self, names: &Arc<[String; 5]>) -> Result<Trees, StorageError> {
            if let Some(hook) = lock(&self.while_read).take() {
                hook();
            }
            let [rows, idx, flags, bits, undo] = &**names;
            Ok(Trees {
                rows: self.db.open_tree(rows)?,
                idx: self.db.open_tree(idx)?,
                flags: self.db.open_tree(flags)?,
                bits: self.db.open_tree(bits)?,
                undo: self.db.open_tree(undo)?,
            })
        }
    }

    /// A rebuild during which a message is sent and the database syncs (the touch is
    /// pending, so the sync marks the index dirty): the rebuilt folder must open, and
    /// stay marked until that touch is committed, whether the old folder was dirty
    /// (the usual reason for a rebuild) or not.
    #[test]
    fn a_sync_during_a_rebuild_leaves_the_new_folder_open_and_marked_until_its_commit() {
        for old_folder_dirty in [false, true] {
            let data = tempfile::tempdir().unwrap();
            let names: Arc<[String; 5]> =
                Arc::new(["msg:r", "idx:r", "flags:r", "bits:r", "undo:r"].map(String::from));
            let db = sled::Config::new().temporary(true).open().unwrap();
            let row = encode_message(&message(1, 10, 11)).unwrap();
            db.open_tree("msg:r")
                .unwrap()
                .insert(1u64.to_be_bytes(), row)
                .unwrap();
            let rows: Arc<Rows> = Arc::new(Rows {
                db,
                while_read: Mutex::new(None),
            });
            let port: Arc<dyn RowTrees> = rows.clone();
            let dir = data.path().join("index");
            std::fs::create_dir_all(&dir).unwrap();
            if old_folder_dirty {
                std::fs::write(dir.join(DIRTY_FILE), b"").unwrap();
            }
            let ix = Arc::new(SearchIndex {
                subdomain: "r".into(),
                dir: dir.clone(),
                names,
                db: Arc::downgrade(&port),
                engine: RwLock::new(None),
                work: Mutex::new(Work {
                    dirty: old_folder_dirty,
                    ..Work::default()
                }),
                wake: Condvar::new(),
                thread: Mutex::new(None),
                max_indexed: AtomicU64::new(0),
            });
            let during = Arc::downgrade(&ix);
            *lock(&rows.while_read) = Some(Box::new(move || {
                let ix = during.upgrade().unwrap();
                ix.touch(&[2]);
                ix.mark_dirty();
            }));

            let mut writer = ix.rebuild_now().unwrap_or_else(|e| {
                panic!("old folder dirty: {old_folder_dirty}: the rebuild failed: {e}")
            });
            assert!(
                read(&ix.engine).is_some(),
                "the rebuilt index serves searches"
            );
            assert!(
                dir.join(DIRTY_FILE).exists() && lock(&ix.work).dirty,
                "old folder dirty: {old_folder_dirty}: a touch made durable during the \
                 rebuild and not committed must leave the new folder marked"
            );
            ix.commit_pending(&mut writer).unwrap();
            assert!(!dir.join(DIRTY_FILE).exists() && !lock(&ix.work).dirty);
            assert!(lock(&ix.work).pending.is_empty());
        }
    }
}
