//! Authorization decided on what the engine acts on (issue 30): scopes on
//! `resources/read` whatever else the params carry, every method that names
//! a capability checked with forbidden and unknown answered alike, bad
//! params answered with their id, identities of different issuers kept
//! apart, and revocation ending requests and open streams in time.

use std::time::Duration;

use serde_json::{Value, json};
use teamgate::{auth::PersonalTokens, config::AuthMode};

mod identity;
mod methods;
mod quota;
mod revocation;

use crate::{
    docs_source::docs,
    helpers::{MODERN, TestApp, audit_until, spawn_app_with},
};

/// The text of the restricted document: it must never reach a caller
/// without `docs:read`.
const SECRET_TEXT: &str = "ROTATE-THE-KEYS-AT-MIDNIGHT";

/// A server with authentication on, a docs source that needs `docs:read`,
/// a prompt that needs `ops:oncall` and a public one completing from the
/// restricted source.
pub(crate) struct Fixture {
    pub app: TestApp,
    _docs: tempfile::TempDir,
    /// `docs://runbooks/restricted.md`.
    pub restricted: String,
    /// The same document by its older URI, which still reads:
    /// `docs://runbooks/<folder>/restricted.md`.
    pub restricted_old: String,
}

impl Fixture {
    pub(crate) async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    pub(crate) async fn start_with(adjust: impl FnOnce(&mut teamgate::config::Config)) -> Self {
        // Not a hidden folder (tempdir's default `.tmp...`): hidden paths are skipped.
        let dir = tempfile::Builder::new()
            .prefix("runbooks")
            .tempdir()
            .unwrap();
        std::fs::write(
            dir.path().join("restricted.md"),
            format!("# Key rotation\n\n{SECRET_TEXT}\n"),
        )
        .unwrap();
        let folder = dir
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut runbooks = docs("runbooks", dir.path(), false);
        runbooks.scopes = vec!["docs:read".into()];
        let oncall: teamgate::config::PromptConfig = serde_json::from_value(json!({
            "name": "oncall", "template": "Page {{service}}", "scopes": ["ops:oncall"],
            "arguments": [{"name": "service", "values": ["payments-ledger", "payroll"]}]}))
        .unwrap();
        let lookup: teamgate::config::PromptConfig = serde_json::from_value(json!({
            "name": "lookup", "template": "Explain {{path}}",
            "arguments": [{"name": "path", "complete_from": "docs:runbooks"}]}))
        .unwrap();
        let app = spawn_app_with(move |c| {
            c.auth.mode = AuthMode::Required;
            c.sources.docs.push(runbooks);
            c.prompts = vec![oncall, lookup];
            adjust(c);
        })
        .await;
        Self {
            app,
            _docs: dir,
            restricted: "docs://runbooks/restricted.md".into(),
            restricted_old: format!("docs://runbooks/{folder}/restricted.md"),
        }
    }

    /// A personal token of `user` with `scopes`.
    pub(crate) async fn token(&self, user: &str, scopes: &[&str]) -> String {
        let tokens = PersonalTokens::new(self.app.store.clone(), Duration::from_secs(30));
        let scopes = scopes.iter().map(|s| s.to_string()).collect();
        tokens
            .create(user, "test", scopes, None)
            .await
            .unwrap()
            .token
    }
}

/// POSTs `body` with `headers` and the bearer `token`; the status and the
/// body's text (a JSON body, or the SSE events).
pub(crate) async fn send(
    app: &TestApp,
    token: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let bearer = format!("Bearer {token}");
    let mut all = vec![("authorization", bearer.as_str())];
    all.extend_from_slice(headers);
    let response = app.post(body, &all).await;
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// The last JSON-RPC message of a reply's text (JSON or SSE).
pub(crate) fn reply(text: &str) -> Value {
    if let Ok(value) = serde_json::from_str(text) {
        return value;
    }
    text.replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(|event| {
            let data: String = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect();
            serde_json::from_str(&data).ok()
        })
        .last()
        .unwrap_or_else(|| panic!("no JSON-RPC message in {text:?}"))
}

/// A `subscriptions/listen` stream of the bearer of `token` asking for
/// `notifications`, with the `extra` header if any.
pub(crate) async fn listen(
    app: &TestApp,
    token: &str,
    notifications: Value,
    extra: Option<(&str, &str)>,
) -> reqwest::Response {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": notifications}});
    let mut headers = vec![
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "subscriptions/listen"),
    ];
    headers.extend(extra);
    let bearer = format!("Bearer {token}");
    headers.push(("authorization", &bearer));
    let stream = app.post(&body, &headers).await;
    assert_eq!(stream.status(), 200);
    stream
}

/// A 2025-11-25 session of the bearer of `token`.
pub(crate) async fn open_session(app: &TestApp, token: &str) -> String {
    let body = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let bearer = format!("Bearer {token}");
    let response = app.post(&body, &[("authorization", &bearer)]).await;
    assert_eq!(response.status(), 200, "initialize");
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let (status, _) = send(app, token, &initialized, &headers).await;
    assert_eq!(status, 202);
    session
}

/// A request in `session`: status and last message.
pub(crate) async fn legacy(
    app: &TestApp,
    token: &str,
    session: &str,
    id: i64,
    method: &str,
    params: Value,
) -> (u16, Value) {
    let body = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let (status, text) = send(app, token, &body, &headers).await;
    (status, reply(&text))
}

/// A 2026-07-28 request, `Mcp-Name` set to `name` when given: status and text.
pub(crate) async fn modern(
    app: &TestApp,
    token: &str,
    id: i64,
    method: &str,
    mut params: Value,
    name: Option<&str>,
) -> (u16, String) {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}});
    let body = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
    let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    send(app, token, &body, &headers).await
}

#[tokio::test]
async fn resources_read_is_decided_on_the_uri_whatever_else_the_params_carry() {
    let fx = Fixture::start().await;
    let app = &fx.app;
    let reader = fx.token("rita", &["resources:read"]).await;
    let session = open_session(app, &reader).await;
    let uri = fx.restricted.as_str();
    for (id, params) in [
        (2, json!({"uri": uri})),
        (7, json!({"uri": fx.restricted_old, "name": "x"})),
        (3, json!({"uri": uri, "name": "x"})),
        (4, json!({"uri": uri, "name": "teamgate_info"})),
    ] {
        let (status, message) =
            legacy(app, &reader, &session, id, "resources/read", params.clone()).await;
        assert!(
            !message.to_string().contains(SECRET_TEXT),
            "{params}: {message}"
        );
        assert_eq!(status, 403, "{params}: {message}");
        assert_eq!(message["id"], id);
        assert_eq!(message["error"]["code"], -31003, "{message}");
    }
    // 2026-07-28, with Mcp-Name naming the URI or anything else.
    for (id, name) in [(5, uri), (6, "x")] {
        let params = json!({"uri": uri, "name": name});
        let (status, text) = modern(app, &reader, id, "resources/read", params, Some(name)).await;
        assert!(!text.contains(SECRET_TEXT), "Mcp-Name {name}: {text}");
        assert!(
            status == 403 || status == 400,
            "Mcp-Name {name}: {status} {text}"
        );
        if name == uri {
            assert_eq!(status, 403, "{text}");
        }
    }
    // Counted as authorization failures, as refusals before the engine were.
    let metrics = app
        .client
        .get(format!("{}/metrics", app.base()))
        .send()
        .await
        .unwrap();
    let metrics = metrics.text().await.unwrap();
    let refused: f64 = metrics
        .lines()
        .find(|l| l.starts_with("teamgate_auth_failures_total{") && l.contains("status=\"403\""))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(refused >= 4.0, "{metrics}");
    // What the scope refused is audited as refused, never as read.
    let records = audit_until(&app.store, Some("rita"), |r| r.len() >= 4).await;
    assert!(records.len() >= 4, "{records:?}");
    assert!(
        records.iter().all(|r| r.outcome.starts_with("denied")),
        "{records:?}"
    );

    // With the source's scope the same request reads the document.
    let docs_reader = fx.token("dora", &["docs:read"]).await;
    let own = open_session(app, &docs_reader).await;
    let params = json!({"uri": uri, "name": "x"});
    let (status, message) = legacy(app, &docs_reader, &own, 7, "resources/read", params).await;
    assert_eq!(status, 200);
    assert!(message.to_string().contains(SECRET_TEXT), "{message}");
}

#[tokio::test]
async fn invalid_params_are_answered_with_the_request_id() {
    let fx = Fixture::start().await;
    let app = &fx.app;
    let admin = fx.token("ada", &["*"]).await;
    let session = open_session(app, &admin).await;
    let bad = json!({"name": 42, "arguments": "x"});
    let (status, message) = legacy(app, &admin, &session, 7, "tools/call", bad.clone()).await;
    assert_eq!(message["id"], 7, "{status} {message}");
    assert_eq!(message["error"]["code"], -32602, "{status} {message}");
    // The same on 2026-07-28, and for params that are not even an object.
    let (status, text) = modern(app, &admin, 8, "tools/call", bad, None).await;
    let message = reply(&text);
    assert_eq!(message["id"], 8, "{status} {text}");
    assert_eq!(message["error"]["code"], -32602, "{status} {text}");
    let body = json!({"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri": 5}});
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let (status, text) = send(app, &admin, &body, &headers).await;
    let message = reply(&text);
    assert_eq!(message["id"], 9, "{status} {text}");
    assert_eq!(message["error"]["code"], -32602, "{status} {text}");
}
