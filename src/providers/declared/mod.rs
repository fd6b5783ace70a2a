//! What every declared tool does whatever its kind, before and after the
//! kind-specific [`Runner`]: fill caller-bound arguments, validate the
//! arguments against the schema, ask for confirmation, serve and fill the
//! result cache. HTTP and command tools only supply a `Runner`.

mod approval;
mod cache;
mod confirm;
mod policies;
pub mod template;

pub use policies::WithPolicies;

use std::{collections::HashMap, sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use self::cache::ResultCache;
use crate::{
    config::{TaskMode, ToolDecl},
    protocol::{CallToolResponse, CallToolResult, JsonObject, McpError, Tool},
    providers::{ProviderError, wire},
    registry::{CallContext, ToolProvider},
};

/// The kind-specific part of a declared tool: given valid arguments, run.
#[async_trait]
pub trait Runner: Send + Sync {
    async fn run(&self, arguments: &JsonObject, cx: &CallContext) -> CallToolResult;
    /// The run's own time limit, which the server's tool timeout must not cut short.
    fn timeout(&self) -> Duration;
    /// Whether the result depends on who calls (a member's own credential),
    /// so a cached result is kept per caller.
    fn per_caller(&self) -> bool {
        false
    }
    /// What the call answers instead of running, when the runner needs
    /// something of the member first (a credential they have not set).
    async fn withheld(&self, _cx: &CallContext) -> Option<CallToolResponse> {
        None
    }
}

/// Time a run may take beyond its own limit: killing and draining a
/// process, reading a body that arrived just in time.
const RUN_SLACK: Duration = Duration::from_secs(10);
/// Time a user gets to answer a confirmation on a 2025-era session.
pub(super) const CONFIRM_WAIT: Duration = Duration::from_secs(300);

/// Annotation defaults of a tool kind, used where the declaration is silent.
pub struct KindDefaults {
    pub open_world: bool,
    pub output_schema: Option<Value>,
    /// Whether calls may become tasks when the tool does not say.
    pub task: TaskMode,
}

pub struct DeclaredTool {
    decl: ToolDecl,
    tool: Tool,
    validator: jsonschema::Validator,
    runner: Box<dyn Runner>,
    task: TaskMode,
}

impl DeclaredTool {
    pub fn new(
        decl: ToolDecl,
        defaults: KindDefaults,
        runner: Box<dyn Runner>,
    ) -> anyhow::Result<Self> {
        let validator = jsonschema::validator_for(&Value::Object(decl.input_schema.clone()))
            .map_err(|e| anyhow::anyhow!("tool `{}`: input_schema: {e}", decl.name))?;
        let task = match decl.task.unwrap_or(defaults.task) {
            // A call waiting for a person is what a task is for, and only a
            // task is retried.
            TaskMode::Forbidden
                if (decl.approval.is_some() || decl.task_retry > 0) && decl.task.is_none() =>
            {
                TaskMode::Optional
            }
            task => task,
        };
        let tool = wire(describe(&decl, defaults));
        Ok(Self {
            decl,
            tool,
            validator,
            runner,
            task,
        })
    }
}

/// Removes the caller-bound arguments from a schema clients see.
pub(super) fn hide_bound(schema: &mut Map<String, Value>, decl: &ToolDecl) {
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for bound in decl.from_caller.keys() {
            properties.remove(bound);
        }
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|r| !r.as_str().is_some_and(|r| decl.from_caller.contains_key(r)));
    }
}

/// The tool as clients see it: caller-bound arguments hidden, hints filled.
fn describe(decl: &ToolDecl, defaults: KindDefaults) -> Value {
    let mut schema = decl.input_schema.clone();
    hide_bound(&mut schema, decl);
    let read_only = decl.read_only.unwrap_or(false);
    let mut tool = json!({
        "name": decl.name,
        "description": decl.description,
        "inputSchema": schema,
        "annotations": {
            "readOnlyHint": read_only,
            "destructiveHint": decl.destructive.unwrap_or(!read_only),
            "idempotentHint": decl.idempotent.unwrap_or(read_only),
            "openWorldHint": decl.open_world.unwrap_or(defaults.open_world),
        },
    });
    if let Some(title) = &decl.title {
        tool["title"] = title.clone().into();
        tool["annotations"]["title"] = title.clone().into();
    }
    let output = decl
        .output_schema
        .clone()
        .map(Value::Object)
        .or(defaults.output_schema);
    if let Some(output) = output {
        tool["outputSchema"] = output;
    }
    if let Some(ui) = &decl.ui {
        tool["_meta"] = json!({ "ui": ui.meta() });
    }
    tool
}

pub use crate::protocol::text_result;

/// A result with `structuredContent` and its JSON text, as the spec asks
/// for tools with an `outputSchema`.
pub fn structured_result(value: Value, is_error: bool) -> CallToolResult {
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    wire(json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": value,
        "isError": is_error,
    }))
}

/// Every declared tool of one configuration, behind one `ToolProvider`.
pub struct DeclaredTools {
    tools: Vec<DeclaredTool>,
    index: HashMap<String, usize>,
    cache: ResultCache,
}

impl DeclaredTools {
    pub fn new(tools: Vec<DeclaredTool>, cache_max_entries: u64) -> Arc<Self> {
        let index = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.decl.name.clone(), i))
            .collect();
        Arc::new(Self {
            tools,
            index,
            cache: ResultCache::new(cache_max_entries),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// Fills the caller-bound arguments, replacing anything the client sent.
pub(super) fn bind_caller(
    decl: &ToolDecl,
    arguments: &mut Map<String, Value>,
    cx: &CallContext,
) -> Result<(), ProviderError> {
    let caller = cx.caller();
    for (argument, source) in &decl.from_caller {
        let value = match source.strip_prefix("claim:") {
            None => Value::from(caller.user.clone()),
            Some(claim) => {
                (caller.claims.get(claim).cloned()).ok_or_else(|| ProviderError::NoClaim {
                    tool: decl.name.clone(),
                    claim: claim.to_owned(),
                })?
            }
        };
        arguments.insert(argument.clone(), value);
    }
    Ok(())
}

/// Schema errors as one message a model can act on.
fn validation_errors(tool: &DeclaredTool, arguments: &Value) -> Option<String> {
    let errors: Vec<String> = tool
        .validator
        .iter_errors(arguments)
        .take(5)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    (!errors.is_empty()).then(|| {
        format!(
            "Invalid arguments for `{}`: {}. Fix them and call again; the input schema is in tools/list.",
            tool.decl.name,
            errors.join("; ")
        )
    })
}

#[async_trait]
impl ToolProvider for DeclaredTools {
    fn tools(&self) -> Vec<Tool> {
        self.tools.iter().map(|t| t.tool.clone()).collect()
    }

    fn required_scopes(&self, name: &str) -> Option<Vec<String>> {
        let tool = &self.tools[*self.index.get(name)?];
        super::declared_scopes(&tool.decl.scopes)
    }

    fn task_mode(&self, name: &str) -> TaskMode {
        self.index
            .get(name)
            .map_or(TaskMode::Forbidden, |i| self.tools[*i].task)
    }

    fn task_retry(&self, name: &str) -> u32 {
        self.index
            .get(name)
            .map_or(0, |i| self.tools[*i].decl.task_retry)
    }

    /// Declared tools keep their own limits (a test command may run for
    /// ten minutes), plus the time to ask the user when they confirm or
    /// must set a credential, and to wait for an approver.
    fn timeout(&self, name: &str) -> Option<Duration> {
        let tool = &self.tools[*self.index.get(name)?];
        // A member may be sent to the portal to set a credential first.
        let confirm = if tool.decl.confirm || tool.runner.per_caller() {
            CONFIRM_WAIT
        } else {
            Duration::ZERO
        };
        let approval = tool
            .decl
            .approval
            .as_ref()
            .map_or(Duration::ZERO, |a| a.timeout);
        Some(tool.runner.timeout() + RUN_SLACK + confirm + approval)
    }

    async fn call(
        &self,
        name: &str,
        mut arguments: JsonObject,
        cx: &CallContext,
    ) -> Result<CallToolResponse, McpError> {
        let Some(tool) = self.index.get(name).map(|i| &self.tools[*i]) else {
            return Err(McpError::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        };
        if let Err(error) = bind_caller(&tool.decl, &mut arguments, cx) {
            return Ok(text_result(error.to_string(), true).into());
        }
        let value = Value::Object(arguments);
        if let Some(message) = validation_errors(tool, &value) {
            return Ok(text_result(message, true).into());
        }
        let Value::Object(arguments) = value else {
            unreachable!("built from an object above")
        };
        if let Some(answer) = confirm::withheld(&tool.decl, &arguments, cx).await {
            return Ok(answer);
        }
        if let Some(answer) = tool.runner.withheld(cx).await {
            return Ok(answer);
        }
        if let Some(answer) = approval::withheld(&tool.decl, &arguments, cx).await {
            return Ok(answer);
        }
        let run = async { Ok(tool.runner.run(&arguments, cx).await.into()) };
        let per_caller = tool.runner.per_caller();
        (self.cache)
            .get_or_run(&tool.decl, &arguments, (cx, per_caller), run)
            .await
    }
}
