//! `hearth load`, `hearth torture` and `hearth realm populate` run the `hearth-tools`
//! next to `hearth` with the same arguments, and exit as it does.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Output;

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn help_lists_the_tools_commands() {
    let out = common::hearth().arg("--help").output().unwrap();
    let (stdout, _) = text(&out);
    assert!(out.status.success());
    assert!(
        stdout.contains("  load ") && stdout.contains("Drive a hearth server"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  torture ") && stdout.contains("Crash torture"),
        "{stdout}"
    );
    let out = common::hearth().args(["realm", "--help"]).output().unwrap();
    let (stdout, _) = text(&out);
    assert!(stdout.contains("  populate "), "{stdout}");
}

#[test]
fn a_tools_command_gets_its_own_help_under_hearth() {
    for (args, usage, flag) in [
        (&["load", "--help"][..], "hearth load", "--scenario"),
        (&["torture", "--help"][..], "hearth torture", "--cycles"),
        (
            &["realm", "populate", "--help"][..],
            "hearth realm populate",
            "--users",
        ),
        // The global flag before the command reaches hearth-tools too.
        (
            &["--log-format", "json", "load", "-h"][..],
            "hearth load",
            "--ceiling",
        ),
    ] {
        let out = common::hearth().args(args).output().unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(stdout.contains(flag), "{args:?}: {stdout}");
        assert!(
            stdout.contains(&format!("Usage: {usage} ")),
            "{args:?}: {stdout}"
        );
    }
}

#[test]
fn the_exit_code_and_the_error_line_are_the_tools() {
    // A refused run: 1, and the one-line error under hearth's name.
    let out = common::hearth()
        .args([
            "load",
            "--scenario",
            "fanout",
            "--users",
            "2",
            "--rate",
            "5",
        ])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "hearth: error: fanout and capacity pace themselves: --rate does not apply to them"
    );
    // A flag hearth-tools does not know: clap's usage error, exit 2.
    let out = common::hearth()
        .args(["torture", "--no-such-flag"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--no-such-flag"), "{stderr}");
    assert!(stderr.contains("Usage: hearth torture"), "{stderr}");
}

#[test]
fn populate_writes_the_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = common::hearth()
        .env("RUST_LOG", "warn")
        .args(["realm", "create", "--subdomain", "", "--name", "Load"])
        .args(["--owner-email", "owner@example.com", "--data"])
        .arg(&data)
        .arg("--zuliprc")
        .arg(dir.path().join("zuliprc"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    let out = common::hearth()
        .env("RUST_LOG", "warn")
        .args([
            "realm",
            "populate",
            "--subdomain",
            "",
            "--users",
            "3",
            "--data",
        ])
        .arg(&data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    let creds = std::fs::read_to_string(data.join("load-users.tsv")).unwrap();
    let emails: Vec<&str> = creds
        .lines()
        .map(|l| l.split_once('\t').unwrap().0)
        .collect();
    assert_eq!(
        emails,
        [
            "load0@hearth.invalid",
            "load1@hearth.invalid",
            "load2@hearth.invalid"
        ]
    );
}

#[test]
fn without_hearth_tools_the_error_says_how_to_build_it() {
    // A copy of hearth alone in a folder, with nothing on PATH.
    let hearth = common::hearth_exe();
    let dir = tempfile::tempdir_in(hearth.parent().unwrap()).unwrap();
    let alone = dir.path().join("hearth");
    std::fs::hard_link(hearth, &alone)
        .or_else(|_| std::fs::copy(hearth, &alone).map(|_| ()))
        .unwrap();
    let out = std::process::Command::new(&alone)
        .args(["load", "--users", "5"])
        .env("PATH", "")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("hearth: error: `hearth load` runs the hearth-tools executable"),
        "{stderr}"
    );
    assert!(stderr.contains("cargo build -p hearth-tools"), "{stderr}");
}
