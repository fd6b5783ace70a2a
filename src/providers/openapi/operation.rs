//! One OpenAPI operation as an HTTP tool: its name, description, input
//! schema (path and query parameters, the JSON body), annotations by HTTP
//! method, and output schema from its JSON success response.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::{Map, Value, json, value::RawValue};

use super::spec::{Index, resolve};
use crate::config::{HttpToolConfig, OpenApiSourceConfig, OpenApiToolOverride};

const METHODS: [&str; 7] = ["get", "put", "post", "delete", "options", "head", "patch"];
/// Longest description kept from the document.
const MAX_DESCRIPTION: usize = 4096;

/// An operation found in the document.
pub(super) struct Found<'a> {
    pub(super) id: String,
    pub(super) path: String,
    pub(super) method: &'static str,
    pub(super) tags: Vec<String>,
    operation: &'a RawValue,
    /// The path item's parameters, which its operations share.
    shared: Option<&'a RawValue>,
}

/// What filtering reads of an operation before it is parsed whole.
#[derive(Deserialize)]
struct Light {
    #[serde(default, rename = "operationId")]
    id: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
}

/// Every operation of `document`, by path.
pub(super) fn all<'a>(document: &Index<'a>) -> Vec<Found<'a>> {
    let mut found = Vec::new();
    for (path, item) in &document.paths {
        let Ok(item) = serde_json::from_str::<HashMap<String, &RawValue>>(item.get()) else {
            continue;
        };
        for method in METHODS {
            let Some(operation) = item.get(method).copied() else {
                continue;
            };
            let Ok(light) = serde_json::from_str::<Light>(operation.get()) else {
                continue;
            };
            let id = light
                .id
                .unwrap_or_else(|| format!("{method}{}", path.replace(['/', '{', '}'], "_")));
            found.push(Found {
                id,
                path: path.clone(),
                method,
                tags: light.tags,
                operation,
                shared: item.get("parameters").copied(),
            });
        }
    }
    found
}

/// A tool name's characters (MCP: `[A-Za-z0-9_.-]`), others as `_`.
pub(super) fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' | '.' => c,
            _ => '_',
        })
        .collect()
}

/// An argument name a URL template can hold (`[A-Za-z0-9_]`).
fn argument(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The HTTP tool for `found`, calling `base`, named `name`.
pub(super) fn tool(
    found: &Found,
    document: &Index,
    (source, base, name): (&OpenApiSourceConfig, &str, String),
    overrides: OpenApiToolOverride,
) -> HttpToolConfig {
    let parse = |raw: Option<&RawValue>| -> Value {
        raw.and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or(Value::Null)
    };
    let operation = &parse(Some(found.operation));
    let shared = parse(found.shared);
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut query = BTreeMap::new();
    let mut path = found.path.clone();
    let parameters = (shared.as_array().into_iter().flatten()).chain(
        operation
            .get("parameters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten(),
    );
    for parameter in parameters {
        let parameter = resolve(parameter, document);
        let (Some(original), Some(place)) = (
            parameter.get("name").and_then(Value::as_str),
            parameter.get("in").and_then(Value::as_str),
        ) else {
            continue;
        };
        let key = argument(original);
        match place {
            "path" => path = path.replace(&format!("{{{original}}}"), &format!("{{{key}}}")),
            "query" => {
                query.insert(original.to_owned(), format!("{{{key}}}"));
            }
            // Header and cookie parameters are the operator's (`headers`).
            _ => continue,
        }
        let mut schema = parameter.get("schema").cloned().unwrap_or(json!({}));
        if let (Some(text), Some(object)) = (parameter.get("description"), schema.as_object_mut()) {
            object.insert("description".into(), text.clone());
        }
        if place == "path" || parameter.get("required") == Some(&Value::Bool(true)) {
            required.push(Value::String(key.clone()));
        }
        properties.insert(key, schema);
    }
    let body_schema = operation
        .pointer("/requestBody/content/application~1json/schema")
        .map(|schema| resolve(schema, document));
    let body_key = if properties.contains_key("body") {
        "request_body"
    } else {
        "body"
    };
    let body = body_schema.map(|schema| {
        properties.insert(body_key.to_owned(), schema);
        let request_body = resolve(
            operation.get("requestBody").unwrap_or(&Value::Null),
            document,
        );
        if request_body.get("required") == Some(&Value::Bool(true)) {
            required.push(Value::String(body_key.to_owned()));
        }
        Value::String(format!("{{{body_key}}}"))
    });
    let mut input_schema = Map::new();
    input_schema.insert("type".into(), "object".into());
    input_schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        input_schema.insert("required".into(), Value::Array(required));
    }
    let method = found.method.to_uppercase();
    let output_schema = overrides
        .output_schema
        .clone()
        .or_else(|| success_schema(operation, document));
    HttpToolConfig {
        name,
        title: overrides.title,
        description: overrides
            .description
            .unwrap_or_else(|| description(operation, found)),
        input_schema,
        output_schema,
        scopes: overrides.scopes.unwrap_or_else(|| source.scopes.clone()),
        confirm: overrides.confirm.unwrap_or(false),
        approval: overrides.approval,
        ui: None,
        task_retry: false,
        task_retry_max: None,
        read_only: overrides
            .read_only
            .or(Some(matches!(found.method, "get" | "head"))),
        destructive: overrides.destructive.or(Some(found.method == "delete")),
        idempotent: None,
        open_world: Some(true),
        from_caller: overrides.from_caller,
        cache_ttl: overrides.cache_ttl,
        task: None,
        method,
        url: format!("{base}{path}"),
        headers: source.headers.clone(),
        query,
        body,
        timeout: overrides.timeout.unwrap_or(source.timeout),
        max_response_bytes: source.max_response_bytes,
        result_pointer: None,
    }
}

/// Summary and description, or the method and path when it has neither.
fn description(operation: &Value, found: &Found) -> String {
    let text = |key: &str| operation.get(key).and_then(Value::as_str).unwrap_or("");
    let (summary, long) = (text("summary").trim(), text("description").trim());
    let mut description = match (summary.is_empty(), long.is_empty()) {
        (false, false) if long.starts_with(summary) => long.to_owned(),
        (false, false) => format!("{summary}\n\n{long}"),
        (false, true) => summary.to_owned(),
        (true, false) => long.to_owned(),
        (true, true) => format!("{} {}", found.method.to_uppercase(), found.path),
    };
    if let Some((cut, _)) = description.char_indices().nth(MAX_DESCRIPTION) {
        description.truncate(cut);
    }
    description
}

/// The JSON schema of the first 2xx response, when it is an object (MCP's
/// `structuredContent` is one); else none, and the result is text.
fn success_schema(operation: &Value, document: &Index) -> Option<Map<String, Value>> {
    let responses = operation.get("responses")?.as_object()?;
    let (_, response) = responses
        .iter()
        .find(|(status, _)| status.starts_with('2'))?;
    let response = resolve(response, document);
    let schema = response.pointer("/content/application~1json/schema")?;
    let is_object = schema.get("type").and_then(Value::as_str) == Some("object")
        || (schema.get("type").is_none() && schema.get("properties").is_some());
    is_object.then(|| schema.as_object().cloned()).flatten()
}
