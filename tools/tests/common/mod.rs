//! The executables under test: `hearth-tools`, and the `hearth` server beside it (built
//! here once per test binary, as a dependency's binary is not built for these tests).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// `hearth-tools`.
pub fn tools() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hearth-tools"))
}

/// The `hearth` executable next to `hearth-tools`, as this test's profile builds it:
/// `cargo build -p hearth --bin hearth` once (nothing to do when `cargo test` at the
/// root has just built it), so a server changed since is never the one tested.
pub fn hearth_exe() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let tools = Path::new(env!("CARGO_BIN_EXE_hearth-tools"));
        let profile_dir = tools.parent().expect("the profile's folder");
        let target_dir = profile_dir.parent().expect("the target folder");
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .args(["build", "--quiet", "-p", "hearth", "--bin", "hearth"])
            .arg("--manifest-path")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml"))
            .arg("--target-dir")
            .arg(target_dir);
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => {}
            Some("release") => {
                cargo.arg("--release");
            }
            Some(other) => {
                cargo.args(["--profile", other]);
            }
            None => {}
        }
        let status = cargo.status().expect("run cargo");
        assert!(status.success(), "cargo build -p hearth failed");
        let exe = profile_dir.join(format!("hearth{}", std::env::consts::EXE_SUFFIX));
        assert!(exe.is_file(), "{} was not built", exe.display());
        exe
    })
}

/// `hearth`, built as `hearth_exe` says.
pub fn hearth() -> Command {
    Command::new(hearth_exe())
}
