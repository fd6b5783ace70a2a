//! An upstream's own task behind a member's task (issue 66 part 2): what
//! the engine may ask of it through the tool that made it, and the answer
//! passed back under the same rules as a call's result: configured secrets
//! scrubbed, result guardrails applied to a completed task's result.

use super::{CallContext, Registry};
use crate::protocol::{
    CallToolResponse, CallToolResult, GetTaskResult, InputResponses, McpError, TaskPayload,
};

/// What the engine asks of an upstream task, by the upstream's id.
#[derive(Debug, Clone)]
pub enum UpstreamTaskOp {
    Get(String),
    Update(String, InputResponses),
    Cancel(String),
}

/// The upstream's answer: the task (`Get`), or its acknowledgement.
#[derive(Debug, Clone)]
pub enum UpstreamTaskReply {
    Task(Box<GetTaskResult>),
    Ack,
}

/// The tasks extension's answer for a task the caller cannot see.
pub fn not_found() -> McpError {
    McpError::invalid_params("Failed to retrieve task: Task not found", None)
}

impl Registry {
    /// Whether a call of the tool `name` may come back as its upstream's
    /// own task, reachable from any replica.
    pub fn passes_tasks(&self, name: &str) -> bool {
        self.tool(name).is_some_and(|(p, _)| p.passes_tasks(name))
    }

    /// `op` on the upstream task the tool `name` made, for the caller of
    /// `cx`. A completed task's result passes the result guardrails and the
    /// scrubber, a failed one's error the scrubber, as a call's would.
    pub async fn upstream_task(
        &self,
        name: &str,
        op: UpstreamTaskOp,
        cx: &CallContext,
    ) -> Result<UpstreamTaskReply, McpError> {
        // Not served here now (its upstream not yet listed on this replica,
        // or the configuration changed): not the upstream's "no such task",
        // which would end the task for good.
        let (provider, _) = self.tool(name).ok_or_else(|| {
            let why = format!("the tool {name} is not served here right now; retry shortly");
            McpError::internal_error(why, None)
        })?;
        let reply = provider.upstream_task(name, op, cx).await;
        let mut got = match reply {
            Ok(UpstreamTaskReply::Task(got)) => got,
            Ok(ack) => return Ok(ack),
            Err(error) => return Err(self.scrubber.error(error)),
        };
        match &mut got.task.payload {
            TaskPayload::Completed { result } => {
                let read: CallToolResult =
                    serde_json::from_value(serde_json::Value::Object(result.clone()))
                        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
                let response = CallToolResponse::Complete(read);
                let kept = self
                    .guardrails
                    .result(name, cx, self.scrubber.result(response));
                // Only what passed the guardrails reaches the member.
                let kept = match kept.await {
                    CallToolResponse::Complete(kept) => serde_json::to_value(kept).ok(),
                    _ => None,
                };
                *result = match kept {
                    Some(serde_json::Value::Object(kept)) => kept,
                    _ => {
                        return Err(McpError::internal_error(
                            "the task's result was withheld",
                            None,
                        ));
                    }
                };
            }
            TaskPayload::Failed { error } => {
                let mut value = serde_json::Value::Object(std::mem::take(error));
                self.scrubber.value(&mut value);
                if let serde_json::Value::Object(scrubbed) = value {
                    *error = scrubbed;
                }
            }
            _ => {}
        }
        if let Some(message) = &mut got.task.task.status_message {
            *message = self.scrubber.text(message);
        }
        Ok(UpstreamTaskReply::Task(got))
    }
}
