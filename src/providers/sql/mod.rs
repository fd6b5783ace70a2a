//! `[[sources.sql]]`: a team's database as declared tools (issue 62). Each
//! declared statement is a [`Runner`] behind the declared-tool policies
//! (caller binding, schema, confirm, cache, scopes); the optional
//! `execute_sql`, `list_tables` and `describe_table` run under the same
//! read-only guard. The team's databases are not teamgate's store: only
//! this folder and `store/` use sqlx.

mod catalog;
mod engine;
mod members;
mod output;
mod values;

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::Value;

use self::{
    engine::{Db, Limits, Param},
    members::MemberPools,
};
use super::declared::{DeclaredTool, KindDefaults, Runner, text_result};
use crate::{
    config::{
        DatabaseUrl, SqlParameter, SqlSourceConfig, SqlType, TaskMode, member_slots, resolve_env,
    },
    protocol::{CallToolResponse, CallToolResult, JsonObject},
    registry::{CallContext, Slots},
};

/// Who connects: the source's one pool, or each member with their values.
enum Pools {
    Shared(Arc<Db>),
    Members(Box<MemberPools>),
}

/// One database, shared by every tool over it.
pub(super) struct Source {
    pools: Pools,
    limits: Limits,
    /// How long a call may take: waiting for a connection, then running.
    budget: Duration,
}

impl Source {
    async fn run(
        &self,
        (statement, params): (&str, &[Param]),
        (read_only, persistent): (bool, bool),
        (tool, cx): (&str, &CallContext),
    ) -> CallToolResult {
        let (db, used) = match &self.pools {
            Pools::Shared(db) => (db.clone(), Vec::new()),
            Pools::Members(members) => match members.pool(tool, cx).await {
                Ok(found) => found,
                Err(error) => return text_result(error.to_string(), true),
            },
        };
        // A member's own values are scrubbed like the configured secrets.
        let scrubber = cx.scrubber().with(used);
        let run = db.run((statement, params), read_only, persistent, self.limits);
        tokio::select! {
            result = run => match result {
                Ok(rows) => scrubber.scrub(output::result(rows)),
                Err(error) => text_result(scrubber.text(&error.to_string()), true),
            },
            () = cx.cancellation().cancelled() => text_result("cancelled", true),
        }
    }

    /// Whether results depend on the caller (their own connection).
    fn per_member(&self) -> bool {
        matches!(self.pools, Pools::Members(_))
    }

    async fn withheld(&self, tool: &str, cx: &CallContext) -> Option<CallToolResponse> {
        match &self.pools {
            Pools::Shared(_) => None,
            Pools::Members(members) => members.withheld(tool, cx).await,
        }
    }
}

/// The tools of `sources.sql[index]`; the URL's secrets added to `secrets`.
pub(super) fn declare(
    index: usize,
    config: &SqlSourceConfig,
    (slots, secrets): (&Slots, &mut Vec<String>),
) -> anyhow::Result<Vec<DeclaredTool>> {
    let key = format!("sources.sql[{index}].url");
    let pools = if member_slots(config.url.expose()).is_empty() {
        let url = resolve_env(config.url.expose(), &key, secrets)?;
        if !DatabaseUrl::new(url.clone()).is_supported() {
            anyhow::bail!("{key}: must be a postgres:// or sqlite: URL (MySQL is not supported)");
        }
        secrets.extend(DatabaseUrl::new(url.clone()).passwords());
        let db = Db::open(&url, config).map_err(|e| anyhow::anyhow!("{key}: {e}"))?;
        Pools::Shared(Arc::new(db))
    } else {
        Pools::Members(Box::new(MemberPools::new(config, &key, slots, secrets)?))
    };
    let source = Arc::new(Source {
        pools,
        limits: Limits {
            statement_timeout: config.statement_timeout,
            max_rows: config.max_rows,
            max_bytes: config.max_bytes,
        },
        budget: config.acquire_timeout + config.statement_timeout,
    });
    let mut tools = Vec::new();
    for tool in &config.tools {
        let runner = StatementRunner {
            name: tool.name.clone(),
            source: source.clone(),
            statement: tool.statement.clone(),
            parameters: tool.parameters.clone(),
            read_only: tool.read_only,
        };
        tools.push(DeclaredTool::new(
            tool.decl(),
            defaults(),
            Box::new(runner),
        )?);
    }
    tools.extend(catalog::tools(config, &source)?);
    Ok(tools)
}

fn defaults() -> KindDefaults {
    KindDefaults {
        open_world: false,
        output_schema: Some(output::output_schema()),
        // A report query may run for minutes.
        task: TaskMode::Optional,
    }
}

/// A declared statement, its arguments bound in placeholder order.
struct StatementRunner {
    name: String,
    source: Arc<Source>,
    statement: String,
    parameters: Vec<SqlParameter>,
    read_only: bool,
}

/// The argument of `parameter` as it is bound; absent or null is NULL.
fn param(parameter: &SqlParameter, arguments: &JsonObject) -> Param {
    let value = arguments.get(&parameter.name).filter(|v| !v.is_null());
    match parameter.kind {
        SqlType::String => Param::Text(value.map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })),
        SqlType::Integer => Param::Int(value.and_then(Value::as_i64)),
        SqlType::Number => Param::Float(value.and_then(Value::as_f64)),
        SqlType::Boolean => Param::Bool(value.and_then(Value::as_bool)),
    }
}

#[async_trait]
impl Runner for StatementRunner {
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
        let params: Vec<Param> = (self.parameters.iter())
            .map(|p| param(p, arguments))
            .collect();
        let statement = (&*self.statement, &*params);
        (self.source)
            .run(statement, (self.read_only, true), (&self.name, cx))
            .await
    }
}
