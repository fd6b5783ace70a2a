//! A files source's skills (SEP-2640, `io.modelcontextprotocol/skills`;
//! issue 66 part 4) as the registry offers them: with `skills = true`, each
//! folder holding a `SKILL.md` is the skill `skill://<source>/<folder>/SKILL.md`
//! (`skill_tree.rs` finds them and their manifests), listed by `skills/list`,
//! fetched by `skills/get`, and each of its files read with `resources/read`
//! under the same rules as `read_file` (beneath the root, no links, not
//! hidden or ignored, an allowed extension, under the size cap) and the
//! source's scopes. Only files of a skill are read so: a path outside every
//! skill folder is not found.

use std::{path::Path, sync::Arc};

use async_trait::async_trait;
use base64::Engine;
use serde_json::json;

use super::{
    FilesSource,
    skill_tree::{SKILL_MD, Tree},
};
use crate::{
    config::DocsSourceConfig,
    protocol::{McpError, ReadResourceResponse, ReadResourceResult, Resource, Skill},
    providers::{declared_scopes, wire},
    registry::{CallContext, ResourceProvider, skills::unknown_skill},
};

const MARKDOWN: &str = "text/markdown";

pub struct SkillsOf {
    tree: Tree,
}

impl SkillsOf {
    /// The skills of `source`, when it serves them.
    pub fn of(source: &Arc<FilesSource>) -> Option<Arc<Self>> {
        let tree = Tree::new(source.clone());
        source.config.skills.then(|| Arc::new(Self { tree }))
    }

    /// The skills of a docs source with `skills`: each of its folders walked
    /// as a files source's root is, offering the source's extensions, under
    /// its name and scopes (a skill path in two folders: the first's).
    pub fn of_docs(docs: &DocsSourceConfig) -> Vec<Arc<Self>> {
        let folders = docs.paths.iter().filter(|p| Path::new(p).is_dir());
        let as_files = folders.filter_map(|root| {
            let config = serde_json::from_value(json!({
                "name": docs.name, "root": root, "extensions": docs.extensions,
                "max_file_bytes": docs.max_file_bytes, "scopes": docs.scopes, "skills": true,
            }));
            let source = config.map_err(anyhow::Error::from).and_then(|c| FilesSource::new(0, c));
            let warn = |e: &anyhow::Error| tracing::warn!(docs = %docs.name, %root, "skills not served: {e:#}");
            source.inspect_err(warn).ok()
        });
        as_files.filter_map(|source| Self::of(&source)).collect()
    }
}

impl Tree {
    /// `skills/get`: the skill whose `SKILL.md` is `uri`.
    fn skill_at(&self, uri: &str) -> Result<Skill, McpError> {
        let path = self.path_of(uri).ok_or_else(|| unknown_skill(uri))?;
        let folder = (path.strip_suffix(SKILL_MD))
            .and_then(|p| p.strip_suffix('/'))
            .ok_or_else(|| unknown_skill(uri))?;
        let folders = self.folders();
        let files = folders.get(folder).ok_or_else(|| unknown_skill(uri))?;
        let skill = self.skill(folder, files).map_err(|why| {
            McpError::invalid_params(format!("No skill is served at {uri}: {why}"), None)
        })?;
        // Another spelling of the URI names the same file, not this entry.
        if skill.uri != uri {
            return Err(unknown_skill(uri));
        }
        Ok(skill)
    }

    /// `resources/read` of a skill's file: text when it is UTF-8, else a blob.
    fn read(&self, uri: &str) -> Result<ReadResourceResponse, McpError> {
        let not_found = |why: String| {
            McpError::resource_not_found(
                format!("Resource not found: {why}"),
                Some(json!({ "uri": uri })),
            )
        };
        let path = self
            .path_of(uri)
            .ok_or_else(|| not_found("not a skill URI".into()))?;
        let (file, _) = self
            .source
            .open(&path)
            .map_err(|e| not_found(e.to_string()))?;
        if !self.in_a_skill(&path) {
            return Err(not_found(format!("{path} is in no skill's folder")));
        }
        let bytes = self
            .bytes(&path, file)
            .map_err(|why| McpError::invalid_params(why.to_string(), None))?;
        let mime = mime_type(&path);
        let contents = match String::from_utf8(bytes) {
            Ok(text) => json!({ "uri": uri, "mimeType": mime, "text": text }),
            Err(binary) => {
                let blob = base64::engine::general_purpose::STANDARD.encode(binary.into_bytes());
                let mime = mime.unwrap_or("application/octet-stream");
                json!({ "uri": uri, "mimeType": mime, "blob": blob })
            }
        };
        let result: ReadResourceResult = wire(json!({ "contents": [contents] }));
        Ok(result.into())
    }

    /// Whether a folder on the way to `path` (the root aside) has a
    /// `SKILL.md` the source serves.
    fn in_a_skill(&self, path: &str) -> bool {
        let mut at = path;
        while let Some((parent, _)) = at.rsplit_once('/') {
            if self.source.open(&format!("{parent}/{SKILL_MD}")).is_ok() {
                return true;
            }
            at = parent;
        }
        false
    }
}

/// The MIME type of the file at `path`, by its extension, where known.
fn mime_type(path: &str) -> Option<&'static str> {
    let extension = Path::new(path).extension()?.to_str()?.to_ascii_lowercase();
    Some(match extension.as_str() {
        "md" | "markdown" => MARKDOWN,
        "txt" => "text/plain",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "py" => "text/x-python",
        "sh" => "application/x-sh",
        "js" | "mjs" => "text/javascript",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ => return None,
    })
}

/// `work` on a blocking thread: walking and hashing read files.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, McpError> + Send + 'static,
) -> Result<T, McpError> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|_| {
        Err(McpError::internal_error(
            "reading the skill's files failed",
            None,
        ))
    })
}

#[async_trait]
impl ResourceProvider for SkillsOf {
    /// Each skill's `SKILL.md`, named and described by its front matter;
    /// the other files are in its manifest (`skills/list`, `skills/get`).
    fn resources(&self) -> Vec<Resource> {
        let folders = self.tree.folders();
        let listed = folders.keys().filter_map(|folder| {
            let path = format!("{folder}/{SKILL_MD}");
            let front = self.tree.front_matter(&path).ok()?;
            Some(wire(json!({
                "uri": self.tree.uri(&path),
                "name": front.name,
                "description": front.description,
                "mimeType": MARKDOWN,
            })))
        });
        listed.collect()
    }

    fn owns(&self, uri: &str) -> bool {
        self.tree.path_of(uri).is_some()
    }

    fn required_scopes(&self, _uri: &str) -> Option<Vec<String>> {
        declared_scopes(&self.tree.source.config.scopes)
    }

    fn serves_skills(&self) -> bool {
        true
    }

    async fn skills(&self) -> Result<Vec<Skill>, McpError> {
        let tree = self.tree.clone();
        blocking(move || Ok(tree.skills())).await
    }

    async fn skill(&self, uri: &str, _cx: &CallContext) -> Result<Skill, McpError> {
        let (tree, uri) = (self.tree.clone(), uri.to_owned());
        blocking(move || tree.skill_at(&uri)).await
    }

    async fn read(&self, uri: &str, _cx: &CallContext) -> Result<ReadResourceResponse, McpError> {
        let (tree, uri) = (self.tree.clone(), uri.to_owned());
        blocking(move || tree.read(&uri)).await
    }
}
