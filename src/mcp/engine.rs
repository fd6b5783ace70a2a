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
use crate::{
    protocol::ProtocolEra,
    registry::{Caller, RequestFacts},
};

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
        // The guard made the request's facts; without it (the engine served
        // on its own) the request is nobody's, on the main endpoint.
        let facts = match RequestFacts::of(&parts) {
            Some(facts) => facts.clone(),
            None => Arc::new(RequestFacts::new(
                &parts,
                &Default::default(),
                Caller::anonymous(),
                ProtocolEra::Legacy,
            )),
        };
        let caller = self
            .endpoints
            .admit(parts.uri.path(), facts.caller.clone())?;
        // What the handler reads per request: the caller on its endpoint.
        let facts = match caller.endpoint() {
            Some(_) => Arc::new(facts.with_caller(caller)),
            None => facts,
        };
        parts.extensions.insert(facts.clone());
        self.admission.check(&facts, &parts).await?;
        let shaping = Shaping::begin(self.gate.as_ref(), &self.streams, &mut parts, &facts)?;
        let request = Request::from_parts(parts, body);
        let response = SERVING
            .scope(facts.caller.clone(), self.rmcp.handle(request))
            .await
            .into_response();
        shaping.finish(response).await
    }
}
