//! The `hearth` command table: the server's own commands, and those the `hearth-tools`
//! executable runs (`load`, `torture`, `realm populate`), which `main` hands over with
//! every argument as they were given.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use hearth::config::{CreateRealm, ServeConfig};
use hearth::logging::LogFormat;
use hearth::ops::{CheckArgs, RecoverArgs};

/// hearth: a team-chat server that speaks the Zulip REST API.
#[derive(Debug, Parser)]
#[command(name = "hearth", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Log lines as text or as one JSON object per line (on stderr; `RUST_LOG` filters).
    #[arg(
        long,
        global = true,
        env = "HEARTH_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    pub log_format: LogFormat,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server.
    Serve(ServeConfig),
    /// Manage realms (organizations).
    #[command(subcommand)]
    Realm(RealmCommand),
    /// Copy a stopped server's data folder to a new folder.
    Backup(BackupArgs),
    /// Copy a backup into a new data folder.
    Restore(RestoreArgs),
    /// Verify a stopped server's data folder.
    ///
    /// Decodes every snapshot, WAL record and message row, compares with the manifest,
    /// prints a report per realm; exits non-zero when the folder is damaged.
    Check(CheckArgs),
    /// Rebuild a damaged data folder from what can still be read.
    ///
    /// Needs `--accept-loss`; keeps the damaged folder beside the new one and reports
    /// what was lost.
    Recover(RecoverArgs),
    /// Several nodes behind one router (nginx): see README, "Several nodes".
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Drive a hearth server with simulated clients and report latencies and
    /// throughput (see `hearth load --help`).
    ///
    /// Runs the `hearth-tools` executable (`cargo build -p hearth-tools`).
    #[command(disable_help_flag = true)]
    Load(ToolArgs),
    /// Crash torture: drive writes, kill -9 the server at random points, restart it and
    /// check that every acknowledged write survived (see `hearth torture --help`).
    ///
    /// Runs the `hearth-tools` executable (`cargo build -p hearth-tools`).
    #[command(disable_help_flag = true)]
    Torture(ToolArgs),
}

/// The arguments of a command `hearth-tools` runs: taken as they come (`--help`
/// included), and read by `hearth-tools` itself.
#[derive(Debug, Clone, Args)]
pub struct ToolArgs {
    #[arg(
        num_args = 0..,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        hide = true
    )]
    pub args: Vec<OsString>,
}

/// `hearth backup`.
#[derive(Debug, Clone, Args)]
pub struct BackupArgs {
    /// Data folder to back up (its server must be stopped).
    #[arg(long, env = "HEARTH_DATA", default_value = "./data")]
    pub data: PathBuf,
    /// Folder to create with the copy (must not exist, or be empty).
    #[arg(long)]
    pub out: PathBuf,
}

/// `hearth restore`.
#[derive(Debug, Clone, Args)]
pub struct RestoreArgs {
    /// The backup folder (made by `hearth backup`).
    #[arg(long)]
    pub from: PathBuf,
    /// Data folder to create (must not exist, or be empty).
    #[arg(long, env = "HEARTH_DATA", default_value = "./data")]
    pub data: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Print the nginx configuration of a placement file (run it as
    /// `nginx -p PREFIX -c FILE`).
    Nginx(NginxArgs),
}

/// `hearth cluster nginx`.
#[derive(Debug, Clone, Args)]
pub struct NginxArgs {
    /// The placement file (TOML: [router], [nodes.NAME], [realms]).
    #[arg(long)]
    pub placement: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum RealmCommand {
    /// Create a production realm with its owner; prints the owner's API key and the
    /// zuliprc path.
    Create(CreateRealm),
    /// Add N members with API keys (and no password) to a realm of a stopped server,
    /// for `hearth load --target`; writes their credentials next to the data.
    ///
    /// Runs the `hearth-tools` executable (`cargo build -p hearth-tools`).
    #[command(disable_help_flag = true)]
    Populate(ToolArgs),
    /// Write one realm of a stopped server to an archive file: its state at its last
    /// WAL record, its messages with every user's flags, its uploaded files and custom
    /// emoji, its presence.
    Export(ExportArgs),
    /// Add the realm of an archive to a stopped server's data folder (created if
    /// needed), or to a running node staged (`--admin`; `POST /admin/activate` serves
    /// it). Refuses a realm that exists, a damaged archive and a newer format.
    Import(ImportArgs),
    /// Move a realm between two running nodes through their admin listeners: export
    /// while writes go on, import staged on the target, ship the WAL tail, freeze the
    /// source for the last records, activate on the target, drop from the source.
    Move(MoveArgs),
}

/// `hearth realm move`.
#[derive(Debug, Args)]
pub struct MoveArgs {
    /// The realm's subdomain ("" for the root realm).
    #[arg(long)]
    pub subdomain: String,
    /// The source node's admin listener (`http://127.0.0.1:9993`).
    #[arg(long)]
    pub from: String,
    /// The source node's `admin-token` file.
    #[arg(long)]
    pub from_token_file: PathBuf,
    /// The target node's admin listener.
    #[arg(long)]
    pub to: String,
    /// The target node's `admin-token` file.
    #[arg(long)]
    pub to_token_file: PathBuf,
    /// The placement file, rewritten (atomically) to place the realm on the target
    /// node once it serves it there (the node whose `admin` is `--to`).
    #[arg(long)]
    pub placement: Option<PathBuf>,
    /// Run with `sh -c` after the placement is rewritten, to regenerate and reload
    /// the router; the source is dropped only once it succeeded. Without it (and with
    /// `--placement`) the move stops before the drop: reload, then run it again.
    #[arg(long, requires = "placement")]
    pub reload_command: Option<String>,
    /// After the reload, how long the source stays frozen before it is dropped, for
    /// the router's connections opened before the reload (`2s`, `500ms`).
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub drain: std::time::Duration,
}

/// `hearth realm export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The stopped server's data folder.
    #[arg(
        long,
        env = "HEARTH_DATA",
        required_unless_present = "admin",
        conflicts_with = "admin"
    )]
    pub data: Option<PathBuf>,
    /// A running node's admin listener instead (`http://127.0.0.1:9993`): the archive
    /// is written from its published state while it keeps taking writes.
    #[arg(long, requires = "admin_token_file")]
    pub admin: Option<String>,
    /// The running node's `admin-token` file (with `--admin`).
    #[arg(long)]
    pub admin_token_file: Option<PathBuf>,
    /// The realm's subdomain ("" for the root realm).
    #[arg(long)]
    pub subdomain: String,
    /// The archive to write (must not exist).
    #[arg(long)]
    pub out: PathBuf,
}

/// `hearth realm import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The stopped server's data folder.
    #[arg(
        long,
        env = "HEARTH_DATA",
        required_unless_present = "admin",
        conflicts_with = "admin"
    )]
    pub data: Option<PathBuf>,
    /// A running node's admin listener instead: the realm is imported staged (not
    /// served until `POST /admin/activate`).
    #[arg(long, requires = "admin_token_file")]
    pub admin: Option<String>,
    /// The running node's `admin-token` file (with `--admin`).
    #[arg(long)]
    pub admin_token_file: Option<PathBuf>,
    /// The archive to import.
    #[arg(long)]
    pub archive: PathBuf,
}
