//! `[[tools.http]]` against an upstream API the test runs on 127.0.0.1:
//! schema validation before any request, the allowlist, structured results,
//! caching, size caps, timeouts, and secrets that never come back.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Json, Router,
    extract::{Path, State},
    http::HeaderMap,
    routing::get,
};
use serde_json::{Value, json};
use teamgate::config::HttpToolConfig;

use crate::{
    binary,
    helpers::spawn_app_with,
    sdk::{self, call, text},
};

/// One request the upstream saw: (path, authorization header).
type Request = (String, Option<String>);

/// Every request the upstream saw.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Request>>>);

impl Seen {
    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
    fn all(&self) -> Vec<Request> {
        self.0.lock().unwrap().clone()
    }
}

async fn record(seen: &Seen, path: String, headers: &HeaderMap) {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    seen.0.lock().unwrap().push((path, auth));
}

/// An upstream API: `/api/items/{id}` answers JSON echoing what it got,
/// `/api/big` answers 10 KB, `/api/slow` answers after 5 s.
async fn upstream() -> (String, Seen) {
    let seen = Seen::default();
    let app = Router::new()
        .route(
            "/api/items/{id}",
            get(
                |State(seen): State<Seen>,
                 Path(id): Path<String>,
                 uri: axum::http::Uri,
                 headers: HeaderMap| async move {
                    record(&seen, uri.path().to_owned(), &headers).await;
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    Json(json!({"data": {"id": id, "call": seen.count(), "auth_seen": auth}}))
                },
            ),
        )
        .route(
            "/api/echo",
            axum::routing::post(
                |State(seen): State<Seen>, headers: HeaderMap, Json(body): Json<Value>| async move {
                    record(&seen, "/api/echo".into(), &headers).await;
                    Json(json!({"received": body}))
                },
            ),
        )
        .route(
            "/api/big",
            get(|State(seen): State<Seen>, headers: HeaderMap| async move {
                record(&seen, "/api/big".into(), &headers).await;
                "x".repeat(10 * 1024)
            }),
        )
        .route(
            "/api/slow",
            get(|State(seen): State<Seen>, headers: HeaderMap| async move {
                record(&seen, "/api/slow".into(), &headers).await;
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        )
        .fallback(
            |State(seen): State<Seen>, uri: axum::http::Uri, headers: HeaderMap| async move {
                record(&seen, uri.path().to_owned(), &headers).await;
                (axum::http::StatusCode::NOT_FOUND, "no such thing")
            },
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, seen)
}

fn tool(value: Value) -> HttpToolConfig {
    serde_json::from_value(value).expect("a valid [[tools.http]]")
}

fn item_tool(base: &str) -> HttpToolConfig {
    tool(json!({
        "name": "get_item",
        "description": "Reads an item",
        "url": format!("{base}/api/items/{{id}}"),
        "read_only": true,
        "cache_ttl": "60s",
        "result_pointer": "/data",
        "output_schema": {"type": "object"},
        "input_schema": {"type": "object", "required": ["id"], "additionalProperties": false,
            "properties": {"id": {"type": "string", "maxLength": 20}}}
    }))
}

#[tokio::test]
async fn calls_upstream_validates_first_and_caches_read_only_results() {
    let (base, seen) = upstream().await;
    let app = spawn_app_with(|c| {
        c.tools.http_allowlist = vec![format!("{base}/api")];
        c.tools.http = vec![
            item_tool(&base),
            tool(json!({"name": "big", "description": "10 KB", "url": format!("{base}/api/big"),
                "max_response_bytes": 1024})),
            tool(json!({"name": "slow", "description": "5 s", "url": format!("{base}/api/slow"),
                "timeout": "200ms"})),
            tool(json!({"name": "missing", "description": "404", "url": format!("{base}/api/nothing")})),
            tool(json!({"name": "create", "description": "POSTs a body", "method": "POST",
                "url": format!("{base}/api/echo"), "output_schema": {"type": "object"},
                "body": {"title": "{title}", "count": "{count}", "note": "by {title}"},
                "input_schema": {"type": "object", "properties": {
                    "title": {"type": "string"}, "count": {"type": "integer"}}}})),
        ];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let tools = client.list_all_tools().await.unwrap();
    let get_item = tools.iter().find(|t| t.name == "get_item").unwrap();
    let annotations = serde_json::to_value(&get_item.annotations).unwrap();
    assert_eq!(annotations["readOnlyHint"], true);
    assert_eq!(annotations["openWorldHint"], true);
    assert!(get_item.output_schema.is_some());

    // Invalid arguments never reach the upstream.
    let result = call(&client, "get_item", json!({"id": 42})).await;
    assert_eq!(result["isError"], true);
    assert!(text(&result).contains("Invalid arguments"), "{result}");
    assert_eq!(seen.count(), 0);

    let result = call(&client, "get_item", json!({"id": "a b/../x"})).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        result["structuredContent"]["id"], "a b/../x",
        "encoded as one segment"
    );
    assert_eq!(seen.all()[0].0, "/api/items/a%20b%2F..%2Fx");
    // The same question again comes from the cache.
    let again = call(&client, "get_item", json!({"id": "a b/../x"})).await;
    assert_eq!(again["structuredContent"], result["structuredContent"]);
    assert_eq!(seen.count(), 1);
    call(&client, "get_item", json!({"id": "other"})).await;
    assert_eq!(seen.count(), 2);

    let big = call(&client, "big", json!({})).await;
    assert_eq!(big["isError"], true);
    assert!(text(&big).contains("larger than 1024 bytes"), "{big}");
    let slow = call(&client, "slow", json!({})).await;
    assert_eq!(slow["isError"], true);
    assert!(text(&slow).contains("did not answer within"), "{slow}");
    let missing = call(&client, "missing", json!({})).await;
    assert_eq!(missing["isError"], true);
    assert!(text(&missing).contains("404"), "{missing}");
    let created = call(&client, "create", json!({"title": "hi", "count": 3})).await;
    assert_eq!(
        created["structuredContent"]["received"],
        json!({"title": "hi", "count": 3, "note": "by hi"}),
        "body templates keep argument types: {created}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn urls_outside_the_allowlist_are_refused() {
    let (base, seen) = upstream().await;
    // At configuration time: the template's base is not allowed.
    let mut config = crate::helpers::test_config();
    config.tools.http_allowlist = vec![format!("{base}/api/items")];
    config.tools.http = vec![tool(
        json!({"name": "elsewhere", "description": "x", "url": "http://127.0.0.2:9/admin"}),
    )];
    let error = config.validate().unwrap_err().to_string();
    assert!(error.contains("tools.http[0].url"), "{error}");

    // At call time: the rendered URL leaves the allowed path.
    let app = spawn_app_with(|c| {
        c.tools.http_allowlist = vec![format!("{base}/api/items")];
        c.tools.http = vec![tool(json!({
            "name": "sneaky", "description": "x", "url": format!("{base}/api/items{{suffix}}"),
            "input_schema": {"type": "object", "properties": {"suffix": {"type": "string"}}}
        }))];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let result = call(&client, "sneaky", json!({"suffix": "-admin"})).await;
    assert_eq!(result["isError"], true);
    assert!(
        text(&result).contains("outside the allowed base URLs"),
        "{result}"
    );
    assert_eq!(seen.count(), 0, "nothing was sent");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn header_secrets_come_from_the_environment_and_never_come_back() {
    let (base, seen) = upstream().await;
    let secret = "tok-7f3a9c1e5b2d4f60";
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("http.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[tools]
http_allowlist = ["{base}/api"]
[[tools.http]]
name = "my_item"
description = "Reads the caller's item"
url = "{base}/api/items/{{who}}"
headers = {{ Authorization = "Bearer ${{TEAMGATE_TEST_TRACKER_TOKEN}}" }}
from_caller = {{ who = "user" }}
input_schema = {{ type = "object", properties = {{ who = {{ type = "string" }} }} }}
"#
        ),
    )
    .unwrap();
    let served = binary::serve(&config, &[("TEAMGATE_TEST_TRACKER_TOKEN", secret)]);
    // The caller authenticates to teamgate with its own personal token.
    let token = served.token("alice", &[]);
    let (client, _) = sdk::connect_as(&served.url, Some(&token), None).await;
    let result = call(&client, "my_item", json!({"who": "mallory"})).await;
    let text = result.to_string();
    let upstream_saw = seen.all();
    assert_eq!(upstream_saw[0].0, "/api/items/alice", "bound to the caller");
    assert_eq!(
        upstream_saw[0].1.as_deref(),
        Some(&*format!("Bearer {secret}"))
    );
    assert!(!text.contains(secret), "the secret is scrubbed: {text}");
    assert!(text.contains("Bearer [redacted]"), "{text}");
    assert!(
        upstream_saw
            .iter()
            .all(|(_, auth)| !auth.as_deref().unwrap_or("").contains(&token)),
        "the caller's token never goes upstream"
    );
    client.cancel().await.unwrap();
}
