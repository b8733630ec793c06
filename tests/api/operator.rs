//! Operating hearth: the error bodies clients see, and the `hearth` command as an
//! operator meets it (start-up errors, output streams, logs, files, backup).
//!
//! The command-line tests start the real binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::child::ChildServer as Server;
use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::Value;

/// Asserts a failed command: non-zero exit, nothing on stdout, one line on stderr that
/// contains each of `needles` and no Rust `Debug` rendering. Returns that line.
#[track_caller]
fn assert_failed(out: &Output, needles: &[&str]) -> String {
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "exit status 0; stderr: {stderr}");
    assert_eq!(text(&out.stdout), "", "stdout of a failure");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr: {stderr}");
    let line = lines[0];
    assert!(line.starts_with("hearth: error: "), "{line}");
    for needle in needles {
        assert!(line.contains(needle), "{line:?} should name {needle:?}");
    }
    for debug in ["Os {", "Custom {", "kind:", "Error {", "\\\""] {
        assert!(!line.contains(debug), "Debug formatting in {line:?}");
    }
    line.to_owned()
}

/// `hearth serve --bind 127.0.0.1:0 args...` with `envs`, listening.
fn start_server(args: &[&str], envs: &[(&str, &str)]) -> Server {
    Server::up(args, envs)
}

/// An HTTP client (used inside `block_on`: the command-line tests run no actix System).
fn http() -> reqwest::Client {
    client()
}

/// Runs one future on a fresh current-thread runtime.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

// ---------------------------------------------------------------------------------
// 1. Error bodies

#[actix_web::test]
async fn wrong_method_answers_zulip_error_body_with_code() {
    let app = TestApp::spawn().await;
    for (method, path, allowed) in [
        (Method::POST, "/api/v1/server_settings", vec!["GET"]),
        (Method::DELETE, "/api/v1/users", vec!["GET", "POST"]),
        (
            Method::PUT,
            "/api/v1/users/me/subscriptions",
            vec!["GET", "POST", "PATCH", "DELETE"],
        ),
    ] {
        let reply = send(app.request(method.clone(), path, Auth::None)).await;
        assert_error(&reply, 405, "BAD_REQUEST", "Method Not Allowed");
        assert_eq!(
            keys(&reply.2),
            sorted(&["result", "msg", "code", "allowed_methods"]),
            "{method} {path}"
        );
        assert_eq!(reply.2["allowed_methods"], serde_json::json!(allowed));
        assert_eq!(
            reply.1.get("allow").and_then(|v| v.to_str().ok()),
            Some(allowed.join(", ").as_str())
        );
    }
}

// ---------------------------------------------------------------------------------
// 2. Start-up errors

#[test]
fn data_folder_that_is_a_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, "not a folder").unwrap();
    let file = file.to_str().unwrap();
    let out = run(&["serve", "--dev", "--bind", "127.0.0.1:0", "--data", file]);
    assert_failed(&out, &[file, "not a folder"]);
    // Below a file: the folder cannot be created.
    let below = format!("{file}/data");
    let out = run(&["serve", "--dev", "--bind", "127.0.0.1:0", "--data", &below]);
    assert_failed(&out, &[&below, "Not a directory"]);
}

#[test]
fn data_folder_that_is_not_writable_is_named() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let mut cmd = hearth();
    if rustix::process::geteuid().is_root() {
        // Root writes whatever the mode says: the server runs as `nobody` instead, in a
        // folder of its own, and from a link in this temporary folder (the checkout may
        // be closed to others).
        const NOBODY_ID: u32 = 65534;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::chown(&data, Some(NOBODY_ID), Some(NOBODY_ID)).unwrap();
        let program = dir.path().join("hearth");
        if std::fs::hard_link(HEARTH, &program).is_err() {
            std::fs::copy(HEARTH, &program).unwrap();
        }
        cmd = hearth_at(&program);
        cmd.uid(NOBODY_ID).gid(NOBODY_ID).current_dir(dir.path());
    }
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o500)).unwrap();
    let data = data.to_str().unwrap();
    let out = output(cmd.args(["serve", "--dev", "--bind", "127.0.0.1:0", "--data", data]));
    assert_failed(&out, &[data, "Permission denied"]);
}

#[test]
fn second_server_on_one_folder_names_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let first = start_server(&["--dev", "--data", data], &[]);
    let out = run(&["serve", "--dev", "--bind", "127.0.0.1:0", "--data", data]);
    assert_failed(&out, &[data, "in use by another hearth process"]);
    // Creating a realm in it meanwhile is refused the same way.
    let out = run(&[
        "realm",
        "create",
        "--subdomain",
        "other",
        "--name",
        "Other",
        "--owner-email",
        "o@other.test",
        "--data",
        data,
        "--zuliprc",
        dir.path().join("zuliprc").to_str().unwrap(),
    ]);
    assert_failed(&out, &[data, "in use by another hearth process"]);
    // The first one is unharmed.
    block_on(async {
        let reply = send(http().get(format!("{}/api/v1/server_settings", first.url))).await;
        assert_success(&reply);
    });
    first.stop();
}

/// The folder is locked before anything listens: a second server on a folder in use is
/// told so even when its API and metrics ports are taken as well.
#[test]
fn second_server_on_one_folder_names_the_folder_before_busy_ports() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let first = start_server(&["--dev", "--data", data], &[]);
    let api = TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics = TcpListener::bind("127.0.0.1:0").unwrap();
    let api_addr = api.local_addr().unwrap().to_string();
    let metrics_addr = metrics.local_addr().unwrap().to_string();
    let out = run(&[
        "serve",
        "--dev",
        "--bind",
        &api_addr,
        "--metrics-bind",
        &metrics_addr,
        "--data",
        data,
    ]);
    assert_failed(&out, &[data, "in use by another hearth process"]);
    // With the folder free, the busy metrics port is what is refused.
    first.stop();
    drop(api);
    let out = run(&[
        "serve",
        "--dev",
        "--bind",
        "127.0.0.1:0",
        "--metrics-bind",
        &metrics_addr,
        "--data",
        data,
    ]);
    assert_failed(
        &out,
        &[
            &format!("metrics listener (--metrics-bind) cannot listen on {metrics_addr}"),
            "in use",
        ],
    );
    drop(metrics);
}

#[test]
fn port_in_use_names_the_address_and_creates_no_folder() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("new-data");
    let out = run(&[
        "serve",
        "--dev",
        "--bind",
        &addr,
        "--data",
        data.to_str().unwrap(),
    ]);
    assert_failed(
        &out,
        &[
            &format!("API listener (--bind) cannot listen on {addr}"),
            "in use",
        ],
    );
    assert!(!data.exists(), "a data folder was left behind");
}

#[test]
fn no_realm_leaves_no_new_folder() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("typo");
    let out = run(&[
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--data",
        data.to_str().unwrap(),
    ]);
    assert_failed(&out, &["no realm in", "hearth realm create"]);
    assert!(!data.exists(), "a data folder was left behind");
}

// ---------------------------------------------------------------------------------
// 3. Output streams and the request log

/// The arguments of `hearth realm create` for the root realm "Acme" in `dir`, owned by
/// boss@acme.test with `password`.
fn acme_args(dir: &Path, password: &str) -> Vec<String> {
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    [
        "realm",
        "create",
        "--subdomain",
        "",
        "--name",
        "Acme",
        "--owner-email",
        "boss@acme.test",
        "--owner-password",
        password,
        "--data",
        &path("data"),
        "--url",
        "https://chat.acme.test",
        "--zuliprc",
        &path("zuliprc"),
    ]
    .map(str::to_owned)
    .to_vec()
}

/// `hearth realm create` with a strong password in `dir`; returns its output.
fn create_realm(dir: &Path, extra_env: &[(&str, &str)]) -> Output {
    let mut cmd = hearth();
    cmd.args(acme_args(dir, "a long passphrase"));
    cmd.envs(extra_env.iter().copied());
    cmd.output().expect("hearth runs")
}

#[test]
fn realm_create_prints_only_key_and_zuliprc_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let out = create_realm(dir.path(), &[]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let zuliprc = dir.path().join("zuliprc");
    assert_eq!(lines.len(), 2, "stdout: {stdout:?}");
    assert_eq!(lines[0].len(), 32, "an API key: {stdout:?}");
    assert!(lines[0].chars().all(|c| c.is_ascii_alphanumeric()));
    assert_eq!(lines[1], zuliprc.to_str().unwrap());
    // The log went to stderr, without colours (stderr is a pipe here).
    assert!(stderr.contains("created realm"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "ANSI escapes in {stderr:?}");
    let rc = std::fs::read_to_string(&zuliprc).unwrap();
    assert!(rc.contains(&format!("key={}", lines[0])), "{rc}");
    assert!(rc.contains("site=https://chat.acme.test"), "{rc}");
}

/// Runs `cmd` under a pseudo-terminal (`script`) so that stderr is a terminal;
/// returns what the terminal showed.
fn on_a_terminal(cmd: &str, envs: &[(&str, &str)]) -> Option<String> {
    let out = Command::new("script")
        .args(["-qec", cmd, "/dev/null"])
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then(|| text(&out.stdout))
}

#[test]
fn colours_only_on_a_terminal_and_never_with_no_color() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let cmd = |n: u32| {
        format!(
            "{HEARTH} realm create --subdomain r{n} --name R --owner-email o@r.test \
             --data {} --zuliprc {}/rc{n}",
            data.display(),
            dir.path().display()
        )
    };
    let Some(coloured) = on_a_terminal(&cmd(1), &[]) else {
        eprintln!("skipped: no `script` to provide a terminal");
        return;
    };
    assert!(coloured.contains("created realm"), "{coloured}");
    assert!(coloured.contains('\u{1b}'), "colours on a terminal");
    let plain = on_a_terminal(&cmd(2), &[("NO_COLOR", "1")]).unwrap();
    assert!(plain.contains("created realm"), "{plain}");
    assert!(!plain.contains('\u{1b}'), "NO_COLOR honoured: {plain:?}");
}

#[test]
fn one_json_line_per_request_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = start_server(
        &["--dev", "--data", data.to_str().unwrap()],
        &[("HEARTH_LOG_FORMAT", "json"), ("HEARTH_ACCESS_LOG", "all")],
    );
    let url = server.url.clone();
    let (key, me_id) = block_on(async {
        let key = dev_key_at(&url, ADMIN).await;
        let reply = send(
            http()
                .get(format!(
                    "{url}/api/v1/users/me?client_gravatar=true&secret=hunter2"
                ))
                .header("Authorization", basic(ADMIN, &key)),
        )
        .await;
        let me_id = assert_success(&reply)["user_id"].as_u64().unwrap();
        let reply = send(
            http()
                .get(format!("{url}/api/v1/users/{MEMBER}"))
                .header("Authorization", basic(ADMIN, &key)),
        )
        .await;
        assert_success(&reply);
        let reply = send(http().get(format!("{url}/api/v1/users/me")).header(
            "Authorization",
            basic(ADMIN, "wrong-key-wrong-key-wrong-key-32"),
        ))
        .await;
        assert_eq!(reply.0, StatusCode::UNAUTHORIZED);
        let reply = send(http().get(format!("{url}/api/v1/no_such_thing?k=v"))).await;
        assert_eq!(reply.0, StatusCode::NOT_FOUND);
        // A method of 5 000 characters, and a page path holding a key.
        let long = reqwest::Method::from_bytes("M".repeat(5000).as_bytes()).unwrap();
        send(http().request(long, format!("{url}/api/v1/users/me"))).await;
        // An unknown page path (text, not JSON: read without `send`).
        let page = http()
            .get(format!("{url}/no_such_page/secretsecretsecretsecret"))
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), StatusCode::NOT_FOUND);
        (key, me_id)
    });
    let log = server.stop();
    let mut requests = Vec::new();
    for line in &log {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if v["target"] == "hearth::http" {
            requests.push(v);
        }
    }
    let fields: Vec<&Value> = requests.iter().map(|r| &r["fields"]).collect();
    assert_eq!(fields.len(), 7, "one line per request: {fields:#?}");
    for (f, r) in fields.iter().zip(&requests) {
        assert_eq!(r["level"], "INFO");
        assert_eq!(f["message"], "request");
        assert!(f["ms"].as_f64().unwrap() >= 0.0, "{f}");
        assert_eq!(f["realm"], "zulip", "{f}");
        let line = r.to_string();
        for secret in [
            key.as_str(),
            "hunter2",
            "secret",
            "?",
            MEMBER,
            "client_gravatar",
        ] {
            assert!(!line.contains(secret), "{secret:?} in {line}");
        }
    }
    let summary: Vec<(String, String, u64, Option<u64>)> = fields
        .iter()
        .map(|f| {
            (
                f["method"].as_str().unwrap().to_owned(),
                f["path"].as_str().unwrap().to_owned(),
                f["status"].as_u64().unwrap(),
                f["user_id"].as_u64(),
            )
        })
        .collect();
    let s = |x: &str| x.to_owned();
    assert_eq!(
        summary,
        vec![
            (s("POST"), s("/api/v1/dev_fetch_api_key"), 200, None),
            (s("GET"), s("/api/v1/users/me"), 200, Some(me_id)),
            (s("GET"), s("/api/v1/users/{user}"), 200, Some(me_id)),
            (s("GET"), s("/api/v1/users/me"), 401, None),
            (s("GET"), s("/api/v1/no_such_thing"), 404, None),
            (
                format!("{}…", "M".repeat(16)),
                s("/api/v1/users/me"),
                405,
                None
            ),
            (s("GET"), s("/no_such_page/…"), 404, None),
        ]
    );
}

#[test]
fn by_default_the_request_log_keeps_errors_and_slow_requests() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let lines = |log: &[String]| -> Vec<String> {
        log.iter()
            .filter(|l| l.contains("hearth::http"))
            .cloned()
            .collect()
    };
    let server = start_server(&["--dev", "--data", data], &[]);
    block_on(async {
        for _ in 0..3 {
            send(http().get(format!("{}/api/v1/server_settings", server.url))).await;
        }
        send(http().get(format!("{}/api/v1/users/me", server.url))).await;
        send(http().get(format!("{}/api/v1/no_such_thing", server.url))).await;
    });
    let logged = lines(&server.stop());
    assert_eq!(logged.len(), 2, "the two errors only: {logged:#?}");
    assert!(logged[0].contains("status=401"), "{logged:#?}");
    assert!(logged[1].contains("status=404"), "{logged:#?}");

    // Every request is slow beyond 0 ms.
    let server = start_server(&["--dev", "--data", data, "--slow-request-ms", "0"], &[]);
    block_on(async {
        send(http().get(format!("{}/api/v1/server_settings", server.url))).await;
    });
    let logged = lines(&server.stop());
    assert_eq!(logged.len(), 1, "{logged:#?}");
    assert!(logged[0].contains("status=200"), "{logged:#?}");

    let server = start_server(&["--dev", "--data", data, "--access-log", "off"], &[]);
    block_on(async {
        send(http().get(format!("{}/api/v1/no_such_thing", server.url))).await;
    });
    assert!(lines(&server.stop()).is_empty());
}

#[test]
fn text_log_by_default_and_rust_log_filters_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let server = start_server(&["--dev", "--data", data, "--access-log", "all"], &[]);
    block_on(async {
        send(http().get(format!("{}/api/v1/server_settings", server.url))).await;
    });
    let log = server.stop();
    let line = log
        .iter()
        .find(|l| l.contains("hearth::http"))
        .unwrap_or_else(|| panic!("no request line in {log:#?}"));
    for part in [
        " INFO ",
        "method=GET",
        "path=/api/v1/server_settings",
        "status=200",
        "ms=",
        "realm=\"zulip\"",
    ] {
        assert!(line.contains(part), "{part:?} in {line}");
    }
    assert!(!line.contains("user_id"), "anonymous: {line}");
    assert!(
        serde_json::from_str::<Value>(line).is_err(),
        "text, not JSON"
    );

    let server = start_server(
        &["--dev", "--data", data, "--access-log", "all"],
        &[("RUST_LOG", "info,hearth::http=warn")],
    );
    block_on(async {
        send(http().get(format!("{}/api/v1/server_settings", server.url))).await;
    });
    let log = server.stop();
    assert!(!log.iter().any(|l| l.contains("hearth::http")), "{log:#?}");
    assert!(log.iter().any(|l| l.contains("listening on")), "{log:#?}");
}

// ---------------------------------------------------------------------------------
// 4. Files and passwords

#[test]
fn zuliprc_is_private_from_the_start() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    // An existing, world-readable zuliprc is replaced, not reused.
    std::fs::write(dir.path().join("zuliprc"), "old").unwrap();
    std::fs::set_permissions(
        dir.path().join("zuliprc"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let out = create_realm(dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mode = std::fs::metadata(dir.path().join("zuliprc"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn weak_owner_password_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    for weak in ["abc", "password", "abcd1234"] {
        let args = acme_args(dir.path(), weak);
        let out = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let line = assert_failed(&out, &["owner password is too weak"]);
        if weak == "abcd1234" {
            assert!(!line.contains(weak), "the password is not echoed: {line}");
        }
        assert!(!data.exists(), "nothing created");
        assert!(!dir.path().join("zuliprc").exists(), "nothing written");
    }
}

#[test]
fn version_is_printed() {
    let out = run(&["--version"]);
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout).trim(),
        format!("hearth {}", env!("CARGO_PKG_VERSION"))
    );
}

// ---------------------------------------------------------------------------------
// 5. Backup and restore

#[test]
fn backup_restore_start_and_find_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let backup = dir.path().join("backup");
    let restored = dir.path().join("restored");
    let (data, backup, restored) = (
        data.to_str().unwrap(),
        backup.to_str().unwrap(),
        restored.to_str().unwrap(),
    );

    let server = start_server(&["--dev", "--data", data], &[]);
    let url = server.url.clone();
    block_on(async {
        let key = dev_key_at(&url, ADMIN).await;
        let reply = send(
            http()
                .post(format!("{url}/api/v1/users"))
                .header("Authorization", basic(ADMIN, &key))
                .form(&[
                    ("email", "kept@zulip.com"),
                    ("password", "pw"),
                    ("full_name", "Kept Safe"),
                ]),
        )
        .await;
        assert_success(&reply);
    });

    // A running server holds the folder: refused, and nothing created.
    let out = run(&["backup", "--data", data, "--out", backup]);
    assert_failed(&out, &[data, "in use by another hearth process"]);
    assert!(!Path::new(backup).exists());
    server.stop();

    let out = run(&["backup", "--data", data, "--out", backup]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("'zulip'"),
        "{}",
        text(&out.stderr)
    );
    // An existing backup is never overwritten.
    let out = run(&["backup", "--data", data, "--out", backup]);
    assert_failed(&out, &[backup, "already exists"]);
    // Nor is a data folder that holds something.
    let out = run(&["restore", "--from", backup, "--data", data]);
    assert_failed(&out, &[data, "already exists"]);
    // A folder without a database is not a backup.
    let out = run(&[
        "restore",
        "--from",
        dir.path().to_str().unwrap(),
        "--data",
        restored,
    ]);
    assert_failed(&out, &["holds no hearth database"]);

    let out = run(&["restore", "--from", backup, "--data", restored]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::remove_dir_all(data).unwrap();

    let server = start_server(&["--dev", "--data", restored], &[]);
    let url = server.url.clone();
    block_on(async {
        let key = dev_key_at(&url, ADMIN).await;
        let reply = send(
            http()
                .get(format!("{url}/api/v1/users/kept@zulip.com"))
                .header("Authorization", basic(ADMIN, &key)),
        )
        .await;
        assert_eq!(assert_success(&reply)["user"]["full_name"], "Kept Safe");
    });
    let log = server.stop();
    assert!(!log.iter().any(|l| l.contains("seeded")), "{log:#?}");
}

/// Every file and folder under a path, with its permission bits.
fn modes(root: &Path) -> Vec<(std::path::PathBuf, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        out.push((path.clone(), meta.permissions().mode() & 0o777));
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                stack.push(entry.unwrap().path());
            }
        }
    }
    out
}

/// A data folder holds API keys and password hashes, and so do its backups and realm
/// archives: every folder hearth makes is 0700 and every file 0600, and a folder made
/// open by an older hearth is closed (0700) when it is next opened.
#[test]
fn data_folders_backups_and_archives_are_their_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out = create_realm(dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let data = dir.path().join("data");
    let backup = dir.path().join("backup");
    let archive = dir.path().join("acme.archive");
    // `realm export` of the folder's realm to `out`, which must succeed.
    let export = |out: &Path| {
        let done = run(&[
            "realm",
            "export",
            "--data",
            data.to_str().unwrap(),
            "--subdomain",
            "",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(done.status.success(), "{}", text(&done.stderr));
    };
    let out = run(&[
        "backup",
        "--data",
        data.to_str().unwrap(),
        "--out",
        backup.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    export(&archive);
    for root in [&data, &backup, &archive] {
        for (path, mode) in modes(root) {
            let want = if path.is_dir() { 0o700 } else { 0o600 };
            assert_eq!(mode, want, "{} is {mode:o}", path.display());
        }
    }
    // A folder left open (as an older hearth made them): closed at the next open.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    export(&dir.path().join("again.archive"));
    let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
}

/// `--dev` turns rate limits off and hands out keys without a password: a folder that holds a realm made
/// by `realm create` is refused, with what to do, and nothing of it changes.
#[test]
fn dev_refuses_a_folder_with_a_production_realm() {
    let dir = tempfile::tempdir().unwrap();
    let out = create_realm(dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let data = dir.path().join("data");
    let out = run(&[
        "serve",
        "--dev",
        "--bind",
        "127.0.0.1:0",
        "--metrics-bind",
        "off",
        "--admin-bind",
        "off",
        "--data",
        data.to_str().unwrap(),
    ]);
    assert_failed(
        &out,
        &[
            "holds realm '', which is not the development realm",
            "serve this one without --dev",
        ],
    );
    // No development realm was seeded into it.
    let out = run(&["check", "--data", data.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stdout).contains("'zulip'"),
        "{}",
        text(&out.stdout)
    );
}
