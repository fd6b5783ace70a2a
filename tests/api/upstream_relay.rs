//! An upstream's requests to its client (issue 26): the everything server
//! asks for elicitation, sampling and roots while a member's call runs, and the
//! member's own client answers, through a 2025 session (a real request) or
//! on 2026-07-28 (`input_required`, then the retry); asked outside any call,
//! or while two members' calls make it ambiguous, nobody is asked.

#![allow(deprecated)] // Sampling and roots: deprecated in 2026-07-28, still what 2025-era upstreams ask.

use std::{sync::Arc, time::Duration};

use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
        ElicitRequestParams, ElicitResult, ElicitationAction, ListRootsResult,
    },
    service::{RequestContext, RunningService},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use teamgate::config::AuthMode;
use tokio::sync::{Barrier, mpsc};

use crate::{
    helpers::{TestApp, spawn_app_with},
    sdk,
    sec_authz::{reply, send},
    upstreams::{everything, upstream},
};

const TOOLS: [&str; 5] = [
    "echo",
    "trigger-elicitation-request",
    "trigger-sampling-request",
    "get-roots-list",
    "trigger-long-running-operation",
];

/// A member's client that declares elicitation and roots, answers both as
/// `name`, and records every request it was asked.
struct Member {
    name: &'static str,
    asked: mpsc::UnboundedSender<String>,
    /// When set, an elicitation is answered only once every member holding
    /// it is being asked too: their requests were in flight together.
    together: Option<Arc<Barrier>>,
}

impl ClientHandler for Member {
    fn get_info(&self) -> ClientConfig {
        serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}}, "roots": {}, "sampling": {}},
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
        if let Some(together) = &self.together
            && tokio::time::timeout(Duration::from_secs(10), together.wait())
                .await
                .is_err()
        {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": self.name})))
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        let _ = self.asked.send("sampling".into());
        let text = format!("sampled by {}", self.name);
        Ok(
            serde_json::from_value(json!({"role": "assistant", "model": "test",
            "content": {"type": "text", "text": text}}))
            .unwrap(),
        )
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

async fn token(app: &TestApp, name: &str) -> String {
    let tokens = teamgate::auth::PersonalTokens::new(app.store.clone(), Duration::from_secs(30));
    let created = tokens.create(name, "test", vec!["*".into()], None);
    created.await.unwrap().token
}

async fn member(
    app: &TestApp,
    name: &'static str,
) -> (Session, mpsc::UnboundedReceiver<String>, String) {
    member_with(app, name, None).await
}

async fn member_with(
    app: &TestApp,
    name: &'static str,
    together: Option<Arc<Barrier>>,
) -> (Session, mpsc::UnboundedReceiver<String>, String) {
    let token = token(app, name).await;
    let (asked, heard) = mpsc::unbounded_channel();
    let config =
        StreamableHttpClientTransportConfig::with_uri(app.url.as_str()).auth_header(&token);
    let member = Member {
        name,
        asked,
        together,
    };
    let session = member
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
    let sample = json!({"prompt": "hello", "maxTokens": 20});
    let (error, text) = call(&alice, "everything_trigger-sampling-request", sample).await;
    assert!(!error && text.contains("sampled by alice"), "{text}");
    assert_eq!(drained(&mut alice_heard), ["sampling"]);
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

    // A client that did not declare elicitation is not asked: the upstream hears -32601.
    let carol = token(&app, "carol").await;
    let (carol, _) = sdk::connect_as(&app.url, Some(&carol), None).await;
    let result = sdk::call(&carol, "everything_trigger-elicitation-request", json!({})).await;
    assert!(
        sdk::text(&result).contains("did not declare the capability"),
        "{result}"
    );
    assert_eq!(drained(&mut alice_heard), Vec::<String>::new());
    assert_eq!(drained(&mut bob_heard), Vec::<String>::new());
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

/// The everything server over Streamable HTTP on a free loopback port,
/// stopped when dropped.
async fn everything_over_http() -> Option<(tokio::process::Child, String)> {
    let (node, script) = everything()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(node)
        .args([script.as_str(), "streamableHttp"])
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the everything server starts");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(tokio::time::Instant::now() < deadline, "it listens");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Some((child, format!("http://127.0.0.1:{port}/")))
}

#[tokio::test]
async fn over_streamable_http_each_members_call_gets_its_own_upstream_requests() {
    let Some((_server, base)) = everything_over_http().await else {
        return;
    };
    let url = format!("{base}mcp");
    let app = spawn_app_with(move |c| {
        c.auth.mode = AuthMode::Required;
        c.tools.http_allowlist = vec![base];
        c.upstreams = vec![
            serde_json::from_value(json!({"name": "everything", "url": url,
                "tools": {"include": TOOLS}}))
            .unwrap(),
        ];
    })
    .await;
    let together = Some(Arc::new(Barrier::new(2)));
    let (alice, mut alice_heard, _) = member_with(&app, "alice", together.clone()).await;
    let (bob, mut bob_heard, _) = member_with(&app, "bob", together).await;
    let tool = "everything_trigger-elicitation-request";
    until_listed(&alice, tool).await;
    // Two members' calls at once: each request names its call (SEP-2260),
    // so each goes to its own member where stdio would be ambiguous.
    let ((a_error, a_text), (b_error, b_text)) =
        tokio::join!(call(&alice, tool, json!({})), call(&bob, tool, json!({})));
    assert!(
        !a_error && a_text.contains(r#""name": "alice""#),
        "{a_text}"
    );
    assert!(!b_error && b_text.contains(r#""name": "bob""#), "{b_text}");
    assert_eq!(drained(&mut alice_heard), ["elicitation"]);
    assert_eq!(drained(&mut bob_heard), ["elicitation"]);
}
