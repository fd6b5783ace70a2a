//! `teamgate stdio`: the same registry over newline-delimited JSON-RPC on
//! stdin/stdout, with nothing but protocol messages on stdout.

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::helpers::repo_path;

#[tokio::test]
async fn stdio_serves_the_registry() {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_teamgate"))
        .args(["stdio", "--config"])
        .arg(repo_path("config/conformance.toml"))
        .current_dir(repo_path(""))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("teamgate binary starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = async |message: Value| {
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    };
    send(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
    )
    .await;
    let timeout = std::time::Duration::from_secs(10);
    let line = tokio::time::timeout(timeout, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let init: Value = serde_json::from_str(&line).expect("stdout carries only JSON-RPC");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    send(json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await;
    send(
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_simple_text"}}),
    )
    .await;
    let line = tokio::time::timeout(timeout, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let call: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(call["id"], 2);
    assert_eq!(
        call["result"]["content"][0]["text"],
        "This is a simple text response for testing."
    );
    drop(stdin);
    let status = tokio::time::timeout(timeout, child.wait())
        .await
        .expect("exits when stdin closes")
        .unwrap();
    assert!(status.success());
}
