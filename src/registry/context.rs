//! What a provider gets for one call: who asked, a cancellation signal, and
//! sinks for progress and log lines that go back on the caller's stream.

#![allow(deprecated)] // LoggingLevel: deprecated in 2026-07-28, still served to 2025-era clients.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::progress::{ProgressScrub, Update};
use super::{ApprovalAsk, ApprovalError, Caller, CredentialUse, MemberSecrets, Scrubber, Verdict};

use crate::protocol::{Asked, Mrtr, StreamCloser};
use crate::protocol::{
    CallToolResponse, ClientCapabilities, InputRequests, InputResponses, LoggingLevel, McpError,
    Peer, ProtocolVersion, RequestContext, RequestMetaObject, RoleServer,
};

/// What the guardrails that fired during one call noted, for its audit
/// record, in order (by rule, action and phase; never what they found);
/// clones share it.
#[derive(Debug, Clone, Default)]
pub struct Fired(Arc<std::sync::Mutex<Vec<String>>>);

impl Fired {
    pub fn note(&self, line: String) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    }

    /// Everything noted, in order; empty when nothing fired.
    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

pub struct CallContext {
    request: RequestContext<RoleServer>,
    caller: Caller,
    /// Lowest level a log line must have to be sent; `None` sends none.
    log_threshold: Option<LoggingLevel>,
    mrtr: Mrtr,
    /// Configured secrets, removed from progress messages and log lines.
    scrubber: Scrubber,
    /// Set when the call runs as a durable task (`TaskInput`).
    task: Option<Arc<dyn TaskInput>>,
    /// The member takes a task handle for the call: an upstream's own task
    /// is answered as one (the engine maps it to a task of its own).
    task_handles: bool,
    /// Members' own credential values, when the server keeps them.
    member_secrets: Option<Arc<dyn MemberSecrets>>,
    /// Where a call with `approval` waits for its decision (HTTP with a store).
    approvals: Option<Arc<dyn ApprovalDesk>>,
    /// Which credential kind served the call, for its audit record.
    credential: CredentialUse,
    /// Which guardrails fired, for its audit record.
    fired: Fired,
    /// The call's progress messages, scrubbed as one text (`progress.rs`).
    progress: std::sync::Mutex<Option<ProgressScrub>>,
}

/// How a call running as a durable task asks its client for input: the
/// requests show on `tasks/get` (`input_required`) and `tasks/update`
/// answers them; `ask` returns once every one is answered. Its latest
/// progress message shows there too, as `statusMessage`.
#[async_trait::async_trait]
pub trait TaskInput: Send + Sync {
    async fn ask(&self, requests: InputRequests) -> Result<InputResponses, McpError>;
    async fn progress(&self, message: &str);
}

/// Parks a call until its request for approval is decided; the request
/// lives in the store, so a decision on any replica reaches it.
#[async_trait::async_trait]
pub trait ApprovalDesk: Send + Sync {
    async fn decide(
        &self,
        ask: ApprovalAsk<'_>,
        cx: &CallContext,
    ) -> Result<Verdict, ApprovalError>;
}

impl CallContext {
    pub fn new(
        request: RequestContext<RoleServer>,
        caller: Caller,
        log_threshold: Option<LoggingLevel>,
        mrtr: Mrtr,
    ) -> Self {
        Self {
            request,
            caller,
            log_threshold,
            mrtr,
            scrubber: Scrubber::default(),
            task: None,
            task_handles: false,
            member_secrets: None,
            approvals: None,
            credential: CredentialUse::default(),
            fired: Fired::default(),
            progress: std::sync::Mutex::default(),
        }
    }

    pub fn with_member_secrets(mut self, secrets: Option<Arc<dyn MemberSecrets>>) -> Self {
        self.member_secrets = secrets;
        self
    }

    /// The caller's own values of credential slots; `None` when the server
    /// keeps none (stdio, or no `[credentials]`).
    pub fn member_secrets(&self) -> Option<&Arc<dyn MemberSecrets>> {
        self.member_secrets.as_ref()
    }

    pub fn with_approvals(mut self, desk: Option<Arc<dyn ApprovalDesk>>) -> Self {
        self.approvals = desk;
        self
    }

    /// Where a call with `approval` waits for its decision; `None` when the
    /// server keeps no requests (stdio).
    pub fn approvals(&self) -> Option<&Arc<dyn ApprovalDesk>> {
        self.approvals.as_ref()
    }

    /// Where the provider reports the credential kind it used.
    pub fn credential(&self) -> &CredentialUse {
        &self.credential
    }

    /// Where the guardrails that fire on this call are noted.
    pub fn fired(&self) -> &Fired {
        &self.fired
    }

    /// The call runs as a durable task that asks through `input`, and is
    /// cancelled by `cancel` (the task's, not the request's, which ended).
    pub fn in_task(mut self, input: Arc<dyn TaskInput>, cancel: CancellationToken) -> Self {
        self.task = Some(input);
        self.request.ct = cancel;
        self
    }

    /// An upstream's own task may be the call's answer, as a task handle.
    pub fn with_task_handles(mut self) -> Self {
        self.task_handles = true;
        self
    }

    /// Whether an upstream's own task may be the call's answer.
    pub fn takes_task_handle(&self) -> bool {
        self.task_handles
    }

    /// The task's means to ask for input, when the call runs as one.
    pub fn task_input(&self) -> Option<&Arc<dyn TaskInput>> {
        self.task.as_ref()
    }

    pub fn with_scrubber(mut self, scrubber: Scrubber) -> Self {
        self.scrubber = scrubber;
        self
    }

    /// The configured secrets, for a provider that must scrub before it
    /// cuts (an excerpt, streamed output): halves of a secret no longer match.
    pub fn scrubber(&self) -> &Scrubber {
        &self.scrubber
    }

    /// Input the client sent back (`inputResponses`, `requestState`).
    pub fn mrtr(&self) -> &Mrtr {
        &self.mrtr
    }

    /// Asks the client for input, in whichever way its protocol era allows;
    /// see [`Mrtr::ask`]. `state` travels with an `input_required` result.
    pub async fn ask(
        &self,
        requests: InputRequests,
        state: Option<String>,
    ) -> Result<Asked, McpError> {
        self.mrtr
            .ask(&self.request.peer, self.is_modern(), requests, state)
            .await
    }

    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Cancelled when the client cancels (legacy `notifications/cancelled`,
    /// or closing the stream on 2026-07-28).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.request.ct
    }

    /// Ends the SSE stream carrying this call's messages before its result
    /// (SEP-1699): the client reconnects with `Last-Event-ID` and gets the
    /// rest. Only on a 2025-11-25 session, whose clients know to reconnect;
    /// false (nothing done) anywhere else.
    pub async fn close_stream(&self) -> bool {
        let resumable = self
            .protocol_version()
            .is_some_and(|v| v.as_str() >= "2025-11-25" && !self.is_modern());
        match self.request.extensions.get::<StreamCloser>() {
            Some(closer) if resumable => closer.close().await,
            _ => false,
        }
    }

    pub fn meta(&self) -> &RequestMetaObject {
        &self.request.meta
    }

    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.request.protocol_version()
    }

    /// True for 2026-07-28 and later: stateless, MRTR instead of server requests.
    pub fn is_modern(&self) -> bool {
        crate::protocol::is_modern(&self.request)
    }

    /// The 2025-era session the call came on (`Mcp-Session-Id`), if any.
    pub fn session_id(&self) -> Option<&str> {
        let parts = self.request.extensions.get::<http::request::Parts>()?;
        parts.headers.get("mcp-session-id")?.to_str().ok()
    }

    pub fn client_capabilities(&self) -> ClientCapabilities {
        self.request.client_capabilities().unwrap_or_default()
    }

    /// The peer, for server-to-client requests on legacy sessions
    /// (sampling, elicitation). Modern requests use MRTR results instead.
    pub fn peer(&self) -> &Peer<RoleServer> {
        &self.request.peer
    }

    /// Sends `notifications/progress` when the client asked for progress.
    /// Delivery failures are ignored: progress is advisory. The call's
    /// messages are scrubbed as one text: one that could start a secret
    /// waits for the next, or for [`Self::finish_progress`].
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if self.request.meta.get_progress_token().is_none() && self.task.is_none() {
            return;
        }
        let update = Update {
            progress,
            total,
            message: message.map(str::to_owned),
        };
        let ready = {
            let mut state = self.progress.lock().unwrap_or_else(|e| e.into_inner());
            state
                .get_or_insert_with(|| ProgressScrub::new(self.scrubber.clone()))
                .push(update)
        };
        self.send_progress(ready).await;
    }

    /// Sends the progress still held, once the call is done (before its
    /// result, which is scrubbed as one text with it).
    pub async fn finish_progress(&self, result: Option<&mut CallToolResponse>) {
        let held = {
            let mut state = self.progress.lock().unwrap_or_else(|e| e.into_inner());
            state
                .take()
                .map(|mut s| s.finish(result))
                .unwrap_or_default()
        };
        self.send_progress(held).await;
    }

    async fn send_progress(&self, updates: Vec<Update>) {
        // A task's client polls: the latest message, scrubbed, on its row.
        let latest = updates.iter().rev().find_map(|u| u.message.as_deref());
        if let (Some(task), Some(message)) = (&self.task, latest) {
            task.progress(message).await;
        }
        let Some(token) = self.request.meta.get_progress_token() else {
            return;
        };
        for update in updates {
            let mut params = serde_json::json!({
                "progressToken": token,
                "progress": update.progress,
            });
            if let Some(total) = update.total {
                params["total"] = total.into();
            }
            if let Some(message) = update.message {
                params["message"] = message.into();
            }
            if let Ok(params) = serde_json::from_value(params) {
                let _ = self.request.peer.notify_progress(params).await;
            }
        }
    }

    /// Sends `notifications/message` if `level` passes the caller's threshold.
    pub async fn log(&self, level: LoggingLevel, logger: &str, data: Value) {
        let Some(threshold) = self.log_threshold else {
            return;
        };
        if rank(level) < rank(threshold) {
            return;
        }
        let mut data = data;
        self.scrubber.value(&mut data);
        let params = serde_json::json!({"level": level, "logger": logger, "data": data});
        if let Ok(params) = serde_json::from_value(params) {
            let _ = self.request.peer.notify_logging_message(params).await;
        }
    }
}

/// Severity order of RFC 5424 levels, lowest first.
pub(super) fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}
