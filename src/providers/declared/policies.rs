//! The declared tools' policies around another provider's tools: an
//! upstream server's tool given `from_caller`, `confirm` or `cache_ttl`
//! in `[upstreams.tools.NAME]` gets exactly what a declared tool with
//! them gets, in the same order: caller-bound arguments filled (and hidden
//! from the schema members see), the user asked, the result cached. A tool
//! the upstream annotates `destructiveHint: true` (and not `readOnlyHint`)
//! is confirmed too, unless its operator wrote `confirm = false`.

use std::{
    borrow::Cow,
    collections::{HashMap, HashSet},
    sync::Arc,
    time::Duration,
};

use async_trait::async_trait;

use super::{
    CONFIRM_WAIT, approval, bind_caller, cache::ResultCache, confirm, hide_bound, text_result,
};
use crate::{
    config::ToolDecl,
    protocol::{CallToolResponse, JsonObject, McpError, Tool},
    registry::{
        CallContext, ToolProvider,
        upstream_task::{UpstreamTaskOp, UpstreamTaskReply},
    },
};

/// `inner`'s tools, with the policies of those named in `policies`.
pub struct WithPolicies {
    inner: Arc<dyn ToolProvider>,
    /// By exposed tool name; only the policy fields are read.
    policies: HashMap<String, ToolDecl>,
    cache: ResultCache,
    /// `inner` acts as the caller (their own credentials): cache per caller.
    per_caller: bool,
    /// Exposed names the operator does not want confirmed (`confirm = false`).
    unconfirmed: HashSet<String>,
}

impl WithPolicies {
    pub fn new(
        inner: Arc<dyn ToolProvider>,
        (policies, unconfirmed): (Vec<ToolDecl>, Vec<String>),
        cache_max_entries: u64,
        per_caller: bool,
    ) -> Arc<Self> {
        Arc::new(Self {
            inner,
            per_caller,
            policies: policies.into_iter().map(|d| (d.name.clone(), d)).collect(),
            cache: ResultCache::new(cache_max_entries),
            unconfirmed: unconfirmed.into_iter().collect(),
        })
    }

    /// The policies of `name` as they apply now: the configured ones, with
    /// confirmation added when the upstream annotates the tool destructive.
    fn policy(&self, name: &str) -> Option<Cow<'_, ToolDecl>> {
        let configured = self.policies.get(name);
        // The operator decided (`confirm = true` or `false`): that stands.
        let decided = configured.is_some_and(|d| d.confirm) || self.unconfirmed.contains(name);
        if decided || !self.inner.annotated_destructive(name) {
            return configured.map(Cow::Borrowed);
        }
        let mut decl = configured.cloned().unwrap_or_else(|| bare(name));
        decl.confirm = true;
        Some(Cow::Owned(decl))
    }
}

impl WithPolicies {
    /// How long a call of `name` may wait for an approver, when it needs one.
    fn approval(&self, name: &str) -> Option<Duration> {
        let decl = self.policies.get(name)?;
        decl.approval.as_ref().map(|a| a.timeout)
    }
}

/// No policy but the one the annotation adds.
fn bare(name: &str) -> ToolDecl {
    ToolDecl {
        name: name.to_owned(),
        title: None,
        description: String::new(),
        input_schema: serde_json::Map::new(),
        output_schema: None,
        scopes: Vec::new(),
        confirm: false,
        read_only: None,
        destructive: None,
        idempotent: None,
        open_world: None,
        from_caller: Default::default(),
        cache_ttl: None,
        task: None,
        approval: None,
        ui: None,
        task_retry: 0,
    }
}

#[async_trait]
impl ToolProvider for WithPolicies {
    fn tools(&self) -> Vec<Tool> {
        let mut tools = self.inner.tools();
        for tool in &mut tools {
            if let Some(decl) = self.policies.get(tool.name.as_ref()) {
                hide_bound(Arc::make_mut(&mut tool.input_schema), decl);
            }
        }
        tools
    }

    async fn call(
        &self,
        name: &str,
        mut arguments: JsonObject,
        cx: &CallContext,
    ) -> Result<CallToolResponse, McpError> {
        let Some(decl) = self.policy(name) else {
            return self.inner.call(name, arguments, cx).await;
        };
        if let Err(error) = bind_caller(&decl, &mut arguments, cx) {
            return Ok(text_result(error.to_string(), true).into());
        }
        if let Some(answer) = confirm::withheld(&decl, &arguments, cx).await {
            return Ok(answer);
        }
        if let Some(answer) = approval::withheld(&decl, &arguments, cx).await {
            return Ok(answer);
        }
        let run = self.inner.call(name, arguments.clone(), cx);
        self.cache
            .get_or_run(&decl, &arguments, (cx, self.per_caller), run)
            .await
    }

    fn required_scopes(&self, name: &str) -> Option<Vec<String>> {
        self.inner.required_scopes(name)
    }

    fn origin(&self, name: &str) -> Option<String> {
        self.inner.origin(name)
    }

    fn clashed(&self, names: Vec<String>) {
        self.inner.clashed(names);
    }

    fn annotated_destructive(&self, name: &str) -> bool {
        self.inner.annotated_destructive(name)
    }

    fn passes_tasks(&self, name: &str) -> bool {
        self.inner.passes_tasks(name)
    }

    async fn upstream_task(
        &self,
        name: &str,
        op: UpstreamTaskOp,
        cx: &CallContext,
    ) -> Result<UpstreamTaskReply, McpError> {
        self.inner.upstream_task(name, op, cx).await
    }

    /// A call waiting for an approver may become a task.
    fn task_mode(&self, name: &str) -> crate::config::TaskMode {
        use crate::config::TaskMode;
        match self.inner.task_mode(name) {
            TaskMode::Forbidden if self.approval(name).is_some() => TaskMode::Optional,
            mode => mode,
        }
    }

    /// The inner tool's time, plus the user's when it confirms and the
    /// approver's when it needs approval.
    fn timeout(&self, name: &str) -> Option<Duration> {
        let confirm = self.policy(name).is_some_and(|d| d.confirm);
        let wait = self.approval(name).unwrap_or(Duration::ZERO)
            + if confirm {
                CONFIRM_WAIT
            } else {
                Duration::ZERO
            };
        self.inner.timeout(name).map(|own| own + wait)
    }
}
