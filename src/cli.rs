//! The command line: parsing with clap and one function per command.

use std::{net::SocketAddr, path::PathBuf};

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use figment::providers::Serialized;

use crate::{
    app::App,
    config::{Config, ConfigSources},
    reload, telemetry,
};

#[derive(Debug, Parser)]
#[command(name = "teamgate", version, about = "A remote MCP server a team deploys once", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over Streamable HTTP.
    Serve {
        #[command(flatten)]
        config: ConfigArgs,
        /// Address to bind, overriding `server.listen`.
        #[arg(long, value_name = "ADDR")]
        listen: Option<SocketAddr>,
    },
    /// Serve the same tools, resources and prompts over stdio, for a client
    /// that starts teamgate as a local process. Logs go to stderr only.
    Stdio {
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Validate the configuration and print the effective result (secrets
    /// masked) without binding anything.
    CheckConfig {
        #[command(flatten)]
        config: ConfigArgs,
    },
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// A TOML file layered over the defaults; repeatable, later files win.
    #[arg(long = "config", value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

impl ConfigArgs {
    fn sources(&self) -> ConfigSources {
        ConfigSources::standard(self.files.clone())
    }

    fn load(&self, listen: Option<SocketAddr>) -> anyhow::Result<Config> {
        let sources = self.sources();
        let config = sources.load_with(|figment| match listen {
            Some(addr) => figment.merge(Serialized::default("server.listen", addr.to_string())),
            None => figment,
        })?;
        Ok(config)
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve { config, listen } => serve(config.load(listen)?, config.sources()).await,
        Command::Stdio { config } => stdio(config.load(None)?, config.sources()).await,
        Command::CheckConfig { config } => {
            let config = config.load(None)?;
            print!(
                "{}",
                toml::to_string_pretty(&config).context("printing configuration")?
            );
            eprintln!("configuration is valid");
            Ok(())
        }
    }
}

async fn serve(config: Config, sources: ConfigSources) -> anyhow::Result<()> {
    telemetry::init(&config.log)?;
    let listen = config.server.listen;
    let path = config.mcp.path.clone();
    let app = App::build(config)?;
    let _watcher = start_reload(&app, sources)?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot bind {listen}"))?;
    let bound = listener.local_addr()?;
    tracing::info!(url = %format!("http://{bound}{path}"), "teamgate serving MCP at http://{bound}{path}");
    app.serve(listener, shutdown_signal()).await
}

async fn stdio(config: Config, sources: ConfigSources) -> anyhow::Result<()> {
    telemetry::init_stderr(&config.log)?;
    let app = App::build(config)?;
    let _watcher = start_reload(&app, sources)?;
    crate::mcp::serve_stdio(app.handler(), shutdown_signal()).await
}

/// Hot reload: SIGHUP always, configuration-file changes when `reload.watch`
/// is on. The returned watcher stops watching when dropped.
fn start_reload(
    app: &App,
    sources: ConfigSources,
) -> anyhow::Result<Option<reload::ConfigWatcher>> {
    reload::on_sighup(app.reloader(), sources.clone())?;
    let settings = &app.config.reload;
    if !settings.watch {
        return Ok(None);
    }
    reload::watch(app.reloader(), sources, settings.debounce).map(Some)
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}
