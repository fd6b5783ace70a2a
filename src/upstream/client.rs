//! teamgate as the client of one upstream: its notifications and its
//! requests to the client, routed to whoever inside teamgate waits for them.

#![allow(deprecated)] // Sampling and roots: deprecated in 2026-07-28, still what 2025-era upstreams ask.

use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
        ElicitResult, ListRootsResult, ProgressNotificationParam, ResourceUpdatedNotificationParam,
    },
    service::{NotificationContext, RequestContext},
};

use super::{
    link::Link,
    relay::{Kind, ask_member},
};
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
        let Some(link) = self.0.upgrade() else { return };
        let _gate = link.sending.lock().await;
        let route = link
            .progress
            .lock()
            .expect("progress routes lock")
            .get(&params.progress_token)
            .cloned();
        if let Some(route) = route {
            // A call that does not keep up loses progress, never blocks the connection.
            let _ = route.try_send(params);
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
