//! The one place rmcp is imported: the protocol engine and its wire types.
//!
//! Every other module names MCP types through `crate::mcp::...`, so an rmcp
//! upgrade touches this module and the handler, not the whole crate.

mod access;
mod calls;
mod handler;
mod known;
mod listen;
mod listing;
mod methods;
mod mrtr;
mod resume;
mod sessions;
mod shared;
mod stamp;
mod subscriptions;

pub use calls::{AuditSink, is_modern};
pub use handler::McpHandler;
pub use listen::Engine;
pub use methods::STANDARD_METHODS;
pub use mrtr::{Asked, Mrtr, StateKeys};
pub use resume::{StreamCloser, StreamEvents};
pub use sessions::{SessionSettings, Sessions, StoredSessions};
pub use shared::Shared;

#[allow(deprecated)]
// Logging is deprecated in 2026-07-28 but still served to 2025-era clients.
pub use rmcp::model::LoggingLevel;
pub use rmcp::{
    ErrorData as McpError, RoleServer,
    model::{
        CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, GetPromptResponse,
        GetPromptResult, Implementation, InputRequest, InputRequests, InputRequiredResult,
        InputResponses, JsonObject, Prompt, PromptArgument, PromptMessage, ProtocolVersion,
        ReadResourceResponse, ReadResourceResult, RequestId, RequestMetaObject, Resource,
        ResourceContents, ResourceTemplate, ServerCapabilities, SubscriptionFilter, Tool,
    },
    service::{Peer, RequestContext, SubscriptionContext},
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::{
            EventStore, EventStoreError, EventStream, ServerSseMessage,
        },
    },
};

/// Protocol revisions teamgate serves, oldest first.
pub const SUPPORTED_VERSIONS: [ProtocolVersion; 4] = [
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

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
