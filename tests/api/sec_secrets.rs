//! HTTP tools and secrets (issue 30): `.`/`..` arguments climbing a URL
//! path; halves of a secret cut apart by progress lines, the head-and-tail
//! cap and an HTTP error excerpt; secrets in object keys; the values
//! teamgate holds itself; configuration errors.

use std::sync::{Arc, Mutex};

use axum::{Json, Router, http::StatusCode, routing::get};
use serde_json::{Value, json};
use teamgate::config::HttpToolConfig;

use crate::{
    helpers::spawn_app_with,
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

fn http_tool(value: Value) -> HttpToolConfig {
    serde_json::from_value(value).expect("a valid [[tools.http]]")
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
