//! Builds the web client (`web/`, TypeScript with Vite) into `$OUT_DIR/web`, which
//! `src/api/webapp.rs` embeds in the binary: `hearth` stays one file, and a fresh
//! clone needs only Rust and Node.js. `npm ci` runs when `web/node_modules` is missing
//! or older than `web/package-lock.json`; the Vite build runs when the client's
//! sources changed (Cargo reruns this script only then).

use std::path::{Path, PathBuf};
use std::process::{exit, Command};

/// What the client's build reads: a change to any of them rebuilds it.
const SOURCES: &[&str] = &[
    "web/src",
    "web/index.html",
    "web/package.json",
    "web/package-lock.json",
    "web/vite.config.ts",
    "web/tsconfig.json",
    "web/scripts",
];

fn fail(line: &str) -> ! {
    eprintln!("error: {line}");
    exit(1);
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn run(cmd: &mut Command, what: &str) {
    match cmd.status() {
        Ok(s) if s.success() => {}
        Ok(s) => fail(&format!("{what} failed ({s}) in web/; its output is above")),
        Err(e) => fail(&format!("cannot run {what}: {e}")),
    }
}

fn main() {
    for source in SOURCES {
        println!("cargo:rerun-if-changed={source}");
    }
    let web = Path::new("web");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("web");
    let node_ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node_ok {
        fail(
            "hearth's web client (web/) is built with Node.js 20 or later and npm, and \
             `node` was not found: install Node.js, then build again",
        );
    }
    let lock = web.join("package-lock.json");
    let installed = web.join("node_modules/.package-lock.json");
    let stale = match (modified(&installed), modified(&lock)) {
        (Some(installed), Some(lock)) => installed < lock,
        _ => true,
    };
    if stale {
        run(
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(web),
            "npm ci",
        );
    }
    run(
        Command::new("npm")
            .args(["run", "--silent", "build"])
            .env("HEARTH_WEB_OUT", &out)
            .current_dir(web),
        "npm run build (the web client's Vite build)",
    );
    if !out.join("index.html").is_file() {
        fail("the web client's build wrote no index.html");
    }
}
