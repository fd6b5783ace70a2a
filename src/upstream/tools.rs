//! An upstream's tools as the registry offers them: filtered by the
//! configured globs and renamed with the prefix; each call forwarded with
//! teamgate's timeout and the member's cancellation, its progress and its
//! requests to the client relayed to that member only (`forward.rs`).

use std::sync::Arc;

use async_trait::async_trait;
use globset::{Glob, GlobSet, GlobSetBuilder};
use rmcp::{
    model::{CallToolRequest, CallToolRequestParams, ClientRequest, ServerResult},
    service::ServiceError,
};

use super::{
    forward::{Forward, Outcome},
    link::{Link, Status},
};
use crate::{
    config::OnUnavailable,
    protocol::{CallToolResponse, CallToolResult, JsonObject, McpError, Tool},
    registry::{CallContext, ToolProvider},
};

pub(super) struct UpstreamTools {
    link: Arc<Link>,
    include: GlobSet,
    exclude: GlobSet,
}

impl UpstreamTools {
    pub(super) fn new(link: Arc<Link>) -> anyhow::Result<Self> {
        let tools = &link.config.tools;
        Ok(Self {
            include: globs(&tools.include)?,
            exclude: globs(&tools.exclude)?,
            link,
        })
    }

    fn offered(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.is_match(name)) && !self.exclude.is_match(name)
    }

    /// The upstream's own name of the exposed tool `name`.
    fn original<'a>(&self, name: &'a str) -> Option<&'a str> {
        let config = &self.link.config;
        let prefix_len = config.exposed("").len();
        name.get(prefix_len..)
            .filter(|_| name.starts_with(&config.exposed("")))
    }

    fn unavailable(&self, why: &str) -> CallToolResponse {
        let name = &self.link.config.name;
        tool_error(format!(
            "the upstream server {name} is unavailable ({why}); try again shortly"
        ))
    }
}

fn globs(patterns: &[String]) -> anyhow::Result<GlobSet> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        set.add(Glob::new(pattern)?);
    }
    Ok(set.build()?)
}

fn tool_error(text: String) -> CallToolResponse {
    let result: CallToolResult = serde_json::from_value(serde_json::json!({
        "content": [{"type": "text", "text": text}],
        "isError": true,
    }))
    .expect("a text tool result");
    CallToolResponse::Complete(result)
}

#[async_trait]
impl ToolProvider for UpstreamTools {
    fn tools(&self) -> Vec<Tool> {
        let current = self.link.current.lock().expect("upstream state lock");
        let listed =
            current.status == Status::Up || self.link.config.on_unavailable == OnUnavailable::Error;
        if !listed {
            return Vec::new();
        }
        current
            .tools
            .iter()
            .filter(|tool| self.offered(&tool.name))
            .map(|tool| {
                let mut tool = tool.clone();
                tool.name = self.link.config.exposed(&tool.name).into();
                tool
            })
            .collect()
    }

    async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
        cx: &CallContext,
    ) -> Result<CallToolResponse, McpError> {
        let Some(original) = self.original(name).filter(|n| self.offered(n)) else {
            return Err(McpError::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        };
        // A 2026-07-28 retry resumes the call it parked (see forward.rs).
        let forward = match Forward::resume(&self.link, cx)? {
            Some(forward) => forward,
            None => {
                let peer = {
                    let current = self.link.current.lock().expect("upstream state lock");
                    match (&current.peer, current.status) {
                        (Some(peer), Status::Up) => peer.clone(),
                        _ => return Ok(self.unavailable(current.status.label())),
                    }
                };
                let params =
                    CallToolRequestParams::new(original.to_owned()).with_arguments(arguments);
                let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
                match Forward::start(&self.link, &peer, request, cx).await {
                    Ok(forward) => forward,
                    Err(error) => return Ok(self.unavailable(&error.to_string())),
                }
            }
        };
        let result = match forward.run(cx).await {
            Outcome::Done(result) => *result,
            Outcome::Input(input_required) => return Ok(input_required.into()),
            Outcome::Cancelled => return Err(McpError::internal_error("cancelled", None)),
        };
        match result {
            Ok(Ok(ServerResult::CallToolResult(result))) => Ok(CallToolResponse::Complete(result)),
            Ok(Ok(_)) => Ok(tool_error(format!(
                "the upstream server {} answered the call with something other than a tool result",
                self.link.config.name
            ))),
            Ok(Err(ServiceError::McpError(error))) => Err(error),
            Ok(Err(error)) => Ok(self.unavailable(&error.to_string())),
            Err(_) => Ok(self.unavailable("the connection closed")),
        }
    }

    fn required_scopes(&self, _name: &str) -> Option<Vec<String>> {
        let scopes = &self.link.config.scopes;
        (!scopes.is_empty()).then(|| scopes.clone())
    }

    fn timeout(&self, _name: &str) -> Option<std::time::Duration> {
        Some(self.link.config.timeout)
    }
}
