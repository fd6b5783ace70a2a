//! An upstream's own task (the tasks extension, SEP-2663). Behind a call
//! whose member holds no task handle, teamgate polls it to its end inside
//! the call, which the tool's time limit bounds, relays its status messages
//! as progress, and cancels it upstream when the call is dropped (the
//! member cancelled, or the time ran out) before it ended. Behind a task of
//! teamgate's (the member declared the extension), the engine's
//! `tasks/get`, `tasks/update` and `tasks/cancel` reach it here (`on_task`).

use std::time::Duration;

use rmcp::{
    RoleClient,
    model::{
        CallToolResult, CancelTaskParams, CreateTaskResult, ErrorData, GetTaskParams, TaskPayload,
        UpdateTaskParams,
    },
    service::{Peer, ServiceError},
};

use super::link::Link;
use crate::{
    config::UpstreamProtocol,
    protocol::{Asked, CallToolResponse, McpError, text_result},
    registry::{
        CallContext,
        upstream_task::{UpstreamTaskOp, UpstreamTaskReply},
    },
};

/// Bounds on the upstream's suggested `pollIntervalMs`.
const POLL_MIN: Duration = Duration::from_millis(100);
const POLL_MAX: Duration = Duration::from_secs(5);

/// Consecutive failed polls after which the call gives up on the task.
const POLL_FAILURES: u32 = 3;

/// Cancels the upstream task unless it ended: dropping the wait (a
/// cancelled call, a time limit) must not leave it running there.
struct Unfinished {
    peer: Peer<RoleClient>,
    id: Option<String>,
}

impl Unfinished {
    fn ended(&mut self) {
        self.id = None;
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        tokio::spawn(async move {
            let _ = peer.cancel_task(CancelTaskParams::new(id)).await;
        });
    }
}

/// Whether the upstream of `link` is connected on a 2026-07-28 link and
/// advertised the tasks extension.
pub(super) fn offers_tasks(link: &Link) -> bool {
    let current = link.current.lock().expect("upstream state lock");
    let info = current.peer.as_ref().and_then(|peer| peer.peer_info());
    link.config.protocol == UpstreamProtocol::V2026
        && info.is_some_and(|info| info.capabilities.supports_tasks())
}

/// `op` on the upstream's task over `link`, within the upstream's timeout.
pub(super) async fn on_task(
    link: &Link,
    op: UpstreamTaskOp,
) -> Result<UpstreamTaskReply, McpError> {
    let peer = link
        .current
        .lock()
        .expect("upstream state lock")
        .peer
        .clone();
    let name = &link.config.name;
    let unavailable = |why: String| {
        let why = format!("the upstream server {name} is unavailable ({why}); retry shortly");
        McpError::internal_error(why, None)
    };
    let peer = peer.ok_or_else(|| unavailable("not connected".into()))?;
    let asked = async {
        match op {
            UpstreamTaskOp::Get(id) => {
                let got = peer.get_task(GetTaskParams::new(id)).await?;
                Ok(UpstreamTaskReply::Task(Box::new(got)))
            }
            UpstreamTaskOp::Update(id, answers) => {
                peer.update_task(UpdateTaskParams::new(id, answers)).await?;
                Ok(UpstreamTaskReply::Ack)
            }
            UpstreamTaskOp::Cancel(id) => {
                peer.cancel_task(CancelTaskParams::new(id)).await?;
                Ok(UpstreamTaskReply::Ack)
            }
        }
    };
    match tokio::time::timeout(link.config.timeout, asked).await {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(ServiceError::McpError(error))) => Err(error),
        Ok(Err(error)) => Err(unavailable(error.to_string())),
        Err(_) => Err(unavailable("no answer in time".into())),
    }
}

/// The end of the upstream task `seed` as the call's result.
pub(super) async fn wait(
    peer: Peer<RoleClient>,
    seed: CreateTaskResult,
    upstream: &str,
    cx: &CallContext,
) -> Result<CallToolResponse, McpError> {
    let id = seed.task.task_id.clone();
    let every = Duration::from_millis(seed.task.poll_interval_ms.unwrap_or(500));
    let every = every.clamp(POLL_MIN, POLL_MAX);
    let mut unfinished = Unfinished {
        peer: peer.clone(),
        id: Some(id.clone()),
    };
    let (mut failures, mut said, mut polls) = (0, None::<String>, 0u32);
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = cx.cancellation().cancelled() => {
                return Err(McpError::internal_error("cancelled", None));
            }
        }
        polls = polls.saturating_add(1);
        let task = match peer.get_task(GetTaskParams::new(id.clone())).await {
            Ok(got) => got.task,
            Err(ServiceError::McpError(error)) => {
                // The upstream no longer knows it (restarted, expired).
                unfinished.ended();
                return Err(error);
            }
            Err(error) if failures + 1 >= POLL_FAILURES => {
                let why =
                    format!("the upstream server {upstream} did not answer for its task: {error}");
                return Ok(text_result(why, true).into());
            }
            Err(_) => {
                failures += 1;
                continue;
            }
        };
        failures = 0;
        if task.task.status_message.is_some() && task.task.status_message != said {
            said.clone_from(&task.task.status_message);
            cx.progress(f64::from(polls), None, said.as_deref()).await;
        }
        match task.payload {
            TaskPayload::Working => {}
            TaskPayload::Completed { result } => {
                unfinished.ended();
                let result: CallToolResult = serde_json::from_value(result.into())
                    .map_err(|e| not_a_result(upstream, &e.to_string()))?;
                return Ok(CallToolResponse::Complete(result));
            }
            TaskPayload::Failed { error } => {
                unfinished.ended();
                let error: ErrorData = serde_json::from_value(error.into())
                    .map_err(|e| not_a_result(upstream, &e.to_string()))?;
                return Err(error);
            }
            TaskPayload::Cancelled => {
                unfinished.ended();
                let why = format!("the upstream server {upstream} cancelled the task");
                return Ok(text_result(why, true).into());
            }
            TaskPayload::InputRequired { input_requests } => {
                // A 2025-era member is asked now, on its session; a
                // 2026-07-28 one that holds no task handle cannot be.
                if cx.is_modern() {
                    let why = format!(
                        "the upstream server {upstream} needs input for this call; call it from a \
                         client that declares the tasks extension"
                    );
                    return Ok(text_result(why, true).into());
                }
                let Asked::Answered(answers) = cx.ask(input_requests, None).await? else {
                    return Ok(text_result("the input round was not answered", true).into());
                };
                let update = UpdateTaskParams::new(id.clone(), answers.into_iter().collect());
                peer.update_task(update).await.map_err(|error| {
                    McpError::internal_error(
                        format!("the upstream server {upstream}: {error}"),
                        None,
                    )
                })?;
            }
            // A status a later revision adds: polled on, within the time limit.
            _ => {}
        }
    }
}

fn not_a_result(upstream: &str, why: &str) -> McpError {
    McpError::internal_error(
        format!("the upstream server {upstream} ended its task with something unreadable: {why}"),
        None,
    )
}
