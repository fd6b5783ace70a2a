//! The URI rule for upstream resources (issue 26): a URI another provider
//! has too (a second upstream, teamgate's own docs) reads
//! `upstream://<name>/<uri>` for the upstream, and reads map back; an
//! upstream that is down offers no resources, prompts or completions.

use std::time::Duration;

use serde_json::json;

use crate::{
    docs_source::{docs, write},
    helpers::{repo_path, spawn_app_with},
    upstream_resources::{GUIDE, TEXT_TEMPLATE, first_text, listed, served},
    upstreams::{everything, upstream},
};

#[tokio::test]
async fn a_uri_another_upstream_has_too_is_renamed_for_both() {
    let Some((node, script)) = everything() else {
        return;
    };
    let app = spawn_app_with(move |c| {
        c.upstreams = vec![
            upstream(&node, &script, json!({})),
            upstream(&node, &script, json!({"name": "twin"})),
        ];
    })
    .await;
    let mine = format!("upstream://everything/{GUIDE}");
    let twins = format!("upstream://twin/{GUIDE}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let uris = loop {
        let uris = listed(&app, "resources/list", "uri", &mine).await;
        if uris.contains(&twins) || tokio::time::Instant::now() > deadline {
            break uris;
        }
    };
    assert!(uris.contains(&mine) && uris.contains(&twins), "{uris:?}");
    assert!(
        !uris.iter().any(|u| u == GUIDE),
        "an ambiguous URI is nobody's: {uris:?}"
    );
    for (id, uri) in [(2, &mine), (3, &twins)] {
        let (_, replies) = app
            .modern_call(id, "resources/read", json!({"uri": uri}))
            .await;
        assert_eq!(first_text(&replies[0]), served("architecture.md"));
        assert_eq!(&replies[0]["result"]["contents"][0]["uri"], uri.as_str());
    }
    let (_, replies) = app
        .modern_call(4, "resources/read", json!({"uri": GUIDE}))
        .await;
    assert!(replies[0].get("error").is_some(), "{replies:?}");

    let twin_template = format!("upstream://twin/{TEXT_TEMPLATE}");
    let templates = listed(
        &app,
        "resources/templates/list",
        "uriTemplate",
        &twin_template,
    )
    .await;
    assert!(templates.contains(&twin_template), "{templates:?}");
    let read = twin_template.replace("{resourceId}", "5");
    let (_, replies) = app
        .modern_call(5, "resources/read", json!({"uri": read}))
        .await;
    assert!(
        first_text(&replies[0]).starts_with("Resource 5:"),
        "{replies:?}"
    );
}

#[tokio::test]
async fn a_uri_teamgates_own_docs_have_is_renamed_for_the_upstream() {
    let python = repo_path(".cache/venv/bin/python");
    if !python.exists() {
        assert!(std::env::var_os("CI").is_none(), "CI installs the venv");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "guide.md",
        "# Our guide\n\nteamgate's own copy.\n",
    );
    let folder = dir.path().to_owned();
    let server = repo_path("tests/interop/upstream_handbook.py");
    let app = spawn_app_with(move |c| {
        c.sources.docs = vec![docs("handbook", &folder, false)];
        c.upstreams = vec![
            serde_json::from_value(json!({
                "name": "twin", "command": python, "args": [server],
            }))
            .unwrap(),
        ];
    })
    .await;
    let own = "docs://handbook/guide.md";
    let renamed = format!("upstream://twin/{own}");
    let uris = listed(&app, "resources/list", "uri", &renamed).await;
    assert!(
        uris.iter().any(|u| u == own) && uris.contains(&renamed),
        "{uris:?}"
    );
    let (_, replies) = app
        .modern_call(2, "resources/read", json!({"uri": own}))
        .await;
    assert!(
        first_text(&replies[0]).contains("teamgate's own copy"),
        "{replies:?}"
    );
    let (_, replies) = app
        .modern_call(3, "resources/read", json!({"uri": renamed}))
        .await;
    assert_eq!(first_text(&replies[0]), "the upstream's own guide");
}

#[tokio::test]
async fn an_upstream_that_is_down_advertises_nothing() {
    let app = spawn_app_with(|c| {
        c.providers.conformance.enabled = false;
        c.providers.builtin.enabled = false;
        c.sources.docs.clear();
        c.prompts.clear();
        c.prompt_files.folders.clear();
        c.upstreams = vec![
            serde_json::from_value(json!({"name": "broken", "command": "/nonexistent/mcp-server"}))
                .unwrap(),
        ];
    })
    .await;
    // The first attempt fails at once; the backoff keeps trying meanwhile.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let response = app
        .post(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "teamgate-tests", "version": "1"}}}),
            &[],
        )
        .await;
    assert_eq!(response.status(), 200);
    let initialized = crate::sec_authz::reply(&response.text().await.unwrap());
    let caps = &initialized["result"]["capabilities"];
    assert!(caps.is_object(), "{initialized}");
    for kind in ["prompts", "resources", "completions"] {
        assert!(caps.get(kind).is_none(), "{kind} advertised: {caps}");
    }
    let (_, replies) = app.modern_call(2, "resources/list", json!({})).await;
    assert_eq!(replies[0]["result"]["resources"], json!([]), "{replies:?}");
}
