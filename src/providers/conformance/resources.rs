//! Conformance resources: static text and binary, a watched resource that
//! accepts subscriptions, and the `test://template/{id}/data` template.

use async_trait::async_trait;
use serde_json::json;

use super::PNG;
use crate::{
    protocol::{McpError, ReadResourceResponse, ReadResourceResult, Resource, ResourceTemplate},
    providers::wire,
    registry::{CallContext, ResourceProvider},
};

pub struct ConformanceResources;

const TEMPLATE_PREFIX: &str = "test://template/";
const TEMPLATE_SUFFIX: &str = "/data";

fn template_id(uri: &str) -> Option<&str> {
    uri.strip_prefix(TEMPLATE_PREFIX)?
        .strip_suffix(TEMPLATE_SUFFIX)
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

#[async_trait]
impl ResourceProvider for ConformanceResources {
    fn resources(&self) -> Vec<Resource> {
        [
            (
                "test://static-text",
                "static-text",
                "A static text resource",
                "text/plain",
            ),
            (
                "test://static-binary",
                "static-binary",
                "A static binary resource (PNG)",
                "image/png",
            ),
            (
                "test://watched-resource",
                "watched-resource",
                "A resource that accepts subscriptions",
                "text/plain",
            ),
        ]
        .into_iter()
        .map(|(uri, name, description, mime)| {
            wire(json!({"uri": uri, "name": name, "description": description, "mimeType": mime}))
        })
        .collect()
    }

    fn templates(&self) -> Vec<ResourceTemplate> {
        vec![wire(json!({
            "uriTemplate": "test://template/{id}/data",
            "name": "template",
            "description": "A resource template with an id parameter",
            "mimeType": "application/json",
        }))]
    }

    fn owns(&self, uri: &str) -> bool {
        matches!(
            uri,
            "test://static-text" | "test://static-binary" | "test://watched-resource"
        ) || template_id(uri).is_some()
    }

    async fn read(&self, uri: &str, _cx: &CallContext) -> Result<ReadResourceResponse, McpError> {
        let contents = match uri {
            "test://static-text" => json!({"uri": uri, "mimeType": "text/plain",
                "text": "This is the content of the static text resource."}),
            "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": PNG}),
            "test://watched-resource" => json!({"uri": uri, "mimeType": "text/plain",
                "text": "Watched resource content"}),
            _ => match template_id(uri) {
                Some(id) => json!({"uri": uri, "mimeType": "application/json",
                    "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string()}),
                None => {
                    return Err(McpError::resource_not_found(
                        "Resource not found",
                        Some(json!({ "uri": uri })),
                    ));
                }
            },
        };
        let result: ReadResourceResult = wire(json!({ "contents": [contents] }));
        Ok(result.into())
    }

    async fn complete(&self, template: &str, argument: &str, prefix: &str) -> Vec<String> {
        if template == "test://template/{id}/data" && argument == "id" {
            return ["1", "123", "42"]
                .into_iter()
                .filter(|v| v.starts_with(prefix))
                .map(String::from)
                .collect();
        }
        Vec::new()
    }
}
