//! The crash torture suite (`hearth torture`) on a small budget: the real server is
//! killed with SIGKILL at random points while clients write, restarted, and checked
//! against the ledger of acknowledged writes. `hearth torture --cycles 100` is the
//! long run (results in `benches/RESULTS.md`).

#![allow(clippy::expect_used)]

mod common;

use std::process::Command;

/// Runs `COMMAND torture args...` (`common::torture`); returns its report.
fn torture(command: Command, args: &[&str]) -> String {
    let stdout = common::torture(command, args);
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
    stdout
}

/// `hearth-tools torture`: its server is the `hearth` next to it.
#[test]
fn ten_kill_9_cycles_lose_nothing_acknowledged_in_always() {
    common::hearth_exe();
    let report = torture(common::tools(), &["--cycles", "10"]);
    // One client also rewrites the realm's description (`PATCH /realm`).
    assert!(report.contains("descriptions "), "{report}");
}

/// `hearth torture`: `hearth` runs `hearth-tools`, whose server is that `hearth`.
#[test]
fn interval_loses_at_most_its_bound() {
    torture(
        common::hearth(),
        &[
            "--cycles",
            "3",
            "--durability",
            "interval",
            "--flush-interval-ms",
            "200",
        ],
    );
}
