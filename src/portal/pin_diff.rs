//! A changed upstream tool definition as an admin reads it before approving
//! or rejecting it (issue 65 part 3): per pinned field, the text of `title`
//! and `description` and the pretty-printed `inputSchema` and
//! `outputSchema` as line diffs (`similar`), each line marked added or
//! removed, and each changed `annotations` hint as old → new. Server-side
//! maud, styled by the stylesheet's `.diff` classes; no script.

use maud::{Markup, html};
use serde_json::{Map, Value};
use similar::{ChangeTag, TextDiff};

/// The fields shown as line diffs, in this order; `annotations` follows.
const LINE_FIELDS: [&str; 5] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
];

/// One line of a line diff.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Line {
    Same(String),
    Removed(String),
    Added(String),
}

/// One changed hint of `annotations`: its old and new value (`None`: unset).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Hint {
    pub(super) name: String,
    pub(super) old: Option<String>,
    pub(super) new: Option<String>,
}

/// What changed between a pinned definition and a new one (canonical JSON;
/// a claim's pinned definition is empty: everything is new).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Changes {
    /// Each changed field with its line diff.
    pub(super) fields: Vec<(String, Vec<Line>)>,
    /// The changed hints of `annotations`.
    pub(super) hints: Vec<Hint>,
    /// The fields present and unchanged.
    pub(super) unchanged: Vec<String>,
}

fn object(definition: &str) -> Map<String, Value> {
    match serde_json::from_str(definition) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// A field's text: a string as it is, anything else pretty-printed JSON.
fn text(value: Option<&Value>) -> String {
    match value {
        None => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// The line diff of two texts.
pub(super) fn lines(old: &str, new: &str) -> Vec<Line> {
    // Each text ends its last line, so a line added after it leaves it the same.
    let ended = |text: &str| match text {
        "" => String::new(),
        text if text.ends_with('\n') => text.to_owned(),
        text => format!("{text}\n"),
    };
    let (old, new) = (ended(old), ended(new));
    let diff = TextDiff::from_lines(&old, &new);
    diff.iter_all_changes()
        .map(|change| {
            let line = change.value().trim_end_matches('\n').to_owned();
            match change.tag() {
                ChangeTag::Equal => Line::Same(line),
                ChangeTag::Delete => Line::Removed(line),
                ChangeTag::Insert => Line::Added(line),
            }
        })
        .collect()
}

/// The changes from `pinned` to `pending`.
pub(super) fn changes(pinned: &str, pending: &str) -> Changes {
    let (old, new) = (object(pinned), object(pending));
    let mut changes = Changes::default();
    for field in LINE_FIELDS {
        let (was, is) = (old.get(field), new.get(field));
        if was == is {
            if was.is_some() {
                changes.unchanged.push(field.to_owned());
            }
            continue;
        }
        let diff = lines(&text(was), &text(is));
        changes.fields.push((field.to_owned(), diff));
    }
    let empty = Map::new();
    let hints = |map: &Map<String, Value>| match map.get("annotations") {
        Some(Value::Object(hints)) => hints.clone(),
        _ => empty.clone(),
    };
    let (was, is) = (hints(&old), hints(&new));
    let mut names: Vec<&String> = was.keys().chain(is.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let (a, b) = (was.get(name), is.get(name));
        if a != b {
            changes.hints.push(Hint {
                name: name.clone(),
                old: a.map(Value::to_string),
                new: b.map(Value::to_string),
            });
        }
    }
    if changes.hints.is_empty() && new.contains_key("annotations") {
        changes.unchanged.push("annotations".to_owned());
    }
    changes
}

/// The diff as the upstreams page shows it.
pub(super) fn render(pinned: &str, pending: &str) -> Markup {
    let changes = changes(pinned, pending);
    html! {
        div.diff {
            @for (field, lines) in &changes.fields {
                h4 { code { (field) } }
                pre.diff { @for line in lines {
                    @match line {
                        Line::Same(text) => span.same { "  " (text) }
                        Line::Removed(text) => del { "- " (text) }
                        Line::Added(text) => ins { "+ " (text) }
                    }
                } }
            }
            @if !changes.hints.is_empty() {
                h4 { code { "annotations" } }
                table.hints { tbody { @for hint in &changes.hints { tr {
                    th { code { (hint.name) } }
                    td { del { (hint.old.as_deref().unwrap_or("unset")) } }
                    td { "→" }
                    td { ins { (hint.new.as_deref().unwrap_or("unset")) } }
                } } } }
            }
            @if !changes.unchanged.is_empty() {
                p.muted { "Unchanged: " (changes.unchanged.join(", ")) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_definition_diffs_per_field() {
        let pinned = r#"{"annotations":{"readOnlyHint":true},"description":"Echoes the text.","inputSchema":{"properties":{"text":{"type":"string"}},"type":"object"},"name":"describe"}"#;
        let pending = r#"{"annotations":{"destructiveHint":true,"readOnlyHint":false},"description":"Echoes the text.\nThen mails it out.","inputSchema":{"properties":{"text":{"type":"string"},"to":{"type":"string"}},"type":"object"},"name":"describe"}"#;
        let changes = changes(pinned, pending);
        let fields: Vec<&str> = changes.fields.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, ["description", "inputSchema"]);
        assert_eq!(
            changes.fields[0].1,
            [
                Line::Same("Echoes the text.".into()),
                Line::Added("Then mails it out.".into()),
            ]
        );
        let schema = &changes.fields[1].1;
        assert!(
            schema.contains(&Line::Added("    \"to\": {".into())),
            "{schema:?}"
        );
        assert!(!schema.iter().any(|l| matches!(l, Line::Removed(_))));
        assert_eq!(
            changes.hints,
            [
                Hint {
                    name: "destructiveHint".into(),
                    old: None,
                    new: Some("true".into())
                },
                Hint {
                    name: "readOnlyHint".into(),
                    old: Some("true".into()),
                    new: Some("false".into())
                },
            ]
        );
        assert_eq!(changes.unchanged, ["name"]);
        let html = render(pinned, pending).into_string();
        assert!(html.contains("<ins>+ Then mails it out.</ins>"), "{html}");
        assert!(html.contains("<del>true</del>"), "{html}");
    }

    #[test]
    fn a_claim_shows_every_field_as_new() {
        let changes = changes("", r#"{"description":"d","name":"t"}"#);
        assert_eq!(changes.fields.len(), 2);
        assert_eq!(
            changes.fields[0],
            ("name".into(), vec![Line::Added("t".into())])
        );
    }
}
