//! Search mode (issue 60 part 2). On an endpoint whose discovery is
//! `search`, `tools/list` gives the tools the operator pins (`always`) and
//! two meta-tools: `search_tools` ranks the tools the caller may call (its
//! scopes and the endpoint's toolset are applied before ranking, never
//! after) and returns their definitions; `call_tool` calls one of them with
//! every policy of a direct call, audited under the real tool's name. A
//! tool found by search can also be called directly by its name.

use std::{future::Future, pin::Pin, sync::LazyLock};

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use super::{McpHandler, access, caller_of};
use crate::{
    config::Discovery,
    protocol::{
        CallToolResponse, CallToolResult, ContentBlock, McpError, RequestContext, RoleServer, Tool,
    },
    registry::{Caller, Kind, Registry, apps},
};

pub(super) const SEARCH: &str = "search_tools";
pub(super) const CALL: &str = "call_tool";
/// Results `search_tools` gives unless asked for another number, and at most.
const DEFAULT_LIMIT: u64 = 5;
const MAX_LIMIT: u64 = 20;
/// The longest query taken; longer ones are refused, not cut.
const MAX_QUERY: usize = 1_000;

static META: LazyLock<[Tool; 2]> = LazyLock::new(|| {
    let tool = |value: Value| serde_json::from_value(value).expect("a meta-tool definition");
    [
        tool(json!({
            "name": SEARCH,
            "title": "Search tools",
            "description": "Finds the tools for a task among all the tools this server offers you. \
                Describe the task in plain words; the result lists the best matching tools with \
                their full definitions. Call one with call_tool (or directly by its name).",
            "inputSchema": {"type": "object", "properties": {
                "query": {"type": "string", "description": "What you want to do, in plain words."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                    "description": "How many tools to return (default 5)."}
            }, "required": ["query"]},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        })),
        tool(json!({
            "name": CALL,
            "title": "Call a tool",
            "description": "Calls a tool found with search_tools, by its name, with its arguments.",
            "inputSchema": {"type": "object", "properties": {
                "name": {"type": "string", "description": "The tool's name, as search_tools gave it."},
                "arguments": {"type": "object", "description": "The tool's arguments, as its inputSchema says."}
            }, "required": ["name"]}
        })),
    ]
});

type Called<'a> = Pin<Box<dyn Future<Output = Result<CallToolResponse, McpError>> + Send + 'a>>;

/// Whether `caller`'s endpoint is in search mode.
pub(super) fn searching(registry: &Registry, caller: &Caller) -> bool {
    (registry.discovery(caller.endpoint())).is_some_and(|d| d.discovery == Discovery::Search)
}

/// `tools/list` in search mode: the pinned tools the caller may use and the
/// meta-tools.
pub(super) fn listing(registry: &Registry, caller: &Caller) -> Vec<Tool> {
    let pinned = registry.discovery(caller.endpoint());
    let mut tools = access::visible(caller, Kind::Tool, registry, registry.tools(), |t| &t.name);
    tools.retain(|t| pinned.is_some_and(|p| p.always_listed(&t.name)));
    tools.retain(|t| t.name != SEARCH && t.name != CALL);
    tools.extend(META.iter().cloned());
    tools
}

/// A meta-tool's definition, in search mode.
pub(super) fn meta_tool(name: &str) -> Option<Tool> {
    META.iter().find(|t| t.name == name).cloned()
}

impl McpHandler {
    /// The meta-tool `request` names, answered; `None` for any other tool
    /// or outside search mode.
    pub(super) fn meta_call<'a>(
        &'a self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Option<Called<'a>> {
        let registry = self.shared.registry();
        let caller = caller_of(context);
        if !searching(&registry, &caller) {
            return None;
        }
        let arguments = request.arguments.clone().unwrap_or_default();
        match &*request.name {
            SEARCH => {
                let context = context.clone();
                Some(Box::pin(async move {
                    let audit = self.audit(&context, "tools/call", SEARCH, Some(&arguments))?;
                    let result = search(&registry, &caller, &arguments);
                    if let Some(audit) = audit {
                        audit.finish(&result).await;
                    }
                    result
                }))
            }
            CALL => {
                let name = arguments
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if name.is_empty() || name == SEARCH || name == CALL {
                    let why = "call_tool needs the name of a tool search_tools found";
                    return Some(Box::pin(
                        async move { Err(McpError::invalid_params(why, None)) },
                    ));
                }
                let app_only = (registry.tool(name)).is_some_and(|(_, t)| !apps::model_visible(t));
                if app_only {
                    let why = format!(
                        "{name} is for its app to call (MCP Apps visibility [\"app\"]), not through call_tool"
                    );
                    return Some(Box::pin(
                        async move { Err(McpError::invalid_params(why, None)) },
                    ));
                }
                let mut call = request.clone();
                call.name = name.to_owned().into();
                call.arguments = match arguments.get("arguments") {
                    None | Some(Value::Null) => None,
                    Some(Value::Object(object)) => Some(object.clone()),
                    Some(_) => {
                        let why = "call_tool's arguments must be an object";
                        return Some(Box::pin(
                            async move { Err(McpError::invalid_params(why, None)) },
                        ));
                    }
                };
                // The real call, with every policy of a direct one.
                Some(Box::pin(self.call_tool_in(call, context.clone())))
            }
            _ => None,
        }
    }
}

/// `search_tools`: the best matches among what the caller may call here.
fn search(
    registry: &Registry,
    caller: &Caller,
    arguments: &serde_json::Map<String, Value>,
) -> Result<CallToolResponse, McpError> {
    let query = (arguments.get("query").and_then(Value::as_str))
        .ok_or_else(|| McpError::invalid_params("search_tools needs a query (a string)", None))?;
    if query.len() > MAX_QUERY {
        let why = format!("the query is longer than {MAX_QUERY} bytes");
        return Err(McpError::invalid_params(why, None));
    }
    let limit = match arguments.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(limit) => limit
            .as_u64()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| McpError::invalid_params("limit must be 1 to 20", None))?,
    };
    // An app-only tool (MCP Apps) is the host's app's to call, not the model's.
    let for_model = |name: &str| {
        registry
            .tool(name)
            .is_some_and(|(_, t)| apps::model_visible(t))
    };
    let permitted = |name: &str| {
        name != SEARCH
            && name != CALL
            && for_model(name)
            && access::allowed(caller, registry, Kind::Tool, name)
    };
    let names = (registry.tool_index())
        .map(|index| index.search(query, limit as usize, permitted))
        .unwrap_or_default();
    let found: Vec<&Tool> = (names.iter())
        .filter_map(|name| Some(registry.tool(name)?.1))
        .collect();
    let text = if found.is_empty() {
        format!("No tool matches \"{query}\".")
    } else {
        (found.iter())
            .map(|t| {
                let about = t.description.as_deref().unwrap_or_default();
                let about = about.lines().next().unwrap_or_default();
                format!("- {}: {about}", t.name)
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let tools: Vec<Value> = (found.iter())
        .map(|t| {
            json!({
                "name": t.name,
                "title": t.title,
                "description": t.description,
                "inputSchema": t.input_schema,
                "annotations": t.annotations,
            })
        })
        .collect();
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({ "tools": tools }));
    Ok(result.into())
}
