//! Upstream tasks (issue 66 part 2): an upstream on the official Python SDK
//! serving the tasks extension (tests/interop/tasks_upstream_py.py) over a
//! `protocol = "2026-07-28"` link. A member whose call holds no task handle
//! (a 2025-era session through the official Rust SDK client, or a
//! 2026-07-28 request not declaring tasks) gets the upstream task's result
//! within the call; a call over its time limit cancels the task upstream.

use std::time::Duration;

use serde_json::json;
use teamgate::config::{AuthMode, UpstreamConfig};

use crate::{
    helpers::{TestApp, repo_path, spawn_app_with},
    sdk,
    sec44_upreg::python,
    tasks::call_as,
    upstream_oauth::token,
};

fn upstream(python: &str, protocol: &str) -> UpstreamConfig {
    let script = repo_path("tests/interop/tasks_upstream_py.py")
        .display()
        .to_string();
    let entry = format!(
        "name = \"builds\"\ncommand = {python:?}\nargs = [{script:?}, \"stdio\"]\n\
         pin = false\nprotocol = \"{protocol}\"\n[tools.hang]\ntimeout = \"2s\"\n"
    );
    toml::from_str(&entry).unwrap()
}

async fn app(python: &str, protocol: &str) -> TestApp {
    let upstream = upstream(python, protocol);
    spawn_app_with(move |c| {
        c.auth.mode = AuthMode::Required;
        c.upstreams = vec![upstream];
    })
    .await
}

/// The SDK client once the upstream's tools are listed (bounded).
async fn connected(app: &TestApp, token: &str) -> sdk::Client {
    let (client, _heard) = sdk::connect_as(&app.url, Some(token), None).await;
    for _ in 0..300 {
        let tools = client.list_all_tools().await.unwrap();
        if tools.iter().any(|t| t.name == "builds_slow") {
            return client;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the upstream's tools were not listed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_without_a_task_handle_gets_the_upstream_tasks_result_and_a_late_one_is_cancelled() {
    let Some(python) = python() else { return };
    let app = app(&python, "2026-07-28").await;
    let alice = token(&app, "alice", &["*"]).await;
    let client = connected(&app, &alice).await;

    // A 2025-era session: the upstream made a task; teamgate waited for it.
    let built = sdk::call(&client, "builds_slow", json!({"seconds": 1})).await;
    assert_eq!(sdk::text(&built), "built after 1s", "{built}");
    assert_ne!(built["isError"], true);
    let seen = sdk::call(&client, "builds_seen", json!({})).await;
    assert_eq!(
        sdk::text(&seen),
        "completed",
        "one task, made upstream: {seen}"
    );

    // A 2026-07-28 request that does not declare tasks: the same.
    let params = json!({"name": "builds_slow", "arguments": {"seconds": 0.5}});
    let reply = call_as(&app, &alice, "tools/call", params, json!({})).await;
    let result = &reply["result"];
    assert_eq!(result["resultType"], "complete", "no task handle: {reply}");
    assert_eq!(result["content"][0]["text"], "built after 0.5s", "{reply}");

    // Over its time limit (2 s): the call ends saying so, and the task is
    // cancelled upstream, not left running there.
    let hung = sdk::call(&client, "builds_hang", json!({})).await;
    assert_eq!(hung["isError"], true, "{hung}");
    assert!(sdk::text(&hung).contains("did not finish within"), "{hung}");
    let mut statuses = String::new();
    for _ in 0..50 {
        let seen = sdk::call(&client, "builds_seen", json!({})).await;
        statuses = sdk::text(&seen).to_owned();
        if statuses.ends_with("cancelled") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(statuses, "completed\ncompleted\ncancelled");

    // Audited as any upstream call, the upstream named.
    let records = app.store.audit_tail(Some("alice"), 0, 100).await.unwrap();
    let slow: Vec<_> = (records.iter())
        .filter(|r| r.target == "builds_slow")
        .collect();
    assert_eq!(slow.len(), 2, "{slow:?}");
    assert!(
        slow.iter()
            .all(|r| r.outcome == "ok" && r.upstream == "builds")
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn on_a_2025_link_the_same_upstream_answers_in_the_call() {
    let Some(python) = python() else { return };
    let app = app(&python, "2025-11-25").await;
    let alice = token(&app, "alice", &["*"]).await;
    let client = connected(&app, &alice).await;
    let built = sdk::call(&client, "builds_slow", json!({"seconds": 0.2})).await;
    assert_eq!(sdk::text(&built), "built after 0.2s", "{built}");
    // No task was made: teamgate did not declare the extension upstream.
    let seen = sdk::call(&client, "builds_seen", json!({})).await;
    assert_eq!(sdk::text(&seen), "", "{seen}");
    client.cancel().await.unwrap();
}

#[test]
fn protocol_takes_the_two_revisions_only() {
    let entry = |protocol: &str| {
        let text =
            format!("name = \"u\"\nurl = \"http://127.0.0.1:1/mcp\"\nprotocol = \"{protocol}\"\n");
        toml::from_str::<UpstreamConfig>(&text).map_err(|e| e.to_string())
    };
    assert!(entry("2026-07-28").is_ok());
    assert!(entry("2025-11-25").is_ok());
    let refused = entry("2026").unwrap_err();
    assert!(refused.contains("2026-07-28"), "{refused}");
}
