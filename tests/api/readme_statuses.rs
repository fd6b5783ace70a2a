//! Issue 63 item 6: README's sentence on what a client's error statuses
//! mean holds as written: `401` without a (good) token, with the challenge;
//! `403` naming the scope the token lacks; `404` "Session not found" for an
//! ended session, which the TypeScript SDK reports (it does not start a new
//! session by itself: a new connection does).

use std::process::Command;

use serde_json::{Value, json};

use crate::helpers::repo_path;

fn call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "teamgate_info", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}}})
}

async fn post(url: &str, token: Option<&str>, body: &Value) -> (u16, String, Value) {
    let mut request = teamgate::outbound::client()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "teamgate_info")
        .json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let challenge = (response.headers().get("www-authenticate"))
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, challenge, response.json().await.unwrap_or_default())
}

#[tokio::test]
async fn the_readme_says_what_each_error_status_means() {
    let readme = std::fs::read_to_string(repo_path("README.md")).unwrap();
    assert!(
        readme.contains("`403` names the scope it lacks") && readme.contains("Session not found"),
        "the sentence this test checks is in README"
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("plain.toml");
    std::fs::write(&config, "").unwrap();
    let served = crate::binary::serve(&config, &[]);

    let (status, challenge, body) = post(&served.url, None, &call(1)).await;
    assert_eq!(status, 401, "{body}");
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    let (status, _, body) = post(&served.url, Some("tg_not-a-token"), &call(2)).await;
    assert_eq!(status, 401, "{body}");

    let narrow = served.token("bob", &["resources:read"]);
    let (status, challenge, body) = post(&served.url, Some(&narrow), &call(3)).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["id"], 3, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("tools:") || challenge.contains("scope=\"tools:"),
        "the refusal names the scope: {message} / {challenge}"
    );

    // The TypeScript SDK, its session ended under it.
    let sdk = repo_path(".cache/ts-client/node_modules/@modelcontextprotocol/sdk/dist/esm");
    let node = repo_path(".cache/bin/node22");
    if !sdk.exists() || !node.exists() {
        assert!(std::env::var_os("CI").is_none(), "CI installs the TS SDK");
        eprintln!("SKIP: the TypeScript SDK is not installed");
        return;
    }
    let token = served.token("alice", &[]);
    let script = format!(
        r#"
import {{ Client }} from "{sdk}/client/index.js";
import {{ StreamableHTTPClientTransport }} from "{sdk}/client/streamableHttp.js";
const url = new URL("{url}");
const headers = {{ Authorization: "Bearer {token}" }};
const client = new Client({{ name: "readme", version: "1" }});
const transport = new StreamableHTTPClientTransport(url, {{ requestInit: {{ headers }} }});
await client.connect(transport);
const ended = await fetch(url, {{ method: "DELETE", headers: {{ ...headers,
  "mcp-session-id": transport.sessionId, "mcp-protocol-version": "2025-11-25" }} }});
console.log("ended", ended.status);
try {{ await client.callTool({{ name: "teamgate_info", arguments: {{}} }}); console.log("called"); }}
catch (error) {{ console.log("refused:", error.message); }}
const again = new Client({{ name: "readme", version: "1" }});
await again.connect(new StreamableHTTPClientTransport(url, {{ requestInit: {{ headers }} }}));
const result = await again.callTool({{ name: "teamgate_info", arguments: {{}} }});
console.log("reconnected:", result.structuredContent.user);
await again.close();
await client.close();
"#,
        sdk = sdk.display(),
        url = served.url
    );
    let file = dir.path().join("ended.mjs");
    std::fs::write(&file, script).unwrap();
    let output = Command::new(&node).arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let said = format!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("ended 200"), "{said}");
    assert!(
        stdout.contains("refused:") && stdout.contains("Session not found"),
        "{said}"
    );
    assert!(stdout.contains("reconnected: alice"), "{said}");
}
