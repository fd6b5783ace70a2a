//! Durable tasks (issue 31) on the real server: a command tool's call as a
//! task outlives its request, only its owner sees it, a cancel kills the
//! command's process, a task whose replica stopped beating fails, and the
//! creation and the end are audited.

use std::{path::Path, sync::Arc, time::Duration};

use serde_json::{Value, json};
use teamgate::{
    auth::PersonalTokens,
    config::AuthMode,
    store::{AuditRecord, ManualClock, TaskRepo, TaskRow},
};

use crate::{
    command_tools::command,
    helpers::{MODERN, TestApp, audit_until, messages, spawn_app_clocked},
};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

async fn token(app: &TestApp, user: &str) -> String {
    let tokens = PersonalTokens::new(app.store.clone(), Duration::from_secs(30));
    let created = tokens.create(user, "test", vec!["*".into()], None).await;
    created.unwrap().token
}

/// A 2026-07-28 request of the bearer of `token`, declaring the tasks
/// extension; the JSON-RPC reply.
pub(crate) async fn call(app: &TestApp, token: &str, method: &str, params: Value) -> Value {
    let caps = json!({"extensions": {TASKS: {}}, "elicitation": {}});
    call_as(app, token, method, params, caps).await
}

/// `call` declaring `caps`.
pub(crate) async fn call_as(
    app: &TestApp,
    token: &str,
    method: &str,
    mut params: Value,
    caps: Value,
) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "teamgate-tests", "version": "1"},
    });
    let name = params.get("name").or_else(|| params.get("taskId"));
    let name = name.and_then(Value::as_str).unwrap_or_default().to_owned();
    let bearer = format!("Bearer {token}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let headers = [
        ("authorization", bearer.as_str()),
        ("mcp-protocol-version", MODERN),
        ("mcp-method", method),
        ("mcp-name", name.as_str()),
    ];
    let response = app.post(&body, &headers).await;
    messages(response).await.pop().expect("a reply")
}

pub(crate) async fn settled(app: &TestApp, token: &str, id: &str) -> Value {
    for _ in 0..200 {
        let task = call(app, token, "tasks/get", json!({"taskId": id})).await;
        let status = task["result"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if ["completed", "failed", "cancelled"].contains(&status.as_str()) {
            return task["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("task {id} did not settle")
}

async fn pid_in(path: &Path) -> i32 {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{} was written", path.display())
}

fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z')),
    }
}

async fn app(dir: &Path, clock: Arc<ManualClock>) -> TestApp {
    let quick = script(dir, "quick.sh", "sleep 1; echo built");
    let pidfile = dir.join("hang.pid");
    let hang = script(
        dir,
        "hang.sh",
        &format!("echo $$ > {}; exec sleep 60", pidfile.display()),
    );
    let deploy = script(dir, "deploy.sh", "echo deployed");
    let nightly = script(dir, "nightly.sh", "echo nightly");
    spawn_app_clocked(
        move |c| {
            c.auth.mode = AuthMode::Required;
            c.tasks.heartbeat_timeout = Duration::from_secs(2);
            c.tasks.poll_interval = Duration::from_millis(200);
            c.tools.command.push(command(json!({
                "name": "build", "description": "builds", "program": quick})));
            c.tools.command.push(command(json!({
                "name": "hang", "description": "hangs", "program": hang, "timeout": "2m"})));
            c.tools.command.push(command(json!({
                "name": "deploy", "description": "deploys", "program": deploy, "confirm": true})));
            c.tools.command.push(command(json!({
                "name": "nightly", "description": "nightly", "program": nightly, "task": "required"})));
        },
        clock,
    )
    .await
}

#[tokio::test]
async fn a_command_task_is_kept_polled_cancelled_and_private() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path(), Arc::new(ManualClock::new(1_800_000_000_000))).await;
    let alice = token(&app, "alice").await;
    let bob = token(&app, "bob").await;

    let created = call(&app, &alice, "tools/call", json!({"name": "build"})).await;
    let created = &created["result"];
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    let id = created["taskId"].as_str().unwrap().to_owned();

    // Another member cannot get, answer or cancel it: not found, like no task.
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let params = json!({"taskId": id, "inputResponses": {}});
        let refused = call(&app, &bob, method, params).await;
        assert_eq!(refused["error"]["code"], -32602, "{method}: {refused}");
    }

    let done = settled(&app, &alice, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("built"), "{done}");

    // A cancel stops the command and its process.
    let hung = call(&app, &alice, "tools/call", json!({"name": "hang"})).await;
    let hung = hung["result"]["taskId"].as_str().unwrap().to_owned();
    let pid = pid_in(&dir.path().join("hang.pid")).await;
    let ack = call(&app, &alice, "tasks/cancel", json!({"taskId": hung})).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert_eq!(settled(&app, &alice, &hung).await["status"], "cancelled");
    for _ in 0..200 {
        if gone(pid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(gone(pid), "the cancelled command's process {pid} ended");

    // One audit record at creation, one at the end with the whole run's time.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let records = app.store.audit_tail(Some("alice"), 0, 100).await.unwrap();
    let of_build: Vec<_> = records.iter().filter(|r| r.target == "build").collect();
    assert_eq!(of_build.len(), 2, "{of_build:?}");
    assert!(
        of_build
            .iter()
            .any(|r| r.method == "tools/call" && r.outcome == "task")
    );
    let end = of_build.iter().find(|r| r.method == "tasks/end").unwrap();
    assert!(
        end.latency_ms >= 900,
        "the end record spans the run: {end:?}"
    );

    // `/metrics` counts tasks by state (refreshed by the heartbeat loop).
    tokio::time::sleep(Duration::from_millis(700)).await;
    let metrics = teamgate::outbound::client()
        .get(format!("{}/metrics", app.base()))
        .send()
        .await
        .unwrap();
    let metrics = metrics.text().await.unwrap();
    let line = |state: &str| {
        let label = format!("state=\"{state}\"");
        metrics
            .lines()
            .find(|l| l.starts_with("teamgate_tasks{") && l.contains(&label))
            .map(|l| l.rsplit(' ').next().unwrap().to_owned())
    };
    assert_eq!(line("completed").as_deref(), Some("1"), "{metrics}");
    assert_eq!(line("cancelled").as_deref(), Some("1"));
    assert_eq!(line("working").as_deref(), Some("0"));
}

#[tokio::test]
async fn a_task_whose_replica_stopped_beating_is_failed() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let app = app(dir.path(), clock.clone()).await;
    let alice = token(&app, "alice").await;
    // A task another replica was running when it died.
    let now = app.store.now_ms();
    let orphan = TaskRow {
        id: "orphan".into(),
        owner: "alice".into(),
        tool: "build".into(),
        status: "working".into(),
        status_message: None,
        progress: None,
        outcome: None,
        input_requests: None,
        input_responses: None,
        ttl_ms: 3_600_000,
        poll_ms: 200,
        created_ms: now,
        updated_ms: now,
        replica: "gone".into(),
        heartbeat_ms: now,
        cancel_requested: false,
        retries_left: 0,
        call: None,
        upstream: None,
        upstream_task: None,
    };
    assert!(app.store.create_task(&orphan, 10).await.unwrap());
    tokio::time::sleep(Duration::from_millis(800)).await;
    let still = call(&app, &alice, "tasks/get", json!({"taskId": "orphan"})).await;
    assert_eq!(still["result"]["status"], "working", "within the timeout");
    clock.advance(2_500);
    let failed = settled(&app, &alice, "orphan").await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603);
    assert!(
        failed["statusMessage"]
            .as_str()
            .unwrap()
            .contains("heartbeat_timeout")
    );
    // Its end is audited by the replica that found it, as `tasks/end`.
    let ended = |r: &AuditRecord| r.method == "tasks/end";
    let records = audit_until(&app.store, Some("alice"), |r| r.iter().any(ended)).await;
    let end = records.into_iter().find(ended).expect("a tasks/end record");
    assert_eq!(end.target, "build");
    assert!(
        end.outcome
            .starts_with("failed: the replica running it stopped"),
        "{end:?}"
    );
    assert!(end.outcome.contains("orphan"), "{end:?}");
}

#[tokio::test]
async fn at_shutdown_a_task_finishes_within_the_grace_or_fails_saying_why_audited() {
    let dir = tempfile::tempdir().unwrap();
    let quick = script(dir.path(), "quick.sh", "sleep 0.3; echo built");
    let slow = script(dir.path(), "slow.sh", "exec sleep 60");
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let mut app = spawn_app_clocked(
        move |c| {
            c.auth.mode = AuthMode::Required;
            c.server.shutdown_grace = Duration::from_secs(1);
            c.tools.command.push(command(json!({
                "name": "quick", "description": "quick", "program": quick})));
            c.tools.command.push(command(json!({
                "name": "slow", "description": "slow", "program": slow, "timeout": "2m"})));
        },
        clock,
    )
    .await;
    let alice = token(&app, "alice").await;
    let task = |reply: Value| reply["result"]["taskId"].as_str().unwrap().to_owned();
    let quick = task(call(&app, &alice, "tools/call", json!({"name": "quick"})).await);
    let slow = task(call(&app, &alice, "tools/call", json!({"name": "slow"})).await);
    let started = std::time::Instant::now();
    app.halt().await;
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    let row = |id: String| {
        let store = app.store.clone();
        async move { store.task(&id, "alice").await.unwrap().unwrap() }
    };
    assert_eq!(
        row(quick).await.status,
        "completed",
        "finished within the grace"
    );
    let failed = row(slow).await;
    assert_eq!(failed.status, "failed");
    let message = failed.status_message.unwrap_or_default();
    assert!(
        message.contains("shut down before it finished"),
        "{message}"
    );
    let records = app.store.audit_tail(Some("alice"), 0, 100).await.unwrap();
    let end = |tool: &str| {
        (records.iter())
            .find(|r| r.method == "tasks/end" && r.target == tool)
            .map(|r| r.outcome.clone())
    };
    assert_eq!(end("quick").as_deref(), Some("ok"));
    assert_eq!(end("slow").as_deref(), Some("error -32603"));
}

#[tokio::test]
async fn a_required_task_needs_the_extension_and_confirm_comes_before_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path(), Arc::new(ManualClock::new(1_800_000_000_000))).await;
    let alice = token(&app, "alice").await;

    // Without the extension: a tool that allows tasks answers at once; one that requires them -32021.
    let plain = json!({"elicitation": {}});
    let sync = call_as(
        &app,
        &alice,
        "tools/call",
        json!({"name": "build"}),
        plain.clone(),
    )
    .await;
    assert_eq!(sync["result"]["resultType"], "complete", "{sync}");
    let refused = call_as(
        &app,
        &alice,
        "tools/call",
        json!({"name": "nightly"}),
        plain,
    )
    .await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    let required = &refused["error"]["data"]["requiredCapabilities"]["extensions"];
    assert!(required[TASKS].is_object(), "{refused}");
    let nightly = call(&app, &alice, "tools/call", json!({"name": "nightly"})).await;
    assert_eq!(nightly["result"]["resultType"], "task", "{nightly}");

    // `confirm`: the approval is asked before any task exists, then the task runs.
    let asked = call(&app, &alice, "tools/call", json!({"name": "deploy"})).await;
    let asked = &asked["result"];
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert!(asked.get("taskId").is_none());
    let approved = call(
        &app,
        &alice,
        "tools/call",
        json!({"name": "deploy", "requestState": asked["requestState"],
            "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}}),
    )
    .await;
    let id = approved["result"]["taskId"]
        .as_str()
        .expect("a task once approved");
    let done = settled(&app, &alice, id).await;
    let stdout = &done["result"]["structuredContent"]["stdout"];
    assert!(stdout.as_str().unwrap().contains("deployed"), "{done}");
}
