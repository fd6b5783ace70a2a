//! What a default deployment offers before a team declares anything:
//! `teamgate_info` (who am I connected as, what is here) and a prompt that
//! explains the server. Documents are offered by the default docs source.

use std::{
    collections::HashMap,
    sync::{Arc, OnceLock, Weak},
};

use async_trait::async_trait;
use serde_json::json;

use crate::{
    protocol::{
        CallToolResponse, CallToolResult, GetPromptResponse, GetPromptResult, JsonObject, McpError,
        Prompt, Tool,
    },
    providers::wire,
    registry::{CallContext, Caller, Kind, PromptProvider, Registry, ToolProvider},
};

pub struct Builtin {
    server_name: String,
    /// The registry this provider is part of, set once it is built. Weak:
    /// the registry owns this provider, and a reload drops the old one.
    registry: OnceLock<Weak<Registry>>,
}

impl Builtin {
    pub fn new(server_name: &str) -> Self {
        Self {
            server_name: server_name.to_owned(),
            registry: OnceLock::new(),
        }
    }

    /// Lets `teamgate_info` count what the registry holding it offers.
    pub fn offered_by(&self, registry: &Arc<Registry>) {
        let _ = self.registry.set(Arc::downgrade(registry));
    }
}

/// How many tools, resources and prompts `caller` can list: the counts its
/// scopes let it see, as `tools/list` and the others would show.
fn visible_counts(registry: &Registry, caller: &Caller) -> serde_json::Value {
    let count = |kind: Kind, names: Vec<String>| {
        names
            .iter()
            .filter(|name| caller.may(&registry.required_scopes(kind, name)))
            .count()
    };
    let tools = registry
        .tools()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    let prompts = registry.prompts().iter().map(|p| p.name.clone()).collect();
    let resources = registry
        .resources()
        .into_iter()
        .map(|r| r.uri.clone())
        .collect();
    json!({
        "tools": count(Kind::Tool, tools),
        "resources": count(Kind::Resource, resources),
        "prompts": count(Kind::Prompt, prompts),
    })
}

#[async_trait]
impl ToolProvider for Builtin {
    fn tools(&self) -> Vec<Tool> {
        vec![wire(json!({
            "name": "teamgate_info",
            "title": "About this teamgate server",
            "description": "Tells who you are connected as and with which scopes, which protocol version is in use, and how many tools, resources and prompts this server offers you.",
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
        }))]
    }

    async fn call(
        &self,
        _name: &str,
        _arguments: JsonObject,
        cx: &CallContext,
    ) -> Result<CallToolResponse, McpError> {
        let offered = (self.registry.get().and_then(Weak::upgrade))
            .map(|registry| visible_counts(&registry, cx.caller()));
        let info = json!({
            "server": self.server_name,
            "version": env!("CARGO_PKG_VERSION"),
            "user": cx.caller().user,
            "scopes": cx.caller().scopes,
            "offered": offered,
            "protocolVersion": cx.protocol_version().map(|v| v.to_string()),
            "era": if cx.is_modern() { "2026-07-28 (stateless)" } else { "2025 (session)" },
        });
        let result: CallToolResult = wire(json!({
            "content": [{"type": "text", "text": serde_json::to_string_pretty(&info).unwrap_or_default()}],
            "structuredContent": info,
        }));
        Ok(result.into())
    }
}

#[async_trait]
impl PromptProvider for Builtin {
    fn prompts(&self) -> Vec<Prompt> {
        vec![wire(json!({
            "name": "teamgate_guide",
            "title": "How to use this teamgate server",
            "description": "Explains what this server offers and how to ask about a topic in its documents.",
            "arguments": [{"name": "topic", "description": "What you want to know about (optional)", "required": false}]
        }))]
    }

    async fn get(
        &self,
        _name: &str,
        arguments: HashMap<String, String>,
        _cx: &CallContext,
    ) -> Result<GetPromptResponse, McpError> {
        let topic = arguments
            .get("topic")
            .filter(|t| !t.trim().is_empty())
            .map(|t| format!(" Focus on: {t}."))
            .unwrap_or_default();
        let text = format!(
            "You are connected to {}, the team's MCP server. Call the teamgate_info tool to see who you are connected as, then search the team's documents (the search_docs tool, resources under docs://) before answering.{topic}",
            self.server_name
        );
        let result: GetPromptResult = wire(json!({
            "description": "Orientation for this teamgate server",
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}]
        }));
        Ok(result.into())
    }
}
