//! `[[sources.openapi]]` (issue 62 part 1): a real FastAPI service that
//! publishes its own OpenAPI document, imported by the real binary and
//! called through the official Rust, TypeScript and Python SDK clients;
//! GitHub's REST description
//! (`@octokit/openapi` from npm) loaded with an include filter.

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    time::Instant,
};

use serde_json::{Value, json};
use teamgate::config::OpenApiSourceConfig;

use crate::{
    binary,
    helpers::repo_path,
    sdk::{self, call, text},
    sec44_upreg::python,
};

/// The FastAPI service (tests/interop/openapi_app.py), killed when dropped.
pub(crate) struct Service {
    child: Child,
    pub(crate) base: String,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn service(python: &str) -> Service {
    let mut child = Command::new(python)
        .arg(repo_path("tests/interop/openapi_app.py"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("the FastAPI service starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the service said {line:?}"))
        .to_owned();
    Service { child, base }
}

#[tokio::test]
async fn a_services_own_document_becomes_tools_that_call_it() {
    let Some(python) = python() else { return };
    let service = service(&python);
    // teamgate's own client: it installs the TLS provider reqwest needs.
    let document = (teamgate::outbound::client())
        .get(format!("{}/openapi.json", service.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tracker.json"), document).unwrap();
    let config = dir.path().join("teamgate.toml");
    // `spec` is relative to this file; `base_url` is the document's server.
    // The second source reads the document from the service itself.
    let base = &service.base;
    std::fs::write(
        &config,
        format!(
            r#"
[tools]
http_allowlist = ["{base}/openapi.json"]
[[sources.openapi]]
name = "live"
spec = "{base}/openapi.json"
include = ["get_issue"]
[[sources.openapi]]
name = "tracker"
spec = "tracker.json"
include = ["tag:issues", "whoami"]
exclude = ["delete_issue"]
headers = {{ Authorization = "Bearer ${{TEAMGATE_TEST_TRACKER_TOKEN}}" }}
[sources.openapi.tools.create_issue]
confirm = false
description = "Opens an issue in the team's tracker"
"#
        ),
    )
    .unwrap();
    let secret = "tracker-secret-5c1e9a7f3b";
    let served = binary::serve(&config, &[("TEAMGATE_TEST_TRACKER_TOKEN", secret)]);
    let token = served.token("alice", &[]);
    let (client, _) = sdk::connect_as(&served.url, Some(&token), None).await;

    let tools = client.list_all_tools().await.unwrap();
    let tool = |name: &str| tools.iter().find(|t| t.name == name);
    for name in ["list_issues", "get_issue", "create_issue", "whoami"] {
        assert!(tool(&format!("tracker_{name}")).is_some(), "{name} offered");
    }
    assert!(tool("tracker_delete_issue").is_none(), "excluded");
    assert!(
        tool("live_get_issue").is_some(),
        "the document fetched from its URL"
    );
    assert!(tool("live_list_issues").is_none(), "not included");
    let get = serde_json::to_value(tool("tracker_get_issue").unwrap()).unwrap();
    assert_eq!(get["inputSchema"]["required"], json!(["issue_id"]));
    assert_eq!(get["annotations"]["readOnlyHint"], true);
    assert_eq!(get["outputSchema"]["properties"]["title"]["type"], "string");
    let create = serde_json::to_value(tool("tracker_create_issue").unwrap()).unwrap();
    assert_eq!(
        create["description"],
        "Opens an issue in the team's tracker"
    );
    assert_eq!(create["annotations"]["readOnlyHint"], false);
    assert_eq!(
        create["inputSchema"]["properties"]["body"]["properties"]["title"]["type"],
        "string"
    );

    // Query parameters: given ones sent, absent ones left out.
    let open = call(&client, "tracker_list_issues", json!({"state": "open"})).await;
    assert!(text(&open).contains("Login fails on Safari"), "{open}");
    assert!(!text(&open).contains("Dark mode"), "{open}");
    // A path parameter and the JSON response as structured content.
    let two = call(&client, "tracker_get_issue", json!({"issue_id": 2})).await;
    assert_eq!(two["structuredContent"]["title"], "Dark mode", "{two}");
    // A JSON body.
    let new_issue = json!({"body": {"title": "Export to CSV", "body": "for the audit"}});
    let created = call(&client, "tracker_create_issue", new_issue).await;
    assert_eq!(created["structuredContent"]["id"], 3, "{created}");
    let three = call(&client, "tracker_get_issue", json!({"issue_id": 3})).await;
    assert_eq!(three["structuredContent"]["title"], "Export to CSV");
    let live = call(&client, "live_get_issue", json!({"issue_id": 1})).await;
    assert_eq!(live["structuredContent"]["state"], "open", "{live}");
    // A document URL outside the allowlist is refused before any fetch.
    let outside: OpenApiSourceConfig = serde_json::from_value(json!({
        "name": "outside", "spec": format!("{base}/openapi.json"),
    }))
    .unwrap();
    let refused = teamgate::providers::openapi::tools(&outside, &[]).unwrap_err();
    assert!(
        refused.to_string().contains("http_allowlist"),
        "{refused:#}"
    );
    // The service's error is the tool's error.
    let missing = call(&client, "tracker_get_issue", json!({"issue_id": 99})).await;
    assert_eq!(missing["isError"], true, "{missing}");
    assert!(text(&missing).contains("404"), "{missing}");
    // The configured header reached the service; the secret never comes back.
    let who = call(&client, "tracker_whoami", json!({})).await;
    assert!(!who.to_string().contains(secret), "{who}");
    assert!(who.to_string().contains("Bearer [redacted]"), "{who}");
    client.cancel().await.unwrap();

    // The same tools through the TypeScript and Python SDK clients.
    let dark = json!({"issue_id": 2});
    let through_ts = ts_call(&served.url, &token, "tracker_get_issue", &dark);
    assert_eq!(
        through_ts["structuredContent"]["title"], "Dark mode",
        "{through_ts}"
    );
    let body = json!({"body": {"title": "From Python", "body": "via the SDK"}});
    let through_py = py_call(&python, &served.url, &token, "tracker_create_issue", &body);
    assert_eq!(through_py["structured"]["id"], 4, "{through_py}");
    let back = ts_call(
        &served.url,
        &token,
        "tracker_get_issue",
        &json!({"issue_id": 4}),
    );
    assert_eq!(back["structuredContent"]["title"], "From Python", "{back}");
}

/// One tool call through the official TypeScript SDK client: its result as JSON.
fn ts_call(url: &str, token: &str, tool: &str, arguments: &Value) -> Value {
    let sdk = repo_path(".cache/ts-client/node_modules/@modelcontextprotocol/sdk/dist/esm");
    let script = format!(
        r#"
import {{ Client }} from "{sdk}/client/index.js";
import {{ StreamableHTTPClientTransport }} from "{sdk}/client/streamableHttp.js";
const headers = {{ Authorization: "Bearer {token}" }};
const client = new Client({{ name: "openapi-test", version: "1" }});
await client.connect(new StreamableHTTPClientTransport(new URL("{url}"), {{ requestInit: {{ headers }} }}));
const result = await client.callTool({{ name: "{tool}", arguments: {arguments} }});
console.log(JSON.stringify(result));
await client.close();
"#,
        sdk = sdk.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("call.mjs");
    std::fs::write(&file, script).unwrap();
    let output = Command::new(repo_path(".cache/bin/node22"))
        .arg(&file)
        .output()
        .expect("node runs");
    last_json(&output)
}

/// One tool call through the official Python SDK client (mcp 2.3).
fn py_call(python: &str, url: &str, token: &str, tool: &str, arguments: &Value) -> Value {
    let script = format!(
        r#"
import json, anyio, httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
async def main():
    async with httpx2.AsyncClient(headers={{"Authorization": "Bearer {token}"}}, timeout=30) as http:
        async with Client(streamable_http_client("{url}", http_client=http)) as client:
            result = await client.call_tool("{tool}", json.loads('{arguments}'))
            print(json.dumps({{"isError": result.is_error, "structured": result.structured_content}}))
anyio.run(main)
"#
    );
    let output = Command::new(python)
        .args(["-c", &script])
        .output()
        .expect("python runs");
    last_json(&output)
}

fn last_json(output: &std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|_| {
        let stderr = String::from_utf8_lossy(&output.stderr);
        panic!("no JSON result: {stdout}{stderr}")
    })
}

#[test]
fn githubs_rest_description_loads_with_a_filter() {
    let spec = repo_path(
        ".cache/openapi-specs/node_modules/@octokit/openapi/generated/api.github.com.json",
    );
    if !spec.exists() {
        assert!(std::env::var_os("CI").is_none(), "CI installs the specs");
        eprintln!("SKIP: @octokit/openapi is not installed (scripts/install-test-deps.sh)");
        return;
    }
    let source: OpenApiSourceConfig = serde_json::from_value(json!({
        "name": "github",
        "spec": spec.display().to_string(),
        "include": ["issues/get", "issues/create", "issues/list-for-repo", "tag:meta"],
        "exclude": ["meta/get-octocat"],
    }))
    .unwrap();
    let started = Instant::now();
    let (tools, base) = teamgate::providers::openapi::tools(&source, &[]).unwrap();
    let took = started.elapsed();
    assert_eq!(base, "https://api.github.com");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"github_issues_get"), "{names:?}");
    assert!(names.contains(&"github_issues_list-for-repo"), "{names:?}");
    assert!(!names.contains(&"github_meta_get-octocat"), "{names:?}");
    assert!(names.len() < 20, "a handful: {names:?}");
    let get = tools
        .iter()
        .find(|t| t.name == "github_issues_get")
        .unwrap();
    assert_eq!(
        get.url,
        "https://api.github.com/repos/{owner}/{repo}/issues/{issue_number}"
    );
    let create = tools
        .iter()
        .find(|t| t.name == "github_issues_create")
        .unwrap();
    assert_eq!(create.method, "POST");
    assert!(create.input_schema["properties"]["body"]["properties"]["title"].is_object());
    // Every schema is valid JSON Schema.
    for tool in &tools {
        let input = Value::Object(tool.input_schema.clone());
        jsonschema::validator_for(&input).unwrap_or_else(|e| panic!("{}: {e}", tool.name));
        if let Some(output) = &tool.output_schema {
            let output = Value::Object(output.clone());
            jsonschema::validator_for(&output).unwrap_or_else(|e| panic!("{}: {e}", tool.name));
        }
    }
    // A debug build; the release figure is in BENCHMARKS.md (bench/openapi.sh).
    assert!(took.as_secs() < 20, "loading took {took:?}");
}

#[test]
fn the_shipped_example_reads_yaml_renames_arguments_and_cuts_recursion() {
    let file = repo_path("config/examples/openapi.toml");
    let config = teamgate::config::ConfigSources::files_only(vec![file])
        .load()
        .unwrap();
    let (tools, base) =
        teamgate::providers::openapi::tools(&config.sources.openapi[0], &[]).unwrap();
    assert_eq!(base, "https://tracker.example.com/api");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    names.sort();
    let expected = [
        "tracker_createIssue",
        "tracker_getIssue",
        "tracker_listIssues",
        "tracker_whoami",
    ];
    assert_eq!(names, expected);
    let list = tools
        .iter()
        .find(|t| t.name == "tracker_listIssues")
        .unwrap();
    // `per-page` is no argument name a template can hold: the argument is
    // `per_page`, the query key stays as the document spells it.
    assert_eq!(list.query["per-page"], "{per_page}");
    assert!(list.input_schema["properties"]["per_page"].is_object());
    assert!(
        list.output_schema.is_none(),
        "an array is no structuredContent"
    );
    assert_eq!(list.cache_ttl, Some(std::time::Duration::from_secs(30)));
    let create = tools
        .iter()
        .find(|t| t.name == "tracker_createIssue")
        .unwrap();
    assert!(create.confirm);
    assert_eq!(create.scopes, ["tracker:write"]);
    assert_eq!(create.input_schema["required"], json!(["body"]));
    let parent = &create.output_schema.as_ref().unwrap()["properties"]["parent"];
    assert!(
        parent["description"]
            .as_str()
            .unwrap()
            .contains("recursive"),
        "{parent}"
    );
    let get = tools.iter().find(|t| t.name == "tracker_getIssue").unwrap();
    assert_eq!(get.url, "https://tracker.example.com/api/issues/{id}");
    assert_eq!(get.scopes, ["tracker"]);
}

#[tokio::test]
async fn the_shipped_example_names_the_secret_it_needs() {
    let file = repo_path("config/examples/openapi.toml");
    let config = teamgate::config::ConfigSources::files_only(vec![file])
        .load()
        .unwrap();
    let error = crate::helpers::build_app(config)
        .await
        .err()
        .expect("needs TRACKER_TOKEN");
    assert!(format!("{error:#}").contains("TRACKER_TOKEN"), "{error:#}");
}
