//! The crash torture suite (`hearth torture`) on a small budget: the real server is
//! killed with SIGKILL at random points while clients write, restarted, and checked
//! against the ledger of acknowledged writes. `hearth torture --cycles 100` is the
//! long run (results in `benches/RESULTS.md`).

#![allow(clippy::expect_used)]

use std::process::Command;

/// Runs `hearth torture args...`; returns its report.
fn torture(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("torture")
        .args(args)
        .output()
        .expect("run hearth torture");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(out.status.success(), "torture failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("torture passed"), "{stdout}");
    // Every write type was acknowledged at least once, so every one was checked.
    for kind in [
        "channels",
        "subscriptions",
        "users",
        "messages",
        "edits",
        "reactions",
        "groups",
        "statuses",
    ] {
        assert!(
            stdout.contains(&format!("{kind} ")),
            "no {kind} written:\n{stdout}"
        );
    }
    stdout.into_owned()
}

#[test]
fn ten_kill_9_cycles_lose_nothing_acknowledged_in_always() {
    let report = torture(&["--cycles", "10"]);
    // One client also rewrites the realm's description (`PATCH /realm`).
    assert!(report.contains("descriptions "), "{report}");
}

#[test]
fn interval_loses_at_most_its_bound() {
    torture(&[
        "--cycles",
        "3",
        "--durability",
        "interval",
        "--flush-interval-ms",
        "200",
    ]);
}
