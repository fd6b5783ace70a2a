//! Section-level docs search over real files the tests write: hits name a
//! section (heading path, lines, `#anchor` link), reads return just that
//! section or a line range, headings weigh more than body, and one document
//! cannot fill the list.

use serde_json::{Value, json};

use crate::{
    docs_source::{docs, write},
    helpers::{TestApp, spawn_app_with},
    sdk::{self, call},
};

const GUIDE: &str = "# Operating teamgate

Start the server with `teamgate serve`.

## Tokens

Personal tokens authenticate a member.

### Creating a token

Run `teamgate token create` to make one.

### Revoking a token

Run `teamgate token revoke ID` to revoke a token at once.
A revoked token is refused on its next request.

## Auth mode

Set `auth.mode` to choose how callers sign in.
";

async fn search(app: &TestApp, tool: &str, query: &str, limit: u64) -> Vec<Value> {
    let (client, _) = sdk::connect(&app.url, None).await;
    let result = call(&client, tool, json!({"query": query, "limit": limit})).await;
    assert_eq!(result["isError"], false, "{result}");
    client.cancel().await.unwrap();
    result["structuredContent"]["hits"]
        .as_array()
        .unwrap()
        .clone()
}

async fn read(app: &TestApp, uri: &str) -> Value {
    let (_, replies) = app
        .modern_call(1, "resources/read", json!({"uri": uri}))
        .await;
    replies[0].clone()
}

#[tokio::test]
async fn hits_are_sections_and_their_links_read_just_the_section() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "guide.md", GUIDE);
    write(
        dir.path(),
        "notes.txt",
        "Lunch is at noon.\n\nThe backup runs nightly at two.\nRestores take an hour.\n",
    );
    let app = spawn_app_with(|c| c.sources.docs = vec![docs("ops", dir.path(), false)]).await;

    let hits = search(&app, "search_ops", "revoke token", 5).await;
    let top = &hits[0];
    assert_eq!(top["path"], "guide.md", "paths are relative to the folder");
    assert_eq!(top["title"], "Operating teamgate");
    assert_eq!(
        top["headings"],
        json!(["Operating teamgate", "Tokens", "Revoking a token"])
    );
    assert_eq!(top["lines"], json!({"start": 13, "end": 17}));
    assert_eq!(top["uri"], "docs://ops/guide.md#revoking-a-token");
    assert_eq!(top["document"], "docs://ops/guide.md");
    assert_eq!(top["section"], "revoking-a-token");
    let snippet = top["snippet"].as_str().unwrap();
    assert!(snippet.contains("**revoke**"), "{snippet}");

    // The link reads that section, not the whole file.
    let section = read(&app, "docs://ops/guide.md#revoking-a-token").await;
    let text = section["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("### Revoking a token\n"), "{text}");
    assert!(text.contains("refused on its next request"));
    assert!(!text.contains("auth.mode") && !text.contains("token create"));
    assert_eq!(
        section["result"]["contents"][0]["uri"],
        "docs://ops/guide.md#revoking-a-token"
    );

    // A line range, the whole document, and the old URI with the folder's name.
    let range = read(&app, "docs://ops/guide.md?lines=5-7").await;
    assert_eq!(
        range["result"]["contents"][0]["text"],
        "## Tokens\n\nPersonal tokens authenticate a member."
    );
    let tail = read(&app, "docs://ops/guide.md?lines=20-400").await;
    assert_eq!(
        tail["result"]["contents"][0]["text"],
        "Set `auth.mode` to choose how callers sign in."
    );
    let whole = read(&app, "docs://ops/guide.md").await;
    assert_eq!(whole["result"]["contents"][0]["text"], GUIDE);
    let folder = dir.path().file_name().unwrap().to_string_lossy();
    let legacy = read(&app, &format!("docs://ops/{folder}/guide.md")).await;
    assert_eq!(legacy["result"]["contents"][0]["text"], GUIDE);

    // Bad ranges and unknown sections are invalid params, with the request id.
    for uri in [
        "docs://ops/guide.md?lines=9-3",
        "docs://ops/guide.md?lines=0-3",
        "docs://ops/guide.md?lines=500",
        "docs://ops/guide.md?lines=a-b",
        "docs://ops/guide.md#no-such-heading",
    ] {
        let reply = read(&app, uri).await;
        assert_eq!(reply["error"]["code"], -32602, "{uri}: {reply}");
        assert_eq!(reply["id"], 1);
    }

    // Plain text: paragraphs, linked by lines.
    let hits = search(&app, "search_ops", "backup restores", 5).await;
    assert_eq!(hits[0]["path"], "notes.txt");
    assert_eq!(hits[0]["uri"], "docs://ops/notes.txt?lines=1-4");

    // The template names the range.
    let (client, _) = sdk::connect(&app.url, None).await;
    let templates =
        serde_json::to_value(client.list_all_resource_templates().await.unwrap()).unwrap();
    assert!(
        templates.to_string().contains("docs://ops/{+path}{?lines}"),
        "{templates}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn one_document_cannot_fill_the_list_and_limit_counts_hits() {
    let dir = tempfile::tempdir().unwrap();
    let big: String = (0..8)
        .map(|i| format!("## Kafka topic {i}\n\nKafka partitions for topic {i}.\n\n"))
        .collect();
    write(dir.path(), "kafka.md", &format!("# Kafka\n\n{big}"));
    write(
        dir.path(),
        "streams.md",
        "# Streams\n\nOur streams run on kafka.\n",
    );
    write(
        dir.path(),
        "queues.md",
        "# Queues\n\nWe moved queues from kafka to SQS.\n",
    );
    let app = spawn_app_with(|c| c.sources.docs = vec![docs("g", dir.path(), false)]).await;

    let hits = search(&app, "search_g", "kafka", 4).await;
    let paths: Vec<&str> = hits.iter().map(|h| h["path"].as_str().unwrap()).collect();
    assert_eq!(paths.len(), 4, "{paths:?}");
    assert_eq!(paths.iter().filter(|p| **p == "kafka.md").count(), 2);
    assert!(paths.contains(&"streams.md") && paths.contains(&"queues.md"));

    // With few documents matching, more sections of one fill up to `limit`.
    let hits = search(&app, "search_g", "partitions", 5).await;
    assert_eq!(hits.len(), 5);
    assert!(hits.iter().all(|h| h["path"] == "kafka.md"));
    let anchors: Vec<&str> = hits.iter().map(|h| h["uri"].as_str().unwrap()).collect();
    assert!(
        anchors.contains(&"docs://g/kafka.md#kafka-topic-3"),
        "{anchors:?}"
    );
}

#[tokio::test]
async fn headings_weigh_more_than_body_text() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "ops.md",
        "# Operations\n\n## Certificates\n\nRenew them every year, well before they expire, and check the chain.\n",
    );
    write(
        dir.path(),
        "misc.md",
        "# Miscellany\n\nWe talk about certificates here, and about certificates there, and more.\n",
    );
    let app = spawn_app_with(|c| c.sources.docs = vec![docs("w", dir.path(), false)]).await;
    let hits = search(&app, "search_w", "certificates", 5).await;
    assert_eq!(hits[0]["uri"], "docs://w/ops.md#certificates", "{hits:?}");
    assert_eq!(hits[1]["path"], "misc.md");
    let snippet = hits[0]["snippet"].as_str().unwrap();
    assert!(snippet.contains("**Certificates**"), "{snippet}");
}

#[tokio::test]
async fn watch_reindexes_changed_files_and_forgets_removed_ones() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.md", "# Alpha\n\nThe walrus sleeps.\n");
    write(dir.path(), "b.md", "# Beta\n\nThe narwhal swims.\n");
    write(dir.path(), "c.md", "# Gamma\n\nThe puffin flies.\n");
    let app = spawn_app_with(|c| c.sources.docs = vec![docs("live", dir.path(), true)]).await;
    let found = |hits: &[Value]| -> Vec<String> {
        hits.iter()
            .map(|h| h["uri"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        found(&search(&app, "search_live", "walrus", 5).await),
        ["docs://live/a.md#alpha"]
    );

    write(
        dir.path(),
        "a.md",
        "# Alpha\n\nThe walrus woke up.\n\n## Lunch\n\nHerring.\n",
    );
    std::fs::remove_file(dir.path().join("b.md")).unwrap();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while search(&app, "search_live", "herring", 5).await.is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "re-indexed in time");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        found(&search(&app, "search_live", "herring", 5).await),
        ["docs://live/a.md#lunch"]
    );
    // The changed file's old sections are gone, not doubled.
    assert_eq!(
        found(&search(&app, "search_live", "walrus", 5).await).len(),
        1
    );
    assert!(search(&app, "search_live", "sleeps", 5).await.is_empty());
    // The removed file is no longer found; the unchanged one still is.
    assert!(search(&app, "search_live", "narwhal", 5).await.is_empty());
    assert_eq!(
        found(&search(&app, "search_live", "puffin", 5).await),
        ["docs://live/c.md#gamma"]
    );
    let gone = read(&app, "docs://live/b.md").await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
}
