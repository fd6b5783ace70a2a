//! What a default deployment offers before a team declares anything:
//! `teamgate_info` (who am I connected as, what is here), a prompt that
//! explains the server, and the configured documents as resources.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

use async_trait::async_trait;
use serde_json::json;

use crate::{
    mcp::{
        CallToolResponse, CallToolResult, GetPromptResponse, GetPromptResult, JsonObject, McpError,
        Prompt, ReadResourceResponse, ReadResourceResult, Resource, Tool,
    },
    providers::wire,
    registry::{CallContext, PromptProvider, ResourceProvider, ToolProvider},
};

/// Largest document offered; bigger files are skipped at start-up.
const MAX_DOCUMENT_BYTES: u64 = 1024 * 1024;
/// Most documents offered, so a mistaken path cannot list a whole disk.
const MAX_DOCUMENTS: usize = 500;
const URI_PREFIX: &str = "teamgate://docs/";

pub struct Builtin {
    server_name: String,
    documents: Vec<Document>,
}

struct Document {
    uri: String,
    path: PathBuf,
    size: u64,
}

impl Builtin {
    /// Finds the documents once; their content is read on each `resources/read`
    /// so edits show without a restart.
    pub fn new(server_name: &str, paths: &[String]) -> Self {
        let mut documents = Vec::new();
        for root in paths {
            collect(Path::new(root), Path::new(root), &mut documents);
        }
        documents.sort_by(|a, b| a.uri.cmp(&b.uri));
        documents.dedup_by(|a, b| a.uri == b.uri);
        documents.truncate(MAX_DOCUMENTS);
        Self {
            server_name: server_name.to_owned(),
            documents,
        }
    }
}

fn collect(root: &Path, path: &Path, out: &mut Vec<Document>) {
    if out.len() >= MAX_DOCUMENTS {
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.is_dir() {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for entry in entries {
            collect(root, &entry, out);
        }
        return;
    }
    let is_text = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("md" | "markdown" | "txt")
    );
    if meta.is_file() && is_text && meta.len() <= MAX_DOCUMENT_BYTES {
        // A file named directly is known by its name; a file in a folder by
        // the folder and its path inside it.
        let name = if root == path {
            path.file_name().map(PathBuf::from).unwrap_or_default()
        } else {
            let base = root.file_name().map(PathBuf::from).unwrap_or_default();
            base.join(path.strip_prefix(root).unwrap_or(path))
        };
        out.push(Document {
            uri: format!("{URI_PREFIX}{}", name.to_string_lossy().replace('\\', "/")),
            path: path.to_owned(),
            size: meta.len(),
        });
    }
}

fn mime(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("md" | "markdown") => "text/markdown",
        _ => "text/plain",
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
            "documents": self.documents.len(),
        });
        let result: CallToolResult = wire(json!({
            "content": [{"type": "text", "text": serde_json::to_string_pretty(&info).unwrap_or_default()}],
            "structuredContent": info,
        }));
        Ok(result.into())
    }
}

#[async_trait]
impl ResourceProvider for Builtin {
    fn resources(&self) -> Vec<Resource> {
        self.documents
            .iter()
            .map(|d| {
                wire(json!({
                    "uri": d.uri,
                    "name": d.uri.trim_start_matches(URI_PREFIX),
                    "mimeType": mime(&d.path),
                    "size": d.size,
                }))
            })
            .collect()
    }

    fn owns(&self, uri: &str) -> bool {
        self.documents.iter().any(|d| d.uri == uri)
    }

    async fn read(&self, uri: &str, _cx: &CallContext) -> Result<ReadResourceResponse, McpError> {
        let not_found =
            || McpError::resource_not_found("Resource not found", Some(json!({"uri": uri})));
        let document = self
            .documents
            .iter()
            .find(|d| d.uri == uri)
            .ok_or_else(not_found)?;
        let text = tokio::fs::read_to_string(&document.path)
            .await
            .map_err(|_| not_found())?;
        let result: ReadResourceResult = wire(json!({
            "contents": [{"uri": uri, "mimeType": mime(&document.path), "text": text}]
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
            "You are connected to {}, the team's MCP server. Call the teamgate_info tool to see who you are connected as, then read the documents it offers (resources under {URI_PREFIX}) before answering.{topic}",
            self.server_name
        );
        let result: GetPromptResult = wire(json!({
            "description": "Orientation for this teamgate server",
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}]
        }));
        Ok(result.into())
    }

    fn complete(&self, _prompt: &str, argument: &str, prefix: &str) -> Vec<String> {
        if argument != "topic" {
            return Vec::new();
        }
        self.documents
            .iter()
            .map(|d| d.uri.trim_start_matches(URI_PREFIX).to_owned())
            .filter(|name| name.starts_with(prefix))
            .collect()
    }
}
