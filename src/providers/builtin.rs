//! What a default deployment offers before a team declares anything:
//! `teamgate_info` (who am I connected as, what is here) and a prompt that
//! explains the server. Documents are offered by the default docs source.

use std::collections::HashMap;

use async_trait::async_trait;
use serde_json::json;

use crate::{
    mcp::{
        CallToolResponse, CallToolResult, GetPromptResponse, GetPromptResult, JsonObject, McpError,
        Prompt, Tool,
    },
    providers::wire,
    registry::{CallContext, PromptProvider, ToolProvider},
};

pub struct Builtin {
    server_name: String,
}

impl Builtin {
    pub fn new(server_name: &str) -> Self {
        Self {
            server_name: server_name.to_owned(),
        }
    }
}

#[async_trait]
impl ToolProvider for Builtin {
    fn tools(&self) -> Vec<Tool> {
        vec![wire(json!({
            "name": "teamgate_info",
            "title": "About this teamgate server",
            "description": "Tells who you are connected as, which protocol version is in use, and how many tools, resources and prompts this server offers.",
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
        let info = json!({
            "server": self.server_name,
            "version": env!("CARGO_PKG_VERSION"),
            "user": cx.caller().user,
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
