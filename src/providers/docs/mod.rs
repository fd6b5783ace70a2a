//! `[[sources.docs]]`: a folder of Markdown and text, searchable by section
//! through a tool (`search_docs`) and readable as resources
//! `docs://<source>/<path>` (plus a template for direct reads of a section
//! `#anchor` or of `?lines=a-b`). With `watch`, edits re-index the source
//! and raise `resources/updated` and `resources/list_changed`. With
//! `index_dir`, the index is kept on disk and a start re-indexes only the
//! files that changed; without, it is built in RAM on the first search.

mod build;
mod document;
mod index;
mod read;
mod search;
mod sections;
mod store;
mod text;
mod watch;

use std::sync::Arc;

use arc_swap::ArcSwap;
use async_trait::async_trait;
use serde_json::{Value, json};

use index::Snapshot;

use super::declared::{structured_result, text_result};
use crate::{
    config::DocsSourceConfig,
    protocol::{
        CallToolResponse, JsonObject, McpError, ReadResourceResponse, ReadResourceResult, Resource,
        ResourceTemplate, Tool,
    },
    providers::wire,
    registry::{CallContext, ChangeBus, ResourceProvider, ToolProvider},
};

/// Most hits one search returns.
const MAX_LIMIT: u64 = 50;
const DEFAULT_LIMIT: u64 = 10;

/// What the watcher task shares with the source; never the source itself,
/// so dropping the source (on reload) drops the watcher and ends the task.
struct Inner {
    config: DocsSourceConfig,
    snapshot: ArcSwap<Snapshot>,
    bus: ChangeBus,
}

pub struct DocsSource {
    inner: Arc<Inner>,
    _watcher: Option<watch::Watcher>,
}

impl DocsSource {
    /// Reads the source now (and opens its index when kept on disk);
    /// starts watching it when configured.
    pub fn new(config: DocsSourceConfig, bus: ChangeBus) -> anyhow::Result<Arc<Self>> {
        let folder = store::folder(config.index_dir.as_deref(), &config.name);
        let snapshot = Snapshot::open(&index::scan(&config), folder.as_deref())?;
        let inner = Arc::new(Inner {
            snapshot: ArcSwap::from_pointee(snapshot),
            config,
            bus,
        });
        let watcher = if inner.config.watch {
            Some(watch::start(inner.clone())?)
        } else {
            None
        };
        Ok(Arc::new(Self {
            inner,
            _watcher: watcher,
        }))
    }

    pub fn name(&self) -> &str {
        &self.inner.config.name
    }

    /// Paths of the documents, for completion.
    pub fn paths(&self) -> Vec<String> {
        self.inner
            .snapshot
            .load()
            .documents
            .keys()
            .cloned()
            .collect()
    }

    fn prefix(&self) -> String {
        format!("docs://{}/", self.inner.config.name)
    }

    fn path_of<'a>(&self, uri: &'a str) -> Option<&'a str> {
        uri.strip_prefix(&self.prefix())
    }
}

impl Inner {
    fn uri(&self, path: &str) -> String {
        format!("docs://{}/{path}", self.config.name)
    }

    /// A hit's link: its section by anchor, a part or plain text by lines.
    fn hit_uri(&self, hit: &search::Hit) -> String {
        if hit.part || hit.anchor.is_empty() {
            format!("{}?lines={}-{}", self.uri(&hit.path), hit.start, hit.end)
        } else {
            format!("{}#{}", self.uri(&hit.path), hit.anchor)
        }
    }
}

#[async_trait]
impl ToolProvider for DocsSource {
    fn tools(&self) -> Vec<Tool> {
        let config = &self.inner.config;
        vec![wire(json!({
            "name": config.tool,
            "title": format!("Search the {} docs", config.name),
            "description": format!(
                "Full-text search (BM25) over the sections of the `{}` documents (headings weigh more than body text; at most 2 sections per document while other documents match). Each hit names its document, heading path and lines, with a snippet (matched words in **bold**) and a link that reads just that section.",
                config.name
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Words to look for"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}
                },
                "required": ["query"],
                "additionalProperties": false
            },
            "outputSchema": {
                "type": "object",
                "properties": {"hits": {"type": "array", "items": {"type": "object", "properties": {
                    "title": {"type": "string", "description": "the document's title"},
                    "path": {"type": "string"},
                    "headings": {"type": "array", "items": {"type": "string"}, "description": "the section's heading path, outermost first"},
                    "lines": {"type": "object", "properties": {"start": {"type": "integer"}, "end": {"type": "integer"}}},
                    "section": {"type": "string", "description": "the heading's anchor (empty in plain text and before the first heading)"},
                    "uri": {"type": "string", "description": "reads just this section"},
                    "document": {"type": "string", "description": "reads the whole document"},
                    "score": {"type": "number"}, "snippet": {"type": "string"}}}}},
                "required": ["hits"]
            },
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
        }))]
    }

    fn required_scopes(&self, _name: &str) -> Option<Vec<String>> {
        super::declared_scopes(&self.inner.config.scopes)
    }

    async fn call(
        &self,
        _name: &str,
        arguments: JsonObject,
        cx: &CallContext,
    ) -> Result<CallToolResponse, McpError> {
        let query = arguments
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let limit = arguments.get("limit").and_then(Value::as_u64);
        if query.trim().is_empty() || query.len() > 500 {
            return Ok(text_result("`query` must be 1 to 500 characters of text", true).into());
        }
        if limit.is_some_and(|l| !(1..=MAX_LIMIT).contains(&l)) {
            return Ok(text_result(format!("`limit` must be 1 to {MAX_LIMIT}"), true).into());
        }
        let snapshot = self.inner.snapshot.load_full();
        let query = query.to_owned();
        let limit = limit.unwrap_or(DEFAULT_LIMIT) as usize;
        let searched = tokio::task::spawn_blocking(move || snapshot.search(&query, limit)).await;
        let hits = match searched {
            Ok(Ok(hits)) => hits,
            _ => return Ok(text_result("the search failed; try simpler words", true).into()),
        };
        let hits: Vec<Value> = hits
            .into_iter()
            .map(|h| {
                json!({"title": h.title, "path": h.path, "headings": h.headings, "section": h.anchor,
                    "lines": {"start": h.start, "end": h.end}, "uri": self.inner.hit_uri(&h),
                    "document": self.inner.uri(&h.path), "score": h.score, "snippet": h.snippet})
            })
            .collect();
        let mut result = structured_result(json!({ "hits": hits }), false);
        // `resource_link` content exists from 2025-06-18 on.
        let links_known = cx
            .protocol_version()
            .is_none_or(|v| v.as_str() >= "2025-06-18");
        if !links_known {
            return Ok(result.into());
        }
        let links: Vec<Value> = hits
            .iter()
            .map(|h| {
                let heading = h["headings"].as_array().and_then(|a| a.last()).cloned();
                json!({"type": "resource_link", "uri": h["uri"], "name": h["path"],
                "title": heading.unwrap_or_else(|| h["title"].clone()), "mimeType": "text/markdown"})
            })
            .collect();
        result
            .content
            .extend(links.into_iter().map(wire::<crate::protocol::ContentBlock>));
        Ok(result.into())
    }
}

#[async_trait]
impl ResourceProvider for DocsSource {
    fn resources(&self) -> Vec<Resource> {
        let snapshot = self.inner.snapshot.load();
        snapshot
            .documents
            .iter()
            .map(|(path, doc)| {
                wire(json!({
                    "uri": self.inner.uri(path), "name": path, "title": doc.title,
                    "mimeType": doc.mime, "size": doc.size,
                }))
            })
            .collect()
    }

    fn templates(&self) -> Vec<ResourceTemplate> {
        vec![wire(json!({
            "uriTemplate": format!("{}{{+path}}{{?lines}}", self.prefix()),
            "name": format!("{} document", self.inner.config.name),
            "title": format!("A document of the {} docs by path", self.inner.config.name),
            "description": "`lines` (`10-40`) reads a range; a `#anchor` (GitHub-style heading anchor) reads one section",
            "mimeType": "text/markdown",
        }))]
    }

    fn owns(&self, uri: &str) -> bool {
        self.path_of(uri).is_some()
    }

    async fn read(&self, uri: &str, _cx: &CallContext) -> Result<ReadResourceResponse, McpError> {
        let snapshot = self.inner.snapshot.load();
        let wanted = self.path_of(uri).map(read::parse);
        let Some((doc, wanted)) = wanted.and_then(|w| {
            let doc = self.inner.document(&snapshot.documents, w.path)?;
            Some((doc, w))
        }) else {
            return Err(McpError::resource_not_found(
                "Resource not found",
                Some(json!({"uri": uri})),
            ));
        };
        let text = read::text_of(doc, &wanted, uri)?;
        // Subscribers hear about edits, so a short reuse window is safe.
        let scope = if self.inner.config.scopes.is_empty() {
            "public"
        } else {
            "private"
        };
        let result: ReadResourceResult = wire(json!({
            "contents": [{"uri": uri, "mimeType": doc.mime, "text": text}],
            "ttlMs": if self.inner.config.watch { 30_000 } else { 300_000 },
            "cacheScope": scope,
        }));
        Ok(result.into())
    }

    async fn complete(&self, template: &str, argument: &str, prefix: &str) -> Vec<String> {
        if argument != "path" || !template.starts_with(&self.prefix()) {
            return Vec::new();
        }
        self.paths()
            .into_iter()
            .filter(|p| p.starts_with(prefix))
            .collect()
    }

    fn required_scopes(&self, _uri: &str) -> Option<Vec<String>> {
        super::declared_scopes(&self.inner.config.scopes)
    }
}
