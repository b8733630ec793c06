//! CI smoke run of `hearth load`: the presence scenario against an in-process server
//! passes its default thresholds and prints its report.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Output;

/// Runs `hearth-tools load` with `args` (metrics off, warnings only).
fn load(args: &[&str], json: Option<&std::path::Path>) -> Output {
    let mut cmd = common::tools();
    cmd.env("HEARTH_METRICS_BIND", "off")
        .env("HEARTH_ADMIN_BIND", "off")
        .env("RUST_LOG", "warn")
        .arg("load")
        .args(args);
    if let Some(json) = json {
        cmd.arg("--json").arg(json);
    }
    cmd.output().unwrap()
}

#[test]
fn presence_smoke_run_passes_its_thresholds() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let out = load(
        &[
            "--scenario",
            "presence",
            "--users",
            "200",
            "--duration",
            "5s",
            "--warmup",
            "1s",
            "--speedup",
            "10",
        ],
        Some(&json),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "hearth load failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("POST /users/me/presence"), "{stdout}");
    assert!(stdout.contains("p99.9 ms"), "{stdout}");
    assert!(stdout.contains("PASS"), "{stdout}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["passed"], true);
    assert_eq!(report["users"], 200);
    let ping = report["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "POST /users/me/presence")
        .expect("pings in the report");
    // 200 users pinging every 6 s for about 5 s: most of them pinged once.
    assert!(ping["count"].as_u64().unwrap() >= 100, "{ping}");
    assert_eq!(ping["errors"], 0);
}

#[test]
fn thresholds_fail_with_a_non_zero_exit() {
    let out = load(
        &[
            "--scenario",
            "messages",
            "--users",
            "5",
            "--connections",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--max-p99",
            "1us",
        ],
        None,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("FAIL: "), "{stdout}");
    assert!(stdout.contains("POST /messages"), "{stdout}");
}

/// The fan-out scenario: every poll gets every round's status change, each round's
/// last delivery is reported, and a round never times out at 50 users.
#[test]
fn fanout_reaches_every_poll() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let out = load(
        &[
            "--scenario",
            "fanout",
            "--users",
            "50",
            "--duration",
            "3s",
            "--warmup",
            "1s",
        ],
        Some(&json),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let op = |name: &str| {
        report["ops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["op"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in the report: {stdout}"))
    };
    let (last, each, sent) = (
        op("fan-out: status change to the last poll"),
        op("fan-out: status change to each poll"),
        op("POST /users/me/status"),
    );
    let rounds = last["count"].as_u64().unwrap();
    assert!(rounds >= 2, "{last}");
    assert_eq!(last["errors"], 0, "{last}");
    assert_eq!(sent["errors"], 0, "{sent}");
    // Every poll of every measured round (a round that began in the warm-up may be
    // counted in part).
    let each = each["count"].as_u64().unwrap();
    assert!(
        each >= rounds * 50 && each <= (rounds + 1) * 50,
        "{each} for {rounds} rounds"
    );
    // The last poll is never reached before the median one.
    assert!(
        last["p50_ms"].as_f64().unwrap()
            >= op("fan-out: status change to each poll")["p50_ms"]
                .as_f64()
                .unwrap()
    );
}

#[test]
fn fanout_refuses_the_ceiling() {
    let out = load(&["--scenario", "fanout", "--users", "2", "--ceiling"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--ceiling and --rate do not apply"));
}
