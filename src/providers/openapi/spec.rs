//! An OpenAPI document read into JSON (JSON or YAML), and its local `$ref`s
//! resolved into one schema, cycles cut, the result bounded.

use std::{
    cell::RefCell,
    collections::{BTreeMap, HashMap},
    path::Path,
    rc::Rc,
    time::Duration,
};

use anyhow::Context;
use serde::Deserialize;
use serde_json::{Map, Value, json, value::RawValue};

use crate::body::read_response;

/// Largest document read (GitHub's full REST description is about 12 MB).
const MAX_SPEC_BYTES: u64 = 64 * 1024 * 1024;
/// Deepest nesting a resolved schema keeps; deeper is cut to `{}`.
const MAX_DEPTH: usize = 24;
/// Most JSON nodes one resolved schema may hold; past it, `{}`.
const MAX_NODES: usize = 20_000;

/// The document at `path` as JSON text (a YAML document converted).
pub(super) fn load(path: &Path) -> anyhow::Result<String> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    anyhow::ensure!(
        size <= MAX_SPEC_BYTES,
        "{} is larger than {MAX_SPEC_BYTES} bytes",
        path.display()
    );
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    json_text(text, &path.display().to_string())
}

/// The document at `url` as JSON text, fetched within `timeout` (no
/// redirects, at most `MAX_SPEC_BYTES`). Configurations are built outside
/// any request, so the fetch runs on a thread of its own and the caller
/// waits for it.
pub(super) fn fetch(url: &str, timeout: Duration) -> anyhow::Result<String> {
    let owned = url.to_owned();
    let text = std::thread::scope(|scope| {
        scope
            .spawn(move || -> anyhow::Result<String> {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                runtime.block_on(async {
                    let client = crate::providers::http_tool::client()?;
                    let response = client.get(&owned).timeout(timeout).send().await?;
                    let status = response.status();
                    anyhow::ensure!(status.is_success(), "it answered {status}");
                    let body = read_response(response, MAX_SPEC_BYTES as usize).await?;
                    Ok(String::from_utf8_lossy(&body).into_owned())
                })
            })
            .join()
            .map_err(|_| anyhow::anyhow!("the fetch panicked"))?
    })
    .with_context(|| format!("fetching {url}"))?;
    json_text(text, url)
}

/// `text` as JSON text: JSON as it is, YAML converted.
fn json_text(text: String, from: &str) -> anyhow::Result<String> {
    if text.trim_start().starts_with('{') {
        return Ok(text);
    }
    let value = from_yaml(&text).with_context(|| format!("{from} is neither JSON nor YAML"))?;
    Ok(value.to_string())
}

/// What the tools are made from, read from the document's text without
/// building its whole tree: a large document (GitHub's is 12 MB) costs its
/// text plus the operations and schemas a source selects.
pub(super) struct Index<'a> {
    /// The document's `servers`.
    pub(super) servers: Value,
    /// Each path's item, unparsed.
    pub(super) paths: BTreeMap<String, &'a RawValue>,
    /// `components`, by section and name, unparsed.
    components: HashMap<String, HashMap<String, &'a RawValue>>,
    /// Components parsed so far, by reference.
    parsed: RefCell<HashMap<String, Rc<Value>>>,
}

#[derive(Deserialize)]
struct Top<'a> {
    #[serde(default)]
    openapi: Value,
    #[serde(default)]
    servers: Value,
    #[serde(borrow, default)]
    paths: BTreeMap<String, &'a RawValue>,
    #[serde(borrow, default)]
    components: HashMap<String, HashMap<String, &'a RawValue>>,
}

impl<'a> Index<'a> {
    /// The index of the OpenAPI 3.0 or 3.1 document in `text`.
    pub(super) fn new(text: &'a str, from: &str) -> anyhow::Result<Self> {
        let top: Top = serde_json::from_str(text)
            .with_context(|| format!("{from} is not an OpenAPI document"))?;
        let version = top.openapi.as_str().unwrap_or_default();
        anyhow::ensure!(
            version.starts_with("3.0") || version.starts_with("3.1"),
            "{from} is not an OpenAPI 3.0 or 3.1 document (its `openapi` is {})",
            top.openapi
        );
        Ok(Self {
            servers: top.servers,
            paths: top.paths,
            components: top.components,
            parsed: RefCell::default(),
        })
    }

    /// What a local reference (`#/components/schemas/Name`, JSON Pointer
    /// escapes, deeper segments allowed) names.
    fn lookup(&self, reference: &str) -> Option<Rc<Value>> {
        let rest = reference.strip_prefix("#/components/")?;
        let mut segments = rest.split('/');
        let (section, name) = (segments.next()?, unescape(segments.next()?));
        let key = format!("{section}/{name}");
        let cached = self.parsed.borrow().get(&key).cloned();
        let component = match cached {
            Some(component) => component,
            None => {
                let raw = self.components.get(section)?.get(&name)?;
                let component = Rc::new(serde_json::from_str(raw.get()).ok()?);
                self.parsed.borrow_mut().insert(key, Rc::clone(&component));
                component
            }
        };
        let deeper: Vec<&str> = segments.collect();
        if deeper.is_empty() {
            return Some(component);
        }
        let pointer = format!("/{}", deeper.join("/"));
        component.pointer(&pointer).cloned().map(Rc::new)
    }
}

fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

fn from_yaml(text: &str) -> anyhow::Result<Value> {
    let mut documents = yaml_rust2::YamlLoader::load_from_str(text).context("not YAML")?;
    anyhow::ensure!(!documents.is_empty(), "an empty YAML document");
    Ok(yaml_value(documents.swap_remove(0)))
}

fn yaml_value(yaml: yaml_rust2::Yaml) -> Value {
    use yaml_rust2::Yaml;
    match yaml {
        Yaml::Real(text) => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::String(text), Value::Number),
        Yaml::Integer(n) => n.into(),
        Yaml::String(s) => s.into(),
        Yaml::Boolean(b) => b.into(),
        Yaml::Array(items) => items.into_iter().map(yaml_value).collect(),
        Yaml::Hash(hash) => {
            let object: Map<String, Value> = hash
                .into_iter()
                .map(|(key, value)| {
                    let key = match key {
                        Yaml::String(s) => s,
                        Yaml::Integer(n) => n.to_string(),
                        Yaml::Boolean(b) => b.to_string(),
                        Yaml::Real(r) => r,
                        _ => String::new(),
                    };
                    (key, yaml_value(value))
                })
                .collect();
            Value::Object(object)
        }
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Value::Null,
    }
}

/// `value` with every local `$ref` (`#/components/...`) replaced by what it
/// names. A reference back into itself is cut to `{}` with a description,
/// and so are references deeper than `MAX_DEPTH` or past `MAX_NODES`.
pub(super) fn resolve(value: &Value, document: &Index) -> Value {
    let mut nodes = 0;
    resolve_in(value, document, &mut Vec::new(), &mut nodes)
}

fn resolve_in(value: &Value, document: &Index, path: &mut Vec<String>, nodes: &mut usize) -> Value {
    *nodes += 1;
    if *nodes > MAX_NODES || path.len() > MAX_DEPTH {
        return json!({"description": "(schema cut: too large)"});
    }
    match value {
        Value::Object(object) => {
            if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
                if path.iter().any(|seen| seen == reference) {
                    let name = reference.rsplit('/').next().unwrap_or(reference);
                    return json!({"description": format!("(recursive: another {name})")});
                }
                let Some(target) = document.lookup(reference) else {
                    return json!({"description": format!("(unresolved reference {reference})")});
                };
                path.push(reference.to_owned());
                let resolved = resolve_in(&target, document, path, nodes);
                path.pop();
                return resolved;
            }
            let resolved = object
                .iter()
                .map(|(key, value)| (key.clone(), resolve_in(value, document, path, nodes)))
                .collect();
            Value::Object(resolved)
        }
        Value::Array(items) => items
            .iter()
            .map(|item| resolve_in(item, document, path, nodes))
            .collect(),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_and_cycles_are_cut() {
        let text = json!({"openapi": "3.1.0", "components": {"schemas": {
            "Node": {"type": "object", "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}
            }},
            "Ref": {"$ref": "#/components/schemas/Node"}
        }}})
        .to_string();
        let document = Index::new(&text, "test").unwrap();
        let resolved = resolve(&json!({"$ref": "#/components/schemas/Ref"}), &document);
        assert_eq!(resolved["properties"]["name"]["type"], "string");
        let cut = &resolved["properties"]["children"]["items"];
        assert!(
            cut["description"].as_str().unwrap().contains("recursive"),
            "{cut}"
        );
        let missing = resolve(&json!({"$ref": "#/components/schemas/Gone"}), &document);
        assert!(
            missing["description"]
                .as_str()
                .unwrap()
                .contains("unresolved")
        );
    }

    #[test]
    fn yaml_reads_as_json() {
        let value =
            from_yaml("openapi: 3.1.0\npaths:\n  /a:\n    get:\n      operationId: a\n").unwrap();
        assert_eq!(value["paths"]["/a"]["get"]["operationId"], "a");
    }
}
