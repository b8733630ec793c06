//! `hearth realm move` cut short at every one of its steps: the command killed there
//! (`HEARTH_MOVE_FAULT=after:<step>`, which ends it as `kill -9` would), the command
//! killed and then the source or the target too, or the source or the target ending
//! itself in the middle of an admin request while the command goes on
//! (`HEARTH_ADMIN_FAULT=after:<op>`: the work done, the answer never sent).
//!
//! A table of cases; each runs on two fresh nodes, with writers on the source for as
//! long as the first (cut) run lasts, and checks, as the crash torture suite does with
//! its ledger of acknowledged writes:
//!
//! - afterwards (the dead node started again) at most one node takes the realm's writes
//!   (a target serving it beside a source that is not frozen would acknowledge writes
//!   the other never sees), and that node holds every acknowledged write;
//! - the same move run again finishes it: the target serves the realm with every
//!   acknowledged write, the source has it no more, the placement names the target.
//!
//! No router is needed: the reload command is `true` (the placement is still
//! rewritten), and the writers talk to the nodes directly.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::cluster::{
    create_realm, host, ledger_messages, move_args, runtime, send, write_placement, Node,
};
use crate::common::{hearth, output};

/// Who dies, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// The move command, after its step `at` (`HEARTH_MOVE_FAULT`).
    Command,
    /// The command after its step `at`, then the source, by `kill -9`.
    CommandThenSource,
    /// The command after its step `at`, then the target, by `kill -9`.
    CommandThenTarget,
    /// The source, after doing the admin operation `at` and before answering it
    /// (`HEARTH_ADMIN_FAULT`); the command goes on without it.
    Source,
    /// The target, likewise.
    Target,
}

#[derive(Debug, Clone, Copy)]
struct Case {
    cut: Cut,
    at: &'static str,
}

const fn case(cut: Cut, at: &'static str) -> Case {
    Case { cut, at }
}

/// The command killed after each step of `hearth::ops::moving::STEPS` a first move
/// reaches (`drop-staged` only comes in a move run again after a cut; its cut leaves
/// what `look`'s does).
const COMMAND: &[Case] = &[
    case(Cut::Command, "look"),
    case(Cut::Command, "hold"),
    case(Cut::Command, "export"),
    case(Cut::Command, "import"),
    case(Cut::Command, "catch-up"),
    case(Cut::Command, "settle"),
    case(Cut::Command, "files"),
    case(Cut::Command, "freeze"),
    case(Cut::Command, "ship"),
    case(Cut::Command, "files-in-freeze"),
    case(Cut::Command, "activate"),
    case(Cut::Command, "placement"),
    case(Cut::Command, "reload"),
    case(Cut::Command, "drain"),
    case(Cut::Command, "drop"),
];

/// The command killed, then a node, at each step that changes a node's state.
const COMMAND_THEN_NODE: &[Case] = &[
    case(Cut::CommandThenSource, "hold"),
    case(Cut::CommandThenSource, "import"),
    case(Cut::CommandThenSource, "catch-up"),
    case(Cut::CommandThenSource, "freeze"),
    case(Cut::CommandThenSource, "ship"),
    case(Cut::CommandThenSource, "activate"),
    case(Cut::CommandThenSource, "drop"),
    case(Cut::CommandThenTarget, "import"),
    case(Cut::CommandThenTarget, "catch-up"),
    case(Cut::CommandThenTarget, "settle"),
    case(Cut::CommandThenTarget, "freeze"),
    case(Cut::CommandThenTarget, "ship"),
    case(Cut::CommandThenTarget, "activate"),
    case(Cut::CommandThenTarget, "placement"),
    case(Cut::CommandThenTarget, "drop"),
];

/// A node dying inside each admin request a move makes of it.
const NODE: &[Case] = &[
    case(Cut::Source, "hold"),
    case(Cut::Source, "export"),
    case(Cut::Source, "ship"),
    case(Cut::Source, "files"),
    case(Cut::Source, "freeze"),
    case(Cut::Source, "drop"),
    case(Cut::Target, "import"),
    case(Cut::Target, "append"),
    case(Cut::Target, "settle"),
    case(Cut::Target, "files"),
    case(Cut::Target, "activate"),
];

/// The nodes' flags: snapshots often, so the source's hold is what keeps the tail.
const NODE_ARGS: &[&str] = &["--snapshot-every", "20", "--rate-limit", "off"];

/// Writes to `url` until `stop`; the contents acknowledged (200). A refused write, a
/// lost connection or a timeout is not acknowledged, and the writer goes on.
async fn writer(
    url: String,
    who: (String, String),
    tag: usize,
    stop: Arc<AtomicBool>,
) -> Vec<String> {
    let http = reqwest::Client::new();
    let mut acknowledged = Vec::new();
    let mut i = 0;
    while !stop.load(Ordering::SeqCst) {
        let text = format!("writer {tag} message {i}");
        i += 1;
        let res = http
            .post(format!("{url}/api/v1/messages"))
            .header("host", host("acme"))
            .basic_auth(&who.0, Some(&who.1))
            .form(&[
                ("type", "stream"),
                ("to", "general"),
                ("topic", "ledger"),
                ("content", text.as_str()),
            ])
            .timeout(Duration::from_secs(10))
            .send()
            .await;
        match res {
            Ok(r) if r.status() == 200 => acknowledged.push(text),
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    acknowledged
}

/// `hearth realm move` of acme from `a` to `b`, with a placement and a reload command,
/// and `envs`.
fn run_move(
    a: (&Node, &Path),
    b: (&Node, &Path),
    placement: &Path,
    envs: &[(&str, &str)],
) -> std::process::Output {
    let mut args = move_args(a, b);
    args.extend([
        "--placement".into(),
        placement.to_str().unwrap().into(),
        "--reload-command".into(),
        "true".into(),
        "--drain".into(),
        "50ms".into(),
    ]);
    output(hearth().args(&args).envs(envs.iter().copied()))
}

/// The state of acme on a node (`None`: not there).
async fn state_of(node: &Node) -> Option<String> {
    node.admin
        .status()
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.realm == "acme")
        .map(|r| r.state)
}

/// Every acknowledged write is stored on the node at `url`, once.
async fn assert_complete(url: &str, who: (&str, &str), ledger: &[String], what: &str) {
    let http = reqwest::Client::new();
    let stored = ledger_messages(&http, url, &host("acme"), who).await;
    let mut once = stored.clone();
    once.sort();
    once.dedup();
    assert_eq!(once.len(), stored.len(), "{what}: a message stored twice");
    let missing: Vec<&String> = ledger.iter().filter(|m| !stored.contains(m)).collect();
    assert!(
        missing.is_empty(),
        "{what}: {} acknowledged writes lost: {missing:?}",
        missing.len()
    );
}

fn run_case(c: Case) {
    let what = format!("{c:?}");
    eprintln!("case {what}");
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let (email, key) = create_realm(&a_dir, "acme", "http://acme.cluster.test");
    std::fs::create_dir(&b_dir).unwrap();
    let who = (email.as_str(), key.as_str());
    let fault = [("HEARTH_ADMIN_FAULT", format!("after:{}", c.at))];
    let fault: Vec<(&str, &str)> = fault.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let none: Vec<(&str, &str)> = Vec::new();
    let a_env = if c.cut == Cut::Source { &fault } else { &none };
    let b_env = if c.cut == Cut::Target { &fault } else { &none };
    let mut a = Node::start_with(&a_dir, NODE_ARGS, a_env);
    let mut b = Node::start_with(&b_dir, NODE_ARGS, b_env);
    let placement = dir.path().join("placement.toml");
    write_placement(&placement, 1, &[("a", &a), ("b", &b)], &[("acme", "a")]);
    let rt = runtime();
    let http = reqwest::Client::new();
    let mut ledger = Vec::new();
    rt.block_on(async {
        for i in 0..5 {
            let text = format!("before {i}");
            let (status, _, body) = send(&http, &a.url(), &host("acme"), who, &text).await;
            assert_eq!(status, 200, "{what}: {body}");
            ledger.push(text);
        }
    });

    // The cut run, with writers on the source all along.
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            rt.spawn(writer(
                a.url(),
                (email.clone(), key.clone()),
                w,
                stop.clone(),
            ))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let move_fault = format!("after:{}", c.at);
    let command_dies = matches!(
        c.cut,
        Cut::Command | Cut::CommandThenSource | Cut::CommandThenTarget
    );
    let envs: Vec<(&str, &str)> = if command_dies {
        vec![("HEARTH_MOVE_FAULT", move_fault.as_str())]
    } else {
        Vec::new()
    };
    let out = run_move((&a, &a_dir), (&b, &b_dir), &placement, &envs);
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        ledger.extend(rt.block_on(w).unwrap());
    }
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success(),
        "{what}: the move was not cut: {said}"
    );
    if command_dies {
        // Ended by the fault (SIGABRT), so at that step: not by an error before it.
        assert_eq!(out.status.signal(), Some(6), "{what}: {said}");
    } else {
        eprintln!("{what}: {said}");
    }

    // The dead node (or the one killed now) starts again, without the fault.
    match c.cut {
        Cut::Command => {}
        Cut::CommandThenSource | Cut::Source => {
            if c.cut == Cut::Source {
                rt.block_on(async {
                    assert!(a.admin.status().await.is_err(), "{what}: the source lives");
                });
            }
            a.kill_9();
            a = Node::start(&a_dir, NODE_ARGS);
        }
        Cut::CommandThenTarget | Cut::Target => {
            if c.cut == Cut::Target {
                rt.block_on(async {
                    assert!(b.admin.status().await.is_err(), "{what}: the target lives");
                });
            }
            b.kill_9();
            b = Node::start(&b_dir, NODE_ARGS);
        }
    }

    rt.block_on(async {
        let (on_a, on_b) = (state_of(&a).await, state_of(&b).await);
        let states = format!("{what}: source {on_a:?}, target {on_b:?}");
        assert!(
            on_a.is_some() || on_b.is_some(),
            "{states}: the realm is gone"
        );
        let a_writes = on_a.as_deref() == Some("active");
        let b_writes = on_b.as_deref() == Some("active");
        assert!(!(a_writes && b_writes), "{states}: both nodes take writes");
        // The one node that takes writes has every acknowledged one, and takes more.
        let writable = if b_writes {
            Some(&b)
        } else if a_writes {
            Some(&a)
        } else {
            None
        };
        if let Some(node) = writable {
            assert_complete(&node.url(), who, &ledger, &states).await;
            let (status, _, body) = send(&http, &node.url(), &host("acme"), who, "between").await;
            assert_eq!(status, 200, "{states}: {body}");
            ledger.push("between".into());
        }
    });

    // The same move again (the nodes' new addresses in the placement): it finishes.
    write_placement(&placement, 1, &[("a", &a), ("b", &b)], &[("acme", "a")]);
    let out = run_move((&a, &a_dir), (&b, &b_dir), &placement, &[]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{what}: run again: {said}");
    rt.block_on(async {
        assert_eq!(state_of(&a).await, None, "{what}: still on the source");
        assert_eq!(state_of(&b).await.as_deref(), Some("active"), "{what}");
        assert_complete(&b.url(), who, &ledger, &what).await;
        let (status, _, body) = send(&http, &b.url(), &host("acme"), who, "after").await;
        assert_eq!(status, 200, "{what}: {body}");
    });
    let placed = std::fs::read_to_string(&placement).unwrap();
    assert!(placed.contains("acme = \"b\""), "{what}: {placed}");
}

#[test]
fn a_move_killed_after_any_step_is_finished_by_running_it_again() {
    COMMAND.iter().copied().for_each(run_case);
}

#[test]
fn a_move_killed_with_a_node_after_its_steps_is_finished_by_running_it_again() {
    COMMAND_THEN_NODE.iter().copied().for_each(run_case);
}

#[test]
fn a_node_dying_inside_a_move_leaves_one_writer_and_the_move_is_finished() {
    NODE.iter().copied().for_each(run_case);
}

/// Every step of a move is a case of the tables (all but `drop-staged`, which comes
/// only in a move run again).
#[test]
fn every_step_of_a_move_is_cut_in_a_case() {
    for step in hearth::ops::moving::STEPS {
        assert!(
            *step == "drop-staged" || COMMAND.iter().any(|c| c.at == *step),
            "step {step} is never cut"
        );
    }
}
