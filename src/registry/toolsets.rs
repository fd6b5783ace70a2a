//! Toolsets (issue 60): the curated endpoints a configuration declares,
//! with their globs compiled once per registry. A caller on a toolset's
//! endpoint is offered only what `permits` lets through, on top of its
//! scopes; the engine asks, the registry answers.

use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};

use super::Kind;
use crate::config::{Discovery, ToolsetConfig};

/// One `[[toolsets]]` entry, ready to answer.
#[derive(Debug)]
pub struct Toolset {
    pub name: String,
    pub description: String,
    pub groups: Vec<String>,
    pub discovery: Discovery,
    include: GlobSet,
    exclude: GlobSet,
    always: GlobSet,
}

fn globs(patterns: &[String]) -> GlobSet {
    let mut set = GlobSetBuilder::new();
    // Checked by the configuration's rules; one that fails here picks nothing.
    for glob in patterns.iter().filter_map(|p| Glob::new(p).ok()) {
        set.add(glob);
    }
    set.build().unwrap_or_else(|_| GlobSet::empty())
}

impl Toolset {
    pub fn new(config: &ToolsetConfig) -> Self {
        Self {
            name: config.name.clone(),
            description: config.description.clone(),
            groups: config.groups.clone(),
            discovery: config.discovery,
            include: globs(&config.include),
            exclude: globs(&config.exclude),
            always: globs(&config.always),
        }
    }

    /// Whether the endpoint offers something known by any of `names` (a
    /// tool's or prompt's name; a resource's URI, its source, its upstream).
    pub fn permits<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> bool {
        let names: Vec<&str> = names.into_iter().filter(|n| !n.is_empty()).collect();
        names.iter().any(|n| self.include.is_match(n))
            && !names.iter().any(|n| self.exclude.is_match(n))
    }

    /// Whether a member of `groups` (their IdP groups) may connect: the
    /// toolset names no groups, or one of theirs.
    pub fn open_to(&self, groups: &[String]) -> bool {
        self.groups.is_empty() || groups.iter().any(|g| self.groups.contains(g))
    }

    /// Whether the endpoint offers the resource (or template) `uri`: by
    /// itself, its source (`runbooks` in `docs://runbooks/a.md`) or the
    /// upstream serving it.
    pub fn permits_resource(&self, uri: &str, upstream: Option<&str>) -> bool {
        self.permits([uri, source_of(uri), upstream.unwrap_or_default()])
    }

    /// Whether a tool is listed even in search mode.
    pub fn always_listed(&self, name: &str) -> bool {
        self.always.is_match(name)
    }
}

impl super::RegistryBuilder {
    /// The main endpoint's discovery (`[mcp] discovery` and `always`).
    pub fn main_endpoint(mut self, discovery: Discovery, always: &[String]) -> Self {
        self.main = Some(Arc::new(Toolset::new(&ToolsetConfig {
            name: String::new(),
            description: String::new(),
            include: vec!["*".into()],
            exclude: Vec::new(),
            groups: Vec::new(),
            discovery,
            always: always.to_vec(),
        })));
        self
    }
}

/// The search index of `tools`, when some endpoint searches: built with the
/// registry, so on every change of what is offered.
pub(super) fn index_if_searched(
    builder: &super::RegistryBuilder,
    tools: &[crate::protocol::Tool],
) -> Option<Arc<super::ToolIndex>> {
    let endpoints = builder.main.iter().chain(&builder.toolsets);
    if !endpoints
        .into_iter()
        .any(|t| t.discovery == Discovery::Search)
    {
        return None;
    }
    let started = std::time::Instant::now();
    let index = super::ToolIndex::build(tools);
    tracing::debug!(tools = tools.len(), elapsed = ?started.elapsed(), "tool search index built");
    Some(Arc::new(index))
}

impl super::Registry {
    /// The discovery of an endpoint (`None`: the main one): its mode and
    /// pinned tools; `None` for the main one left at `list`, or a toolset gone.
    pub fn discovery(&self, endpoint: Option<&str>) -> Option<&Arc<Toolset>> {
        match endpoint {
            None => self.main.as_ref(),
            Some(name) => self.toolsets.get(name),
        }
    }

    /// The tools' search index (`None`: no endpoint searches).
    pub fn tool_index(&self) -> Option<&Arc<super::ToolIndex>> {
        self.index.as_ref()
    }

    pub fn toolset(&self, name: &str) -> Option<&Arc<Toolset>> {
        self.toolsets.get(name)
    }

    /// Every toolset, by name.
    pub fn toolsets(&self) -> impl Iterator<Item = &Arc<Toolset>> {
        let mut all: Vec<_> = self.toolsets.values().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all.into_iter()
    }

    /// Whether the endpoint `endpoint` (a toolset's name; `None`: the main
    /// one) offers `target` of `kind`. A toolset gone in a reload offers
    /// nothing.
    pub fn on_endpoint(&self, endpoint: Option<&str>, kind: Kind, target: &str) -> bool {
        let Some(name) = endpoint else {
            return true;
        };
        let Some(toolset) = self.toolsets.get(name) else {
            return false;
        };
        match kind {
            Kind::Tool | Kind::Prompt => toolset.permits([target]),
            Kind::Resource => {
                let upstream = self.resource_owner(target).and_then(|p| p.origin());
                toolset.permits_resource(target, upstream.as_deref())
            }
        }
    }
}

/// The source a resource URI names: `runbooks` in `docs://runbooks/a.md`.
fn source_of(uri: &str) -> &str {
    uri.split_once("://")
        .map(|(_, rest)| rest.split('/').next().unwrap_or_default())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toolset(include: &[&str], exclude: &[&str]) -> Toolset {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        Toolset::new(&ToolsetConfig {
            name: "oncall".into(),
            description: String::new(),
            include: strings(include),
            exclude: strings(exclude),
            groups: Vec::new(),
            discovery: Discovery::List,
            always: Vec::new(),
        })
    }

    #[test]
    fn include_picks_and_exclude_takes_out() {
        let oncall = toolset(
            &["k8s_*", "search_docs", "runbooks"],
            &["k8s_kubectl_delete"],
        );
        assert!(oncall.permits(["k8s_get_pods"]));
        assert!(!oncall.permits(["k8s_kubectl_delete"]));
        assert!(oncall.permits(["search_docs"]));
        assert!(!oncall.permits(["github_create_issue"]));
        let uri = "docs://runbooks/restart.md";
        assert!(oncall.permits([uri, source_of(uri)]));
        let other = "docs://guides/a.md";
        assert!(!oncall.permits([other, source_of(other)]));
    }

    #[test]
    fn open_to_everyone_without_groups_else_to_their_members() {
        let mut oncall = toolset(&["*"], &[]);
        assert!(oncall.open_to(&[]));
        oncall.groups = vec!["oncall".into(), "sre".into()];
        assert!(oncall.open_to(&["dev".into(), "sre".into()]));
        assert!(!oncall.open_to(&["dev".into()]));
        assert!(!oncall.open_to(&[]));
    }
}
