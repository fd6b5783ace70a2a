//! `[[sources.files]]`: `read_file` and `search_files` under one root.
//! `..` and absolute paths are refused as written; every file is opened
//! beneath the root's descriptor with links refused (`beneath.rs`), and is
//! read only when the search walker would also show it (not hidden, not
//! ignored, unless the source includes them), has an allowed extension and
//! is under the size cap.

mod beneath;
mod search;

use std::{
    io::{Read, Seek, SeekFrom},
    os::fd::OwnedFd,
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

#[derive(Clone)]
pub struct FilesSource {
    config: FilesSourceConfig,
    /// The root, canonical: what the search walker walks.
    root: PathBuf,
    /// The root held open: every file is opened beneath it.
    root_fd: Arc<OwnedFd>,
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
        let root_fd = beneath::open_root(&root).with_context(|| {
            format!(
                "sources.files[{index}].root: {} cannot be opened",
                config.root
            )
        })?;
        Ok(Arc::new(Self {
            config,
            root,
            root_fd: Arc::new(root_fd),
        }))
    }

    fn extension_allowed(&self, path: &Path) -> bool {
        path.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| self.config.extensions.iter().any(|x| x == e))
    }

    /// The file `relative` names under the root, opened, with its size; or
    /// why it cannot be read.
    fn open(&self, relative: &str) -> Result<(std::fs::File, u64), String> {
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
        if !self.extension_allowed(requested) {
            return Err(format!(
                "`{relative}` has an extension this source does not offer (allowed: {})",
                self.config.extensions.join(", ")
            ));
        }
        let name = &self.config.name;
        let opened = beneath::open(&self.root_fd, requested).map_err(|why| match why {
            beneath::Refused::Link => format!(
                "`{relative}` is or passes through a link; links are not followed, so nothing outside `{name}` is reached: refused"
            ),
            beneath::Refused::Missing => format!("`{relative}` does not exist in `{name}`"),
            beneath::Refused::NotAFile => format!("`{relative}` is not a file"),
            beneath::Refused::Io(e) => format!("`{relative}` cannot be read: {e}"),
        })?;
        if !search::visible(&self.root, &self.config, requested) {
            return Err(format!(
                "`{relative}` is hidden or ignored (.gitignore), and `{name}` does not offer such files"
            ));
        }
        Ok(opened)
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
        let (mut handle, size) = self.open(path)?;
        if size > self.config.max_file_bytes {
            return Err(format!(
                "`{path}` is {size} bytes, over this source's limit of {}",
                self.config.max_file_bytes
            ));
        }
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
                "description": format!("Searches the files under `{}` for a regular expression (hidden and .gitignore'd files skipped unless the source includes them). Returns path, line number and line of each match.", c.name),
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
            let source = self.clone();
            tokio::task::spawn_blocking(move || source.read(&arguments))
                .await
                .unwrap_or_else(|_| Err("the read failed".into()))
        } else if name == self.config.search_tool {
            let request = search::Request::from_arguments(&arguments, self.config.max_results);
            let source = self.clone();
            match request {
                Ok(request) => tokio::task::spawn_blocking(move || {
                    search::run(&source.root, &source.root_fd, &source.config, &request)
                })
                .await
                .unwrap_or_else(|_| Err("the search failed".into()))
                .map(|found| structured_result(found, false)),
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
