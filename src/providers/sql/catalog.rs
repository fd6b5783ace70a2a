//! A source's optional generic tools: `execute_sql` (ad-hoc SQL, always in
//! the read-only guard, never a prepared statement kept), and the catalog's
//! `list_tables` and `describe_table`, named by the configuration.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Source, defaults, engine::Param};
use crate::{
    config::{SqlSourceConfig, ToolDecl},
    protocol::{CallToolResponse, CallToolResult, JsonObject},
    providers::declared::{DeclaredTool, Runner},
    registry::CallContext,
};

const PG_TABLES: &str = "SELECT table_schema, table_name, table_type \
    FROM information_schema.tables \
    WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2";
const SQLITE_TABLES: &str = "SELECT name AS table_name, type AS table_type \
    FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY 1";
const PG_COLUMNS: &str = "SELECT table_schema, column_name, data_type, is_nullable, column_default \
    FROM information_schema.columns \
    WHERE table_schema NOT IN ('pg_catalog', 'information_schema') \
    AND (table_name = $1 OR table_schema || '.' || table_name = $1) \
    ORDER BY table_schema, ordinal_position";
const SQLITE_COLUMNS: &str = "SELECT name AS column_name, type AS data_type, \"notnull\", \
    dflt_value AS column_default, pk FROM pragma_table_info(?)";

/// What a generic tool runs.
enum Kind {
    /// The caller's SQL, in the `sql` argument.
    Execute,
    /// A fixed catalog query, with the `table` argument bound when it has one.
    Catalog(&'static str, Option<&'static str>),
}

struct GenericRunner {
    name: String,
    source: Arc<Source>,
    kind: Kind,
}

#[async_trait]
impl Runner for GenericRunner {
    fn timeout(&self) -> Duration {
        self.source.budget
    }

    fn per_caller(&self) -> bool {
        self.source.per_member()
    }

    async fn withheld(&self, cx: &CallContext) -> Option<CallToolResponse> {
        self.source.withheld(&self.name, cx).await
    }

    async fn run(&self, arguments: &JsonObject, cx: &CallContext) -> CallToolResult {
        let text = |name: &str| {
            let value = arguments.get(name).and_then(Value::as_str);
            value.unwrap_or_default().to_owned()
        };
        let (statement, params) = match &self.kind {
            Kind::Execute => (text("sql"), Vec::new()),
            Kind::Catalog(statement, argument) => (
                (*statement).to_owned(),
                argument
                    .map(|a| Param::Text(Some(text(a))))
                    .into_iter()
                    .collect(),
            ),
        };
        let persistent = matches!(self.kind, Kind::Catalog(..));
        (self.source)
            .run((&statement, &params), (true, persistent), (&self.name, cx))
            .await
    }
}

fn decl(name: &str, description: String, schema: Value, scopes: &[String]) -> ToolDecl {
    let Value::Object(input_schema) = schema else {
        unreachable!("an object literal")
    };
    ToolDecl {
        name: name.to_owned(),
        title: None,
        description,
        input_schema,
        output_schema: None,
        scopes: scopes.to_vec(),
        confirm: false,
        read_only: Some(true),
        destructive: None,
        idempotent: None,
        open_world: Some(false),
        from_caller: BTreeMap::new(),
        cache_ttl: None,
        task: None,
        approval: None,
        ui: None,
        task_retry: 0,
    }
}

/// The generic tools `config` names.
pub(super) fn tools(
    config: &SqlSourceConfig,
    source: &Arc<Source>,
) -> anyhow::Result<Vec<DeclaredTool>> {
    let db = &config.name;
    let sqlite = config.is_sqlite();
    let dialect = if sqlite { "SQLite" } else { "PostgreSQL" };
    let string = |what: &str| {
        json!({"type": "object", "required": [what], "additionalProperties": false,
            "properties": {what: {"type": "string", "minLength": 1}}})
    };
    let mut wanted = Vec::new();
    if !config.execute_sql_tool.is_empty() {
        let about = format!(
            "Runs one read-only {dialect} query on the `{db}` database and returns its rows \
             (at most {} rows). Writes are refused by the database.",
            config.max_rows
        );
        wanted.push((
            &config.execute_sql_tool,
            about,
            string("sql"),
            Kind::Execute,
        ));
    }
    if !config.list_tables_tool.is_empty() {
        let about = format!("Lists the tables and views of the `{db}` database.");
        let schema = json!({"type": "object", "additionalProperties": false});
        let query = if sqlite { SQLITE_TABLES } else { PG_TABLES };
        wanted.push((
            &config.list_tables_tool,
            about,
            schema,
            Kind::Catalog(query, None),
        ));
    }
    if !config.describe_table_tool.is_empty() {
        let about = format!(
            "Lists the columns of a table of the `{db}` database: name, type, nullability, default."
        );
        let query = if sqlite { SQLITE_COLUMNS } else { PG_COLUMNS };
        let kind = Kind::Catalog(query, Some("table"));
        wanted.push((&config.describe_table_tool, about, string("table"), kind));
    }
    wanted
        .into_iter()
        .map(|(name, about, schema, kind)| {
            let runner = GenericRunner {
                name: name.clone(),
                source: source.clone(),
                kind,
            };
            let decl = decl(name, about, schema, &config.scopes);
            DeclaredTool::new(decl, defaults(), Box::new(runner))
        })
        .collect()
}
