//! Conformance tools for the 2025-era scenarios: content kinds, logging,
//! progress, errors, and server-to-client sampling and elicitation.

#![allow(deprecated)] // LoggingLevel is deprecated in 2026-07-28, still served to 2025-era clients.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{PNG, WAV, declare};
use crate::{
    protocol::{
        CallToolResponse, CallToolResult, ContentBlock, JsonObject, LoggingLevel, McpError, Tool,
    },
    providers::wire,
    registry::{CallContext, ToolProvider},
};

pub struct ConformanceTools;

fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

fn string_arg_schema(name: &str, description: &str) -> Value {
    json!({"type": "object", "properties": {name: {"type": "string", "description": description}}, "required": [name]})
}

/// (name, description, input schema)
fn declarations() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "test_simple_text",
            "Returns a simple text response",
            empty_schema(),
        ),
        ("test_image_content", "Returns an image", empty_schema()),
        ("test_audio_content", "Returns audio", empty_schema()),
        (
            "test_embedded_resource",
            "Returns an embedded resource",
            empty_schema(),
        ),
        (
            "test_multiple_content_types",
            "Returns text, image and resource content",
            empty_schema(),
        ),
        (
            "test_tool_with_logging",
            "Sends three log messages while running",
            empty_schema(),
        ),
        (
            "test_tool_with_progress",
            "Reports progress 0, 50, 100",
            empty_schema(),
        ),
        (
            "test_error_handling",
            "Always returns a tool error",
            empty_schema(),
        ),
        (
            "test_sampling",
            "Asks the client's LLM to complete a prompt",
            string_arg_schema("prompt", "The prompt to send to the LLM"),
        ),
        (
            "test_elicitation",
            "Asks the user for a username and email",
            string_arg_schema("message", "The message to show the user"),
        ),
        (
            "test_elicitation_sep1034_defaults",
            "Elicitation whose fields carry defaults (SEP-1034)",
            empty_schema(),
        ),
        (
            "test_elicitation_sep1330_enums",
            "Elicitation with every enum shape (SEP-1330)",
            empty_schema(),
        ),
        (
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
                    "street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"}, "email": {"type": "string"}},
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }),
        ),
        (
            "test_reconnection",
            "Completes after a short pause (SSE reconnection)",
            empty_schema(),
        ),
    ]
}

fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::text(text)
}

/// Content written as its wire JSON (images, audio, embedded resources).
fn block(value: Value) -> ContentBlock {
    wire(value)
}

/// Built as typed values, not through JSON: the echo tool is the
/// benchmark's hot path.
fn ok(content: Vec<ContentBlock>) -> CallToolResponse {
    let mut result = CallToolResult::success(content);
    // As a result parsed from `{"content": [...]}` would be: `isError` and
    // `resultType` are left to the defaults and to the per-era stamping.
    result.is_error = None;
    result.result_type = None;
    result.into()
}

fn tool_error(message: impl Into<String>) -> CallToolResponse {
    let mut result = CallToolResult::error(vec![text(message)]);
    result.result_type = None;
    result.into()
}

const STEP: Duration = Duration::from_millis(50);

#[async_trait]
impl ToolProvider for ConformanceTools {
    fn tools(&self) -> Vec<Tool> {
        declarations()
            .into_iter()
            .map(|(name, description, schema)| declare(name, description, schema))
            .collect()
    }

    async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
        cx: &CallContext,
    ) -> Result<CallToolResponse, McpError> {
        let arg = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Ok(match name {
            "test_simple_text" => ok(vec![text("This is a simple text response for testing.")]),
            "test_image_content" => ok(vec![block(
                json!({"type": "image", "data": PNG, "mimeType": "image/png"}),
            )]),
            "test_audio_content" => ok(vec![block(
                json!({"type": "audio", "data": WAV, "mimeType": "audio/wav"}),
            )]),
            "test_embedded_resource" => ok(vec![block(json!({"type": "resource", "resource": {
                "uri": "test://embedded-resource", "mimeType": "text/plain",
                "text": "This is an embedded resource content."}}))]),
            "test_multiple_content_types" => ok(vec![
                text("Multiple content types test:"),
                block(json!({"type": "image", "data": PNG, "mimeType": "image/png"})),
                block(
                    json!({"type": "resource", "resource": {"uri": "test://mixed-content-resource",
                    "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}}),
                ),
            ]),
            "test_tool_with_logging" => {
                for (i, line) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .into_iter()
                .enumerate()
                {
                    if i > 0 {
                        tokio::time::sleep(STEP).await;
                    }
                    cx.log(LoggingLevel::Info, "conformance", json!(line)).await;
                }
                ok(vec![text("Tool with logging executed successfully")])
            }
            "test_tool_with_progress" => {
                for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(STEP).await;
                    }
                    cx.progress(progress, Some(100.0), None).await;
                }
                ok(vec![text("Tool with progress executed successfully")])
            }
            "test_error_handling" => {
                tool_error("This tool intentionally returns an error for testing")
            }
            "test_sampling" => sampling(cx, &arg("prompt")).await,
            "test_elicitation" => {
                let schema = json!({"type": "object", "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}},
                    "required": ["username", "email"]});
                elicit(cx, &arg("message"), schema, "User response").await
            }
            "test_elicitation_sep1034_defaults" => {
                let schema = json!({"type": "object", "properties": {
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {"type": "string", "description": "User status",
                        "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "description": "Verification status", "default": true}},
                    "required": []});
                elicit(
                    cx,
                    "Please review these defaults",
                    schema,
                    "Elicitation completed",
                )
                .await
            }
            "test_elicitation_sep1330_enums" => {
                elicit(
                    cx,
                    "Please choose options",
                    sep1330_schema(),
                    "Elicitation completed",
                )
                .await
            }
            "json_schema_2020_12_tool" => ok(vec![text(format!(
                "Received: {}",
                Value::Object(arguments.clone())
            ))]),
            "test_reconnection" => {
                // SEP-1699: the stream ends before the result, which the
                // client then fetches with GET and Last-Event-ID.
                cx.close_stream().await;
                tokio::time::sleep(Duration::from_millis(100)).await;
                ok(vec![text("Reconnection test completed successfully.")])
            }
            other => {
                return Err(McpError::invalid_params(
                    format!("Unknown tool: {other}"),
                    None,
                ));
            }
        })
    }
}

fn sep1330_schema() -> Value {
    let titled = |prefix: &str, noun: &str| -> Vec<Value> {
        ["First", "Second", "Third"]
            .iter()
            .enumerate()
            .map(|(i, ord)| json!({"const": format!("{prefix}{}", i + 1), "title": format!("{ord} {noun}")}))
            .collect()
    };
    json!({"type": "object", "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "oneOf": titled("value", "Option")},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "items": {"anyOf": titled("value", "Choice")}}},
        "required": []})
}

async fn sampling(cx: &CallContext, prompt: &str) -> CallToolResponse {
    if cx.client_capabilities().sampling.is_none() {
        return tool_error("The client did not declare the sampling capability");
    }
    let params = wire(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 100
    }));
    match cx.peer().create_message(params).await {
        Ok(result) => {
            let value = serde_json::to_value(&result).unwrap_or_default();
            let reply = value["content"]["text"]
                .as_str()
                .or_else(|| value["content"][0]["text"].as_str())
                .unwrap_or_default()
                .to_owned();
            ok(vec![text(format!("LLM response: {reply}"))])
        }
        Err(e) => tool_error(format!("Sampling failed: {e}")),
    }
}

async fn elicit(cx: &CallContext, message: &str, schema: Value, label: &str) -> CallToolResponse {
    if cx.client_capabilities().elicitation.is_none() {
        return tool_error("The client did not declare the elicitation capability");
    }
    let params = wire(json!({"mode": "form", "message": message, "requestedSchema": schema}));
    match cx.peer().create_elicitation(params).await {
        Ok(result) => {
            let value = serde_json::to_value(&result).unwrap_or_default();
            ok(vec![text(format!(
                "{label}: action={}, content={}",
                value["action"].as_str().unwrap_or("unknown"),
                value.get("content").cloned().unwrap_or(Value::Null)
            ))])
        }
        Err(e) => tool_error(format!("Elicitation failed: {e}")),
    }
}
