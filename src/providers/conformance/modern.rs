//! Fixtures of the 2026-07-28 `server-stateless` scenario: a tool needing an
//! undeclared capability, an elicitation that must not become a server
//! request, a tool that logs only when asked to, and triggers for the
//! list_changed notifications of `subscriptions/listen`.

#![allow(deprecated)] // LoggingLevel: deprecated in 2026-07-28.

use async_trait::async_trait;
use serde_json::json;

use super::{declare, mrtr::elicit, text_result};
use crate::{
    protocol::Asked,
    protocol::{CallToolResponse, ClientCapabilities, JsonObject, LoggingLevel, McpError, Tool},
    registry::{CallContext, ChangeBus, ChangeEvent, ToolProvider},
};

pub struct ConformanceModern {
    bus: ChangeBus,
}

impl ConformanceModern {
    pub fn new(bus: ChangeBus) -> Self {
        Self { bus }
    }
}

const TOOLS: [(&str, &str); 6] = [
    (
        "test_custom_header_echo",
        "Echoes its region argument, which clients mirror in Mcp-Param-Region",
    ),
    (
        "test_missing_capability",
        "Needs the sampling capability; refuses clients without it",
    ),
    (
        "test_streaming_elicitation",
        "Asks for a confirmation without sending a request on the stream",
    ),
    (
        "test_logging_tool",
        "Logs a line, only when the request asked for log lines",
    ),
    (
        "test_trigger_tool_change",
        "Announces a change of the tool list to subscribers",
    ),
    (
        "test_trigger_prompt_change",
        "Announces a change of the prompt list to subscribers",
    ),
];

#[async_trait]
impl ToolProvider for ConformanceModern {
    fn tools(&self) -> Vec<Tool> {
        TOOLS
            .iter()
            .map(|(name, description)| {
                // SEP-2243: an annotated argument travels in an HTTP header too.
                let properties = if *name == "test_custom_header_echo" {
                    json!({"region": {"type": "string", "x-mcp-header": "Region"}})
                } else {
                    json!({})
                };
                declare(
                    name,
                    description,
                    json!({"type": "object", "properties": properties}),
                )
            })
            .collect()
    }

    async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
        cx: &CallContext,
    ) -> Result<CallToolResponse, McpError> {
        match name {
            "test_custom_header_echo" => {
                let region = arguments
                    .get("region")
                    .and_then(|r| r.as_str())
                    .unwrap_or("none");
                Ok(text_result(format!("region={region}")))
            }
            "test_missing_capability" => {
                if cx.client_capabilities().sampling.is_none() {
                    return Err(McpError::missing_required_client_capability(
                        ClientCapabilities::builder().enable_sampling().build(),
                    ));
                }
                Ok(text_result("The client declared sampling"))
            }
            "test_streaming_elicitation" => {
                if cx.client_capabilities().elicitation.is_none() {
                    return Err(McpError::missing_required_client_capability(
                        ClientCapabilities::builder().enable_elicitation().build(),
                    ));
                }
                let confirm = elicit("Confirm?", json!({"ok": {"type": "boolean"}}), &["ok"]);
                match cx
                    .ask([("confirm".to_owned(), confirm)].into(), None)
                    .await?
                {
                    Asked::Pending(pending) => Ok(pending.into()),
                    Asked::Answered(_) => Ok(text_result("Confirmed")),
                }
            }
            "test_logging_tool" => {
                cx.log(
                    LoggingLevel::Info,
                    "conformance",
                    json!("test_logging_tool ran"),
                )
                .await;
                Ok(text_result("Logged if the request asked for log lines"))
            }
            "test_trigger_tool_change" => {
                self.bus.publish(ChangeEvent::ToolsListChanged);
                Ok(text_result("Tool list change announced"))
            }
            "test_trigger_prompt_change" => {
                self.bus.publish(ChangeEvent::PromptsListChanged);
                Ok(text_result("Prompt list change announced"))
            }
            other => Err(McpError::invalid_params(
                format!("Unknown tool: {other}"),
                None,
            )),
        }
    }
}
