//! State every session and request shares: the registry (swapped whole on
//! hot reload), the change bus, the `requestState` keys and the server's
//! initialize result.

use std::sync::Arc;

use arc_swap::ArcSwap;
use rmcp::model::{InitializeResult, TASKS_EXTENSION_ID};

use super::{Implementation, ProtocolVersion, StateKeys, Tasks, calls::AuditSink};
use crate::registry::{ChangeBus, MemberSecrets, Registry};

/// A caller's quota for one tool (`limits.rate_limit.tools`): `Err` is how
/// long until the next call is allowed.
pub type ToolQuota = Arc<dyn Fn(&str, &str) -> Result<(), std::time::Duration> + Send + Sync>;

/// State shared by every session and request. The registry is swapped whole
/// on hot reload; each request reads the current one once and keeps it.
pub struct Shared {
    registry: ArcSwap<Registry>,
    pub bus: ChangeBus,
    pub(super) state_keys: Arc<StateKeys>,
    pub(super) info: InitializeResult,
    /// `info.server_info` as JSON, for the `_meta` of every 2026-era result
    /// (serialized once, not per call).
    pub(super) server_info_json: serde_json::Value,
    /// `info` with the current registry's capabilities: rmcp asks for it on
    /// every stateless request, so it is built once per registry.
    current: ArcSwap<InitializeResult>,
    /// Set when calls are audited (HTTP); stdio keeps no trail.
    pub(super) audit: Option<AuditSink>,
    /// How long a tool may run unless it declares otherwise.
    pub(super) tool_timeout: std::time::Duration,
    /// Per caller and tool, decided on the typed call (`access::within_quota`).
    pub(super) tool_quota: Option<ToolQuota>,
    /// Durable tasks (HTTP with a store); stdio offers none.
    pub(super) tasks: Option<Arc<Tasks>>,
    /// Members' own credential values (HTTP with `[credentials]`).
    pub(super) member_secrets: Option<Arc<dyn MemberSecrets>>,
    /// Where calls needing approval wait (HTTP with a store).
    pub(super) approvals: Option<Arc<dyn crate::registry::ApprovalDesk>>,
}

impl Shared {
    pub fn new(
        registry: Arc<Registry>,
        bus: ChangeBus,
        state_keys: StateKeys,
        name: &str,
        instructions: &str,
    ) -> Self {
        let info = InitializeResult::new(registry.capabilities())
            .with_server_info(Implementation::new(name, env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
            .with_protocol_version(ProtocolVersion::V_2025_11_25);
        let server_info_json =
            serde_json::to_value(&info.server_info).expect("an Implementation always serializes");
        Self {
            current: ArcSwap::from_pointee(info.clone()),
            server_info_json,
            registry: ArcSwap::new(registry),
            bus,
            state_keys: Arc::new(state_keys),
            info,
            audit: None,
            tool_timeout: std::time::Duration::from_secs(120),
            tool_quota: None,
            tasks: None,
            member_secrets: None,
            approvals: None,
        }
    }

    /// Calls of tools with `approval` wait at `desk` for their decision.
    pub fn with_approvals(mut self, desk: Arc<dyn crate::registry::ApprovalDesk>) -> Self {
        self.approvals = Some(desk);
        self
    }

    /// Calls fill `${user:NAME}` slots from `secrets`.
    pub fn with_member_secrets(mut self, secrets: Arc<dyn MemberSecrets>) -> Self {
        self.member_secrets = Some(secrets);
        self
    }

    /// Offers durable tasks (the tasks extension) through `tasks`.
    pub fn with_tasks(mut self, tasks: Arc<Tasks>) -> Self {
        self.tasks = Some(tasks);
        self.current.store(Arc::new(with_capabilities(
            &self.info,
            &self.registry(),
            true,
        )));
        self
    }

    pub fn with_tool_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.tool_timeout = timeout;
        self
    }

    pub fn with_tool_quota(mut self, quota: ToolQuota) -> Self {
        self.tool_quota = Some(quota);
        self
    }

    /// Audits every tools/call, resources/read and prompts/get into `sink`.
    pub fn with_audit(mut self, sink: AuditSink) -> Self {
        self.audit = Some(sink);
        self
    }

    /// The registry serving right now.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.load_full()
    }

    /// Serves `registry` from the next request on, and tells this process's
    /// listening clients which lists changed. Not relayed to other replicas:
    /// each replica reloads (and announces) its own configuration.
    pub fn replace_registry(&self, registry: Arc<Registry>) {
        let old = self.registry.swap(registry.clone());
        let tasks = self.tasks.is_some();
        self.current
            .store(Arc::new(with_capabilities(&self.info, &registry, tasks)));
        for event in registry.changes_since(&old) {
            self.bus.publish_local(event);
        }
    }

    /// What an upstream server's change calls: the registry re-indexed with
    /// its providers' current tools, and the lists that changed announced.
    /// Holds the state weakly (the registry holds the upstream's callback).
    pub fn refresher(shared: &Arc<Self>) -> Arc<dyn Fn() + Send + Sync> {
        let shared = Arc::downgrade(shared);
        Arc::new(move || {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            match shared.registry().refreshed() {
                Ok(registry) => shared.replace_registry(Arc::new(registry)),
                Err(error) => tracing::warn!(%error, "an upstream's tools were not taken"),
            }
        })
    }

    /// Capabilities follow the current registry, so a session started after a
    /// reload that added the first prompt sees `prompts`.
    pub(super) fn current_info(&self) -> InitializeResult {
        InitializeResult::clone(&self.current.load())
    }
}

fn with_capabilities(
    info: &InitializeResult,
    registry: &Registry,
    tasks: bool,
) -> InitializeResult {
    let mut info = info.clone();
    info.capabilities = registry.capabilities();
    if tasks {
        info.capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION_ID.to_owned(), Default::default());
    }
    info
}
