//! Storage faults: a full disk answers a clear 503 (never a hang), drops what was not
//! durable, and recovers without a restart once space returns; a failing snapshot is
//! retried after another `--snapshot-every` records, not on every write.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use hearth::config::{DurabilityArg, ServeConfig};
use reqwest::StatusCode;

/// Generous bound on one request: a hang guard, not a speed assertion.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// A small tmpfs mounted on a temporary folder; unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size_kib: u64) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size_kib}k"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Mounts a tmpfs, or says why the test cannot run: a skip locally, a failure in CI.
fn tmpfs_or_skip(size_kib: u64, test: &str) -> Option<Tmpfs> {
    match Tmpfs::mount(size_kib) {
        Ok(t) => Some(t),
        Err(why) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("{test}: needs a tmpfs mount (run as root): {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED {test}: needs a tmpfs mount (run as root): {why}");
            None
        }
    }
}

/// Fills the file system holding `path` with a file at `path`.
fn fill(path: &Path) -> u64 {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    let chunk = vec![0xa5u8; 16 * 1024];
    let mut written = 0;
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(n) => written += n as u64,
            Err(_) => break,
        }
    }
    // Whatever is left is smaller than a chunk: take it byte-size by byte-size.
    for size in [4096usize, 512, 1] {
        while f.write_all(&chunk[..size]).is_ok() {
            written += size as u64;
        }
    }
    let _ = f.sync_all();
    written
}

/// A server in a folder under `parent` (a tmpfs, or a temporary folder), with
/// `--durability always` and `tweak`.
async fn start_in(
    parent: &Path,
    tweak: impl Fn(&mut ServeConfig) + Send + Sync + 'static,
) -> TestApp {
    let dir = tempfile::tempdir_in(parent).unwrap();
    TestApp::spawn_configured(dir, move |c| {
        c.durability = DurabilityArg::Always;
        tweak(c);
    })
    .await
}

/// `POST /api/v1/channels/create` as the administrator, within the hang guard.
async fn create_channel(app: &TestApp, name: &str) -> Reply {
    let started = Instant::now();
    let reply = app
        .post_as(
            ADMIN,
            "/api/v1/channels/create",
            &[("name", name), ("description", "faults")],
        )
        .await;
    assert!(started.elapsed() < HANG_GUARD, "{name}: no answer in time");
    reply
}

/// Channel names `email` sees in `GET /api/v1/streams`.
async fn channels(app: &TestApp, email: &str) -> Vec<String> {
    names(&app.ok("GET", "/api/v1/streams", email, &[]).await["streams"])
}

fn assert_storage_error(reply: &Reply) {
    let (status, _, body) = reply;
    assert_eq!(status.as_u16(), 503, "{body}");
    assert_eq!(body["result"], "error", "{body}");
    assert_eq!(body["code"], "INTERNAL_SERVER_ERROR", "{body}");
    assert!(
        body["msg"].as_str().unwrap().contains("storage failure"),
        "{body}"
    );
}

#[actix_web::test]
async fn a_full_disk_fails_writes_fast_drops_them_and_recovers_without_restart() {
    let Some(fs) = tmpfs_or_skip(16 * 1024, "full disk") else {
        return;
    };
    let mut app = start_in(fs.path(), |_| {}).await;
    assert_success(&create_channel(&app, "before-full").await);

    let filler = fs.path().join("filler");
    let filled = fill(&filler);
    assert!(filled > 0, "the filler took no space");

    // Writes landing in space sled had already taken may still succeed: write until
    // one is refused. Every success is acknowledged and must stay.
    let mut acked = vec!["before-full".to_owned()];
    let mut failed = None;
    for i in 0..2000 {
        let name = format!("while-full-{i}");
        let reply = create_channel(&app, &name).await;
        if reply.0 == StatusCode::OK {
            acked.push(name);
        } else {
            assert_storage_error(&reply);
            failed = Some(name);
            break;
        }
    }
    let failed = failed.expect("a write to a full disk failed");
    eprintln!("{} writes acknowledged, then {failed} failed", acked.len());
    let durability = app.server().durability();
    assert!(durability.failure().is_some(), "the store is failed");

    // While failed, writes answer 503 at once, and nothing failed is visible.
    assert_storage_error(&create_channel(&app, "during-failure").await);
    for who in [MEMBER, ADMIN] {
        let seen = channels(&app, who).await;
        assert!(!seen.contains(&failed), "{who} sees {failed}");
        assert!(!seen.iter().any(|n| n == "during-failure"));
        for name in &acked {
            assert!(seen.contains(name), "{who} lost acknowledged {name}");
        }
    }

    // Space returns: writes are accepted again, without a restart.
    std::fs::remove_file(&filler).unwrap();
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        let reply = create_channel(&app, "after-full").await;
        if reply.0 == StatusCode::OK {
            break;
        }
        assert_storage_error(&reply);
        assert!(Instant::now() < deadline, "the store never recovered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(durability.failure().is_none());
    let seen = channels(&app, MEMBER).await;
    assert!(seen.iter().any(|n| n == "after-full"));
    assert!(
        !seen.contains(&failed),
        "{failed} reappeared after recovery"
    );
    assert!(!seen.iter().any(|n| n == "during-failure"));
    assert_success(&create_channel(&app, "after-full-2").await);

    // Restart on the same folder: the failed write stays gone, the later ones stay.
    drop(durability);
    app.restart().await;
    let seen = channels(&app, MEMBER).await;
    assert!(
        !seen.contains(&failed),
        "{failed} reappeared after a restart"
    );
    for name in acked
        .iter()
        .chain(&["after-full".to_owned(), "after-full-2".to_owned()])
    {
        assert!(seen.contains(name), "{name} lost across the restart");
    }
    app.stop().await;
}

#[actix_web::test]
async fn a_failing_snapshot_is_retried_after_snapshot_every_records_not_on_every_write() {
    let mut app = TestApp::spawn_configured(tempfile::tempdir().unwrap(), |c| {
        c.durability = DurabilityArg::Never;
        c.snapshot_every = 5;
    })
    .await;
    let durability = app.server().durability();
    durability.fail_snapshots_for_tests(true);
    let (started0, failed0) = durability.snapshot_counts();
    for i in 0..12 {
        assert_success(&create_channel(&app, &format!("snap-{i}")).await);
    }
    // 12 records with a snapshot due every 5: at most 2 attempts (records 5 and 10).
    let attempts = poll(HANG_GUARD, "the failed snapshots", || {
        let (started, failed) = durability.snapshot_counts();
        let (started, failed) = (started - started0, failed - failed0);
        async move { (started == failed && started > 0).then_some(started) }
    })
    .await;
    assert!(
        (1..=2).contains(&attempts),
        "{attempts} snapshot attempts for 12 records"
    );
    assert_eq!(durability.snapshot_counts().1 - failed0, attempts);

    // Once snapshots work again, the next one is taken and succeeds.
    durability.fail_snapshots_for_tests(false);
    for i in 12..20 {
        assert_success(&create_channel(&app, &format!("snap-{i}")).await);
    }
    poll(HANG_GUARD, "a successful snapshot", || {
        let (started, failed) = durability.snapshot_counts();
        let succeeded = (started - started0) - (failed - failed0);
        async move { (succeeded > 0).then_some(()) }
    })
    .await;
    drop(durability);
    app.restart().await;
    let seen = channels(&app, ADMIN).await;
    for i in 0..20 {
        assert!(seen.contains(&format!("snap-{i}")));
    }
    app.stop().await;
}

#[actix_web::test]
async fn health_stays_live_and_readiness_follows_the_store() {
    // `always`: the flusher's probe is what finds the store writable again.
    let app = TestApp::spawn_configured(tempfile::tempdir().unwrap(), |c| {
        c.durability = DurabilityArg::Always;
    })
    .await;
    let client = reqwest::Client::new();
    let get = |path: &'static str| {
        let (client, url) = (client.clone(), app.url.clone());
        async move {
            let r = client.get(format!("{url}{path}")).send().await.unwrap();
            let status = r.status();
            (status, r.json::<serde_json::Value>().await.unwrap())
        }
    };
    for path in ["/health", "/health/ready"] {
        let (status, body) = get(path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        assert_eq!(body, serde_json::json!({"result": "success", "msg": ""}));
    }
    let durability = app.server().durability();
    durability.fail("injected fault".into());
    let (status, body) = get("/health").await;
    assert_eq!(
        status,
        StatusCode::OK,
        "liveness does not depend on storage: {body}"
    );
    let (status, body) = get("/health/ready").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert_eq!(body["code"], "SERVER_NOT_READY");
    assert_eq!(body["result"], "error");
    assert!(
        body["msg"].as_str().unwrap().contains("injected fault"),
        "{body}"
    );
    // The disk is writable: the store recovers (its realms reset on their next write)
    // and is ready once more.
    let deadline = Instant::now() + HANG_GUARD;
    while create_channel(&app, "after-the-fault").await.0 != StatusCode::OK {
        assert!(Instant::now() < deadline, "the store never recovered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(get("/health/ready").await.0, StatusCode::OK);
}
