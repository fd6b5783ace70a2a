//! teamgate: a remote MCP server a team deploys once.
//!
//! Reading order: `config` (what the operator asked for), `app` (how it is
//! wired), `http` (the HTTP surface around rmcp), `mcp` (the protocol
//! handler over rmcp), `registry` (what is offered), `providers` (the
//! concrete tools, resources and prompts). ARCHITECTURE.md has
//! the code map and the rules each module keeps.

pub mod app;
pub mod audit;
pub mod auth;
pub mod body;
pub mod cli;
pub mod cli_admin;
pub mod cli_check;
pub mod cli_table;
pub mod cli_upstreams;
pub mod config;
pub mod fswatch;
#[doc(hidden)]
pub mod fuzzing;
pub mod gate;
pub mod http;
pub mod mcp;
pub mod outbound;
pub mod portal;
pub mod protocol;
pub mod providers;
pub mod registry;
pub mod sandbox;
pub mod store;
pub mod telemetry;
pub mod upstream;

pub use app::App;
pub use config::Config;
