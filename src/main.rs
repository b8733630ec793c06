//! The `hearth` command.

use clap::Parser;
use hearth::config::{Cli, Command, RealmCommand, ServeConfig};
use tracing_subscriber::EnvFilter;

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("info,hearth::http=warn")),
        )
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(config) => actix_web::rt::System::new().block_on(serve(config)),
        Command::Realm(RealmCommand::Create(c)) => create(&c),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
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

fn create(c: &hearth::config::CreateRealm) -> Result<(), String> {
    let (api_key, user_id) = hearth::create_production_realm(c).map_err(|e| e.to_string())?;
    let rc = format!(
        "[api]\nemail={}\nkey={}\nsite={}\n",
        c.owner_email, api_key, c.url
    );
    std::fs::write(&c.zuliprc, rc).map_err(|e| format!("writing {}: {e}", c.zuliprc.display()))?;
    tracing::info!(
        "created realm '{}' ({}); owner {} is user {user_id}; zuliprc written to {}",
        c.subdomain,
        c.name,
        c.owner_email,
        c.zuliprc.display()
    );
    // The key is the command's output, for scripts: stdout, not the log.
    let mut out = std::io::stdout().lock();
    std::io::Write::write_all(&mut out, format!("{api_key}\n").as_bytes())
        .map_err(|e| e.to_string())
}
