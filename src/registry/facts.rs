//! What a request to the MCP endpoint is, made once by the guard (the last
//! transport step, `http/guard.rs`) from the caller the authentication step
//! found and the envelope the guard read, and read by everything after it:
//! the request's span and measurements (`http/observe.rs`), the engine
//! and its handler (`mcp/`), the audit record. Describes; never decides:
//! what a request may do is decided on rmcp's typed request.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use http::{Method, request::Parts};
use serde::Deserialize;
use serde_json::{Value, value::RawValue};

use super::Caller;
use crate::protocol::{Envelope, ProtocolEra, clip, header_text, names};

/// One request's facts, in its extensions as `Arc<RequestFacts>`.
#[derive(Debug, Clone)]
pub struct RequestFacts {
    /// Who is calling; on a toolset's endpoint, the engine's copy names it
    /// (`Caller::at_endpoint`).
    pub caller: Caller,
    /// Decided once, from `MCP-Protocol-Version`.
    pub era: ProtocolEra,
    /// A POST: a JSON-RPC message (else a GET stream or a DELETE).
    pub post: bool,
    /// The JSON-RPC id, for error replies.
    pub id: Option<Value>,
    /// The JSON-RPC method (at most 64 characters), `response` for a
    /// POSTed response, else the HTTP method.
    pub method: String,
    /// The tool or prompt name, or the resource URI (at most 200).
    pub target: String,
    /// `Mcp-Session-Id`, empty without one.
    pub session: String,
    /// The protocol version the message names (`_meta`, `initialize`'s
    /// params) or its header, at most 32 characters.
    pub version: String,
    /// The client's own name, at most 64 characters.
    pub client: String,
    /// The caller's W3C `traceparent` (`_meta` first, then the header).
    pub traceparent: Option<String>,
    /// The request's trace id, set once by the step that opens its span.
    pub trace_id: Arc<OnceLock<String>>,
    /// When the guard began reading it: a tool's own time limit counts
    /// from here, as the deadline does.
    pub received: Instant,
    /// By when a POSTed message must be answered (the guard's budget,
    /// `limits.tool_timeout`, from `received`); `None` for a stream, a
    /// DELETE, or a request no guard saw (stdio, the engine on its own).
    pub deadline: Option<Instant>,
}

/// The `_meta` keys the facts read. Each is read on its own, so an odd
/// value in one hides none of the others; the guard checked that `_meta`
/// is JSON, and rmcp, not this, decides whether it is valid.
#[derive(Deserialize, Default)]
struct MetaKeys<'a> {
    #[serde(borrow, rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<&'a RawValue>,
    #[serde(borrow, rename = "io.modelcontextprotocol/clientInfo")]
    client_info: Option<&'a RawValue>,
    #[serde(borrow)]
    traceparent: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Named {
    name: Option<String>,
}

/// A JSON string's text; `None` for anything else.
fn string(raw: Option<&RawValue>) -> Option<String> {
    raw.and_then(|raw| serde_json::from_str(raw.get()).ok())
}

impl RequestFacts {
    /// The facts of the request in `parts`, whose POSTed message the guard
    /// read as `message` (the default envelope for other requests).
    pub fn new(parts: &Parts, message: &Envelope, caller: Caller, era: ProtocolEra) -> Self {
        let params = message.params.as_ref();
        let meta: MetaKeys = params
            .and_then(|p| p.meta.as_ref())
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default();
        let client_info = params
            .and_then(|p| p.client_info.as_deref())
            .or(meta.client_info);
        let mut version = header_text(&parts.headers, names::MCP_PROTOCOL_VERSION);
        if let Some(mut v) = string(meta.protocol_version)
            .or_else(|| params.and_then(|p| p.protocol_version.clone()))
        {
            v.truncate(clip(&v, 32).len());
            version = v;
        }
        let method = match (&parts.method, &message.method) {
            (&Method::POST, Some(method)) => clip(method, 64).to_owned(),
            (&Method::POST, None) => "response".to_owned(),
            (method, _) => method.as_str().to_owned(),
        };
        let client = client_info
            .and_then(|raw| serde_json::from_str::<Named>(raw.get()).ok())
            .and_then(|named| named.name)
            .unwrap_or_default();
        let traceparent = string(meta.traceparent).or_else(|| {
            Some(header_text(&parts.headers, names::TRACEPARENT)).filter(|t| !t.is_empty())
        });
        let target = params
            .and_then(|p| p.name.as_deref().or(p.uri.as_deref()))
            .unwrap_or_default();
        Self {
            caller,
            era,
            post: parts.method == Method::POST,
            id: message.id.clone(),
            method,
            target: clip(target, 200).to_owned(),
            session: header_text(&parts.headers, names::MCP_SESSION_ID),
            version,
            client: clip(&client, 64).to_owned(),
            traceparent,
            trace_id: Arc::default(),
            received: Instant::now(),
            deadline: None,
        }
    }

    /// The same request, received at `received` and to be answered within
    /// `budget` of it.
    pub fn with_deadline(self, received: Instant, budget: Duration) -> Self {
        Self {
            received,
            deadline: Some(received + budget),
            ..self
        }
    }

    /// By when a call the request makes must end: the deadline, or, for a
    /// tool with a time limit of its own, that long after the request came
    /// in. The operator's word for one tool replaces the server's budget,
    /// longer or shorter (a test command may run for ten minutes; a confirm
    /// waits for a person); both count from the same instant, so time spent
    /// before the call (a slow upload, the checks) is spent from either.
    pub fn deadline_for(&self, own: Option<Duration>) -> Option<Instant> {
        match own {
            Some(own) => Some(self.received + own),
            None => self.deadline,
        }
    }

    /// The facts of the request in `parts`, if a guard made them.
    pub fn of(parts: &Parts) -> Option<&Arc<Self>> {
        parts.extensions.get::<Arc<Self>>()
    }

    /// The same request, its caller replaced (the engine's, on its endpoint).
    pub fn with_caller(&self, caller: Caller) -> Self {
        Self {
            caller,
            ..self.clone()
        }
    }

    /// Whether the client names itself in this request: a 2025-era client
    /// once per session, in `initialize`; a 2026-07-28 client on every one.
    pub fn names_client(&self) -> bool {
        self.era == ProtocolEra::Modern || self.method == "initialize"
    }

    /// Whether the request calls a tool (the tool-call metrics count it).
    pub fn calls_tool(&self) -> bool {
        self.method == "tools/call"
    }

    /// The request's trace id, once its span is open.
    pub fn trace_id(&self) -> Option<&str> {
        self.trace_id.get().map(String::as_str)
    }
}
