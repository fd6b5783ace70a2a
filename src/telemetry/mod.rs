//! Log output set-up. Logs always go to stderr: stdout belongs to command
//! output (and to the protocol itself under `teamgate stdio`).

use std::io::IsTerminal;

use anyhow::Context;
use tracing_subscriber::{EnvFilter, fmt, prelude::*};

use crate::config::{LogConfig, LogFormat};

pub fn init(config: &LogConfig) -> anyhow::Result<()> {
    init_stderr(config)
}

pub fn init_stderr(config: &LogConfig) -> anyhow::Result<()> {
    // RUST_LOG, when set, wins: the usual escape hatch while debugging.
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&config.level))
        .context("log.level")?;
    let json = match config.format {
        LogFormat::Json => true,
        LogFormat::Pretty => false,
        LogFormat::Auto => !std::io::stderr().is_terminal(),
    };
    let registry = tracing_subscriber::registry().with(filter);
    let result = if json {
        registry
            .with(fmt::layer().json().with_writer(std::io::stderr))
            .try_init()
    } else {
        registry
            .with(fmt::layer().with_writer(std::io::stderr))
            .try_init()
    };
    // A second init (tests building several apps) keeps the first subscriber.
    let _ = result;
    Ok(())
}
