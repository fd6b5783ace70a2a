//! The engine: rmcp's `ServerHandler` (`handler.rs`), sessions, and the MCP
//! policy decided on rmcp's typed requests. Its wire types come from
//! `crate::protocol`, which every layer below may import.

mod access;
mod admission;
mod approvals;
mod calls;
mod departure;
mod endpoint;
mod engine;
mod error;
mod handler;
mod known;
mod listing;
mod refusal;
mod reply;
mod resident;
mod resume;
mod serving;
mod session_rows;
mod sessions;
mod shared;
mod stamp;
mod streams;
mod subscriptions;
mod tally;
mod tasks;

// The wire types, for this module's files (`super::McpError`, ...).
#[allow(unused_imports)]
use crate::protocol::*;

pub use admission::Admission;
pub use approvals::ApprovalDesk;
pub use calls::AuditSink;
pub use endpoint::Endpoints;
pub use engine::Engine;
pub use error::EngineError;
pub use handler::{McpHandler, retry_tasks};
pub use reply::Gate;
pub use session_rows::StoredSessions;
pub use sessions::{SessionSettings, Sessions};
pub use shared::{Shared, ToolQuota};
pub use streams::{StreamCapReached, StreamCaps};
pub use tasks::Tasks;

/// Serves `handler` over stdin/stdout until the client closes stdin or
/// `shutdown` resolves.
pub async fn serve_stdio(
    handler: McpHandler,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    use anyhow::Context;
    let service = rmcp::ServiceExt::serve(handler, rmcp::transport::stdio())
        .await
        .context("stdio handshake failed")?;
    tokio::select! {
        result = service.waiting() => { result.context("stdio session failed")?; }
        () = shutdown => {}
    }
    Ok(())
}
