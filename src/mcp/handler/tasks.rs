//! The handler's side of durable tasks: whether a tools/call becomes one,
//! starting it, and `tasks/get`, `tasks/update`, `tasks/cancel` for the
//! caller's own tasks (the store and the runs are `mcp/tasks/`).

use std::{sync::Arc, task::Poll};

use futures::future::BoxFuture;

use rmcp::model::{
    CancelTaskParams, ClientCapabilities, CreateTaskResult, GetTaskParams, GetTaskResult,
    JsonObject, UpdateTaskParams,
};
use tokio_util::sync::CancellationToken;

use super::{McpHandler, caller_of, within};
use crate::{
    config::TaskMode,
    mcp::{
        CallToolResponse, CallToolResult, McpError, RequestContext, RoleServer,
        calls::Audit,
        tasks::{NewTask, StoredCall, TaskEnd, Tasks},
    },
    protocol::is_modern,
    registry::{CallContext, Registry, upstream_task::UpstreamTaskOp},
};

/// The run of a task's call: `limit` from the run's start (the request's
/// deadline bounds only its answer, the handle, and the run outlives it on
/// purpose); a tool over it is stopped and says so.
pub(super) fn task_call(
    registry: Arc<Registry>,
    name: String,
    arguments: JsonObject,
    cx: CallContext,
    limit: std::time::Duration,
) -> BoxFuture<'static, TaskEnd> {
    Box::pin(async move {
        match within(limit, registry.call_tool(&name, arguments, &cx)).await {
            Some(Some(ended)) => ended,
            Some(None) => Err(McpError::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            )),
            None => {
                cx.cancellation().cancel();
                let message =
                    format!("The tool {name} did not finish within {limit:?} and was stopped.");
                Ok(CallToolResult::error(vec![rmcp::model::ContentBlock::text(message)]).into())
            }
        }
    })
}

fn missing_capability() -> McpError {
    McpError::missing_required_client_capability(
        ClientCapabilities::builder().enable_tasks().build(),
    )
}

impl McpHandler {
    /// The tasks runtime when this call becomes a task: the tool allows it
    /// and a 2026-07-28 request declared the tasks extension. A tool that
    /// requires a task, called without the extension, is `-32021`.
    ///
    /// A 2025-era session never gets one, whatever its `initialize`
    /// declared: the extension's result is a 2026-07-28 shape that such a
    /// client cannot read (the Inspector in its default mode declares the
    /// extension, then reports "no structured content"), and the shape its
    /// own revision defines (2025-11-25 `params.task`) is not served.
    pub(super) fn as_task(
        &self,
        context: &RequestContext<RoleServer>,
        registry: &Registry,
        tool: &str,
    ) -> Result<Option<Arc<Tasks>>, McpError> {
        let mode = registry.task_mode(tool);
        let declared = is_modern(context)
            && context
                .client_capabilities()
                .is_some_and(|caps| caps.supports_tasks());
        match (&self.shared.tasks, mode, declared) {
            (_, TaskMode::Forbidden, _) => Ok(None),
            (Some(tasks), _, true) => Ok(Some(tasks.clone())),
            (_, TaskMode::Required, _) => Err(missing_capability()),
            _ => Ok(None),
        }
    }

    /// Creates the task (durably, before answering) and runs the call in
    /// the background. A call that asks for input before it runs (`confirm`,
    /// a multi-round-trip tool) gets that answer instead, and no task: the
    /// approval is settled when the task is created.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn call_as_task(
        &self,
        tasks: Arc<Tasks>,
        registry: Arc<Registry>,
        name: String,
        arguments: JsonObject,
        cx: CallContext,
        audit: Option<Audit>,
        limit: std::time::Duration,
    ) -> Result<CallToolResponse, McpError> {
        let owner = cx.caller().user.clone();
        let retries = (registry.tool(&name)).map_or(0, |(provider, _)| provider.task_retry(&name));
        let retry = (retries > 0).then(|| {
            let meta = serde_json::to_value(cx.meta()).ok();
            let meta = match meta {
                Some(serde_json::Value::Object(meta)) => meta,
                _ => JsonObject::new(),
            };
            StoredCall::new(cx.caller(), &arguments, meta, retries)
                .with_input(cx.mrtr().responses().cloned())
        });
        let created = tasks
            .create(NewTask {
                owner: &owner,
                tool: &name,
                retry,
            })
            .await;
        let (row, seed) = match created {
            Ok(created) => created,
            Err(error) => {
                if let Some(audit) = audit {
                    audit.finish::<CallToolResponse>(&Err(error.clone())).await;
                }
                return Err(error);
            }
        };
        let cancel = CancellationToken::new();
        let cx = cx.in_task(tasks.input(&row.id), cancel.clone());
        let mut call = task_call(registry, name, arguments, cx, limit);
        let call: BoxFuture<'static, TaskEnd> = match futures::poll!(call.as_mut()) {
            Poll::Ready(Ok(CallToolResponse::InputRequired(asked))) => {
                tasks.forget(&row.id).await;
                let answer = Ok(CallToolResponse::InputRequired(asked));
                if let Some(audit) = audit {
                    audit.finish(&answer).await;
                }
                return answer;
            }
            // Finished at once: still a task, as the client was told to expect.
            Poll::Ready(ended) => Box::pin(std::future::ready(ended)),
            Poll::Pending => call,
        };
        let answer = Ok(CallToolResponse::Task(seed));
        let end = audit.as_ref().map(Audit::sequel);
        if let Some(audit) = audit {
            audit.finish(&answer).await;
        }
        tasks.spawn(row.id, call, cancel, end);
        answer
    }

    fn tasks(&self) -> Result<&Arc<Tasks>, McpError> {
        self.shared
            .tasks
            .as_ref()
            .ok_or_else(McpError::method_not_found::<rmcp::model::GetTaskMethod>)
    }

    pub(super) async fn get_task_in(
        &self,
        request: GetTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let owner = caller_of(context);
        let tasks = self.tasks()?;
        let row = tasks.row(&request.task_id, &owner.user).await?;
        if row.upstream_task.is_none() {
            return tasks.get(&request.task_id, &owner.user).await;
        }
        let (registry, cx) = self.upstream_context(context, &row.tool);
        tasks.get_upstream(row, &registry, &cx).await
    }

    pub(super) async fn update_task_in(
        &self,
        request: UpdateTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let owner = caller_of(context);
        let tasks = self.tasks()?;
        let row = tasks.row(&request.task_id, &owner.user).await?;
        if row.upstream_task.is_none() {
            return (tasks.update(&request.task_id, &owner.user, request.input_responses)).await;
        }
        let (registry, cx) = self.upstream_context(context, &row.tool);
        let answers = request.input_responses;
        tasks.update_upstream(&row, answers, (&registry, &cx)).await
    }

    pub(super) async fn cancel_task_in(
        &self,
        request: CancelTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let owner = caller_of(context);
        let tasks = self.tasks()?;
        let row = tasks.row(&request.task_id, &owner.user).await?;
        if row.upstream_task.is_none() {
            return tasks.cancel(&request.task_id, &owner.user).await;
        }
        let (registry, cx) = self.upstream_context(context, &row.tool);
        tasks.cancel_upstream(&row, (&registry, &cx)).await
    }

    /// The registry serving now and a call context of the member's, for a
    /// request about the upstream task the tool `tool` made.
    fn upstream_context(
        &self,
        context: &RequestContext<RoleServer>,
        tool: &str,
    ) -> (Arc<Registry>, CallContext) {
        let registry = self.shared.registry();
        let cx = self.call_context(context.clone(), "tasks/get", tool, None, None);
        let cx = cx.with_scrubber(registry.scrubber().clone());
        (registry, cx)
    }

    /// An upstream's own task, answered to a member who takes task
    /// handles: kept as a task of teamgate's, under its own id (the
    /// upstream's is never passed on). Refused: cancelled upstream.
    pub(super) async fn adopt_upstream_task(
        &self,
        registry: &Registry,
        name: &str,
        seed: CreateTaskResult,
        cx: &CallContext,
    ) -> Result<CallToolResponse, McpError> {
        let (Some(tasks), Some(upstream)) = (&self.shared.tasks, registry.origin(name)) else {
            return Err(McpError::internal_error(
                "an upstream task could not be kept",
                None,
            ));
        };
        let upstream_id = seed.task.task_id.clone();
        let owner = cx.caller().user.clone();
        match tasks.adopt((&owner, name), upstream, seed).await {
            Ok(created) => Ok(CallToolResponse::Task(created)),
            Err(error) => {
                let op = UpstreamTaskOp::Cancel(upstream_id);
                let _ = registry.upstream_task(name, op, cx).await;
                Err(error)
            }
        }
    }
}
