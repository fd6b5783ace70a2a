//! teamgate as the client of one upstream: its notifications and its
//! requests to the client, routed to whoever inside teamgate waits for them.

#![allow(deprecated)] // Sampling and roots: deprecated in 2026-07-28, still what 2025-era upstreams ask.

use std::sync::Arc;

use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
        ElicitResult, ListRootsResult, ProgressNotificationParam, ProtocolVersion,
        ResourceUpdatedNotificationParam, TASKS_EXTENSION_ID,
    },
    service::{
        ClientInitializeError, ClientLifecycleMode, ClientServiceExt, NotificationContext,
        RequestContext, RunningService, ServiceExt,
    },
    transport::IntoTransport,
};
use serde::{Serialize, de::DeserializeOwned};

use super::{link::Link, relay::Kind};
use crate::{config::UpstreamProtocol, registry::ChangeEvent};

/// teamgate's client side toward one upstream: routes its progress to the
/// call that asked, its requests to the member whose call it serves
/// (`relay.rs`), and its list changes to the supervisor.
#[derive(Clone)]
pub(super) struct Client(pub(super) std::sync::Weak<Link>);

impl ClientHandler for Client {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        ask_member(self.0.upgrade(), Kind::Elicitation, Some(request), context).await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        ask_member(self.0.upgrade(), Kind::Sampling, Some(params), context).await
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        ask_member(self.0.upgrade(), Kind::Roots, None::<()>, context).await
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(link) = self.0.upgrade() {
            link.calls.progress(params);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(link) = self.0.upgrade() {
            link.list_changed();
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(link) = self.0.upgrade() {
            link.list_changed();
        }
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(link) = self.0.upgrade() {
            link.list_changed();
        }
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(link) = self.0.upgrade() {
            link.resource_event(ChangeEvent::ResourceUpdated { uri: params.uri });
        }
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.client_info.name = "teamgate".into();
        info.client_info.version = env!("CARGO_PKG_VERSION").into();
        // Upstreams may ask: each request is relayed to the member whose
        // call it serves, or refused (relay.rs).
        let mut capabilities = serde_json::json!({
            "elicitation": {"form": {}, "url": {}},
            "sampling": {},
            "roots": {},
        });
        // On a 2026-07-28 link every request may come back as the
        // upstream's own task: teamgate waits for it (`task_wait.rs`).
        let modern =
            (self.0.upgrade()).is_some_and(|l| l.config.protocol == UpstreamProtocol::V2026);
        if modern {
            capabilities["extensions"] = serde_json::json!({TASKS_EXTENSION_ID: {}});
        }
        info.capabilities = serde_json::from_value(capabilities).expect("client capabilities");
        info
    }
}

impl Client {
    /// Connects over `transport` in the upstream's `protocol` era:
    /// `initialize` (2025-11-25), or `server/discover` (2026-07-28: no
    /// session; each request carries teamgate's capabilities).
    pub(super) async fn handshake<T, E, A>(
        self,
        transport: T,
        protocol: UpstreamProtocol,
    ) -> Result<RunningService<RoleClient, Client>, ClientInitializeError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        match protocol {
            UpstreamProtocol::V2025 => self.serve(transport).await,
            UpstreamProtocol::V2026 => {
                let preferred_versions = vec![ProtocolVersion::V_2026_07_28];
                let lifecycle = ClientLifecycleMode::Discover { preferred_versions };
                self.serve_with_lifecycle(transport, lifecycle).await
            }
        }
    }
}

/// What the client handler does with each of them: relays the
/// request (scrubbed of the upstream's secrets) and reads the answer as `T`.
pub(super) async fn ask_member<P: Serialize, T: DeserializeOwned>(
    link: Option<Arc<Link>>,
    kind: Kind,
    params: Option<P>,
    context: RequestContext<RoleClient>,
) -> Result<T, ErrorData> {
    let link =
        link.ok_or_else(|| ErrorData::internal_error("this upstream connection is closing", None))?;
    let mut params = params
        .map(|p| serde_json::to_value(p).unwrap_or_default())
        .unwrap_or_default();
    link.scrubber.value(&mut params);
    let relayed = link.calls.relay.relay(kind, params, &context).await;
    // Said here in words: rmcp logs an error answer only as debug text, and
    // the default `log.level` leaves that out.
    // Routine: an upstream asking outside any call (the filesystem server
    // asks for roots once connected) asks again within one.
    let answer = relayed.inspect_err(|refused| {
        let (upstream, method) = (&link.config.name, kind.method());
        tracing::info!(%upstream, method, reason = %refused.message, "an upstream's request to its client was not relayed");
    })?;
    serde_json::from_value(answer).map_err(|error| {
        let method = kind.method();
        ErrorData::internal_error(
            format!("the member's client answered {method} with an invalid result: {error}"),
            None,
        )
    })
}
