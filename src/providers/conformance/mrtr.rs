//! The suite's multi-round-trip (MRTR) fixtures: tools and a prompt that
//! need input from the client before they can finish. Written once against
//! `CallContext::ask`, they work on 2026-07-28 (input_required results and
//! retries) and on 2025-era sessions (real requests on the stream) alike.

#![allow(deprecated)] // Sampling and roots are deprecated in 2026-07-28 but still part of MRTR.

use std::collections::HashMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{declare, text_result};
use crate::{
    protocol::Asked,
    protocol::{
        CallToolResponse, ClientCapabilities, GetPromptResponse, GetPromptResult, InputRequest,
        InputRequests, JsonObject, McpError, Prompt, Tool,
    },
    providers::wire,
    registry::{CallContext, PromptProvider, ToolProvider},
};

pub struct ConformanceMrtr;

const TOOLS: [(&str, &str); 8] = [
    (
        "test_input_required_result_elicitation",
        "Asks for the user's name, then greets them",
    ),
    (
        "test_input_required_result_sampling",
        "Asks the client's model a question",
    ),
    (
        "test_input_required_result_list_roots",
        "Asks for the client's roots",
    ),
    (
        "test_input_required_result_request_state",
        "Asks for a confirmation, keeping sealed request state",
    ),
    (
        "test_input_required_result_tampered_state",
        "Like request_state; a tampered state is an error",
    ),
    (
        "test_input_required_result_multiple_inputs",
        "Asks for elicitation, sampling and roots at once",
    ),
    (
        "test_input_required_result_multi_round",
        "Asks two questions, one round each",
    ),
    (
        "test_input_required_result_capabilities",
        "Asks only what the client's capabilities allow",
    ),
];

pub(crate) fn elicit(message: &str, properties: Value, required: &[&str]) -> InputRequest {
    wire(
        json!({"method": "elicitation/create", "params": {"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": properties, "required": required}}}),
    )
}

fn sample(text: &str, max_tokens: u32) -> InputRequest {
    wire(json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": max_tokens}}))
}

fn roots() -> InputRequest {
    wire(json!({"method": "roots/list"}))
}

fn requests<const N: usize>(items: [(&str, InputRequest); N]) -> InputRequests {
    items.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// `content.<field>` of an accepted elicitation answer.
fn field(answer: &Value, field: &str) -> String {
    match &answer["content"][field] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[derive(Serialize, Deserialize)]
struct Round {
    round: u8,
    name: Option<String>,
}

/// Returns early with the `input_required` result when answers are missing.
macro_rules! answers {
    ($asked:expr) => {
        match $asked? {
            Asked::Answered(answers) => answers,
            Asked::Pending(pending) => return Ok(pending.into()),
        }
    };
}

#[async_trait]
impl ToolProvider for ConformanceMrtr {
    fn tools(&self) -> Vec<Tool> {
        TOOLS
            .iter()
            .map(|(name, description)| {
                declare(
                    name,
                    description,
                    json!({"type": "object", "properties": {}}),
                )
            })
            .collect()
    }

    async fn call(
        &self,
        name: &str,
        _arguments: JsonObject,
        cx: &CallContext,
    ) -> Result<CallToolResponse, McpError> {
        let name_request = || {
            elicit(
                "What is your name?",
                json!({"name": {"type": "string"}}),
                &["name"],
            )
        };
        let confirm = || {
            elicit(
                "Please confirm",
                json!({"ok": {"type": "boolean"}}),
                &["ok"],
            )
        };
        match name {
            "test_input_required_result_elicitation" => {
                let answers = answers!(
                    cx.ask(requests([("user_name", name_request())]), None)
                        .await
                );
                Ok(text_result(format!(
                    "Hello, {}!",
                    field(&answers["user_name"], "name")
                )))
            }
            "test_input_required_result_sampling" => {
                let question = sample("What is the capital of France?", 100);
                let answers = answers!(
                    cx.ask(requests([("capital_question", question)]), None)
                        .await
                );
                let reply = &answers["capital_question"]["content"]["text"];
                Ok(text_result(format!(
                    "The model answered: {}",
                    reply.as_str().unwrap_or_default()
                )))
            }
            "test_input_required_result_list_roots" => {
                let answers = answers!(cx.ask(requests([("client_roots", roots())]), None).await);
                let uris: Vec<&str> = answers["client_roots"]["roots"]
                    .as_array()
                    .map(|r| r.iter().filter_map(|root| root["uri"].as_str()).collect())
                    .unwrap_or_default();
                Ok(text_result(format!(
                    "The client has {} root(s): {}",
                    uris.len(),
                    uris.join(", ")
                )))
            }
            "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state" => {
                // A tampered or foreign state fails here, before anything else.
                cx.mrtr().open::<Value>()?;
                let state = cx.mrtr().seal(&json!({"step": "confirm"}))?;
                let answers = answers!(
                    cx.ask(requests([("confirm", confirm())]), Some(state))
                        .await
                );
                Ok(text_result(format!(
                    "state-ok: confirmed={}",
                    field(&answers["confirm"], "ok")
                )))
            }
            "test_input_required_result_multiple_inputs" => {
                cx.mrtr().open::<Value>()?;
                let state = cx.mrtr().seal(&json!({"step": "multiple"}))?;
                let all = requests([
                    ("user_name", name_request()),
                    ("greeting", sample("Generate a greeting", 50)),
                    ("client_roots", roots()),
                ]);
                let answers = answers!(cx.ask(all, Some(state)).await);
                Ok(text_result(format!(
                    "Received {} inputs for {}",
                    answers.len(),
                    field(&answers["user_name"], "name")
                )))
            }
            "test_input_required_result_multi_round" => multi_round(cx).await,
            "test_input_required_result_capabilities" => {
                let caps: ClientCapabilities = cx.client_capabilities();
                let mut wanted = InputRequests::new();
                if caps.sampling.is_some() {
                    wanted.insert("question".into(), sample("Say hello", 20));
                }
                if caps.elicitation.is_some() {
                    wanted.insert("user_name".into(), name_request());
                }
                if caps.roots.is_some() {
                    wanted.insert("client_roots".into(), roots());
                }
                if wanted.is_empty() {
                    return Err(McpError::missing_required_client_capability(
                        ClientCapabilities::builder().enable_sampling().build(),
                    ));
                }
                let answers = answers!(cx.ask(wanted, None).await);
                Ok(text_result(format!(
                    "Received {} inputs the client can give",
                    answers.len()
                )))
            }
            other => Err(McpError::invalid_params(
                format!("Unknown tool: {other}"),
                None,
            )),
        }
    }
}

/// Round 1 asks a name, round 2 a colour; the state says which round we are in
/// and changes between rounds, so a replayed round-1 state cannot skip ahead.
async fn multi_round(cx: &CallContext) -> Result<CallToolResponse, McpError> {
    let name = match cx.mrtr().open::<Round>()? {
        Some(Round {
            round: 2,
            name: Some(name),
        }) => name,
        _ => {
            let state = cx.mrtr().seal(&Round {
                round: 1,
                name: None,
            })?;
            let step1 = elicit(
                "Step 1: What is your name?",
                json!({"name": {"type": "string"}}),
                &["name"],
            );
            let answers = answers!(cx.ask(requests([("step1", step1)]), Some(state)).await);
            field(&answers["step1"], "name")
        }
    };
    let state = cx.mrtr().seal(&Round {
        round: 2,
        name: Some(name.clone()),
    })?;
    let step2 = elicit(
        "Step 2: What is your favorite color?",
        json!({"color": {"type": "string"}}),
        &["color"],
    );
    let answers = answers!(cx.ask(requests([("step2", step2)]), Some(state)).await);
    Ok(text_result(format!(
        "{name} likes {}",
        field(&answers["step2"], "color")
    )))
}

#[async_trait]
impl PromptProvider for ConformanceMrtr {
    fn prompts(&self) -> Vec<Prompt> {
        vec![wire(json!({"name": "test_input_required_result_prompt",
            "description": "A prompt that asks the client for context before it is rendered"}))]
    }

    async fn get(
        &self,
        _name: &str,
        _arguments: HashMap<String, String>,
        cx: &CallContext,
    ) -> Result<GetPromptResponse, McpError> {
        let question = elicit(
            "What context should the prompt use?",
            json!({"context": {"type": "string"}}),
            &["context"],
        );
        let answers = match cx.ask(requests([("user_context", question)]), None).await? {
            Asked::Answered(answers) => answers,
            Asked::Pending(pending) => return Ok(pending.into()),
        };
        let context = field(&answers["user_context"], "context");
        let result: GetPromptResult = wire(json!({"messages": [{"role": "user",
            "content": {"type": "text", "text": format!("Use this context: {context}")}}]}));
        Ok(result.into())
    }
}
