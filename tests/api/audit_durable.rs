//! Issue 64 part 3, what only a process shows: records on stdout as JSON
//! lines, flushed at SIGTERM; a destination that never answers fills its
//! queue, and the loss is counted on `/metrics` and logged; with
//! `audit.durable`, a reply that reached the client has its row even when
//! the replica is killed (SIGKILL) right after it.

use std::time::Duration;

use serde_json::{Value, json};

use crate::binary::{Served, serve};

fn call(n: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
        "params": {"name": "teamgate_info", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}}})
}

/// One 2026-07-28 call of the built-in tool; its reply's JSON-RPC body.
async fn post(client: &reqwest::Client, served: &Served, token: &str, n: u64) -> Value {
    let reply = client
        .post(&served.url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "teamgate_info")
        .bearer_auth(token)
        .json(&call(n))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    reply.json().await.unwrap()
}

fn config(dir: &std::path::Path, body: &str) -> std::path::PathBuf {
    let path = dir.join("teamgate.toml");
    std::fs::write(&path, format!("[reload]\nwatch = false\n{body}")).unwrap();
    path
}

/// A metric's value on `/metrics` for the series whose labels contain `labels`.
fn metric(text: &str, name: &str, labels: &str) -> Option<f64> {
    text.lines()
        .filter(|line| line.starts_with(name) && line.contains(labels))
        .find_map(|line| line.rsplit(' ').next()?.parse().ok())
}

#[tokio::test(flavor = "multi_thread")]
async fn stdout_gets_every_record_a_dead_webhook_loses_some_counted_and_sigterm_flushes() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on a port just freed: every POST fails to connect.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/hook", dead.local_addr().unwrap());
    drop(dead);
    let secret = "webhook-secret-0123456789abcdef";
    // In the file (the token command reads it too); in production, the environment.
    let path = config(
        dir.path(),
        &format!(
            "[audit.ship]\nbuffer = 16\nstdout = true\n\
             [audit.ship.webhook]\nurl = \"{dead_url}\"\ntimeout = \"1s\"\n\
             secret = \"{secret}\"\n"
        ),
    );
    let served = serve(&path, &[]);
    let token = served.token("ann", &[]);
    let client = teamgate::outbound::client();
    const CALLS: u64 = 40;
    for n in 1..=CALLS {
        post(&client, &served, &token, n).await;
    }
    let full = served.logged("audit shipping: the queue is full");
    assert!(full.contains("webhook"), "{full}");
    // The queue holds 16 (the dead webhook never takes one); the other 24
    // are dropped as the writer hands them over.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let scraped = loop {
        let scraped = client
            .get(served.url.replace("/mcp", "/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let dropped = metric(&scraped, "teamgate_audit_ship_dropped_total", "webhook");
        if dropped == Some((CALLS - 16) as f64) {
            break scraped;
        }
        assert!(std::time::Instant::now() < deadline, "{scraped}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let queued = metric(&scraped, "teamgate_audit_ship_queue", "webhook");
    assert_eq!(queued, Some(16.0), "{scraped}");
    assert_eq!(
        metric(&scraped, "teamgate_audit_ship_dropped_total", "stdout"),
        Some(0.0)
    );
    // No secret anywhere in the log.
    assert!(served.lines().iter().all(|line| !line.contains(secret)));
    // SIGTERM: the records still queued for stdout are written before exit.
    let mut served = served;
    served.signal(nix::sys::signal::Signal::SIGTERM);
    let status = tokio::task::block_in_place(|| served.child.wait()).unwrap();
    assert!(status.success(), "{status}");
    // The process has exited; its stdout is read to the end by a thread.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let (lines, records) = loop {
        let lines = served.stdout_lines();
        let records: Vec<Value> = (lines.iter())
            .filter_map(|line| serde_json::from_str(line).ok())
            .filter(|record: &Value| record["method"] == "tools/call")
            .collect();
        if records.len() >= CALLS as usize || std::time::Instant::now() >= deadline {
            break (lines, records);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(records.len(), CALLS as usize, "{lines:?}");
    assert!(
        records
            .iter()
            .all(|r| r["user"] == "ann" && r["outcome"] == "ok")
    );
    // The webhook's undelivered records are said at exit.
    served.logged("were not delivered");
}

#[tokio::test(flavor = "multi_thread")]
async fn with_durable_audit_a_reply_killed_right_after_keeps_its_row_in_20_of_20_trials() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path(), "[audit]\ndurable = true\n");
    let client = teamgate::outbound::client();
    let mut kept = 0;
    for trial in 0..20 {
        let served = serve(&path, &[]);
        let token = served.token("ann", &[]);
        let reply = post(&client, &served, &token, trial).await;
        // Killed as soon as the reply is read: no time to write it after.
        served.signal(nix::sys::signal::Signal::SIGKILL);
        assert!(reply["result"].is_object(), "{reply}");
        let mut served = served;
        let _ = tokio::task::block_in_place(|| served.child.wait());
        let store = teamgate::store::Store::connect(
            &served.store_url,
            std::sync::Arc::new(teamgate::store::SystemClock),
        )
        .await
        .unwrap();
        let rows = store.audit_tail(None, 0, 100).await.unwrap();
        if rows.iter().any(|row| row.method == "tools/call") {
            kept += 1;
        }
    }
    assert_eq!(kept, 20, "rows kept after SIGKILL, of 20");
}
