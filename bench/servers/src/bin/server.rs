//! The two comparison servers of `bench/run`, each serving the benchmark's
//! echo tool on `POST /mcp`:
//!
//! - `bench-server rmcp ADDR`: rmcp's `StreamableHttpService` in axum with no
//!   other layer, configured like teamgate's engine (legacy sessions on, JSON
//!   replies for stateless requests). The floor teamgate builds on.
//! - `bench-server axum ADDR`: one axum handler that parses the JSON-RPC body
//!   and writes the same result. No MCP engine at all: the ceiling.
//!
//! Both set TCP_NODELAY on every accepted socket: without it, replies written
//! in several pieces (rmcp's SSE events) wait ~40 ms for delayed ACKs.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use axum::{
    Router,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::post,
    serve::ListenerExt,
};
use bytes::Bytes;
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, InitializeResult, ListToolsResult,
        PaginatedRequestParams, SubscriptionFilter,
    },
    service::RequestContext,
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::local::LocalSessionManager,
    },
};
use serde_json::{Value, json};

/// The benchmark's tool: teamgate's conformance fixture of the same name,
/// which answers every call with this fixed text.
const TOOL: &str = "test_simple_text";
const TEXT: &str = "This is a simple text response for testing.";

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(kind), Some(addr)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: bench-server rmcp|axum 127.0.0.1:PORT");
        std::process::exit(2);
    };
    let addr: SocketAddr = addr.parse().expect("a socket address");
    assert!(
        addr.ip().is_loopback(),
        "the benchmark serves loopback only"
    );
    let app = match kind.as_str() {
        "rmcp" => rmcp_router(),
        "axum" => bare_router(),
        other => panic!("unknown server kind {other}"),
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .expect("bind")
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    eprintln!("bench-server {kind} listening on http://{addr}/mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .expect("serve");
}

/// Builds an rmcp wire type from its JSON form.
fn wire<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("valid wire JSON")
}

#[derive(Clone)]
struct Echo {
    info: Arc<InitializeResult>,
    tools: Arc<ListToolsResult>,
    result: Arc<CallToolResult>,
}

impl Echo {
    fn new() -> Self {
        let info: InitializeResult = wire(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "raw-rmcp", "version": "0"},
        }));
        Self {
            info: Arc::new(info),
            tools: Arc::new(wire(json!({"tools": [{
                "name": TOOL,
                "description": "Returns a simple text response",
                "inputSchema": {"type": "object", "properties": {}},
            }]}))),
            result: Arc::new(wire(json!({"content": [{"type": "text", "text": TEXT}]}))),
        }
    }
}

impl ServerHandler for Echo {
    fn get_info(&self) -> InitializeResult {
        (*self.info).clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok((*self.tools).clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {}", request.name),
                None,
            ));
        }
        Ok((*self.result).clone().into())
    }

    /// Accepts `subscriptions/listen`; the default `listen` holds the stream
    /// open until the client goes.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }
}

fn rmcp_router() -> Router {
    let echo = Echo::new();
    let config = StreamableHttpServerConfig::default().with_json_response(true);
    let service = StreamableHttpService::new(
        move || Ok(echo.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new().route_service("/mcp", service)
}

fn bare_router() -> Router {
    let sessions = Arc::new(AtomicU64::new(0));
    Router::new().route(
        "/mcp",
        post(move |body: Bytes| {
            let sessions = sessions.clone();
            async move { bare(&body, &sessions) }
        }),
    )
}

/// Parses the JSON-RPC request and answers `initialize` and `tools/call` with
/// the same results the MCP servers give; notifications get 202.
fn bare(body: &[u8], sessions: &AtomicU64) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        let error = json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32700, "message": "Parse error"}});
        return (StatusCode::BAD_REQUEST, json_body(&error)).into_response();
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    let mut session = None;
    let reply = match method {
        "initialize" => {
            session = Some(sessions.fetch_add(1, Ordering::Relaxed));
            json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "bare-axum", "version": "0"}}})
        }
        "tools/call" if request["params"]["name"] == TOOL => {
            json!({"jsonrpc": "2.0", "id": id, "result": {
                "content": [{"type": "text", "text": TEXT}]}})
        }
        m if m.starts_with("notifications/") => return StatusCode::ACCEPTED.into_response(),
        _ => json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": "Method not found"}}),
    };
    let mut response = json_body(&reply).into_response();
    if let Some(n) = session {
        let value = HeaderValue::from_str(&format!("bare-{n}")).expect("ascii");
        response.headers_mut().insert("mcp-session-id", value);
    }
    response
}

fn json_body(value: &Value) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_vec(value).expect("serializable"),
    )
}
