//! What the handler's methods share: a call's context, the time limit on a
//! call, and list hints.

use rmcp::model::{CacheScope, PaginatedRequestParams};

use super::{
    InputResponses, LoggingLevel, McpError, McpHandler, Mrtr, RequestContext, RoleServer, caller_of,
};
use crate::protocol::{REMOVED_IN_2026, STANDARD_METHODS, is_modern};
use crate::registry::{CallContext, Registry};

impl McpHandler {
    /// The context of a call to `method` on `target`, with what the client
    /// sent back for MRTR.
    pub(super) fn call_context(
        &self,
        request: RequestContext<RoleServer>,
        method: &str,
        target: &str,
        responses: Option<InputResponses>,
        state: Option<String>,
    ) -> CallContext {
        let modern = is_modern(&request);
        // Modern clients opt into log lines per request; legacy sessions get
        // info and above until they call logging/setLevel.
        let threshold = if modern {
            request.meta.log_level()
        } else {
            Some(
                self.session
                    .log_level
                    .lock()
                    .expect("log level lock")
                    .unwrap_or(LoggingLevel::Info),
            )
        };
        let caller = caller_of(&request);
        let mrtr = Mrtr::new(
            self.shared.state_keys.clone(),
            &[&caller.user, method, target],
            responses,
            state,
        );
        CallContext::new(request, caller, threshold, mrtr)
            .with_member_secrets(self.shared.member_secrets.clone())
            .with_approvals(self.shared.approvals.clone())
    }
}

/// `call`'s output, or None when it takes longer than `limit`. Many tools
/// answer on their first poll; only a pending call arms a timer (registering
/// and removing one takes the runtime's timer lock on every call). With no
/// time left the call is not started: its request's deadline has passed.
pub(super) async fn within<T>(
    limit: std::time::Duration,
    call: impl Future<Output = T>,
) -> Option<T> {
    if limit.is_zero() {
        return None;
    }
    let mut call = std::pin::pin!(call);
    if let std::task::Poll::Ready(output) = futures::poll!(call.as_mut()) {
        return Some(output);
    }
    tokio::time::timeout(limit, call).await.ok()
}

/// `ttlMs` and `cacheScope` of a list result (2026-07-28; rmcp strips them
/// for older clients). Lists are filtered by the caller's scopes: private.
pub(super) fn list_hints(registry: &Registry) -> (Option<u64>, Option<CacheScope>) {
    (Some(registry.list_ttl_ms()), Some(CacheScope::Private))
}

/// The error for a request rmcp did not route to a method: a known method
/// whose params did not parse (unless 2026-07-28 removed it), else an
/// unknown one.
pub(super) fn unserved(method: &str, modern: bool) -> McpError {
    let removed_in_modern = REMOVED_IN_2026.contains(&method) && modern;
    if STANDARD_METHODS.contains(&method) && !removed_in_modern {
        McpError::invalid_params(format!("Invalid params for {method}"), None)
    } else {
        let code = rmcp::model::ErrorCode::METHOD_NOT_FOUND;
        McpError::new(code, format!("Method not found: {method}"), None)
    }
}

pub(super) fn cursor(request: &Option<PaginatedRequestParams>) -> Option<&str> {
    request.as_ref().and_then(|r| r.cursor.as_deref())
}
