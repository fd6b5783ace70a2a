//! A files source's MCP Apps pages (issue 66 part 1): with `apps`, each
//! `.html` file under the root is the resource `ui://<source>/<path>`,
//! `text/html;profile=mcp-app`, carrying the configured CSP in its
//! `_meta.ui`, read under the same rules as `read_file` (beneath the root,
//! no links, not hidden or ignored, under the size cap) and listed and read
//! with the source's scopes like any other resource.

use std::{io::Read, sync::Arc};

use async_trait::async_trait;
use serde_json::json;

use super::{FilesSource, search};
use crate::{
    config::AppPages,
    protocol::{McpError, ReadResourceResponse, ReadResourceResult, Resource},
    providers::wire,
    registry::{CallContext, ResourceProvider, apps::APP_MIME_TYPE},
};

/// Most pages one source lists.
const MAX_PAGES: usize = 200;

pub struct AppPagesOf {
    source: Arc<FilesSource>,
    pages: AppPages,
}

impl AppPagesOf {
    /// The pages of `source`, when it serves any.
    pub fn of(source: &Arc<FilesSource>) -> Option<Arc<Self>> {
        let pages = source.config.apps.clone()?;
        Some(Arc::new(Self {
            source: source.clone(),
            pages,
        }))
    }

    fn prefix(&self) -> String {
        format!("ui://{}/", self.source.config.name)
    }

    fn not_found(uri: &str) -> McpError {
        McpError::resource_not_found("Resource not found", Some(json!({ "uri": uri })))
    }
}

fn is_page(path: &std::path::Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
}

#[async_trait]
impl ResourceProvider for AppPagesOf {
    fn resources(&self) -> Vec<Resource> {
        let root = &self.source.root;
        let walked = search::walker(root, &self.source.config).build().flatten();
        let pages = walked
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()) && is_page(e.path()))
            .filter_map(|e| Some(e.path().strip_prefix(root).ok()?.to_str()?.to_owned()))
            .take(MAX_PAGES);
        pages
            .map(|path| {
                wire(json!({
                    "uri": format!("{}{path}", self.prefix()),
                    "name": path,
                    "mimeType": APP_MIME_TYPE,
                    "_meta": { "ui": self.pages.meta() },
                }))
            })
            .collect()
    }

    fn owns(&self, uri: &str) -> bool {
        uri.strip_prefix(&self.prefix())
            .is_some_and(|path| is_page(std::path::Path::new(path)))
    }

    fn required_scopes(&self, _uri: &str) -> Option<Vec<String>> {
        let scopes = &self.source.config.scopes;
        (!scopes.is_empty()).then(|| scopes.clone())
    }

    async fn read(&self, uri: &str, _cx: &CallContext) -> Result<ReadResourceResponse, McpError> {
        let path = (uri.strip_prefix(&self.prefix()))
            .filter(|p| is_page(std::path::Path::new(p)))
            .ok_or_else(|| Self::not_found(uri))?;
        let (file, size) = self.source.open(path).map_err(|_| Self::not_found(uri))?;
        let cap = self.source.config.max_file_bytes;
        if size > cap {
            let why = format!("{uri} is larger than the source's max_file_bytes ({cap})");
            return Err(McpError::invalid_params(why, None));
        }
        let mut html = String::new();
        (file.take(cap).read_to_string(&mut html))
            .map_err(|e| McpError::internal_error(format!("{uri} cannot be read: {e}"), None))?;
        let result: ReadResourceResult = wire(json!({
            "contents": [{
                "uri": uri,
                "mimeType": APP_MIME_TYPE,
                "text": html,
                "_meta": { "ui": self.pages.meta() },
            }],
        }));
        Ok(result.into())
    }
}
