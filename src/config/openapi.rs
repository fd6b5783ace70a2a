//! `[[sources.openapi]]`: an OpenAPI 3.0 or 3.1 document whose operations
//! become HTTP tools, each with every policy a declared HTTP tool has
//! (`providers/openapi/` reads the document).

use std::{collections::BTreeMap, time::Duration};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One OpenAPI document and the operations taken from it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenApiSourceConfig {
    /// Source name; the tools' default prefix is `<name>_`.
    pub name: String,
    /// The document: a JSON or YAML file, relative to the configuration
    /// file naming it, or an http(s) URL under `tools.http_allowlist`;
    /// read again on every reload.
    pub spec: String,
    /// Where the operations are called; unset, the document's first
    /// `servers` entry. Either joins the HTTP allowlist for these tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Operations offered: by operationId, tag (`tag:NAME`) or path glob
    /// (`/repos/*`); empty: all.
    #[serde(default)]
    pub include: Vec<String>,
    /// Operations left out, in the same forms; wins over `include`.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Put before each tool's name; unset: `<name>_`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Headers sent with every call: `${ENV}` secrets and `${user:SLOT}`
    /// member credentials as for `[[tools.http]]`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Scopes every tool of this source requires (a tool's own override
    /// replaces them).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Whole-request timeout of each call.
    #[serde(default = "default_timeout", with = "super::duration")]
    pub timeout: Duration,
    /// Largest response body read.
    #[serde(default = "default_max_bytes")]
    pub max_response_bytes: usize,
    /// Per-operation overrides, by operationId.
    #[serde(default)]
    pub tools: BTreeMap<String, OpenApiToolOverride>,
}

/// `[sources.openapi.tools.<operationId>]`: what a declared tool could say
/// differently; unset keys keep what the document gives.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenApiToolOverride {
    /// The tool's name, instead of prefix + operationId.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<bool>,
    /// Each call waits for a member of a group to approve it on the portal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<super::ToolApproval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Arguments filled from the caller (`{ owner = "user" }`), hidden from
    /// the model, as for declared tools.
    #[serde(default)]
    pub from_caller: BTreeMap<String, String>,
    #[serde(
        default,
        with = "super::duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_ttl: Option<Duration>,
    #[serde(
        default,
        with = "super::duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
    /// A JSON Schema for the result, instead of the document's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Map<String, Value>>,
}

impl OpenApiSourceConfig {
    /// Whether `spec` names a URL (else a file).
    pub fn spec_is_url(&self) -> bool {
        self.spec.starts_with("https://") || self.spec.starts_with("http://")
    }
}

fn default_timeout() -> Duration {
    Duration::from_secs(10)
}

fn default_max_bytes() -> usize {
    1024 * 1024
}
