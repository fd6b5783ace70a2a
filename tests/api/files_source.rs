//! `[[sources.files]]` over a real folder: reads in parts, escapes through
//! `..`, absolute paths and symlinks refused, `.gitignore`-aware search.

use serde_json::{Value, json};
use teamgate::config::FilesSourceConfig;

use crate::{
    helpers::spawn_app_with,
    sdk::{self, call, text},
};

#[tokio::test]
async fn reads_and_searches_inside_the_root_only() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "top secret").unwrap();
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::create_dir_all(r.join("src/deep")).unwrap();
    std::fs::write(r.join("src/lib.rs"), "pub fn alpha() {}\n// TODO: beta\n").unwrap();
    std::fs::write(r.join("src/deep/mod.rs"), "fn gamma() { todo!() }\n").unwrap();
    std::fs::write(r.join("notes.md"), "0123456789abcdefghij").unwrap();
    std::fs::write(r.join("ignored.md"), "TODO hidden by gitignore").unwrap();
    std::fs::write(r.join(".gitignore"), "ignored.md\n").unwrap();
    std::fs::write(r.join("data.bin"), "TODO not an allowed extension").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.md"), r.join("link.md")).unwrap();
    std::os::unix::fs::symlink(outside.path(), r.join("outside")).unwrap();

    let config: FilesSourceConfig = serde_json::from_value(json!({
        "name": "repo", "root": r.to_string_lossy(), "extensions": ["rs", "md"],
        "max_read_bytes": 8, "max_results": 10,
    }))
    .unwrap();
    let app = spawn_app_with(|c| c.sources.files = vec![config]).await;
    let (client, _) = sdk::connect(&app.url, None).await;

    let read = call(
        &client,
        "read_file",
        json!({"path": "notes.md", "offset": 4}),
    )
    .await;
    assert_eq!(read["isError"], false, "{read}");
    assert!(text(&read).starts_with("456789ab"), "{read}");
    assert!(
        text(&read).contains("offset = 12"),
        "says how to read on: {read}"
    );
    let read = call(
        &client,
        "read_file",
        json!({"path": "./src/lib.rs", "length": 6}),
    )
    .await;
    assert_eq!(
        text(&read),
        "pub fn\n[… 26 more bytes: call read_file again with offset = 6]"
    );

    for (path, why) in [
        ("../secret.md", "without `..`"),
        ("src/../../secret.md", "without `..`"),
        ("/etc/passwd", "without `..`"),
        ("link.md", "outside"),
        ("outside/secret.md", "outside"),
        ("data.bin", "extension"),
        ("nope.md", "does not exist"),
    ] {
        let refused = call(&client, "read_file", json!({"path": path})).await;
        assert_eq!(refused["isError"], true, "{path}");
        assert!(text(&refused).contains(why), "{path}: {refused}");
        assert!(!text(&refused).contains("top secret"));
    }

    let found = call(&client, "search_files", json!({"pattern": "todo"})).await;
    let matches = found["structuredContent"]["matches"].as_array().unwrap();
    let paths: Vec<&str> = matches
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["src/deep/mod.rs", "src/lib.rs"], "{found}");
    assert_eq!(matches[1]["line"], 2);
    assert_eq!(matches[1]["text"], "// TODO: beta");
    let globbed = call(
        &client,
        "search_files",
        json!({"pattern": "fn", "glob": "src/*.rs"}),
    )
    .await;
    let globbed = globbed["structuredContent"]["matches"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        globbed.iter().all(|m| m["path"] == "src/lib.rs"),
        "{globbed:?}"
    );
    let limited = call(&client, "search_files", json!({"pattern": ".", "limit": 1})).await;
    assert_eq!(limited["structuredContent"]["truncated"], true);
    let bad = call(&client, "search_files", json!({"pattern": "("})).await;
    assert_eq!(bad["isError"], true);
    assert!(
        text(&bad).contains("not a valid regular expression"),
        "{bad}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn lists_folders_reads_line_ranges_and_quotes_context() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    for dir in ["docs", "src", ".hidden"] {
        std::fs::create_dir(r.join(dir)).unwrap();
    }
    let lines: String = (1..=10).map(|i| format!("l{i}\n")).collect();
    std::fs::write(r.join("big.md"), &lines).unwrap();
    std::fs::write(r.join("image.png"), "not offered").unwrap();
    std::fs::write(r.join(".gitignore"), "ignored.md\n").unwrap();
    std::fs::write(r.join("docs/a.md"), "alpha").unwrap();
    std::fs::write(r.join("docs/.hid.md"), "hidden").unwrap();
    std::fs::write(r.join("docs/ignored.md"), "ignored").unwrap();
    std::os::unix::fs::symlink(r.join("docs/a.md"), r.join("link.md")).unwrap();
    std::os::unix::fs::symlink(r.join("docs"), r.join("ln")).unwrap();
    let config: FilesSourceConfig = serde_json::from_value(json!({
        "name": "repo", "root": r.to_string_lossy(), "extensions": ["md", "rs"]}))
    .unwrap();
    let app = spawn_app_with(|c| c.sources.files = vec![config]).await;
    let (client, _) = sdk::connect(&app.url, None).await;

    let listed = call(&client, "list_files", json!({})).await;
    let listing = &listed["structuredContent"];
    assert_eq!(
        listing["entries"],
        json!([
            {"name": "docs", "path": "docs", "kind": "dir"},
            {"name": "src", "path": "src", "kind": "dir"},
            {"name": "big.md", "path": "big.md", "kind": "file", "size": lines.len()},
        ]),
        "no hidden, ignored, unoffered or linked entries: {listed}"
    );
    assert_eq!(listing["total"], 3);
    assert_eq!(listing["nextOffset"], Value::Null);
    let page = call(&client, "list_files", json!({"limit": 1, "offset": 1})).await;
    assert_eq!(page["structuredContent"]["entries"][0]["name"], "src");
    assert_eq!(page["structuredContent"]["nextOffset"], 2);
    let docs = call(&client, "list_files", json!({"path": "docs"})).await;
    assert_eq!(
        docs["structuredContent"]["entries"],
        json!([{"name": "a.md", "path": "docs/a.md", "kind": "file", "size": 5}])
    );
    for (path, why) in [
        ("..", "without `..`"),
        ("big.md", "not a folder"),
        ("nope", "does not exist"),
        (".hidden", "hidden or ignored"),
        ("ln", "link"),
    ] {
        let refused = call(&client, "list_files", json!({"path": path})).await;
        assert_eq!(refused["isError"], true, "{path}: {refused}");
        assert!(text(&refused).contains(why), "{path}: {refused}");
    }

    let range = call(
        &client,
        "read_file",
        json!({"path": "big.md", "start_line": 3, "end_line": 4}),
    )
    .await;
    assert_eq!(text(&range), "l3\nl4\n", "{range}");
    let past = call(
        &client,
        "read_file",
        json!({"path": "big.md", "start_line": 11}),
    )
    .await;
    assert!(text(&past).contains("has 10 lines"), "{past}");
    let both = call(
        &client,
        "read_file",
        json!({"path": "big.md", "start_line": 1, "offset": 0}),
    )
    .await;
    assert!(text(&both).contains("either"), "{both}");

    let found = call(
        &client,
        "search_files",
        json!({"pattern": "^l5$", "context": 1}),
    )
    .await;
    assert_eq!(
        found["structuredContent"]["matches"],
        json!([{"path": "big.md", "line": 5, "text": "l5",
            "before": [{"line": 4, "text": "l4"}], "after": [{"line": 6, "text": "l6"}]}]),
        "{found}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn search_keeps_walk_order_and_the_limit_across_many_files() {
    let root = tempfile::tempdir().unwrap();
    // More files than one batch, each matching twice, the last one's
    // matches spread so the limit falls inside a file.
    for i in 0..150 {
        let name = format!("f{i:03}.md");
        std::fs::write(root.path().join(name), "needle one\nhay\nneedle two\n").unwrap();
    }
    let config: FilesSourceConfig = serde_json::from_value(json!({
        "name": "many", "root": root.path().to_string_lossy(), "extensions": ["md"],
        "max_results": 500,
    }))
    .unwrap();
    let app = spawn_app_with(|c| c.sources.files = vec![config]).await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let found = |limit: u64| {
        let client = &client;
        async move {
            let result = call(
                client,
                "search_files",
                json!({"pattern": "needle", "limit": limit}),
            )
            .await;
            let content = result["structuredContent"].clone();
            let places: Vec<(String, u64)> = content["matches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    (
                        m["path"].as_str().unwrap().to_owned(),
                        m["line"].as_u64().unwrap(),
                    )
                })
                .collect();
            (places, content["truncated"].as_bool().unwrap())
        }
    };
    let expected: Vec<(String, u64)> = (0..150)
        .flat_map(|i| [(format!("f{i:03}.md"), 1), (format!("f{i:03}.md"), 3)])
        .collect();
    let (places, truncated) = found(201).await;
    assert_eq!(
        places,
        expected[..201],
        "walk order, cut inside the 101st file"
    );
    assert!(truncated);
    let (places, truncated) = found(300).await;
    assert_eq!(places, expected, "every match, exactly");
    assert!(!truncated, "nothing was left out");
    client.cancel().await.unwrap();
}
