//! CI smoke run of `hearth load`: the presence scenario against an in-process server
//! passes its default thresholds and prints its report.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn presence_smoke_run_passes_its_thresholds() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .env("HEARTH_METRICS_BIND", "off")
        .args(["load", "--scenario", "presence", "--users", "200"])
        .args(["--duration", "5s", "--warmup", "1s", "--speedup", "10"])
        .arg("--json")
        .arg(&json)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
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
    let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .env("HEARTH_METRICS_BIND", "off")
        .args([
            "load",
            "--scenario",
            "messages",
            "--users",
            "5",
            "--connections",
            "2",
        ])
        .args(["--duration", "1s", "--warmup", "0s", "--max-p99", "1us"])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("FAIL: "), "{stdout}");
    assert!(stdout.contains("POST /messages"), "{stdout}");
}
