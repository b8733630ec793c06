//! schemathesis, driven by Zulip's OpenAPI description (`tests/schemathesis/`, Apache
//! 2.0, see `ZULIP-LICENSE` there): requests generated from every documented operation
//! (its examples, then fuzzed values) against a fresh development server, as its owner.
//! The gates: `not_a_server_error` (no generated request gets a 5xx) and
//! `response_schema_conformance` (every answer fits the description, as
//! `tests/schemathesis/prepare.py` corrects it: only where the description disagrees
//! with itself or with feature level 420; see there). It adds what Zulip serves without
//! describing, the incoming webhooks among them, posted with the owner's Basic
//! credentials: their examples are `tests/fixtures/webhooks/`, then fuzzed bodies.
//!
//! Runs when `HEARTH_SCHEMATHESIS` names the `schemathesis` executable of a
//! virtualenv (`.ci/run` makes one); otherwise it says so and passes, except under CI.
//! `HEARTH_SCHEMATHESIS_EXAMPLES` sets the examples per operation (default 5).
//!
//! The owner never deactivates their own account (`deactivate-own-user` is left out):
//! the rest of the run would be refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

#[actix_web::test]
async fn generated_from_zulips_openapi_no_server_errors_and_answers_fit_the_schema() {
    let Some(st) = std::env::var_os("HEARTH_SCHEMATHESIS") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "HEARTH_SCHEMATHESIS must name the schemathesis executable under CI"
        );
        eprintln!(
            "SKIPPED schemathesis: HEARTH_SCHEMATHESIS is not set. Set it to the \
             `schemathesis` of a virtualenv, e.g. `python3 -m venv .st && .st/bin/pip \
             install schemathesis && HEARTH_SCHEMATHESIS=$PWD/.st/bin/schemathesis cargo test`"
        );
        return;
    };
    let st = PathBuf::from(st);
    let python = st.with_file_name("python");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis");
    let work = tempfile::tempdir().unwrap();
    let spec = work.path().join("zulip-openapi.json");
    let out = Command::new(&python)
        .arg(dir.join("prepare.py"))
        .arg(dir.join("zulip-openapi.yaml"))
        .arg(&spec)
        .arg(dir.join("../fixtures/webhooks"))
        .output()
        .expect("run prepare.py with the virtualenv's python");
    assert!(
        out.status.success(),
        "prepare.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let app = TestApp::spawn().await;
    let owner = "desdemona@zulip.com";
    let key = app.api_key(owner).await;
    let examples = std::env::var("HEARTH_SCHEMATHESIS_EXAMPLES").unwrap_or_else(|_| "5".into());
    let args: Vec<String> = vec![
        "run".into(),
        spec.display().to_string(),
        "--url".into(),
        format!("{}/api/v1", app.url),
        "--auth".into(),
        format!("{owner}:{key}"),
        "--checks".into(),
        "not_a_server_error,response_schema_conformance".into(),
        "--phases".into(),
        "examples,fuzzing".into(),
        "--max-examples".into(),
        examples,
        "--workers".into(),
        "2".into(),
        "--seed".into(),
        "20261123".into(),
        "--exclude-operation-id".into(),
        "deactivate-own-user".into(),
        "--no-color".into(),
    ];
    // The server runs on this thread's System: wait for the child off it.
    // Its cache goes to the working directory: the temporary one.
    let cwd = work.path().to_path_buf();
    let out =
        tokio::task::spawn_blocking(move || Command::new(st).args(&args).current_dir(cwd).output())
            .await
            .unwrap()
            .expect("run schemathesis");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(
        out.status.success(),
        "schemathesis found server errors or answers off the schema (see above)"
    );
    assert!(
        stdout.contains("Tested:"),
        "schemathesis did not run: {stdout}"
    );
}
