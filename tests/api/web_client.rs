//! The web client in a real browser: `web/e2e/run.mjs` drives Debian's chromium through
//! playwright-core (installed into `web/node_modules` by `npm ci`) against a fresh
//! development server with its history, started in-process, with the `node` named by
//! `HEARTH_NODE`. Every flow writes a screenshot under `target/web-e2e/`. Without
//! `HEARTH_NODE` the test says so and passes, except under CI (`CI` set), where it fails.
//!
//! The in-process server cannot die as a process does, so the flow
//! `server-restart-mid-session` runs the hearth binary itself (`HEARTH_E2E_BIN`) on a
//! folder of its own (`HEARTH_E2E_DATA`), kills it with SIGKILL while a browser is
//! logged in, and starts it again on the same folder and port.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

fn web_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("web")
}

#[actix_web::test]
async fn web_client_in_chromium() {
    assert!(web_dir().join("e2e/run.mjs").is_file());
    let Some(node) = std::env::var_os("HEARTH_NODE") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "HEARTH_NODE must name a node (20.19 or later) under CI, with chromium at /usr/bin/chromium"
        );
        eprintln!(
            "SKIPPED web_client_in_chromium: HEARTH_NODE is not set. Run \
             `HEARTH_NODE=$(command -v node) cargo test --test api web_client` \
             (needs /usr/bin/chromium; `npm ci` runs in web/ when needed)"
        );
        return;
    };
    if !web_dir()
        .join("node_modules/playwright-core/package.json")
        .is_file()
    {
        let npm = std::env::var_os("HEARTH_NPM").unwrap_or_else(|| "npm".into());
        let status = Command::new(npm)
            .arg("ci")
            .current_dir(web_dir())
            .status()
            .expect("run npm ci in web/");
        assert!(status.success(), "npm ci in web/ failed");
    }
    let app = TestApp::spawn_configured(tempfile::tempdir().expect("temp dir"), |c| {
        c.dev_without_history = false;
    })
    .await;
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/web-e2e");
    let url = app.url.clone();
    let restart_data = tempfile::tempdir().expect("temp dir");
    let restart_path = restart_data.path().to_path_buf();
    // The server runs on this thread's System: wait for the browser off it.
    let output = tokio::task::spawn_blocking(move || {
        Command::new(node)
            .arg("e2e/run.mjs")
            .arg(url)
            .arg(&out)
            .env("HEARTH_E2E_BIN", HEARTH)
            .env("HEARTH_E2E_DATA", &restart_path)
            .current_dir(web_dir())
            .output()
    })
    .await
    .unwrap()
    .expect("run HEARTH_NODE");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("web e2e: {}\n{stdout}{stderr}", output.status);
    app.running.unwrap().shutdown().await;
    assert!(
        output.status.success(),
        "web client flows failed:\n{stdout}{stderr}"
    );
    assert!(
        stdout.lines().any(|l| l.ends_with(" passed, 0 failed")),
        "no summary line: {stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("ok   server-restart-mid-session")),
        "the restart flow did not run: {stdout}"
    );
    drop(restart_data);
}
