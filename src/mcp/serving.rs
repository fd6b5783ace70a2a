//! The caller of the request rmcp is handling on this task: rmcp builds
//! the request's handler (`McpHandler::for_http`) before any request
//! context exists, so the engine (`engine.rs`) sets it here and the
//! handler reads it.

use crate::registry::Caller;

tokio::task_local! {
    /// Set by the engine around rmcp's `handle`. The handler answers for
    /// this caller what rmcp asks before a request context exists: the tool
    /// a name stands for (to check `Mcp-Param-*` headers), what a listen
    /// filter grants.
    pub(super) static SERVING: Caller;
}

/// The caller the engine is handing a request to rmcp for, if any.
pub(super) fn serving() -> Option<Caller> {
    SERVING.try_with(Caller::clone).ok()
}
