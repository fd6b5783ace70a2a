//! A 2025-era client that drops its call's stream and does not resume it
//! within `mcp.disconnect_grace` stops the call: a forking command tool's
//! processes, children included, are gone after the grace, and the audit
//! record says the client disconnected. Resumed in time, the call finishes.

use std::{path::Path, time::Duration};

use serde_json::{Value, json};
use teamgate::store::AuditRecord;

use crate::{
    command_tools::command,
    helpers::{Sse, TestApp, audit_until, messages, spawn_app_with},
};

/// Writes an executable script (run directly through its `#!` line).
pub(crate) fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// Pids of running (not zombie) processes whose command line is `argv`.
pub(crate) fn running(argv: &[&str]) -> Vec<i32> {
    let wanted = argv.join("\0") + "\0";
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = (stat.rsplit(')').next()).is_some_and(|s| s.trim_start().starts_with('Z'));
        if cmdline == wanted.as_bytes() && !zombie {
            found.push(pid);
        }
    }
    found
}

/// A session's call of `tool` with a progress token, as its open stream.
pub(crate) async fn call(app: &TestApp, session: &str, id: i64, tool: &str) -> Sse {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "_meta": {"progressToken": format!("p{id}")}}});
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let response = app.post(&call, &headers).await;
    assert_eq!(response.status(), 200);
    Sse::new(response)
}

/// The id of the last event `stream` has read.
pub(crate) fn last_event_id(stream: &Sse) -> String {
    (stream.seen.lines())
        .rev()
        .find_map(|l| l.strip_prefix("id:"))
        .map(|id| id.trim().to_owned())
        .expect("events carry ids")
}

/// A GET resuming `session`'s stream after the event `last_id`.
pub(crate) async fn resume(app: &TestApp, session: &str, last_id: &str) -> reqwest::Response {
    app.client
        .get(&app.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", last_id)
        .send()
        .await
        .unwrap()
}

/// The audit record of the call of `tool`, once written.
async fn audited(app: &TestApp, tool: &str) -> teamgate::store::AuditRecord {
    let of_it = |r: &AuditRecord| r.method == "tools/call" && r.target == tool;
    let rows = audit_until(&app.store, None, |r| r.iter().any(of_it)).await;
    (rows.into_iter().find(of_it)).unwrap_or_else(|| panic!("{tool} not audited"))
}

#[tokio::test]
async fn a_forking_command_left_by_its_client_is_stopped_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    // Unique to this run, so other runs' processes are not counted.
    let seconds = format!("311.{}", std::process::id());
    let forker = script(
        dir.path(),
        "forker.sh",
        &format!("/bin/sleep {seconds} &\n/bin/sleep {seconds} &\necho started\nwait"),
    );
    let app = spawn_app_with(|c| {
        c.mcp.sse_retry = Duration::from_millis(200);
        c.mcp.disconnect_grace = Duration::from_secs(1);
        c.tools.command = vec![command(json!({"name": "forker", "description": "forks",
            "program": forker, "timeout": "60s"}))];
    })
    .await;
    let session = app.initialize("2025-11-25").await;
    let mut stream = call(&app, &session, 5, "forker").await;
    stream.until("started", Duration::from_secs(10)).await;
    let sleeping = ["/bin/sleep", seconds.as_str()];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while running(&sleeping).len() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "both children run");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The client leaves without a word.
    drop(stream);
    let left = tokio::time::Instant::now();
    // Within the grace, the call runs on.
    assert_eq!(running(&sleeping).len(), 2, "the call outlives the drop");
    let deadline = left + Duration::from_secs(10);
    while !running(&sleeping).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the children still run: {:?}",
            running(&sleeping)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        left.elapsed() >= Duration::from_secs(1),
        "not before the grace"
    );
    let row = audited(&app, "forker").await;
    assert_eq!(row.outcome, "cancelled: client disconnected", "{row:?}");
    // The session serves on.
    let list = app.session_call(&session, 6, "tools/list", json!({})).await;
    assert!(list["result"]["tools"].is_array(), "{list}");
}

#[tokio::test]
async fn a_stream_resumed_within_the_grace_keeps_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let slow = script(
        dir.path(),
        "slow.sh",
        "echo started\n/bin/sleep 3\necho finished",
    );
    let app = spawn_app_with(|c| {
        c.mcp.sse_retry = Duration::from_millis(200);
        c.mcp.disconnect_grace = Duration::from_secs(1);
        c.tools.command = vec![command(json!({"name": "slow", "description": "takes 3 s",
            "program": slow, "timeout": "60s"}))];
    })
    .await;
    let session = app.initialize("2025-11-25").await;
    let mut stream = call(&app, &session, 7, "slow").await;
    stream.until("started", Duration::from_secs(10)).await;
    let last_id = last_event_id(&stream);
    drop(stream);
    // The client comes back after its retry delay, well within the grace.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let resumed = resume(&app, &session, &last_id).await;
    assert_eq!(resumed.status(), 200);
    // The call runs past the grace (3 s against 1 s) to its own end.
    let replayed = tokio::time::timeout(Duration::from_secs(15), messages(resumed))
        .await
        .expect("the resumed stream ends with the result");
    let result: &Value = replayed.last().expect("a message");
    assert_eq!(result["id"], 7, "{replayed:?}");
    let result = &result["result"];
    assert_eq!(result["isError"], false, "{result}");
    let stdout = result["structuredContent"]["stdout"].as_str().unwrap_or("");
    assert!(stdout.contains("finished"), "{result}");
    assert_eq!(audited(&app, "slow").await.outcome, "ok");
}

#[test]
fn a_grace_shorter_than_the_retry_delay_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grace.toml");
    std::fs::write(
        &path,
        "[mcp]\nsse_retry = \"3s\"\ndisconnect_grace = \"2s\"\n",
    )
    .unwrap();
    let error = teamgate::config::ConfigSources::files_only(vec![path])
        .load()
        .unwrap_err()
        .to_string();
    assert!(error.contains("mcp.disconnect_grace"), "{error}");
    assert!(error.contains("mcp.sse_retry"), "{error}");
}
