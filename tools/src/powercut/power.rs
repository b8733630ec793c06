//! `hearth torture --power-cut`: the torture's data folder on the page-cache-dropping
//! filesystem, and a power cut after each kill.
//!
//! The backing folder (the disk) is `<dir>/disk`, mounted on `<dir>/mnt`; the server's
//! data folder is `<dir>/mnt/data` (a folder inside the mount, so that `hearth recover`
//! can move it aside). After the server is killed, the power is cut (what it wrote and
//! did not sync is dropped, or torn) and a fresh filesystem is mounted on the same disk
//! for the restart.

use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{describe, Mounted};

/// The power-cut side of a torture run.
#[derive(Debug)]
pub struct Power {
    disk: PathBuf,
    mnt: PathBuf,
    mounted: Option<Mounted>,
    tear_percent: u32,
    pub cuts: u64,
    pub torn: u64,
    /// Cuts the filesystem made itself, at a write or a sync.
    pub tripped: u64,
    /// Writes and syncs the server made in the last run window (where to arm the next
    /// trip).
    ops_per_run: u64,
    ops_at_arm: u64,
    pub dropped_bytes: u64,
    /// Starts refused with the damage named: (cycle, the refusal's line).
    pub refusals: Vec<(u32, String)>,
    /// Refused folders `hearth recover` could not rebuild, set aside whole.
    pub set_aside: Vec<String>,
    /// The cuts since the last `take_lines`, one line each.
    lines: Vec<String>,
}

impl Power {
    /// Mounts `<dir>/disk` on `<dir>/mnt`.
    pub fn new(dir: &Path, tear_percent: u32) -> Result<Power, String> {
        let disk = dir.join("disk");
        let mnt = dir.join("mnt");
        let mounted = Mounted::mount(&disk, &mnt)?;
        Ok(Power {
            disk,
            mnt,
            mounted: Some(mounted),
            tear_percent,
            cuts: 0,
            torn: 0,
            tripped: 0,
            ops_per_run: 200,
            ops_at_arm: 0,
            dropped_bytes: 0,
            refusals: Vec::new(),
            set_aside: Vec::new(),
            lines: Vec::new(),
        })
    }

    /// The server's data folder, inside the mount.
    pub fn data(dir: &Path) -> PathBuf {
        dir.join("mnt").join("data")
    }

    /// For half the run windows: arms the filesystem to cut the power itself at a
    /// random write or sync within about as many as the last window saw, so that cuts
    /// land between a write and its sync.
    pub fn arm(&mut self, rng: &mut StdRng) {
        let Some(m) = &self.mounted else { return };
        let counts = m.counts();
        self.ops_at_arm = counts.writes + counts.syncs;
        if rng.gen_bool(0.5) {
            let after = rng.gen_range(1..=self.ops_per_run.max(20));
            let tear = (rng.gen_range(0..100) < self.tear_percent)
                .then(|| StdRng::seed_from_u64(rng.gen()));
            m.arm(after, tear);
        }
    }

    /// Whether the filesystem cut the power itself.
    pub fn tripped(&self) -> bool {
        self.mounted.as_ref().is_some_and(Mounted::tripped)
    }

    /// Cuts the power (the server must be dead: nothing may hold the mount), and
    /// mounts a fresh filesystem on the disk; `true` if the filesystem had cut it
    /// itself already.
    pub fn cut(&mut self, rng: &mut StdRng) -> Result<bool, String> {
        let mounted = self.mounted.take().ok_or("the filesystem is not mounted")?;
        let tripped = mounted.tripped();
        let counts = mounted.counts();
        if self.ops_at_arm > 0 && !tripped {
            self.ops_per_run = (counts.writes + counts.syncs).saturating_sub(self.ops_at_arm);
        }
        self.ops_at_arm = 0;
        let tear = rng.gen_range(0..100) < self.tear_percent;
        let cut = mounted.cut(if tear { Some(rng) } else { None })?;
        self.cuts += 1;
        if tripped {
            self.tripped += 1;
        }
        self.dropped_bytes += cut.bytes;
        if cut.torn.is_some() {
            self.torn += 1;
        }
        let at = if tripped { " (at a write or sync)" } else { "" };
        self.lines.push(format!("{}{at}", describe(&cut)));
        self.mounted = Some(Mounted::mount(&self.disk, &self.mnt)?);
        Ok(tripped)
    }

    /// The run is over: what is held is written back and the mount goes away (the disk
    /// keeps the data folder).
    pub fn finish(mut self) -> Result<(), String> {
        match self.mounted.take() {
            Some(m) => m.unmount_clean(),
            None => Ok(()),
        }
    }

    /// The cuts since the last call, joined.
    pub fn take_lines(&mut self) -> String {
        std::mem::take(&mut self.lines).join("; ")
    }

    /// The run's power-cut figures, for its last line.
    pub fn summary(&self) -> String {
        format!(
            "{} power cuts ({} made by the filesystem at a write or sync, {} torn, {} unsynced bytes dropped), {} starts refused with the damage named ({} folders `hearth recover` could not rebuild, set aside: {})",
            self.cuts,
            self.tripped,
            self.torn,
            self.dropped_bytes,
            self.refusals.len(),
            self.set_aside.len(),
            self.set_aside.join(", ")
        )
    }
}

/// The line of a refused start's log that names the damage (`data folder ... is
/// damaged ...`), if it is one.
pub fn damage_named(log: &str) -> Option<String> {
    log.lines()
        .find(|l| l.contains("is damaged"))
        .map(|l| l.trim().to_owned())
}

/// After a refused start: `hearth recover --data DATA --accept-loss` (its output in
/// `log`; the damaged folder stays beside the data folder, on the disk), or, when it
/// cannot rebuild the folder, the folder is set aside whole (`<DATA>.unrecoverable-
/// <cycle>`, on the disk) for the next start to make a new one. `Ok(Some(path))`: set
/// aside there.
pub fn recover_or_set_aside(
    hearth: &Path,
    data: &Path,
    log: &Path,
    cycle: u32,
) -> Result<Option<PathBuf>, String> {
    match recover(hearth, data, log) {
        Ok(()) => Ok(None),
        Err(e) => {
            let aside = data.with_file_name(format!("data.unrecoverable-{cycle}"));
            std::fs::rename(data, &aside)
                .map_err(|r| format!("{e}; and cannot set the folder aside: {r}"))?;
            Ok(Some(aside))
        }
    }
}

fn recover(hearth: &Path, data: &Path, log: &Path) -> Result<(), String> {
    let out = std::process::Command::new(hearth)
        .arg("recover")
        .arg("--data")
        .arg(data)
        .arg("--accept-loss")
        .env("RUST_LOG", "warn")
        .output()
        .map_err(|e| format!("cannot run {} recover: {e}", hearth.display()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::write(log, &text);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("hearth recover failed ({}): {text}", out.status))
    }
}
