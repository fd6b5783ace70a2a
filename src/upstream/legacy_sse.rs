//! The 2024-11-05 HTTP+SSE transport, for an upstream that speaks nothing
//! newer (rmcp 3 no longer ships a client for it). Tried only after a
//! Streamable HTTP handshake with the URL failed, as the 2025-03-26
//! backwards-compatibility rule says: GET the URL for an event stream whose
//! first `endpoint` event names where to POST; each later `message` event
//! is one JSON-RPC message from the server.

use std::{pin::Pin, time::Duration};

use std::sync::atomic::Ordering;

use anyhow::{Context, bail};
use futures::{Sink, Stream, StreamExt};
use rmcp::{
    RoleClient, ServiceExt,
    model::{ClientJsonRpcMessage, ServerJsonRpcMessage},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};

use super::{client::Client, link::Link};
use crate::config::UpstreamProtocol;
use sse_stream::SseStream;

/// Calls in flight to one upstream connection at once (rmcp's default: 16).
const MAX_IN_FLIGHT: usize = 256;

/// Longest line of the event stream: a server cannot make teamgate buffer
/// without end.
const MAX_LINE: usize = 4 << 20;
/// How long one POST of a message may take.
const POST_TIMEOUT: Duration = Duration::from_secs(30);

pub(super) type Outgoing = Pin<Box<dyn Sink<ClientJsonRpcMessage, Error = std::io::Error> + Send>>;
pub(super) type Incoming = Pin<Box<dyn Stream<Item = ServerJsonRpcMessage> + Send>>;

/// Opens the event stream at `url` and waits for its endpoint (the caller
/// bounds the wait). The endpoint must be on the URL's own origin: the
/// configured headers go to no other server.
pub(super) async fn connect(
    url: &str,
    headers: http::HeaderMap,
) -> anyhow::Result<(Outgoing, Incoming)> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .default_headers(headers)
        .build()
        .context("building the HTTP client")?;
    let response = client
        .get(url)
        .header(http::header::ACCEPT, "text/event-stream")
        .send()
        .await
        .context("opening the event stream")?
        .error_for_status()
        .context("opening the event stream")?;
    let is_sse = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_sse {
        bail!("{url} answered GET with no event stream");
    }
    let mut events = SseStream::from_bytes_stream(bounded_lines(response.bytes_stream()));
    let endpoint = loop {
        match events.next().await {
            Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                break event.data.unwrap_or_default();
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => bail!("reading the event stream: {error}"),
            None => bail!("the event stream ended before naming its endpoint"),
        }
    };
    let base = url::Url::parse(url)?;
    let endpoint = base
        .join(endpoint.trim())
        .context("the endpoint event holds no URL")?;
    if endpoint.origin() != base.origin() {
        bail!("the endpoint {endpoint} is not on the origin of {url}; refused");
    }
    let incoming = events
        .take_while(|event| std::future::ready(event.is_ok()))
        .filter_map(|event| async move {
            let event = event.ok()?;
            if !matches!(event.event.as_deref(), None | Some("message")) {
                return None;
            }
            match serde_json::from_str(event.data.as_deref()?) {
                Ok(message) => Some(message),
                Err(error) => {
                    tracing::warn!(%error, "an upstream sent an event that is no JSON-RPC message");
                    None
                }
            }
        });
    let outgoing = futures::sink::unfold(
        (client, endpoint),
        |(client, endpoint), message: ClientJsonRpcMessage| async move {
            let response = client
                .post(endpoint.clone())
                .timeout(POST_TIMEOUT)
                .json(&message)
                .send()
                .await
                .map_err(std::io::Error::other)?;
            if !response.status().is_success() {
                let status = response.status();
                return Err(std::io::Error::other(format!("POST answered {status}")));
            }
            Ok((client, endpoint))
        },
    );
    Ok((Box::pin(outgoing), Box::pin(incoming)))
}

/// `bytes` cut off with an error at a line longer than `MAX_LINE`.
fn bounded_lines<E: std::error::Error + Send + Sync + 'static>(
    bytes: impl Stream<Item = Result<bytes::Bytes, E>> + Send + 'static,
) -> impl Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static {
    let mut run = 0usize;
    bytes.map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        // Chunks are a transport's reads (kilobytes), so a line longer than
        // the cap always spans some of them.
        run = match memchr::memrchr(b'\n', &chunk) {
            Some(last) => chunk.len() - last - 1,
            None => run + chunk.len(),
        };
        if run > MAX_LINE {
            return Err(std::io::Error::other("an event stream line over 4 MiB"));
        }
        Ok(chunk)
    })
}

impl Link {
    /// Streamable HTTP, else (when that handshake fails) the 2024-11-05
    /// HTTP+SSE transport; once an upstream answered only the latter,
    /// reconnects go straight to it.
    pub(super) async fn connect_url(
        &self,
        client: Client,
    ) -> anyhow::Result<rmcp::service::RunningService<RoleClient, Client>> {
        let url = self.config.url.as_str();
        let protocol = self.config.protocol;
        let mut modern = None;
        if !self.legacy.load(Ordering::Relaxed) {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url)
                .custom_headers(self.resolved.headers.clone());
            // rmcp's default of 16 POSTs in flight caps a 2026-07-28 link,
            // whose JSON replies hold their POST until read: members' calls
            // would queue at 16 per upstream. Bounded still.
            config.max_concurrent_requests = MAX_IN_FLIGHT;
            config.channel_buffer_capacity = MAX_IN_FLIGHT;
            let transport = StreamableHttpClientTransport::with_client(http_client(), config);
            match client.clone().handshake(transport, protocol).await {
                Ok(service) => return Ok(service),
                // A 2026-07-28 upstream has no 2024-11-05 transport to fall back to.
                Err(error) if protocol == UpstreamProtocol::V2026 => {
                    return Err(anyhow::Error::new(error).context("handshake (server/discover)"));
                }
                Err(error) => modern = Some(error),
            }
        }
        let headers = self.resolved.headers.clone().into_iter().collect();
        let legacy = match connect(url, headers).await {
            Ok(transport) => client
                .serve(transport)
                .await
                .context("handshake (2024-11-05 HTTP+SSE)"),
            Err(error) => Err(error),
        };
        match (legacy, modern) {
            (Ok(service), _) => {
                self.legacy.store(true, Ordering::Relaxed);
                Ok(service)
            }
            (Err(_), Some(modern)) => Err(anyhow::Error::new(modern).context("handshake")),
            (Err(error), None) => Err(error),
        }
    }
}

/// The HTTP client of a Streamable HTTP upstream. rmcp's own turns
/// connection pooling off, against stalls when a reply was left unread; a
/// reply left unread never goes back to the pool, and a connection per call
/// cost a TCP handshake and teardown each time (through teamgate, about
/// three in four of the CPU a call took). Redirects are not followed: the
/// configured URL passed the allowlist, a redirect's target did not.
fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_default()
}
