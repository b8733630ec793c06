//! The `hearth` command.

mod cli;

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;
use cli::{BackupArgs, Cli, ClusterCommand, Command, RealmCommand, RestoreArgs};
use hearth::config::ServeConfig;

/// jemalloc, with background threads that return freed pages to the system after
/// its decay time (10 s): after a load burst (thousands of connections, large
/// answers) the server shrinks back, where glibc's malloc kept most of the peak.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    hearth::storage::folder::private_files();
    hearth::logging::init(cli.log_format);
    let result = match cli.command {
        Command::Serve(config) => actix_web::rt::System::new().block_on(serve(config)),
        Command::Realm(RealmCommand::Create(c)) => create(&c),
        Command::Realm(RealmCommand::Export(e)) => export(&e),
        Command::Realm(RealmCommand::Import(i)) => import(&i),
        Command::Realm(RealmCommand::Move(m)) => realm_move(&m),
        Command::Backup(b) => backup(&b),
        Command::Restore(r) => restore(&r),
        Command::Check(c) => hearth::ops::check_command(&c, &mut std::io::stdout()),
        Command::Recover(r) => hearth::ops::recover_command(&r, &mut std::io::stdout()),
        Command::Cluster(ClusterCommand::Nginx(n)) => {
            hearth::ops::cluster::nginx_command(&n.placement).and_then(|config| {
                std::io::stdout()
                    .lock()
                    .write_all(config.as_bytes())
                    .map_err(|e| e.to_string())
            })
        }
        Command::Load(_) => return run_tools("load"),
        Command::Torture(_) => return run_tools("torture"),
        Command::Realm(RealmCommand::Populate(_)) => return run_tools("realm populate"),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// One plain line on stderr, whatever the log format: the operator's answer.
fn fail(e: &str) -> std::process::ExitCode {
    let line = e.replace('\n', " ");
    hearth::logging::last_line(&format!("hearth: error: {line}"));
    std::process::ExitCode::FAILURE
}

/// Runs `hearth COMMAND ...` as git and cargo run their external subcommands: the
/// `hearth-tools` executable next to this one (else the one on `PATH`) gets every
/// argument as it was given, in place of this process (its exit code is this
/// command's). `HEARTH_BIN` names this executable to it: `torture` runs that server.
fn run_tools(command: &str) -> std::process::ExitCode {
    let me = std::env::current_exe().ok();
    let name = format!("hearth-tools{}", std::env::consts::EXE_SUFFIX);
    let beside = me
        .as_deref()
        .and_then(|me| me.parent())
        .map(|dir| dir.join(&name))
        .filter(|path| path.is_file());
    let program = beside.clone().unwrap_or_else(|| PathBuf::from(&name));
    let mut child = std::process::Command::new(&program);
    child.args(std::env::args_os().skip(1));
    if let Some(me) = &me {
        child.env("HEARTH_BIN", me);
    }
    #[cfg(unix)]
    let error = std::os::unix::process::CommandExt::exec(&mut child);
    #[cfg(not(unix))]
    let error = match child.status() {
        Ok(status) => std::process::exit(status.code().unwrap_or(1)),
        Err(e) => e,
    };
    if error.kind() == std::io::ErrorKind::NotFound && beside.is_none() {
        let dir = me
            .as_deref()
            .and_then(|me| me.parent())
            .map_or_else(|| "hearth's folder".to_owned(), |d| d.display().to_string());
        return fail(&format!(
            "`hearth {command}` runs the hearth-tools executable, which is neither in {dir} \
             nor on PATH: build it with `cargo build -p hearth-tools` (or install it with \
             `cargo install --path tools`)"
        ));
    }
    fail(&format!("cannot run {}: {error}", program.display()))
}

async fn serve(config: ServeConfig) -> Result<(), String> {
    let data = config.data.display().to_string();
    let dev = config.dev;
    let running = hearth::spawn(config).await.map_err(|e| e.to_string())?;
    tracing::info!("hearth listening on {} (data in {data})", running.url());
    if dev {
        tracing::info!(
            "development realm: get an API key with `curl -X POST {}/api/v1/dev_fetch_api_key -d username=iago@zulip.com`",
            running.url()
        );
    } else {
        tracing::info!(
            "API keys: POST {}/api/v1/fetch_api_key with username and password",
            running.url()
        );
    }
    wait_for_signal().await;
    tracing::info!("shutting down: snapshotting realms");
    running.shutdown().await;
    Ok(())
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// `hearth realm export`: prints what the archive holds, one line.
fn export(e: &cli::ExportArgs) -> Result<(), String> {
    if let Some(url) = &e.admin {
        let client = admin_client(url, e.admin_token_file.as_deref())?;
        let position =
            actix_web::rt::System::new().block_on(client.export(&e.subdomain, &e.out))?;
        let size = std::fs::metadata(&e.out).map(|m| m.len()).unwrap_or(0);
        return writeln!(
            std::io::stdout().lock(),
            "exported realm '{}' at WAL record {position} from {url} to {} ({size} bytes)",
            e.subdomain,
            e.out.display()
        )
        .map_err(|e| e.to_string());
    }
    let data = e.data.as_deref().ok_or("--data or --admin is needed")?;
    let m = hearth::ops::archive::export_command(data, &e.subdomain, &e.out)
        .map_err(|e| e.to_string())?;
    let c = &m.counts;
    writeln!(
        std::io::stdout().lock(),
        "exported realm '{}' at WAL record {} to {}: {} users, {} channels, {} messages, \
         {} files ({} bytes), {} presence entries",
        m.subdomain,
        m.seq,
        e.out.display(),
        c.users,
        c.channels,
        c.messages,
        c.files,
        c.file_bytes,
        c.presence
    )
    .map_err(|e| e.to_string())
}

/// `hearth realm import`. `HEARTH_ARCHIVE_FAULT=abort:<part>` ends the process at the
/// first part of that kind, as `kill -9` would (the crash tests).
fn import(i: &cli::ImportArgs) -> Result<(), String> {
    let fault = hearth::ops::archive::Fault::from_env();
    if let Some(url) = &i.admin {
        let client = admin_client(url, i.admin_token_file.as_deref())?;
        let (realm, position, keys) =
            actix_web::rt::System::new().block_on(client.import_with_keys(&i.archive))?;
        writeln!(
            std::io::stdout().lock(),
            "imported realm '{realm}' at WAL record {position} into {url}, staged: \
             POST /admin/activate serves it"
        )
        .map_err(|e| e.to_string())?;
        return print_owner_keys(&keys);
    }
    let data = i.data.as_deref().ok_or("--data or --admin is needed")?;
    let r =
        hearth::ops::archive::import_command(data, &i.archive, fault).map_err(|e| e.to_string())?;
    let c = &r.manifest.counts;
    writeln!(
        std::io::stdout().lock(),
        "imported realm '{}' at WAL record {} into {}: {} users, {} messages, {} files",
        r.subdomain,
        r.seq,
        data.display(),
        c.users,
        c.messages,
        c.files
    )
    .map_err(|e| e.to_string())?;
    print_owner_keys(&r.new_owner_keys)
}

/// A data export holds no key or password: its owners get theirs here, as `realm
/// create` prints its owner's (every other user has a new key too).
fn print_owner_keys(keys: &[(String, String)]) -> Result<(), String> {
    for (email, key) in keys {
        writeln!(
            std::io::stdout().lock(),
            "a data export: every user has a new API key and no password; owner {email}: {key}"
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// An admin listener's client, its token read from the node's token file.
fn admin_client(
    url: &str,
    token_file: Option<&std::path::Path>,
) -> Result<hearth::admin::client::AdminClient, String> {
    let file = token_file.ok_or("--admin-token-file is needed with --admin")?;
    hearth::admin::client::AdminClient::with_token_file(url, file)
}

/// `hearth realm move`: prints each step, one line each.
fn realm_move(m: &cli::MoveArgs) -> Result<(), String> {
    let request = hearth::ops::moving::MoveRequest {
        subdomain: m.subdomain.clone(),
        from: m.from.clone(),
        from_token_file: m.from_token_file.clone(),
        to: m.to.clone(),
        to_token_file: m.to_token_file.clone(),
        placement: m.placement.clone(),
        reload_command: m.reload_command.clone(),
        drain: m.drain,
    };
    let report =
        actix_web::rt::System::new().block_on(hearth::ops::moving::move_realm(&request))?;
    let mut out = std::io::stdout().lock();
    for line in &report.lines {
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn create(c: &hearth::config::CreateRealm) -> Result<(), String> {
    let (api_key, user_id) = hearth::create_production_realm(c).map_err(|e| e.to_string())?;
    let rc = format!(
        "[api]\nemail={}\nkey={}\nsite={}\n",
        c.owner_email, api_key, c.url
    );
    let written = write_private(&c.zuliprc, rc.as_bytes())
        .map_err(|e| format!("writing {}: {e}", c.zuliprc.display()));
    if written.is_ok() {
        tracing::info!(
            "created realm '{}' ({}); owner {} is user {user_id}; zuliprc written to {}",
            c.subdomain,
            c.name,
            c.owner_email,
            c.zuliprc.display()
        );
    }
    // The command's output, for scripts: the key, then the zuliprc path. The key is
    // printed even when the zuliprc could not be written: the realm exists.
    let mut out = std::io::stdout().lock();
    writeln!(out, "{api_key}").map_err(|e| e.to_string())?;
    written?;
    writeln!(out, "{}", c.zuliprc.display()).map_err(|e| e.to_string())
}

/// Writes `bytes` to a file only its owner may read (Zulip clients refuse a wider
/// zuliprc): a new file created with mode 0600, then renamed over `path`.
fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    let tmp = path.with_file_name(name);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let result = options.open(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn backup(b: &BackupArgs) -> Result<(), String> {
    let copied = hearth::ops::backup::backup(&b.data, &b.out).map_err(|e| e.to_string())?;
    report("backed up", &b.data, &b.out, &copied);
    Ok(())
}

fn restore(r: &RestoreArgs) -> Result<(), String> {
    let copied = hearth::ops::backup::restore(&r.from, &r.data).map_err(|e| e.to_string())?;
    report("restored", &r.from, &r.data, &copied);
    Ok(())
}

fn report(
    what: &str,
    from: &std::path::Path,
    to: &std::path::Path,
    c: &hearth::ops::backup::Copied,
) {
    let realms: Vec<String> = c
        .realms
        .iter()
        .map(|(subdomain, users)| format!("'{subdomain}' ({users} users)"))
        .collect();
    tracing::info!(
        "{what} {} to {} ({} bytes); realms: {}",
        from.display(),
        to.display(),
        c.bytes,
        realms.join(", ")
    );
}
