//! The declared tools' policies around another provider's tools: an
//! upstream server's tool given `from_caller`, `confirm` or `cache_ttl`
//! in `[upstreams.tools.NAME]` gets exactly what a declared tool with
//! them gets, in the same order: caller-bound arguments filled (and hidden
//! from the schema members see), the user asked, the result cached.

use std::{collections::HashMap, sync::Arc, time::Duration};

use async_trait::async_trait;

use super::{CONFIRM_WAIT, bind_caller, cache::ResultCache, confirm, hide_bound, text_result};
use crate::{
    config::ToolDecl,
    protocol::{CallToolResponse, JsonObject, McpError, Tool},
    registry::{CallContext, ToolProvider},
};

/// `inner`'s tools, with the policies of those named in `policies`.
pub struct WithPolicies {
    inner: Arc<dyn ToolProvider>,
    /// By exposed tool name; only the policy fields are read.
    policies: HashMap<String, ToolDecl>,
    cache: ResultCache,
    /// `inner` acts as the caller (their own credentials): cache per caller.
    per_caller: bool,
}

impl WithPolicies {
    pub fn new(
        inner: Arc<dyn ToolProvider>,
        policies: Vec<ToolDecl>,
        cache_max_entries: u64,
        per_caller: bool,
    ) -> Arc<Self> {
        Arc::new(Self {
            inner,
            per_caller,
            policies: policies.into_iter().map(|d| (d.name.clone(), d)).collect(),
            cache: ResultCache::new(cache_max_entries),
        })
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
        let Some(decl) = self.policies.get(name) else {
            return self.inner.call(name, arguments, cx).await;
        };
        if let Err(error) = bind_caller(decl, &mut arguments, cx) {
            return Ok(text_result(error.to_string(), true).into());
        }
        if let Some(answer) = confirm::withheld(decl, &arguments, cx).await {
            return Ok(answer);
        }
        let run = self.inner.call(name, arguments.clone(), cx);
        self.cache
            .get_or_run(decl, &arguments, (cx, self.per_caller), run)
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

    /// The inner tool's time, plus the user's when it confirms.
    fn timeout(&self, name: &str) -> Option<Duration> {
        let confirm = self.policies.get(name).is_some_and(|d| d.confirm);
        let own = self.inner.timeout(name);
        match (own, confirm) {
            (Some(own), true) => Some(own + CONFIRM_WAIT),
            (own, _) => own,
        }
    }
}
