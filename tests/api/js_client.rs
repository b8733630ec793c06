//! Real clients: every `tests/js/test_*.js` script is run with the official JavaScript
//! client, zulip-js 2.1.0 (pinned by `tests/js/package-lock.json`, installed into
//! `tests/js/node_modules` by `npm ci`), against its own fresh development server, with
//! the `node` named by `HEARTH_NODE`. Without `HEARTH_NODE` the test says so and passes,
//! except under CI (`CI` set), where a missing client fails it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

fn js_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js")
}

fn scripts() -> Vec<PathBuf> {
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(js_dir())
        .expect("tests/js")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("test_") && name.ends_with(".js")
        })
        .collect();
    scripts.sort();
    scripts
}

#[actix_web::test]
async fn official_js_client() {
    let scripts = scripts();
    assert!(
        scripts.iter().any(|s| s.ends_with("test_client.js")),
        "{scripts:?}"
    );
    let Some(node) = std::env::var_os("HEARTH_NODE") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "HEARTH_NODE must name a node (20 or later) under CI, with `npm ci` run in tests/js"
        );
        eprintln!(
            "SKIPPED official_js_client: HEARTH_NODE is not set. Install zulip-js 2.1.0 with \
             `(cd tests/js && npm ci)` and run `HEARTH_NODE=$(command -v node) cargo test`"
        );
        return;
    };
    let installed = js_dir().join("node_modules/zulip-js/package.json");
    let manifest = std::fs::read_to_string(&installed).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run `npm ci` in tests/js first",
            installed.display()
        )
    });
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(
        manifest["version"], "2.1.0",
        "tests/js/node_modules holds another zulip-js: run `npm ci` in tests/js"
    );
    let mut failed = Vec::new();
    for script in scripts {
        let app = TestApp::spawn().await;
        let (node, script_arg, url) = (node.clone(), script.clone(), app.url.clone());
        // The server runs on this thread's System: wait for the child off it.
        let out = tokio::task::spawn_blocking(move || {
            Command::new(node)
                .arg(script_arg)
                .arg(url)
                .current_dir(js_dir())
                .output()
        })
        .await
        .unwrap()
        .expect("run HEARTH_NODE");
        let name = script.file_name().unwrap().to_string_lossy().into_owned();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("{name}: {}\n{stdout}{stderr}", out.status);
        if !out.status.success() {
            failed.push(name);
        }
        app.running.unwrap().shutdown().await;
    }
    assert!(failed.is_empty(), "zulip-js scripts failed: {failed:?}");
}
