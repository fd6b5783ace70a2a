//! An upstream's tools as the registry offers them: filtered by the
//! configured globs and renamed with the prefix; each call forwarded with
//! teamgate's timeout and the member's cancellation, its progress relayed
//! to that member only.

use std::sync::Arc;

use async_trait::async_trait;
use globset::{Glob, GlobSet, GlobSetBuilder};
use rmcp::{
    model::{
        CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
        ServerResult,
    },
    service::{PeerRequestOptions, ServiceError},
};
use tokio::sync::mpsc;

use super::link::{Link, PROGRESS_QUEUE, Status};
use crate::{
    config::OnUnavailable,
    protocol::{CallToolResponse, CallToolResult, JsonObject, McpError, Tool},
    registry::{CallContext, ToolProvider},
};

pub(super) struct UpstreamTools {
    link: Arc<Link>,
    include: GlobSet,
    exclude: GlobSet,
}

impl UpstreamTools {
    pub(super) fn new(link: Arc<Link>) -> anyhow::Result<Self> {
        let tools = &link.config.tools;
        Ok(Self {
            include: globs(&tools.include)?,
            exclude: globs(&tools.exclude)?,
            link,
        })
    }

    fn offered(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.is_match(name)) && !self.exclude.is_match(name)
    }

    /// The upstream's own name of the exposed tool `name`.
    fn original<'a>(&self, name: &'a str) -> Option<&'a str> {
        let config = &self.link.config;
        let prefix_len = config.exposed("").len();
        name.get(prefix_len..)
            .filter(|_| name.starts_with(&config.exposed("")))
    }

    fn unavailable(&self, why: &str) -> CallToolResponse {
        let name = &self.link.config.name;
        tool_error(format!(
            "the upstream server {name} is unavailable ({why}); try again shortly"
        ))
    }
}

fn globs(patterns: &[String]) -> anyhow::Result<GlobSet> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        set.add(Glob::new(pattern)?);
    }
    Ok(set.build()?)
}

fn tool_error(text: String) -> CallToolResponse {
    let result: CallToolResult = serde_json::from_value(serde_json::json!({
        "content": [{"type": "text", "text": text}],
        "isError": true,
    }))
    .expect("a text tool result");
    CallToolResponse::Complete(result)
}

#[async_trait]
impl ToolProvider for UpstreamTools {
    fn tools(&self) -> Vec<Tool> {
        let current = self.link.current.lock().expect("upstream state lock");
        let listed =
            current.status == Status::Up || self.link.config.on_unavailable == OnUnavailable::Error;
        if !listed {
            return Vec::new();
        }
        current
            .tools
            .iter()
            .filter(|tool| self.offered(&tool.name))
            .map(|tool| {
                let mut tool = tool.clone();
                tool.name = self.link.config.exposed(&tool.name).into();
                tool
            })
            .collect()
    }

    async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
        cx: &CallContext,
    ) -> Result<CallToolResponse, McpError> {
        let Some(original) = self.original(name).filter(|n| self.offered(n)) else {
            return Err(McpError::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        };
        let peer = {
            let current = self.link.current.lock().expect("upstream state lock");
            match (&current.peer, current.status) {
                (Some(peer), Status::Up) => peer.clone(),
                _ => return Ok(self.unavailable(current.status.label())),
            }
        };
        let params = CallToolRequestParams::new(original.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(error) => return Ok(self.unavailable(&error.to_string())),
        };
        let (route, mut progress) = mpsc::channel(PROGRESS_QUEUE);
        let routes = &self.link.progress;
        routes
            .lock()
            .expect("progress routes lock")
            .insert(handle.progress_token.clone(), route);
        // The route and, when the call ends early (the member cancelled, the
        // timeout struck, the client went away), the upstream's request go too.
        let mut pending = Pending {
            link: &self.link,
            handle: Some((
                handle.peer.clone(),
                handle.id.clone(),
                handle.progress_token.clone(),
            )),
        };
        let mut response = handle.rx;
        let result = loop {
            tokio::select! {
                result = &mut response => break result,
                Some(update) = progress.recv() => {
                    let message = update.message.as_deref();
                    cx.progress(update.progress, update.total, message).await;
                }
                () = cx.cancellation().cancelled() => {
                    return Err(McpError::internal_error("cancelled", None));
                }
            }
        };
        pending.finished();
        match result {
            Ok(Ok(ServerResult::CallToolResult(result))) => Ok(CallToolResponse::Complete(result)),
            Ok(Ok(_)) => Ok(tool_error(format!(
                "the upstream server {} answered the call with something other than a tool result",
                self.link.config.name
            ))),
            Ok(Err(ServiceError::McpError(error))) => Err(error),
            Ok(Err(error)) => Ok(self.unavailable(&error.to_string())),
            Err(_) => Ok(self.unavailable("the connection closed")),
        }
    }

    fn required_scopes(&self, _name: &str) -> Option<Vec<String>> {
        let scopes = &self.link.config.scopes;
        (!scopes.is_empty()).then(|| scopes.clone())
    }

    fn timeout(&self, _name: &str) -> Option<std::time::Duration> {
        Some(self.link.config.timeout)
    }
}

/// A forwarded call: its progress route is removed when it ends, and an
/// unfinished one is cancelled upstream (`notifications/cancelled`).
struct Pending<'a> {
    link: &'a Link,
    handle: Option<(
        rmcp::service::Peer<rmcp::RoleClient>,
        rmcp::model::RequestId,
        rmcp::model::ProgressToken,
    )>,
}

impl Pending<'_> {
    fn finished(&mut self) {
        if let Some((_, _, token)) = self.handle.take() {
            self.link
                .progress
                .lock()
                .expect("progress routes lock")
                .remove(&token);
        }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        let Some((peer, id, token)) = self.handle.take() else {
            return;
        };
        self.link
            .progress
            .lock()
            .expect("progress routes lock")
            .remove(&token);
        tokio::spawn(async move {
            let reason = "cancelled by the client or teamgate's timeout";
            let cancelled = CancelledNotificationParam::new(Some(id), Some(reason.into()));
            let _ = peer.notify_cancelled(cancelled).await;
        });
    }
}
