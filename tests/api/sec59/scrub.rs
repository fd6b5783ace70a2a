//! Item 3: what the scrubber of issue 44 still let through. A secret split
//! by a non-text block, split between the last progress message and the
//! result, base64 wrapped at 64 or 76 columns, hex with separators, in
//! another case, `\u`-escaped, partly percent-encoded or base32.

use std::path::Path;

use base64::{Engine, engine::general_purpose::STANDARD};
use serde_json::{Value, json};
use teamgate::config::{Secret, UpstreamConfig};

use crate::{
    command_tools::command,
    helpers::{messages, spawn_app_with},
    sdk::{self, call},
    sec44_runtime::scrub::script,
    upstream_pins::python,
    upstreams::listed,
};

/// A request-state key, so scrubbed from every result.
const SECRET: &str = "rsk-Qz81?>~-0123456789-abcdefghij-KLMNOP";

fn wrapped(text: &str, columns: usize) -> String {
    let chunks: Vec<String> = (text.as_bytes().chunks(columns))
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    chunks.join("\n")
}

/// Each form the attack showed passing, named.
fn forms() -> Vec<(&'static str, String)> {
    // Long enough data around the secret that the base64 wraps inside it.
    let data = format!("{}{SECRET}{}", "x".repeat(40), "y".repeat(40));
    let bytes = SECRET.as_bytes();
    let hex_with = |sep: &str| {
        (bytes.iter().map(|b| format!("{b:02x}")))
            .collect::<Vec<_>>()
            .join(sep)
    };
    let half = SECRET.len() / 2;
    let partly: String = SECRET[..half].to_owned()
        + &(SECRET[half..].bytes().map(|b| format!("%{b:02X}"))).collect::<String>();
    vec![
        ("base64 at 64", wrapped(&STANDARD.encode(&data), 64)),
        ("base64 at 76", wrapped(&STANDARD.encode(&data), 76)),
        ("hex spaced", hex_with(" ")),
        ("hex colons", hex_with(":")),
        (
            "hex escaped",
            bytes.iter().map(|b| format!("\\x{b:02x}")).collect(),
        ),
        ("upper case", SECRET.to_uppercase()),
        ("lower case", SECRET.to_lowercase()),
        (
            "json escapes",
            SECRET
                .chars()
                .map(|c| format!("\\u{:04x}", c as u32))
                .collect(),
        ),
        ("partly percent", partly),
        ("base32", data_encoding::BASE32.encode(data.as_bytes())),
        (
            "base32 lower",
            data_encoding::BASE32.encode(data.as_bytes()).to_lowercase(),
        ),
    ]
}

#[tokio::test]
async fn wrapped_separated_escaped_and_case_changed_forms_are_redacted() {
    let forms = forms();
    let dir = tempfile::tempdir().unwrap();
    let printed: String = (forms.iter().enumerate())
        .map(|(i, (_, form))| format!("<{i}>\n{form}\n</{i}>\n"))
        .collect();
    let program = script(
        dir.path(),
        "print.sh",
        &format!("#!/bin/sh\ncat <<'EOF'\n{printed}EOF\n"),
    );
    let app = spawn_app_with(|c| {
        c.mcp.request_state_keys = vec![Secret::new(SECRET)];
        c.tools.command = vec![command(
            json!({"name": "forms", "description": "prints", "program": program}),
        )];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let answered = call(&client, "forms", json!({})).await;
    let stdout = answered["structuredContent"]["stdout"].as_str().unwrap();
    for (i, (name, form)) in forms.iter().enumerate() {
        let (open, close) = (format!("<{i}>\n"), format!("\n</{i}>"));
        let start = stdout
            .find(&open)
            .unwrap_or_else(|| panic!("{name}: {stdout}"))
            + open.len();
        let end = stdout
            .find(&close)
            .unwrap_or_else(|| panic!("{name}: {stdout}"));
        let shown = &stdout[start..end];
        assert!(shown.contains("[redacted]"), "{name}: {shown}");
        // What is left is the data around the secret and a few characters
        // at its edges, never a stretch of the secret's own.
        let left = shown.replace("[redacted]", "");
        let left: String = left.chars().filter(|c| !c.is_whitespace()).collect();
        let whole = form.chars().filter(|c| !c.is_whitespace()).count();
        assert!(whole >= left.len() + 30, "{name}: {shown}");
        for piece in SECRET.as_bytes().chunks(10) {
            let piece = std::str::from_utf8(piece).unwrap();
            assert!(!shown.contains(piece), "{name}: {piece} in {shown}");
        }
    }
    client.cancel().await.unwrap();
}

/// An upstream on the official Python SDK: `parted` answers the secret cut
/// by an image block; `dripped` sends its first half as the last progress
/// message and the rest at the start of its result.
fn leaky_upstream(dir: &Path, python: &str) -> UpstreamConfig {
    let (a, b) = SECRET.split_at(19);
    let body = format!(
        r#"from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import ImageContent, TextContent

server = MCPServer("leaky", version="1")


@server.tool(description="Answers in parts.", structured_output=False)
def parted() -> list:
    return [
        TextContent(type="text", text="key: {a}"),
        ImageContent(type="image", data="aGVsbG8=", mimeType="image/png"),
        TextContent(type="text", text="{b} after"),
    ]


@server.tool(description="Drips.", structured_output=False)
async def dripped(ctx: Context) -> str:
    await ctx.report_progress(1, 2, "starting")
    await ctx.report_progress(2, 2, "key: {a}")
    return "{b} after"


server.run("stdio")
"#
    );
    let path = script(dir, "leaky.py", &body);
    serde_json::from_value(json!({"name": "leaky", "command": python, "args": [path]}))
        .expect("an upstream configuration")
}

#[tokio::test]
async fn a_secret_parted_by_an_image_or_by_the_end_of_progress_is_redacted() {
    let Some((python, _)) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let upstream = leaky_upstream(dir.path(), &python);
    let app = spawn_app_with(move |c| {
        c.mcp.request_state_keys = vec![Secret::new(SECRET)];
        c.upstreams = vec![upstream];
    })
    .await;
    let names = listed(&app, None, "leaky_dripped").await;
    assert!(names.iter().any(|n| n == "leaky_parted"), "{names:?}");
    let (client, _) = sdk::connect(&app.url, None).await;
    let answered = call(&client, "leaky_parted", json!({})).await;
    let texts: Vec<&str> = (answered["content"].as_array().unwrap().iter())
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert_eq!(texts.concat(), "key: [redacted] after", "{answered}");
    assert_eq!(answered["content"][1]["type"], "image", "{answered}");
    client.cancel().await.unwrap();

    let session = app.initialize("2025-11-25").await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "leaky_dripped", "_meta": {"progressToken": "p7"}}});
    let replies = messages(app.post(&call, &headers).await).await;
    let progress: Vec<&str> = (replies.iter())
        .filter(|m| m["method"] == "notifications/progress")
        .filter_map(|m| m["params"]["message"].as_str())
        .collect();
    let result: &Value = &replies.last().unwrap()["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let whole = format!("{}{text}", progress.concat());
    assert_eq!(whole, "startingkey: [redacted] after", "{replies:?}");
}
