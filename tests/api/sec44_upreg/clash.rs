//! Item 3: a clashing name drops only the clashing tools of that one
//! upstream: with `prefix = ""` it offers `teamgate_info` (the built-in's,
//! which keeps it) and lists `twice` twice (every copy dropped). Its other
//! tools are listed and callable, another upstream's changes are taken, a
//! reload keeping it succeeds, and the drops show on `/metrics` and in
//! `teamgate upstreams list`.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Listing, python, refused, until};
use crate::{
    helpers::{repo_path, spawn_app_with, test_config},
    sdk,
    upstream_pins::cli,
};

fn tools(names: &[&str]) -> Value {
    names.iter().map(|n| json!({"name": n})).collect()
}

#[tokio::test]
async fn a_clashing_name_drops_only_that_upstreams_clashing_tools() {
    let Some(python) = python() else {
        return;
    };
    let clashing = Listing::new(
        &python,
        json!({"server": "dup", "tools": tools(&["teamgate_info", "twice", "own", "twice", "relist"])}),
    );
    let other = Listing::new(
        &python,
        json!({"server": "other", "tools": tools(&["x", "relist"])}),
    );
    let upstreams = vec![
        clashing.upstream("dup", json!({"prefix": ""})),
        other.upstream("other", json!({})),
    ];
    let configured = upstreams.clone();
    let app = spawn_app_with(move |c| c.upstreams = configured).await;
    let (client, _heard) = sdk::connect(&app.url, None).await;
    let listed = until(&client, "both upstreams' tools", |l| {
        l.iter().any(|n| n == "own") && l.iter().any(|n| n == "other_x")
    })
    .await;
    assert!(listed.iter().any(|n| n == "relist"), "{listed:?}");
    assert!(!listed.iter().any(|n| n == "twice"), "{listed:?}");
    let info = listed.iter().filter(|n| *n == "teamgate_info").count();
    assert_eq!(info, 1, "{listed:?}");
    assert_eq!(
        sdk::text(&sdk::call(&client, "own", json!({})).await),
        "dup: own"
    );
    assert_eq!(
        sdk::text(&sdk::call(&client, "other_x", json!({})).await),
        "other: x"
    );
    let builtin = sdk::call(&client, "teamgate_info", json!({})).await;
    assert!(!sdk::text(&builtin).starts_with("dup:"), "{builtin}");
    assert!(refused(&client, "twice").await.contains("Unknown tool"));

    // Another upstream's change is taken while the clash stands.
    other.set(json!({"server": "other", "tools": tools(&["x", "y", "relist"])}));
    sdk::call(&client, "other_relist", json!({})).await;
    until(&client, "the other upstream's new tool", |l| {
        l.iter().any(|n| n == "other_y")
    })
    .await;
    assert_eq!(
        sdk::text(&sdk::call(&client, "other_y", json!({})).await),
        "other: y"
    );

    // A reload that keeps the clashing upstream succeeds.
    let mut config = test_config();
    config.upstreams = upstreams.clone();
    config.upstreams[1].timeout = Duration::from_secs(17);
    app.reloader
        .reload(&config)
        .expect("a reload keeping the clashing upstream succeeds");
    until(&client, "both upstreams after the reload", |l| {
        l.iter().any(|n| n == "own") && l.iter().any(|n| n == "other_y")
    })
    .await;

    // Counted on /metrics, shown by `teamgate upstreams list`.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let metrics = loop {
        let text = app
            .client
            .get(format!("{}/metrics", app.base()))
            .send()
            .await;
        let text = text.unwrap().text().await.unwrap();
        let line = (text.lines())
            .find(|l| l.starts_with("teamgate_upstream_tools_dropped") && l.contains("\"dup\""))
            .map(str::to_owned);
        if line.as_deref().is_some_and(|l| l.ends_with(" 2"))
            || tokio::time::Instant::now() > deadline
        {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let dropped = |upstream: &str| {
        (metrics.lines())
            .find(|l| l.starts_with("teamgate_upstream_tools_dropped") && l.contains(upstream))
            .map(|l| l.rsplit(' ').next().unwrap().to_owned())
    };
    assert_eq!(dropped("\"dup\"").as_deref(), Some("2"), "{metrics}");
    assert_eq!(dropped("\"other\"").as_deref(), Some("0"), "{metrics}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("teamgate.toml");
    let entry = |listing: &Listing, name: &str, extra: &str| {
        let script = repo_path("tests/interop/upstream_listed.py");
        let args = [
            script.display().to_string(),
            listing.file.display().to_string(),
        ];
        let python = &listing.python;
        format!("[[upstreams]]\nname = {name:?}\ncommand = {python:?}\nargs = {args:?}\n{extra}\n")
    };
    let toml_config = entry(&clashing, "dup", "prefix = \"\"") + &entry(&other, "other", "");
    std::fs::write(&file, &toml_config).unwrap();
    let (ok, out, err) = cli(&file, &app.store_url(), &["list"]).await;
    assert!(ok, "{err}");
    assert!(out.contains("teamgate_info (name taken)"), "{out}");
    assert!(out.contains("twice (listed twice)"), "{out}");
    let (ok, out, err) = cli(&file, &app.store_url(), &["list", "--json"]).await;
    assert!(ok, "{err}");
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        shown[0]["dropped"].as_array().map(Vec::len),
        Some(2),
        "{shown}"
    );
    assert_eq!(shown[1]["dropped"], json!([]), "{shown}");
    client.cancel().await.unwrap();
}
