//! The wire: MCP's types (rmcp's, re-exported), the protocol revisions and
//! their eras, the JSON-RPC envelope as the guard reads it, and the HTTP
//! header names and facts every layer shares, and the ways a call asks its
//! client for input (`mrtr.rs`) or ends its own stream (`StreamCloser`).
//! With the engine and the upstream client, the one module that imports
//! rmcp; below every layer but configuration.

mod closer;
mod envelope;
mod methods;
mod mrtr;

pub use closer::StreamCloser;
pub use envelope::{Envelope, Params};
pub use methods::{REMOVED_IN_2026, STANDARD_METHODS};
pub use mrtr::{Asked, Mrtr, StateKeys};

use std::borrow::Cow;

use serde_json::Value;

#[allow(deprecated)]
// Logging is deprecated in 2026-07-28 but still served to 2025-era clients.
pub use rmcp::model::LoggingLevel;
pub use rmcp::{
    ErrorData as McpError, RoleServer,
    model::{
        CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, CreateTaskResult,
        DetailedTask, GetPromptResponse, GetPromptResult, GetTaskResult, Implementation,
        InputRequest, InputRequests, InputRequiredResult, InputResponses, JsonObject, Prompt,
        PromptArgument, PromptMessage, ProtocolVersion, ReadResourceResponse, ReadResourceResult,
        RequestId, RequestMetaObject, Resource, ResourceContents, ResourceTemplate,
        SKILLS_EXTENSION_ID, ServerCapabilities, ServerJsonRpcMessage, Skill, SkillFrontmatter,
        SkillResource, SkillResources, SubscriptionFilter, TaskPayload, Tool,
    },
    service::{Peer, RequestContext, SubscriptionContext},
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::{
            EventStore, EventStoreError, EventStream, ServerSseMessage,
        },
    },
};

/// Every JSON-RPC error code teamgate writes itself, in one table: JSON-RPC's
/// own, MCP's, and teamgate's (outside the range the spec reserves,
/// -32000..-32099). The HTTP layer's error bodies and the engine's refusals
/// carry the same ones; rmcp's `ErrorCode` wraps them.
pub mod codes {
    /// JSON-RPC: the body is not JSON.
    pub const PARSE_ERROR: i32 = -32700;
    /// JSON-RPC: not a valid request object.
    pub const INVALID_REQUEST: i32 = -32600;
    /// JSON-RPC: no such method (also a method the HTTP verb does not allow).
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// JSON-RPC: invalid params (also the tasks extension's unknown task).
    pub const INVALID_PARAMS: i32 = -32602;
    /// JSON-RPC: a bug of ours, or an answer lost on the way.
    pub const INTERNAL_ERROR: i32 = -32603;
    /// The official SDKs' de-facto "session not found" (2025 era only).
    pub const SESSION_NOT_FOUND: i32 = -32001;
    /// MCP: the request was cancelled (a task's run, here).
    pub const REQUEST_CANCELLED: i32 = -32800;
    /// A call shed for lack of room (the audit trail, capacity).
    pub const SERVER_BUSY: i32 = -31001;
    pub const UNAUTHORIZED: i32 = -31002;
    /// A refusal for lack of scope.
    pub const FORBIDDEN: i32 = -31003;
    /// A call over its quota.
    pub const RATE_LIMITED: i32 = -31004;
}

/// Protocol revisions teamgate serves, oldest first.
pub const SUPPORTED_VERSIONS: [ProtocolVersion; 4] = [
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// Which of the two ways of speaking MCP a request uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolEra {
    /// 2025-03-26 to 2025-11-25: sessions, server-to-client requests.
    Legacy,
    /// 2026-07-28 and later: stateless, MRTR instead of server requests.
    Modern,
}

impl ProtocolEra {
    /// The era of a protocol revision; `None` when none was named.
    pub fn of(version: &str) -> Option<Self> {
        match version {
            "" => None,
            v if v >= ProtocolVersion::V_2026_07_28.as_str() => Some(Self::Modern),
            _ => Some(Self::Legacy),
        }
    }

    /// The label spans and metrics carry (`unknown` for no revision).
    pub fn label(era: Option<Self>) -> &'static str {
        match era {
            None => "unknown",
            Some(Self::Modern) => "modern",
            Some(Self::Legacy) => "legacy",
        }
    }
}

/// The protocol version a request speaks: its `_meta` key (2026-07-28),
/// else its session's, as rmcp's `protocol_version()` answers. Read in place:
/// that method decodes a copy of the value each time, and a call asks
/// several times.
pub fn version_of(context: &RequestContext<RoleServer>) -> Option<Cow<'_, str>> {
    const KEY: &str = "io.modelcontextprotocol/protocolVersion";
    context
        .meta
        .get(KEY)
        .and_then(Value::as_str)
        .map(Cow::Borrowed)
        .or_else(|| {
            let info = context.peer.peer_info()?;
            Some(Cow::Owned(info.protocol_version.to_string()))
        })
}

/// True for 2026-07-28 and later: no sessions, MRTR instead of server requests.
pub fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    version_of(context).and_then(|v| ProtocolEra::of(&v)) == Some(ProtocolEra::Modern)
}

/// Who the client is, as the edge step (`http/edge.rs`) found it behind the
/// trusted proxies; in every request's extensions past that step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientInfo {
    /// The client's address (the proxy's client when the proxy is trusted).
    pub ip: std::net::IpAddr,
    /// `http` or `https` as the client used it.
    pub scheme: String,
    /// The host (and port) the client asked for.
    pub host: String,
}

/// The headers read on every MCP request, as names parsed once: a lookup by
/// `&str` validates and lower-cases the name on each call.
pub mod names {
    use axum::http::HeaderName;

    pub const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
    pub const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
    pub const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
    pub const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
    pub const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
}

/// A header's value as text for logs, metrics and the audit trail: empty
/// when absent or not text, and at most 200 characters, so a client cannot
/// bloat a record through its headers.
pub fn header_text(
    headers: &axum::http::HeaderMap,
    name: impl axum::http::header::AsHeaderName,
) -> String {
    value_text(headers.get(name))
}

/// Whether a `Content-Type` value names JSON (`application/json`, any
/// parameters).
pub fn is_json(value: Option<&axum::http::HeaderValue>) -> bool {
    value
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// [`header_text`] of a value already taken from its headers.
pub fn value_text(value: Option<&axum::http::HeaderValue>) -> String {
    let value = value.and_then(|v| v.to_str().ok());
    clip(value.unwrap_or_default(), 200).to_owned()
}

/// A tool result of one text item; `is_error` makes it a tool error the
/// model reads (not a protocol error).
/// The toolset `path` names, when it is `<mcp_path>/<name>` (a trailing
/// `/` allowed): what the engine admits to (`mcp/endpoint.rs`) and what
/// the endpoint's OAuth resource is (`auth/metadata.rs`). Issue 60.
pub fn toolset_in_path<'a>(mcp_path: &str, path: &'a str) -> Option<&'a str> {
    let rest = path
        .strip_prefix(mcp_path.trim_end_matches('/'))?
        .strip_prefix('/')?;
    Some(rest.trim_end_matches('/')).filter(|name| !name.is_empty())
}

pub fn text_result(text: impl Into<String>, is_error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(text.into())];
    if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// `text` cut to at most `max` characters, on a character boundary. Most
/// values are far shorter, and their byte length already proves it.
pub fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

#[cfg(test)]
mod path_tests {
    use super::toolset_in_path;

    #[test]
    fn a_toolset_is_what_follows_the_mcp_path() {
        assert_eq!(toolset_in_path("/mcp", "/mcp/oncall"), Some("oncall"));
        assert_eq!(toolset_in_path("/mcp/", "/mcp/oncall/"), Some("oncall"));
        assert_eq!(toolset_in_path("/mcp", "/mcp"), None);
        assert_eq!(toolset_in_path("/mcp", "/mcp/"), None);
        assert_eq!(toolset_in_path("/mcp", "/mcpx/oncall"), None);
    }
}
