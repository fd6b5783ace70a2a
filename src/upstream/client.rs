//! teamgate as the client of one upstream: its notifications and its
//! requests to the client, routed to whoever inside teamgate waits for them.

#![allow(deprecated)] // Sampling and roots: deprecated in 2026-07-28, still what 2025-era upstreams ask.

use std::sync::Arc;

use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
        ElicitResult, ListRootsResult, ProgressNotificationParam, ResourceUpdatedNotificationParam,
    },
    service::{NotificationContext, RequestContext},
};
use serde::{Serialize, de::DeserializeOwned};

use super::{link::Link, relay::Kind};
use crate::registry::ChangeEvent;

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
            link.calls.progress(params).await;
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
        info.capabilities = serde_json::from_value(serde_json::json!({
            "elicitation": {"form": {}, "url": {}},
            "sampling": {},
            "roots": {},
        }))
        .expect("client capabilities");
        info
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
