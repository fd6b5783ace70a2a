//! The official Rust SDK's client (rmcp) connected to a test server: what a
//! real MCP client does, including answering elicitation and hearing
//! notifications, so declared capabilities are exercised end to end.

use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResult, ClientConfig, ElicitRequestParams, ElicitResult,
        ElicitationAction, ProgressNotificationParam, ResourceUpdatedNotificationParam,
    },
    service::{NotificationContext, RequestContext, RunningService},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// What the client saw besides replies: list changes, updates, progress.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Heard {
    ToolsChanged,
    PromptsChanged,
    ResourcesChanged,
    Updated(String),
    Progress(String),
    Elicited(String),
}

pub(crate) struct TestClient {
    /// `Some(answer)`: declares elicitation and answers every request so.
    confirm: Option<bool>,
    heard: mpsc::UnboundedSender<Heard>,
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.confirm.is_some() {
            // URL mode too: a member sent to the portal to set a credential.
            json!({"elicitation": {"form": {}, "url": {}}})
        } else {
            json!({})
        };
        serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "teamgate-sdk-tests", "version": "1"},
        }))
        .unwrap()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let message = serde_json::to_value(&request).unwrap()["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let _ = self.heard.send(Heard::Elicited(message));
        Ok(match self.confirm {
            Some(true) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirm": true}))
            }
            _ => ElicitResult::new(ElicitationAction::Decline),
        })
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.heard.send(Heard::ToolsChanged);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.heard.send(Heard::PromptsChanged);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.heard.send(Heard::ResourcesChanged);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.heard.send(Heard::Updated(params.uri.to_string()));
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self
            .heard
            .send(Heard::Progress(params.message.unwrap_or_default()));
    }
}

pub(crate) type Client = RunningService<RoleClient, TestClient>;

/// A 2025-11-25 session through the SDK, and what it hears.
pub(crate) async fn connect(
    url: &str,
    confirm: Option<bool>,
) -> (Client, mpsc::UnboundedReceiver<Heard>) {
    connect_as(url, None, confirm).await
}

/// `connect` with a bearer token (the real binary requires one).
pub(crate) async fn connect_as(
    url: &str,
    token: Option<&str>,
    confirm: Option<bool>,
) -> (Client, mpsc::UnboundedReceiver<Heard>) {
    // rmcp's reqwest is built without a TLS provider; the server in this
    // process installs one, but a test of the real binary may come first.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (tx, rx) = mpsc::unbounded_channel();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    let before = open_streams(url).await;
    let client = TestClient { confirm, heard: tx }
        .serve(transport)
        .await
        .expect("the SDK client connects");
    if let Some(before) = before {
        until_get_stream_open(url, before).await;
    }
    (client, rx)
}

/// The server's open SSE streams (`/metrics`), when it serves them there.
async fn open_streams(url: &str) -> Option<f64> {
    let mut metrics = reqwest::Url::parse(url).ok()?;
    metrics.set_path("/metrics");
    let text = teamgate::outbound::client()
        .get(metrics)
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let line = text
        .lines()
        .find(|l| l.starts_with("teamgate_mcp_streams_active"))?;
    line.rsplit(' ').next()?.parse().ok()
}

/// Waits (at most 10 s) until the client's standalone GET stream is open: the
/// SDK opens it after `initialize` returns, and a change said before it is
/// open never reaches the client (the server has nowhere to send it). Seen
/// two readings in a row, so the `initialize` reply's own stream, closing,
/// is not taken for it.
async fn until_get_stream_open(url: &str, before: f64) {
    let mut seen = 0;
    for _ in 0..100 {
        let open = open_streams(url).await.unwrap_or_default();
        seen = if open > before { seen + 1 } else { 0 };
        if seen == 2 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the SDK client's GET stream did not open within 10 s");
}

/// Calls a tool and returns its result as wire JSON.
pub(crate) async fn call(client: &Client, name: &str, arguments: Value) -> Value {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    let result: CallToolResult = client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{name} answers: {e}"));
    serde_json::to_value(result).unwrap()
}

/// The text of a result's first content block.
pub(crate) fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// Waits (bounded) until the client hears `wanted`; returns what it heard.
pub(crate) async fn hear(rx: &mut mpsc::UnboundedReceiver<Heard>, wanted: &Heard) -> Vec<Heard> {
    let mut heard = Vec::new();
    // Generous: a change crosses an upstream and back on a loaded machine.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let next = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("heard {wanted:?} in time; heard {heard:?}"))
            .expect("client alive");
        let done = &next == wanted;
        heard.push(next);
        if done {
            return heard;
        }
    }
}
