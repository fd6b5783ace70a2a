//! Toolsets (issue 60 part 1): curated endpoints at `/mcp/<name>`, each
//! offering only what its globs pick, to the callers its groups admit, with
//! its own RFC 9728 resource; tokens limited to toolsets; the audit names
//! the endpoint; reloads add and remove endpoints. Through the real server,
//! raw HTTP and the official TypeScript and Python SDK clients.

use std::{collections::BTreeSet, process::Stdio, time::Duration};

use reqwest::StatusCode;
use serde_json::{Value, json};
use teamgate::config::{AuthMode, Config, ToolsetConfig};

use crate::{
    helpers::{TestApp, audit_until, messages, repo_path, spawn_app_with, test_config},
    portal_browser::ts_script,
};

const MODERN: &str = "2026-07-28";

fn toolset(value: Value) -> ToolsetConfig {
    serde_json::from_value(value).expect("a toolset")
}

fn toolsets() -> Vec<ToolsetConfig> {
    vec![
        toolset(
            json!({"name": "oncall", "description": "What on-call needs.",
            "include": ["test_*_content", "test_simple_text"], "exclude": ["test_audio_content"]}),
        ),
        toolset(json!({"name": "leads", "include": ["*"], "groups": ["leads"]})),
    ]
}

fn configure(c: &mut Config) {
    c.auth.mode = AuthMode::Required;
    c.toolsets = toolsets();
}

/// A stateless 2026-07-28 request to `path` with `token`: status and reply.
pub(crate) async fn call(
    app: &TestApp,
    path: &str,
    token: &str,
    id: i64,
    method: &str,
    params: Value,
) -> (StatusCode, Value) {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "toolsets-test", "version": "1"},
    });
    let mut request = app
        .client
        .post(format!("{}{path}", app.base()))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", method);
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        request = request.header("mcp-name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let response = request.json(&body).send().await.unwrap();
    let status = response.status();
    let reply = messages(response).await.pop().unwrap_or(Value::Null);
    (status, reply)
}

pub(crate) async fn names(app: &TestApp, path: &str, token: &str) -> BTreeSet<String> {
    let (status, reply) = call(app, path, token, 1, "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    (reply["result"]["tools"].as_array().unwrap().iter())
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

pub(crate) async fn token(app: &TestApp, user: &str, scopes: &[&str]) -> String {
    let scopes = scopes.iter().map(|s| s.to_string()).collect();
    app.tokens
        .create(user, "", scopes, None)
        .await
        .unwrap()
        .token
}

#[tokio::test]
async fn a_toolset_endpoint_offers_only_its_tools_to_whom_it_admits() {
    let app = spawn_app_with(configure).await;
    let admin = token(&app, "ada", &["*"]).await;
    let everything = names(&app, "/mcp", &admin).await;
    let oncall = names(&app, "/mcp/oncall", &admin).await;
    let expected: BTreeSet<String> = ["test_image_content", "test_simple_text"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(oncall, expected, "all: {everything:?}");
    assert!(everything.contains("test_audio_content") && everything.len() > oncall.len());

    // A tool outside the toolset is unknown there, exactly as a missing one.
    let (_, reply) = call(
        &app,
        "/mcp/oncall",
        &admin,
        7,
        "tools/call",
        json!({"name": "test_audio_content", "arguments": {}}),
    )
    .await;
    assert_eq!(reply["id"], 7, "{reply}");
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Unknown tool"),
        "{reply}"
    );
    let (_, reply) = call(
        &app,
        "/mcp/oncall",
        &admin,
        8,
        "tools/call",
        json!({"name": "test_simple_text", "arguments": {}}),
    )
    .await;
    assert!(reply["result"]["content"].is_array(), "{reply}");

    // An unknown toolset: 404 carrying the request id.
    let (status, reply) = call(&app, "/mcp/nope", &admin, 9, "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{reply}");
    assert_eq!(reply["id"], 9, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("oncall"),
        "{reply}"
    );

    // Groups: a member without them (a personal token lists none) is
    // refused at `leads`; `toolset:leads` admits, and limits.
    let member = token(&app, "mia", &["tools:*"]).await;
    let (status, reply) = call(&app, "/mcp/leads", &member, 10, "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{reply}");
    assert_eq!(reply["id"], 10, "{reply}");
    let lead = token(&app, "lee", &["tools:*", "toolset:leads"]).await;
    assert!(
        names(&app, "/mcp/leads", &lead)
            .await
            .contains("test_audio_content")
    );
    for path in ["/mcp", "/mcp/oncall"] {
        let (status, reply) = call(&app, path, &lead, 11, "tools/list", json!({})).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {reply}");
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .contains("limited"),
            "{reply}"
        );
    }

    // The audit record names the endpoint.
    let records = audit_until(&app.store, Some("ada"), |r| {
        r.iter().any(|r| r.target == "test_simple_text")
    })
    .await;
    let called = records
        .iter()
        .find(|r| r.target == "test_simple_text")
        .expect("audited");
    assert_eq!(called.endpoint, "oncall", "{called:?}");
    let refused = records
        .iter()
        .find(|r| r.target == "test_audio_content")
        .expect("audited");
    assert!(refused.outcome.starts_with("denied"), "{refused:?}");
}

#[tokio::test]
async fn each_endpoint_is_its_own_resource_and_reloads_add_and_remove_endpoints() {
    let app = spawn_app_with(configure).await;
    // RFC 9728: the challenge and the metadata name the toolset's endpoint.
    let response = app
        .client
        .post(format!("{}/mcp/oncall", app.base()))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let challenge = response.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        challenge.contains("/.well-known/oauth-protected-resource/mcp/oncall\""),
        "{challenge}"
    );
    let metadata: Value = app
        .client
        .get(format!(
            "{}/.well-known/oauth-protected-resource/mcp/oncall",
            app.base()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let resource = metadata["resource"].as_str().unwrap();
    assert!(resource.ends_with("/mcp/oncall"), "{metadata}");
    let main: Value = app
        .client
        .get(format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            app.base()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        main["resource"].as_str().unwrap().ends_with("/mcp"),
        "{main}"
    );

    // A reload adds `dev` and removes `oncall`.
    let admin = token(&app, "ada", &["*"]).await;
    let mut config = test_config();
    configure(&mut config);
    config.toolsets.retain(|t| t.name != "oncall");
    config.toolsets.push(toolset(
        json!({"name": "dev", "include": ["test_simple_text"]}),
    ));
    app.reloader.reload(&config).unwrap();
    let dev = names(&app, "/mcp/dev", &admin).await;
    assert_eq!(dev.into_iter().collect::<Vec<_>>(), ["test_simple_text"]);
    let (status, _) = call(&app, "/mcp/oncall", &admin, 2, "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_official_sdk_clients_work_on_a_toolset_endpoint() {
    let app = spawn_app_with(configure).await;
    let admin = token(&app, "ada", &["*"]).await;
    let url = format!("{}/mcp/oncall", app.base());
    let ts = client(
        ts_script("ts_toolset.mjs"),
        &url,
        &admin,
        "test_simple_text",
    )
    .await;
    assert_eq!(ts["instructions"], "What on-call needs.", "{ts}");
    assert_eq!(
        ts["tools"],
        json!(["test_simple_text", "test_image_content"]),
        "{ts}"
    );
    assert!(ts["call"]["content"][0]["text"].is_string(), "{ts}");

    let Some((python, _)) = crate::upstream_pins::python() else {
        return;
    };
    let mut py_client = tokio::process::Command::new(python);
    py_client.arg(repo_path("tests/interop/py_toolset.py"));
    let py = client(py_client, &url, &admin, "test_image_content").await;
    let tools: BTreeSet<&str> = (py["tools"].as_array().unwrap().iter())
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        tools,
        BTreeSet::from(["test_image_content", "test_simple_text"]),
        "{py}"
    );
    assert_eq!(py["call"]["content"][0]["type"], "image", "{py}");
}

/// An SDK client script (`ts_toolset.mjs`, `py_toolset.py`) on `url`
/// calling `tool`: what it printed after `RESULT`.
async fn client(mut command: tokio::process::Command, url: &str, token: &str, tool: &str) -> Value {
    let run = command
        .args(["--url", url, "--token", token, "--tool", tool])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(40), run)
        .await
        .expect("the client ends within 40 s")
        .unwrap();
    result_of(&out.stdout)
}

fn result_of(stdout: &[u8]) -> Value {
    let stdout = String::from_utf8_lossy(stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("{stdout}"));
    serde_json::from_str(line).unwrap()
}
