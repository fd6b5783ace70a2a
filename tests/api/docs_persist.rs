//! A docs source with `index_dir` keeps its index on disk: a restart
//! searches it without re-indexing, and re-indexes only the files that
//! changed meanwhile (seen in tantivy's own `meta.json`: the old segments
//! stay, one new segment holds the changed file's sections).

use std::path::Path;

use serde_json::{Value, json};

use crate::{
    docs_source::{docs, write},
    helpers::{TestApp, build_app, spawn_app_with, test_config},
    sdk::{self, call},
};

async fn paths_found(app: &TestApp, query: &str) -> Vec<String> {
    let (client, _) = sdk::connect(&app.url, None).await;
    let result = call(&client, "search_kb", json!({"query": query, "limit": 5})).await;
    client.cancel().await.unwrap();
    assert_eq!(result["isError"], false, "{result}");
    let hits = result["structuredContent"]["hits"].as_array().unwrap();
    hits.iter()
        .map(|h| h["path"].as_str().unwrap().to_owned())
        .collect()
}

async fn start(folder: &Path, index_dir: &Path) -> TestApp {
    let mut source = docs("kb", folder, false);
    source.index_dir = Some(index_dir.to_string_lossy().into_owned());
    spawn_app_with(|c| c.sources.docs = vec![source]).await
}

/// Each segment of the committed index: (id, documents, deleted ones).
fn segments(index_dir: &Path) -> Vec<(String, u64, u64)> {
    let meta = std::fs::read_to_string(index_dir.join("kb/meta.json")).unwrap();
    let meta: Value = serde_json::from_str(&meta).unwrap();
    meta["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let deleted = s["deletes"]["num_deleted_docs"].as_u64().unwrap_or(0);
            let id = s["segment_id"].as_str().unwrap().to_owned();
            (id, s["max_doc"].as_u64().unwrap(), deleted)
        })
        .collect()
}

#[tokio::test]
async fn a_restart_reuses_the_index_on_disk_and_reindexes_only_changed_files() {
    let folder = tempfile::tempdir().unwrap();
    let index_dir = tempfile::tempdir().unwrap();
    write(folder.path(), "a.md", "# Alpha\n\nThe walrus sleeps.\n");
    write(
        folder.path(),
        "b.md",
        "# Beta\n\nThe narwhal swims.\n\n## Diet\n\nCod.\n",
    );
    write(folder.path(), "c.md", "# Gamma\n\nThe puffin flies.\n");

    let first = start(folder.path(), index_dir.path()).await;
    assert_eq!(paths_found(&first, "narwhal").await, ["b.md"]);
    drop(first);
    let built = segments(index_dir.path());
    let sections: u64 = built.iter().map(|s| s.1).sum();
    assert_eq!(sections, 4, "a, b (two sections) and c: {built:?}");
    let meta = std::fs::read(index_dir.path().join("kb/meta.json")).unwrap();

    // Nothing changed: the index on disk is searched as it is, with no commit.
    let second = start(folder.path(), index_dir.path()).await;
    assert_eq!(paths_found(&second, "puffin").await, ["c.md"]);
    drop(second);
    let unchanged = std::fs::read(index_dir.path().join("kb/meta.json")).unwrap();
    assert_eq!(meta, unchanged, "a restart with no change writes nothing");

    // b.md changed and c.md went while stopped.
    write(folder.path(), "b.md", "# Beta\n\nThe narwhal dives.\n");
    std::fs::remove_file(folder.path().join("c.md")).unwrap();
    let third = start(folder.path(), index_dir.path()).await;
    assert_eq!(paths_found(&third, "dives").await, ["b.md"]);
    assert!(paths_found(&third, "swims").await.is_empty());
    assert!(paths_found(&third, "puffin").await.is_empty());
    assert_eq!(paths_found(&third, "walrus").await, ["a.md"]);
    drop(third);
    let after = segments(index_dir.path());
    for (id, _, _) in &built {
        assert!(
            after.iter().any(|s| &s.0 == id),
            "old segments are kept: {after:?}"
        );
    }
    let new: Vec<_> = after
        .iter()
        .filter(|s| !built.iter().any(|b| b.0 == s.0))
        .collect();
    assert_eq!(new.len(), 1, "{after:?}");
    assert_eq!(new[0].1, 1, "only the changed file was indexed: {after:?}");
    let deleted: u64 = after.iter().map(|s| s.2).sum();
    assert_eq!(deleted, 3, "b's two old sections and c's one: {after:?}");
}

#[tokio::test]
async fn an_index_dir_holding_other_files_is_refused_not_wiped() {
    let folder = tempfile::tempdir().unwrap();
    let index_dir = tempfile::tempdir().unwrap();
    write(folder.path(), "a.md", "# Alpha\n\nThe walrus sleeps.\n");
    std::fs::create_dir(index_dir.path().join("kb")).unwrap();
    write(&index_dir.path().join("kb"), "precious.txt", "keep me");
    let mut config = test_config();
    let mut source = docs("kb", folder.path(), false);
    source.index_dir = Some(index_dir.path().to_string_lossy().into_owned());
    config.sources.docs = vec![source];
    let Err(error) = build_app(config).await else {
        panic!("a folder of other files is not taken for an index");
    };
    assert!(
        format!("{error:#}").contains("holds no docs index"),
        "{error:#}"
    );
    let kept = std::fs::read_to_string(index_dir.path().join("kb/precious.txt")).unwrap();
    assert_eq!(kept, "keep me");
}
