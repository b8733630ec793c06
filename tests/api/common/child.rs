//! A `hearth serve` child process: the real binary, for tests of what an operator
//! meets (start-up refusals, logs, signals, `kill -9`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::hearth;

/// A running `hearth serve` and everything it wrote to stderr so far.
pub struct ChildServer {
    child: Child,
    pub url: String,
    stderr: Arc<Mutex<Vec<String>>>,
}

/// How a start ended: listening, or refused (the exit and stderr).
pub enum Started {
    Up(ChildServer),
    Refused(ExitStatus, Vec<String>),
}

impl ChildServer {
    /// Starts `hearth serve --bind 127.0.0.1:0 --workers 1 args...` with `envs`, and
    /// waits until it listens or exits.
    pub fn start(args: &[&str], envs: &[(&str, &str)]) -> Started {
        let mut child = hearth()
            .args(["serve", "--bind", "127.0.0.1:0", "--workers", "1"])
            .args(args)
            .envs(envs.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("hearth starts");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let lines = stderr.clone();
        let pipe = child.stderr.take().expect("stderr");
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                lines.lock().unwrap().push(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let url = stderr.lock().unwrap().iter().find_map(|l| {
                let at = l.find("listening on http://")? + "listening on ".len();
                let rest = &l[at..];
                let end = rest
                    .find(|c: char| c.is_whitespace() || c == '"')
                    .unwrap_or(rest.len());
                Some(rest[..end].to_owned())
            });
            if let Some(url) = url {
                return Started::Up(ChildServer { child, url, stderr });
            }
            if let Some(status) = child.try_wait().expect("wait") {
                reader.join().unwrap();
                let lines = stderr.lock().unwrap().clone();
                return Started::Refused(status, lines);
            }
            assert!(
                Instant::now() < deadline,
                "hearth neither started nor exited"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// As `start`, for a start that must succeed.
    pub fn up(args: &[&str], envs: &[(&str, &str)]) -> ChildServer {
        match ChildServer::start(args, envs) {
            Started::Up(s) => s,
            Started::Refused(status, lines) => panic!("refused ({status}): {lines:#?}"),
        }
    }

    /// SIGTERM, then waits for a clean exit; returns stderr.
    pub fn stop(mut self) -> Vec<String> {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                assert!(status.success(), "exit after SIGTERM: {status}");
                break;
            }
            assert!(Instant::now() < deadline, "no exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(10));
        }
        // The reader thread ends with the pipe.
        std::thread::sleep(Duration::from_millis(50));
        self.log()
    }

    /// `kill -9`, and reaps the process.
    pub fn kill_9(mut self) {
        self.child.kill().expect("kill -9");
        self.child.wait().expect("reaped");
    }

    /// Waits (at most `within`) for the process to exit on its own; its exit.
    pub fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "no exit within {within:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// What it wrote to stderr so far.
    pub fn log(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
