//! An upstream's tools as the registry offers them: filtered by the
//! configured globs, renamed with the prefix, with the operator's
//! `[upstreams.tools.NAME]` words and limits over the upstream's (the
//! caller binding, `confirm` and caching of an override are the declared
//! tools' own, wrapped around this by `app`); each call forwarded with
//! teamgate's timeout and the member's cancellation, its progress and its
//! requests to the client relayed to that member only (`forward.rs`).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use async_trait::async_trait;
use globset::{Glob, GlobSet, GlobSetBuilder};
use rmcp::{
    model::{CallToolRequest, CallToolRequestParams, ClientRequest, ServerResult},
    service::ServiceError,
};

use super::{
    forward::{Forward, Outcome},
    link::{Link, Status},
    members::{MemberLink, Members},
};
use crate::{
    config::{OnUnavailable, ToolOverride},
    protocol::{CallToolResponse, JsonObject, McpError, Tool, text_result},
    registry::{
        CallContext, CredentialKind, ToolProvider, apps,
        upstream_task::{UpstreamTaskOp, UpstreamTaskReply},
    },
};

pub(super) struct UpstreamTools {
    link: Arc<Link>,
    /// Set when the upstream's headers name a member's credential or it may
    /// want members' OAuth: once active, each member's calls go over their
    /// own connection.
    members: Option<Arc<Members>>,
    include: GlobSet,
    exclude: GlobSet,
    /// The offer derived from the upstream's current list, rebuilt when
    /// that list changes (its `Arc` is another).
    view: Mutex<(Arc<Vec<Tool>>, Arc<View>)>,
    /// The other resource providers, for the URIs of the UIs its tools name.
    neighbours: Arc<super::resources::Neighbours>,
}

/// The tools as members see them, and each exposed name's upstream name.
#[derive(Default)]
struct View {
    tools: Vec<Tool>,
    original: HashMap<String, String>,
    /// Exposed names annotated `destructiveHint: true`, not `readOnlyHint`
    /// (after the operator's overrides of the hints).
    destructive: std::collections::HashSet<String>,
}

impl UpstreamTools {
    pub(super) fn new(
        link: Arc<Link>,
        neighbours: Arc<super::resources::Neighbours>,
        members: Option<Arc<Members>>,
    ) -> anyhow::Result<Self> {
        let tools = &link.config.tools;
        Ok(Self {
            members,
            neighbours,
            include: globs(&tools.include)?,
            exclude: globs(&tools.exclude)?,
            view: Mutex::default(),
            link,
        })
    }

    /// Whether the upstream's tool `name` is offered: matched by the globs
    /// and not withheld for a changed definition.
    fn offered(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.is_match(name))
            && !self.exclude.is_match(name)
            && !self.link.pins.withholds(name)
    }

    /// The connection a call of `name` by the caller of `cx` goes over: the
    /// member's own when the headers name their credential or it wants
    /// their OAuth; else the upstream's. `Err`: what to answer instead.
    async fn link_of(&self, name: &str, cx: &CallContext) -> Result<MemberLink, CallToolResponse> {
        match &self.members {
            Some(members) if members.active() => {
                // An OAuth upstream found down (`listing.rs`): said plainly.
                let status = self.link.status().0;
                if members.oauth() && status != Status::Up {
                    return Err(self.unavailable(status.label()));
                }
                members.link_for(&self.link, name, cx).await
            }
            _ => Ok(MemberLink {
                link: self.link.clone(),
                used: Vec::new(),
            }),
        }
    }

    /// The current offer; `None` when the upstream's tools are not listed.
    fn view(&self) -> Option<Arc<View>> {
        let listed = {
            let current = self.link.current.lock().expect("upstream state lock");
            let shown = current.status == Status::Up
                || self.link.config.on_unavailable == OnUnavailable::Error;
            shown.then(|| current.tools.clone())?
        };
        let mut view = self.view.lock().expect("upstream view lock");
        if !Arc::ptr_eq(&view.0, &listed) {
            *view = (listed.clone(), Arc::new(self.derive(&listed)));
        }
        Some(view.1.clone())
    }

    /// The offer of `listed`. An exposed name means one upstream tool: a
    /// name the operator's `rename` gives one tool is not another's, even
    /// when that one's prefixed name is the same (an upstream renaming a
    /// pinned tool to it would show the pinned definition and run its own),
    /// and of two tools with one exposed name only the first is offered.
    fn derive(&self, listed: &[Tool]) -> View {
        let config = &self.link.config;
        let overrides = &config.tools.overrides;
        let renamed: std::collections::HashSet<&str> = (overrides.values())
            .filter_map(|o| o.rename.as_deref())
            .collect();
        let mut view = View::default();
        for tool in listed.iter().filter(|t| self.offered(&t.name)) {
            let name = config.exposed(&tool.name);
            let own_rename =
                (overrides.get(tool.name.as_ref())).is_some_and(|o| o.rename.is_some());
            if view.original.contains_key(&name) || (!own_rename && renamed.contains(name.as_str()))
            {
                tracing::warn!(upstream = %config.name, tool = %tool.name, exposed = %name, "an upstream tool's exposed name is another of its tools' (a rename in the configuration); not offered");
                continue;
            }
            let mut exposed = tool.clone();
            exposed.name = name.into();
            if let Some(over) = config.tools.overrides.get(tool.name.as_ref()) {
                overridden(&mut exposed, over);
            }
            view.original
                .insert(exposed.name.to_string(), tool.name.to_string());
            let hints = exposed.annotations.as_ref();
            if hints
                .is_some_and(|h| h.destructive_hint == Some(true) && h.read_only_hint != Some(true))
            {
                view.destructive.insert(exposed.name.to_string());
            }
            view.tools.push(exposed);
        }
        view
    }

    fn policy(&self, exposed: &str) -> Option<&ToolOverride> {
        let view = self.view()?;
        let original = view.original.get(exposed)?;
        self.link.config.tools.overrides.get(original)
    }

    fn unavailable(&self, why: &str) -> CallToolResponse {
        let name = &self.link.config.name;
        text_result(
            format!("the upstream server {name} is unavailable ({why}); try again shortly"),
            true,
        )
        .into()
    }

    /// Sends the call over `link` (or resumes the one it parked) and waits
    /// for its result.
    async fn forward(
        &self,
        link: &Arc<Link>,
        original: String,
        arguments: JsonObject,
        cx: &CallContext,
    ) -> Result<CallToolResponse, McpError> {
        // A 2026-07-28 retry resumes the call it parked (see forward.rs).
        let forward = match Forward::resume(&link.calls, cx)? {
            Some(forward) => forward,
            None => {
                let peer = {
                    let current = link.current.lock().expect("upstream state lock");
                    match (&current.peer, current.status) {
                        (Some(peer), Status::Up) => peer.clone(),
                        _ => return Ok(self.unavailable(current.status.label())),
                    }
                };
                // The audit record names the credential kind: the upstream's
                // configured headers and secret variables are shared ones.
                let config = &self.link.config;
                let secret_header = config.headers.values().any(|t| t.contains("${"));
                if secret_header || !config.secret_env.is_empty() {
                    cx.credential().report(CredentialKind::Shared);
                }
                let params = CallToolRequestParams::new(original).with_arguments(arguments);
                let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
                match Forward::start(&link.calls, &peer, request, cx).await {
                    Ok(forward) => forward,
                    Err(error) => return Ok(self.unavailable(&error.to_string())),
                }
            }
        };
        let started = forward.started();
        let result = match forward.run(cx).await {
            Outcome::Done(result) => *result,
            Outcome::Input(input_required) => return Ok(input_required.into()),
            Outcome::Cancelled => return Err(McpError::internal_error("cancelled", None)),
        };
        let (outcome, response) = match result {
            Ok(Ok(ServerResult::CallToolResult(result))) => {
                let outcome = if result.is_error == Some(true) {
                    "tool_error"
                } else {
                    "ok"
                };
                (outcome, Ok(CallToolResponse::Complete(result)))
            }
            // The upstream made the call its own task (2026-07-28 links
            // declare the extension): waited for here, within the call.
            // The member takes a task handle: the engine maps it.
            Ok(Ok(ServerResult::CreateTaskResult(seed))) if cx.takes_task_handle() => {
                ("ok", Ok(CallToolResponse::Task(seed)))
            }
            Ok(Ok(ServerResult::CreateTaskResult(seed))) => {
                let peer = link.current.lock().expect("upstream state lock").peer.clone();
                let Some(peer) = peer else {
                    return Ok(self.unavailable("the connection closed"));
                };
                let name = &self.link.config.name;
                let waited = super::task_wait::wait(peer, seed, name, cx).await;
                let outcome = match &waited {
                    Ok(CallToolResponse::Complete(r)) if r.is_error != Some(true) => "ok",
                    Ok(_) => "tool_error",
                    Err(_) => "error",
                };
                (outcome, waited)
            }
            Ok(Ok(_)) => (
                "error",
                Ok(text_result(
                    format!(
                        "the upstream server {} answered the call with something other than a tool result",
                        self.link.config.name
                    ),
                    true,
                )
                .into()),
            ),
            Ok(Err(ServiceError::McpError(error))) => ("error", Err(error)),
            Ok(Err(error)) => ("unavailable", Ok(self.unavailable(&error.to_string()))),
            Err(_) => ("unavailable", Ok(self.unavailable("the connection closed"))),
        };
        link.calls.ended(outcome, started.elapsed());
        response
    }
}

/// The operator's words over the upstream's: description, title, hints.
fn overridden(tool: &mut Tool, over: &ToolOverride) {
    if let Some(description) = &over.description {
        tool.description = Some(description.clone().into());
    }
    if let Some(title) = &over.title {
        tool.title = Some(title.clone());
    }
    let hints = [
        over.read_only,
        over.destructive,
        over.idempotent,
        over.open_world,
    ];
    if hints.iter().any(Option::is_some) {
        let annotations = tool.annotations.get_or_insert_with(Default::default);
        let slots = [
            &mut annotations.read_only_hint,
            &mut annotations.destructive_hint,
            &mut annotations.idempotent_hint,
            &mut annotations.open_world_hint,
        ];
        for (slot, hint) in slots.into_iter().zip(hints) {
            if hint.is_some() {
                *slot = hint;
            }
        }
    }
}

fn globs(patterns: &[String]) -> anyhow::Result<GlobSet> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        set.add(Glob::new(pattern)?);
    }
    Ok(set.build()?)
}

#[async_trait]
impl ToolProvider for UpstreamTools {
    /// The offer, a UI its tools name (MCP Apps) under the URI members
    /// read it by: renamed as the upstream's resources are.
    fn tools(&self) -> Vec<Tool> {
        let mut tools = self.view().map(|v| v.tools.clone()).unwrap_or_default();
        for tool in tools.iter_mut().filter(|t| apps::ui_resource(t).is_some()) {
            apps::rename_ui_resource(tool, |uri| {
                super::resources::exposed_uri(&self.neighbours, &self.link, uri)
            });
        }
        tools
    }

    fn annotated_destructive(&self, name: &str) -> bool {
        self.view().is_some_and(|v| v.destructive.contains(name))
    }

    async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
        cx: &CallContext,
    ) -> Result<CallToolResponse, McpError> {
        let original = self.view().and_then(|v| v.original.get(name).cloned());
        let Some(original) = original else {
            return Err(McpError::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        };
        let MemberLink { link, used } = match self.link_of(name, cx).await {
            Ok(member) => member,
            Err(answer) => return Ok(answer),
        };
        let response = self.forward(&link, original, arguments, cx).await;
        if used.is_empty() {
            return response;
        }
        // A member's own values are scrubbed like the configured secrets.
        let scrubber = cx.scrubber().with(used);
        response
            .map(|r| scrubber.result(r))
            .map_err(|e| scrubber.error(e))
    }

    /// Only a URL upstream's: a stdio upstream is a process of each
    /// replica, so another replica could not reach its task.
    fn passes_tasks(&self, _name: &str) -> bool {
        !self.link.config.url.is_empty() && super::task_wait::offers_tasks(&self.link)
    }

    async fn upstream_task(
        &self,
        name: &str,
        op: UpstreamTaskOp,
        cx: &CallContext,
    ) -> Result<UpstreamTaskReply, McpError> {
        let member = self.link_of(name, cx).await.map_err(|_| {
            let why = format!(
                "the upstream server {} is unavailable",
                self.link.config.name
            );
            McpError::internal_error(why, None)
        })?;
        super::task_wait::on_task(&member.link, op).await
    }

    /// The tool's own `scopes`, else the upstream's, else the default.
    fn required_scopes(&self, name: &str) -> Option<Vec<String>> {
        let own = self
            .policy(name)
            .map(|o| &o.scopes)
            .filter(|s| !s.is_empty());
        let scopes = own.unwrap_or(&self.link.config.scopes);
        (!scopes.is_empty()).then(|| scopes.clone())
    }

    fn origin(&self, _name: &str) -> Option<String> {
        Some(self.link.config.name.clone())
    }

    fn clashed(&self, names: Vec<String>) {
        self.link.dropped.clashed(&self.link.config.name, names);
    }

    fn timeout(&self, name: &str) -> Option<std::time::Duration> {
        let own = self.policy(name).and_then(|o| o.timeout);
        Some(own.unwrap_or(self.link.config.timeout))
    }
}
