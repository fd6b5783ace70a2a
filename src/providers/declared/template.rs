//! `{arg}` placeholders of declared URL, argv and body templates, and
//! `{{arg}}` of prompt templates. Only `[A-Za-z0-9_]` names are
//! placeholders, so JSON or code braces in a template are left alone.

use serde_json::{Map, Value};

/// Byte ranges and names of the `{name}` placeholders in `template`
/// (`{{name}}` when `double`).
fn placeholders(template: &str, double: bool) -> Vec<(usize, usize, &str)> {
    let (open, close) = if double { ("{{", "}}") } else { ("{", "}") };
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(start) = template[from..].find(open).map(|i| i + from) {
        let name_start = start + open.len();
        let Some(len) = template[name_start..].find(close) else {
            break;
        };
        let name = template[name_start..name_start + len].trim();
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if valid {
            found.push((start, name_start + len + close.len(), name));
            from = name_start + len + close.len();
        } else {
            from = name_start;
        }
    }
    found
}

/// The argument names a template refers to.
pub fn names(template: &str) -> Vec<&str> {
    placeholders(template, false)
        .into_iter()
        .map(|(_, _, n)| n)
        .collect()
}

/// The argument names a prompt template (`{{name}}`) refers to.
pub fn prompt_names(template: &str) -> Vec<&str> {
    placeholders(template, true)
        .into_iter()
        .map(|(_, _, n)| n)
        .collect()
}

/// Replaces each placeholder with `value(name)`; absent values become "".
pub fn render(template: &str, double: bool, value: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut last = 0;
    for (start, end, name) in placeholders(template, double) {
        out.push_str(&template[last..start]);
        out.push_str(&value(name).unwrap_or_default());
        last = end;
    }
    out.push_str(&template[last..]);
    out
}

/// An argument as text: strings as they are, other JSON as JSON.
pub fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Renders a JSON body template: a string that is exactly one placeholder
/// becomes the argument's JSON value (or null); other strings are rendered.
pub fn render_json(template: &Value, arguments: &Map<String, Value>) -> Value {
    match template {
        Value::String(s) => {
            let found = placeholders(s, false);
            if let [(0, end, name)] = found.as_slice()
                && *end == s.len()
            {
                return arguments.get(*name).cloned().unwrap_or(Value::Null);
            }
            Value::String(render(s, false, |n| arguments.get(n).map(as_text)))
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| render_json(item, arguments))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), render_json(v, arguments)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// JSON with object keys sorted, so equal arguments give equal cache keys
/// whatever order the client sent them in.
pub fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::from(k.as_str()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn renders_only_named_placeholders() {
        let out = render("a {x} {not valid} {{y}} {y}", false, |n| {
            Some(n.to_uppercase())
        });
        assert_eq!(out, "a X {not valid} {Y} Y");
        assert_eq!(
            render("Hi {{ who }}!", true, |_| Some("Ann".into())),
            "Hi Ann!"
        );
        assert_eq!(names("/x/{a}?b={b}"), vec!["a", "b"]);
    }

    #[test]
    fn json_bodies_keep_argument_types() {
        let args = json!({"n": 3, "t": "hi"});
        let args = args.as_object().unwrap();
        let body = render_json(
            &json!({"n": "{n}", "msg": "say {t}", "x": "{missing}"}),
            args,
        );
        assert_eq!(body, json!({"n": 3, "msg": "say hi", "x": null}));
    }

    #[test]
    fn canonical_sorts_keys() {
        assert_eq!(
            canonical(&json!({"b": 1, "a": [{"d": 1, "c": 2}]})),
            canonical(&json!({"a": [{"c": 2, "d": 1}], "b": 1}))
        );
    }
}
