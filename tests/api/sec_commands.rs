//! Commands do not outlive their call (issue 30, item 17): a grandchild that
//! leaves the process group with `setsid` is killed with the rest, whether
//! the call times out, ends by itself, or its client goes away.

use std::{path::Path, time::Duration};

use serde_json::{Value, json};

use crate::{
    command_tools::command,
    helpers::{MODERN, TestApp, spawn_app_with},
};

/// The script records its pid in `$1` and starts a grandchild in a session
/// of its own, which records its pid in `$1.escaped` and sleeps.
fn escaping_script(dir: &Path, then: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("escape.sh");
    let body = format!(
        "#!/bin/sh\n\
         setsid /bin/sh -c 'echo $$ > \"$1.escaped\"; exec /bin/sleep 30' sh \"$1\" &\n\
         while [ ! -s \"$1.escaped\" ]; do /bin/sleep 0.02; done\n\
         echo $$ > \"$1\"\n\
         {then}\n"
    );
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// Still there: running, or a zombie nobody reaped (teamgate adopts the
/// call's orphans, so it must reap them too).
fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The pids the script wrote, once both are written.
async fn recorded(pid_file: &str) -> [i32; 2] {
    for _ in 0..400 {
        let read = |path: String| {
            std::fs::read_to_string(path)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
        };
        if let (Some(own), Some(escaped)) = (
            read(pid_file.to_owned()),
            read(format!("{pid_file}.escaped")),
        ) {
            return [own, escaped];
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the script did not record its pids");
}

async fn assert_all_end(pids: [i32; 2]) {
    for _ in 0..200 {
        if !pids.iter().any(|p| alive(*p)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let running: Vec<i32> = pids.into_iter().filter(|p| alive(*p)).collect();
    // Never leave them behind, whatever the outcome.
    for pid in &running {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    panic!("processes {running:?} outlived their call");
}

/// A server whose `escape` tool runs the script (ending with `then`) with
/// `timeout`; the script's pid file.
async fn escape_tool(dir: &Path, then: &str, timeout: &str) -> (TestApp, String) {
    let pid_file = dir.join("pid").to_string_lossy().into_owned();
    let tool = command(json!({"name": "escape", "description": "leaves its group",
        "program": escaping_script(dir, then), "args": [pid_file.clone()], "timeout": timeout}));
    let app = spawn_app_with(move |c| c.tools.command = vec![tool]).await;
    (app, pid_file)
}

/// Calls `escape` (2026-07-28) to the end; its structured result.
async fn escape(then: &str, timeout: &str) -> (Value, [i32; 2]) {
    let dir = tempfile::tempdir().unwrap();
    let (app, pid_file) = escape_tool(dir.path(), then, timeout).await;
    let (status, replies) = app
        .modern_call(7, "tools/call", json!({"name": "escape"}))
        .await;
    assert_eq!(status, 200);
    let result = replies[0]["result"]["structuredContent"].clone();
    (result, recorded(&pid_file).await)
}

#[tokio::test]
async fn a_setsid_grandchild_dies_when_the_call_times_out() {
    let (result, pids) = escape("/bin/sleep 30", "1s").await;
    assert_eq!(result["timedOut"], true, "{result}");
    assert_all_end(pids).await;
}

#[tokio::test]
async fn a_setsid_grandchild_dies_when_the_command_exits() {
    let (result, pids) = escape("exit 0", "20s").await;
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_all_end(pids).await;
}

#[tokio::test]
async fn a_client_that_goes_away_ends_its_command() {
    let dir = tempfile::tempdir().unwrap();
    let (app, pid_file) = escape_tool(dir.path(), "/bin/sleep 30", "60s").await;
    // 2026-07-28, answered as one JSON body: nobody can receive the result.
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "escape", "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers = [
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", "escape"),
    ];
    // Once the script has started, long before its timeout, the request is
    // dropped and its connection closed.
    let pids = tokio::select! {
        _ = app.post(&call, &headers) => panic!("answered before the command ended"),
        pids = recorded(&pid_file) => pids,
    };
    assert_all_end(pids).await;
}
