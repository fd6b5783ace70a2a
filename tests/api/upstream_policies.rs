//! `[upstreams.tools.NAME]` overrides (issue 26): an upstream tool renamed,
//! described and hinted by the operator, its argument bound to the caller,
//! its own scopes and quota; and `/metrics` showing each upstream's state,
//! calls and latency. Against the official everything server over stdio.

use std::time::Duration;

use serde_json::{Value, json};
use teamgate::config::AuthMode;

use crate::{
    helpers::{TestApp, spawn_app_with},
    sec_authz::{reply, send},
    upstreams::{everything, listed, modern_meta, upstream},
};

/// The everything server with `echo` overridden; `None` when it is not installed.
async fn spawn_overridden() -> Option<TestApp> {
    let (node, script) = everything()?;
    let overrides = json!({"tools": {
        "include": ["echo", "get-env"],
        "echo": {
            "rename": "say",
            "description": "Says the caller's name back",
            "read_only": true,
            "open_world": false,
            "from_caller": {"message": "user"},
            "cache_ttl": "1m",
            "scopes": ["team:say"],
            "rate_limit": {"per_minute": 1, "burst": 3},
        },
    }});
    Some(
        spawn_app_with(move |c| {
            c.auth.mode = AuthMode::Required;
            c.rate_limit.enabled = true;
            c.upstreams = vec![upstream(&node, &script, overrides)];
        })
        .await,
    )
}

async fn token(app: &TestApp, user: &str, scopes: &[&str]) -> String {
    let tokens = teamgate::auth::PersonalTokens::new(app.store.clone(), Duration::from_secs(30));
    let scopes = scopes.iter().map(|s| (*s).to_owned()).collect();
    tokens
        .create(user, "test", scopes, None)
        .await
        .unwrap()
        .token
}

async fn call(app: &TestApp, token: &str, id: i64, name: &str, arguments: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": modern_meta()}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", name),
    ];
    let (status, text) = send(app, token, &body, &headers).await;
    (status, reply(&text))
}

#[tokio::test]
async fn an_overridden_upstream_tool_is_renamed_described_bound_to_its_caller_and_limited() {
    let Some(app) = spawn_overridden().await else {
        return;
    };
    let alice = token(&app, "alice", &["team:say", "tools:everything_get-env"]).await;
    let names = listed(&app, Some(&alice), "say").await;
    assert!(names.contains(&"say".to_owned()), "{names:?}");
    assert!(
        !names.iter().any(|n| n == "everything_echo"),
        "the prefixed name is gone: {names:?}"
    );

    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let listing = reply(&send(&app, &alice, &body, &headers).await.1);
    let say = listing["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "say")
        .cloned()
        .unwrap();
    assert_eq!(say["description"], "Says the caller's name back");
    assert_eq!(say["annotations"]["readOnlyHint"], true, "{say}");
    assert_eq!(say["annotations"]["openWorldHint"], false, "{say}");
    assert!(
        say["inputSchema"]["properties"].get("message").is_none(),
        "the caller-bound argument is hidden: {say}"
    );

    // The argument is the caller's name, whatever the client sends.
    let (status, first) = call(&app, &alice, 2, "say", json!({"message": "spoofed"})).await;
    assert_eq!(status, 200, "{first}");
    let text = first["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("alice") && !text.contains("spoofed"),
        "{first}"
    );
    // Cached for a minute: the same answer again, without the upstream.
    let (_, second) = call(&app, &alice, 3, "say", json!({})).await;
    assert_eq!(second["result"], first["result"]);

    // Its own scope: a token for the default `tools:say` does not do.
    let bob = token(&app, "bob", &["tools:say"]).await;
    let (status, _) = call(&app, &bob, 4, "say", json!({})).await;
    assert_eq!(status, 403, "the override's scopes, not the default");

    // Its own quota: a burst of three per caller, then refused with the id.
    let (_, third) = call(&app, &alice, 5, "say", json!({})).await;
    assert!(third.get("result").is_some(), "{third}");
    let (_, over) = call(&app, &alice, 6, "say", json!({})).await;
    assert_eq!(over["id"], 6);
    assert_eq!(over["error"]["code"], -31004, "{over}");
    // Another tool of the same upstream keeps the caller's general quota.
    let (_, env) = call(&app, &alice, 7, "everything_get-env", json!({})).await;
    assert!(env.get("result").is_some(), "{env}");
}

#[tokio::test]
async fn metrics_and_the_audit_trail_name_the_upstream_of_each_call() {
    let Some((node, script)) = everything() else {
        return;
    };
    let app = spawn_app_with(move |c| {
        c.upstreams = vec![
            upstream(&node, &script, json!({})),
            serde_json::from_value(json!({"name": "broken", "command": "/nonexistent/mcp"}))
                .unwrap(),
        ];
    })
    .await;
    listed(&app, None, "everything_echo").await;
    let (status, _) = app
        .modern_call(
            2,
            "tools/call",
            json!({"name": "everything_echo", "arguments": {"message": "counted"}}),
        )
        .await;
    assert_eq!(status, 200);
    let metrics = app
        .client
        .get(format!("{}/metrics", app.base()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = |prefix: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix} in:\n{metrics}"))
            .to_owned()
    };
    assert!(line("teamgate_upstream_up{upstream=\"everything\"").ends_with(" 1"));
    assert!(line("teamgate_upstream_up{upstream=\"broken\"").ends_with(" 0"));
    // Every tool the upstream lists, offered or not (three are included).
    let tools = line("teamgate_upstream_tools{upstream=\"everything\"");
    let count: u32 = tools.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(count > 3, "{tools}");
    let calls = metrics
        .lines()
        .find(|l| {
            l.starts_with("teamgate_upstream_calls_total")
                && l.contains("upstream=\"everything\"")
                && l.contains("outcome=\"ok\"")
        })
        .unwrap_or_else(|| panic!("an ok call counted:\n{metrics}"));
    assert!(calls.ends_with(" 1"), "{calls}");
    assert!(
        metrics
            .contains("teamgate_upstream_call_duration_seconds_count{upstream=\"everything\"} 1"),
        "{metrics}"
    );
}
