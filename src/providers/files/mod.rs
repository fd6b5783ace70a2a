//! `[[sources.files]]`: `read_file`, `search_files` and `list_files` under
//! one root.
//! `..` and absolute paths are refused as written; every file is opened
//! beneath the root's descriptor with links refused (`beneath.rs`), and is
//! read only when the search walker would also show it (not hidden, not
//! ignored, unless the source includes them), has an allowed extension and
//! is under the size cap.

mod apps;
pub(crate) mod beneath;
mod list;
mod read;
mod search;
mod skill_tree;
mod skills;

pub use apps::AppPagesOf;
pub use skills::SkillsOf;

use std::{
    os::fd::OwnedFd,
    path::{Component, Path, PathBuf},
    sync::Arc,
};

use anyhow::Context;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::{
    ProviderError,
    declared::{structured_result, text_result},
};
use crate::{
    config::FilesSourceConfig,
    protocol::{CallToolResponse, JsonObject, McpError, Tool},
    providers::wire,
    registry::{CallContext, ToolProvider},
};

#[derive(Clone)]
pub struct FilesSource {
    config: FilesSourceConfig,
    /// The root, canonical: what the search walker walks.
    root: PathBuf,
    /// The root held open: every file is opened beneath it.
    pub(crate) root_fd: Arc<OwnedFd>,
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

    /// `relative` as a path under the root, if it is written as one.
    pub(crate) fn plain<'a>(&self, relative: &'a str) -> Result<&'a Path, ProviderError> {
        let requested = Path::new(relative);
        let plain = !relative.contains('\0')
            && requested
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if !plain {
            return Err(ProviderError::NotInside {
                path: relative.to_owned(),
                source_name: self.config.name.clone(),
            });
        }
        Ok(requested)
    }

    /// Why `relative` could not be opened, in words for the model.
    fn refusal(&self, relative: &str, why: beneath::Refused) -> ProviderError {
        let (path, source_name) = (relative.to_owned(), self.config.name.clone());
        match why {
            beneath::Refused::Link => ProviderError::Link { path, source_name },
            beneath::Refused::Missing => ProviderError::Missing { path, source_name },
            beneath::Refused::NotAFile => ProviderError::NotAFile(path),
            beneath::Refused::Io(error) => ProviderError::Unreadable { path, error },
        }
    }

    fn hidden(&self, relative: &str) -> ProviderError {
        ProviderError::Hidden {
            path: relative.to_owned(),
            source_name: self.config.name.clone(),
        }
    }

    /// The file `relative` names under the root, opened, with its size; or
    /// why it cannot be read.
    pub(crate) fn open(&self, relative: &str) -> Result<(std::fs::File, u64), ProviderError> {
        let requested = self.plain(relative)?;
        if relative.is_empty() {
            return Err(ProviderError::Argument("`path` names no file"));
        }
        if !extension_allowed(&self.config, requested) {
            return Err(ProviderError::Extension {
                path: relative.to_owned(),
                allowed: self.config.extensions.join(", "),
            });
        }
        let opened =
            beneath::open(&self.root_fd, requested).map_err(|why| self.refusal(relative, why))?;
        if !search::visible(&self.root, &self.config, requested) {
            return Err(self.hidden(relative));
        }
        Ok(opened)
    }

    fn list(&self, arguments: &JsonObject) -> Result<Value, ProviderError> {
        let relative = arguments.get("path").and_then(Value::as_str).unwrap_or("");
        let requested = self.plain(relative)?;
        let folder = beneath::open_dir(&self.root_fd, requested).map_err(|why| match why {
            // O_DIRECTORY meets a link as "not a folder": say which (words only).
            beneath::Refused::NotAFile
                if std::fs::symlink_metadata(self.root.join(requested))
                    .is_ok_and(|m| m.is_symlink()) =>
            {
                self.refusal(relative, beneath::Refused::Link)
            }
            beneath::Refused::NotAFile => ProviderError::NotAFolder(relative.to_owned()),
            other => self.refusal(relative, other),
        })?;
        let is_root = requested.components().all(|c| c == Component::CurDir);
        if !is_root && !search::visible(&self.root, &self.config, requested) {
            return Err(self.hidden(relative));
        }
        list::run(&self.root, folder, relative, &self.config, arguments)
    }
}

/// Whether `path` has an extension the source offers.
fn extension_allowed(config: &FilesSourceConfig, path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| config.extensions.iter().any(|x| x == e))
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
                "description": format!("Reads a text file under `{}` (extensions: {}). Paths are relative to its root; large files are read in parts, by bytes (offset, length) or by lines (start_line, end_line).", c.name, c.extensions.join(", ")),
                "inputSchema": {"type": "object", "properties": {
                    "path": {"type": "string", "description": "Path relative to the root, e.g. src/main.rs"},
                    "offset": {"type": "integer", "minimum": 0, "description": "First byte to read"},
                    "length": {"type": "integer", "minimum": 1, "maximum": c.max_read_bytes, "description": "Bytes to read"},
                    "start_line": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)"},
                    "end_line": {"type": "integer", "minimum": 1, "description": "Last line to read (inclusive)"}
                }, "required": ["path"], "additionalProperties": false},
                "annotations": hints,
            })),
            wire(json!({
                "name": c.search_tool,
                "title": format!("Search the files of {}", c.name),
                "description": format!("Searches the files under `{}` for a regular expression (hidden and .gitignore'd files skipped unless the source includes them). Returns path, line number and line of each match, with `context` lines before and after when asked.", c.name),
                "inputSchema": {"type": "object", "properties": {
                    "pattern": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "Regular expression (Rust syntax; smart case)"},
                    "glob": {"type": "string", "description": "Only files matching this glob, e.g. src/**/*.rs"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": c.max_results},
                    "context": {"type": "integer", "minimum": 0, "maximum": search::MAX_CONTEXT, "description": "Lines of context before and after each match"}
                }, "required": ["pattern"], "additionalProperties": false},
                "outputSchema": {"type": "object", "properties": {
                    "matches": {"type": "array", "items": {"type": "object", "properties": {
                        "path": {"type": "string"}, "line": {"type": "integer"}, "text": {"type": "string"},
                        "before": {"type": "array"}, "after": {"type": "array"}}}},
                    "truncated": {"type": "boolean"}}, "required": ["matches", "truncated"]},
                "annotations": hints,
            })),
            wire(json!({
                "name": c.list_tool,
                "title": format!("List a folder of {}", c.name),
                "description": format!("Lists a folder under `{}`: its folders and its files with an allowed extension (hidden and .gitignore'd entries skipped unless the source includes them), with kind and size, folders first, a page at a time.", c.name),
                "inputSchema": {"type": "object", "properties": {
                    "path": {"type": "string", "description": "Folder relative to the root; empty for the root"},
                    "offset": {"type": "integer", "minimum": 0, "description": "Entries to skip (nextOffset of the previous page)"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": list::MAX_LIMIT}
                }, "additionalProperties": false},
                "outputSchema": {"type": "object", "properties": {
                    "path": {"type": "string"},
                    "entries": {"type": "array", "items": {"type": "object", "properties": {
                        "name": {"type": "string"}, "path": {"type": "string"},
                        "kind": {"enum": ["dir", "file"]}, "size": {"type": "integer"}}}},
                    "total": {"type": "integer"}, "nextOffset": {"type": ["integer", "null"]}},
                    "required": ["path", "entries", "total"]},
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
                .unwrap_or_else(|_| Err(ProviderError::Panicked("read")))
        } else if name == self.config.search_tool {
            let request = search::Request::from_arguments(&arguments, self.config.max_results);
            let source = self.clone();
            match request {
                Ok(request) => tokio::task::spawn_blocking(move || {
                    search::run(&source.root, &source.root_fd, &source.config, &request)
                })
                .await
                .unwrap_or_else(|_| Err(ProviderError::Panicked("search")))
                .map(|found| structured_result(found, false)),
                Err(message) => Err(message),
            }
        } else if name == self.config.list_tool {
            let source = self.clone();
            tokio::task::spawn_blocking(move || source.list(&arguments))
                .await
                .unwrap_or_else(|_| Err(ProviderError::Panicked("listing")))
                .map(|listed| structured_result(listed, false))
        } else {
            return Err(McpError::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        };
        Ok(result
            .unwrap_or_else(|error| text_result(error.to_string(), true))
            .into())
    }
}
