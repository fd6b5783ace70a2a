//! The capability registry: what the server offers, built once per
//! configuration (at start-up and on each hot reload, then swapped whole).
//!
//! Providers implement one small trait per kind. The registry indexes them by
//! name/URI (one hash lookup a call), derives the advertised capabilities from
//! what is registered, never more, records the scopes each needs, and scrubs
//! configured secrets from every tool result. It knows nothing of HTTP.

mod approval;
pub mod apps;
mod caller;
mod context;
mod credentials;
mod error;
mod events;
mod facts;
mod guardrails;
pub mod oauth;
pub mod oauth_grant;
pub mod oauth_reach;
mod progress;
mod provider;
mod scrub;
mod search;
pub mod skills;
mod slots;
mod slots_ask;
mod toolsets;
pub mod upstream_task;

use std::{collections::HashMap, sync::Arc};

pub use approval::{ApprovalAsk, ApprovalError, Verdict};
pub use caller::{Caller, Identity, TOOLSET_SCOPE, scope_covers};
pub use context::{ApprovalDesk, CallContext, Fired, TaskInput};
pub use credentials::{CredentialKind, CredentialUse, MemberSecrets, SecretsError};
pub use error::RegistryError;
pub use events::{ChangeBus, ChangeEvent};
pub use facts::RequestFacts;
pub use guardrails::Guardrails;
pub use provider::{PromptProvider, ResourceProvider, ToolProvider};
pub use scrub::{REDACTED, Scrubber, StreamScrub};
pub use search::ToolIndex;
pub(crate) use slots::Template;
pub use slots::{CONNECTIONS_PATH, Slots};
pub use toolsets::Toolset;

use crate::protocol::{
    CallToolResponse, JsonObject, McpError, Prompt, Resource, ResourceTemplate, ServerCapabilities,
    Tool,
};

/// What a scope check is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tool,
    Resource,
    Prompt,
}

/// Providers of every kind, as registered at start-up.
#[derive(Default, Clone)]
pub struct RegistryBuilder {
    tools: Vec<Arc<dyn ToolProvider>>,
    resources: Vec<Arc<dyn ResourceProvider>>,
    prompts: Vec<Arc<dyn PromptProvider>>,
    subscribable: bool,
    secrets: Vec<String>,
    toolsets: Vec<Arc<Toolset>>,
    /// The main endpoint's discovery, as a toolset offering everything.
    main: Option<Arc<Toolset>>,
    /// `[[guardrails]]`, around every tool call.
    guardrails: Arc<Guardrails>,
}

impl RegistryBuilder {
    /// The curated endpoints (`[[toolsets]]`).
    pub fn toolsets(mut self, configs: &[crate::config::ToolsetConfig]) -> Self {
        self.toolsets = configs.iter().map(|c| Arc::new(Toolset::new(c))).collect();
        self
    }
    pub fn tools(mut self, provider: Arc<dyn ToolProvider>) -> Self {
        self.tools.push(provider);
        self
    }
    pub fn resources(mut self, provider: Arc<dyn ResourceProvider>) -> Self {
        self.resources.push(provider);
        self
    }
    pub fn prompts(mut self, provider: Arc<dyn PromptProvider>) -> Self {
        self.prompts.push(provider);
        self
    }
    /// The resource providers registered so far (upstream servers' resources
    /// are renamed where these have the same URI).
    pub fn resource_providers(&self) -> &[Arc<dyn ResourceProvider>] {
        &self.resources
    }
    /// Advertise `resources.subscribe`: some provider raises `resources/updated`.
    pub fn subscribable(mut self) -> Self {
        self.subscribable = true;
        self
    }
    /// The checks on every tool call's arguments and result.
    pub fn guardrails(mut self, guardrails: Guardrails) -> Self {
        self.guardrails = Arc::new(guardrails);
        self
    }
    /// Values scrubbed from every tool result and tool error.
    pub fn secrets(mut self, secrets: impl IntoIterator<Item = String>) -> Self {
        self.secrets.extend(secrets);
        self
    }

    /// Indexes every provider. A name must mean one thing: an upstream
    /// server's tool or prompt whose name a provider registered before it
    /// has (a tool's regardless of case, so no look-alike) is left out (the tool's provider is told, `clashed`), so one
    /// upstream's clash changes nothing else; any other duplicate is a
    /// configuration error.
    pub fn build(self) -> Result<Registry, RegistryError> {
        let sources = self.clone();
        let mut tools = Vec::new();
        let mut tool_index = HashMap::new();
        let mut folded = std::collections::HashSet::new();
        for provider in &self.tools {
            let mut clashed = Vec::new();
            for tool in provider.tools() {
                let name = tool.name.to_string();
                let upstream = provider.origin(&name).is_some();
                if tool_index.contains_key(&name)
                    || (upstream && folded.contains(&name.to_lowercase()))
                {
                    match upstream {
                        true => clashed.push(name),
                        false => return Err(RegistryError::Duplicate("tool", name)),
                    }
                    continue;
                }
                folded.insert(name.to_lowercase());
                tool_index.insert(name, (provider.clone(), tools.len()));
                tools.push(tool);
            }
            provider.clashed(clashed);
        }
        let mut prompts = Vec::new();
        let mut prompt_index = HashMap::new();
        for provider in &self.prompts {
            for prompt in provider.prompts() {
                let name = prompt.name.clone();
                if prompt_index.contains_key(&name) {
                    match provider.origin() {
                        Some(upstream) => {
                            tracing::warn!(%upstream, prompt = %name, "an upstream prompt's name is another prompt's, listed before it; dropped")
                        }
                        None => return Err(RegistryError::Duplicate("prompt", name)),
                    }
                    continue;
                }
                prompt_index.insert(name, provider.clone());
                prompts.push(prompt);
            }
        }
        let templates = self.resources.iter().flat_map(|p| p.templates()).collect();
        let offering: Vec<_> = self.resources.iter().filter(|p| p.offers()).collect();
        let has_resources = !offering.is_empty();
        let subscribable = self.subscribable || offering.iter().any(|p| p.subscribable());
        let index = toolsets::index_if_searched(&self, &tools);
        Ok(Registry {
            index,
            tools,
            tool_index,
            prompts,
            prompt_index,
            templates,
            has_resources,
            resource_providers: self.resources,
            subscribable,
            scrubber: Scrubber::new(self.secrets),
            main: self.main.clone(),
            toolsets: (self.toolsets.iter())
                .map(|t| (t.name.clone(), t.clone()))
                .collect(),
            guardrails: self.guardrails.clone(),
            sources,
        })
    }
}

/// The immutable index the MCP handler routes through.
pub struct Registry {
    tools: Vec<Tool>,
    tool_index: HashMap<String, (Arc<dyn ToolProvider>, usize)>,
    prompts: Vec<Prompt>,
    prompt_index: HashMap<String, Arc<dyn PromptProvider>>,
    templates: Vec<ResourceTemplate>,
    /// Resources are asked of their providers on each list: a watched
    /// source adds and removes documents between reloads.
    resource_providers: Vec<Arc<dyn ResourceProvider>>,
    /// Some provider offers something (`ResourceProvider::offers`).
    has_resources: bool,
    subscribable: bool,
    scrubber: Scrubber,
    /// The curated endpoints, by name.
    toolsets: HashMap<String, Arc<Toolset>>,
    /// The main endpoint's discovery (`None`: list).
    main: Option<Arc<Toolset>>,
    /// The tools' search index, when an endpoint is in search mode.
    index: Option<Arc<ToolIndex>>,
    /// The providers this was built from, for `refreshed`.
    sources: RegistryBuilder,
    guardrails: Arc<Guardrails>,
}

/// How long a client may reuse a list result (2026-07-28 `ttlMs`).
const LIST_TTL_MS: u64 = 60_000;

impl Registry {
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// The same providers indexed again, for a provider whose offer changes
    /// between reloads (an upstream server's tools).
    pub fn refreshed(&self) -> Result<Registry, RegistryError> {
        self.sources.clone().build()
    }

    /// Exactly what is registered: a kind with nothing in it is not advertised.
    pub fn capabilities(&self) -> ServerCapabilities {
        let mut caps = ServerCapabilities::default();
        let has_resources = self.has_resources;
        if !self.tools.is_empty() {
            caps.tools = Some(
                serde_json::from_value(serde_json::json!({"listChanged": true}))
                    .expect("tools capability"),
            );
        }
        if !self.prompts.is_empty() {
            caps.prompts = Some(
                serde_json::from_value(serde_json::json!({"listChanged": true}))
                    .expect("prompts capability"),
            );
        }
        if has_resources {
            caps.resources = Some(
                serde_json::from_value(serde_json::json!({
                    "listChanged": true,
                    "subscribe": self.subscribable,
                }))
                .expect("resources capability"),
            );
        }
        if !self.prompts.is_empty() || !self.templates.is_empty() {
            caps.completions = Some(Default::default());
        }
        // Tools report progress and log lines through `CallContext`.
        caps.logging = Some(Default::default());
        let skills = (self.resource_providers.iter()).any(|p| p.offers() && p.serves_skills());
        skills::advertise(&mut caps, has_resources && skills);
        caps
    }

    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }
    pub fn tool(&self, name: &str) -> Option<(&Arc<dyn ToolProvider>, &Tool)> {
        self.tool_index
            .get(name)
            .map(|(provider, i)| (provider, &self.tools[*i]))
    }
    /// Whether calls of the tool `name` may, must or must not become tasks.
    pub fn task_mode(&self, name: &str) -> crate::config::TaskMode {
        self.tool_index
            .get(name)
            .map_or(crate::config::TaskMode::Forbidden, |(p, _)| {
                p.task_mode(name)
            })
    }
    /// The upstream server that serves the tool `name`, if any.
    pub fn origin(&self, name: &str) -> Option<String> {
        self.tool_index.get(name).and_then(|(p, _)| p.origin(name))
    }
    pub fn prompts(&self) -> &[Prompt] {
        &self.prompts
    }
    pub fn prompt(&self, name: &str) -> Option<&Arc<dyn PromptProvider>> {
        self.prompt_index.get(name)
    }
    pub fn resources(&self) -> Vec<Resource> {
        self.resource_providers
            .iter()
            .flat_map(|p| p.resources())
            .collect()
    }
    pub fn templates(&self) -> &[ResourceTemplate] {
        &self.templates
    }
    pub fn resource_owner(&self, uri: &str) -> Option<&Arc<dyn ResourceProvider>> {
        self.resource_providers.iter().find(|p| p.owns(uri))
    }
    pub fn resource_providers(&self) -> &[Arc<dyn ResourceProvider>] {
        &self.resource_providers
    }
    pub fn subscribable(&self) -> bool {
        self.subscribable
    }

    /// Runs the tool `name`, or `None` if no provider offers it. Configured
    /// secrets are scrubbed from the result and from any error.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: JsonObject,
        cx: &CallContext,
    ) -> Option<Result<CallToolResponse, McpError>> {
        let (provider, _) = self.tool(name)?;
        let (guardrails, mut arguments) = (&self.guardrails, arguments);
        if let Some(blocked) = guardrails.arguments(name, cx, &mut arguments).await {
            return Some(Ok(blocked));
        }
        let mut called = provider.call(name, arguments, cx).await;
        cx.finish_progress(called.as_mut().ok()).await;
        Some(match called {
            Ok(response) => Ok(guardrails
                .result(name, cx, self.scrubber.result(response))
                .await),
            Err(error) => Err(self.scrubber.error(error)),
        })
    }

    pub fn scrubber(&self) -> &Scrubber {
        &self.scrubber
    }

    /// The `list_changed` events a client must hear when this registry
    /// replaces `old`: one per kind whose list differs.
    pub fn changes_since(&self, old: &Registry) -> Vec<ChangeEvent> {
        fn same<T: serde::Serialize>(a: &T, b: &T) -> bool {
            serde_json::to_value(a).ok() == serde_json::to_value(b).ok()
        }
        let mut events = Vec::new();
        if !same(&self.tools, &old.tools) {
            events.push(ChangeEvent::ToolsListChanged);
        }
        if !same(&self.prompts, &old.prompts) {
            events.push(ChangeEvent::PromptsListChanged);
        }
        let resources = |r: &Registry| (r.resources(), r.templates.clone());
        if !same(&resources(self), &resources(old)) {
            events.push(ChangeEvent::ResourcesListChanged);
        }
        events
    }

    /// 2026-07-28 `ttlMs` of list results. Lists change only on reload or
    /// a watched source's change, both announced with `list_changed`; they
    /// are filtered by the caller's scopes, so their `cacheScope` is private.
    pub fn list_ttl_ms(&self) -> u64 {
        LIST_TTL_MS
    }

    /// The scopes a caller needs to use `name` (a tool or prompt name, or a
    /// resource URI): what its provider declares, else `tools:<name>`,
    /// `resources:read` or `prompts:<name>`. Unknown names need nothing here;
    /// the call itself reports them.
    pub fn required_scopes(&self, kind: Kind, name: &str) -> Vec<String> {
        let declared = match kind {
            Kind::Tool => self
                .tool_index
                .get(name)
                .and_then(|(p, _)| p.required_scopes(name)),
            Kind::Resource => self
                .resource_owner(name)
                .and_then(|p| p.required_scopes(name)),
            Kind::Prompt => self
                .prompt_index
                .get(name)
                .and_then(|p| p.required_scopes(name)),
        };
        declared.unwrap_or_else(|| {
            vec![match kind {
                Kind::Tool => format!("tools:{name}"),
                Kind::Resource => DEFAULT_RESOURCE_SCOPE.to_owned(),
                Kind::Prompt => format!("prompts:{name}"),
            }]
        })
    }
}

/// What reading a resource needs unless its provider declares otherwise.
const DEFAULT_RESOURCE_SCOPE: &str = "resources:read";

/// The scopes reading `uri` (a URI or one of the provider's templates)
/// through `provider` needs.
pub fn resource_scopes(provider: &dyn ResourceProvider, uri: &str) -> Vec<String> {
    provider
        .required_scopes(uri)
        .unwrap_or_else(|| vec![DEFAULT_RESOURCE_SCOPE.to_owned()])
}
