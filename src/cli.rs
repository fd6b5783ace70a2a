//! The command line: parsing with clap and one function per command.

use std::{net::SocketAddr, path::PathBuf};

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use figment::providers::Serialized;

use std::sync::Arc;

use crate::{
    app::App,
    cli_admin::{self as admin, AuditCommand, SessionsCommand, TokenCommand},
    config::{Config, ConfigSources},
    store::{Store, SystemClock},
    telemetry,
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
    /// Apply the database migrations and exit (serve also applies them).
    Migrate {
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Inspect or end 2025-era sessions.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Create, list and revoke personal access tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Read the audit trail.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
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
    fn load(&self, listen: Option<SocketAddr>) -> anyhow::Result<Config> {
        let sources = ConfigSources::standard(self.files.clone());
        let config = sources.load_with(|figment| match listen {
            Some(addr) => figment.merge(Serialized::default("server.listen", addr.to_string())),
            None => figment,
        })?;
        Ok(config)
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve { config, listen } => serve(config.load(listen)?).await,
        Command::Stdio { config } => stdio(config.load(None)?).await,
        Command::Migrate { config } => {
            let config = config.load(None)?;
            let store = Store::connect(config.store.url.expose(), Arc::new(SystemClock)).await?;
            store.migrate().await?;
            println!("migrations applied to {}", config.store.url.masked());
            Ok(())
        }
        Command::Sessions { command, config } => admin::sessions(command, config.load(None)?).await,
        Command::Token { command, config } => admin::tokens(command, config.load(None)?).await,
        Command::Audit { command, config } => admin::audit(command, config.load(None)?).await,
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

async fn serve(config: Config) -> anyhow::Result<()> {
    let _telemetry = telemetry::init(&config)?;
    let listen = config.server.listen;
    let path = config.mcp.path.clone();
    let app = App::build(config).await?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot bind {listen}"))?;
    let bound = listener.local_addr()?;
    app.announce_auth().await;
    tracing::info!(url = %format!("http://{bound}{path}"), "teamgate serving MCP at http://{bound}{path}");
    app.serve(listener, shutdown_signal()).await
}

async fn stdio(config: Config) -> anyhow::Result<()> {
    telemetry::init_stderr(&config.log)?;
    // No store: a stdio client is one local process with no sessions to keep.
    let handler = crate::app::stdio_handler(&config)?;
    crate::mcp::serve_stdio(handler, shutdown_signal()).await
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
