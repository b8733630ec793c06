//! An SMTP receiver for the email tests: Python's `aiosmtpd` (as `HEARTH_PYTHON`
//! provides it), writing every message it accepts to a maildir.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// An `aiosmtpd` receiver writing what it gets to a maildir.
pub struct Receiver {
    child: Child,
    port: u16,
    maildir: PathBuf,
    _dir: tempfile::TempDir,
}

impl Receiver {
    /// Starts one, or `None` without `HEARTH_PYTHON` outside CI.
    pub fn start() -> Option<Receiver> {
        let Some(python) = std::env::var_os("HEARTH_PYTHON") else {
            assert!(
                std::env::var_os("CI").is_none(),
                "HEARTH_PYTHON must name a Python with aiosmtpd under CI"
            );
            eprintln!("SKIPPED: HEARTH_PYTHON (a Python with aiosmtpd==1.4.6) is not set");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let maildir = dir.path().join("maildir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(python)
            .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}")])
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(&maildir)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run aiosmtpd");
        let mut r = Receiver {
            child,
            port,
            maildir,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = r.child.try_wait().unwrap() {
                panic!("aiosmtpd exited: {status}");
            }
            assert!(Instant::now() < deadline, "aiosmtpd never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(r)
    }

    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// The messages received so far, as text.
    pub fn messages(&self) -> Vec<String> {
        let new = self.maildir.join("new");
        let Ok(entries) = std::fs::read_dir(&new) else {
            return Vec::new();
        };
        entries
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect()
    }

    /// Waits until `n` messages arrived.
    pub async fn wait_for(&self, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = self.messages();
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {n} messages arrived",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
