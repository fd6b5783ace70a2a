//! Behaviour hints and safety of declared tools: `confirm = true` through
//! elicitation (legacy) and `input_required` (2026-07-28), declared scopes
//! as the registry's required scopes, cache hints on lists, and secrets
//! scrubbed from results and progress.

use serde_json::{Value, json};

use teamgate::registry::Kind;

use crate::{
    binary,
    command_tools::command,
    helpers::{ACCEPT_BOTH, MODERN, messages},
    helpers::{spawn_app_with, test_config},
    sdk::{self, Heard, call, text},
};

fn confirmed_tool() -> teamgate::config::CommandToolConfig {
    command(
        json!({"name": "wipe", "description": "Dangerous", "program": "/bin/echo",
        "args": ["wiped", "{target}"], "confirm": true, "destructive": true,
        "scopes": ["ops:write"],
        "input_schema": {"type": "object", "properties": {"target": {"type": "string"}}}}),
    )
}

#[tokio::test]
async fn confirm_asks_the_user_and_runs_only_on_yes() {
    let app = spawn_app_with(|c| c.tools.command = vec![confirmed_tool()]).await;

    let (yes, mut heard) = sdk::connect(&app.url, Some(true)).await;
    let result = call(&yes, "wipe", json!({"target": "cache"})).await;
    assert_eq!(
        result["structuredContent"]["stdout"], "wiped cache\n",
        "{result}"
    );
    let Some(Heard::Elicited(message)) = heard.recv().await else {
        panic!("the user was asked")
    };
    assert!(
        message.contains("wipe") && message.contains("cache"),
        "{message}"
    );
    yes.cancel().await.unwrap();

    let (no, _) = sdk::connect(&app.url, Some(false)).await;
    let result = call(&no, "wipe", json!({"target": "cache"})).await;
    assert_eq!(result["isError"], true);
    assert!(text(&result).contains("declined"), "{result}");
    no.cancel().await.unwrap();

    let (cannot, _) = sdk::connect(&app.url, None).await;
    let result = call(&cannot, "wipe", json!({"target": "cache"})).await;
    assert_eq!(result["isError"], true);
    assert!(text(&result).contains("cannot ask"), "{result}");
    cannot.cancel().await.unwrap();
}

#[tokio::test]
async fn confirm_on_2026_07_28_is_an_input_required_round_trip() {
    let app = spawn_app_with(|c| c.tools.command = vec![confirmed_tool()]).await;
    let caps = json!({"elicitation": {"form": {}}});
    let modern = |id: i64, extra: Value| {
        let mut params = json!({"name": "wipe", "arguments": {"target": "db"},
            "_meta": {"io.modelcontextprotocol/clientCapabilities": caps}});
        if let Value::Object(extra) = extra {
            params.as_object_mut().unwrap().extend(extra);
        }
        let app = &app;
        async move { app.modern_call(id, "tools/call", params).await.1.remove(0) }
    };
    let first = modern(1, json!({})).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(
        result["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    let state = result["requestState"].clone();
    assert!(state.is_string(), "{first}");

    let accept = json!({"action": "accept", "content": {"confirm": true}});
    // An approval the server did not ask for, or forged state, is asked again.
    let unasked = modern(2, json!({"inputResponses": {"confirm": accept}})).await;
    assert_eq!(
        unasked["result"]["resultType"], "input_required",
        "{unasked}"
    );
    let forged = modern(
        3,
        json!({"inputResponses": {"confirm": accept}, "requestState": "rs1.forged"}),
    )
    .await;
    assert_eq!(forged["result"]["resultType"], "input_required", "{forged}");

    let done = modern(
        4,
        json!({"inputResponses": {"confirm": accept}, "requestState": state}),
    )
    .await;
    assert_eq!(
        done["result"]["structuredContent"]["stdout"], "wiped db\n",
        "{done}"
    );

    // The approval was for these arguments, not others.
    let mut other = json!({"name": "wipe", "arguments": {"target": "everything"},
        "inputResponses": {"confirm": accept}, "requestState": state,
        "_meta": {"io.modelcontextprotocol/clientCapabilities": caps}});
    let (_, replies) = app.modern_call(5, "tools/call", other.take()).await;
    assert_eq!(
        replies[0]["result"]["resultType"], "input_required",
        "{replies:?}"
    );

    let decline = json!({"action": "decline"});
    let refused = modern(
        6,
        json!({"inputResponses": {"confirm": decline}, "requestState": state}),
    )
    .await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
}

#[tokio::test]
async fn declared_scopes_reach_the_registry_and_lists_are_private() {
    let mut config = test_config();
    config.tools.command = vec![confirmed_tool()];
    for docs in &mut config.sources.docs {
        docs.watch = false;
        docs.scopes = vec!["docs:read".into()];
    }
    let (app, _store) = crate::helpers::build_app(config).await.unwrap();
    let registry = app.registry();
    let needs = |kind, name| registry.required_scopes(kind, name);
    assert_eq!(needs(Kind::Tool, "wipe"), ["ops:write"]);
    assert_eq!(needs(Kind::Tool, "search_docs"), ["docs:read"]);
    assert_eq!(
        needs(Kind::Resource, "docs://project/README.md"),
        ["docs:read"]
    );
    // Undeclared: the identity layer's defaults.
    assert_eq!(needs(Kind::Tool, "teamgate_info"), ["tools:teamgate_info"]);
    assert_eq!(
        needs(Kind::Prompt, "teamgate_guide"),
        ["prompts:teamgate_guide"]
    );

    // Lists are filtered by the caller's scopes: never shared across callers.
    let scoped = spawn_app_with(|c| c.tools.command = vec![confirmed_tool()]).await;
    let (_, replies) = scoped.modern_call(1, "tools/list", json!({})).await;
    assert_eq!(replies[0]["result"]["cacheScope"], "private");
    assert_eq!(replies[0]["result"]["ttlMs"], 60_000);
    let wipe = replies[0]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "wipe")
        .unwrap()
        .clone();
    assert_eq!(
        wipe["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false})
    );
}

#[tokio::test]
async fn secrets_given_to_commands_are_scrubbed_from_results_and_progress() {
    let secret = "deploy-9d8c7b6a5f4e";
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("command.toml");
    std::fs::write(
        &config,
        r#"
[[tools.command]]
name = "leaky"
description = "Prints its environment"
program = "/usr/bin/env"
secret_env = ["TEAMGATE_TEST_DEPLOY_TOKEN"]
"#,
    )
    .unwrap();
    let served = binary::serve(&config, &[("TEAMGATE_TEST_DEPLOY_TOKEN", secret)]);
    let token = served.token("alice", &[]);
    let (client, _) = sdk::connect_as(&served.url, Some(&token), None).await;
    let result = call(&client, "leaky", json!({})).await;
    let stdout = result["structuredContent"]["stdout"].as_str().unwrap();
    assert!(
        stdout.contains("TEAMGATE_TEST_DEPLOY_TOKEN=[redacted]"),
        "{stdout}"
    );
    assert!(!result.to_string().contains(secret));
    assert!(
        !stdout.contains("PATH="),
        "only allowed variables reach the program"
    );
    client.cancel().await.unwrap();

    // With a progress token, each output line also travels as progress.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": "p1"});
    let response = teamgate::outbound::client()
        .post(&served.url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH)
        .header("authorization", format!("Bearer {token}"))
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "leaky")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "leaky", "_meta": meta}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    let replies = messages(response).await;
    let lines: Vec<&str> = replies
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .filter_map(|m| m["params"]["message"].as_str())
        .collect();
    assert!(
        lines.contains(&"TEAMGATE_TEST_DEPLOY_TOKEN=[redacted]"),
        "{replies:?}"
    );
    assert!(!format!("{replies:?}").contains(secret));
}

#[tokio::test]
async fn declared_scopes_decide_what_a_token_sees_and_may_call() {
    let docs = tempfile::tempdir().unwrap();
    std::fs::write(docs.path().join("runbook.md"), "# Runbook\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("scoped.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[tools.command]]
name = "wipe"
description = "Dangerous"
program = "/bin/echo"
scopes = ["ops:write"]
[[sources.docs]]
name = "team"
paths = ["{}"]
watch = false
scopes = ["docs:read"]
"#,
            docs.path().display()
        ),
    )
    .unwrap();
    let served = binary::serve(&config, &[]);
    let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name.to_string()).collect()
    };

    let reader = served.token("bob", &["docs:read"]);
    let (client, _) = sdk::connect_as(&served.url, Some(&reader), None).await;
    let tools = names(client.list_all_tools().await.unwrap());
    assert!(tools.contains(&"search_docs".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"wipe".to_owned()), "{tools:?}");
    let resources = serde_json::to_value(client.list_all_resources().await.unwrap()).unwrap();
    assert!(
        resources.to_string().contains("docs://team/"),
        "{resources}"
    );
    let refused = client
        .call_tool(rmcp::model::CallToolRequestParams::new("wipe"))
        .await;
    assert!(refused.is_err(), "a call without the scope is refused");
    client.cancel().await.unwrap();

    let operator = served.token("carol", &["ops:write"]);
    let (client, _) = sdk::connect_as(&served.url, Some(&operator), None).await;
    let tools = names(client.list_all_tools().await.unwrap());
    assert!(tools.contains(&"wipe".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"search_docs".to_owned()), "{tools:?}");
    let result = call(&client, "wipe", json!({})).await;
    assert_eq!(result["isError"], false, "{result}");
    client.cancel().await.unwrap();
}
