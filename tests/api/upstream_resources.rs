//! What upstream MCP servers offer besides tools (issue 26): the official
//! everything server's resources, templates, prompts, completions and
//! subscriptions through teamgate, in both protocol eras, under teamgate's
//! scopes, and the URI rule when another provider has the same URI.

use std::time::Duration;

use serde_json::{Value, json};
use teamgate::config::{AuthMode, Config};

use crate::{
    docs_source::listen_until,
    helpers::{MODERN, TestApp, repo_path, spawn_app_with},
    sdk::{self, Heard, hear},
    sec_authz::{reply, send},
    upstreams::{everything, upstream},
};

pub(crate) const GUIDE: &str = "demo://resource/static/document/architecture.md";
pub(crate) const TEXT_TEMPLATE: &str = "demo://resource/dynamic/text/{resourceId}";

/// The everything server's own copy of a document it serves.
pub(crate) fn served(name: &str) -> String {
    let path = repo_path(&format!(
        ".cache/server-everything/node_modules/@modelcontextprotocol/server-everything/dist/docs/{name}"
    ));
    std::fs::read_to_string(path).expect("the everything server's docs")
}

async fn spawn(adjust: impl FnOnce(&mut Config) + Send + 'static) -> Option<TestApp> {
    let (node, script) = everything()?;
    let tools = json!({"tools": {"include": ["toggle-subscriber-updates"]}});
    Some(
        spawn_app_with(move |c| {
            c.upstreams = vec![upstream(&node, &script, tools)];
            adjust(c);
        })
        .await,
    )
}

/// `field` of each item of `list` (a 2026-07-28 list method), once `expect`
/// is among them (the upstream connects in the background).
pub(crate) async fn listed(app: &TestApp, list: &str, field: &str, expect: &str) -> Vec<String> {
    let key = match list {
        "resources/templates/list" => "resourceTemplates",
        other => other.split('/').next().unwrap(),
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (_, replies) = app.modern_call(1, list, json!({})).await;
        let items: Vec<String> = replies[0]["result"][key]
            .as_array()
            .map(|items| {
                let names = items.iter().filter_map(|i| i[field].as_str());
                names.map(str::to_owned).collect()
            })
            .unwrap_or_default();
        if items.iter().any(|i| i == expect) || tokio::time::Instant::now() > deadline {
            return items;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub(crate) fn first_text(reply: &Value) -> String {
    let contents = &reply["result"]["contents"][0];
    contents["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn an_upstreams_resources_templates_prompts_and_completions_pass_through() {
    let Some(app) = spawn(|_| {}).await else {
        return;
    };
    let uris = listed(&app, "resources/list", "uri", GUIDE).await;
    assert!(uris.iter().any(|u| u == GUIDE), "{uris:?}");
    let (_, replies) = app
        .modern_call(2, "resources/read", json!({"uri": GUIDE}))
        .await;
    assert_eq!(first_text(&replies[0]), served("architecture.md"));
    assert_eq!(replies[0]["result"]["contents"][0]["uri"], GUIDE);

    let templates = listed(
        &app,
        "resources/templates/list",
        "uriTemplate",
        TEXT_TEMPLATE,
    )
    .await;
    assert!(
        templates.iter().any(|t| t == TEXT_TEMPLATE),
        "{templates:?}"
    );
    let read = TEXT_TEMPLATE.replace("{resourceId}", "7");
    let (_, replies) = app
        .modern_call(3, "resources/read", json!({"uri": read}))
        .await;
    assert!(
        first_text(&replies[0]).starts_with("Resource 7:"),
        "{replies:?}"
    );

    let prompts = listed(&app, "prompts/list", "name", "everything_args-prompt").await;
    assert!(
        prompts.iter().any(|p| p == "everything_completable-prompt")
            && !prompts.iter().any(|p| p == "args-prompt"),
        "prefixed like its tools: {prompts:?}"
    );
    let (_, replies) = app
        .modern_call(
            4,
            "prompts/get",
            json!({"name": "everything_args-prompt", "arguments": {"city": "Lyon", "state": "Rhône"}}),
        )
        .await;
    let said = &replies[0]["result"]["messages"][0]["content"]["text"];
    assert!(
        said.as_str().unwrap_or_default().contains("Lyon, Rhône"),
        "{replies:?}"
    );

    let complete = |reference: Value, name: &str, value: &str| json!({"ref": reference, "argument": {"name": name, "value": value}});
    let prompt = json!({"type": "ref/prompt", "name": "everything_completable-prompt"});
    let (_, replies) = app
        .modern_call(
            5,
            "completion/complete",
            complete(prompt, "department", "Ma"),
        )
        .await;
    assert_eq!(
        replies[0]["result"]["completion"]["values"],
        json!(["Marketing"])
    );
    let template = json!({"type": "ref/resource", "uri": TEXT_TEMPLATE});
    let (_, replies) = app
        .modern_call(
            6,
            "completion/complete",
            complete(template, "resourceId", "42"),
        )
        .await;
    assert_eq!(replies[0]["result"]["completion"]["values"], json!(["42"]));

    // A 2025-era session: the same, and the capabilities to match.
    let response = app
        .post(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "teamgate-tests", "version": "1"}}}),
            &[],
        )
        .await;
    let initialized = reply(&response.text().await.unwrap());
    let caps = &initialized["result"]["capabilities"];
    assert_eq!(caps["resources"]["subscribe"], true, "{caps}");
    assert!(
        caps["prompts"].is_object() && caps["completions"].is_object(),
        "{caps}"
    );
    let session = app.initialize("2025-11-25").await;
    let read = app
        .session_call(&session, 7, "resources/read", json!({"uri": GUIDE}))
        .await;
    assert_eq!(first_text(&read), served("architecture.md"));
    let got = app
        .session_call(
            &session,
            8,
            "prompts/get",
            json!({"name": "everything_simple-prompt"}),
        )
        .await;
    let said = &got["result"]["messages"][0]["content"]["text"];
    assert_eq!(said, "This is a simple prompt without arguments.");
}

#[tokio::test]
async fn an_upstreams_resource_updates_reach_its_subscribers_only() {
    let Some(app) = spawn(|_| {}).await else {
        return;
    };
    listed(&app, "resources/list", "uri", GUIDE).await;
    let (subscriber, mut heard) = sdk::connect(&app.url, None).await;
    let (_bystander, mut unheard) = sdk::connect(&app.url, None).await;
    #[allow(deprecated)] // resources/subscribe is the 2025-era way, served here on purpose.
    subscriber
        .subscribe(rmcp::model::SubscribeRequestParams::new(GUIDE))
        .await
        .unwrap();
    // The everything server then sends an update at once, and every 5 s.
    sdk::call(
        &subscriber,
        "everything_toggle-subscriber-updates",
        json!({}),
    )
    .await;
    hear(&mut heard, &Heard::Updated(GUIDE.into())).await;

    // A 2026-07-28 stream subscribed to the same URI hears the next one.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}});
    let mut stream = app
        .post(
            &json!({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen", "params": {"_meta": meta,
                "notifications": {"resourceSubscriptions": [GUIDE]}}}),
            &[("mcp-protocol-version", MODERN), ("mcp-method", "subscriptions/listen")],
        )
        .await;
    let updated = listen_until(&mut stream, |m| {
        m["method"] == "notifications/resources/updated"
    })
    .await;
    assert_eq!(updated["params"]["uri"], GUIDE);

    let mut bystander_heard = Vec::new();
    while let Ok(next) = unheard.try_recv() {
        bystander_heard.push(next);
    }
    assert!(
        !bystander_heard
            .iter()
            .any(|h| matches!(h, Heard::Updated(_))),
        "a session that did not subscribe hears nothing: {bystander_heard:?}"
    );
    subscriber.cancel().await.unwrap();
}

#[tokio::test]
async fn an_upstreams_prompts_need_their_scopes() {
    let Some(app) = spawn(|c| c.auth.mode = AuthMode::Required).await else {
        return;
    };
    let tokens = teamgate::auth::PersonalTokens::new(app.store.clone(), Duration::from_secs(30));
    let simple = tokens
        .create(
            "alice",
            "test",
            vec!["prompts:everything_simple-prompt".into()],
            None,
        )
        .await
        .unwrap()
        .token;
    let request = |id: i64, method: &str, params: Value| {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "teamgate-tests", "version": "1"},
        });
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let names = loop {
        let list = request(1, "prompts/list", json!({}));
        let headers = [
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "prompts/list"),
        ];
        let (_, text) = send(&app, &simple, &list, &headers).await;
        let names: Vec<String> = reply(&text)["result"]["prompts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str().map(str::to_owned))
            .collect();
        if !names.is_empty() || tokio::time::Instant::now() > deadline {
            break names;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        names,
        ["everything_simple-prompt"],
        "only what the scopes allow"
    );
    let get = |id, name: &str| {
        request(
            id,
            "prompts/get",
            json!({"name": name, "arguments": {"city": "Oslo"}}),
        )
    };
    let headers = |name: &'static str| {
        [
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "prompts/get"),
            ("mcp-name", name),
        ]
    };
    let (status, _) = send(
        &app,
        &simple,
        &get(2, "everything_args-prompt"),
        &headers("everything_args-prompt"),
    )
    .await;
    assert_eq!(status, 403, "a prompt outside the caller's scopes");
    let (status, text) = send(
        &app,
        &simple,
        &get(3, "everything_simple-prompt"),
        &headers("everything_simple-prompt"),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert!(reply(&text)["result"]["messages"].is_array(), "{text}");
}
