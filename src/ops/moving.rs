//! `hearth realm move`: a realm from one node to another, through their admin
//! listeners (`crate::admin`), while it keeps taking writes until a short freeze.
//!
//! The steps, each an admin request:
//!
//! 1. **hold** on the source: its snapshots keep the WAL records after the realm's
//!    present position, so the tail written during the export can still be shipped;
//! 2. **export** on the source, online: the archive at a position `P`, while writes go
//!    on; **import** it on the target, *staged* (never served, not even after a
//!    restart, until activated);
//! 3. **catch up** without a freeze: ship the records after `P` and append them to
//!    the staged realm, a few rounds, so that what is left for the freeze is small;
//!    then **settle** the staged realm (`POST /admin/settle`: replayed and snapshotted
//!    at its last record), so that the activation replays only the freeze's records;
//! 4. **freeze** the source (durably: a restart keeps it frozen): writes answer 503
//!    with `Retry-After`; its answer `F` bounds every acknowledged write;
//! 5. ship and append the rest, up to `F`, and copy the files uploaded since the export
//!    (stored files are not in the WAL; they are named by their SHA-256, so a copy is
//!    never wrong, only sometimes not needed);
//! 6. **activate** on the target (its start's recovery: snapshot plus the shipped
//!    records);
//! 7. rewrite the placement (atomically) when one is given, and reload the router
//!    (`--reload-command`); until then the router still sends the realm's requests to
//!    the source, whose freeze answers writes with `Retry-After` and serves reads;
//! 8. **drop** on the source: its queues answer `BAD_EVENT_QUEUE_ID`, its clients
//!    register again, through the router, on the target. With a placement but no
//!    reload command, the move stops before this step and says so: reload the router,
//!    then run the same command again, which finds the realm active on the target and
//!    does the rest.
//!
//! The freeze lasts steps 4–6: the tail written since the last catch-up round, not the
//! realm's size, nor the records written while the archive was exported and imported
//! (step 3's settle replayed those on the target before the freeze).
//!
//! # Failures and a second run
//!
//! A failure before the activation undoes the move: the staged copy is dropped from
//! the target, the source is unfrozen and its hold released. A move cut short (the
//! command, or a node, killed) is finished or redone by running the same command
//! again, which looks at both nodes first:
//!
//! - served on the target (activated): only the placement and the drop on the source
//!   are left, and the source must be frozen (a source taking writes again beside an
//!   active target is refused, for the operator to settle);
//! - staged on the target: that copy is dropped and the move starts over (a frozen
//!   source is exported as it is);
//! - on neither node, or only on the target: nothing to move.
//!
//! A failure at the activation (the target died, or its answer was lost) leaves the
//! source frozen unless the target answers that it does not serve the realm: the
//! target may have activated it before it died, and a source taking writes again beside
//! it would acknowledge writes the target never sees. Running the move again settles
//! it either way.
//!
//! # Cutting a move short on purpose
//!
//! `HEARTH_MOVE_FAULT=after:<step>` ends the command's process, as `kill -9` would (no
//! undo, no output), right after the step of `STEPS` named: the crash tests of a move
//! (`tests/api/cluster_faults.rs`) cut it there, kill a node or not, and check that one
//! node takes the realm's writes and that running the move again finishes it. The nodes'
//! own hook is `HEARTH_ADMIN_FAULT` (`crate::admin`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::admin::client::{AdminClient, RealmStatus};
use crate::ops::cluster::Placement;

/// `hearth realm move`'s arguments.
#[derive(Debug, Clone)]
pub struct MoveRequest {
    pub subdomain: String,
    pub from: String,
    pub from_token_file: PathBuf,
    pub to: String,
    pub to_token_file: PathBuf,
    pub placement: Option<PathBuf>,
    /// Run with `sh -c` once the placement is rewritten (regenerate the router's
    /// configuration and reload it); the source is dropped only after it succeeds.
    pub reload_command: Option<String>,
    /// How long the source stays frozen after the reload, before the drop: nginx's
    /// reload returns at once, and its old workers finish the requests of their open
    /// connections with the old placement (a write there is answered `Retry-After`,
    /// and then comes back through a new worker to the target).
    pub drain: Duration,
}

/// What a move did, for the operator.
#[derive(Debug, Clone, Default)]
pub struct MoveReport {
    /// The lines to print, in order.
    pub lines: Vec<String>,
    /// The archive's position, when this run exported one.
    pub exported_at: Option<u64>,
    /// The source's position at its freeze (every acknowledged write at or below it).
    pub frozen_at: Option<u64>,
    /// From the freeze's request to the target's activation.
    pub freeze: Option<Duration>,
    /// Records shipped, before and during the freeze.
    pub shipped_before_freeze: usize,
    pub shipped_in_freeze: usize,
}

impl MoveReport {
    fn say(&mut self, line: String) {
        tracing::info!("{line}");
        self.lines.push(line);
    }
}

/// Rounds of shipping before the freeze: each takes what was written during the one
/// before, so the tail left for the freeze shrinks quickly.
const CATCH_UP_ROUNDS: usize = 4;
/// A tail this small is left for the freeze.
const SMALL_TAIL: usize = 64;

/// The steps of a move, in order, by the names `HEARTH_MOVE_FAULT=after:<step>` uses:
/// `look` (both nodes' status read), `drop-staged` (a staged copy of an earlier run
/// dropped from the target), `hold`, `export`, `import`, `catch-up` (the rounds before
/// the freeze), `settle` (the target's copy snapshotted), `files` (copied before the
/// freeze), `freeze`, `ship` (the rest of the
/// tail, in the freeze), `files-in-freeze`, `activate`, `placement` (rewritten),
/// `reload` (the reload command ran), `drain` (waited), `drop` (the source's copy).
pub const STEPS: &[&str] = &[
    "look",
    "drop-staged",
    "hold",
    "export",
    "import",
    "catch-up",
    "settle",
    "files",
    "freeze",
    "ship",
    "files-in-freeze",
    "activate",
    "placement",
    "reload",
    "drain",
    "drop",
];

/// The step `HEARTH_MOVE_FAULT` names, read once.
fn fault_step() -> Option<&'static str> {
    static STEP: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    *STEP.get_or_init(|| {
        let f = std::env::var("HEARTH_MOVE_FAULT").ok()?;
        let step = f.strip_prefix("after:")?;
        STEPS.iter().copied().find(|s| *s == step)
    })
}

/// Marks `step` done: ends the process there when `HEARTH_MOVE_FAULT` names it.
fn done(step: &'static str) {
    if fault_step() == Some(step) {
        tracing::warn!("HEARTH_MOVE_FAULT: the move ends its process after step '{step}'");
        std::process::abort();
    }
}

fn find<'a>(realms: &'a [RealmStatus], realm: &str) -> Option<&'a RealmStatus> {
    realms.iter().find(|r| r.realm == realm)
}

/// Moves a realm between two nodes (see the module doc).
pub async fn move_realm(req: &MoveRequest) -> Result<MoveReport, String> {
    let realm = req.subdomain.as_str();
    let source = AdminClient::with_token_file(&req.from, &req.from_token_file)?;
    let target = AdminClient::with_token_file(&req.to, &req.to_token_file)?;
    // The placement is read first: a bad file refuses the move before it begins.
    let placement = match &req.placement {
        Some(path) => Some((Placement::load(path)?, path.clone())),
        None => None,
    };
    let mut report = MoveReport::default();
    let on_source = source.status().await?;
    let on_target = target.status().await?;
    let at_source = find(&on_source, realm).cloned();
    let at_target = find(&on_target, realm).cloned();
    done("look");
    match (&at_source, &at_target) {
        (_, Some(t)) if t.state != "staged" => {
            // Activated on the target by an earlier run.
            if let Some(s) = &at_source {
                if s.state != "frozen" {
                    return Err(format!(
                        "realm '{realm}' is served by both nodes and the source ({}) is not \
                         frozen: writes may have been acknowledged on both since; settle it \
                         by hand (export the source's, compare) before dropping either",
                        req.from
                    ));
                }
            }
            report.say(format!(
                "realm '{realm}' is already served by {} (at record {}); finishing the move",
                req.to, t.position
            ));
            finish(req, &source, placement, at_source.is_some(), &mut report).await?;
            return Ok(report);
        }
        (None, _) => {
            return Err(format!("no realm '{realm}' on {}", req.from));
        }
        (Some(_), Some(_)) => {
            report.say(format!(
                "realm '{realm}' is staged on {} from a move cut short: dropping that copy",
                req.to
            ));
            target.drop_realm(realm).await?;
            done("drop-staged");
        }
        (Some(_), None) => {}
    }
    let present = at_source.map_or(0, |s| s.position);
    let mut activating = false;
    match transfer(req, &source, &target, present, &mut activating, &mut report).await {
        Ok(()) => {}
        Err(e) => {
            let left = undo(req, &source, &target, activating).await;
            return Err(format!("the move of realm '{realm}' failed: {e}; {left}"));
        }
    }
    finish(req, &source, placement, true, &mut report).await?;
    Ok(report)
}

/// Undoes what a failed transfer began; says what is left. Before the activation was
/// asked for, the target's copy is only staged (never served, even after a restart):
/// the source is unfrozen whatever becomes of that copy. Once it was asked for, the
/// target may serve the realm (its answer lost, or it died after activating): the
/// source is unfrozen only when the target answers that it does not serve it.
async fn undo(
    req: &MoveRequest,
    source: &AdminClient,
    target: &AdminClient,
    activating: bool,
) -> String {
    let realm = req.subdomain.as_str();
    let mut failed = Vec::new();
    if activating {
        let target_serves = match target.status().await {
            Ok(on_target) => find(&on_target, realm).is_some_and(|t| t.state != "staged"),
            Err(e) => {
                return format!(
                    "the target may have activated the realm ({e}): the source stays frozen \
                     so that no write is acknowledged on both; run the move again once {} \
                     answers",
                    req.to
                );
            }
        };
        if target_serves {
            return format!(
                "{} serves the realm: the source stays frozen; run the move again to finish it",
                req.to
            );
        }
    }
    // Each step is harmless when it has nothing to undo.
    if let Err(u) = target.drop_realm(realm).await {
        failed.push(u);
    }
    if let Err(u) = source.unfreeze(realm).await {
        failed.push(u);
    }
    if let Err(u) = source.release(realm).await {
        failed.push(u);
    }
    if failed.is_empty() {
        "the source serves the realm as before".to_owned()
    } else {
        format!(
            "undoing it also failed ({}); run the move again",
            failed.join("; ")
        )
    }
}

/// Steps 1–6: from the hold to the target's activation.
/// `present`: the source's position when the move looked (the hold keeps every record
/// after it, so every record after the export's later position too).
async fn transfer(
    req: &MoveRequest,
    source: &AdminClient,
    target: &AdminClient,
    present: u64,
    activating: &mut bool,
    report: &mut MoveReport,
) -> Result<(), String> {
    let realm = req.subdomain.as_str();
    source.hold(realm, present).await?;
    done("hold");
    let scratch = tempfile::tempdir().map_err(|e| format!("a temporary folder: {e}"))?;
    let archive = scratch.path().join(format!("{realm}.archive"));
    let began = Instant::now();
    let exported = source.export(realm, &archive).await?;
    let size = std::fs::metadata(&archive).map(|m| m.len()).unwrap_or(0);
    done("export");
    report.exported_at = Some(exported);
    report.say(format!(
        "exported realm '{realm}' from {} at record {exported} ({size} bytes) in {} ms",
        req.from,
        began.elapsed().as_millis()
    ));
    let began = Instant::now();
    let (imported, mut at) = target.import(&archive).await?;
    if imported != realm {
        return Err(format!(
            "{} imported realm '{imported}', not '{realm}'",
            req.to
        ));
    }
    drop(scratch);
    done("import");
    report.say(format!(
        "imported it on {}, staged at record {at}, in {} ms",
        req.to,
        began.elapsed().as_millis()
    ));
    for _ in 0..CATCH_UP_ROUNDS {
        let tail = source.ship(realm, at).await?;
        if tail.records == 0 {
            break;
        }
        at = target.append(realm, &tail).await?;
        report.shipped_before_freeze += tail.records;
        if tail.records <= SMALL_TAIL {
            break;
        }
    }
    done("catch-up");
    // The target's copy replayed and snapshotted now, while writes go on: the activation
    // in the freeze then replays only what the freeze ships.
    let (settled, replayed) = target.settle(realm).await?;
    if settled != at {
        return Err(format!(
            "{} settled the staged realm at record {settled}, not at {at}",
            req.to
        ));
    }
    done("settle");
    // Files uploaded since the export: they are not in the WAL (content-addressed, so
    // copying one twice is harmless); most now, the rest in the freeze.
    let files = target.copy_files_from(source, realm).await?;
    done("files");
    report.say(format!(
        "caught up to record {at} ({} records and {files} files shipped while writes went on; \
         {replayed} replayed into the target's snapshot)",
        report.shipped_before_freeze
    ));
    let frozen = Instant::now();
    let frozen_at = source.freeze(realm).await?;
    done("freeze");
    report.frozen_at = Some(frozen_at);
    // Everything up to the freeze's position is durable on the source: ship it all.
    while at < frozen_at {
        let tail = source.ship(realm, at).await?;
        if tail.records == 0 {
            return Err(format!(
                "{} shipped nothing after record {at}, but froze at record {frozen_at}",
                req.from
            ));
        }
        at = target.append(realm, &tail).await?;
        report.shipped_in_freeze += tail.records;
    }
    done("ship");
    if at != frozen_at {
        return Err(format!(
            "the target is at record {at}, past the source's freeze at {frozen_at}"
        ));
    }
    let files = target.copy_files_from(source, realm).await?;
    done("files-in-freeze");
    *activating = true;
    let active = target.activate(realm).await?;
    let freeze = frozen.elapsed();
    done("activate");
    report.freeze = Some(freeze);
    report.say(format!(
        "froze the source at record {frozen_at}, shipped {} more records and {files} files, \
         activated on {} at record {active}: writes waited {} ms",
        report.shipped_in_freeze,
        req.to,
        freeze.as_millis()
    ));
    Ok(())
}

/// Steps 7–8: the placement, then the drop on the source (when it still has it).
async fn finish(
    req: &MoveRequest,
    source: &AdminClient,
    placement: Option<(Placement, PathBuf)>,
    drop_source: bool,
    report: &mut MoveReport,
) -> Result<(), String> {
    let realm = req.subdomain.as_str();
    if let Some((mut placement, path)) = placement {
        let node = node_named_by(&placement, &req.to).ok_or_else(|| {
            format!(
                "no node of {} has the admin address {}: the placement is left as it was",
                path.display(),
                req.to
            )
        })?;
        placement.place(realm, &node)?;
        placement.write(&path)?;
        done("placement");
        report.say(format!(
            "placement {}: realm '{realm}' on node '{node}'",
            path.display()
        ));
        match &req.reload_command {
            Some(command) => {
                let out = std::process::Command::new("sh")
                    .arg("-c")
                    .arg(command)
                    .output()
                    .map_err(|e| format!("cannot run the reload command: {e}"))?;
                if !out.status.success() {
                    return Err(format!(
                        "the reload command failed ({}): {}; the realm is served by {} and \
                         the source stays frozen: reload the router, then run the move again",
                        out.status,
                        String::from_utf8_lossy(&out.stderr).trim(),
                        req.to
                    ));
                }
                done("reload");
                report.say(format!(
                    "reloaded the router; the source stays frozen {} ms more for the \
                     router's old connections",
                    req.drain.as_millis()
                ));
                tokio::time::sleep(req.drain).await;
                done("drain");
            }
            None if drop_source => {
                report.say(format!(
                    "reload the router now (hearth cluster nginx --placement {} > \
                     PREFIX/nginx.conf && nginx -p PREFIX -c PREFIX/nginx.conf -s reload), \
                     then run this move again to drop the realm from {} (it stays frozen \
                     there until then)",
                    path.display(),
                    req.from
                ));
                return Ok(());
            }
            None => {}
        }
    }
    if drop_source {
        source.drop_realm(realm).await?;
        done("drop");
        report.say(format!(
            "dropped realm '{realm}' from {}: its clients register again on the target",
            req.from
        ));
    }
    Ok(())
}

/// The node of `placement` whose admin address `url` names (`http://` optional).
fn node_named_by(placement: &Placement, url: &str) -> Option<String> {
    let bare = url
        .trim_end_matches('/')
        .trim_start_matches("http://")
        .trim_start_matches("https://");
    placement
        .nodes
        .iter()
        .find(|(_, node)| node.admin == bare)
        .map(|(name, _)| name.clone())
}
