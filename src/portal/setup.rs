//! The ready-to-paste client setups shown with a new token (the same ones
//! `docs/connecting-clients.md` describes), with the URL and header filled in.

use maud::{Markup, html};
use serde_json::json;

/// Each client's name, where the text goes, and the text.
pub(super) fn setups(url: &str, token: &str) -> Vec<(&'static str, &'static str, String)> {
    let header = format!("Bearer {token}");
    // VS Code asks for the token once and keeps it in its secret storage: a
    // workspace's .vscode/mcp.json is committed, so it never holds the token.
    let vscode = json!({
        "inputs": [{"type": "promptString", "id": "teamgate-token",
            "description": "teamgate personal token (paste it when VS Code asks)", "password": true}],
        "servers": {"teamgate": {"type": "http", "url": url,
            "headers": {"Authorization": "Bearer ${input:teamgate-token}"}}}});
    let cursor = json!({"mcpServers": {"teamgate": {"url": url,
        "headers": {"Authorization": header}}}});
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
    vec![
        (
            "Claude Code",
            "run in a terminal",
            format!(
                "claude mcp add --transport http teamgate {url} --header \"Authorization: {header}\""
            ),
        ),
        ("VS Code", ".vscode/mcp.json", pretty(&vscode)),
        ("Cursor", "~/.cursor/mcp.json", pretty(&cursor)),
        (
            "MCP Inspector",
            "run in a terminal (Node 22.19+)",
            format!(
                "npx @modelcontextprotocol/inspector@2 --cli {url} --transport http \\\n  --header \"Authorization: {header}\" --method tools/list"
            ),
        ),
    ]
}

pub(super) fn render(url: &str, token: &str) -> Markup {
    html! {
        @for (client, place, text) in setups(url, token) {
            section {
                h3 { (client) " " span.muted { "(" (place) ")" } }
                pre { code { (text) } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_setup_names_the_url_and_the_header() {
        for (client, _, text) in super::setups("https://mcp.example.com/mcp", "tg_a_b") {
            assert!(text.contains("https://mcp.example.com/mcp"), "{text}");
            if client == "VS Code" {
                // Never the token in a file a workspace commits: VS Code prompts for it.
                assert!(!text.contains("tg_a_b"), "{text}");
                assert!(text.contains("promptString") && text.contains("${input:teamgate-token}"));
            } else {
                assert!(text.contains("Bearer tg_a_b"), "{text}");
            }
        }
    }
}
