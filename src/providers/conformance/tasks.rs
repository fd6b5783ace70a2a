//! Fixtures of the tasks extension's scenarios (SEP-2663): a tool that never
//! becomes a task, slow and failing ones that may or must, tools that ask
//! for input while they run as a task, and one that gathers input by MRTR
//! before it becomes one.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{declare, mrtr::elicit, text_result};
use crate::{
    config::TaskMode,
    protocol::{Asked, CallToolResponse, InputRequests, JsonObject, McpError, Tool},
    registry::{CallContext, ToolProvider},
};

pub struct ConformanceTasks;

/// Name, description, argument schema, task mode.
fn fixtures() -> [(&'static str, &'static str, Value, TaskMode); 7] {
    let object = |properties: Value| json!({"type": "object", "properties": properties});
    [
        (
            "greet",
            "Greets by name at once; never a task",
            object(json!({"name": {"type": "string"}})),
            TaskMode::Forbidden,
        ),
        (
            "slow_compute",
            "Sleeps `seconds`, then answers; may run as a task",
            object(json!({"seconds": {"type": "number"}, "label": {"type": "string"}})),
            TaskMode::Optional,
        ),
        (
            "failing_job",
            "Returns a tool error after about a second; runs only as a task",
            object(json!({})),
            TaskMode::Required,
        ),
        (
            "protocol_error_job",
            "Fails with a protocol error; may run as a task",
            object(json!({})),
            TaskMode::Optional,
        ),
        (
            "confirm_delete",
            "Asks to confirm deleting `filename` while it runs",
            object(json!({"filename": {"type": "string"}})),
            TaskMode::Optional,
        ),
        (
            "multi_input",
            "Asks two questions at once while it runs",
            object(json!({})),
            TaskMode::Optional,
        ),
        (
            "test_tool_with_task",
            "Asks the user's name (MRTR), then runs as a task",
            object(json!({})),
            TaskMode::Required,
        ),
    ]
}

/// Asks through the task when running as one, else by MRTR; `None`: return
/// the `input_required` result (`pending`).
async fn ask(
    cx: &CallContext,
    requests: InputRequests,
    pending: &mut Option<CallToolResponse>,
) -> Result<Option<serde_json::Map<String, Value>>, McpError> {
    if let Some(input) = cx.task_input() {
        return Ok(Some(input.ask(requests).await?.into_iter().collect()));
    }
    match cx.ask(requests, None).await? {
        Asked::Answered(answers) => Ok(Some(answers.into_iter().collect())),
        Asked::Pending(result) => {
            *pending = Some(result.into());
            Ok(None)
        }
    }
}

fn accepted(answer: Option<&Value>) -> bool {
    answer.is_some_and(|a| a["action"] == "accept")
}

#[async_trait]
impl ToolProvider for ConformanceTasks {
    fn tools(&self) -> Vec<Tool> {
        fixtures()
            .into_iter()
            .map(|(name, description, schema, _)| declare(name, description, schema))
            .collect()
    }

    fn task_mode(&self, name: &str) -> TaskMode {
        fixtures()
            .into_iter()
            .find(|(n, ..)| *n == name)
            .map_or(TaskMode::Forbidden, |(.., mode)| mode)
    }

    async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
        cx: &CallContext,
    ) -> Result<CallToolResponse, McpError> {
        let text = |key: &str| arguments.get(key).and_then(Value::as_str).unwrap_or("");
        let mut pending = None;
        match name {
            "greet" => Ok(text_result(format!("Hello, {}!", text("name")))),
            "slow_compute" => {
                let seconds = arguments.get("seconds").and_then(Value::as_f64);
                let seconds = seconds.unwrap_or(1.0).clamp(0.0, 600.0);
                tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                Ok(text_result(format!(
                    "Computed {} after {seconds}s",
                    text("label")
                )))
            }
            "failing_job" => {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Ok(crate::protocol::text_result("The job failed", true).into())
            }
            "protocol_error_job" => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Err(McpError::internal_error(
                    "protocol_error_job fails on purpose",
                    None,
                ))
            }
            "confirm_delete" => {
                let filename = text("filename");
                let question = elicit(
                    &format!("Delete {filename}?"),
                    json!({"confirm": {"type": "boolean"}}),
                    &["confirm"],
                );
                let requests = [("confirm_delete".to_owned(), question)].into();
                let Some(answers) = ask(cx, requests, &mut pending).await? else {
                    return Ok(pending.unwrap_or_else(|| text_result("")));
                };
                Ok(text_result(if accepted(answers.get("confirm_delete")) {
                    format!("Deleted {filename}")
                } else {
                    format!("Kept {filename}")
                }))
            }
            "multi_input" => {
                let name = elicit("Your name?", json!({"name": {"type": "string"}}), &["name"]);
                let sure = elicit("Proceed?", json!({"confirm": {"type": "boolean"}}), &[]);
                let requests = [("name".to_owned(), name), ("confirm".to_owned(), sure)].into();
                let Some(answers) = ask(cx, requests, &mut pending).await? else {
                    return Ok(pending.unwrap_or_else(|| text_result("")));
                };
                Ok(text_result(format!("Got {} answers", answers.len())))
            }
            "test_tool_with_task" => {
                let question = elicit(
                    "What is your name?",
                    json!({"name": {"type": "string"}}),
                    &["name"],
                );
                let answers = match cx
                    .ask([("user_name".to_owned(), question)].into(), None)
                    .await?
                {
                    Asked::Answered(answers) => answers,
                    Asked::Pending(result) => return Ok(result.into()),
                };
                // The asynchronous part: the caller has a task by now.
                tokio::time::sleep(Duration::from_millis(200)).await;
                let name =
                    &answers.get("user_name").cloned().unwrap_or_default()["content"]["name"];
                Ok(text_result(format!(
                    "Hello, {}!",
                    name.as_str().unwrap_or("?")
                )))
            }
            other => Err(McpError::invalid_params(
                format!("Unknown tool: {other}"),
                None,
            )),
        }
    }
}
