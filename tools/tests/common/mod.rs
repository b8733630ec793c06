//! The executables under test: `hearth-tools`, and the `hearth` server beside it (built
//! here when it is missing or older than its sources: a dependency's binary is not built
//! for these tests).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::SystemTime;

/// `hearth-tools`.
pub fn tools() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hearth-tools"))
}

/// The `hearth` executable next to `hearth-tools`, in this test's profile. `cargo test`
/// at the root has just built it; under `cargo test -p hearth-tools` it may be missing,
/// or older than the server's sources, and then `cargo build` builds it (once per test
/// binary), so a server changed since is never the one tested. The build names both
/// packages, so that the server's dependencies have the features this test was built
/// with (`-p hearth` alone would build them again without the tools' features). It does
/// not run after the root's `cargo test`, which builds the server with its
/// dev-dependencies' features: a plain build would be another build of it.
pub fn hearth_exe() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let tools = Path::new(env!("CARGO_BIN_EXE_hearth-tools"));
        let profile_dir = tools.parent().expect("the profile's folder");
        let exe = profile_dir.join(format!("hearth{}", std::env::consts::EXE_SUFFIX));
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the workspace's folder");
        let built = std::fs::metadata(&exe).and_then(|m| m.modified()).ok();
        let sources = newest(&[
            root.join("src"),
            root.join("Cargo.toml"),
            root.join("Cargo.lock"),
        ]);
        if built.is_some_and(|b| sources.is_none_or(|s| s <= b)) {
            return exe;
        }
        let target_dir = profile_dir.parent().expect("the target folder");
        let mut cargo = Command::new(env!("CARGO"));
        // What cargo set for this test, not for the build: build scripts that watch
        // such a variable (`CARGO_PKG_VERSION_*`) would run again, and rebuild their
        // crates for nothing.
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if [
                "CARGO_PKG_",
                "CARGO_MANIFEST_",
                "CARGO_CRATE_",
                "CARGO_BIN_",
            ]
            .iter()
            .any(|p| name.starts_with(p))
                || ["CARGO_PRIMARY_PACKAGE", "CARGO_TARGET_TMPDIR", "OUT_DIR"].contains(&&*name)
            {
                cargo.env_remove(&*name);
            }
        }
        cargo
            .current_dir(root)
            .args(["build", "--quiet", "-p", "hearth", "-p", "hearth-tools"])
            .args(["--bin", "hearth", "--target-dir"])
            .arg(target_dir);
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => {}
            Some("release") => {
                cargo.arg("--release");
            }
            Some(other) => {
                cargo.args(["--profile", other]);
            }
        }
        let status = cargo.status().expect("run cargo");
        assert!(status.success(), "cargo build --bin hearth failed");
        assert!(exe.is_file(), "{} was not built", exe.display());
        exe
    })
}

/// The newest modification time of these files and of every file under these folders.
fn newest(paths: &[PathBuf]) -> Option<SystemTime> {
    let mut newest = None;
    let mut todo = paths.to_vec();
    while let Some(path) = todo.pop() {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                todo.extend(entries.flatten().map(|e| e.path()));
            }
        } else if let Ok(modified) = meta.modified() {
            newest = newest.max(Some(modified));
        }
    }
    newest
}

/// `hearth`, built as `hearth_exe` says.
pub fn hearth() -> Command {
    Command::new(hearth_exe())
}

/// Runs `COMMAND torture args...`, which must pass; returns its report (its standard
/// output, printed with its standard error).
pub fn torture(mut command: Command, args: &[&str]) -> String {
    let out = command
        .arg("torture")
        .args(args)
        .output()
        .expect("run hearth torture");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(out.status.success(), "torture failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("torture passed"), "{stdout}");
    stdout.into_owned()
}
