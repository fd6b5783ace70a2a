//! `spawn_app()` and the small HTTP vocabulary the tests share.

use std::{net::SocketAddr, path::PathBuf, sync::Arc};

use reqwest::{Response, header::HeaderMap};
use serde_json::{Value, json};
use teamgate::{
    App, Config,
    app::Reloader,
    config::{AuthMode, ConfigSources, DatabaseUrl},
    store::{AuditRecord, Clock, Store, SystemClock},
};
use tokio::sync::oneshot;

pub(crate) const ACCEPT_BOTH: &str = "application/json, text/event-stream";
pub(crate) const MODERN: &str = "2026-07-28";

pub(crate) struct TestApp {
    pub store: Store,
    pub sessions: Arc<teamgate::mcp::Sessions>,
    _dir: tempfile::TempDir,
    pub addr: SocketAddr,
    pub url: String,
    pub client: reqwest::Client,
    shutdown: Option<oneshot::Sender<()>>,
    pub served: tokio::task::JoinHandle<anyhow::Result<()>>,
    /// Hot reload of the running app's capabilities.
    pub reloader: Reloader,
    pub bus: teamgate::registry::ChangeBus,
    /// The server's own personal tokens (a revocation through it is local).
    pub tokens: Arc<teamgate::auth::PersonalTokens>,
}

impl TestApp {
    /// The URL of the app's own SQLite store (operator commands run on it).
    pub(crate) fn store_url(&self) -> String {
        format!("sqlite://{}/teamgate.db", self._dir.path().display())
    }
}

pub(crate) fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// The embedded defaults plus `config/conformance.toml`, like the interop runs.
pub(crate) fn test_config() -> Config {
    ConfigSources::files_only(vec![repo_path("config/conformance.toml")])
        .load()
        .expect("test configuration loads")
}

/// Builds (without serving) an app whose store lives in a temp dir, kept
/// alive by the returned guard.
pub(crate) async fn build_app(mut config: Config) -> anyhow::Result<(App, tempfile::TempDir)> {
    let dir = tempfile::tempdir().expect("temp dir");
    config.store.url = DatabaseUrl::new(format!("sqlite://{}/teamgate.db", dir.path().display()));
    Ok((App::build(config).await?, dir))
}

/// The newest audit records (of `user`, or everyone's) once `ready` holds
/// for them. Records are written in batches after the reply, so a test
/// polls: every 50 ms, for at most 10 s. Returns the last read either way,
/// so the caller's assertion shows what was missing.
pub(crate) async fn audit_until(
    store: &Store,
    user: Option<&str>,
    ready: impl Fn(&[AuditRecord]) -> bool,
) -> Vec<AuditRecord> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let records = store.audit_tail(user, 0, 1000).await.unwrap();
        if ready(&records) || tokio::time::Instant::now() >= deadline {
            return records;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

pub(crate) async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

pub(crate) async fn spawn_app_with(adjust: impl FnOnce(&mut Config)) -> TestApp {
    spawn_app_clocked(adjust, Arc::new(SystemClock)).await
}

/// `spawn_app_with` whose store reads `clock`.
pub(crate) async fn spawn_app_clocked(
    adjust: impl FnOnce(&mut Config),
    clock: Arc<dyn Clock>,
) -> TestApp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    spawn_app_on(listener, adjust, clock).await
}

/// `spawn_app_clocked` on a listener bound already (a test that must know
/// the address before configuring, e.g. a redirect URL).
pub(crate) async fn spawn_app_on(
    listener: tokio::net::TcpListener,
    adjust: impl FnOnce(&mut Config),
    clock: Arc<dyn Clock>,
) -> TestApp {
    let mut config = test_config();
    config.server.listen = listener.local_addr().unwrap();
    // One OS watcher per test server would exhaust inotify instances; tests
    // that exercise watching turn it back on.
    for docs in &mut config.sources.docs {
        docs.watch = false;
    }
    // Each app gets its own SQLite file, removed with the temp dir.
    let dir = tempfile::tempdir().expect("temp dir");
    config.store.url = DatabaseUrl::new(format!("sqlite://{}/teamgate.db", dir.path().display()));
    // Most tests are about the protocol; tests/api/auth.rs turns authentication on.
    config.auth.mode = AuthMode::None;
    adjust(&mut config);
    let addr = listener.local_addr().unwrap();
    let path = config.mcp.path.clone();
    let app = App::build_with_clock(config, clock)
        .await
        .expect("app builds");
    let sessions = app.sessions();
    let reloader = app.reloader();
    let bus = app.change_bus();
    let tokens = app.tokens();
    let store = app.store().clone();
    let (tx, rx) = oneshot::channel::<()>();
    let served = tokio::spawn(app.serve(listener, async move {
        let _ = rx.await;
    }));
    TestApp {
        store,
        sessions,
        _dir: dir,
        addr,
        url: format!("http://{addr}{path}"),
        client: teamgate::outbound::client(),
        shutdown: Some(tx),
        served,
        reloader,
        bus,
        tokens,
    }
}

impl TestApp {
    pub(crate) fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Sends SIGTERM's equivalent.
    pub(crate) fn shutdown(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }

    /// Shuts down and waits until the server has stopped.
    pub(crate) async fn stop(mut self) {
        self.halt().await;
    }

    /// `stop`, keeping the app's files (its database) for a look afterwards.
    pub(crate) async fn halt(&mut self) {
        self.shutdown();
        let served =
            tokio::time::timeout(std::time::Duration::from_secs(15), &mut self.served).await;
        served.expect("stops in time").unwrap().expect("clean exit");
    }

    /// POSTs raw bytes with the given extra headers.
    pub(crate) async fn post_raw(
        &self,
        body: impl Into<reqwest::Body>,
        headers: &[(&str, &str)],
    ) -> Response {
        let mut request = self.client.post(&self.url);
        let mut has_ct = false;
        let mut has_accept = false;
        for (name, value) in headers {
            has_ct |= name.eq_ignore_ascii_case("content-type");
            has_accept |= name.eq_ignore_ascii_case("accept");
            request = request.header(*name, *value);
        }
        if !has_ct {
            request = request.header("content-type", "application/json");
        }
        if !has_accept {
            request = request.header("accept", ACCEPT_BOTH);
        }
        request
            .body(body)
            .send()
            .await
            .expect("request reaches the server")
    }

    pub(crate) async fn post(&self, message: &Value, headers: &[(&str, &str)]) -> Response {
        self.post_raw(message.to_string(), headers).await
    }

    /// Runs the legacy handshake and returns the session id.
    pub(crate) async fn initialize(&self, version: &str) -> String {
        let response = self
            .post(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": version, "capabilities": {},
                    "clientInfo": {"name": "teamgate-tests", "version": "1"}}}),
                &[],
            )
            .await;
        assert_eq!(response.status(), 200, "initialize succeeds");
        let session = header(response.headers(), "mcp-session-id").expect("a session id");
        let initialized = self
            .post(
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                &[
                    ("mcp-session-id", &session),
                    ("mcp-protocol-version", version),
                ],
            )
            .await;
        assert_eq!(initialized.status(), 202);
        session
    }

    /// A request in a legacy session; returns the JSON-RPC reply, whether it
    /// came as JSON or as the last message of an SSE stream.
    pub(crate) async fn session_call(
        &self,
        session: &str,
        id: i64,
        method: &str,
        params: Value,
    ) -> Value {
        let response = self
            .post(
                &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
                &[
                    ("mcp-session-id", session),
                    ("mcp-protocol-version", "2025-11-25"),
                ],
            )
            .await;
        assert_eq!(response.status(), 200, "{method} answered 200");
        messages(response).await.pop().expect("a reply")
    }

    /// A 2026-07-28 request with the envelope and headers that era requires.
    pub(crate) async fn modern_call(
        &self,
        id: i64,
        method: &str,
        mut params: Value,
    ) -> (u16, Vec<Value>) {
        let extra = params.get("_meta").cloned();
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "teamgate-tests", "version": "1"},
        });
        if let Some(Value::Object(extra)) = extra {
            for (key, value) in extra {
                params["_meta"][key] = value;
            }
        }
        let name = params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
        if let Some(name) = name.as_deref() {
            headers.push(("mcp-name", name));
        }
        let response = self
            .post(
                &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
                &headers,
            )
            .await;
        let status = response.status().as_u16();
        (status, messages(response).await)
    }
}

impl TestApp {
    /// Opens the standalone GET stream of a 2025-era session.
    pub(crate) async fn open_stream(&self, session: &str) -> Response {
        self.client
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .expect("request reaches the server")
    }
}

/// Reads a streaming body as it arrives.
pub(crate) struct Sse {
    response: Response,
    pub seen: String,
}

impl Sse {
    pub(crate) fn new(response: Response) -> Self {
        Self {
            response,
            seen: String::new(),
        }
    }

    /// Reads until `needle` has arrived, or panics after `within`.
    pub(crate) async fn until(&mut self, needle: &str, within: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + within;
        while !self.seen.contains(needle) {
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "{needle:?} did not arrive within {within:?}; got {:?}",
                        self.seen
                    )
                })
                .expect("stream readable")
                .expect("stream still open");
            self.seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// The next chunk within `within`, if any.
    pub(crate) async fn next_within(&mut self, within: std::time::Duration) -> Option<String> {
        let chunk = tokio::time::timeout(within, self.response.chunk())
            .await
            .ok()?
            .ok()??;
        Some(String::from_utf8_lossy(&chunk).into_owned())
    }
}

/// Whether `reply` is test_simple_text's fixed result.
pub(crate) fn is_simple_text(reply: &Value) -> bool {
    reply["result"]["content"][0]["text"] == "This is a simple text response for testing."
}

pub(crate) fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Every JSON-RPC message of a reply: one for a JSON body, each `data:`
/// event of an SSE body (priming events skipped).
pub(crate) async fn messages(response: Response) -> Vec<Value> {
    let is_sse = header(response.headers(), "content-type")
        .is_some_and(|ct| ct.starts_with("text/event-stream"));
    let text = response.text().await.expect("body");
    if !is_sse {
        return vec![
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("JSON body ({e}): {text}")),
        ];
    }
    text.replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect();
            let data = data.join("\n");
            (!data.is_empty()).then(|| serde_json::from_str(&data).expect("SSE data is JSON"))
        })
        .collect()
}
