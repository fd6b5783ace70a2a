//! `[[tools.command]]` with real programs: argv templates, caller-bound
//! arguments, head-and-tail capture, progress lines, and the process group
//! killed (its pids shown dead) on timeout and on cancellation.

use std::{path::Path, time::Duration};

use serde_json::{Value, json};
use teamgate::config::CommandToolConfig;

use crate::{
    helpers::{messages, spawn_app_with},
    sdk::{self, call, text},
};

pub(crate) fn command(value: Value) -> CommandToolConfig {
    serde_json::from_value(value).expect("a valid [[tools.command]]")
}

/// Writes an executable script (run directly through its `#!` line).
fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// A process is gone, or a zombie nobody has reaped yet (it runs no more).
fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

async fn wait_for_file(path: &Path) -> String {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{} was written", path.display())
}

async fn assert_dead(pids: &[i32]) {
    for _ in 0..200 {
        if pids.iter().all(|p| dead(*p)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("processes {pids:?} still run");
}

/// The script records its own pid and the pid of a child it leaves running.
const SLEEPER: &str = "/bin/sleep 30 &\necho $! > \"$1.child\"\necho $$ > \"$1\"\nwait";

fn pids(file: &str, own: &str) -> Vec<i32> {
    let child = std::fs::read_to_string(format!("{file}.child")).unwrap();
    vec![own.trim().parse().unwrap(), child.trim().parse().unwrap()]
}

#[tokio::test]
async fn runs_programs_with_argv_templates_and_caller_bound_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let noisy = script(
        dir.path(),
        "noisy.sh",
        "i=0\nwhile [ $i -lt 400 ]; do echo line-$i; i=$((i+1)); done\nexit 3",
    );
    let app = spawn_app_with(|c| {
        c.tools.command = vec![
            command(json!({
                "name": "hello", "description": "echo", "program": "/bin/echo",
                "args": ["hello", "{name}", "--by={who}", "{missing}"],
                "from_caller": {"who": "user"},
                "input_schema": {"type": "object", "required": ["name", "who"], "additionalProperties": false,
                    "properties": {"name": {"type": "string"}, "who": {"type": "string"}, "missing": {"type": "string"}}}
            })),
            command(json!({"name": "noisy", "description": "lots of output", "program": noisy,
                "max_output_bytes": 200})),
            command(json!({"name": "team_report", "description": "needs a claim", "program": "/bin/echo",
                "args": ["{team}"], "from_caller": {"team": "claim:team"},
                "input_schema": {"type": "object", "properties": {"team": {"type": "string"}}}})),
        ];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let tools = client.list_all_tools().await.unwrap();
    let greet = serde_json::to_value(tools.iter().find(|t| t.name == "hello").unwrap()).unwrap();
    assert!(
        greet["inputSchema"]["properties"].get("who").is_none(),
        "bound arguments are hidden"
    );
    assert_eq!(greet["inputSchema"]["required"], json!(["name"]));
    assert_eq!(greet["annotations"]["openWorldHint"], false);

    // The client cannot override a caller-bound argument.
    let result = call(&client, "hello", json!({"name": "world", "who": "mallory"})).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        result["structuredContent"]["stdout"],
        "hello world --by=anonymous\n"
    );
    assert_eq!(result["structuredContent"]["exitCode"], 0);

    let result = call(&client, "noisy", json!({})).await;
    assert_eq!(result["isError"], true, "exit code 3 is a failure");
    let stdout = result["structuredContent"]["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("line-0\n"), "{stdout}");
    assert!(stdout.ends_with("line-399\n"), "{stdout}");
    assert!(stdout.contains("bytes omitted"), "{stdout}");
    assert_eq!(result["structuredContent"]["exitCode"], 3);

    // A claim the caller's identity lacks is a tool error, and nothing runs.
    let result = call(&client, "team_report", json!({"team": "forged"})).await;
    assert_eq!(result["isError"], true);
    assert!(text(&result).contains("`team` claim"), "{result}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn shells_are_refused_as_programs() {
    let mut config = crate::helpers::test_config();
    config.tools.command = vec![command(
        json!({"name": "bad", "description": "x", "program": "/bin/sh", "args": ["-c", "{cmd}"]}),
    )];
    let error = config.validate().unwrap_err().to_string();
    assert!(error.contains("tools.command[0].program"), "{error}");
}

#[tokio::test]
async fn a_timed_out_command_is_killed_with_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let sleeper = script(dir.path(), "sleeper.sh", SLEEPER);
    let pid_file = dir.path().join("pid").to_string_lossy().into_owned();
    let app = spawn_app_with(|c| {
        c.tools.command = vec![command(json!({"name": "sleepy", "description": "sleeps",
            "program": sleeper, "args": [pid_file.clone()], "timeout": "500ms"}))];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let result = call(&client, "sleepy", json!({})).await;
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"]["timedOut"], true, "{result}");
    let own = wait_for_file(Path::new(&pid_file)).await;
    assert_dead(&pids(&pid_file, &own)).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_cancelled_command_is_killed_and_lines_stream_as_progress() {
    let dir = tempfile::tempdir().unwrap();
    let talker = script(
        dir.path(),
        "talker.sh",
        &format!("echo starting\necho working\n{SLEEPER}"),
    );
    let pid_file = dir.path().join("pid").to_string_lossy().into_owned();
    let app = spawn_app_with(|c| {
        c.tools.command = vec![command(
            json!({"name": "talker", "description": "talks then sleeps",
            "program": talker, "args": [pid_file.clone()], "timeout": "60s"}),
        )];
    })
    .await;
    let session = app.initialize("2025-11-25").await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let call = json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
        "params": {"name": "talker", "_meta": {"progressToken": "p41"}}});
    let mut stream = app.post(&call, &headers).await;
    assert_eq!(stream.status(), 200);
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !seen.contains("working") {
        let chunk = tokio::time::timeout_at(deadline, stream.chunk())
            .await
            .expect("progress in time")
            .unwrap()
            .expect("stream open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        seen.contains("notifications/progress") && seen.contains("starting"),
        "{seen}"
    );
    let own = wait_for_file(Path::new(&pid_file)).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 41, "reason": "test"}});
    assert_eq!(app.post(&cancel, &headers).await.status(), 202);
    assert_dead(&pids(&pid_file, &own)).await;
    drop(stream);
    // The session still serves other calls.
    let list = messages(
        app.post(
            &json!({"jsonrpc": "2.0", "id": 42, "method": "tools/list"}),
            &headers,
        )
        .await,
    )
    .await;
    assert!(list[0]["result"]["tools"].is_array());
}

#[tokio::test]
async fn closing_a_2026_07_28_stream_cancels_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let talker = script(dir.path(), "talker.sh", &format!("echo working\n{SLEEPER}"));
    let pid_file = dir.path().join("pid").to_string_lossy().into_owned();
    let app = spawn_app_with(|c| {
        c.tools.command = vec![command(
            json!({"name": "talker", "description": "talks then sleeps",
            "program": talker, "args": [pid_file.clone()], "timeout": "60s"}),
        )];
    })
    .await;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": crate::helpers::MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": "m1"});
    let mut stream = app
        .post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "talker", "_meta": meta}}),
            &[
                ("mcp-protocol-version", crate::helpers::MODERN),
                ("mcp-method", "tools/call"),
                ("mcp-name", "talker"),
            ],
        )
        .await;
    assert_eq!(stream.status(), 200);
    let own = wait_for_file(Path::new(&pid_file)).await;
    let first = tokio::time::timeout(Duration::from_secs(10), stream.chunk()).await;
    assert!(first.is_ok(), "the stream started");
    drop(stream);
    assert_dead(&pids(&pid_file, &own)).await;
}

#[tokio::test]
async fn a_declared_timeout_outlasts_the_server_default() {
    let app = spawn_app_with(|c| {
        c.limits.tool_timeout = Duration::from_millis(100);
        c.tools.command = vec![command(
            json!({"name": "nap", "description": "sleeps briefly",
            "program": "/bin/sleep", "args": ["0.4"], "timeout": "5s"}),
        )];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let result = call(&client, "nap", json!({})).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["exitCode"], 0);
    client.cancel().await.unwrap();
}
