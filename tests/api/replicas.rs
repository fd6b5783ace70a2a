//! Sessions outlive a restart (SQLite) and move between replicas with no
//! sticky routing (PostgreSQL): restore, resumed streams, shared changes.

use std::{sync::Arc, time::Duration};

use serde_json::json;
use teamgate::{config::DatabaseUrl, store::ManualClock};

use crate::{
    databases::TestDb,
    helpers::{MODERN, Sse, TestApp, is_simple_text, messages, spawn_app_clocked, spawn_app_with},
};

const KEY: &str = "0123456789abcdef0123456789abcdef-shared-by-replicas";

async fn on(url: &str) -> TestApp {
    let url = url.to_owned();
    spawn_app_with(move |c| {
        c.store.url = DatabaseUrl::new(url);
        c.mcp.request_state_keys = vec![teamgate::config::Secret::new(KEY)];
        c.server.shutdown_grace = Duration::from_millis(100);
    })
    .await
}

#[tokio::test]
async fn a_session_survives_a_restart() {
    let db = TestDb::sqlite();
    let first = on(&db.url).await;
    let session = first.initialize("2025-11-25").await;
    first.stop().await;

    let second = on(&db.url).await;
    let reply = second
        .session_call(
            &session,
            5,
            "tools/call",
            json!({"name": "test_simple_text"}),
        )
        .await;
    assert!(is_simple_text(&reply), "restored after restart: {reply}");
}

#[tokio::test]
async fn an_expired_session_is_not_found() {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let app = spawn_app_clocked(|_| {}, clock.clone()).await;
    let session = app.initialize("2025-11-25").await;
    clock.advance(31 * 60 * 1000);
    let response = app
        .post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-11-25"),
            ],
        )
        .await;
    assert_eq!(
        response.status(),
        404,
        "expired sessions get 404 so clients re-initialize"
    );
}

#[tokio::test]
async fn replicas_on_postgres_share_sessions_streams_and_changes() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let (a, b) = (on(&db.url).await, on(&db.url).await);
    let session = a.initialize("2025-11-25").await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];

    // The next request lands on the other replica.
    let reply = b
        .session_call(
            &session,
            2,
            "tools/call",
            json!({"name": "test_simple_text"}),
        )
        .await;
    assert!(is_simple_text(&reply), "continued on replica B: {reply}");

    // A stream from A, resumed on B after its second event.
    let streamed = a
        .post(
            &json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
            "name":"test_tool_with_progress","_meta":{"progressToken":"x"}}}),
            &headers,
        )
        .await
        .text()
        .await
        .unwrap();
    let ids: Vec<&str> = streamed
        .lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(str::trim)
        .collect();
    assert!(ids.len() >= 4, "{streamed}");
    let mut replayed = Vec::new();
    for _ in 0..50 {
        let resumed = b
            .client
            .get(&b.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .header("last-event-id", ids[1])
            .send()
            .await
            .unwrap();
        replayed = tokio::time::timeout(Duration::from_secs(5), messages(resumed))
            .await
            .unwrap();
        if replayed.last().is_some_and(|m| m["id"] == 3) {
            break;
        }
        // The batch writer may not have flushed yet.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        replayed.last().unwrap()["id"],
        3,
        "B replays what A streamed: {replayed:?}"
    );
    assert!(replayed.iter().all(|m| m["params"]["progress"] != 0.0));

    // A change raised on A reaches a subscription held by B.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}});
    let listen = b
        .post(
            &json!({"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{
            "_meta": meta, "notifications": {"toolsListChanged": true}}}),
            &[
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "subscriptions/listen"),
            ],
        )
        .await;
    let mut listen = Sse::new(listen);
    listen
        .until("acknowledged", std::time::Duration::from_secs(10))
        .await;
    a.modern_call(
        10,
        "tools/call",
        json!({"name": "test_trigger_tool_change"}),
    )
    .await;
    // The change crosses replicas through PostgreSQL.
    listen
        .until("notifications/tools/list_changed", Duration::from_secs(10))
        .await;
    drop(listen);
    a.stop().await;
    b.stop().await;
    db.cleanup().await;
}

#[tokio::test]
async fn readiness_follows_the_database_and_recovers() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let app = on(&db.url).await;
    let ready = |app: &TestApp| {
        let request = app.client.get(format!("{}/readyz", app.base()));
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(ready(&app).await, 200);
    let name = db.url.rsplit('/').next().unwrap().to_owned();
    let admin = crate::databases::admin_connection().await;
    let mut admin = admin.expect("postgres reachable");
    use sqlx::Executor;
    admin
        .execute(format!("drop database {name} with (force)").as_str())
        .await
        .unwrap();
    let mut status = 0;
    for _ in 0..50 {
        status = ready(&app).await;
        if status == 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 503, "readyz turns false without the database");
    admin
        .execute(format!("create database {name}").as_str())
        .await
        .unwrap();
    for _ in 0..50 {
        status = ready(&app).await;
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200, "and recovers without a restart");
    app.stop().await;
    db.cleanup().await;
}

#[tokio::test]
async fn session_caps_refuse_with_503_and_retry_after() {
    let app = spawn_app_with(|c| c.store.max_sessions_per_owner = 2).await;
    app.initialize("2025-11-25").await;
    app.initialize("2025-11-25").await;
    let third = app
        .post(&json!({"jsonrpc":"2.0","id":"third","method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}), &[])
        .await;
    assert_eq!(third.status(), 503);
    assert!(third.headers().get("retry-after").is_some());
    let body: serde_json::Value = third.json().await.unwrap();
    assert_eq!(body["id"], "third");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit is 2"),
        "{body}"
    );
}

#[tokio::test]
async fn sessions_can_be_listed_and_ended_from_the_command_line() {
    let db = TestDb::sqlite();
    let app = on(&db.url).await;
    let session = app.initialize("2025-06-18").await;
    // Awaited: the server runs on this test's runtime and must go on
    // committing while the command waits for the database.
    let cli = |args: &[&str]| {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_teamgate"))
            .args(args)
            .env("TEAMGATE__STORE__URL", &db.url)
            .current_dir(crate::helpers::repo_path(""))
            .output()
    };
    let listed = cli(&["sessions", "list", "--json"]).await.unwrap();
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == session.as_str())
        .expect("listed");
    assert_eq!(row["owner"], "anonymous");
    assert_eq!(row["protocolVersion"], "2025-06-18");
    assert_eq!(row["client"]["name"], "teamgate-tests");

    let ended = cli(&["sessions", "end", &session]).await.unwrap();
    assert!(ended.status.success());
    // Every replica, this one included, stops serving it within the presence cache time.
    let mut status = 200;
    for _ in 0..80 {
        status = app
            .post(
                &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
                &[
                    ("mcp-session-id", &session),
                    ("mcp-protocol-version", "2025-06-18"),
                ],
            )
            .await
            .status()
            .as_u16();
        if status == 404 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 404);
    assert!(
        !cli(&["sessions", "end", &session])
            .await
            .unwrap()
            .status
            .success(),
        "ending twice is an error"
    );
}

#[tokio::test]
async fn idle_sessions_leave_memory_and_come_back_on_demand() {
    // Long enough that five handshakes on a loaded machine finish before it.
    let app = spawn_app_with(|c| c.store.session_memory_idle = Duration::from_secs(1)).await;
    let subscribers = app.bus.subscribers();
    let sessions: Vec<String> =
        futures::future::join_all((0..5).map(|_| app.initialize("2025-11-25"))).await;
    assert_eq!(app.sessions.in_memory().await, 5);
    assert_eq!(
        app.bus.subscribers(),
        subscribers + 5,
        "each initialized session forwards changes"
    );
    let mut held = 5;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        held = app.sessions.in_memory().await;
        if held == 0 {
            break;
        }
    }
    assert_eq!(held, 0, "idle sessions cost no memory");
    // Their change forwarders went with them (each held rmcp's channel to its session).
    for _ in 0..20 {
        if app.bus.subscribers() == subscribers {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        app.bus.subscribers(),
        subscribers,
        "no forwarder outlives its session"
    );
    let reply = app
        .session_call(
            &sessions[2],
            1,
            "tools/call",
            json!({"name": "test_simple_text"}),
        )
        .await;
    assert!(
        is_simple_text(&reply),
        "and are restored by their next request"
    );
    assert_eq!(app.sessions.in_memory().await, 1);
}

/// A client slow to send `notifications/initialized` finds its session
/// restored from the store, as for any later request.
#[tokio::test]
async fn a_session_that_left_memory_before_its_initialized_notification_takes_it() {
    let app = spawn_app_with(|c| c.store.session_memory_idle = Duration::from_millis(100)).await;
    let response = app
        .post(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}),
            &[],
        )
        .await;
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if app.sessions.in_memory().await == 0 {
            break;
        }
    }
    assert_eq!(app.sessions.in_memory().await, 0);
    let initialized = app
        .post(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-11-25"),
            ],
        )
        .await;
    let status = initialized.status();
    let text = initialized.text().await.unwrap();
    assert_eq!(status, 202, "{text}");
    let reply = app
        .session_call(
            &session,
            1,
            "tools/call",
            json!({"name": "test_simple_text"}),
        )
        .await;
    assert!(is_simple_text(&reply), "{reply}");
}
