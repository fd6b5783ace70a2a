//! The engine the HTTP stack hands each MCP request to: the endpoint and
//! session policy (`endpoint.rs`, `admission.rs`), then rmcp's Streamable
//! HTTP service run for the request's caller, its reply shaped
//! (`reply.rs`).

use std::sync::Arc;

use axum::{
    body::Body,
    http::Request,
    response::{IntoResponse, Response},
};

use super::{
    Endpoints, McpHandler, Sessions, StreamableHttpService,
    admission::Admission,
    error::EngineError,
    reply::{Gate, Shaping},
    serving::SERVING,
    streams::StreamCaps,
};
use crate::registry::Caller;

/// The MCP endpoint's engine: rmcp's service and teamgate's handler.
#[derive(Clone)]
pub struct Engine {
    rmcp: StreamableHttpService<McpHandler, Sessions>,
    admission: Arc<Admission>,
    /// The main endpoint and the toolsets' (`endpoint.rs`).
    endpoints: Arc<Endpoints>,
    /// The server's answers to the engine's questions (`gate.rs`), if any.
    gate: Option<Arc<dyn Gate>>,
    /// Caps on open long-lived streams (`streams.rs`).
    streams: StreamCaps,
}

impl Engine {
    pub fn new(
        rmcp: StreamableHttpService<McpHandler, Sessions>,
        admission: Admission,
        endpoints: Endpoints,
        (gate, streams): (Option<Arc<dyn Gate>>, StreamCaps),
    ) -> Self {
        Self {
            rmcp,
            admission: Arc::new(admission),
            endpoints: Arc::new(endpoints),
            gate,
            streams,
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
            let caller = Caller::anonymous();
            self.admission.check(&caller, &parts).await?;
            let shaping = Shaping::begin(self.gate.as_ref(), &self.streams, &mut parts, &caller)?;
            let request = Request::from_parts(parts, body);
            let response = self.rmcp.handle(request).await.into_response();
            return shaping.finish(response).await;
        };
        let caller = self.endpoints.admit(parts.uri.path(), caller)?;
        // What the handler reads per request: the caller on its endpoint.
        parts.extensions.insert(caller.clone());
        self.admission.check(&caller, &parts).await?;
        let shaping = Shaping::begin(self.gate.as_ref(), &self.streams, &mut parts, &caller)?;
        let request = Request::from_parts(parts, body);
        let response = SERVING
            .scope(caller, self.rmcp.handle(request))
            .await
            .into_response();
        shaping.finish(response).await
    }
}
