//! Conformance prompts: plain, with arguments, with an embedded resource, with an image.

use std::collections::HashMap;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::PNG;
use crate::{
    protocol::{GetPromptResponse, GetPromptResult, McpError, Prompt},
    providers::wire,
    registry::{CallContext, PromptProvider},
};

pub struct ConformancePrompts;

fn argument(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "required": true})
}

#[async_trait]
impl PromptProvider for ConformancePrompts {
    fn prompts(&self) -> Vec<Prompt> {
        [
            json!({"name": "test_simple_prompt", "description": "A simple prompt without arguments"}),
            json!({"name": "test_prompt_with_arguments", "description": "A prompt with required arguments",
                "arguments": [argument("arg1", "First test argument"), argument("arg2", "Second test argument")]}),
            json!({"name": "test_prompt_with_embedded_resource", "description": "A prompt that embeds a resource",
                "arguments": [argument("resourceUri", "URI of the resource to embed")]}),
            json!({"name": "test_prompt_with_image", "description": "A prompt that includes an image"}),
        ]
        .into_iter()
        .map(wire)
        .collect()
    }

    async fn get(
        &self,
        name: &str,
        arguments: HashMap<String, String>,
        _cx: &CallContext,
    ) -> Result<GetPromptResponse, McpError> {
        let arg = |key: &str| arguments.get(key).cloned().unwrap_or_default();
        let text =
            |text: String| json!({"role": "user", "content": {"type": "text", "text": text}});
        let messages = match name {
            "test_simple_prompt" => vec![text("This is a simple prompt for testing.".into())],
            "test_prompt_with_arguments" => vec![text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                arg("arg1"),
                arg("arg2")
            ))],
            "test_prompt_with_embedded_resource" => vec![
                json!({"role": "user", "content": {"type": "resource", "resource": {
                    "uri": arg("resourceUri"), "mimeType": "text/plain",
                    "text": "Embedded resource content for testing."}}}),
                text("Please process the embedded resource above.".into()),
            ],
            "test_prompt_with_image" => vec![
                json!({"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}}),
                text("Please analyze the image above.".into()),
            ],
            other => {
                return Err(McpError::invalid_params(
                    format!("Unknown prompt: {other}"),
                    None,
                ));
            }
        };
        let result: GetPromptResult = wire(json!({ "messages": messages }));
        Ok(result.into())
    }

    async fn complete(&self, prompt: &str, argument: &str, prefix: &str) -> Vec<String> {
        if prompt != "test_prompt_with_arguments" || argument != "arg1" {
            return Vec::new();
        }
        ["paris", "park", "party"]
            .into_iter()
            .filter(|v| v.starts_with(prefix))
            .map(String::from)
            .collect()
    }
}
