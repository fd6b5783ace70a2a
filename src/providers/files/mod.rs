//! `[[sources.files]]`: `read_file` and `search_files` under one root.
//! Paths are resolved against the canonical root and canonicalised again,
//! so `..`, absolute paths and symlinks that leave the root are refused;
//! only allowed extensions under the size cap are read or searched.

mod search;

use std::{
    io::{Read, Seek, SeekFrom},
    path::{Component, Path, PathBuf},
    sync::Arc,
};

use anyhow::Context;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::declared::{structured_result, text_result};
use crate::{
    config::FilesSourceConfig,
    mcp::{CallToolResponse, CallToolResult, JsonObject, McpError, Tool},
    providers::wire,
    registry::{CallContext, ToolProvider},
};

pub struct FilesSource {
    config: FilesSourceConfig,
    /// The root, canonical: every resolved path must stay under it.
    root: PathBuf,
}

impl FilesSource {
    pub fn new(index: usize, config: FilesSourceConfig) -> anyhow::Result<Arc<Self>> {
        let root = std::fs::canonicalize(&config.root).with_context(|| {
            format!(
                "sources.files[{index}].root: {} is not a folder",
                config.root
            )
        })?;
        anyhow::ensure!(
            root.is_dir(),
            "sources.files[{index}].root: {} is not a folder",
            config.root
        );
        Ok(Arc::new(Self { config, root }))
    }

    fn extension_allowed(&self, path: &Path) -> bool {
        path.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| self.config.extensions.iter().any(|x| x == e))
    }

    /// The file `relative` names under the root, or why it cannot be read.
    fn resolve(&self, relative: &str) -> Result<PathBuf, String> {
        let requested = Path::new(relative);
        let plain = !relative.is_empty()
            && !relative.contains('\0')
            && requested
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if !plain {
            return Err(format!(
                "`{relative}` is not a path inside `{}`: use a relative path without `..`",
                self.config.name
            ));
        }
        let resolved = std::fs::canonicalize(self.root.join(requested))
            .map_err(|_| format!("`{relative}` does not exist in `{}`", self.config.name))?;
        if !resolved.starts_with(&self.root) {
            return Err(format!(
                "`{relative}` leads outside `{}` (through a link) and is refused",
                self.config.name
            ));
        }
        if !resolved.is_file() {
            return Err(format!("`{relative}` is not a file"));
        }
        if !self.extension_allowed(requested) || !self.extension_allowed(&resolved) {
            return Err(format!(
                "`{relative}` has an extension this source does not offer (allowed: {})",
                self.config.extensions.join(", ")
            ));
        }
        Ok(resolved)
    }

    fn read(&self, arguments: &JsonObject) -> Result<CallToolResult, String> {
        let path = arguments
            .get("path")
            .and_then(Value::as_str)
            .ok_or("`path` is required")?;
        let offset = arguments.get("offset").and_then(Value::as_u64).unwrap_or(0);
        let max = self.config.max_read_bytes as u64;
        let length = arguments
            .get("length")
            .and_then(Value::as_u64)
            .unwrap_or(max)
            .min(max);
        let file = self.resolve(path)?;
        let size = std::fs::metadata(&file).map_err(|e| e.to_string())?.len();
        if size > self.config.max_file_bytes {
            return Err(format!(
                "`{path}` is {size} bytes, over this source's limit of {}",
                self.config.max_file_bytes
            ));
        }
        let mut handle = std::fs::File::open(&file).map_err(|e| e.to_string())?;
        handle
            .seek(SeekFrom::Start(offset.min(size)))
            .map_err(|e| e.to_string())?;
        let mut bytes = Vec::new();
        handle
            .take(length)
            .read_to_end(&mut bytes)
            .map_err(|e| e.to_string())?;
        let end = offset.min(size) + bytes.len() as u64;
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if end < size {
            text.push_str(&format!(
                "\n[… {} more bytes: call read_file again with offset = {end}]",
                size - end
            ));
        }
        Ok(text_result(text, false))
    }
}

#[async_trait]
impl ToolProvider for FilesSource {
    fn tools(&self) -> Vec<Tool> {
        let c = &self.config;
        let hints = json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false});
        vec![
            wire(json!({
                "name": c.read_tool,
                "title": format!("Read a file of {}", c.name),
                "description": format!("Reads a text file under `{}` (extensions: {}). Paths are relative to its root; large files are read in parts with offset and length.", c.name, c.extensions.join(", ")),
                "inputSchema": {"type": "object", "properties": {
                    "path": {"type": "string", "description": "Path relative to the root, e.g. src/main.rs"},
                    "offset": {"type": "integer", "minimum": 0, "description": "First byte to read"},
                    "length": {"type": "integer", "minimum": 1, "maximum": c.max_read_bytes, "description": "Bytes to read"}
                }, "required": ["path"], "additionalProperties": false},
                "annotations": hints,
            })),
            wire(json!({
                "name": c.search_tool,
                "title": format!("Search the files of {}", c.name),
                "description": format!("Searches the files under `{}` for a regular expression (.gitignore respected). Returns path, line number and line of each match.", c.name),
                "inputSchema": {"type": "object", "properties": {
                    "pattern": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "Regular expression (Rust syntax; smart case)"},
                    "glob": {"type": "string", "description": "Only files matching this glob, e.g. src/**/*.rs"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": c.max_results}
                }, "required": ["pattern"], "additionalProperties": false},
                "outputSchema": {"type": "object", "properties": {
                    "matches": {"type": "array", "items": {"type": "object", "properties": {
                        "path": {"type": "string"}, "line": {"type": "integer"}, "text": {"type": "string"}}}},
                    "truncated": {"type": "boolean"}}, "required": ["matches", "truncated"]},
                "annotations": hints,
            })),
        ]
    }

    fn required_scopes(&self, _name: &str) -> Option<Vec<String>> {
        super::declared_scopes(&self.config.scopes)
    }

    async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
        _cx: &CallContext,
    ) -> Result<CallToolResponse, McpError> {
        let result = if name == self.config.read_tool {
            let (root, config) = (self.root.clone(), self.config.clone());
            tokio::task::spawn_blocking(move || Self { config, root }.read(&arguments))
                .await
                .unwrap_or_else(|_| Err("the read failed".into()))
        } else if name == self.config.search_tool {
            let request = search::Request::from_arguments(&arguments, self.config.max_results);
            let (root, config) = (self.root.clone(), self.config.clone());
            match request {
                Ok(request) => {
                    tokio::task::spawn_blocking(move || search::run(&root, &config, &request))
                        .await
                        .unwrap_or_else(|_| Err("the search failed".into()))
                        .map(|found| structured_result(found, false))
                }
                Err(message) => Err(message),
            }
        } else {
            return Err(McpError::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        };
        Ok(result
            .unwrap_or_else(|message| text_result(message, true))
            .into())
    }
}
