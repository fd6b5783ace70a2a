//! Issue 65 part 2, the rest of the ways in: a 2026-07-28 client that
//! declares tasks gets a task waiting for the approval, an upstream's tool
//! (the Python SDK's) waits the same way, and the configuration refuses an
//! approval nobody could give. `approvals.rs` has the main path.

use std::{sync::Arc, time::Duration};

use reqwest::StatusCode;
use serde_json::json;
use teamgate::store::{ApprovalRepo, SystemClock};

use crate::{
    approvals::{approvals_app, args, decide, deploy_tool, request_until, within},
    portal_idp::Browser,
    sdk::{self, text},
    tasks,
    upstream_oauth::token,
};

#[tokio::test]
async fn a_client_declaring_tasks_gets_a_task_that_waits_for_the_approval() {
    let (app, _idp) = approvals_app(Arc::new(SystemClock), |_| {}).await;
    let eve_token = token(&app, "eve", &["tools:*"]).await;
    let params = json!({"name": "deploy", "arguments": args("search")});
    let created = tasks::call(&app, &eve_token, "tools/call", params).await;
    let created = &created["result"];
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let row = request_until(&app, "search", "pending").await;

    // While it waits, the task says for whom.
    let mut message = String::new();
    for _ in 0..100 {
        let task = tasks::call(&app, &eve_token, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(task["result"]["status"], "working", "{task}");
        message = task["result"]["statusMessage"]
            .as_str()
            .unwrap_or_default()
            .into();
        if !message.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        message.starts_with("Waiting for a member of leads to approve"),
        "{message}"
    );
    assert!(message.contains(&row.id), "{message}");

    let fay = Browser::sign_in(&app, "fay").await;
    let (status, body) = decide(&app, &fay, &row.id, "approve", "").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    let done = tasks::settled(&app, &eve_token, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let stdout = &done["result"]["structuredContent"]["stdout"];
    assert_eq!(stdout, "deployed search at 1.4.2\n", "{done}");
    app.stop().await;
}

#[test]
fn approval_needs_the_portal_a_group_and_a_bounded_timeout() {
    let mut config = crate::helpers::test_config();
    config.tools.command = vec![deploy_tool("30m")];
    let refused = config.validate().unwrap_err().to_string();
    assert!(refused.contains("tools.command[0].approval"), "{refused}");
    assert!(refused.contains("needs [portal]"), "{refused}");
    config.portal = Some(crate::portal_idp::portal_config("http://127.0.0.1:1"));
    config.server.public_url = "http://127.0.0.1:2/mcp".into();
    config.validate().expect("with the portal it is valid");
    config.tools.command = vec![deploy_tool("8d")];
    let refused = config.validate().unwrap_err().to_string();
    assert!(
        refused.contains("tools.command[0].approval.timeout"),
        "{refused}"
    );
    let mut nameless = deploy_tool("1h");
    nameless.approval.as_mut().unwrap().group = " ".into();
    config.tools.command = vec![nameless];
    let refused = config.validate().unwrap_err().to_string();
    assert!(refused.contains("approval.group"), "{refused}");
}

#[tokio::test]
async fn an_upstream_tool_with_approval_waits_for_a_lead_too() {
    let Some(python) = crate::sec44_upreg::python() else {
        return;
    };
    let script = crate::helpers::repo_path("tests/interop/annotated_py.py");
    let entry = format!(
        "name = \"db\"\ncommand = {python:?}\nargs = [{script:?}]\n\
         [tools.trim]\nconfirm = false\napproval = {{ group = \"leads\", timeout = \"10m\" }}\n",
        script = script.display().to_string()
    );
    let upstream: teamgate::config::UpstreamConfig = toml::from_str(&entry).unwrap();
    let (app, _idp) = approvals_app(Arc::new(SystemClock), |c| c.upstreams = vec![upstream]).await;
    let eve_token = token(&app, "eve", &["tools:*"]).await;
    let (client, _) = sdk::connect_as(&app.url, Some(&eve_token), None).await;
    for _ in 0..300 {
        let tools = client.list_all_tools().await.unwrap();
        if tools.iter().any(|t| t.name == "db_trim") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let call =
        tokio::spawn(async move { sdk::call(&client, "db_trim", json!({"target": "logs"})).await });
    let mut pending = None;
    for _ in 0..300 {
        let rows = app.store.approvals_seen_by("eve", &[], 10).await.unwrap();
        pending = rows
            .into_iter()
            .find(|r| r.tool == "db_trim" && r.status == "pending");
        if pending.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let row = pending.expect("the upstream's call waits for approval");
    assert_eq!(row.arguments, r#"{"target":"logs"}"#);
    assert!(!call.is_finished());
    let fay = Browser::sign_in(&app, "fay").await;
    let (status, body) = decide(&app, &fay, &row.id, "approve", "").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    let result = within(call).await;
    assert_eq!(text(&result), "done: logs", "{result}");
    app.stop().await;
}

#[tokio::test]
async fn a_member_has_at_most_twenty_calls_waiting() {
    let (app, _idp) = approvals_app(Arc::new(SystemClock), |_| {}).await;
    let now = app.store.now_ms();
    for i in 0..20 {
        let row = teamgate::store::ApprovalRow {
            id: format!("waiting-{i}"),
            requester: "eve".into(),
            tool: "deploy".into(),
            arguments: format!("{{\"service\":\"s{i}\",\"version\":\"1\"}}"),
            args_digest: format!("d{i}"),
            group: "leads".into(),
            status: "pending".into(),
            decided_by: None,
            reason: None,
            created_ms: now,
            expires_ms: now + 60_000,
            decided_ms: None,
        };
        app.store.create_approval(&row).await.unwrap();
    }
    let eve_token = token(&app, "eve", &["tools:*"]).await;
    let (client, _) = sdk::connect_as(&app.url, Some(&eve_token), None).await;
    let refused = tokio::time::timeout(
        Duration::from_secs(10),
        sdk::call(&client, "deploy", args("one-too-many")),
    )
    .await
    .expect("refused at once");
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        text(&refused).starts_with("you already have 20 calls waiting for approval"),
        "{refused}"
    );
    let rows = app.store.approvals_seen_by("eve", &[], 50).await.unwrap();
    assert_eq!(rows.len(), 20, "no 21st request");
    app.stop().await;
}
