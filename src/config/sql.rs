//! `[[sources.sql]]`: a team's database offered as declared tools, each a
//! statement with bound parameters (MCP Toolbox's shape), plus an optional
//! read-only `execute_sql` and the catalog's `list_tables`/`describe_table`.

use std::{collections::BTreeMap, time::Duration};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{ConfigError, DatabaseUrl, TaskMode, decl::ToolDecl};

/// One database and the tools over it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlSourceConfig {
    /// Source name, used in messages.
    pub name: String,
    /// `postgres://…` or `sqlite://…`; `${NAME}` reads environment variable
    /// NAME (a secret, scrubbed from results). Never printed with its password.
    pub url: DatabaseUrl,
    /// Connections kept open at most, and when idle how long.
    #[serde(default = "default_max_connections")]
    pub max_connections: u32,
    #[serde(default = "default_idle_timeout", with = "super::duration")]
    pub idle_timeout: Duration,
    /// With `${user:NAME}` in the URL (PostgreSQL), each member connects
    /// with their own values: a pool per distinct URL, at most this many kept
    /// (the least recently used closed first), each of at most
    /// `member_max_connections`.
    #[serde(default = "default_max_member_pools")]
    pub max_member_pools: u64,
    #[serde(default = "default_member_max_connections")]
    pub member_max_connections: u32,
    /// How long a call waits for a free connection.
    #[serde(default = "default_acquire_timeout", with = "super::duration")]
    pub acquire_timeout: Duration,
    /// Longest a statement may run (PostgreSQL's `statement_timeout`).
    #[serde(default = "default_statement_timeout", with = "super::duration")]
    pub statement_timeout: Duration,
    /// Rows and bytes of JSON a result keeps; beyond, it says "truncated".
    #[serde(default = "default_max_rows")]
    pub max_rows: usize,
    #[serde(default = "default_max_bytes")]
    pub max_bytes: usize,
    /// Offer a read-only ad-hoc query tool by this name ("" : none).
    #[serde(default)]
    pub execute_sql_tool: String,
    /// Offer the catalog's tools by these names ("": none).
    #[serde(default)]
    pub list_tables_tool: String,
    #[serde(default)]
    pub describe_table_tool: String,
    /// Scopes a caller needs for the three tools above.
    #[serde(default)]
    pub scopes: Vec<String>,
    #[serde(default)]
    pub tools: Vec<SqlToolConfig>,
}

/// `[[sources.sql.tools]]`: one statement per call.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlToolConfig {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub description: String,
    /// The statement, with the driver's placeholders: `$1`, `$2` on
    /// PostgreSQL, `?` on SQLite. Arguments are always bound, never spliced.
    pub statement: String,
    /// The arguments, in placeholder order.
    #[serde(default)]
    pub parameters: Vec<SqlParameter>,
    /// Run in a read-only transaction (PostgreSQL) or on a `query_only`
    /// connection (SQLite): the database refuses a write.
    #[serde(default = "yes")]
    pub read_only: bool,
    #[serde(default)]
    pub scopes: Vec<String>,
    #[serde(default)]
    pub confirm: bool,
    /// Each call waits for a member of a group to approve it on the portal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<super::ToolApproval>,
    /// Parameters filled from the caller: `"user"` or `"claim:<name>"`.
    #[serde(default)]
    pub from_caller: BTreeMap<String, String>,
    #[serde(
        default,
        with = "super::duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_ttl: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMode>,
    /// A task whose replica died runs again on another replica.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub task_retry: bool,
    /// How many times it runs again at most (1-10; default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_retry_max: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlParameter {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: SqlType,
    #[serde(default)]
    pub description: String,
    /// An optional parameter is bound as NULL when absent.
    #[serde(default = "yes")]
    pub required: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SqlType {
    String,
    Integer,
    Number,
    Boolean,
}

fn yes() -> bool {
    true
}
fn default_max_connections() -> u32 {
    4
}
fn default_max_member_pools() -> u64 {
    32
}
fn default_member_max_connections() -> u32 {
    2
}
fn default_idle_timeout() -> Duration {
    Duration::from_secs(300)
}
fn default_acquire_timeout() -> Duration {
    Duration::from_secs(5)
}
fn default_statement_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_max_rows() -> usize {
    100
}
fn default_max_bytes() -> usize {
    256 * 1024
}

impl SqlToolConfig {
    /// The shared declared-tool fields; the schema made from `parameters`.
    pub fn decl(&self) -> ToolDecl {
        let mut properties = Map::new();
        for p in &self.parameters {
            let kind = serde_json::to_value(p.kind).unwrap_or_default();
            let mut schema = json!({"type": kind, "description": p.description});
            if !p.required {
                schema["type"] = json!([kind, "null"]);
            }
            properties.insert(p.name.clone(), schema);
        }
        let required: Vec<&str> = (self.parameters.iter())
            .filter(|p| p.required)
            .map(|p| p.name.as_str())
            .collect();
        let schema = json!({"type": "object", "properties": properties,
            "required": required, "additionalProperties": false});
        let Value::Object(input_schema) = schema else {
            unreachable!("an object literal")
        };
        ToolDecl {
            name: self.name.clone(),
            title: self.title.clone(),
            description: self.description.clone(),
            input_schema,
            output_schema: None,
            scopes: self.scopes.clone(),
            confirm: self.confirm,
            read_only: Some(self.read_only),
            destructive: None,
            idempotent: None,
            open_world: Some(false),
            from_caller: self.from_caller.clone(),
            cache_ttl: self.cache_ttl,
            task: self.task,
            approval: self.approval.clone(),
            ui: None,
            task_retry: super::task_retries(self.task_retry, self.task_retry_max),
        }
    }
}

impl SqlSourceConfig {
    /// Whether the URL names SQLite (a URL read whole from the
    /// environment is taken for PostgreSQL by check-config's count of `$N`).
    pub fn is_sqlite(&self) -> bool {
        self.url.expose().starts_with("sqlite:")
    }

    /// Every tool name this source offers, with its key.
    pub(super) fn tool_names(&self, i: usize) -> Vec<(&str, String)> {
        let key = format!("sources.sql[{i}]");
        let mut names: Vec<(&str, String)> = (self.tools.iter().enumerate())
            .map(|(j, t)| (t.name.as_str(), format!("{key}.tools[{j}].name")))
            .collect();
        for (name, field) in [
            (&self.execute_sql_tool, "execute_sql_tool"),
            (&self.list_tables_tool, "list_tables_tool"),
            (&self.describe_table_tool, "describe_table_tool"),
        ] {
            if !name.is_empty() {
                names.push((name.as_str(), format!("{key}.{field}")));
            }
        }
        names
    }
}

/// The placeholders a statement uses: the highest `$N` on PostgreSQL, the
/// count of `?` on SQLite, outside quotes and comments.
pub fn placeholders(statement: &str, sqlite: bool) -> usize {
    let bytes = statement.as_bytes();
    let (mut at, mut count, mut highest) = (0, 0, 0);
    while at < bytes.len() {
        match bytes[at] {
            quote @ (b'\'' | b'"') => {
                at += 1;
                while at < bytes.len() && bytes[at] != quote {
                    at += 1;
                }
            }
            b'-' if bytes.get(at + 1) == Some(&b'-') => {
                while at < bytes.len() && bytes[at] != b'\n' {
                    at += 1;
                }
            }
            b'?' if sqlite => count += 1,
            b'$' if !sqlite => {
                let digits: String = (statement[at + 1..].chars())
                    .take_while(char::is_ascii_digit)
                    .collect();
                highest = highest.max(digits.parse().unwrap_or(0));
            }
            _ => {}
        }
        at += 1;
    }
    if sqlite { count } else { highest }
}

fn invalid(key: String, why: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key,
        why: why.into(),
    }
}

/// Rules serde cannot express; messages show the URL masked.
pub(super) fn check(i: usize, source: &SqlSourceConfig) -> Result<(), ConfigError> {
    let key = format!("sources.sql[{i}]");
    let url = source.url.expose();
    // A URL read whole from the environment is checked once it is read.
    let schemes = ["postgres://", "postgresql://", "sqlite:", "${"];
    if !schemes.iter().any(|s| url.starts_with(s)) {
        return Err(invalid(
            format!("{key}.url"),
            format!(
                "{} must start with postgres://, postgresql:// or sqlite: (MySQL is not supported)",
                source.url.masked()
            ),
        ));
    }
    if url.contains("${user:") && source.is_sqlite() {
        return Err(invalid(
            format!("{key}.url"),
            "${user:NAME} needs a PostgreSQL URL: a SQLite file has no users",
        ));
    }
    if source.max_connections == 0
        || source.max_member_pools == 0
        || source.member_max_connections == 0
        || source.max_rows == 0
        || source.max_bytes < 1024
    {
        return Err(invalid(
            key,
            "max_connections, max_member_pools, member_max_connections and max_rows must be at \
             least 1, max_bytes at least 1024",
        ));
    }
    if source.statement_timeout.is_zero() {
        return Err(invalid(key, "statement_timeout must be greater than zero"));
    }
    for (j, tool) in source.tools.iter().enumerate() {
        let key = format!("{key}.tools[{j}]");
        let used = placeholders(&tool.statement, source.is_sqlite());
        if used != tool.parameters.len() {
            let form = if source.is_sqlite() { "?" } else { "$N" };
            return Err(invalid(
                format!("{key}.statement"),
                format!(
                    "uses {used} placeholder(s) ({form}) but {} parameter(s) are declared; declare one per placeholder, in order",
                    tool.parameters.len()
                ),
            ));
        }
        if let Some((argument, _)) =
            (tool.from_caller.iter()).find(|(a, _)| !tool.parameters.iter().any(|p| &p.name == *a))
        {
            return Err(invalid(
                format!("{key}.from_caller.{argument}"),
                "names no parameter",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::placeholders;

    #[test]
    fn placeholders_outside_quotes_and_comments_are_counted() {
        let pg = "select * from t where a = $1 and b = '$9' -- $7\n and c = $2";
        assert_eq!(placeholders(pg, false), 2);
        let lite = "select '?' , \"?\" from t where a = ? and b = ? -- ?";
        assert_eq!(placeholders(lite, true), 2);
    }
}
