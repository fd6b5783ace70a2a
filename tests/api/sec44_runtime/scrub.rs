//! Item 7: a configured secret split across a result's text blocks or a
//! call's progress messages, or base64, base64url, hex or percent-encoded,
//! never leaves the server.

use std::path::Path;

use base64::{
    Engine,
    engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD},
};
use serde_json::json;
use teamgate::config::{Secret, UpstreamConfig};

use crate::{
    command_tools::command,
    helpers::{messages, spawn_app_with},
    sdk::{self, call},
    upstream_pins::python,
    upstreams::listed,
};

/// A request-state key, so scrubbed from every result. `?>~` gives its
/// base64 a `+` or `/`, so base64url differs from it.
const SECRET: &str = "rsk-Qz81?>~-0123456789-abcdefghij-KLMNOP";

/// An executable file `name` in `dir` holding `body`; its path.
pub(crate) fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// The 8-character pieces of `text` between its first and last 4: what
/// only the secret determines in any of its encodings.
fn windows(text: &str) -> Vec<&str> {
    let inner = &text[4..text.len() - 4];
    (0..=inner.len() - 8).map(|i| &inner[i..i + 8]).collect()
}

fn assert_none_shows(forms: &[String], output: &str) {
    for form in forms {
        for window in windows(form) {
            assert!(!output.contains(window), "{window} of {form} in {output}");
        }
    }
}

/// Every encoded form: base64 and base64url with and without padding, at
/// each of the three alignments, ending the data or followed by more;
/// lower and upper case hex; every byte percent-encoded.
fn encoded_forms() -> Vec<String> {
    let mut forms = Vec::new();
    for lead in ["", "x", "xy"] {
        for tail in ["", "!"] {
            let plain = format!("{lead}{SECRET}{tail}");
            for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
                forms.push(engine.encode(&plain));
            }
        }
    }
    forms.push(hex::encode(SECRET));
    forms.push(hex::encode_upper(SECRET));
    let percent = |upper: bool| {
        SECRET
            .bytes()
            .map(|b| {
                if upper {
                    format!("%{b:02X}")
                } else {
                    format!("%{b:02x}")
                }
            })
            .collect::<String>()
    };
    forms.push(percent(true));
    forms.push(percent(false));
    forms.sort();
    forms.dedup();
    forms
}

#[tokio::test]
async fn encoded_secrets_in_a_command_tools_output_are_redacted() {
    let forms = encoded_forms();
    assert!(forms.iter().any(|f| f.contains('+') || f.contains('/')));
    let dir = tempfile::tempdir().unwrap();
    let lines: String = forms.iter().map(|f| format!("form: {f} end\n")).collect();
    let program = script(
        dir.path(),
        "print.sh",
        &format!("#!/bin/sh\ncat <<'EOF'\n{lines}EOF\n"),
    );
    let app = spawn_app_with(|c| {
        c.mcp.request_state_keys = vec![Secret::new(SECRET)];
        c.tools.command = vec![command(
            json!({"name": "encode", "description": "prints", "program": program}),
        )];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let printed = call(&client, "encode", json!({})).await;
    let stdout = printed["structuredContent"]["stdout"].as_str().unwrap();
    assert_eq!(stdout.lines().count(), forms.len(), "{printed}");
    for line in stdout.lines() {
        assert!(line.contains("[redacted]"), "{line} in {printed}");
        assert!(
            line.starts_with("form: ") && line.ends_with(" end"),
            "{line}"
        );
    }
    assert_none_shows(&forms, &printed.to_string());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_secret_in_four_character_progress_messages_is_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let pieces: Vec<String> = SECRET
        .as_bytes()
        .chunks(4)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    let program = script(
        dir.path(),
        "drip.sh",
        &format!(
            "#!/bin/sh\ncat <<'EOF'\nstarting\n{}\nEOF\nsleep 0.2\necho done\n",
            pieces.join("\n")
        ),
    );
    let app = spawn_app_with(|c| {
        c.mcp.request_state_keys = vec![Secret::new(SECRET)];
        c.tools.command = vec![command(
            json!({"name": "drip", "description": "prints", "program": program}),
        )];
    })
    .await;
    let session = app.initialize("2025-11-25").await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "drip", "_meta": {"progressToken": "p7"}}});
    let replies = messages(app.post(&call, &headers).await).await;
    let progress: Vec<&str> = replies
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .filter_map(|m| m["params"]["message"].as_str())
        .collect();
    let joined = progress.concat();
    assert!(joined.starts_with("starting"), "{progress:?}");
    assert!(joined.contains("[redacted]"), "{progress:?}");
    assert!(joined.ends_with("done"), "{progress:?}");
    assert_none_shows(&[SECRET.to_owned()], &joined);
    let values: Vec<f64> = replies
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .filter_map(|m| m["params"]["progress"].as_f64())
        .collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
    assert_none_shows(&[SECRET.to_owned()], &replies.last().unwrap().to_string());
}

/// An upstream on the official Python SDK whose one tool answers the
/// secret cut into three text blocks, between two of plain text.
fn split_upstream(dir: &Path, python: &str) -> UpstreamConfig {
    let (a, rest) = SECRET.split_at(7);
    let (b, c) = rest.split_at(20);
    let body = format!(
        r#"from mcp.server import MCPServer
from mcp.types import TextContent

server = MCPServer("pieces", version="1")


@server.tool(description="Answers in pieces.", structured_output=False)
def split() -> list[TextContent]:
    return [TextContent(type="text", text=t) for t in ["before ", "key: {a}", "{b}", "{c} after", " end"]]


server.run("stdio")
"#
    );
    let path = script(dir, "pieces.py", &body);
    serde_json::from_value(json!({"name": "pieces", "command": python, "args": [path]}))
        .expect("an upstream configuration")
}

#[tokio::test]
async fn a_secret_split_across_an_upstreams_text_blocks_is_redacted() {
    let Some((python, _)) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let upstream = split_upstream(dir.path(), &python);
    let app = spawn_app_with(move |c| {
        c.mcp.request_state_keys = vec![Secret::new(SECRET)];
        c.upstreams = vec![upstream];
    })
    .await;
    let names = listed(&app, None, "pieces_split").await;
    assert!(names.iter().any(|n| n == "pieces_split"), "{names:?}");
    let (client, _) = sdk::connect(&app.url, None).await;
    let answered = call(&client, "pieces_split", json!({})).await;
    let texts: Vec<&str> = answered["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert_eq!(texts.len(), 5, "{answered}");
    assert_eq!(
        texts.concat(),
        "before key: [redacted] after end",
        "{answered}"
    );
    assert_none_shows(&[SECRET.to_owned()], &answered.to_string());
    client.cancel().await.unwrap();
}
