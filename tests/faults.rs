//! Storage faults: a full disk answers a clear 503 (never a hang), drops what was not
//! durable, and recovers without a restart once space returns; a failing snapshot is
//! retried after another `--snapshot-every` records, not on every write.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use hearth::config::{DurabilityArg, ServeConfig};
use hearth::Running;
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

/// A server in `dir` with `--durability always`.
async fn start(dir: &Path, tweak: impl FnOnce(&mut ServeConfig)) -> Running {
    let mut config = ServeConfig::for_tests(dir.to_path_buf());
    config.durability = DurabilityArg::Always;
    tweak(&mut config);
    start_server_with(config, None).await
}

struct Api {
    url: String,
    client: reqwest::Client,
}

impl Api {
    fn of(running: &Running) -> Api {
        Api {
            url: running.url(),
            client: reqwest::Client::builder()
                .timeout(HANG_GUARD)
                .build()
                .unwrap(),
        }
    }

    async fn key(&self, email: &str) -> String {
        let (status, _, body) = send(
            self.client
                .post(format!("{}/api/v1/dev_fetch_api_key", self.url))
                .form(&[("username", email)]),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["api_key"].as_str().unwrap().to_owned()
    }

    /// `POST /api/v1/channels/create` as the administrator.
    async fn create_channel(&self, key: &str, name: &str) -> Reply {
        let started = Instant::now();
        let reply = send(
            self.client
                .post(format!("{}/api/v1/channels/create", self.url))
                .header("Authorization", basic(ADMIN, key))
                .form(&[("name", name), ("description", "faults")]),
        )
        .await;
        assert!(started.elapsed() < HANG_GUARD, "{name}: no answer in time");
        reply
    }

    /// Channel names `email` sees in `GET /api/v1/streams`.
    async fn channels(&self, email: &str) -> Vec<String> {
        let key = self.key(email).await;
        let (status, _, body) = send(
            self.client
                .get(format!("{}/api/v1/streams", self.url))
                .header("Authorization", basic(email, &key)),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["streams"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect()
    }
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
    let data: PathBuf = fs.path().join("data");
    let running = start(&data, |_| {}).await;
    let api = Api::of(&running);
    let key = api.key(ADMIN).await;
    assert_success(&api.create_channel(&key, "before-full").await);

    let filler = fs.path().join("filler");
    let filled = fill(&filler);
    assert!(filled > 0, "the filler took no space");

    // Writes landing in space sled had already taken may still succeed: write until
    // one is refused. Every success is acknowledged and must stay.
    let mut acked = vec!["before-full".to_owned()];
    let mut failed = None;
    for i in 0..2000 {
        let name = format!("while-full-{i}");
        let reply = api.create_channel(&key, &name).await;
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
    let durability = running.durability();
    assert!(durability.failure().is_some(), "the store is failed");

    // While failed, writes answer 503 at once, and nothing failed is visible.
    assert_storage_error(&api.create_channel(&key, "during-failure").await);
    for who in [MEMBER, ADMIN] {
        let seen = api.channels(who).await;
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
        let reply = api.create_channel(&key, "after-full").await;
        if reply.0 == StatusCode::OK {
            break;
        }
        assert_storage_error(&reply);
        assert!(Instant::now() < deadline, "the store never recovered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(durability.failure().is_none());
    let seen = api.channels(MEMBER).await;
    assert!(seen.iter().any(|n| n == "after-full"));
    assert!(
        !seen.contains(&failed),
        "{failed} reappeared after recovery"
    );
    assert!(!seen.iter().any(|n| n == "during-failure"));
    assert_success(&api.create_channel(&key, "after-full-2").await);

    // Restart on the same folder: the failed write stays gone, the later ones stay.
    drop(durability);
    running.shutdown().await;
    let running = start(&data, |_| {}).await;
    let api = Api::of(&running);
    let seen = api.channels(MEMBER).await;
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
    running.shutdown().await;
}

#[actix_web::test]
async fn a_failing_snapshot_is_retried_after_snapshot_every_records_not_on_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path(), |c| {
        c.durability = DurabilityArg::Never;
        c.snapshot_every = 5;
    })
    .await;
    let api = Api::of(&running);
    let key = api.key(ADMIN).await;
    let durability = running.durability();
    durability.fail_snapshots_for_tests(true);
    let (started0, failed0) = durability.snapshot_counts();
    for i in 0..12 {
        assert_success(&api.create_channel(&key, &format!("snap-{i}")).await);
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
        assert_success(&api.create_channel(&key, &format!("snap-{i}")).await);
    }
    poll(HANG_GUARD, "a successful snapshot", || {
        let (started, failed) = durability.snapshot_counts();
        let succeeded = (started - started0) - (failed - failed0);
        async move { (succeeded > 0).then_some(()) }
    })
    .await;
    drop(durability);
    running.shutdown().await;
    let running = start(dir.path(), |c| c.durability = DurabilityArg::Never).await;
    let seen = Api::of(&running).channels(ADMIN).await;
    for i in 0..20 {
        assert!(seen.contains(&format!("snap-{i}")));
    }
    running.shutdown().await;
}
