//! Upstream servers' lives (issue 26): a stdio upstream killed mid-run
//! leaves the lists and comes back when teamgate restarts it; a reload
//! stops a removed upstream's process, starts a changed one, and a reload
//! that cannot be built leaves the running upstreams serving. Members hear
//! `list_changed` each time. Against the official everything server.

use std::{path::Path, time::Duration};

use serde_json::json;

use crate::{
    helpers::{TestApp, spawn_app_with, test_config},
    sdk::{self, Heard, hear},
    upstreams::{everything, upstream},
};

/// The pid of the upstream process running in `cwd`: each test gives its
/// upstream a directory of its own, so tests running at once never meet.
fn upstream_pid(cwd: &Path) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let entry = entry.ok()?;
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        (std::fs::read_link(entry.path().join("cwd")).ok()? == cwd).then_some(pid)
    })
}

async fn names(app: &TestApp) -> Vec<String> {
    let (_, replies) = app.modern_call(9, "tools/list", json!({})).await;
    replies[0]["result"]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits (at most 30 s) until `tool` is listed, or is not when `listed` is false.
async fn until(app: &TestApp, tool: &str, listed: bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = names(app).await;
        if now.iter().any(|n| n == tool) == listed {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{tool} listed should be {listed}: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (at most 10 s) until no process runs in `cwd`, or, given `pid`,
/// until that one no longer does (a stopped process ends a moment later).
async fn gone(cwd: &Path, pid: Option<u32>) {
    for _ in 0..200 {
        let running = match pid {
            Some(pid) => std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == cwd),
            None => upstream_pid(cwd).is_some(),
        };
        if !running {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the upstream in {} still runs", cwd.display());
}

#[tokio::test]
async fn a_killed_upstream_leaves_the_lists_and_comes_back() {
    let Some((node, script)) = everything() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path().canonicalize().unwrap();
    let config = upstream(&node, &script, json!({"cwd": cwd.display().to_string()}));
    let app = spawn_app_with(move |c| c.upstreams = vec![config]).await;
    until(&app, "everything_echo", true).await;
    let (client, mut heard) = sdk::connect(&app.url, None).await;

    let first = upstream_pid(&cwd).expect("the upstream runs in its cwd");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &first.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    until(&app, "everything_echo", false).await;
    hear(&mut heard, &Heard::ToolsChanged).await;

    // Restarted with backoff: a new process, its tools listed and callable.
    until(&app, "everything_echo", true).await;
    let second = upstream_pid(&cwd).expect("restarted");
    assert_ne!(first, second);
    let (status, replies) = app
        .modern_call(
            2,
            "tools/call",
            json!({"name": "everything_echo", "arguments": {"message": "back"}}),
        )
        .await;
    assert_eq!(status, 200);
    assert!(
        replies[0]["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("back")
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn reloads_start_change_and_stop_upstreams_and_a_broken_one_changes_nothing() {
    let Some((node, script)) = everything() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path().canonicalize().unwrap();
    let at = json!({"cwd": cwd.display().to_string()});
    let first = upstream(&node, &script, at.clone());
    let app = spawn_app_with(move |c| c.upstreams = vec![first]).await;
    until(&app, "everything_echo", true).await;
    let running = upstream_pid(&cwd).unwrap();
    let (client, mut heard) = sdk::connect(&app.url, None).await;

    // A configuration that cannot be built (a secret that is not set) is
    // refused whole: the running upstream keeps its process and tools.
    let mut broken = test_config();
    let mut unset = at.clone();
    unset["secret_env"] = json!(["TEAMGATE_TEST_UNSET_VARIABLE"]);
    unset["name"] = json!("other");
    broken.upstreams = vec![
        upstream(&node, &script, at.clone()),
        upstream(&node, &script, unset),
    ];
    let error = app.reloader.reload(&broken).unwrap_err().to_string();
    assert!(error.contains("TEAMGATE_TEST_UNSET_VARIABLE"), "{error}");
    assert_eq!(upstream_pid(&cwd), Some(running), "the same process serves");
    until(&app, "everything_echo", true).await;

    // A changed upstream reconnects under its new prefix.
    let mut changed = test_config();
    let mut prefixed = at.clone();
    prefixed["prefix"] = json!("ev.");
    changed.upstreams = vec![upstream(&node, &script, prefixed)];
    app.reloader.reload(&changed).unwrap();
    until(&app, "ev.echo", true).await;
    until(&app, "everything_echo", false).await;
    hear(&mut heard, &Heard::ToolsChanged).await;
    gone(&cwd, Some(running)).await;
    assert!(upstream_pid(&cwd).is_some(), "restarted");

    // A removed upstream's process ends and its tools leave.
    app.reloader.reload(&test_config()).unwrap();
    until(&app, "ev.echo", false).await;
    gone(&cwd, None).await;
    client.cancel().await.unwrap();
}
