//! Real clients: every `tests/python/test_*.py` script is run against its own fresh
//! development server, with the interpreter named by `HEARTH_PYTHON` (a virtualenv
//! holding `zulip==0.9.1`; `.ci/run` makes one). Without `HEARTH_PYTHON` the test says
//! so and passes, except under CI (`CI` set), where a missing client fails it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

fn scripts() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/python")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("test_") && name.ends_with(".py")
        })
        .collect();
    scripts.sort();
    scripts
}

#[actix_web::test]
async fn official_python_client() {
    let scripts = scripts();
    assert!(
        scripts.iter().any(|s| s.ends_with("test_client.py")),
        "{scripts:?}"
    );
    let Some(python) = std::env::var_os("HEARTH_PYTHON") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "HEARTH_PYTHON must name a Python with zulip==0.9.1 under CI"
        );
        eprintln!(
            "SKIPPED official_python_client: HEARTH_PYTHON is not set. Set it to a Python \
             with zulip==0.9.1 installed, e.g. `python3 -m venv .venv && \
             .venv/bin/pip install zulip==0.9.1 && HEARTH_PYTHON=$PWD/.venv/bin/python cargo test`"
        );
        return;
    };
    let mut failed = Vec::new();
    for script in scripts {
        let app = TestApp::spawn().await;
        let (python, script_arg, url) = (python.clone(), script.clone(), app.url.clone());
        // The server runs on this thread's System: wait for the child off it.
        let out = tokio::task::spawn_blocking(move || {
            Command::new(python).arg(script_arg).arg(url).output()
        })
        .await
        .unwrap()
        .expect("run HEARTH_PYTHON");
        let name = script.file_name().unwrap().to_string_lossy().into_owned();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("{name}: {}\n{stdout}{stderr}", out.status);
        if !out.status.success() {
            failed.push(name);
        }
        app.running.unwrap().shutdown().await;
    }
    assert!(
        failed.is_empty(),
        "python client scripts failed: {failed:?}"
    );
}
