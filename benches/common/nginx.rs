//! nginx as the router in front of hearth nodes, for the bench and the tests that route
//! through it (`benches/archive.rs`, `tests/api/cluster.rs`): Debian's binary, run in
//! the foreground under a prefix folder of its own, on the configuration `hearth cluster
//! nginx` generates from a placement file, and stopped with SIGTERM so that its workers
//! go with it (a SIGKILL ends only the master: its workers stay, listening on the
//! router's port with the old configuration).

#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's nginx (`apt-get install nginx-light`), on the `PATH` or in `/usr/sbin`.
pub fn find() -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/sbin")])
        .map(|d| d.join("nginx"))
        .find(|p| p.is_file())
}

/// nginx running the configuration generated from `placement.toml` in its prefix.
pub struct Nginx {
    binary: PathBuf,
    hearth: PathBuf,
    prefix: tempfile::TempDir,
    child: Child,
}

impl Nginx {
    /// Makes a prefix folder, has `write_placement` write the placement file in it,
    /// generates and tests the configuration, starts nginx with it and waits until it
    /// listens on `port` (the placement's `listen`). `hearth` is the binary that
    /// generates the configuration.
    pub fn start(
        binary: &Path,
        hearth: &Path,
        port: u16,
        write_placement: impl FnOnce(&Path),
    ) -> Nginx {
        use std::os::unix::fs::PermissionsExt;
        let prefix = tempfile::tempdir().expect("nginx prefix");
        // nginx's workers (`nobody` when the master runs as root) read its folders.
        std::fs::set_permissions(prefix.path(), std::fs::Permissions::from_mode(0o755))
            .expect("prefix permissions");
        write_placement(&prefix.path().join("placement.toml"));
        generate(binary, hearth, prefix.path());
        let child = Command::new(binary)
            .arg("-p")
            .arg(prefix.path())
            .arg("-c")
            .arg(prefix.path().join("nginx.conf"))
            .args(["-g", "daemon off;"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        // From here a failed wait stops it (`Drop`).
        let nginx = Nginx {
            binary: binary.to_owned(),
            hearth: hearth.to_owned(),
            prefix,
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "nginx does not listen on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        nginx
    }

    /// The placement file nginx's configuration is generated from.
    pub fn placement(&self) -> PathBuf {
        self.prefix.path().join("placement.toml")
    }

    fn conf(&self) -> PathBuf {
        self.prefix.path().join("nginx.conf")
    }

    /// Generates the configuration of the placement file as it is now and has nginx
    /// load it (`nginx -s reload`).
    #[allow(dead_code)] // the tests' reload; the bench reloads through `reload_command`
    pub fn reload(&self) {
        generate(&self.binary, &self.hearth, self.prefix.path());
        let out = Command::new(&self.binary)
            .arg("-p")
            .arg(self.prefix.path())
            .arg("-c")
            .arg(self.conf())
            .args(["-s", "reload"])
            .output()
            .expect("nginx -s reload");
        assert!(
            out.status.success(),
            "reload: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The same reload as a shell command (`hearth realm move --reload-command`).
    pub fn reload_command(&self) -> String {
        format!(
            "{} cluster nginx --placement {} > {c}.new && mv {c}.new {c} && {} -p {} -c {c} -s reload",
            self.hearth.display(),
            self.placement().display(),
            self.binary.display(),
            self.prefix.path().display(),
            c = self.conf().display(),
        )
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes the configuration of `prefix`'s placement file (`hearth cluster nginx`) as
/// its `nginx.conf` and checks it with `nginx -t`.
fn generate(binary: &Path, hearth: &Path, prefix: &Path) {
    let out = Command::new(hearth)
        .args(["cluster", "nginx", "--placement"])
        .arg(prefix.join("placement.toml"))
        .output()
        .expect("hearth cluster nginx");
    assert!(
        out.status.success(),
        "hearth cluster nginx: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let conf = prefix.join("nginx.conf");
    std::fs::write(&conf, &out.stdout).expect("write nginx.conf");
    let test = Command::new(binary)
        .args(["-t", "-p"])
        .arg(prefix)
        .arg("-c")
        .arg(&conf)
        .output()
        .expect("nginx -t");
    assert!(
        test.status.success(),
        "nginx -t: {}",
        String::from_utf8_lossy(&test.stderr)
    );
}
