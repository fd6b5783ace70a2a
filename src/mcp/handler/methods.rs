//! The bodies of the handler's largest methods: `tools/call`,
//! `prompts/get`, `resources/read` and `completion/complete`.

use std::collections::HashMap;

use rmcp::model::{
    CallToolRequestParams, CompleteRequestParams, CompleteResult, CompletionInfo,
    GetPromptRequestParams, ReadResourceRequestParams,
};
use serde_json::Value;

use super::{McpHandler, access, caller_of, facts_of, within};
use crate::{mcp::calls::Audit, protocol::codes::SERVER_BUSY};
use crate::{
    protocol::{
        CallToolResponse, CallToolResult, GetPromptResponse, McpError, ReadResourceResponse,
        RequestContext, RoleServer, is_modern,
    },
    registry::Kind,
};

impl McpHandler {
    pub(super) fn audit(
        &self,
        context: &RequestContext<RoleServer>,
        method: &str,
        target: &str,
        arguments: Option<&serde_json::Map<String, Value>>,
    ) -> Result<Option<Audit>, McpError> {
        let Some(sink) = self.shared.audit.as_ref() else {
            return Ok(None);
        };
        // Back-pressure: a call starts only if its record is sure to find
        // room, so a stalled database sheds calls instead of losing records.
        if !sink.auditor.has_room() {
            return Err(McpError::new(
                rmcp::model::ErrorCode(SERVER_BUSY),
                "the audit trail is catching up; retry shortly",
                None,
            ));
        }
        Ok(Some(Audit::begin(
            sink,
            context,
            &caller_of(context),
            method,
            target,
            arguments,
        )))
    }

    pub(super) async fn get_prompt_in(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let registry = self.shared.registry();
        let what = (Kind::Prompt, "prompts/get", request.name.as_str());
        let arguments = request.arguments.as_ref();
        access::authorize(
            self.shared.audit.as_ref(),
            &context,
            &registry,
            what,
            arguments,
        )
        .await?;
        let (Some(provider), Some(prompt)) = (
            registry.prompt(&request.name),
            registry.prompts().iter().find(|p| p.name == request.name),
        ) else {
            return Err(McpError::invalid_params(
                format!("Unknown prompt: {}", request.name),
                None,
            ));
        };
        let arguments: HashMap<String, String> = request
            .arguments
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => (k, s),
                other => (k, other.to_string()),
            })
            .collect();
        let missing: Vec<&str> = prompt
            .arguments
            .iter()
            .flatten()
            .filter(|a| a.required == Some(true) && !arguments.contains_key(&a.name))
            .map(|a| a.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(McpError::invalid_params(
                format!(
                    "prompt `{}` needs the argument(s): {}",
                    request.name,
                    missing.join(", ")
                ),
                None,
            ));
        }
        let modern = is_modern(&context);
        let args_object = arguments
            .iter()
            .map(|(name, value)| (name.clone(), Value::String(value.clone())))
            .collect();
        let audit = (self.audit(&context, "prompts/get", &request.name, Some(&args_object))?)
            .map(|audit| audit.served_by(provider.origin()));
        let cx = self.call_context(
            context,
            "prompts/get",
            &request.name,
            request.input_responses,
            request.request_state,
        );
        let result = provider.get(&request.name, arguments, &cx).await;
        if let Some(audit) = audit {
            audit.finish(&result).await;
        }
        Ok(self.finish(modern, result?))
    }

    pub(super) async fn call_tool_in(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // In search mode, the meta-tools (`catalog.rs`).
        if let Some(meta) = self.meta_call(&request, &context) {
            return meta.await;
        }
        let registry = self.shared.registry();
        let audit_sink = self.shared.audit.as_ref();
        let what = (Kind::Tool, "tools/call", &*request.name);
        access::authorize(
            audit_sink,
            &context,
            &registry,
            what,
            request.arguments.as_ref(),
        )
        .await?;
        let unknown = || McpError::invalid_params(format!("Unknown tool: {}", request.name), None);
        if registry.tool(&request.name).is_none() {
            // Probing for names is worth a record too.
            let refused = Err(unknown());
            if let Some(audit) = self.audit(&context, "tools/call", &request.name, None)? {
                audit
                    .unknown_target()
                    .finish::<CallToolResponse>(&refused)
                    .await;
            }
            return refused;
        }
        let as_task = self.as_task(&context, &registry, &request.name)?;
        access::within_quota(
            audit_sink,
            self.shared.tool_quota.as_ref(),
            &context,
            &request.name,
            request.arguments.as_ref(),
        )
        .await?;
        let modern = is_modern(&context);
        let arguments = request.arguments.unwrap_or_default();
        let audit = self
            .audit(&context, "tools/call", &request.name, Some(&arguments))?
            .map(|audit| audit.served_by(registry.origin(&request.name)));
        let own = registry
            .tool(&request.name)
            .and_then(|(provider, _)| provider.timeout(&request.name));
        let limit = own.unwrap_or(self.shared.tool_timeout);
        let deadline = facts_of(&context).and_then(|facts| facts.deadline_for(own));
        // A member declaring tasks whose call an upstream may make its
        // own task takes that task as the answer, kept as teamgate's.
        let handles = as_task.is_none()
            && self.shared.tasks.is_some()
            && modern
            && (context.client_capabilities()).is_some_and(|caps| caps.supports_tasks())
            && registry.passes_tasks(&request.name);
        let cx = self
            .call_context(
                context,
                "tools/call",
                &request.name,
                request.input_responses,
                request.request_state,
            )
            .with_scrubber(registry.scrubber().clone());
        let cx = if handles { cx.with_task_handles() } else { cx };
        let audit = audit.map(|audit| audit.credential(cx.credential()).guardrails(cx.fired()));
        if let Some(tasks) = as_task {
            // Not the request's deadline: a task runs past the request on
            // purpose (its answer is the handle, given at once), so the
            // run gets its whole `limit` from when it starts.
            let name = request.name.to_string();
            let answer = self
                .call_as_task(tasks, registry, name, arguments, cx, audit, limit)
                .await;
            return answer.map(|response| self.finish(modern, response));
        }
        // Ends by the request's deadline, the time already spent included;
        // without one (stdio) `limit` from now.
        let left = deadline.map_or(limit, |by| {
            by.saturating_duration_since(std::time::Instant::now())
        });
        let call = registry.call_tool(&request.name, arguments, &cx);
        let result = match within(left, call).await {
            Some(result) => result.unwrap_or_else(|| Err(unknown())),
            None => {
                // Stop whatever the tool started (processes, requests).
                cx.cancellation().cancel();
                let message = format!(
                    "The tool {} did not finish within {limit:?} and was stopped.",
                    request.name
                );
                Ok(CallToolResult::error(vec![rmcp::model::ContentBlock::text(message)]).into())
            }
        };
        let result = match result {
            Ok(CallToolResponse::Task(seed)) => {
                (self.adopt_upstream_task(&registry, &request.name, seed, &cx)).await
            }
            other => other,
        };
        if let Some(audit) = audit {
            audit.finish(&result).await;
        }
        Ok(self.finish(modern, result?))
    }

    pub(super) async fn read_resource_in(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let registry = self.shared.registry();
        let what = (Kind::Resource, "resources/read", request.uri.as_str());
        access::authorize(self.shared.audit.as_ref(), &context, &registry, what, None).await?;
        let Some(provider) = registry.resource_owner(&request.uri) else {
            // rmcp turns -32002 into -32602 for 2026-07-28 clients.
            let refused = Err(McpError::resource_not_found(
                "Resource not found",
                Some(serde_json::json!({ "uri": request.uri })),
            ));
            // A URI no provider owns is audited as refused: probing shows.
            if let Some(audit) = self.audit(&context, "resources/read", &request.uri, None)? {
                (audit.unknown_target())
                    .finish::<ReadResourceResponse>(&refused)
                    .await;
            }
            return refused;
        };
        let modern = is_modern(&context);
        let audit = (self.audit(&context, "resources/read", &request.uri, None)?)
            .map(|audit| audit.served_by(provider.origin()));
        let cx = self.call_context(
            context,
            "resources/read",
            &request.uri,
            request.input_responses,
            request.request_state,
        );
        let result = provider.read(&request.uri, &cx).await;
        if let Some(audit) = audit {
            audit.finish(&result).await;
        }
        Ok(self.finish(modern, result?))
    }

    pub(super) async fn complete_in(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let registry = self.shared.registry();
        let mut values = access::completions(&caller_of(&context), &registry, &request).await?;
        let total = values.len();
        values.truncate(CompletionInfo::MAX_VALUES);
        let mut completion =
            CompletionInfo::new(values).map_err(|e| McpError::internal_error(e, None))?;
        completion.total = Some(total as u32);
        completion.has_more = Some(total > CompletionInfo::MAX_VALUES);
        Ok(self.finish(is_modern(&context), CompleteResult::new(completion)))
    }
}
