//! The engine the HTTP stack hands each MCP request to: the session policy
//! (`admission.rs`), then rmcp's Streamable HTTP service, run for the
//! request's caller.

use std::sync::Arc;

use axum::{
    body::Body,
    http::Request,
    response::{IntoResponse, Response},
};

use super::{
    Endpoints, McpHandler, Sessions, StreamableHttpService,
    admission::{Admission, EngineError},
};
use crate::registry::Caller;

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

/// The MCP endpoint's engine: rmcp's service and teamgate's handler.
#[derive(Clone)]
pub struct Engine {
    rmcp: StreamableHttpService<McpHandler, Sessions>,
    admission: Arc<Admission>,
    /// The main endpoint and the toolsets' (`endpoint.rs`).
    endpoints: Arc<Endpoints>,
}

impl Engine {
    pub fn new(
        rmcp: StreamableHttpService<McpHandler, Sessions>,
        admission: Admission,
        endpoints: Endpoints,
    ) -> Self {
        Self {
            rmcp,
            admission: Arc::new(admission),
            endpoints: Arc::new(endpoints),
        }
    }

    /// Serves one request (the router's MCP endpoint, `http/stack.rs`). By
    /// reference: rmcp's tower `call` would clone its service per request,
    /// and each clone locks the shutdown token's mutex.
    pub async fn serve(&self, request: Request<Body>) -> Result<Response, EngineError> {
        let (mut parts, body) = request.into_parts();
        let caller = parts.extensions.get::<Caller>().cloned();
        // Without a known caller (no authentication step in front), rmcp's
        // questions are answered for nobody.
        let Some(caller) = caller else {
            self.admission.check(&Caller::anonymous(), &parts).await?;
            let request = Request::from_parts(parts, body);
            return Ok(self.rmcp.handle(request).await.into_response());
        };
        let caller = self.endpoints.admit(parts.uri.path(), caller)?;
        // What the handler reads per request: the caller on its endpoint.
        parts.extensions.insert(caller.clone());
        self.admission.check(&caller, &parts).await?;
        let request = Request::from_parts(parts, body);
        Ok(SERVING
            .scope(caller, self.rmcp.handle(request))
            .await
            .into_response())
    }
}
