//! `store.max_sessions_in_memory`: past it the least recently used idle
//! session leaves memory at once and its next request restores it; a session
//! whose call is in flight stays, even with its stream dropped.

use std::{path::Path, time::Duration};

use serde_json::{Value, json};

use crate::{
    command_tools::command,
    disconnect::{call, last_event_id, resume, script},
    helpers::{TestApp, is_simple_text, messages, spawn_app_with},
    telemetry::scrape,
};

#[tokio::test]
async fn past_the_cap_idle_sessions_leave_memory_and_come_back() {
    let app = spawn_app_with(|c| c.store.max_sessions_in_memory = 2).await;
    let mut sessions = Vec::new();
    for _ in 0..5 {
        sessions.push(app.initialize("2025-11-25").await);
        assert!(app.sessions.in_memory().await <= 2, "held to the cap");
    }
    assert_eq!(app.sessions.in_memory().await, 2);
    assert_eq!(app.sessions.dropped_for_cap(), 3);
    let (_, metrics) = scrape(&app.base(), None).await;
    assert!(
        metrics
            .lines()
            .any(|l| l == "teamgate_sessions_dropped_total 3"),
        "{metrics}"
    );
    // Each, the dropped ones first, is served again (restored from its row).
    for (id, session) in (1..).zip(&sessions) {
        let reply = app
            .session_call(
                session,
                id,
                "tools/call",
                json!({"name": "test_simple_text"}),
            )
            .await;
        assert!(is_simple_text(&reply), "{reply}");
        assert_eq!(app.sessions.in_memory().await, 2);
    }
}

/// A script that says "started", then waits (30 s at most) for `gate` to
/// exist before it says "finished".
fn gated(dir: &Path, gate: &Path) -> String {
    let gate = gate.display();
    script(
        dir,
        "gated.sh",
        &format!(
            "echo started\ni=0\nwhile [ ! -e {gate} ] && [ $i -lt 600 ]; do \
             /bin/sleep 0.05; i=$((i+1)); done\necho finished"
        ),
    )
}

async fn app_with_gated(dir: &Path, gate: &Path) -> TestApp {
    let program = gated(dir, gate);
    spawn_app_with(|c| {
        c.store.max_sessions_in_memory = 1;
        c.mcp.sse_retry = Duration::from_millis(200);
        c.mcp.disconnect_grace = Duration::from_secs(20);
        c.tools.command = vec![command(json!({"name": "gated", "description": "waits",
            "program": program, "timeout": "60s"}))];
    })
    .await
}

fn finished(reply: &Value) -> bool {
    let stdout = reply["result"]["structuredContent"]["stdout"].as_str();
    reply["result"]["isError"] == false && stdout.is_some_and(|s| s.contains("finished"))
}

#[tokio::test]
async fn a_session_with_a_call_in_flight_stays_past_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let app = app_with_gated(dir.path(), &gate).await;
    let busy = app.initialize("2025-11-25").await;
    let mut stream = call(&app, &busy, 3, "gated").await;
    stream.until("started", Duration::from_secs(10)).await;
    for _ in 0..3 {
        app.initialize("2025-11-25").await;
    }
    assert_eq!(
        app.sessions.in_memory().await,
        2,
        "the busy session and the newest idle one"
    );
    std::fs::write(&gate, "").unwrap();
    // Its answer comes on the stream it opened: its worker was never closed.
    stream.until(r#""id":3"#, Duration::from_secs(30)).await;
    let reply = (stream.seen.lines())
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|message| message["id"] == 3)
        .expect("the call's answer");
    assert!(finished(&reply), "{reply}");
}

#[tokio::test]
async fn a_call_whose_stream_was_dropped_keeps_its_session_until_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let app = app_with_gated(dir.path(), &gate).await;
    let busy = app.initialize("2025-11-25").await;
    let mut stream = call(&app, &busy, 4, "gated").await;
    stream.until("started", Duration::from_secs(10)).await;
    let last_id = last_event_id(&stream);
    // The client drops the stream; its call runs on in the session's worker.
    drop(stream);
    for _ in 0..3 {
        app.initialize("2025-11-25").await;
    }
    assert_eq!(app.sessions.in_memory().await, 2);
    std::fs::write(&gate, "").unwrap();
    let resumed = resume(&app, &busy, &last_id).await;
    assert_eq!(resumed.status(), 200);
    let replayed = tokio::time::timeout(Duration::from_secs(30), messages(resumed))
        .await
        .expect("the resumed stream ends with the result");
    let reply = replayed.last().expect("a message");
    assert_eq!(reply["id"], 4, "{replayed:?}");
    assert!(finished(reply), "{reply}");
}

/// `store.session_memory_idle` counts from a session's last use: a call
/// running longer, sending nothing meanwhile, keeps its worker and answers,
/// and the worker leaves once idle that long.
#[tokio::test]
async fn a_call_longer_than_the_memory_idle_time_keeps_its_worker() {
    let app = spawn_app_with(|c| c.store.session_memory_idle = Duration::from_millis(300)).await;
    let session = app.initialize("2025-11-25").await;
    let long = json!({"name": "slow_compute", "arguments": {"seconds": 1.2, "label": "long"}});
    let reply = app.session_call(&session, 1, "tools/call", long).await;
    assert_eq!(
        reply["result"]["content"][0]["text"], "Computed long after 1.2s",
        "{reply}"
    );
    let simple = json!({"name": "test_simple_text"});
    let reply = app.session_call(&session, 2, "tools/call", simple).await;
    assert!(is_simple_text(&reply), "{reply}");
    for _ in 0..50 {
        if app.sessions.in_memory().await == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app.sessions.in_memory().await, 0, "idle, it left memory");
}

/// Requests that arrive as their session's worker leaves memory are served:
/// each either keeps the worker or restores the session, never a 500.
#[tokio::test]
async fn requests_at_the_memory_idle_boundary_are_all_served() {
    let app = spawn_app_with(|c| c.store.session_memory_idle = Duration::from_millis(300)).await;
    let sessions: Vec<String> =
        futures::future::join_all((0..12).map(|_| app.initialize("2025-11-25"))).await;
    let calls = sessions.iter().enumerate().map(|(i, session)| {
        let app = &app;
        async move {
            let mut replies = Vec::new();
            for k in 0..6 {
                // Pauses spread around the idle time (and the look's quarter).
                let pause = 270 + (i as u64 * 7 + k * 13) % 110;
                tokio::time::sleep(Duration::from_millis(pause)).await;
                let simple = json!({"name": "test_simple_text"});
                let id = 1 + k as i64;
                replies.push(app.session_call(session, id, "tools/call", simple).await);
            }
            replies
        }
    });
    let replies: Vec<Value> = futures::future::join_all(calls)
        .await
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(replies.len(), 72);
    for reply in &replies {
        assert!(is_simple_text(reply), "{reply}");
    }
}
