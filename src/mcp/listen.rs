//! `subscriptions/listen` (2026-07-28) served without rmcp's per-request
//! service, and the engine service that routes to it.
//!
//! rmcp runs a whole service (a task, channels, a peer) for every stateless
//! request. That is cheap for a call that ends in milliseconds, but a listen
//! stream lives for hours: 10,000 of them cost about 50 KiB each that way.
//! Here a stream is one small body stream reading the change bus.
//!
//! Only a request in the plain valid shape is taken (the 2026-07-28 version
//! in header and `_meta`, client capabilities, a matching `Mcp-Method`, no
//! session, no `Mcp-Name`, a well-formed filter); anything else goes to rmcp,
//! which validates it and answers as it does for every request. The frames
//! are rmcp's own types, serialized and framed the way rmcp frames them, and
//! the accepted filter is computed by rmcp's own rules, so a client cannot
//! tell which path served it.

use std::{convert::Infallible, sync::Arc, time::Duration};

use axum::{
    body::{Body, Bytes},
    http::{HeaderMap, HeaderValue, Request, header},
    response::{IntoResponse, Response},
};
use futures::StreamExt;
use http_body_util::BodyExt;
use rmcp::{
    ServerHandler,
    model::{
        ClientJsonRpcMessage, ClientRequest, GetMeta, NotificationMetaObject,
        PromptListChangedNotification, RequestId, ResourceListChangedNotification,
        ResourceUpdatedNotification, ResourceUpdatedNotificationParam, ServerJsonRpcMessage,
        ServerNotification, ServerResult, SubscriptionFilter,
        SubscriptionsAcknowledgedNotification, SubscriptionsAcknowledgedNotificationParams,
        SubscriptionsListenResult, ToolListChangedNotification,
    },
};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::{McpHandler, Sessions, Shared, StreamableHttpService};
use crate::registry::{Caller, ChangeEvent};

const MODERN: &str = "2026-07-28";
const METHOD: &str = "subscriptions/listen";

tokio::task_local! {
    /// The caller of the request rmcp is handling on this task. rmcp builds
    /// the request's handler here, in `handle` (`McpHandler::for_http`), and
    /// asks it things before any request context exists: the tool a name
    /// stands for (to check `Mcp-Param-*` headers), what a listen filter
    /// grants. The handler answers them for this caller.
    static SERVING: Caller;
}

/// The caller `Engine` is handing a request to rmcp for, if any.
pub(super) fn serving() -> Option<Caller> {
    SERVING.try_with(Caller::clone).ok()
}

/// The MCP endpoint's engine: native listen streams, rmcp for the rest.
#[derive(Clone)]
pub struct Engine {
    rmcp: StreamableHttpService<McpHandler, Sessions>,
    listener: Arc<Listener>,
}

impl Engine {
    pub fn new(
        rmcp: StreamableHttpService<McpHandler, Sessions>,
        shared: Arc<Shared>,
        keep_alive: Duration,
        shutdown: CancellationToken,
    ) -> Self {
        let listener = Arc::new(Listener {
            shared,
            keep_alive,
            shutdown,
        });
        Self { rmcp, listener }
    }

    /// Serves one request (the router's MCP endpoint, `http/stack.rs`). By
    /// reference: rmcp's tower `call` would clone its service per request,
    /// and each clone locks the shutdown token's mutex.
    pub async fn serve(&self, mut request: Request<Body>) -> Response {
        // Without a known caller, rmcp's questions are answered for nobody.
        let Some(caller) = request.extensions().get::<Caller>().cloned() else {
            return self.rmcp.handle(request).await.into_response();
        };
        let listen = request
            .headers()
            .get(crate::protocol::names::MCP_METHOD)
            .is_some_and(|m| m.as_bytes() == METHOD.as_bytes());
        if listen {
            // The guard has read the body already; this is the same buffer.
            let (parts, body) = request.into_parts();
            let bytes = body
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            if let Some(response) = self.listener.serve(&parts.headers, &bytes, &caller) {
                return response;
            }
            request = Request::from_parts(parts, Body::from(bytes));
        }
        SERVING
            .scope(caller, self.rmcp.handle(request))
            .await
            .into_response()
    }
}

struct Listener {
    shared: Arc<Shared>,
    keep_alive: Duration,
    shutdown: CancellationToken,
}

impl Listener {
    /// The stream's response, or `None` to leave the request to rmcp.
    fn serve(
        self: &Arc<Self>,
        headers: &HeaderMap,
        body: &Bytes,
        caller: &Caller,
    ) -> Option<Response> {
        let (id, requested) = plain_listen(headers, body)?;
        let handler = McpHandler::new(self.shared.clone()).serving(caller.clone());
        // rmcp's rule: what the handler accepts, within what was asked and advertised.
        let candidate = handler.accepted_subscription_filter(&requested)?;
        let info = handler.get_info();
        let advertised = requested.supported_by(&info.capabilities);
        let accepted = requested.intersection(&candidate).intersection(&advertised);

        let mut ack = SubscriptionsAcknowledgedNotification::new(
            SubscriptionsAcknowledgedNotificationParams::new(accepted.clone()),
        );
        let mut meta = NotificationMetaObject::new();
        meta.set_subscription_id(id.clone());
        ack.extensions.insert(meta);
        let first = frame(&ServerJsonRpcMessage::notification(
            ServerNotification::SubscriptionsAcknowledgedNotification(ack),
        ));

        let state = Stream {
            changes: self.shared.bus.subscribe(),
            accepted,
            id,
            listener: self.clone(),
            ended: false,
        };
        let rest = futures::stream::unfold(state, |mut state| async move {
            let frame = state.next_frame().await?;
            Some((Ok::<_, Infallible>(frame), state))
        });
        let body = futures::stream::once(async move { Ok(first) }).chain(rest);
        let mut response = Response::new(Body::from_stream(body));
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
        Some(response)
    }
}

/// The id and filter of a `subscriptions/listen` in the plain valid shape.
fn plain_listen(headers: &HeaderMap, body: &[u8]) -> Option<(RequestId, SubscriptionFilter)> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let accepts = text("accept").unwrap_or_default();
    if text("mcp-protocol-version") != Some(MODERN)
        || text("mcp-method") != Some(METHOD)
        || headers.contains_key("mcp-name")
        || headers.contains_key("mcp-session-id")
        || headers.contains_key("last-event-id")
        || headers.keys().any(|k| k.as_str().starts_with("mcp-param-"))
        || !accepts.contains("text/event-stream")
        || !accepts.contains("application/json")
    {
        return None;
    }
    let value: Value = serde_json::from_slice(body).ok()?;
    let meta = value.get("params")?.get("_meta")?;
    if meta
        .get("io.modelcontextprotocol/protocolVersion")?
        .as_str()
        != Some(MODERN)
        || !meta
            .get("io.modelcontextprotocol/clientCapabilities")?
            .is_object()
        || !value.get("params")?.get("notifications")?.is_object()
    {
        return None;
    }
    let ClientJsonRpcMessage::Request(request) = serde_json::from_value(value).ok()? else {
        return None;
    };
    let ClientRequest::SubscriptionsListenRequest(listen) = request.request else {
        return None;
    };
    Some((request.id, listen.params.notifications))
}

/// One SSE event, as rmcp writes them for 2026-07-28 streams (no ids).
fn frame(message: &ServerJsonRpcMessage) -> Bytes {
    let json = serde_json::to_string(message).expect("MCP messages serialize");
    Bytes::from(format!("data: {json}\n\n"))
}

/// What one open stream keeps, for as long as it is open: as little as
/// possible, since a team's clients may hold thousands (the server's own
/// settings are shared, not copied).
struct Stream {
    changes: tokio::sync::broadcast::Receiver<ChangeEvent>,
    accepted: SubscriptionFilter,
    id: RequestId,
    listener: Arc<Listener>,
    /// Set by the final frame.
    ended: bool,
}

impl Stream {
    /// The next frame: a change the client asked for, a keep-alive comment,
    /// or (on shutdown) the final result; `None` after that.
    async fn next_frame(&mut self) -> Option<Bytes> {
        if self.ended {
            return None;
        }
        loop {
            let event = tokio::select! {
                () = self.listener.shutdown.cancelled() => return Some(self.finish()),
                () = tokio::time::sleep(self.listener.keep_alive) => return Some(Bytes::from_static(b":\n\n")),
                event = self.changes.recv() => event,
            };
            let event = match event {
                Ok(event) => event,
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return Some(self.finish()),
            };
            if let Some(mut notification) = self.notification(event) {
                notification
                    .get_meta_mut()
                    .set_subscription_id(self.id.clone());
                return Some(frame(&ServerJsonRpcMessage::notification(notification)));
            }
        }
    }

    /// The change as a notification, if the client opted in to it.
    fn notification(&self, event: ChangeEvent) -> Option<ServerNotification> {
        let accepted = &self.accepted;
        Some(match event {
            ChangeEvent::ToolsListChanged if accepted.tools_list_changed == Some(true) => {
                ServerNotification::ToolListChangedNotification(ToolListChangedNotification {
                    method: Default::default(),
                    extensions: Default::default(),
                })
            }
            ChangeEvent::PromptsListChanged if accepted.prompts_list_changed == Some(true) => {
                ServerNotification::PromptListChangedNotification(PromptListChangedNotification {
                    method: Default::default(),
                    extensions: Default::default(),
                })
            }
            ChangeEvent::ResourcesListChanged if accepted.resources_list_changed == Some(true) => {
                ServerNotification::ResourceListChangedNotification(
                    ResourceListChangedNotification {
                        method: Default::default(),
                        extensions: Default::default(),
                    },
                )
            }
            ChangeEvent::ResourceUpdated { uri }
                if accepted
                    .resource_subscriptions
                    .as_ref()
                    .is_some_and(|uris| uris.contains(&uri)) =>
            {
                ServerNotification::ResourceUpdatedNotification(ResourceUpdatedNotification::new(
                    ResourceUpdatedNotificationParam::new(uri),
                ))
            }
            _ => return None,
        })
    }

    /// The graceful end: the listen request's result, as rmcp sends it.
    fn finish(&mut self) -> Bytes {
        self.ended = true;
        let mut result = SubscriptionsListenResult::complete(self.id.clone());
        let info = McpHandler::new(self.listener.shared.clone()).get_info();
        result.meta.set_server_info(info.server_info);
        frame(&ServerJsonRpcMessage::response(
            ServerResult::SubscriptionsListenResult(result),
            self.id.clone(),
        ))
    }
}
