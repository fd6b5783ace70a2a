//! Long tools as each kind of client sees them (issue 63 item 2): a
//! 2025-era session that declares the tasks extension (the Rust SDK, the
//! MCP Inspector's CLI in its default mode) gets the ordinary result of a
//! slow tool, with its progress, never a 2026-07-28 task it cannot read;
//! a 2026-07-28 client polling a task sees its latest progress.

use std::{path::Path, process::Stdio, time::Duration};

use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, ClientConfig, NumberOrString, ProgressNotificationParam,
        ProgressToken, RequestMetaObject,
    },
    service::NotificationContext,
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};
use teamgate::config::AuthMode;
use tokio::sync::mpsc;

use crate::{
    command_tools::command,
    helpers::{MODERN, TestApp, messages, repo_path, spawn_app_with},
};

const TASKS: &str = "io.modelcontextprotocol/tasks";

const INSPECTOR: &str =
    ".cache/inspector/node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js";

fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// `slow` (optional task, ~2 s, a line a second), `slower` (a line a
/// second, then a pause) and `nightly` (required).
async fn app(dir: &Path) -> TestApp {
    let slow = script(
        dir,
        "slow.sh",
        "echo one; sleep 1; echo two; sleep 1; echo done",
    );
    let slower = script(
        dir,
        "slower.sh",
        "echo one; sleep 1; echo two; sleep 4; echo done",
    );
    let nightly = script(dir, "nightly.sh", "echo nightly");
    spawn_app_with(move |c| {
        c.auth.mode = AuthMode::None;
        c.tools.command.push(command(json!({
            "name": "slow", "description": "takes a while", "program": slow})));
        c.tools.command.push(command(json!({
            "name": "slower", "description": "takes longer", "program": slower})));
        c.tools.command.push(command(json!({
            "name": "nightly", "description": "nightly", "program": nightly, "task": "required"})));
    })
    .await
}

/// A 2025-11-25 client whose `initialize` declares the tasks extension, as
/// the TypeScript SDK's and the Inspector's do; it hears progress messages.
struct Declaring(mpsc::UnboundedSender<String>);

impl ClientHandler for Declaring {
    fn get_info(&self) -> ClientConfig {
        serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"extensions": {TASKS: {}}},
            "clientInfo": {"name": "teamgate-tasks-tests", "version": "1"},
        }))
        .unwrap()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params.message.unwrap_or_default());
    }
}

#[tokio::test]
async fn a_2025_session_declaring_tasks_gets_the_slow_tools_result_and_progress() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let (tx, mut heard) = mpsc::unbounded_channel();
    let client = Declaring(tx)
        .serve(StreamableHttpClientTransport::from_uri(app.url.clone()))
        .await
        .expect("the SDK client connects");

    let token = ProgressToken(NumberOrString::String("slow-1".into()));
    let mut params = CallToolRequestParams::new("slow");
    params.meta = Some(RequestMetaObject::with_progress_token(token));
    // rmcp's `call_tool` takes only an ordinary result: a task is an error.
    let result = client
        .call_tool(params)
        .await
        .expect("an ordinary result, not a task");
    let result = serde_json::to_value(result).unwrap();
    assert_ne!(result["isError"], true, "{result}");
    let stdout = result["structuredContent"]["stdout"].as_str().unwrap();
    assert!(
        stdout.contains("one") && stdout.contains("done"),
        "{result}"
    );
    let mut messages = Vec::new();
    while let Ok(message) = heard.try_recv() {
        messages.push(message);
    }
    assert!(messages.iter().any(|m| m.contains("two")), "{messages:?}");

    // A tool that runs only as a task cannot run for this session.
    let refused = client
        .call_tool(CallToolRequestParams::new("nightly"))
        .await
        .expect_err("nightly needs a 2026-07-28 task");
    assert!(refused.to_string().contains("-32021"), "{refused}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_inspector_cli_in_its_default_mode_gets_the_slow_tools_result() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let home = tempfile::tempdir().unwrap();
    let run = tokio::process::Command::new(repo_path(".cache/bin/node22"))
        .arg(repo_path(INSPECTOR))
        .arg(&app.url)
        .args(["--transport", "http", "--method", "tools/call"])
        .args(["--tool-name", "slow"])
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(90), run)
        .await
        .expect("the Inspector's CLI finishes within 90 s")
        .expect("the Inspector's CLI runs (scripts/install-test-deps.sh)");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let result: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_ne!(result["isError"], true, "{result}");
    let text = result["structuredContent"]["stdout"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("done"), "{result}");
}

/// A 2026-07-28 request declaring the tasks extension; the JSON-RPC reply.
async fn modern(app: &TestApp, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "teamgate-tests", "version": "1"},
    });
    let name = params.get("name").or_else(|| params.get("taskId"));
    let name = name.and_then(Value::as_str).unwrap_or_default().to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let headers = [
        ("mcp-protocol-version", MODERN),
        ("mcp-method", method),
        ("mcp-name", name.as_str()),
    ];
    messages(app.post(&body, &headers).await)
        .await
        .pop()
        .expect("a reply")
}

/// Polls `tasks/get` (bounded) until the status message contains `wanted`.
async fn until_message(app: &TestApp, id: &str, wanted: &str) -> Value {
    let mut task = Value::Null;
    for _ in 0..100 {
        task = modern(app, "tasks/get", json!({"taskId": id})).await["result"].clone();
        if task["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains(wanted))
        {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the task's statusMessage showed {wanted:?}: {task}")
}

#[tokio::test]
async fn a_running_tasks_latest_progress_shows_on_tasks_get() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let created = modern(&app, "tools/call", json!({"name": "slower"})).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();

    let first = until_message(&app, &id, "one").await;
    let second = until_message(&app, &id, "two").await;
    assert_eq!(second["status"], "working", "{second}");
    // RFC 3339 with milliseconds, all UTC: later sorts later.
    let at = |task: &Value| task["lastUpdatedAt"].as_str().unwrap().to_owned();
    assert!(at(&second) > at(&first), "{first}\n{second}");
}
