//! `[[toolsets]]`: curated endpoints (issue 60). Each is served at
//! `<mcp.path>/<name>` with the same protocol, authentication, limits and
//! audit as `mcp.path`, offering only the tools, prompts and resource
//! sources its globs pick, to the callers its `groups` admit.

use serde::{Deserialize, Serialize};

use super::ConfigError;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsetConfig {
    /// The endpoint's last path segment: `/mcp/<name>`.
    pub name: String,
    /// What the endpoint is for; its `initialize` instructions.
    #[serde(default)]
    pub description: String,
    /// Globs over tool and prompt names, resource URIs and resource
    /// sources (`docs://<source>/…`, an upstream's name): what is offered.
    pub include: Vec<String>,
    /// Globs taken out of what `include` picks.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// IdP groups (the token's groups claim) whose members may connect;
    /// empty: every caller. A `toolset:<name>` scope admits too.
    #[serde(default)]
    pub groups: Vec<String>,
    /// How clients find tools: `list` (every tool in `tools/list`) or
    /// `search` (the pinned tools and the meta-tools `search_tools` and
    /// `call_tool`).
    #[serde(default)]
    pub discovery: Discovery,
    /// Tools listed even in search mode.
    #[serde(default)]
    pub always: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Discovery {
    #[default]
    List,
    Search,
}

/// Names are one path segment; globs compile; names are unique.
pub(super) fn validate(toolsets: &[ToolsetConfig]) -> Result<(), ConfigError> {
    let invalid = |i: usize, key: &str, why: String| ConfigError::Invalid {
        key: format!("toolsets[{i}].{key}"),
        why,
    };
    let mut seen = std::collections::HashSet::new();
    for (i, toolset) in toolsets.iter().enumerate() {
        let name = &toolset.name;
        let good = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
        if name.is_empty() || name.len() > 64 || !name.chars().all(good) {
            return Err(invalid(
                i,
                "name",
                "must be 1 to 64 lower-case letters, digits, `-` or `_` (it is a URL path segment)"
                    .into(),
            ));
        }
        if !seen.insert(name.as_str()) {
            return Err(invalid(i, "name", format!("`{name}` is another toolset's")));
        }
        if toolset.include.is_empty() {
            return Err(invalid(
                i,
                "include",
                "is empty: name the tools, prompts and sources the endpoint offers (globs)".into(),
            ));
        }
        for (key, globs) in [
            ("include", &toolset.include),
            ("exclude", &toolset.exclude),
            ("always", &toolset.always),
        ] {
            for glob in globs {
                if let Err(error) = globset::Glob::new(glob) {
                    return Err(invalid(i, key, format!("`{glob}` is not a glob: {error}")));
                }
            }
        }
    }
    Ok(())
}
