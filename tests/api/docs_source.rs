//! `[[sources.docs]]` over real Markdown files: BM25 ranking, resources and
//! their template, pagination, completion, and the watcher's notifications
//! on legacy subscriptions and 2026-07-28 `subscriptions/listen`.

use std::{path::Path, time::Duration};

use serde_json::{Value, json};
use teamgate::config::DocsSourceConfig;

use crate::{
    helpers::{MODERN, spawn_app, spawn_app_with},
    sdk::{self, Heard, call, hear},
};

pub(crate) fn docs(name: &str, folder: &Path, watch: bool) -> DocsSourceConfig {
    serde_json::from_value(json!({
        "name": name, "paths": [folder.to_string_lossy()], "tool": format!("search_{name}"),
        "watch": watch, "debounce": "50ms",
    }))
    .unwrap()
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn runbooks() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "deploying.md",
        "# Deploying to production\n\nTo deploy, run the deploy pipeline. Every deploy is announced; a failed deploy is rolled back.\n",
    );
    write(
        dir.path(),
        "rollback.md",
        "# Rolling back\n\nIf a release misbehaves, roll back to the previous build. This may follow a deploy.\n",
    );
    write(
        dir.path(),
        "cooking.md",
        "# Team lunch\n\nPasta on Fridays.\n",
    );
    write(dir.path(), "notes.bin", "not indexed");
    dir
}

#[tokio::test]
async fn search_ranks_hits_and_documents_are_resources() {
    let dir = runbooks();
    let app = spawn_app_with(|c| c.sources.docs = vec![docs("runbooks", dir.path(), false)]).await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let result = call(
        &client,
        "search_runbooks",
        json!({"query": "deploy", "limit": 5}),
    )
    .await;
    assert_eq!(result["isError"], false, "{result}");
    let hits = result["structuredContent"]["hits"].as_array().unwrap();
    let paths: Vec<&str> = hits.iter().map(|h| h["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths,
        ["deploying.md", "rollback.md"],
        "the document about deploying ranks first; unrelated ones are absent"
    );
    assert!(hits[0]["score"].as_f64() > hits[1]["score"].as_f64());
    assert_eq!(hits[0]["title"], "Deploying to production");
    assert!(
        hits[0]["snippet"].as_str().unwrap().contains("deploy"),
        "{}",
        hits[0]
    );
    let uri = "docs://runbooks/deploying.md".to_owned();
    let section = format!("{uri}#deploying-to-production");
    assert_eq!(hits[0]["uri"], section);
    assert_eq!(hits[0]["document"], uri);
    let link = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "resource_link")
        .expect("a resource_link per hit");
    assert_eq!(link["uri"], section);

    let resources = client.list_all_resources().await.unwrap();
    let listed = serde_json::to_value(&resources).unwrap();
    let doc = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == uri)
        .unwrap();
    assert_eq!(doc["mimeType"], "text/markdown");
    assert_eq!(doc["title"], "Deploying to production");
    assert!(doc["size"].as_u64().unwrap() > 50);
    assert!(
        !listed.to_string().contains("notes.bin"),
        "only allowed extensions"
    );
    let templates =
        serde_json::to_value(client.list_all_resource_templates().await.unwrap()).unwrap();
    assert!(
        templates
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["uriTemplate"] == "docs://runbooks/{+path}{?lines}"),
        "{templates}"
    );
    let read = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(uri.clone()))
        .await
        .unwrap();
    let read = serde_json::to_value(read).unwrap();
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("# Deploying")
    );
    let completion = client
        .complete_resource_argument(
            "docs://runbooks/{+path}{?lines}",
            "path",
            "ro".to_owned(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(completion.values, ["rollback.md"]);
    client.cancel().await.unwrap();

    // Modern reads carry cache hints; a missing document is -32602.
    let (_, replies) = app
        .modern_call(1, "resources/read", json!({"uri": uri}))
        .await;
    assert_eq!(replies[0]["result"]["cacheScope"], "public");
    assert!(replies[0]["result"]["ttlMs"].as_u64().is_some());
    let (_, replies) = app
        .modern_call(
            2,
            "resources/read",
            json!({"uri": "docs://runbooks/nope.md"}),
        )
        .await;
    assert_eq!(replies[0]["error"]["code"], -32602);
}

#[tokio::test]
async fn long_lists_paginate() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..130 {
        write(
            dir.path(),
            &format!("page-{i:03}.md"),
            &format!("# Page {i}\n"),
        );
    }
    let app = spawn_app_with(|c| c.sources.docs = vec![docs("many", dir.path(), false)]).await;
    let session = app.initialize("2025-11-25").await;
    let first = app
        .session_call(&session, 1, "resources/list", json!({}))
        .await;
    let cursor = first["result"]["nextCursor"]
        .as_str()
        .expect("a second page");
    let second = app
        .session_call(&session, 2, "resources/list", json!({"cursor": cursor}))
        .await;
    let count = |page: &Value| page["result"]["resources"].as_array().unwrap().len();
    assert!(count(&first) + count(&second) >= 130);
}

#[tokio::test]
async fn the_default_configuration_searches_the_project_docs() {
    let app = spawn_app().await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let result = call(&client, "search_docs", json!({"query": "Inspector"})).await;
    let hits = result["structuredContent"]["hits"].as_array().unwrap();
    assert!(!hits.is_empty(), "{result}");
    assert!(
        hits.iter()
            .all(|h| h["uri"].as_str().unwrap().starts_with("docs://project/"))
    );
    client.cancel().await.unwrap();
}

/// Reads SSE events from a listen stream until one satisfies `wanted`.
pub(crate) async fn listen_until(
    stream: &mut reqwest::Response,
    wanted: impl Fn(&Value) -> bool,
) -> Value {
    let mut buffer = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let data: String = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .collect();
            if let Ok(message) = serde_json::from_str::<Value>(data.trim())
                && wanted(&message)
            {
                return message;
            }
        }
        let chunk = tokio::time::timeout_at(deadline, stream.chunk())
            .await
            .expect("the notification in time")
            .unwrap()
            .expect("stream open");
        buffer.push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
    }
}

#[tokio::test]
async fn edits_are_reindexed_and_subscribers_are_told() {
    let dir = runbooks();
    let app = spawn_app_with(|c| c.sources.docs = vec![docs("live", dir.path(), true)]).await;
    let uri = "docs://live/cooking.md".to_owned();

    // A legacy session subscribes through the SDK.
    let (client, mut heard) = sdk::connect(&app.url, None).await;
    #[allow(deprecated)] // resources/subscribe is the 2025-era way, served here on purpose.
    client
        .subscribe(rmcp::model::SubscribeRequestParams::new(uri.clone()))
        .await
        .unwrap();
    // A 2026-07-28 client listens.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}});
    let mut stream = app
        .post(
            &json!({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen", "params": {"_meta": meta,
                "notifications": {"resourcesListChanged": true, "resourceSubscriptions": [uri]}}}),
            &[("mcp-protocol-version", MODERN), ("mcp-method", "subscriptions/listen")],
        )
        .await;
    listen_until(&mut stream, |m| {
        m["method"] == "notifications/subscriptions/acknowledged"
    })
    .await;

    // Same size and title: an update, not a change of the list.
    write(
        dir.path(),
        "cooking.md",
        "# Team lunch\n\nTacos on Fridays.\n",
    );
    hear(&mut heard, &Heard::Updated(uri.clone())).await;
    let updated = listen_until(&mut stream, |m| {
        m["method"] == "notifications/resources/updated"
    })
    .await;
    assert_eq!(updated["params"]["uri"], uri);
    let result = call(&client, "search_live", json!({"query": "tacos"})).await;
    assert_eq!(
        result["structuredContent"]["hits"][0]["document"], uri,
        "re-indexed"
    );

    write(dir.path(), "incident.md", "# Incident process\n");
    hear(&mut heard, &Heard::ResourcesChanged).await;
    listen_until(&mut stream, |m| {
        m["method"] == "notifications/resources/list_changed"
    })
    .await;
    let resources = serde_json::to_value(client.list_all_resources().await.unwrap()).unwrap();
    assert!(resources.to_string().contains("incident.md"));
    client.cancel().await.unwrap();
}
