//! The one place rmcp is imported: the protocol engine and its wire types.
//!
//! Every other module names MCP types through `crate::mcp::...`, so an rmcp
//! upgrade touches this module and the handler, not the whole crate.

mod handler;
mod listing;
mod stamp;

pub use handler::{McpHandler, Shared};

#[allow(deprecated)] // Logging is deprecated in 2026-07-28 but still served to 2025-era clients.
pub use rmcp::model::LoggingLevel;
pub use rmcp::{
    ErrorData as McpError, RoleServer,
    model::{
        CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, GetPromptResponse,
        GetPromptResult, Implementation, InputRequest, InputRequiredResult, JsonObject, Prompt,
        PromptArgument, PromptMessage, ProtocolVersion, ReadResourceResponse, ReadResourceResult, RequestId, RequestMetaObject, Resource,
        ResourceContents, ResourceTemplate, ServerCapabilities, SubscriptionFilter, Tool,
    },
    service::{Peer, RequestContext, SubscriptionContext},
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::local::LocalSessionManager,
    },
};

/// Protocol revisions teamgate serves, oldest first.
pub const SUPPORTED_VERSIONS: [ProtocolVersion; 4] = [
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];
