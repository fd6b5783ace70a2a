//! An upstream's requests to its client (issue 26): the everything server
//! asks for elicitation and roots while a member's call runs, and the
//! member's own client answers, through a 2025 session (a real request) or
//! on 2026-07-28 (`input_required`, then the retry); asked outside any call,
//! or while two members' calls make it ambiguous, nobody is asked.

#![allow(deprecated)] // Roots: deprecated in 2026-07-28, still what 2025-era upstreams ask.

use std::time::Duration;

use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
        ListRootsResult,
    },
    service::{RequestContext, RunningService},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use teamgate::config::AuthMode;
use tokio::sync::mpsc;

use crate::{
    helpers::{TestApp, spawn_app_with},
    sec_authz::{reply, send},
    upstreams::{everything, upstream},
};

const TOOLS: [&str; 4] = [
    "echo",
    "trigger-elicitation-request",
    "get-roots-list",
    "trigger-long-running-operation",
];

/// A member's client that declares elicitation and roots, answers both as
/// `name`, and records every request it was asked.
struct Member {
    name: &'static str,
    asked: mpsc::UnboundedSender<String>,
}

impl ClientHandler for Member {
    fn get_info(&self) -> ClientConfig {
        serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}}, "roots": {}},
            "clientInfo": {"name": self.name, "version": "1"},
        }))
        .unwrap()
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let _ = self.asked.send("elicitation".into());
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": self.name})))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, rmcp::ErrorData> {
        let _ = self.asked.send("roots".into());
        Ok(serde_json::from_value(
            json!({"roots": [{"uri": format!("file:///home/{}", self.name)}]}),
        )
        .unwrap())
    }
}

type Session = RunningService<RoleClient, Member>;

async fn member(
    app: &TestApp,
    name: &'static str,
) -> (Session, mpsc::UnboundedReceiver<String>, String) {
    let tokens = teamgate::auth::PersonalTokens::new(app.store.clone(), Duration::from_secs(30));
    let token = tokens
        .create(name, "test", vec!["*".into()], None)
        .await
        .unwrap()
        .token;
    let (asked, heard) = mpsc::unbounded_channel();
    let config =
        StreamableHttpClientTransportConfig::with_uri(app.url.as_str()).auth_header(&token);
    let session = Member { name, asked }
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("the member connects");
    (session, heard, token)
}

async fn spawn() -> Option<TestApp> {
    let (node, script) = everything()?;
    Some(
        spawn_app_with(move |c| {
            c.auth.mode = AuthMode::Required;
            c.upstreams = vec![upstream(
                &node,
                &script,
                json!({"tools": {"include": TOOLS}}),
            )];
        })
        .await,
    )
}

/// Waits (bounded) until the member sees the upstream's tool `name`.
async fn until_listed(session: &Session, name: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let tools = session.list_all_tools().await.unwrap();
        if tools.iter().any(|t| t.name == name) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{name} listed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn call(session: &Session, name: &str, arguments: Value) -> (bool, String) {
    let Value::Object(arguments) = arguments else {
        unreachable!()
    };
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    let result = session.call_tool(params).await.expect("a tool result");
    let texts: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    (result.is_error == Some(true), texts.join("\n"))
}

fn drained(heard: &mut mpsc::UnboundedReceiver<String>) -> Vec<String> {
    std::iter::from_fn(|| heard.try_recv().ok()).collect()
}

#[tokio::test]
async fn a_legacy_member_answers_its_calls_upstream_requests_and_no_one_elses() {
    let Some(app) = spawn().await else { return };
    // Connected before the upstream's start-up `roots/list`, which runs in no call.
    let (alice, mut alice_heard, _) = member(&app, "alice").await;
    let (bob, mut bob_heard, _) = member(&app, "bob").await;
    until_listed(&alice, "everything_get-roots-list").await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        drained(&mut alice_heard),
        Vec::<String>::new(),
        "outside any call"
    );
    assert_eq!(
        drained(&mut bob_heard),
        Vec::<String>::new(),
        "outside any call"
    );

    let (error, text) = call(&alice, "everything_trigger-elicitation-request", json!({})).await;
    assert!(!error && text.contains(r#""name": "alice""#), "{text}");
    assert_eq!(drained(&mut alice_heard), ["elicitation"]);
    // The start-up request was refused, so the upstream asks again, in the call.
    let (error, text) = call(&alice, "everything_get-roots-list", json!({})).await;
    assert!(!error && text.contains("file:///home/alice"), "{text}");
    assert_eq!(drained(&mut alice_heard), ["roots"]);
    assert_eq!(drained(&mut bob_heard), Vec::<String>::new());

    // stdio says not which call a request serves: with alice's and bob's
    // calls both running, bob's elicitation is ambiguous and refused.
    let long = call(
        &alice,
        "everything_trigger-long-running-operation",
        json!({"duration": 4, "steps": 4}),
    );
    let asking = async {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        call(&bob, "everything_trigger-elicitation-request", json!({})).await
    };
    let ((long_error, _), (error, text)) = tokio::join!(long, asking);
    assert!(!long_error);
    assert!(
        !text.contains("alice") && !text.contains(r#""name": "bob""#),
        "{error} {text}"
    );
    assert!(text.contains("only within a member's call"), "{text}");
    assert_eq!(
        drained(&mut alice_heard),
        Vec::<String>::new(),
        "alice never asked"
    );
    assert_eq!(
        drained(&mut bob_heard),
        Vec::<String>::new(),
        "refused, not asked"
    );
}

fn modern(id: i64, name: &str, extra: Value) -> Value {
    let mut params = json!({"name": name, "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "teamgate-tests", "version": "1"},
    }});
    if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
        params.extend(extra);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

#[tokio::test]
async fn a_2026_member_gets_input_required_and_completes_the_upstream_call() {
    let Some(app) = spawn().await else { return };
    let (alice, _, token) = member(&app, "alice").await;
    let (_, _, other) = member(&app, "mallory").await;
    let tool = "everything_trigger-elicitation-request";
    until_listed(&alice, tool).await;
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", tool),
    ];
    let (status, text) = send(&app, &token, &modern(1, tool, json!({})), &headers).await;
    assert_eq!(status, 200, "{text}");
    let first = &reply(&text)["result"];
    assert_eq!(first["resultType"], "input_required", "{first}");
    let (key, request) = first["inputRequests"]
        .as_object()
        .and_then(|r| r.iter().next())
        .expect("one input request");
    assert_eq!(request["method"], "elicitation/create");
    assert!(request["params"]["requestedSchema"]["properties"]["name"].is_object());
    let state = first["requestState"].as_str().expect("sealed state");
    let answer = json!({"inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": state});

    // Another member cannot resume alice's call with her state.
    let (_, text) = send(&app, &other, &modern(2, tool, answer.clone()), &headers).await;
    assert_eq!(reply(&text)["error"]["code"], -32602, "{text}");

    let (_, text) = send(&app, &token, &modern(3, tool, answer.clone()), &headers).await;
    let done = &reply(&text)["result"];
    let all = done["content"].to_string();
    assert!(all.contains("Ada") && done["isError"] != true, "{done}");
    // The same state twice: the call it named is over.
    let (_, text) = send(&app, &token, &modern(4, tool, answer), &headers).await;
    assert_eq!(reply(&text)["error"]["code"], -32602, "{text}");
}
