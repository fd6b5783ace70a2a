//! Streams under attack and in trouble (issue 30): `Last-Event-ID` never
//! crosses sessions, a long call's result survives its closed stream
//! (SEP-1699 polling), and 2025-03-26 batches.

use std::time::Duration;

use reqwest::Response;
use serde_json::{Value, json};
use teamgate::{
    auth::PersonalTokens,
    config::{AuthMode, DatabaseUrl, Secret},
};

use crate::{
    databases::TestDb,
    helpers::{Sse, TestApp, audit_until, header, messages, spawn_app_with},
};

const KEY: &str = "0123456789abcdef0123456789abcdef-sec-streams-replicas";

/// A replica on `url` that requires tokens.
async fn secured_on(url: &str) -> TestApp {
    let url = url.to_owned();
    spawn_app_with(move |c| {
        c.auth.mode = AuthMode::Required;
        c.store.url = DatabaseUrl::new(url);
        c.mcp.request_state_keys = vec![Secret::new(KEY)];
        c.server.shutdown_grace = Duration::from_millis(100);
    })
    .await
}

async fn token(app: &TestApp, user: &str) -> String {
    let tokens = PersonalTokens::new(app.store.clone(), Duration::from_secs(30));
    let created = tokens.create(user, "test", vec!["*".into()], None).await;
    format!("Bearer {}", created.unwrap().token)
}

/// Initializes a 2025-11-25 session as `bearer` and returns its id.
async fn session_as(app: &TestApp, bearer: &str) -> String {
    session_at(app, bearer, "2025-11-25").await
}

/// `GET` with `Last-Event-ID` in `session`, as `bearer` (none if empty).
async fn resume(app: &TestApp, bearer: &str, session: &str, last_event_id: &str) -> Response {
    let mut request = app.client.get(&app.url);
    if !bearer.is_empty() {
        request = request.header("authorization", bearer);
    }
    request
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", last_event_id)
        .send()
        .await
        .expect("request reaches the server")
}

/// The messages of a resumption, or none when it was refused with 404.
async fn resumed(response: Response) -> Vec<Value> {
    if response.status() == 404 {
        return Vec::new();
    }
    assert_eq!(response.status(), 200);
    tokio::time::timeout(Duration::from_secs(40), messages(response))
        .await
        .expect("a resumed stream ends")
}

fn event_ids(sse: &str) -> Vec<String> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|id| id.trim().to_owned())
        .collect()
}

/// Member B presents an event id of member A's session with B's own
/// session, on the replica that streamed it (memory) and on another one
/// (database): B gets nothing; A, resuming in A's session, gets the result.
#[tokio::test]
async fn an_event_id_of_another_session_replays_nothing() {
    for db in TestDb::all().await {
        let (one, two) = (secured_on(&db.url).await, secured_on(&db.url).await);
        let (alice, bob) = (token(&one, "alice").await, token(&one, "bob").await);
        let theirs = session_as(&one, &alice).await;
        let mine = session_as(&one, &bob).await;
        let call = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
            "name":"test_tool_with_progress","_meta":{"progressToken":"secret-progress"}}});
        let headers = [
            ("authorization", alice.as_str()),
            ("mcp-session-id", theirs.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        let streamed = one.post(&call, &headers).await.text().await.unwrap();
        let ids = event_ids(&streamed);
        assert!(ids.len() >= 4, "{}: events carry ids: {streamed}", db.name);

        // The owner resumes on the other replica, from the database; this
        // also waits until the batch writer has stored the events.
        let mut own = Vec::new();
        for _ in 0..100 {
            own = resumed(resume(&two, &alice, &theirs, &ids[1]).await).await;
            if own.last().is_some_and(|m| m["id"] == 3) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(own.last().unwrap()["id"], 3, "{}: {own:?}", db.name);

        for (replica, app) in [("memory", &one), ("database", &two)] {
            let stolen = resumed(resume(app, &bob, &mine, &ids[1]).await).await;
            assert!(
                stolen.is_empty(),
                "{} ({replica}): another session's events were replayed: {stolen:?}",
                db.name
            );
        }
        one.stop().await;
        two.stop().await;
        db.cleanup().await;
    }
}

/// The SSE events of a body: each one's fields (`id`, `retry`, `data`).
fn sse_events(body: &str) -> Vec<Vec<(String, String)>> {
    body.replace("\r\n", "\n")
        .split("\n\n")
        .filter(|event| !event.trim().is_empty() && !event.starts_with(':'))
        .map(|event| {
            event
                .lines()
                .filter_map(|line| line.split_once(':'))
                .map(|(field, value)| (field.to_owned(), value.trim().to_owned()))
                .collect()
        })
        .collect()
}

fn field<'a>(event: &'a [(String, String)], name: &str) -> Option<&'a str> {
    event
        .iter()
        .find(|(f, _)| f == name)
        .map(|(_, v)| v.as_str())
}

/// SEP-1699 at 2025-11-25: `test_reconnection`'s stream opens with a
/// priming event (an id, `retry:`, empty data) and ends before the result,
/// which a GET with `Last-Event-ID` then delivers, on another replica too.
#[tokio::test]
async fn the_reconnection_fixture_ends_its_stream_and_a_resume_gets_the_result() {
    for db in TestDb::all().await {
        let (one, two) = (secured_on(&db.url).await, secured_on(&db.url).await);
        let alice = token(&one, "alice").await;
        let session = session_as(&one, &alice).await;
        let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test_reconnection"}});
        let headers = [
            ("authorization", alice.as_str()),
            ("mcp-session-id", session.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        let response = one.post(&call, &headers).await;
        assert_eq!(
            header(response.headers(), "content-type").as_deref(),
            Some("text/event-stream"),
            "{}: the call stays a stream",
            db.name
        );
        let body = tokio::time::timeout(Duration::from_secs(10), response.text())
            .await
            .expect("the server ends the stream")
            .unwrap();
        let events = sse_events(&body);
        let first = events.first().expect("a priming event");
        assert!(
            field(first, "id").is_some_and(|id| !id.is_empty()),
            "{body}"
        );
        assert!(field(first, "retry").is_some(), "a retry field: {body}");
        assert_eq!(field(first, "data"), Some(""), "empty data: {body}");
        assert!(
            events
                .iter()
                .all(|e| field(e, "data").unwrap_or_default().is_empty()),
            "{}: the stream ends before the result: {body}",
            db.name
        );
        let last = events.iter().rev().find_map(|e| field(e, "id")).unwrap();

        let resumed = resumed(resume(&two, &alice, &session, last).await).await;
        let result = resumed.iter().find(|m| m["id"] == 7);
        let text = result.map(|r| r["result"]["content"][0]["text"].clone());
        assert_eq!(
            text,
            Some(json!("Reconnection test completed successfully.")),
            "{}: the resumed stream carries the result: {resumed:?}",
            db.name
        );
        one.stop().await;
        two.stop().await;
        db.cleanup().await;
    }
}

/// A slow call's reply is streamed while it runs, so a client whose
/// connection drops holds an event id, and resuming with it gets the result.
#[tokio::test]
async fn a_slow_call_whose_connection_drops_is_resumed_with_its_result() {
    let app = spawn_app_with(|c| {
        c.tools.command = vec![crate::command_tools::command(json!({
            "name": "slow", "description": "sleeps", "program": "/bin/sleep", "args": ["2"]}))];
    })
    .await;
    let session = app.initialize("2025-11-25").await;
    let call = json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow"}});
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let started = std::time::Instant::now();
    let response = app.post(&call, &headers).await;
    assert_eq!(
        header(response.headers(), "content-type").as_deref(),
        Some("text/event-stream"),
        "a slow reply is streamed"
    );
    let mut stream = Sse::new(response);
    stream.until("\n\n", Duration::from_secs(5)).await;
    assert!(
        started.elapsed() < Duration::from_millis(1900),
        "the priming event arrives while the call runs"
    );
    let id = sse_events(&stream.seen)
        .iter()
        .find_map(|e| field(e, "id").map(str::to_owned))
        .expect("an event id");
    drop(stream); // the connection drops

    let resumed = resumed(resume(&app, "", &session, &id).await).await;
    let result = resumed.iter().find(|m| m["id"] == 9);
    assert!(
        result.is_some_and(|r| r["result"]["content"].is_array()),
        "the result reaches the resumed stream: {resumed:?}"
    );
}

/// Initializes a session at `version` as `bearer`.
async fn session_at(app: &TestApp, bearer: &str, version: &str) -> String {
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":version,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let response = app.post(&init, &[("authorization", bearer)]).await;
    assert_eq!(response.status(), 200);
    let session = header(response.headers(), "mcp-session-id").expect("a session id");
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let headers = [
        ("authorization", bearer),
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", version),
    ];
    assert_eq!(app.post(&initialized, &headers).await.status(), 202);
    session
}

/// 2025-03-26 requires servers to take JSON-RPC batches: each element is
/// answered as if it came alone (scopes, audit, notifications unanswered);
/// later revisions refuse them.
#[tokio::test]
async fn a_2025_03_26_session_takes_batches_each_element_checked_alone() {
    let app = spawn_app_with(|c| c.auth.mode = AuthMode::Required).await;
    let tokens = PersonalTokens::new(app.store.clone(), Duration::from_secs(30));
    let scopes = vec!["tools:test_simple_text".to_owned()];
    let created = tokens.create("dana", "test", scopes, None).await.unwrap();
    let bearer = format!("Bearer {}", created.token);
    let session = session_at(&app, &bearer, "2025-03-26").await;
    let headers = [
        ("authorization", bearer.as_str()),
        ("mcp-session-id", session.as_str()),
    ];
    let batch = json!([
        {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_simple_text"}},
        {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}},
        {"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"test_error_handling"}},
        {"jsonrpc":"2.0","id":3,"method":"ping"},
        42
    ]);
    let response = app.post(&batch, &headers).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        header(response.headers(), "content-type").as_deref(),
        Some("application/json")
    );
    let answers: Vec<Value> = response.json().await.unwrap();
    assert_eq!(
        answers.len(),
        4,
        "no answer to the notification: {answers:?}"
    );
    let by_id = |id: Value| answers.iter().find(|a| a["id"] == id);
    assert!(crate::helpers::is_simple_text(by_id(json!(1)).unwrap()));
    let refused = by_id(json!("two")).expect("the refused element is answered");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tools:test_error_handling"),
        "the scope is checked per element: {refused}"
    );
    assert_eq!(by_id(json!(3)).unwrap()["result"], json!({}));
    let invalid = answers.iter().find(|a| a["id"].is_null()).unwrap();
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    // Each element left its audit record as a lone call does.
    let records = audit_until(&app.store, Some("dana"), |r| r.len() >= 2).await;
    let outcome = |target: &str| {
        let record = records.iter().find(|r| r.target == target);
        record.map(|r| r.outcome.clone()).unwrap_or_default()
    };
    assert_eq!(outcome("test_simple_text"), "ok");
    assert!(outcome("test_error_handling").starts_with("denied"));

    let only_notifications = json!([
        {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":2}}
    ]);
    let accepted = app.post(&only_notifications, &headers).await;
    assert_eq!(accepted.status(), 202);
    let too_many: Vec<Value> = (0..101)
        .map(|i| json!({"jsonrpc":"2.0","id":i,"method":"ping"}))
        .collect();
    let refused = app.post(&Value::Array(too_many), &headers).await;
    assert_eq!(refused.status(), 400, "a batch is bounded");

    let later = session_at(&app, &bearer, "2025-06-18").await;
    let headers = [
        ("authorization", bearer.as_str()),
        ("mcp-session-id", later.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let pings = json!([{"jsonrpc":"2.0","id":1,"method":"ping"}]);
    assert_eq!(app.post(&pings, &headers).await.status(), 400);
    let no_session = app
        .post(&pings, &[("authorization", bearer.as_str())])
        .await;
    assert_eq!(no_session.status(), 400);
}

/// Every element spends the caller's rate like a request of its own.
#[tokio::test]
async fn batch_elements_count_against_the_rate_limit() {
    let app = spawn_app_with(|c| {
        c.rate_limit.enabled = true;
        c.rate_limit.per_caller_per_minute = 1;
        c.rate_limit.per_caller_burst = 10;
    })
    .await;
    let session = app.initialize("2025-03-26").await;
    let pings: Vec<Value> = (0..10)
        .map(|i| json!({"jsonrpc":"2.0","id":i,"method":"ping"}))
        .collect();
    let response = app
        .post(&Value::Array(pings), &[("mcp-session-id", &session)])
        .await;
    assert_eq!(response.status(), 200);
    let answers: Vec<Value> = response.json().await.unwrap();
    assert_eq!(answers.len(), 10);
    let limited = answers
        .iter()
        .filter(|a| a["error"]["code"] == -31004)
        .count();
    assert!(
        (1..10).contains(&limited),
        "some elements are over the rate: {answers:?}"
    );
}
