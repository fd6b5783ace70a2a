//! HTTP tools and secrets (issue 30): `.`/`..` arguments climbing a URL
//! path; halves of a secret cut apart by progress lines, the head-and-tail
//! cap and an HTTP error excerpt; secrets in object keys; the values
//! teamgate holds itself; configuration errors.

use std::{
    path::Path,
    sync::{Arc, Mutex},
};

use axum::{Json, Router, http::StatusCode, routing::get};
use serde_json::{Value, json};
use teamgate::config::{DatabaseUrl, HttpToolConfig, Secret};

use crate::{
    command_tools::command,
    databases::TestDb,
    helpers::{messages, repo_path, spawn_app_with},
    sdk::{self, call, text},
};

/// A request-state key: teamgate scrubs it from every result.
const SECRET: &str = "rsk-Qz81-0123456789-abcdefghij-KLMNOP";

/// Paths (with query) the upstream saw.
type Seen = Arc<Mutex<Vec<String>>>;

/// An upstream on 127.0.0.1: `/fail` answers 500 with 2040 `x` and then
/// `SECRET`, `/keys` JSON with `SECRET` in keys, anything else "ok".
async fn upstream() -> (String, Seen) {
    let seen = Seen::default();
    let record = seen.clone();
    let app = Router::new()
        .route(
            "/fail",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "x".repeat(2040) + SECRET) }),
        )
        .route(
            "/keys",
            get(|| async { Json(json!({SECRET: 1, "deep": {format!("k-{SECRET}"): "v"}})) }),
        )
        .fallback(move |uri: axum::http::Uri| {
            let record = record.clone();
            async move {
                record.lock().unwrap().push(uri.to_string());
                "ok"
            }
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, seen)
}

fn script(dir: &Path, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("print.sh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

fn http_tool(value: Value) -> HttpToolConfig {
    serde_json::from_value(value).expect("a valid [[tools.http]]")
}

fn holds_part_of_the_secret(text: &str) -> bool {
    text.contains(&SECRET[..5]) || text.contains(&SECRET[SECRET.len() - 5..])
}

#[tokio::test]
async fn dot_arguments_cannot_climb_an_http_tools_path() {
    let (base, seen) = upstream().await;
    let app = spawn_app_with(|c| {
        c.tools.http_allowlist = vec![format!("{base}/api/v1")];
        c.tools.http = vec![http_tool(json!({
            "name": "item", "description": "one item",
            "url": format!("{base}/api/v1/projects/{{project}}/items/{{id}}?q={{q}}"),
            "input_schema": {"type": "object", "properties": {
                "project": {"type": "string"}, "id": {"type": "string"}, "q": {"type": "string"}}}
        }))];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;
    for (project, id) in [
        ("..", ".."),
        (".", "7"),
        ("p", ".."),
        ("p", "."),
        ("..", "7"),
    ] {
        let refused = call(
            &client,
            "item",
            json!({"project": project, "id": id, "q": ".."}),
        )
        .await;
        assert_eq!(refused["isError"], true, "{project}/{id}: {refused}");
        assert!(text(&refused).contains("`.` or `..`"), "{refused}");
    }
    assert_eq!(*seen.lock().unwrap(), Vec::<String>::new(), "nothing sent");
    let fine = call(
        &client,
        "item",
        json!({"project": "a.b", "id": "...", "q": ".."}),
    )
    .await;
    assert_eq!(text(&fine), "ok", "{fine}");
    assert_eq!(
        *seen.lock().unwrap(),
        ["/api/v1/projects/a.b/items/...?q=.."],
        "dots inside a segment and in the query are plain text"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn progress_lines_never_carry_half_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    // The 500-byte progress line ends 5 bytes into the secret.
    let line = format!("{}{SECRET}", "x".repeat(495));
    let program = script(dir.path(), &format!("echo '{line}'\necho '{line}' >&2"));
    let app = spawn_app_with(|c| {
        c.mcp.request_state_keys = vec![Secret::new(SECRET)];
        c.tools.command = vec![command(
            json!({"name": "talk", "description": "prints", "program": program}),
        )];
    })
    .await;
    let session = app.initialize("2025-11-25").await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "talk", "_meta": {"progressToken": "p7"}}});
    let replies = messages(app.post(&call, &headers).await).await;
    let progress: Vec<&str> = replies
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .filter_map(|m| m["params"]["message"].as_str())
        .collect();
    assert!(progress.len() >= 4, "two lines of each stream: {replies:?}");
    assert!(
        progress.iter().any(|m| m.ends_with("[reda")),
        "{progress:?}"
    );
    for message in &progress {
        assert!(!holds_part_of_the_secret(message), "{message}");
    }
    assert!(!holds_part_of_the_secret(&progress.concat()));
    let result = replies.last().unwrap().to_string();
    assert!(result.contains("[redacted]"), "{result}");
    assert!(!holds_part_of_the_secret(&result), "{result}");
}

#[tokio::test]
async fn cuts_of_output_and_error_excerpts_happen_after_scrubbing() {
    let (base, _) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    // A 100-byte cap keeps 50 bytes each end: both cuts fall inside a secret.
    let body = format!(
        "{}{SECRET}{}{SECRET}{}",
        "a".repeat(45),
        "b".repeat(300),
        "c".repeat(45)
    );
    let program = script(dir.path(), &format!("printf '%s' '{body}'"));
    let app = spawn_app_with(|c| {
        c.mcp.request_state_keys = vec![Secret::new(SECRET)];
        c.tools.command = vec![command(json!({"name": "long", "description": "prints",
            "program": program, "max_output_bytes": 100}))];
        c.tools.http_allowlist = vec![base.clone()];
        c.tools.http = vec![
            http_tool(json!({"name": "fail", "description": "500",
                "url": format!("{base}/fail")})),
            http_tool(json!({"name": "keys", "description": "keys",
                "url": format!("{base}/keys"), "output_schema": {"type": "object"}})),
        ];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;

    let long = call(&client, "long", json!({})).await;
    let stdout = long["structuredContent"]["stdout"].as_str().unwrap();
    assert!(stdout.starts_with(&"a".repeat(45)), "{long}");
    assert!(stdout.ends_with(&"c".repeat(45)), "{long}");
    assert!(stdout.contains("bytes omitted"), "{long}");
    assert!(!holds_part_of_the_secret(&long.to_string()), "{long}");

    let failed = call(&client, "fail", json!({})).await;
    assert_eq!(failed["isError"], true);
    assert!(text(&failed).contains("500"), "{failed}");
    assert!(!holds_part_of_the_secret(&failed.to_string()), "{failed}");

    let keys = call(&client, "keys", json!({})).await;
    assert_eq!(keys["isError"], false, "{keys}");
    assert_eq!(keys["structuredContent"]["[redacted]"], 1, "{keys}");
    assert_eq!(keys["structuredContent"]["deep"]["k-[redacted]"], "v");
    assert!(!keys.to_string().contains(SECRET), "{keys}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn values_teamgate_holds_are_scrubbed() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    // Trust authentication ignores the password; the URL still carries it.
    let password = "pg-pw-Lk93Hq7Zt2";
    let url = db
        .url
        .replacen("://postgres@", &format!("://postgres:{password}@"), 1);
    assert!(url.contains(password), "{url}");
    let metrics = "metrics-tok-55Vb71";
    let app = spawn_app_with(|c| {
        c.store.url = DatabaseUrl::new(url);
        c.mcp.request_state_keys = vec![Secret::new(SECRET)];
        c.telemetry.metrics.token = Secret::new(metrics);
        c.tools.command = vec![command(json!({"name": "say", "description": "echo",
            "program": "/bin/echo", "args": [password, metrics]}))];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let said = call(&client, "say", json!({})).await;
    assert_eq!(
        said["structuredContent"]["stdout"], "[redacted] [redacted]\n",
        "{said}"
    );
    client.cancel().await.unwrap();
    drop(app);
    db.cleanup().await;
}

#[test]
fn configuration_errors_never_print_secret_values() {
    let key = "plainkey-0123456789-0123456789-0123456789";
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_teamgate"))
        .args(["check-config"])
        .current_dir(repo_path(""))
        .env("TEAMGATE__MCP__REQUEST_STATE_KEYS", key)
        .output()
        .expect("teamgate runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("TEAMGATE__MCP__REQUEST_STATE_KEYS"),
        "names the variable: {stderr}"
    );
    assert!(!stderr.contains("plainkey"), "{stderr}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "[telemetry.metrics]\ntoken = [\"tok-in-a-list-9931\"]\n[store]\nurl = 5\n[mcp]\nrequest_state_keys = \"file-key-7781\"\n",
    )
    .unwrap();
    let error = teamgate::config::ConfigSources::files_only(vec![file])
        .load()
        .unwrap_err()
        .to_string();
    assert!(error.contains("request_state_keys"), "{error}");
    for value in ["tok-in-a-list-9931", "file-key-7781"] {
        assert!(!error.contains(value), "{error}");
    }
}
