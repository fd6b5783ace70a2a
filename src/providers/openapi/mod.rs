//! `[[sources.openapi]]`: each operation of an OpenAPI 3.0 or 3.1 document
//! as an HTTP tool (`http_tool.rs`), so it has every policy a declared HTTP
//! tool has: scopes, quotas, `confirm`, member credentials in headers, the
//! result cache, audit and scrubbing.

mod operation;
mod spec;

use std::{collections::BTreeSet, path::Path};

use anyhow::Context;
use globset::{Glob, GlobMatcher};

use crate::config::{HttpToolConfig, OpenApiSourceConfig, url_allowed};

/// The tools of `source`, and the base URL they call (which joins the
/// HTTP allowlist for them). A `spec` URL must be under `allowlist`.
pub fn tools(
    source: &OpenApiSourceConfig,
    allowlist: &[String],
) -> anyhow::Result<(Vec<HttpToolConfig>, String)> {
    let text = if source.spec_is_url() {
        anyhow::ensure!(
            url_allowed(&source.spec, allowlist),
            "the document's URL is under none of tools.http_allowlist"
        );
        spec::fetch(&source.spec, source.timeout)?
    } else {
        spec::load(Path::new(&source.spec))?
    };
    let document = spec::Index::new(&text, &source.spec)?;
    let base = match &source.base_url {
        Some(base) => base.clone(),
        None => first_server(&document).context(
            "the document names no absolute `servers` URL: set base_url to where its API is",
        )?,
    };
    let base = base.trim_end_matches('/').to_owned();
    let filter = Filter::new(source)?;
    let prefix = source
        .prefix
        .clone()
        .unwrap_or_else(|| format!("{}_", source.name));
    let mut names = BTreeSet::new();
    let mut tools = Vec::new();
    for found in operation::all(&document) {
        if !filter.admits(&found) {
            continue;
        }
        let overrides = source.tools.get(&found.id).cloned().unwrap_or_default();
        let name = match &overrides.name {
            Some(name) => name.clone(),
            None => unique(
                &mut names,
                &format!("{prefix}{}", operation::sanitize(&found.id)),
            ),
        };
        names.insert(name.clone());
        tools.push(operation::tool(
            &found,
            &document,
            (source, &base, name),
            overrides,
        ));
    }
    Ok((tools, base))
}

/// The document's first `servers` URL, if it is absolute.
fn first_server(document: &spec::Index) -> Option<String> {
    let url = document.servers.pointer("/0/url")?.as_str()?;
    (url.starts_with("https://") || url.starts_with("http://")).then(|| url.to_owned())
}

/// `name`, or `name_2`, `name_3`, ... when taken; at most 64 characters.
fn unique(taken: &mut BTreeSet<String>, name: &str) -> String {
    let name: String = name.chars().take(64).collect();
    if !taken.contains(&name) {
        return name;
    }
    (2..)
        .map(|n| format!("{}_{n}", name.chars().take(60).collect::<String>()))
        .find(|candidate| !taken.contains(candidate))
        .expect("an unused name")
}

/// Which operations a source offers: by operationId, `tag:NAME` or a path
/// glob (`/repos/*`).
struct Filter {
    include: Vec<Rule>,
    exclude: Vec<Rule>,
}

enum Rule {
    Id(String),
    Tag(String),
    Path(GlobMatcher),
}

impl Filter {
    fn new(source: &OpenApiSourceConfig) -> anyhow::Result<Self> {
        let rules = |entries: &[String], key: &str| -> anyhow::Result<Vec<Rule>> {
            entries
                .iter()
                .map(|entry| {
                    if let Some(tag) = entry.strip_prefix("tag:") {
                        Ok(Rule::Tag(tag.to_owned()))
                    } else if entry.starts_with('/') {
                        let glob = Glob::new(entry).with_context(|| format!("{key}: {entry:?}"))?;
                        Ok(Rule::Path(glob.compile_matcher()))
                    } else {
                        Ok(Rule::Id(entry.clone()))
                    }
                })
                .collect()
        };
        Ok(Self {
            include: rules(&source.include, "include")?,
            exclude: rules(&source.exclude, "exclude")?,
        })
    }

    fn admits(&self, found: &operation::Found) -> bool {
        let matches = |rule: &Rule| match rule {
            Rule::Id(id) => *id == found.id,
            Rule::Tag(tag) => found.tags.iter().any(|t| t == tag),
            Rule::Path(glob) => glob.is_match(&found.path),
        };
        (self.include.is_empty() || self.include.iter().any(matches))
            && !self.exclude.iter().any(matches)
    }
}
