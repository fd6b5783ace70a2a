//! Search mode (issue 60 part 2) with real servers from npm as upstreams
//! (the official memory, filesystem and everything servers): `tools/list`
//! is the pinned tools and two meta-tools; `search_tools` ranks only what
//! the caller may call on its endpoint; `call_tool` is refused exactly as a
//! direct call would be, and otherwise calls with every policy, audited
//! under the real tool's name.

use std::{collections::BTreeSet, time::Duration};

use reqwest::StatusCode;
use serde_json::json;
use teamgate::{
    config::{AuthMode, Discovery, UpstreamConfig},
    store::AuditRecord,
};

use crate::{
    helpers::{TestApp, audit_until, repo_path, spawn_app_with},
    toolsets::{call, names, token},
    upstreams::everything,
};

fn npm_server(name: &str, package: &str, args: &[&str]) -> Option<UpstreamConfig> {
    let script = repo_path(&format!(
        ".cache/catalog-servers/node_modules/@modelcontextprotocol/{package}/dist/index.js"
    ));
    let node = repo_path(".cache/bin/node22");
    if !script.exists() || !node.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "scripts/install-test-deps.sh installs {package}"
        );
        eprintln!("SKIP: {package} is not installed (scripts/install-test-deps.sh)");
        return None;
    }
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    let config =
        json!({"name": name, "command": node.display().to_string(), "args": all, "pin": false});
    Some(serde_json::from_value(config).unwrap())
}

/// The three upstreams; `/mcp` in search mode pinning `teamgate_info`, a
/// searching toolset `ops` (memory and files) and a listing one `all`.
async fn served(files: &std::path::Path) -> Option<TestApp> {
    let memory = npm_server("memory", "server-memory", &[])?;
    let fs = npm_server("fs", "server-filesystem", &[&files.display().to_string()])?;
    let (node, script) = everything()?;
    let everything = crate::upstreams::upstream(&node, &script, json!({"tools": {}, "pin": false}));
    let app = spawn_app_with(move |c| {
        c.auth.mode = AuthMode::Required;
        c.mcp.discovery = Discovery::Search;
        c.mcp.always = vec!["teamgate_info".into()];
        c.upstreams = vec![memory, fs, everything];
        c.toolsets = vec![
            serde_json::from_value(
                json!({"name": "ops", "include": ["memory_*", "fs_*"], "discovery": "search"}),
            )
            .unwrap(),
            serde_json::from_value(json!({"name": "all", "include": ["*"]})).unwrap(),
        ];
    })
    .await;
    // Wait for the three upstreams on the listing endpoint.
    let admin = token(&app, "ada", &["*"]).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let all = names(&app, "/mcp/all", &admin).await;
        if ["memory_read_graph", "fs_list_directory", "echo"]
            .iter()
            .all(|n| all.iter().any(|a| a.ends_with(n)))
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "upstreams not listed: {all:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Some(app)
}

async fn search(app: &TestApp, path: &str, token: &str, query: &str) -> Vec<String> {
    let (status, reply) = call(
        app,
        path,
        token,
        5,
        "tools/call",
        json!({"name": "search_tools", "arguments": {"query": query, "limit": 3}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let tools = reply["result"]["structuredContent"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{reply}"));
    for tool in tools {
        assert!(
            tool["inputSchema"].is_object() && tool["description"].is_string(),
            "{tool}"
        );
    }
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn search_mode_lists_meta_tools_and_ranks_only_what_the_caller_may_call() {
    let files = tempfile::tempdir().unwrap();
    std::fs::write(files.path().join("notes.txt"), "hello\n").unwrap();
    let Some(app) = served(files.path()).await else {
        return;
    };
    let admin = token(&app, "ada", &["*"]).await;
    let listed = names(&app, "/mcp", &admin).await;
    assert_eq!(
        listed,
        BTreeSet::from(["call_tool", "search_tools", "teamgate_info"].map(String::from))
    );

    // Ranked by what the words mean, over the three servers' tools.
    let found = search(&app, "/mcp", &admin, "remember that Alice prefers tea").await;
    assert!(found.iter().any(|n| n.starts_with("memory_")), "{found:?}");
    let found = search(&app, "/mcp", &admin, "list the files in a folder").await;
    assert!(found.iter().any(|n| n == "fs_list_directory"), "{found:?}");

    // A member who may call only memory_read_graph: search never shows
    // anything else, and call_tool is refused as the direct call is.
    let reader = token(&app, "rita", &["tools:memory_read_graph"]).await;
    for query in [
        "list the files in a folder",
        "read the knowledge graph",
        "echo a message",
    ] {
        let found = search(&app, "/mcp", &reader, query).await;
        assert!(
            found.iter().all(|n| n == "memory_read_graph"),
            "{query}: {found:?}"
        );
    }
    let direct = call(
        &app,
        "/mcp",
        &reader,
        6,
        "tools/call",
        json!({"name": "fs_list_directory", "arguments": {"path": files.path()}}),
    )
    .await;
    let through = call(&app, "/mcp", &reader, 6, "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "fs_list_directory", "arguments": {"path": files.path()}}})).await;
    assert_eq!(direct.0, through.0, "{} / {}", direct.1, through.1);
    assert_eq!(
        direct.1["error"]["code"], through.1["error"]["code"],
        "{} / {}",
        direct.1, through.1
    );
    assert!(direct.1["error"].is_object(), "{}", direct.1);

    // Allowed, through call_tool: the real tool runs, audited by its name.
    let (_, reply) = call(&app, "/mcp", &admin, 7, "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "fs_list_directory", "arguments": {"path": files.path()}}})).await;
    assert!(reply["result"].to_string().contains("notes.txt"), "{reply}");
    let ran = |r: &AuditRecord| r.target == "fs_list_directory" && r.outcome == "ok";
    let records = audit_until(&app.store, Some("ada"), |r| r.iter().any(ran)).await;
    assert!(
        records.iter().any(ran),
        "the call is audited under the real tool's name: {records:?}"
    );

    // The toolset `ops` searches only its own tools.
    let found = search(&app, "/mcp/ops", &admin, "echo a message back").await;
    assert!(
        found
            .iter()
            .all(|n| n.starts_with("memory_") || n.starts_with("fs_")),
        "{found:?}"
    );
    let listed = names(&app, "/mcp/ops", &admin).await;
    assert_eq!(
        listed,
        BTreeSet::from(["call_tool", "search_tools"].map(String::from))
    );
}
