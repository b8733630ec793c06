//! The `hearth-tools` command: `load`, `torture` and `realm populate`, which `hearth`
//! runs with the arguments it was given (`hearth load ...` is `hearth-tools load ...`).

use std::io::Write;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use hearth::logging::LogFormat;
use hearth_tools::{load, powercut, torture};

/// hearth's tools: the load driver and the crash torture suite.
#[derive(Debug, Parser)]
#[command(name = "hearth-tools", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log lines as text or as one JSON object per line (on stderr; `RUST_LOG` filters).
    #[arg(
        long,
        global = true,
        env = "HEARTH_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    log_format: LogFormat,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Manage realms (organizations).
    #[command(subcommand)]
    Realm(RealmCommand),
    /// Drive a hearth server with simulated clients and report latencies and
    /// throughput (see `hearth load --help`).
    Load(Box<load::LoadArgs>),
    /// Crash torture: drive writes, kill -9 the server at random points, restart it and
    /// check that every acknowledged write survived (see `hearth torture --help`).
    Torture(torture::TortureArgs),
    /// The load driver's reference: a minimal actix-web server answering Zulip's
    /// success body (and a minimal long-poll fan-out), in a process of its own.
    Ceiling(load::ceiling::CeilingArgs),
    /// The power-cut test filesystem, mounted by hand: a pass-through to a backing
    /// folder that holds unsynced writes in memory and drops them on `cut` (a line on
    /// standard input).
    Lazyfs(powercut::LazyfsArgs),
}

#[derive(Debug, Subcommand)]
enum RealmCommand {
    /// Add N members with API keys (and no password) to a realm of a stopped server,
    /// for `hearth load --target`; writes their credentials next to the data.
    Populate(load::users::PopulateArgs),
}

fn main() -> std::process::ExitCode {
    // Run by `hearth` (which names itself in `HEARTH_BIN`): its usage lines and errors
    // read `hearth`, as the commands were its own.
    let name = if std::env::var_os(torture::HEARTH_BIN).is_some() {
        "hearth"
    } else {
        "hearth-tools"
    };
    let matches = Cli::command().name(name).bin_name(name).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    hearth::logging::init(cli.log_format);
    let result = match cli.command {
        Command::Realm(RealmCommand::Populate(p)) => load::users::populate(&p)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Command::Load(args) => load::run(&args),
        Command::Torture(args) => torture::run(&args),
        Command::Ceiling(args) => load::ceiling::serve(&args),
        Command::Lazyfs(args) => powercut::serve(&args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One plain line on stderr, whatever the log format: the operator's answer.
            let line = e.replace('\n', " ");
            let _ = writeln!(std::io::stderr().lock(), "{name}: error: {line}");
            std::process::ExitCode::FAILURE
        }
    }
}
