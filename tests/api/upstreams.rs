//! Upstream MCP servers (issue 26): the official everything server, started
//! by teamgate over stdio, its tools listed and called through teamgate with
//! teamgate's own policies: the prefix and globs, scopes, secret scrubbing,
//! progress to the caller, a member's token never passed on.

use std::time::Duration;

use serde_json::{Value, json};
use teamgate::config::{AuthMode, Config, UpstreamConfig};

use crate::{
    helpers::{TestApp, audit_until, messages, repo_path, spawn_app_with},
    sec_authz::{reply, send},
};

/// The everything server's entry point, installed by scripts/install-test-deps.sh.
pub(crate) fn everything() -> Option<(String, String)> {
    let script = repo_path(
        ".cache/server-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    let node = repo_path(".cache/bin/node22");
    if !script.exists() || !node.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "scripts/install-test-deps.sh installs the everything server; CI runs it first"
        );
        eprintln!("SKIP: the everything server is not installed (scripts/install-test-deps.sh)");
        return None;
    }
    Some((node.display().to_string(), script.display().to_string()))
}

pub(crate) fn upstream(node: &str, script: &str, adjust: Value) -> UpstreamConfig {
    let mut config = json!({
        "name": "everything",
        "command": node,
        "args": [script, "stdio"],
        // A secret of the upstream's environment: scrubbed from what it returns.
        "secret_env": ["HOME"],
        "tools": {"include": ["echo", "get-env", "trigger-long-running-operation"]},
    });
    if let (Value::Object(config), Value::Object(adjust)) = (&mut config, adjust) {
        config.extend(adjust);
    }
    serde_json::from_value(config).expect("an upstream configuration")
}

/// The tool names `tools/list` shows the bearer of `token` (or anyone,
/// without authentication), once the upstream's tools are there.
pub(crate) async fn listed(app: &TestApp, token: Option<&str>, expect: &str) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}});
        let headers = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ];
        let text = match token {
            Some(token) => send(app, token, &body, &headers).await.1,
            None => app.post(&body, &headers).await.text().await.unwrap(),
        };
        let names: Vec<String> = reply(&text)["result"]["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if names.iter().any(|n| n == expect) || tokio::time::Instant::now() > deadline {
            return names;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub(crate) fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "teamgate-tests", "version": "1"},
    })
}

async fn spawn_with_upstream(adjust: impl FnOnce(&mut Config) + Send + 'static) -> Option<TestApp> {
    let (node, script) = everything()?;
    Some(
        spawn_app_with(move |c| {
            c.upstreams = vec![upstream(&node, &script, json!({}))];
            adjust(c);
        })
        .await,
    )
}

#[tokio::test]
async fn an_upstream_stdio_servers_tools_are_offered_prefixed_filtered_and_scrubbed() {
    let Some(app) = spawn_with_upstream(|_| {}).await else {
        return;
    };
    let names = listed(&app, None, "everything_echo").await;
    for name in [
        "everything_echo",
        "everything_get-env",
        "everything_trigger-long-running-operation",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    assert!(
        !names
            .iter()
            .any(|n| n == "everything_get-sum" || n == "echo"),
        "only the included tools, only under the prefix: {names:?}"
    );
    let (status, replies) = app
        .modern_call(
            2,
            "tools/call",
            json!({"name": "everything_echo", "arguments": {"message": "hello upstream"}}),
        )
        .await;
    assert_eq!(status, 200);
    let text = replies[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.contains("hello upstream"), "{replies:?}");

    // The upstream's environment holds a secret (HOME, by its `secret_env`).
    let home = std::env::var("HOME").unwrap();
    let (_, replies) = app
        .modern_call(
            3,
            "tools/call",
            json!({"name": "everything_get-env", "arguments": {}}),
        )
        .await;
    let env = replies[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(env.contains("[redacted]"), "{env}");
    assert!(
        !env.contains(&home),
        "the upstream's secret never leaves teamgate"
    );
    // Its audit record names the credential kind, never the value.
    let served: Vec<_> = audit_until(&app.store, None, |t| {
        t.iter().any(|r| r.target == "everything_get-env")
    })
    .await
    .into_iter()
    .filter(|r| r.target == "everything_get-env")
    .map(|r| (r.upstream, r.credential))
    .collect();
    assert_eq!(served, [("everything".to_owned(), "shared".to_owned())]);

    // An unknown name under the prefix is refused with the id.
    let (_, replies) = app
        .modern_call(
            4,
            "tools/call",
            json!({"name": "everything_get-sum", "arguments": {"a": 1, "b": 2}}),
        )
        .await;
    assert_eq!(replies[0]["id"], 4);
    assert!(
        replies[0].get("error").is_some() || replies[0]["result"]["isError"] == true,
        "{replies:?}"
    );
}

#[tokio::test]
async fn an_upstreams_progress_reaches_the_caller() {
    let Some(app) = spawn_with_upstream(|_| {}).await else {
        return;
    };
    listed(&app, None, "everything_trigger-long-running-operation").await;
    let session = app.initialize("2025-11-25").await;
    let response = app
        .post(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "everything_trigger-long-running-operation",
                "arguments": {"duration": 1, "steps": 2},
                "_meta": {"progressToken": "mine"}}}),
            &[
                ("mcp-session-id", session.as_str()),
                ("mcp-protocol-version", "2025-11-25"),
            ],
        )
        .await;
    let all = messages(response).await;
    let progress: Vec<&Value> = all
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 2, "{all:?}");
    assert!(
        progress
            .iter()
            .all(|p| p["params"]["progressToken"] == "mine"),
        "the caller's own token: {progress:?}"
    );
    let last = all.last().unwrap();
    assert_eq!(last["id"], 2);
    assert!(
        last["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("completed"),
        "{last}"
    );
}

#[tokio::test]
async fn upstream_tools_need_their_scopes_and_a_members_token_stays_home() {
    let Some(app) = spawn_with_upstream(|c| c.auth.mode = AuthMode::Required).await else {
        return;
    };
    let tokens = teamgate::auth::PersonalTokens::new(app.store.clone(), Duration::from_secs(30));
    let token = |scopes: Vec<String>| {
        let tokens = &tokens;
        async move {
            tokens
                .create("alice", "test", scopes, None)
                .await
                .unwrap()
                .token
        }
    };
    let echo_only = token(vec!["tools:everything_echo".into()]).await;
    let names = listed(&app, Some(&echo_only), "everything_echo").await;
    assert_eq!(
        names,
        ["everything_echo"],
        "only what the scopes allow is listed"
    );

    let call = |id: i64, name: &str, arguments: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments, "_meta": modern_meta()}});
    let headers = |name: &'static str| {
        [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", name),
        ]
    };
    let (status, _) = send(
        &app,
        &echo_only,
        &call(2, "everything_get-env", json!({})),
        &headers("everything_get-env"),
    )
    .await;
    assert_eq!(status, 403, "a tool outside the caller's scopes");

    // What the upstream process sees of the caller: nothing of the token.
    let all = token(vec!["*".into()]).await;
    let (status, text) = send(
        &app,
        &all,
        &call(3, "everything_get-env", json!({})),
        &headers("everything_get-env"),
    )
    .await;
    assert_eq!(status, 200);
    let env = reply(&text)["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(env.contains("PATH"), "{env}");
    assert!(
        !env.contains(&all) && !env.contains(&echo_only),
        "no member token upstream"
    );
}

#[tokio::test]
async fn an_upstream_that_cannot_start_leaves_the_server_ready_and_its_tools_unlisted() {
    let app = spawn_app_with(|c| {
        c.upstreams =
            vec![serde_json::from_value(json!({
            "name": "broken", "command": "/nonexistent/mcp-server", "on_unavailable": "error"
        }))
        .unwrap()];
    })
    .await;
    let ready = app
        .client
        .get(format!("{}/readyz", app.base()))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    // The first attempt fails at once; the backoff keeps trying meanwhile.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (status, replies) = app.modern_call(2, "tools/list", json!({})).await;
    assert_eq!(status, 200);
    let names: Vec<&str> = replies[0]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(!names.is_empty(), "teamgate's own tools stay: {names:?}");
    assert!(!names.iter().any(|n| n.starts_with("broken_")), "{names:?}");
}
