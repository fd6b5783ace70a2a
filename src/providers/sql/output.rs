//! Rows as a tool result: `structuredContent` `{ rows, truncated }` for
//! programs, and a Markdown table in the text for the model.

use serde_json::{Value, json};

use super::engine::Rows;
use crate::{protocol::CallToolResult, providers::wire};

/// Characters of one cell shown in the table (the JSON keeps them all).
const CELL: usize = 80;

/// The output schema every SQL tool declares.
pub(super) fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "rows": {"type": "array", "items": {"type": "object"}},
            "truncated": {"type": "boolean"},
        },
        "required": ["rows", "truncated"],
    })
}

pub(super) fn result(rows: Rows) -> CallToolResult {
    let mut text = table(&rows.columns, &rows.rows);
    let count = rows.rows.len();
    text.push_str(&match &rows.truncated {
        Some(why) => format!("\n({count} rows shown; {why})"),
        None => format!("\n({count} row{})", if count == 1 { "" } else { "s" }),
    });
    wire(json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"rows": rows.rows, "truncated": rows.truncated.is_some()},
        "isError": false,
    }))
}

fn cell(value: &Value) -> String {
    let text = match value {
        Value::Null => "NULL".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut text: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect::<String>()
        .replace('|', "\\|");
    if text.chars().count() > CELL {
        text = text.chars().take(CELL - 1).collect::<String>() + "…";
    }
    text
}

/// A Markdown table of the rows, columns in the statement's order.
fn table(columns: &[String], rows: &[serde_json::Map<String, Value>]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut text = line(
        columns
            .iter()
            .map(|c| cell(&Value::from(c.as_str())))
            .collect(),
    );
    text.push_str(&line(columns.iter().map(|_| "---".to_owned()).collect()));
    for row in rows {
        let cells = columns
            .iter()
            .map(|c| cell(row.get(c).unwrap_or(&Value::Null)))
            .collect();
        text.push_str(&line(cells));
    }
    text
}
