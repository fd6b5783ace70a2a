//! README's Quick start run as written: its Python SDK script (issue 63
//! item 2) against a tool that takes longer than httpx's default 5 s read
//! timeout, and its first call with curl (issue 63 item 8).

use std::time::Duration;

use serde_json::json;
use teamgate::config::AuthMode;

use crate::{
    command_tools::command,
    helpers::{repo_path, spawn_app_with},
    upstream_pins::python,
};

/// The ```python block after "**Python SDK**" in README.
fn readme_script() -> String {
    let readme = std::fs::read_to_string(repo_path("README.md")).unwrap();
    let from = readme
        .find("**Python SDK**")
        .expect("README shows the Python SDK");
    let rest = &readme[from..];
    let start = rest.find("```python\n").expect("a python block") + "```python\n".len();
    let end = rest[start..].find("\n```").expect("the block ends") + start;
    rest[start..end].to_owned()
}

#[tokio::test]
async fn readmes_python_script_waits_for_a_six_second_tool() {
    let Some((python, _)) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("call.py");
    std::fs::write(&script, readme_script()).unwrap();
    let app = spawn_app_with(|c| {
        c.auth.mode = AuthMode::Required;
        c.tools.command = vec![command(
            json!({"name": "slow_report", "description": "takes 6 s",
            "program": "/bin/sh", "args": ["-c", "sleep 6; echo report ready"], "timeout": "30s"}),
        )];
    })
    .await;
    let token = app
        .tokens
        .create("ann", "", vec!["*".into()], None)
        .await
        .unwrap()
        .token;
    let run = tokio::process::Command::new(python)
        .arg(&script)
        .env("TEAMGATE_URL", &app.url)
        .env("TEAMGATE_TOKEN", &token)
        .env("TEAMGATE_TOOL", "slow_report")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("slow_report") && stdout.contains("report ready"),
        "{stdout}{stderr}"
    );
}

/// The ```sh block of README that holds `curl`, aimed at `url`.
fn readme_curl(url: &str) -> String {
    let readme = std::fs::read_to_string(repo_path("README.md")).unwrap();
    let block = readme
        .split("```sh\n")
        .skip(1)
        .map(|rest| &rest[..rest.find("\n```").expect("the block ends")])
        .find(|block| block.contains("curl "))
        .expect("README shows a first call with curl");
    // The token line is for the reader; the test sets TEAMGATE_TOKEN itself.
    let commands: Vec<&str> = block
        .lines()
        .filter(|l| !l.starts_with("export "))
        .collect();
    commands
        .join("\n")
        .replace("http://127.0.0.1:8080/mcp", url)
}

#[tokio::test]
async fn readmes_curl_call_answers_who_the_token_belongs_to() {
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIP: no curl");
        return;
    }
    let app = spawn_app_with(|c| c.auth.mode = AuthMode::Required).await;
    let token = app
        .tokens
        .create("alice", "", vec!["*".into()], None)
        .await
        .unwrap()
        .token;
    let out = tokio::process::Command::new("bash")
        .args(["-c", &readme_curl(&app.url)])
        .env("TEAMGATE_TOKEN", &token)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let reply: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON-RPC reply");
    let info = &reply["result"]["structuredContent"];
    assert_eq!(info["user"], "alice", "{reply}");
}
