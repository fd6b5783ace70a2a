//! A `protocol = "2026-07-28"` link (issue 67) against the upstream on the
//! official Python SDK (tests/interop/tasks_upstream_py.py), whose reply is
//! JSON when the tool is quick and silent, else an SSE stream: progress the
//! upstream streams reaches the member, and a member's cancel ends the
//! upstream's request (on 2026-07-28 closing the reply's stream is the
//! cancel, and the upstream's handler is cancelled with it).

use std::time::Duration;

use serde_json::{Value, json};

use crate::{
    helpers::{TestApp, messages},
    sec44_upreg::python,
    upstream_tasks::{self, Served},
    upstreams::listed,
};

/// teamgate in front of the Python upstream on a 2026-07-28 link, its
/// tools listed; the upstream kept alive with it.
async fn fronted(python: &str) -> (TestApp, Served) {
    let (app, upstream) = upstream_tasks::fronted(python, |_| {}).await;
    let names = listed(&app, None, "builds_blocked").await;
    assert!(names.iter().any(|n| n == "builds_steps"), "{names:?}");
    (app, upstream)
}

fn progress(all: &[Value]) -> Vec<(&Value, &str)> {
    (all.iter())
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            let message = m["params"]["message"].as_str().unwrap_or_default();
            (&m["params"]["progressToken"], message)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_the_upstream_streams_reaches_the_member_of_either_era() {
    let Some(python) = python() else { return };
    let (app, _upstream) = fronted(&python).await;
    let steps = ["step 1 of 3", "step 2 of 3", "step 3 of 3"];

    // A 2025-era session: progress on the call's stream, the member's token.
    let session = app.initialize("2025-11-25").await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "builds_steps", "arguments": {"count": 3}, "_meta": {"progressToken": "mine"}}});
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let all = messages(app.post(&call, &headers).await).await;
    let heard = progress(&all);
    let messages: Vec<&str> = heard.iter().map(|(_, m)| *m).collect();
    assert_eq!(messages, steps, "{all:?}");
    assert!(heard.iter().all(|(t, _)| *t == "mine"), "{all:?}");
    let last = all.last().unwrap();
    assert_eq!(last["id"], 2, "{all:?}");
    assert_eq!(last["result"]["content"][0]["text"], "done after 3 steps");

    // A 2026-07-28 request: the same.
    let params = json!({"name": "builds_steps", "arguments": {"count": 3},
        "_meta": {"progressToken": 7}});
    let (status, all) = app.modern_call(3, "tools/call", params).await;
    assert_eq!(status, 200, "{all:?}");
    let heard = progress(&all);
    let messages: Vec<&str> = heard.iter().map(|(_, m)| *m).collect();
    assert_eq!(messages, steps, "{all:?}");
    assert!(heard.iter().all(|(t, _)| *t == 7), "{all:?}");
    let last = all.last().unwrap();
    assert_eq!(last["result"]["content"][0]["text"], "done after 3 steps");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_members_cancel_ends_the_upstreams_request() {
    let Some(python) = python() else { return };
    let (app, _upstream) = fronted(&python).await;
    let session = app.initialize("2025-11-25").await;
    let blocked = |id: i64| {
        let (app, session) = (&app, session.clone());
        async move {
            let params = json!({"name": "builds_blocked", "arguments": {}});
            let reply = app.session_call(&session, id, "tools/call", params).await;
            reply["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        }
    };
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "builds_block", "arguments": {}}});
    let headers = [
        ("mcp-session-id", session.clone()),
        ("mcp-protocol-version", "2025-11-25".to_owned()),
    ];
    let running = {
        let (app_url, client) = (app.url.clone(), reqwest::Client::new());
        let headers = headers.clone();
        tokio::spawn(async move {
            let mut request = client.post(app_url).json(&call);
            request = request.header("accept", "application/json, text/event-stream");
            for (name, value) in &headers {
                request = request.header(*name, value);
            }
            request.send().await.map(|r| r.status())
        })
    };
    // The upstream runs it (bounded wait).
    let mut seen = String::new();
    for id in 100..200 {
        seen = blocked(id).await;
        if seen == "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen, "running", "the upstream never ran the call");

    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 9, "reason": "changed my mind"}});
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    assert_eq!(app.post(&cancel, &headers).await.status(), 202);
    // The upstream's handler ended with its request, well before any time limit.
    for id in 200..300 {
        seen = blocked(id).await;
        if seen != "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        seen, "cancelled",
        "the upstream's request outlived the cancel"
    );
    running.abort();
}
