//! Issue 66 part 1: MCP Apps (SEP-1865) through teamgate. An upstream on
//! the official Python SDK's Apps extension (tests/interop/apps_py.py)
//! offers `show_board` and the app-only `refresh`, both naming the page
//! `ui://board/app.html`; the official TypeScript, Python and Rust SDK
//! clients see the tools' `_meta.ui` unchanged, read the page (its MIME
//! type and CSP) and call the app-only tool; search mode keeps that tool
//! from the model; the page is rendered in headless chromium as a host
//! does, in a sandboxed frame under the CSP it declares (screenshot
//! `target/portal-screenshots/apps-NN-*.png`). teamgate's own command tool
//! names a page of a files source, served with the operator's CSP.

use std::{process::Stdio, time::Duration};

use serde_json::{Value, json};
use teamgate::config::{AuthMode, Discovery, UpstreamConfig};

use crate::{
    helpers::{TestApp, repo_path, spawn_app_with},
    portal_browser::{driver::Chrome, ts_script},
    sdk,
    sec44_upreg::python,
    upstream_oauth::token,
};

const PAGE: &str = "ui://board/app.html";

fn board(python: &str) -> UpstreamConfig {
    let script = repo_path("tests/interop/apps_py.py").display().to_string();
    let entry = format!("name = \"board\"\ncommand = {python:?}\nargs = [{script:?}]\n");
    toml::from_str(&entry).unwrap()
}

async fn board_app(python: &str, adjust: impl FnOnce(&mut teamgate::config::Config)) -> TestApp {
    let upstream = board(python);
    spawn_app_with(move |c| {
        c.auth.mode = AuthMode::Required;
        c.upstreams = vec![upstream];
        adjust(c);
    })
    .await
}

/// The tools listed once the upstream's are in (bounded).
async fn listed(client: &sdk::Client) -> Vec<Value> {
    for _ in 0..300 {
        let tools = client.list_all_tools().await.unwrap();
        if tools.iter().any(|t| t.name == "board_refresh") {
            return tools
                .iter()
                .map(|t| serde_json::to_value(t).unwrap())
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the upstream's tools were not listed");
}

fn named<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    (tools.iter().find(|t| t["name"] == name)).unwrap_or_else(|| panic!("{name} in {tools:?}"))
}

/// What every client must see: the tools' `_meta.ui`, the page, the call.
fn as_the_extension_says(tools: &[Value], page: &Value, call: &Value, who: &str) {
    let show = &named(tools, "board_show_board")["_meta"]["ui"];
    assert_eq!(show["resourceUri"], PAGE, "{who}: {show}");
    let refresh = &named(tools, "board_refresh")["_meta"]["ui"];
    assert_eq!(refresh["visibility"], json!(["app"]), "{who}: {refresh}");
    let contents = &page["contents"][0];
    assert_eq!(contents["uri"], PAGE, "{who}");
    assert_eq!(contents["mimeType"], "text/html;profile=mcp-app", "{who}");
    assert!(
        contents["text"]
            .as_str()
            .unwrap()
            .contains("<h1>Release board</h1>"),
        "{who}"
    );
    let ui = &contents["_meta"]["ui"];
    assert_eq!(
        ui["csp"]["connectDomains"],
        json!(["https://api.example.com"]),
        "{who}: {ui}"
    );
    assert_eq!(ui["prefersBorder"], true, "{who}");
    assert_eq!(call["content"][0]["text"], "refreshed", "{who}: {call}");
}

/// A client script's `RESULT` line, parsed.
pub(crate) async fn run(mut command: tokio::process::Command) -> Value {
    let child = command
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the client ends in time")
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = (text.lines().find_map(|l| l.strip_prefix("RESULT ")))
        .unwrap_or_else(|| panic!("no RESULT: {text}"));
    serde_json::from_str(line).unwrap()
}

#[tokio::test]
async fn an_upstream_app_reaches_the_ts_python_and_rust_clients_unchanged() {
    let Some(python) = python() else { return };
    let app = board_app(&python, |_| {}).await;
    let member = token(&app, "ann", &["tools:*", "resources:read"]).await;
    let (client, _) = sdk::connect_as(&app.url, Some(&member), None).await;
    let tools = listed(&client).await;
    let extensions = &client.peer_info().unwrap().capabilities.extensions;
    assert!(
        extensions
            .as_ref()
            .is_some_and(|e| e.contains_key("io.modelcontextprotocol/ui")),
        "teamgate advertises the extension: {extensions:?}"
    );
    let page = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(PAGE))
        .await
        .unwrap();
    let call = sdk::call(&client, "board_refresh", json!({})).await;
    as_the_extension_says(&tools, &serde_json::to_value(page).unwrap(), &call, "rust");

    let mut ts = ts_script("ts_apps.mjs");
    ts.args([
        "--url",
        &app.url,
        "--token",
        &member,
        "--app-tool",
        "board_refresh",
    ]);
    let seen = run(ts).await;
    let tools: Vec<Value> = serde_json::from_value(seen["tools"].clone()).unwrap();
    as_the_extension_says(&tools, &seen["page"], &seen["call"], "typescript");
    assert!(seen["server"]["extensions"]["io.modelcontextprotocol/ui"].is_object());

    let mut py = tokio::process::Command::new(&python);
    py.arg(repo_path("tests/interop/py_apps.py"));
    py.args([
        "--url",
        &app.url,
        "--token",
        &member,
        "--app-tool",
        "board_refresh",
    ]);
    let seen = run(py).await;
    let tools: Vec<Value> = serde_json::from_value(seen["tools"].clone()).unwrap();
    as_the_extension_says(&tools, &seen["page"], &seen["call"], "python");

    // The page needs what every resource needs.
    let tools_only = token(&app, "bob", &["tools:*"]).await;
    let (other, _) = sdk::connect_as(&app.url, Some(&tools_only), None).await;
    let refused = other
        .read_resource(rmcp::model::ReadResourceRequestParams::new(PAGE))
        .await;
    assert!(refused.is_err(), "resources:read is needed: {refused:?}");
    app.stop().await;
}

#[tokio::test]
async fn search_mode_keeps_an_app_only_tool_from_the_model() {
    let Some(python) = python() else { return };
    let app = board_app(&python, |c| c.mcp.discovery = Discovery::Search).await;
    let member = token(&app, "ann", &["tools:*"]).await;
    let (client, _) = sdk::connect_as(&app.url, Some(&member), None).await;
    let mut found = Value::Null;
    for _ in 0..300 {
        found = sdk::call(
            &client,
            "search_tools",
            json!({"query": "board", "limit": 20}),
        )
        .await;
        if found["structuredContent"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let names: Vec<&str> = (found["structuredContent"]["tools"]
        .as_array()
        .unwrap()
        .iter())
    .filter_map(|t| t["name"].as_str())
    .collect();
    assert_eq!(names, ["board_show_board"], "{found}");
    let through = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("call_tool").with_arguments(
                json!({"name": "board_refresh"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await;
    let refused = format!("{through:?}");
    assert!(refused.contains("is for its app to call"), "{refused}");
    // Its page calls it directly, with every policy of a call.
    let direct = sdk::call(&client, "board_refresh", json!({})).await;
    assert_eq!(direct["content"][0]["text"], "refreshed", "{direct}");
    app.stop().await;
}

#[tokio::test]
async fn apps_render_the_upstream_page_as_a_host_does() {
    let Some(python) = python() else { return };
    let app = board_app(&python, |_| {}).await;
    let member = token(&app, "ann", &["tools:*", "resources:read"]).await;
    let (client, _) = sdk::connect_as(&app.url, Some(&member), None).await;
    listed(&client).await;
    let page = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(PAGE))
        .await
        .unwrap();
    let page = serde_json::to_value(page).unwrap();
    let contents = &page["contents"][0];
    let html = contents["text"].as_str().unwrap();
    // The host's frame: sandboxed, under a CSP built from the declared domains.
    let connect = contents["_meta"]["ui"]["csp"]["connectDomains"][0]
        .as_str()
        .unwrap();
    let csp = format!(
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
         img-src data:; connect-src {connect}"
    );
    let framed = format!("<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">{html}");
    let host = format!(
        "<!DOCTYPE html><html><body style=\"font:14px system-ui;margin:16px\">\
         <p>Host: <b>board_show_board</b> answered, shown with {PAGE}</p>\
         <iframe sandbox=\"allow-scripts\" style=\"width:600px;height:220px;border:1px solid #888\" \
         srcdoc=\"{}\"></iframe></body></html>",
        framed.replace('&', "&amp;").replace('"', "&quot;")
    );
    let path = std::env::temp_dir().join(format!("teamgate-apps-host-{}.html", std::process::id()));
    std::fs::write(&path, host).unwrap();

    let mut chrome = Chrome::start_with_prefix(&app.base(), "apps-").await;
    chrome
        .client
        .goto(&format!("file://{}", path.display()))
        .await
        .unwrap();
    chrome.wait("//iframe").await;
    chrome.client.enter_frame(0).await.unwrap();
    let mut state = String::new();
    for _ in 0..100 {
        state = chrome.text("//p[@id='state']").await;
        if state == "rendered by the page script" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state, "rendered by the page script");
    assert_eq!(chrome.text("//h1").await, "Release board");
    chrome.client.enter_parent_frame().await.unwrap();
    chrome.shot("board-page-in-host").await;
    let shots = chrome.close().await;
    assert_eq!(shots.len(), 1, "{shots:?}");
    let _ = std::fs::remove_file(path);
    app.stop().await;
}

#[tokio::test]
async fn an_own_tool_names_an_operators_page_with_its_csp() {
    let pages = tempfile::tempdir().unwrap();
    std::fs::write(
        pages.path().join("status.html"),
        "<!DOCTYPE html><h1>Status</h1>",
    )
    .unwrap();
    std::fs::write(pages.path().join("notes.md"), "# not a page").unwrap();
    let root = pages.path().display().to_string();
    let app = spawn_app_with(move |c| {
        c.sources.files = vec![serde_json::from_value(json!({
            "name": "pages", "root": root, "extensions": ["html", "md"],
            "apps": {"csp": {"connect_domains": ["https://status.example.com"]}, "prefers_border": false},
        }))
        .unwrap()];
        c.tools.command = vec![crate::command_tools::command(json!({
            "name": "status", "description": "Shows the status.", "program": "/bin/echo",
            "args": ["all green"],
            "ui": {"resource": "ui://pages/status.html", "visibility": ["model", "app"]},
        }))];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let tools = client.list_all_tools().await.unwrap();
    let status = serde_json::to_value(tools.iter().find(|t| t.name == "status").unwrap()).unwrap();
    assert_eq!(
        status["_meta"]["ui"],
        json!({"resourceUri": "ui://pages/status.html", "visibility": ["model", "app"]})
    );
    let resources = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert!(uris.contains(&"ui://pages/status.html"), "{uris:?}");
    assert!(
        !uris.iter().any(|u| u.ends_with("notes.md")),
        "only pages: {uris:?}"
    );
    let page = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "ui://pages/status.html",
        ))
        .await
        .unwrap();
    let page = serde_json::to_value(page).unwrap();
    let contents = &page["contents"][0];
    assert_eq!(contents["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(contents["text"], "<!DOCTYPE html><h1>Status</h1>");
    assert_eq!(
        contents["_meta"]["ui"],
        json!({"csp": {"connectDomains": ["https://status.example.com"]}, "prefersBorder": false})
    );
    let missing = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "ui://pages/../secret.html",
        ))
        .await;
    assert!(missing.is_err(), "{missing:?}");
    app.stop().await;
}

#[tokio::test]
async fn two_upstreams_with_one_page_uri_each_name_their_own_renamed_page() {
    let Some(python) = python() else { return };
    let mut second = board(&python);
    second.name = "team".into();
    let app = board_app(&python, move |c| c.upstreams.push(second)).await;
    let member = token(&app, "ann", &["tools:*", "resources:read"]).await;
    let (client, _) = sdk::connect_as(&app.url, Some(&member), None).await;
    let mut tools = Vec::new();
    for _ in 0..300 {
        tools = listed(&client).await;
        let both = ["board_show_board", "team_show_board"];
        if both.iter().all(|n| tools.iter().any(|t| t["name"] == *n)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for (tool, upstream) in [("board_show_board", "board"), ("team_show_board", "team")] {
        let uri = named(&tools, tool)["_meta"]["ui"]["resourceUri"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(uri, format!("upstream://{upstream}/{PAGE}"), "{tool}");
        let page = client
            .read_resource(rmcp::model::ReadResourceRequestParams::new(uri.clone()))
            .await
            .unwrap();
        let page = serde_json::to_value(page).unwrap();
        assert_eq!(
            page["contents"][0]["mimeType"], "text/html;profile=mcp-app",
            "{uri}"
        );
    }
    app.stop().await;
}
