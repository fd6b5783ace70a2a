//! Capabilities a team declares without code: HTTP and command tools, docs
//! and files sources, prompts, and the hot-reload switch.
//!
//! serde cannot combine `flatten` with `deny_unknown_fields`, so the fields
//! every declared tool shares are written once in [`declared_tool!`] and
//! copied into each tool kind.

use std::{collections::BTreeMap, time::Duration};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ToolDecl;

/// Adds the fields every declared tool shares, and `decl()` to read them.
macro_rules! declared_tool {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$fmeta:meta])* pub $field:ident: $ty:ty,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// Tool name: 1-128 characters of `[A-Za-z0-9_.-]`, unique per server.
            pub name: String,
            /// Human title shown by clients.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub title: Option<String>,
            /// What the tool does, written for the model.
            pub description: String,
            /// JSON Schema of the arguments (`type = "object"` at the root).
            #[serde(default = "empty_object_schema")]
            pub input_schema: Map<String, Value>,
            /// JSON Schema of `structuredContent`; when set, results carry it.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub output_schema: Option<Map<String, Value>>,
            /// Scopes a caller needs to see and call the tool.
            #[serde(default)]
            pub scopes: Vec<String>,
            /// Ask the user (elicitation / `input_required`) before each run.
            #[serde(default)]
            pub confirm: bool,
            /// MCP annotation hints; unset ones take this kind's defaults.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub read_only: Option<bool>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub destructive: Option<bool>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub idempotent: Option<bool>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub open_world: Option<bool>,
            /// Arguments filled from the caller: `"user"` or `"claim:<name>"`.
            /// Hidden from the schema clients see; clients cannot override them.
            #[serde(default)]
            pub from_caller: BTreeMap<String, String>,
            /// Cache results this long (read-only tools only); keyed by the
            /// arguments, and by the caller when `from_caller` is used.
            #[serde(default, with = "super::duration", skip_serializing_if = "Option::is_none")]
            pub cache_ttl: Option<Duration>,
            /// Whether calls may become durable tasks; unset: the kind's default.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub task: Option<super::TaskMode>,
            /// Each call waits for a member of a group to approve it on the
            /// portal: `{ group = "leads", timeout = "30m" }`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub approval: Option<super::ToolApproval>,
            /// MCP Apps: the `ui://` page the host shows its results with.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub ui: Option<super::ToolUi>,
            /// A task whose replica died runs again on another replica,
            /// with the same arguments and caller (the tool must be safe to
            /// run twice).
            #[serde(default, skip_serializing_if = "std::ops::Not::not")]
            pub task_retry: bool,
            /// How many times it runs again at most (1-10; default 3).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub task_retry_max: Option<u32>,
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl $name {
            pub fn decl(&self) -> ToolDecl {
                ToolDecl {
                    name: self.name.clone(),
                    title: self.title.clone(),
                    description: self.description.clone(),
                    input_schema: self.input_schema.clone(),
                    output_schema: self.output_schema.clone(),
                    scopes: self.scopes.clone(),
                    confirm: self.confirm,
                    read_only: self.read_only,
                    destructive: self.destructive,
                    idempotent: self.idempotent,
                    open_world: self.open_world,
                    from_caller: self.from_caller.clone(),
                    cache_ttl: self.cache_ttl,
                    task: self.task,
                    approval: self.approval.clone(),
                    ui: self.ui.clone(),
                    task_retry: super::task_retries(self.task_retry, self.task_retry_max),
                }
            }
        }
    };
}

fn empty_object_schema() -> Map<String, Value> {
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema
}

/// `[tools]`: declared tools and the rules they share.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    /// Base URLs HTTP tools may call; every `url` must start with one.
    pub http_allowlist: Vec<String>,
    /// Most cached tool results kept across all tools.
    pub cache_max_entries: u64,
    pub http: Vec<HttpToolConfig>,
    pub command: Vec<CommandToolConfig>,
}

declared_tool! {
    /// `[[tools.http]]`: one HTTP request per call.
    pub struct HttpToolConfig {
        /// HTTP method.
        #[serde(default = "default_method")]
        pub method: String,
        /// URL template; `{arg}` is replaced by the percent-encoded argument.
        pub url: String,
        /// Header templates; `${NAME}` reads environment variable NAME (a secret).
        #[serde(default)]
        pub headers: BTreeMap<String, String>,
        /// Query parameters: name → template (`{arg}` replaced); a parameter
        /// whose template names an argument the call lacks is left out.
        #[serde(default)]
        pub query: BTreeMap<String, String>,
        /// JSON body template; a string that is exactly `"{arg}"` becomes the
        /// argument's JSON value, other `{arg}` are replaced inside strings.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub body: Option<Value>,
        /// Whole-request timeout.
        #[serde(default = "default_http_timeout", with = "super::duration")]
        pub timeout: Duration,
        /// Largest response body read; larger responses are a tool error.
        #[serde(default = "default_http_max_bytes")]
        pub max_response_bytes: usize,
        /// JSON pointer into the response used as `structuredContent`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub result_pointer: Option<String>,
    }
}

declared_tool! {
    /// `[[tools.command]]`: one process per call, never through a shell.
    pub struct CommandToolConfig {
        /// The program (absolute path or a name found on PATH); not a shell.
        pub program: String,
        /// argv templates; each item is one argument, `{arg}` replaced.
        /// An item naming an absent optional argument is dropped.
        #[serde(default)]
        pub args: Vec<String>,
        /// Working directory.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub cwd: Option<String>,
        /// Environment variables passed through from teamgate's environment.
        #[serde(default)]
        pub env: Vec<String>,
        /// Environment variables passed through and scrubbed from every result;
        /// `VAR=${user:NAME}` sets VAR to the calling member's value of slot NAME.
        #[serde(default)]
        pub secret_env: Vec<String>,
        /// Kill the process group after this long.
        #[serde(default = "default_command_timeout", with = "super::duration")]
        pub timeout: Duration,
        /// Output kept per stream: the first and last halves of this budget.
        #[serde(default = "default_command_max_bytes")]
        pub max_output_bytes: usize,
        /// Run the program in a sandbox (`crate::sandbox`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub sandbox: Option<super::SandboxConfig>,
    }
}

fn default_method() -> String {
    "GET".into()
}
fn default_http_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_http_max_bytes() -> usize {
    1024 * 1024
}
fn default_command_timeout() -> Duration {
    Duration::from_secs(60)
}
fn default_command_max_bytes() -> usize {
    64 * 1024
}

/// `[sources]`: folders offered as tools and resources.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourcesConfig {
    pub docs: Vec<DocsSourceConfig>,
    pub files: Vec<FilesSourceConfig>,
    pub openapi: Vec<super::OpenApiSourceConfig>,
    /// `[[sources.sql]]`: databases offered as tools (`sql.rs`).
    pub sql: Vec<super::SqlSourceConfig>,
}

/// `[[sources.docs]]`: Markdown and text indexed for `search_docs`, each
/// document also a resource `docs://<name>/<path>`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocsSourceConfig {
    /// Source name, used in resource URIs.
    pub name: String,
    /// Folders or files, relative to the configuration file naming them (the defaults: to the
    /// working directory); missing ones are skipped with a warning, and check-config reports them.
    pub paths: Vec<String>,
    /// Name of the search tool.
    #[serde(default = "default_search_docs")]
    pub tool: String,
    /// File extensions indexed.
    #[serde(default = "default_doc_extensions")]
    pub extensions: Vec<String>,
    #[serde(default = "default_doc_max_bytes")]
    pub max_file_bytes: u64,
    #[serde(default = "default_doc_max_documents")]
    pub max_documents: usize,
    /// Re-index on change and notify subscribers.
    #[serde(default = "yes")]
    pub watch: bool,
    /// Quiet time after a change before re-indexing.
    #[serde(default = "default_debounce", with = "super::duration")]
    pub debounce: Duration,
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Keeps the index on disk in `<index_dir>/<name>/`, so a restart re-indexes only the files
    /// that changed; unset, the index lives in memory, built by the first search after a start.
    #[serde(default)]
    pub index_dir: Option<String>,
    /// Skills (SEP-2640): each folder under its folders holding a `SKILL.md` served as the
    /// skill `skill://<name>/<folder>/SKILL.md`, its files (of `extensions`) as resources.
    #[serde(default)]
    pub skills: bool,
}

fn default_search_docs() -> String {
    "search_docs".into()
}
fn default_doc_extensions() -> Vec<String> {
    ["md", "markdown", "txt"].map(String::from).to_vec()
}
fn default_doc_max_bytes() -> u64 {
    1024 * 1024
}
fn default_doc_max_documents() -> usize {
    2000
}
fn yes() -> bool {
    true
}
fn default_debounce() -> Duration {
    Duration::from_millis(200)
}

/// `[[sources.files]]`: `read_file`, `search_files` and `list_files` under one root.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesSourceConfig {
    pub name: String,
    /// MCP Apps: its `.html` files served as `ui://<name>/<path>` pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apps: Option<super::AppPages>,
    /// Skills (SEP-2640): each folder holding a `SKILL.md` served as the
    /// skill `skill://<name>/<folder>/SKILL.md`, its files as resources.
    #[serde(default)]
    pub skills: bool,
    /// The folder; nothing outside it can be read.
    pub root: String,
    /// Extensions that may be read and searched (without the dot).
    pub extensions: Vec<String>,
    #[serde(default = "default_read_tool")]
    pub read_tool: String,
    #[serde(default = "default_search_tool")]
    pub search_tool: String,
    #[serde(default = "default_list_tool")]
    pub list_tool: String,
    /// Files larger than this are neither read nor searched.
    #[serde(default = "default_doc_max_bytes")]
    pub max_file_bytes: u64,
    /// Most bytes one `read_file` returns.
    #[serde(default = "default_max_read_bytes")]
    pub max_read_bytes: usize,
    /// Most matches one `search_files` returns.
    #[serde(default = "default_max_results")]
    pub max_results: usize,
    /// Offer hidden files and folders (names starting with `.`, `.git/` too).
    #[serde(default)]
    pub include_hidden: bool,
    /// Offer files that `.gitignore`, `.ignore` or `.git/info/exclude` exclude.
    #[serde(default)]
    pub include_ignored: bool,
    #[serde(default)]
    pub scopes: Vec<String>,
}

fn default_read_tool() -> String {
    "read_file".into()
}
fn default_search_tool() -> String {
    "search_files".into()
}
fn default_list_tool() -> String {
    "list_files".into()
}
fn default_max_read_bytes() -> usize {
    64 * 1024
}
fn default_max_results() -> usize {
    100
}

/// `[[prompts]]`, or the front matter of a Markdown prompt file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptConfig {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub arguments: Vec<PromptArgumentConfig>,
    /// The user message; `{{arg}}` is replaced by the argument. Markdown
    /// prompt files leave this out: their body is the template.
    #[serde(default)]
    pub template: String,
    #[serde(default)]
    pub scopes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptArgumentConfig {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub required: bool,
    /// Values offered by `completion/complete`.
    #[serde(default)]
    pub values: Vec<String>,
    /// Complete from a source instead: `"docs:<source name>"` offers its paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete_from: Option<String>,
}

/// `[prompt_files]`: folders of Markdown prompts with front matter.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptFilesConfig {
    pub folders: Vec<String>,
}

/// `[reload]`: hot reload of declared capabilities.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReloadConfig {
    /// Reload when a configuration file changes (SIGHUP always reloads).
    pub watch: bool,
    #[serde(with = "super::duration")]
    pub debounce: Duration,
}
