//! Issue 63 item 6: a normal session leaves nothing alarming in the log.
//! The official filesystem server (npm) asks `roots/list` as soon as it is
//! connected, outside any member's call: teamgate refuses it (the server
//! asks again within a call) and says so in words at INFO, not as a WARN in
//! Rust debug text; and members
//! connecting, calling and leaving normally (the Rust SDK client and the
//! Python SDK client, each ending its session) log no WARN or ERROR.

use std::{process::Command, time::Duration};

use serde_json::{Value, json};

use crate::{helpers::repo_path, sdk};

#[tokio::test]
async fn a_normal_session_with_a_roots_asking_upstream_logs_no_warning_or_error() {
    let script = repo_path(
        ".cache/catalog-servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    );
    let (node, python) = (
        repo_path(".cache/bin/node22"),
        repo_path(".cache/venv/bin/python"),
    );
    if !script.exists() || !node.exists() || !python.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "scripts/install-test-deps.sh installs the filesystem server and the Python SDK"
        );
        eprintln!("SKIP: the filesystem server or the venv is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "hello").unwrap();
    let config = dir.path().join("fs.toml");
    let upstream = json!({"name": "fs", "command": node, "pin": false,
        "args": [script, dir.path()]});
    let upstream: toml::Value = serde_json::from_value(upstream).unwrap();
    let body = toml::to_string(&json!({"upstreams": [upstream]})).unwrap();
    std::fs::write(&config, body).unwrap();
    let served = crate::binary::serve(&config, &[]);
    served.logged("upstream connected");
    // Asked and refused (the server asks again within a call), said in words.
    let refused = served.logged("an upstream's request to its client was not relayed");
    let refused: Value = serde_json::from_str(&refused).unwrap();
    assert_eq!(refused["level"], "INFO", "{refused}");
    assert_eq!(refused["fields"]["method"], "roots/list", "{refused}");
    assert!(
        (refused["fields"]["reason"].as_str().unwrap()).contains("only within a member's call"),
        "{refused}"
    );
    assert!(!refused.to_string().contains("ErrorData"), "{refused}");
    let token = served.token("alice", &[]);
    // From here on (before: the first-token hint, on purpose).
    let before = served.lines().len();

    // The Rust SDK client: lists, calls, ends its session.
    let (client, _) = sdk::connect_as(&served.url, Some(&token), None).await;
    let mut listed = false;
    for _ in 0..100 {
        let tools = client.list_all_tools().await.unwrap();
        if tools
            .iter()
            .any(|t| t.name == "fs_list_allowed_directories")
        {
            listed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(listed, "the filesystem server's tools are offered");
    let result = sdk::call(&client, "fs_list_allowed_directories", json!({})).await;
    assert!(
        sdk::text(&result).contains("Allowed directories"),
        "{result:?}"
    );
    client.cancel().await.unwrap();

    // The Python SDK client, the same way.
    let program = format!(
        r#"
import asyncio, httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
async def main():
    headers = {{"Authorization": "Bearer {token}"}}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client("{url}", http_client=http) as (r, w, *_):
            async with ClientSession(r, w) as s:
                await s.initialize()
                res = await s.call_tool("fs_list_allowed_directories", {{}})
                print(res.content[0].text)
asyncio.run(main())
"#,
        url = served.url
    );
    let output = Command::new(&python)
        .args(["-c", &program])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("Allowed directories"),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // Anything late (a session's end, a stream's close) has had time to log.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let alarming: Vec<String> = (served.lines().into_iter().skip(before))
        .filter(|line| {
            let line: Value = serde_json::from_str(line).unwrap_or_default();
            matches!(line["level"].as_str(), Some("WARN" | "ERROR"))
        })
        .collect();
    assert!(alarming.is_empty(), "{alarming:#?}");
}
