//! The ready-to-paste client setups shown with a new token and on the
//! endpoints page (the same ones `docs/connecting-clients.md` describes),
//! with the server's name, the endpoint's URL and the header filled in.

use maud::{Markup, html};
use serde_json::json;

/// Each client's name, where the text goes, and the text, for the endpoint
/// at `url` known to the client as `server`.
pub(super) fn setups(
    server: &str,
    url: &str,
    token: &str,
) -> Vec<(&'static str, &'static str, String)> {
    let header = format!("Bearer {token}");
    let input = format!("{server}-token");
    // VS Code asks for the token once and keeps it in its secret storage: a
    // workspace's .vscode/mcp.json is committed, so it never holds the token.
    let vscode = json!({
        "inputs": [{"type": "promptString", "id": input,
            "description": "teamgate personal token (paste it when VS Code asks)", "password": true}],
        "servers": {server: {"type": "http", "url": url,
            "headers": {"Authorization": format!("Bearer ${{input:{input}}}")}}}});
    let cursor = json!({"mcpServers": {server: {"url": url,
        "headers": {"Authorization": header}}}});
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
    vec![
        (
            "Claude Code",
            "run in a terminal",
            format!(
                "claude mcp add --transport http {server} {url} \\\n  --header \"Authorization: {header}\""
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

pub(super) fn render(server: &str, url: &str, token: &str) -> Markup {
    render_first(server, url, token, usize::MAX)
}

/// The first `shown` setups, and the others folded under "More clients".
pub(super) fn render_first(server: &str, url: &str, token: &str, shown: usize) -> Markup {
    let all = setups(server, url, token);
    let (first, rest) = all.split_at(shown.min(all.len()));
    let one = |(client, place, text): &(&str, &str, String)| {
        html! {
            section {
                h3 { (client) " " span.muted { "(" (place) ")" } }
                pre { code { (text) } }
            }
        }
    };
    html! {
        @for setup in first { (one(setup)) }
        @if !rest.is_empty() {
            details {
                summary { "More clients: " (rest.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")) }
                @for setup in rest { (one(setup)) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_setup_names_the_url_and_the_header() {
        let url = "https://mcp.example.com/mcp/oncall";
        for (client, _, text) in super::setups("teamgate-oncall", url, "tg_a_b") {
            assert!(text.contains(url), "{text}");
            // The server's name, so several endpoints sit side by side in one client.
            let named = client == "MCP Inspector" || text.contains("teamgate-oncall");
            assert!(named, "{text}");
            if client == "VS Code" {
                // Never the token in a file a workspace commits: VS Code prompts for it.
                assert!(!text.contains("tg_a_b"), "{text}");
                assert!(
                    text.contains("promptString")
                        && text.contains("${input:teamgate-oncall-token}")
                );
            } else {
                assert!(text.contains("Bearer tg_a_b"), "{text}");
            }
        }
    }
}
