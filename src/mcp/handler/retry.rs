//! A task whose replica died, run again on this one (`task_retry`): its
//! call rebuilt from what the task kept, as its caller was, through the
//! registry serving now and every policy of a first run (scopes again,
//! caller binding, guardrails, member credentials, scrubbing).
//!
//! The call has no client connection: rmcp's `RequestContext` needs a
//! peer, so it gets one whose transport is already closed. Whatever the
//! tool would send the client directly fails at once; its input and
//! progress go through the task's row, as a task's always do.

use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use rmcp::{ServerHandler, model::NumberOrString};
use tokio_util::sync::CancellationToken;

use super::{McpError, Mrtr, RequestContext, RoleServer, Shared, access, tasks::task_call};
use crate::{
    mcp::{
        calls::Audit,
        tasks::{Rerunner, StoreInput, StoredCall, TaskEnd},
    },
    registry::{CallContext, Kind},
};

/// Claimed tasks run again through `shared`'s registry and policies.
pub fn retry_tasks(shared: &Arc<Shared>) {
    if let Some(tasks) = &shared.tasks {
        tasks.retry_with(Arc::new(Retrier(Arc::downgrade(shared))));
    }
}

/// Weak: the tasks are part of the shared state it reads.
struct Retrier(Weak<Shared>);

/// The service behind a detached peer; it never serves a request.
struct Detached;

impl ServerHandler for Detached {}

/// A request context with `meta` and a peer whose client is gone.
fn detached(meta: serde_json::Map<String, serde_json::Value>) -> RequestContext<RoleServer> {
    let (client, server) = tokio::io::duplex(64);
    drop(client);
    let service = rmcp::service::serve_directly(Detached, server, None);
    let mut request = RequestContext::new(NumberOrString::Number(0), service.peer().clone());
    request.meta = meta.into();
    request
}

fn failed(error: McpError) -> BoxFuture<'static, TaskEnd> {
    Box::pin(std::future::ready(Err(error)))
}

impl Rerunner for Retrier {
    fn rerun(
        &self,
        tool: &str,
        stored: StoredCall,
        (input, cancel): (Arc<StoreInput>, CancellationToken),
        end: Option<Audit>,
    ) -> (BoxFuture<'static, TaskEnd>, Option<Audit>) {
        let Some(shared) = self.0.upgrade() else {
            let stopping = McpError::internal_error("the server is stopping", None);
            return (failed(stopping), end);
        };
        let registry = shared.registry();
        let caller = stored.caller();
        // The configuration may have changed since: the caller must still
        // be allowed the tool, by the registry that runs it.
        if !access::allowed(&caller, &registry, Kind::Tool, tool) {
            let message = format!(
                "The task could not run again: {} may no longer call the tool {tool}",
                caller.user
            );
            return (failed(McpError::invalid_request(message, None)), end);
        }
        let mrtr = Mrtr::new(
            shared.state_keys.clone(),
            &[&caller.user, "tools/call", tool],
            stored.input_responses,
            None,
        );
        let cx = CallContext::new(detached(stored.meta), caller, None, mrtr)
            .with_member_secrets(shared.member_secrets.clone())
            .with_approvals(shared.approvals.clone())
            .with_scrubber(registry.scrubber().clone())
            .in_task(input, cancel);
        let end = end.map(|audit| {
            (audit.served_by(registry.origin(tool)))
                .credential(cx.credential())
                .guardrails(cx.fired())
        });
        let own = registry.tool(tool).and_then(|(p, _)| p.timeout(tool));
        let limit = own.unwrap_or(shared.tool_timeout);
        let call = task_call(registry, tool.to_owned(), stored.arguments, cx, limit);
        (call, end)
    }
}
