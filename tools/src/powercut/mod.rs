//! Power cuts on a page-cache-dropping filesystem, in the spirit of Jepsen's LazyFS.
//!
//! A `kill -9` keeps the kernel's page cache: what the server wrote reaches the disk
//! whether it synced it or not, so it never tests what `fsync`/`fdatasync` and their
//! order promise. Here the data folder lives on a FUSE filesystem (`lazyfs`) that
//! passes through to a backing folder (the disk) but holds each file's writes since
//! its last sync in memory (`pending`); a power cut drops them (or tears one file:
//! a prefix of its unsynced writes reaches the disk), the mount is detached, and a
//! fresh filesystem is mounted on the same backing folder for the restart.
//!
//! `hearth torture --power-cut` runs its cycles on it (`Power`); `hearth-tools lazyfs`
//! mounts it by hand and takes its cut as a line on standard input. Mounting needs
//! `/dev/fuse` and the right to mount (root): no libfuse and no `fusermount`.

pub mod lazyfs;
mod pending;
pub mod power;

use std::fs::OpenOptions;
use std::io::BufRead;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use clap::Args;
use rand::rngs::StdRng;

pub use lazyfs::{Counts, Cut};
use lazyfs::{LazyFs, State};

/// The filesystem mounted on a folder, served by a thread of this process.
#[derive(Debug)]
pub struct Mounted {
    state: Arc<Mutex<State>>,
    mountpoint: PathBuf,
    done: mpsc::Receiver<()>,
    mounted: bool,
}

impl Mounted {
    /// Mounts the filesystem of `backing` on `mountpoint` (both folders, made if
    /// missing).
    pub fn mount(backing: &Path, mountpoint: &Path) -> Result<Mounted, String> {
        for d in [backing, mountpoint] {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let backing = backing
            .canonicalize()
            .map_err(|e| format!("{}: {e}", backing.display()))?;
        let mountpoint = mountpoint
            .canonicalize()
            .map_err(|e| format!("{}: {e}", mountpoint.display()))?;
        let dev = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/fuse")
            .map_err(|e| format!("cannot open /dev/fuse: {e}"))?;
        let fd: OwnedFd = dev.into();
        let data = format!(
            "fd={},rootmode=40755,user_id={},group_id={}",
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            nix::unistd::getuid(),
            nix::unistd::getgid(),
        );
        nix::mount::mount(
            Some("hearth-lazyfs"),
            &mountpoint,
            Some("fuse.hearth-lazyfs"),
            nix::mount::MsFlags::MS_NOSUID | nix::mount::MsFlags::MS_NODEV,
            Some(data.as_str()),
        )
        .map_err(|e| format!("cannot mount on {}: {e}", mountpoint.display()))?;
        let state = Arc::new(Mutex::new(State::new(&backing)));
        let fs = LazyFs {
            state: state.clone(),
        };
        let mut config = fuser::Config::default();
        config.n_threads = Some(1);
        let session = match fuser::Session::from_fd(fs, fd, fuser::SessionACL::Owner, config) {
            Ok(s) => s,
            Err(e) => {
                let _ = detach(&mountpoint);
                return Err(format!("the FUSE handshake failed: {e}"));
            }
        };
        let (tx, done) = mpsc::channel();
        std::thread::Builder::new()
            .name("lazyfs".into())
            .spawn(move || {
                let _ = session.run();
                let _ = tx.send(());
            })
            .map_err(|e| format!("cannot start the filesystem's thread: {e}"))?;
        Ok(Mounted {
            state,
            mountpoint,
            done,
            mounted: true,
        })
    }

    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// Writes and syncs since the mount.
    pub fn counts(&self) -> Counts {
        hearth::locks::lock(&self.state).counts
    }

    /// Arms the trip: the filesystem cuts the power itself at the `after`-th write or
    /// sync from now (torn with `tear`).
    pub fn arm(&self, after: u64, tear: Option<StdRng>) {
        hearth::locks::lock(&self.state).arm(after, tear);
    }

    /// Whether the armed trip went off.
    pub fn tripped(&self) -> bool {
        hearth::locks::lock(&self.state).tripped.is_some()
    }

    /// The power goes out: unsynced writes are dropped (torn, with `tear`: one file
    /// keeps a prefix of its own), the mount is detached. After a trip, that cut.
    pub fn cut(mut self, tear: Option<&mut StdRng>) -> Result<Cut, String> {
        let cut = {
            let mut s = hearth::locks::lock(&self.state);
            match s.tripped.clone() {
                Some(cut) => cut,
                None => s.cut(tear),
            }
        };
        self.unmount()?;
        Ok(cut)
    }

    /// A clean unmount: what is held is written back first.
    pub fn unmount_clean(mut self) -> Result<(), String> {
        hearth::locks::lock(&self.state)
            .write_back()
            .map_err(|e| format!("writing back before the unmount: {e}"))?;
        self.unmount()
    }

    fn unmount(&mut self) -> Result<(), String> {
        if !self.mounted {
            return Ok(());
        }
        self.mounted = false;
        detach(&self.mountpoint)?;
        // The session ends when the kernel drops the connection (nothing holds the
        // detached mount once the server is dead); a straggler is left behind, dead.
        let _ = self.done.recv_timeout(Duration::from_secs(5));
        Ok(())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if self.mounted {
            hearth::locks::lock(&self.state).cut(None);
            let _ = self.unmount();
        }
    }
}

fn detach(mountpoint: &Path) -> Result<(), String> {
    nix::mount::umount2(mountpoint, nix::mount::MntFlags::MNT_DETACH)
        .map_err(|e| format!("cannot unmount {}: {e}", mountpoint.display()))
}

/// Whether this machine lets this process mount the filesystem (`/dev/fuse`, the right
/// to mount); `Err` says why not.
pub fn available() -> Result<(), String> {
    if !Path::new("/dev/fuse").exists() {
        return Err("no /dev/fuse".into());
    }
    let dir = tempfile::Builder::new()
        .prefix("hearth-lazyfs-probe-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let m = Mounted::mount(&dir.path().join("disk"), &dir.path().join("mnt"))?;
    let probe = std::fs::write(m.mountpoint().join("probe"), b"x");
    m.unmount_clean()?;
    probe.map_err(|e| format!("writing through the mount: {e}"))
}

/// `hearth-tools lazyfs`.
#[derive(Debug, Clone, Args)]
pub struct LazyfsArgs {
    /// The backing folder: the simulated disk.
    #[arg(long)]
    pub backing: PathBuf,
    /// Where to mount it.
    #[arg(long)]
    pub mount: PathBuf,
    /// Seed for where a torn cut falls (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Mounts the filesystem and serves it until a line on standard input: `cut` (drop
/// what is unsynced, unmount, exit), `tear` (the same, one file keeping a prefix of
/// its unsynced writes), `unmount` or the end of input (write back, unmount), `stats`.
pub fn serve(args: &LazyfsArgs) -> Result<(), String> {
    use rand::SeedableRng;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    let mut rng = StdRng::seed_from_u64(seed);
    let m = Mounted::mount(&args.backing, &args.mount)?;
    say(format!(
        "lazyfs: {} mounted on {} (seed {seed}); commands: cut, tear, stats, unmount",
        args.backing.display(),
        m.mountpoint().display()
    ));
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        match line.trim() {
            "cut" | "tear" => {
                let tear = line.trim() == "tear";
                let cut = m.cut(tear.then_some(&mut rng))?;
                say(describe(&cut));
                return Ok(());
            }
            "stats" => {
                let c = m.counts();
                say(format!("lazyfs: {} writes, {} syncs", c.writes, c.syncs));
            }
            "unmount" => break,
            "" => {}
            other => say(format!("lazyfs: unknown command {other:?}")),
        }
    }
    m.unmount_clean()?;
    say("lazyfs: written back and unmounted".into());
    Ok(())
}

/// A cut in one line.
pub fn describe(cut: &Cut) -> String {
    let torn = match &cut.torn {
        Some((path, whole, of, part)) => format!(
            "; torn: {} kept {whole} of its {of} unsynced writes whole, then {part} bytes of the next",
            path.display()
        ),
        None => String::new(),
    };
    format!(
        "power cut: {} unsynced bytes in {} files dropped{torn}",
        cut.bytes, cut.files
    )
}

fn say(line: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}
