//! The command line: parsing with clap and one function per command.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
};

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use figment::providers::Serialized;

use std::sync::Arc;

use crate::{
    app::{App, reload},
    cli_admin::{self as admin, AuditCommand, SessionsCommand, TokenCommand},
    cli_upstreams::{self, UpstreamsCommand},
    config::{Config, ConfigSources},
    store::{Store, SystemClock},
    telemetry,
};

#[derive(Debug, Parser)]
#[command(name = "teamgate", version, about = "A remote MCP server a team deploys once", long_about = None)]
pub struct Cli {
    /// The server's configuration file(s), before the command as well as
    /// after it: `teamgate --config F upstreams list`.
    #[arg(long = "config", value_name = "FILE", value_delimiter = ':')]
    pub config: Vec<PathBuf>,
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
    /// Validate the configuration as `serve` would (every provider built,
    /// secrets present, paths existing) and print the effective result
    /// (secrets masked) without binding or connecting anything.
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
    /// The upstream MCP servers' pinned tool definitions; approve changed ones.
    Upstreams {
        #[command(subcommand)]
        command: UpstreamsCommand,
        #[command(flatten)]
        config: ConfigArgs,
    },
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// A TOML file layered over the defaults; repeatable, later files win.
    /// Without it: the files listed in TEAMGATE_CONFIG, separated by ':'
    /// (the container image sets /etc/teamgate/teamgate.toml).
    #[arg(
        long = "config",
        value_name = "FILE",
        env = "TEAMGATE_CONFIG",
        value_delimiter = ':',
        // Accepted after a sub-subcommand too (`teamgate upstreams list --config x`).
        global = true
    )]
    pub files: Vec<PathBuf>,
}

impl ConfigArgs {
    fn sources(&self) -> ConfigSources {
        ConfigSources::standard(self.files.clone())
    }

    fn load(&self, listen: Option<SocketAddr>) -> anyhow::Result<Config> {
        Ok(self.read(listen)?)
    }

    fn read(&self, listen: Option<SocketAddr>) -> Result<Config, crate::config::ConfigError> {
        self.sources().load_with(|figment| match listen {
            Some(addr) => figment.merge(Serialized::default("server.listen", addr.to_string())),
            None => figment,
        })
    }

    /// The configuration `serve` and `stdio` run, or every problem that
    /// stops them, listed in one round (`cli_check`).
    fn load_to_serve(&self, listen: Option<SocketAddr>) -> anyhow::Result<Config> {
        let read = crate::cli_check::read(self.read(listen))?;
        read.refuse()?;
        Ok(read.config)
    }
}

impl Command {
    fn config_args(&mut self) -> &mut ConfigArgs {
        match self {
            Command::Serve { config, .. }
            | Command::Stdio { config }
            | Command::CheckConfig { config }
            | Command::Migrate { config }
            | Command::Sessions { config, .. }
            | Command::Token { config, .. }
            | Command::Audit { config, .. }
            | Command::Upstreams { config, .. } => config,
        }
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let mut command = cli.command;
    if !cli.config.is_empty() {
        // Files given before the command come first; TEAMGATE_CONFIG, which
        // stands in only when no file is given, gives way to them.
        let args = command.config_args();
        let after = std::mem::take(&mut args.files);
        args.files = cli.config;
        if after != config_from_env() {
            args.files.extend(after);
        }
    }
    match command {
        Command::Serve { config, listen } => {
            serve(config.load_to_serve(listen)?, config.sources()).await
        }
        Command::Stdio { config } => stdio(config.load_to_serve(None)?, config.sources()).await,
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
        Command::Upstreams { command, config } => {
            let loaded = config.load(None)?;
            if loaded.upstreams.is_empty() {
                // Say which configuration was read: the usual cause is a CLI
                // run without the server's --config / TEAMGATE_CONFIG.
                eprintln!(
                    "no [[upstreams]] configured; this command read {}",
                    config.sources().describe()
                );
            }
            cli_upstreams::upstreams(command, loaded).await
        }
        Command::CheckConfig { config } => check_config(&config),
    }
}

/// Everything `serve` would refuse, in one round, without binding,
/// connecting or watching (`cli_check`), and what must exist on disk.
/// Prints the effective configuration when it loads, then each problem
/// with its key.
fn check_config(args: &ConfigArgs) -> anyhow::Result<()> {
    let mut read = crate::cli_check::read(args.read(None))?;
    if read.whole {
        print!(
            "{}",
            toml::to_string_pretty(&read.config).context("printing configuration")?
        );
    }
    read.build();
    for hint in read.config.hints() {
        eprintln!("hint: {hint}");
    }
    for note in crate::sandbox::review(&read.config).1 {
        eprintln!("{note}");
    }
    read.refuse()?;
    eprintln!("configuration is valid");
    Ok(())
}

async fn serve(config: Config, sources: ConfigSources) -> anyhow::Result<()> {
    let _telemetry = telemetry::init(&config)?;
    for note in crate::sandbox::review(&config).1 {
        tracing::warn!("{note}");
    }
    let listen = config.server.listen;
    let path = config.mcp.path.clone();
    let _one_server = crate::store::ServeLock::take(config.store.url.expose())?;
    // The pin warnings name the approval as this operator would type it.
    crate::upstream::review::set_approve_command(admin_command(&sources, "upstreams", "approve"));
    let app = App::build(config).await?;
    let _watcher = start_reload(app.reloader(), &app.config.reload, sources.clone())?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|error| bind_error(listen, error))?;
    let bound = listener.local_addr()?;
    app.announce_auth(&admin_command(&sources, "token", "create --user <name>"))
        .await;
    tracing::info!(url = %format!("http://{bound}{path}"), "teamgate serving MCP at http://{bound}{path}");
    app.serve(listener, shutdown_signal()).await
}

/// An operator command as it works when typed in this shell: the program as
/// it was started (`target/release/teamgate` when not installed on PATH) and
/// the `--config` files this server read, unless TEAMGATE_CONFIG names them.
pub(crate) fn admin_command(sources: &ConfigSources, group: &str, rest: &str) -> String {
    let typed = std::env::args()
        .next()
        .unwrap_or_else(|| "teamgate".to_owned());
    let name = Path::new(&typed)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let this = std::env::current_exe().and_then(std::fs::canonicalize).ok();
    // `teamgate` when PATH finds this very binary by its name, else the path as typed.
    let found = |name: &str| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .filter_map(|dir| std::fs::canonicalize(dir.join(name)).ok())
            .any(|candidate| Some(candidate) == this)
    };
    let program = match name {
        Some(name) if !typed.contains('/') || found(&name) => name,
        _ => typed,
    };
    let mut command = format!("{program} {group}");
    if sources.files != config_from_env() {
        for file in &sources.files {
            command.push_str(&format!(" --config {}", file.display()));
        }
    }
    format!("{command} {rest}")
}

/// The files TEAMGATE_CONFIG names (what `--config` stands for when absent).
fn config_from_env() -> Vec<PathBuf> {
    std::env::var_os("TEAMGATE_CONFIG")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default()
}

/// "address in use" says which setting moves it.
fn bind_error(listen: std::net::SocketAddr, error: std::io::Error) -> anyhow::Error {
    if error.kind() == std::io::ErrorKind::AddrInUse {
        return anyhow::anyhow!(
            "cannot listen on {listen}: another program already listens there; \
             choose another address with --listen or server.listen"
        );
    }
    anyhow::anyhow!("cannot listen on {listen}: {error}")
}

async fn stdio(config: Config, sources: ConfigSources) -> anyhow::Result<()> {
    telemetry::init_stderr(&config.log)?;
    // No store: a stdio client is one local process with no sessions to keep.
    let (handler, reloader) = crate::app::stdio_handler(&config)?;
    let _watcher = start_reload(reloader, &config.reload, sources)?;
    crate::mcp::serve_stdio(handler, shutdown_signal()).await
}

/// Hot reload: SIGHUP always, configuration-file changes when `reload.watch`
/// is on. The returned watcher stops watching when dropped.
fn start_reload(
    reloader: crate::app::Reloader,
    settings: &crate::config::ReloadConfig,
    sources: ConfigSources,
) -> anyhow::Result<Option<reload::ConfigWatcher>> {
    reload::on_sighup(reloader.clone(), sources.clone())?;
    if !settings.watch {
        return Ok(None);
    }
    reload::watch(reloader, sources, settings.debounce).map(Some)
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
