//! teamgate's single rmcp `ServerHandler`: routes every MCP method to the
//! capability registry. rmcp owns the wire (both eras, sessions, SSE); this
//! file owns what the methods mean.

#![allow(deprecated)] // logging/setLevel and resources/subscribe are legacy-only but served.

mod catalog;
mod methods;
mod retry;
#[cfg(test)]
mod sizes;
mod skills;
mod support;
mod tasks;

pub use retry::retry_tasks;
use support::{cursor, list_hints, within};

use std::{
    borrow::Cow,
    sync::{Arc, LazyLock},
};

use super::{
    CallToolResponse, GetPromptResponse, InputResponses, LoggingLevel, McpError, Mrtr,
    ProtocolVersion, ReadResourceResponse, RequestContext, RoleServer, SUPPORTED_VERSIONS, Shared,
    SubscriptionContext, SubscriptionFilter, Tool, access,
    calls::{caller_of, ended, facts_of, outcome_slot},
    listing::page,
    stamp::Stamp,
    subscriptions,
};
use crate::protocol::is_modern;
use crate::registry::{Caller, Identity, Kind};
use rmcp::{
    ServerHandler,
    model::{
        CallToolRequestParams, CompleteRequestParams, CompleteResult, GetPromptRequestParams,
        InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
        ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, SetLevelRequestParams,
        SubscribeRequestParams, UnsubscribeRequestParams,
    },
};

/// rmcp builds one handler per legacy session and one per stateless request;
/// cloning it is a few `Arc` bumps.
#[derive(Clone)]
pub struct McpHandler {
    shared: Arc<Shared>,
    session: Arc<subscriptions::SessionState>,
    /// Who a handler built for one request serves: rmcp asks for a tool's
    /// schema and settles a `subscriptions/listen` filter before any request
    /// context exists. `None` on stdio, whose one user is the anonymous one.
    serving: Option<Caller>,
}

impl McpHandler {
    pub fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            session: Arc::default(),
            serving: None,
        }
    }

    /// The handler rmcp builds for an HTTP session or request: it serves the
    /// caller `Engine` named for this task, else nobody (so what is decided
    /// without a known caller grants nothing).
    pub fn for_http(shared: Arc<Shared>) -> Self {
        static NOBODY: LazyLock<Caller> = LazyLock::new(|| {
            Identity {
                user: String::new(),
                scopes: Vec::new(),
                token_id: None,
                claims: Default::default(),
            }
            .into()
        });
        let serving = super::serving::serving().unwrap_or_else(|| NOBODY.clone());
        Self::new(shared).serving(serving)
    }

    /// This handler serves `caller` (see `serving`).
    pub fn serving(mut self, caller: Caller) -> Self {
        self.serving = Some(caller);
        self
    }

    /// Adds the fields 2026-07-28 requires on results; legacy results pass as they are.
    fn finish<T: Stamp>(&self, modern: bool, mut result: T) -> T {
        if modern {
            result.stamp(&self.shared.server_info_json);
        }
        result
    }
}

/// Every method that awaits a provider or the store boxes what it awaits:
/// rmcp's per-request task holds the largest handler future inline and moves
/// it as it starts, ends and is read; a box keeps that task small
/// (`sizes.rs` holds each method to it).
impl ServerHandler for McpHandler {
    fn get_info(&self) -> InitializeResult {
        let mut info = self.shared.current_info();
        // A toolset's endpoint introduces itself with its description.
        let endpoint = self.serving.as_ref().and_then(Caller::endpoint);
        if let Some(toolset) =
            endpoint.and_then(|name| self.shared.registry().toolset(name).cloned())
            && !toolset.description.is_empty()
        {
            info.instructions = Some(toolset.description.clone());
        }
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(&SUPPORTED_VERSIONS)
    }

    /// rmcp checks `Mcp-Param-*` headers against the tool's schema: a tool
    /// the caller may not use is unknown there too, so both answer alike.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        let registry = self.shared.registry();
        let caller = self.serving.as_ref();
        if caller.is_some_and(|c| catalog::searching(&registry, c))
            && let Some(meta) = catalog::meta_tool(name)
        {
            return Some(meta);
        }
        let (_, tool) = registry.tool(name)?;
        if caller.is_some_and(|c| !access::allowed(c, &registry, Kind::Tool, name)) {
            return None;
        }
        Some(tool.clone())
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        subscriptions::forward_to_session(&self.shared.bus, &self.session, context.peer);
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        // Removed in 2026-07-28: the level travels in each request's `_meta`.
        if is_modern(&context) {
            let removed = McpError::method_not_found::<rmcp::model::SetLevelRequestMethod>();
            return ended(outcome_slot(&context).as_ref(), Err(removed));
        }
        *self.session.log_level.lock().expect("log level lock") = Some(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let registry = self.shared.registry();
        let caller = caller_of(&context);
        let tools = if catalog::searching(&registry, &caller) {
            catalog::listing(&registry, &caller)
        } else {
            access::visible(&caller, Kind::Tool, &registry, registry.tools(), |t| {
                &t.name
            })
        };
        let (tools, next) = ended(
            outcome_slot(&context).as_ref(),
            page(&tools, cursor(&request)),
        )?;
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next;
        (result.ttl_ms, result.cache_scope) = list_hints(&registry);
        Ok(self.finish(is_modern(&context), result))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let slot = outcome_slot(&context);
        let result = Box::pin(self.call_tool_in(request, context)).await;
        ended(slot.as_ref(), result)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let registry = self.shared.registry();
        let resources = access::visible(
            &caller_of(&context),
            Kind::Resource,
            &registry,
            &registry.resources(),
            |r| &r.uri,
        );
        let (resources, next) = ended(
            outcome_slot(&context).as_ref(),
            page(&resources, cursor(&request)),
        )?;
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = next;
        (result.ttl_ms, result.cache_scope) = list_hints(&registry);
        Ok(self.finish(is_modern(&context), result))
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let registry = self.shared.registry();
        let templates = access::templates(&caller_of(&context), &registry);
        let (templates, next) = ended(
            outcome_slot(&context).as_ref(),
            page(&templates, cursor(&request)),
        )?;
        let mut result = ListResourceTemplatesResult::with_all_items(templates);
        result.next_cursor = next;
        (result.ttl_ms, result.cache_scope) = list_hints(&registry);
        Ok(self.finish(is_modern(&context), result))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let slot = outcome_slot(&context);
        let result = Box::pin(self.read_resource_in(request, context)).await;
        ended(slot.as_ref(), result)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let registry = self.shared.registry();
        let slot = outcome_slot(&context);
        if !registry.subscribable() {
            let absent = McpError::method_not_found::<rmcp::model::SubscribeRequestMethod>();
            return ended(slot.as_ref(), Err(absent));
        }
        // One answer for what is not there and what the caller may not read.
        if !access::may_subscribe(&caller_of(&context), &registry, &request.uri) {
            let unknown = McpError::resource_not_found(
                "Resource not found",
                Some(serde_json::json!({ "uri": request.uri })),
            );
            return ended(slot.as_ref(), Err(unknown));
        }
        // The resource's provider first: an upstream subscribes in turn.
        let held = subscriptions::Held::hold(&self.session.held, &registry, &request.uri);
        if let Err(error) = Box::pin(held).await {
            return ended(slot.as_ref(), Err(error));
        }
        self.session
            .subscriptions
            .lock()
            .expect("subscriptions lock")
            .insert(request.uri);
        subscriptions::forward_to_session(&self.shared.bus, &self.session, context.peer);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.session
            .subscriptions
            .lock()
            .expect("subscriptions lock")
            .remove(&request.uri);
        let held = &self.session.held;
        Box::pin(subscriptions::Held::release(held, &request.uri)).await;
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let caller = self.serving.clone().unwrap_or_else(Caller::anonymous);
        let registry = self.shared.registry();
        Some(access::subscription_filter(&caller, &registry, requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        // Boxed: the stream's future was the largest of all (see the note on
        // this impl), and rmcp moves that size on every request.
        let registry = self.shared.registry();
        Box::pin(subscriptions::listen(&self.shared.bus, registry, context)).await;
        Ok(())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let registry = self.shared.registry();
        let caller = caller_of(&context);
        let prompts = access::visible(&caller, Kind::Prompt, &registry, registry.prompts(), |p| {
            &p.name
        });
        let (prompts, next) = ended(
            outcome_slot(&context).as_ref(),
            page(&prompts, cursor(&request)),
        )?;
        let mut result = ListPromptsResult::with_all_items(prompts);
        result.next_cursor = next;
        (result.ttl_ms, result.cache_scope) = list_hints(&registry);
        Ok(self.finish(is_modern(&context), result))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let slot = outcome_slot(&context);
        let result = Box::pin(self.get_prompt_in(request, context)).await;
        ended(slot.as_ref(), result)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let slot = outcome_slot(&context);
        let result = Box::pin(self.complete_in(request, context)).await;
        ended(slot.as_ref(), result)
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, McpError> {
        Box::pin(self.list_skills_in(request, context)).await
    }

    async fn get_skill(
        &self,
        request: rmcp::model::GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, McpError> {
        Box::pin(self.get_skill_in(request, context)).await
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        let slot = outcome_slot(&context);
        let result = Box::pin(self.get_task_in(request, &context)).await;
        ended(slot.as_ref(), result)
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let slot = outcome_slot(&context);
        let result = Box::pin(self.update_task_in(request, &context)).await;
        ended(slot.as_ref(), result)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let slot = outcome_slot(&context);
        let result = Box::pin(self.cancel_task_in(request, &context)).await;
        ended(slot.as_ref(), result)
    }

    /// rmcp routes unknown methods here, and also known methods whose params
    /// do not parse: the latter are the caller's bad params, not a missing method.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        let error = support::unserved(&request.method, is_modern(&context));
        ended(outcome_slot(&context).as_ref(), Err(error))
    }
}
