//! `hearth load`: a smoke run of the presence scenario against an in-process server,
//! the ceiling process, the refusal of driver-bound ratios, the fan-out ceiling, the
//! HTML report (opened in headless Chromium when there is one) and the capacity steps.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

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
    let stdout = succeeded(&out);
    assert!(stdout.contains("POST /users/me/presence"), "{stdout}");
    assert!(stdout.contains("p99.9 ms"), "{stdout}");
    assert!(stdout.contains("PASS"), "{stdout}");
    let report = report_of(&json);
    assert_eq!(report["passed"], true);
    assert_eq!(report["users"], 200);
    let ping = op_of(&report, "POST /users/me/presence");
    // 200 users pinging every 6 s for about 5 s: most of them pinged once.
    assert!(ping["count"].as_u64().unwrap() >= 100, "{ping}");
    assert_eq!(ping["errors"], 0);
}

/// `--messages-per-minute`: a realm's users send channel messages in turn beside their
/// pings, every message is answered, and each reaches the parked polls of the
/// channel's subscribers (the heartbeat is a minute away, so within the run only
/// messages answer polls).
#[test]
fn presence_with_channel_messages_reaches_the_parked_polls() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let out = load(
        &[
            "--scenario",
            "presence",
            "--users",
            "40",
            "--duration",
            "4s",
            "--warmup",
            "1s",
            "--speedup",
            "10",
            "--messages-per-minute",
            "300",
        ],
        Some(&json),
    );
    succeeded(&out);
    let report = report_of(&json);
    let sent = op_of(&report, "POST /messages");
    // One every 0.2 s for the 4 s measured.
    assert!(sent["count"].as_u64().unwrap() >= 10, "{sent}");
    assert_eq!(sent["errors"], 0, "{sent}");
    let polls = op_of(&report, "GET /events (long-poll)");
    // Each message answers the 40 users' polls (some answers carry several).
    assert!(polls["count"].as_u64().unwrap() >= 200, "{polls}");
    assert_eq!(polls["errors"], 0, "{polls}");
    let settings = report["settings"].to_string();
    assert!(
        settings.contains("channel messages per realm"),
        "{settings}"
    );
}

/// A message rate below zero, or not a number, is refused before anything starts.
#[test]
fn a_negative_or_unnumbered_message_rate_is_refused() {
    for rate in ["-1", "NaN", "inf"] {
        let arg = format!("--messages-per-minute={rate}");
        let out = load(&["--scenario", "presence", "--users", "5", &arg], None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{rate}: {stderr}");
        assert!(
            stderr.contains("--messages-per-minute must be zero or more"),
            "{rate}: {stderr}"
        );
    }
}

/// Two drivers at once, one making its connections from two other loopback
/// addresses, merged into one report (`--merge`): answers, users and errors add up,
/// each latency percentile lies between the drivers' own, the HTML page is written,
/// and reports of different scenarios are refused.
#[test]
fn reports_of_drivers_run_at_once_merge_into_one() {
    let dir = tempfile::tempdir().unwrap();
    let run = |json: &Path, extra: &[&str]| {
        let mut cmd = common::tools();
        cmd.env("HEARTH_METRICS_BIND", "off")
            .env("HEARTH_ADMIN_BIND", "off")
            .env("RUST_LOG", "warn")
            .args(["load", "--scenario", "presence", "--users", "100"])
            .args(["--duration", "4s", "--warmup", "1s", "--speedup", "10"])
            .args(extra)
            .arg("--json")
            .arg(json)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn().unwrap()
    };
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let first = run(&a, &[]);
    let second = run(&b, &["--source-addrs", "127.0.0.2,127.0.0.3"]);
    for child in [first, second] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let merged = dir.path().join("merged.json");
    let html = dir.path().join("merged.html");
    let out = common::tools()
        .args(["load", "--merge"])
        .arg(&a)
        .arg(&b)
        .arg("--json")
        .arg(&merged)
        .arg("--report")
        .arg(&html)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("PASS"), "{stdout}");
    let (ra, rb, m) = (report_of(&a), report_of(&b), report_of(&merged));
    assert_eq!(m["users"], 200);
    assert_eq!(m["passed"], true);
    let op = |r: &serde_json::Value, name: &str| {
        r["ops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["op"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {r}"))
    };
    let ping = "POST /users/me/presence";
    let (pa, pb, pm) = (op(&ra, ping), op(&rb, ping), op(&m, ping));
    assert_eq!(
        pm["count"].as_u64().unwrap(),
        pa["count"].as_u64().unwrap() + pb["count"].as_u64().unwrap()
    );
    assert_eq!(pm["errors"], 0);
    assert_eq!(
        m["total_requests"].as_u64().unwrap(),
        ra["total_requests"].as_u64().unwrap() + rb["total_requests"].as_u64().unwrap()
    );
    for q in ["p50_ms", "p99_ms", "max_ms"] {
        let (x, y, z) = (
            pa[q].as_f64().unwrap(),
            pb[q].as_f64().unwrap(),
            pm[q].as_f64().unwrap(),
        );
        assert!(
            x.min(y) <= z && z <= x.max(y),
            "{q}: {z} not within {x} and {y}"
        );
    }
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));

    // A report of another scenario does not add up with them.
    let mut other = ra.clone();
    other["scenario"] = "messages".into();
    let c = dir.path().join("c.json");
    std::fs::write(&c, serde_json::to_vec(&other).unwrap()).unwrap();
    let out = common::tools()
        .args(["load", "--merge"])
        .arg(&a)
        .arg(&c)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("different scenarios"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    succeeded(&out);
    let report = report_of(&json);
    let op = |name: &str| op_of(&report, name);
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

/// One HTTP/1.1 request on a new connection; the whole answer (head and body).
fn http(addr: &str, request: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn the_ceiling_runs_in_its_own_process_and_answers() {
    let mut child = common::tools()
        .args(["ceiling", "--bind", "127.0.0.1:0", "--workers", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("ceiling listening on ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    let addr = url.strip_prefix("http://").unwrap().to_owned();
    let answer = http(
        &addr,
        "GET /api/v1/users/me HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.ends_with(r#"{"result":"success","msg":""}"#),
        "{answer}"
    );
    // The fan-out reference: a parked poll gets the status change made after it.
    let parked = {
        let addr = addr.clone();
        std::thread::spawn(move || {
            http(
                &addr,
                "GET /api/v1/events?queue_id=ceiling&last_event_id=-1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            )
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(!parked.is_finished(), "the poll was not parked");
    let body = "status_text=fanout+7&away=false";
    let status = http(
        &addr,
        &format!(
            "POST /api/v1/users/me/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let polled = parked.join().unwrap();
    let json: serde_json::Value =
        serde_json::from_str(polled.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(json["events"][0]["type"], "user_status", "{polled}");
    assert_eq!(json["events"][0]["status_text"], "fanout 7", "{polled}");
    assert_eq!(json["events"][0]["id"], 0, "{polled}");
    // It stops when its standard input closes.
    drop(child.stdin.take());
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(Instant::now() < until, "the ceiling did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The standard output of a command that must have succeeded (both outputs shown
/// when it did not).
fn succeeded(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    stdout
}

/// One operation's figures in a report.
fn op_of(report: &serde_json::Value, name: &str) -> serde_json::Value {
    report["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

fn report_of(json: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap()
}

/// A driver made slow on purpose (one thread, burning 50 ms per answer, 16 requests
/// under way so that an answer always waits for it, even on a loaded machine) is the
/// limit of its own run: the report says so and gives no ratio to the ceiling.
#[test]
fn a_driver_bound_ratio_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let out = load(
        &[
            "--scenario",
            "presence",
            "--users",
            "10",
            "--connections",
            "16",
            "--duration",
            "2s",
            "--warmup",
            "0s",
            "--ceiling",
            "--driver-threads",
            "1",
            "--driver-spin",
            "50ms",
        ],
        Some(&json),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("WITHHELD"), "{stdout}");
    let report = report_of(&json);
    assert!(report["ratio_refused"].is_string(), "{report}");
    assert!(report["ceiling"]["count"].as_u64().unwrap() > 0, "{report}");
    for op in report["ops"].as_array().unwrap() {
        assert!(op["throughput_vs_ceiling"].is_null(), "{op}");
    }
    let ceiling = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "ceiling")
        .cloned()
        .unwrap();
    assert!(
        ceiling["driver_busy_percent"].as_f64().unwrap() >= 90.0,
        "{ceiling}"
    );
}

/// A driver with CPU to spare (an open loop of 40 req/s) gives the ratios.
#[test]
fn a_driver_with_room_gives_the_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let out = load(
        &[
            "--scenario",
            "presence",
            "--users",
            "10",
            "--rate",
            "40",
            "--connections",
            "4",
            "--duration",
            "2s",
            "--warmup",
            "0s",
            "--ceiling",
        ],
        Some(&json),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(!stdout.contains("WITHHELD"), "{stdout}");
    let report = report_of(&json);
    assert!(report["ratio_refused"].is_null(), "{report}");
    let ping = report["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "POST /users/me/presence")
        .cloned()
        .unwrap();
    // Both phases at the same 40 req/s.
    let ratio = ping["throughput_vs_ceiling"].as_f64().unwrap();
    assert!((0.8..1.25).contains(&ratio), "{ping}");
}

/// The fan-out scenario against its ceiling: the same rounds against a server that
/// parks the polls and answers them all with one encoding of the event.
#[test]
fn fanout_has_a_ceiling() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let out = load(
        &[
            "--scenario",
            "fanout",
            "--users",
            "20",
            "--duration",
            "2s",
            "--warmup",
            "1s",
            "--ceiling",
        ],
        Some(&json),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let report = report_of(&json);
    let ceiling = &report["ceiling"];
    assert_eq!(
        ceiling["op"], "ceiling: fan-out to the last poll",
        "{report}"
    );
    assert!(ceiling["count"].as_u64().unwrap() >= 1, "{ceiling}");
    assert_eq!(ceiling["errors"], 0, "{ceiling}");
    if report["ratio_refused"].is_null() {
        assert!(report["fanout_ratio"].as_f64().unwrap() > 0.0, "{report}");
        assert!(
            stdout.contains("fan-out: hearth's last poll p50 is"),
            "{stdout}"
        );
    }
}

/// Chromium from the machine's packages, if any.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn headless(browser: &str, args: &[&str]) -> Output {
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
        ])
        .args(args)
        .output()
        .unwrap()
}

/// `--report FILE.html`: one well-formed page with no external resource, whose charts
/// hold every series; opened in headless Chromium when the machine has it (CI does).
#[test]
fn the_html_report_is_self_contained_and_renders() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let json = dir.path().join("report.json");
    let mut cmd = common::tools();
    let out = cmd
        .env("RUST_LOG", "warn")
        .args([
            "load",
            "--scenario",
            "mixed",
            "--users",
            "20",
            "--connections",
            "4",
            "--duration",
            "3s",
            "--warmup",
            "1s",
            "--report",
        ])
        .arg(&html)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(&page, options)
        .unwrap_or_else(|e| panic!("not well-formed: {e}"));
    // No resource from anywhere: no script, no link, no src, no url(); the only
    // addresses are the loopback ones the run used.
    assert!(!page.contains("<script") && !page.contains("<link") && !page.contains("url("));
    assert!(!page.contains("src=") && !page.contains("href=") && !page.contains("@import"));
    assert!(!page.contains("https://"));
    for (at, _) in page.match_indices("http://") {
        assert!(
            page[at..].starts_with("http://127.0.0.1"),
            "{}",
            &page[at..at + 40]
        );
    }
    let report = report_of(&json);
    let ops: Vec<String> = report["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["op"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        ops.iter().any(|o| o == "POST /users/me/presence"),
        "{ops:?}"
    );
    // Each chart holds a drawn line for every operation.
    for chart in ["throughput", "p50", "p99", "errors", "distribution"] {
        let section = doc
            .descendants()
            .find(|n| n.attribute("id") == Some(chart))
            .unwrap_or_else(|| panic!("no chart {chart}"));
        let series: Vec<(String, String)> = section
            .descendants()
            .filter(|n| n.has_tag_name("path") && n.attribute("class") == Some("series"))
            .map(|n| {
                (
                    n.attribute("data-series").unwrap().to_owned(),
                    n.attribute("d").unwrap().to_owned(),
                )
            })
            .collect();
        for op in &ops {
            let (_, d) = series
                .iter()
                .find(|(name, _)| name == op)
                .unwrap_or_else(|| panic!("{chart}: no line for {op}: {series:?}"));
            if chart != "errors" {
                assert!(d.starts_with('M'), "{chart} {op}: {d}");
            }
        }
    }
    // The settings and the server's metrics (the in-process server's listener).
    assert!(page.contains("<h2>Settings</h2>") && page.contains("driver threads"));
    assert!(
        page.contains("hearth_http_requests_total{"),
        "no metrics deltas in the page"
    );

    let Some(browser) = chromium() else {
        let why = "chromium is not installed (`apt-get install chromium`): the page was validated, not opened";
        assert!(std::env::var_os("CI").is_none(), "{why}, and CI is set");
        eprintln!("{why}");
        return;
    };
    let url = format!("file://{}", html.display());
    let dom = headless(browser, &["--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    let rendered = dom.matches("class=\"series\"").count();
    assert_eq!(
        rendered,
        page.matches("class=\"series\"").count(),
        "the browser's DOM lacks the charts: {dom}"
    );
    // A screenshot of the page against one of an empty page: the charts' pixels.
    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let shot = |page: &Path, png: &Path| {
        let out = headless(
            browser,
            &[
                "--window-size=1000,2400",
                &format!("--screenshot={}", png.display()),
                &format!("file://{}", page.display()),
            ],
        );
        assert!(
            png.is_file(),
            "no screenshot: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::metadata(png).unwrap().len()
    };
    let charts = shot(&html, &dir.path().join("charts.png"));
    let empty = shot(&blank, &dir.path().join("blank.png"));
    assert!(
        charts > 4 * empty,
        "the screenshot looks blank: {charts} bytes against {empty}"
    );
}

/// `capacity`: users added in steps; each step's verdict follows Mattermost's
/// thresholds from its own figures.
#[test]
fn capacity_adds_users_in_steps() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let out = load(
        &[
            "--scenario",
            "capacity",
            "--users",
            "40",
            "--step-users",
            "20",
            "--step-duration",
            "3s",
            "--speedup",
            "30",
        ],
        Some(&json),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("capacity: "), "{stdout}");
    let report = report_of(&json);
    let cap = &report["capacity"];
    let steps = cap["steps"].as_array().unwrap();
    assert!(!steps.is_empty(), "{cap}");
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s["users"].as_u64().unwrap(), 20 * (i as u64 + 1), "{s}");
        let healthy = s["mean_ms"].as_f64().unwrap() < 100.0
            && s["p99_ms"].as_f64().unwrap() < 2000.0
            && s["error_rate_percent"].as_f64().unwrap() < 0.025;
        assert_eq!(s["healthy"].as_bool().unwrap(), healthy, "{s}");
        let ops: Vec<&str> = s["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["op"].as_str().unwrap())
            .collect();
        // A ping every 2 s and a registration per user: both in every step.
        assert!(ops.contains(&"POST /users/me/presence"), "{ops:?}");
        assert!(ops.contains(&"POST /register"), "{ops:?}");
    }
    let healthy = steps.iter().take_while(|s| s["healthy"] == true).count();
    match healthy {
        0 => assert!(cap["healthy_users"].is_null()),
        n => assert_eq!(cap["healthy_users"], steps[n - 1]["users"], "{cap}"),
    }
    assert_eq!(out.status.success(), healthy > 0, "{stdout}");
}

/// nginx, when this machine has one (`apt-get install nginx-light`).
fn nginx() -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([std::path::PathBuf::from("/usr/sbin")])
        .map(|d| d.join("nginx"))
        .find(|p| p.is_file())
}

/// `benches/cluster_run.sh` at a small scale: four realms on two nodes behind a real
/// nginx, driven by two `hearth load` processes of two realms each (`--realm`, the
/// script's DRIVER_USERS), their reports merged into one with every realm's users.
/// Skipped (and says so) without nginx.
#[test]
fn realms_on_nodes_behind_nginx_are_driven_by_processes_of_several_realms() {
    let Some(nginx) = nginx() else {
        eprintln!("no nginx: the cluster run is skipped");
        return;
    };
    let hearth = common::hearth_exe();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .arg(root.join("benches/cluster_run.sh"))
        .env("HEARTH", hearth)
        .env("HEARTH_TOOLS", env!("CARGO_BIN_EXE_hearth-tools"))
        .env("NGINX", &nginx)
        .env("WORK", work.path())
        .env("NODES", "2")
        .env("REALMS", "4")
        .env("USERS", "30")
        .env("DRIVER_USERS", "60")
        .env("SPEEDUP", "20")
        .env("WARMUP", "2s")
        .env("DURATION", "5s")
        .env("MESSAGES_PER_MINUTE", "60")
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    assert!(
        stdout.contains("2 driver processes, up to 2 realms (60 users) each"),
        "{stdout}"
    );
    let reports = |ext: &str| {
        let mut v: Vec<_> = std::fs::read_dir(work.path().join("reports"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect();
        v.sort();
        v
    };
    assert_eq!(reports("json").len(), 2, "{stdout}");
    // Each driver registered both of its realms' users, each realm by its host name.
    for log in reports("txt") {
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            text.matches("30 queues registered").count(),
            2,
            "{}: {text}",
            log.display()
        );
    }
    for json in reports("json") {
        let r = report_of(&json);
        assert_eq!(r["users"], 60, "{r}");
        assert!(r["target"].as_str().unwrap().contains("2 realms"), "{r}");
    }
    let all = report_of(&work.path().join("all.json"));
    assert_eq!(all["users"], 120, "{all}");
    assert_eq!(all["passed"], true, "{all}");
    assert_eq!(all["total_errors"], 0, "{all}");
    let ping = all["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "POST /users/me/presence")
        .cloned()
        .expect("pings in the merged report");
    // 120 users pinging every 3 s for 5 s measured.
    assert!(ping["count"].as_u64().unwrap() >= 120, "{ping}");
    // A message a second in each realm, to #general, which populate subscribed every
    // simulated user to: each answers its realm's 30 parked polls (the heartbeat is a
    // minute away).
    let sent = op_of(&all, "POST /messages");
    assert!(sent["count"].as_u64().unwrap() >= 12, "{sent}");
    assert_eq!(sent["errors"], 0, "{sent}");
    let polls = op_of(&all, "GET /events (long-poll)");
    assert!(polls["count"].as_u64().unwrap() >= 120, "{polls}");
    assert!(work.path().join("all.html").is_file());
    assert!(stdout.contains("healthy (mean < 100 ms"), "{stdout}");
}
