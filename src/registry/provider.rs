//! The provider traits: one small trait per kind of capability, which
//! teamgate's own providers and the upstream servers' implement alike.

use std::collections::HashMap;

use async_trait::async_trait;

use super::CallContext;
use super::upstream_task::{UpstreamTaskOp, UpstreamTaskReply};
use crate::config::TaskMode;
use crate::protocol::{
    CallToolResponse, GetPromptResponse, JsonObject, McpError, Prompt, ReadResourceResponse,
    Resource, ResourceTemplate, Skill, Tool,
};

/// Offers tools.
#[async_trait]
pub trait ToolProvider: Send + Sync {
    /// The tools, each with a unique name across all providers.
    fn tools(&self) -> Vec<Tool>;
    /// Runs `name`. Failures the model should read are `Ok` results with
    /// `isError: true`; `Err` is for protocol errors only.
    async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
        cx: &CallContext,
    ) -> Result<CallToolResponse, McpError>;
    /// Scopes a caller needs for `name`; `None`: the default `tools:<name>`.
    fn required_scopes(&self, _name: &str) -> Option<Vec<String>> {
        None
    }
    /// How long `name` may run; `None`: `limits.tool_timeout`.
    fn timeout(&self, _name: &str) -> Option<std::time::Duration> {
        None
    }
    /// The upstream server that serves `name`, for the audit trail.
    fn origin(&self, _name: &str) -> Option<String> {
        None
    }
    /// Told at each registry build which of its tools (an upstream's, with
    /// an `origin`) were left out, their names taken by a provider
    /// registered before it; empty when none.
    fn clashed(&self, _names: Vec<String>) {}
    /// Whether `name` is annotated `destructiveHint: true` and not
    /// `readOnlyHint` (an upstream's tools; confirmed unless the operator
    /// says otherwise).
    fn annotated_destructive(&self, _name: &str) -> bool {
        false
    }
    /// Whether calls of `name` may, must or must not become durable tasks.
    fn task_mode(&self, _name: &str) -> TaskMode {
        TaskMode::Forbidden
    }
    /// How many times a task of `name` runs again on another replica when
    /// its replica dies (`task_retry`); 0: never.
    fn task_retry(&self, _name: &str) -> u32 {
        0
    }
    /// Whether a call of `name` may come back as its upstream's own task
    /// that any replica can reach (`upstream_task.rs`).
    fn passes_tasks(&self, _name: &str) -> bool {
        false
    }
    /// `op` on the upstream task behind the tool `name`, over the caller's
    /// own connection to that upstream.
    async fn upstream_task(
        &self,
        _name: &str,
        _op: UpstreamTaskOp,
        _cx: &CallContext,
    ) -> Result<UpstreamTaskReply, McpError> {
        Err(super::upstream_task::not_found())
    }
}

/// Offers resources and resource templates.
#[async_trait]
pub trait ResourceProvider: Send + Sync {
    fn resources(&self) -> Vec<Resource>;
    fn templates(&self) -> Vec<ResourceTemplate> {
        Vec::new()
    }
    /// Whether `uri` belongs to this provider (listed or matching a template).
    fn owns(&self, uri: &str) -> bool;
    /// The upstream server whose resources these are, for the audit trail.
    fn origin(&self) -> Option<String> {
        None
    }
    async fn read(&self, uri: &str, cx: &CallContext) -> Result<ReadResourceResponse, McpError>;
    /// Values for a template variable being typed (`completion/complete`).
    async fn complete(&self, _template: &str, _argument: &str, _prefix: &str) -> Vec<String> {
        Vec::new()
    }
    /// Scopes a caller needs to read `uri`; `None`: the default `resources:read`.
    fn required_scopes(&self, _uri: &str) -> Option<Vec<String>> {
        None
    }
    /// Whether the provider offers anything now: an upstream server that is
    /// down offers nothing, and `resources` is then not advertised for it.
    fn offers(&self) -> bool {
        true
    }
    /// Whether it takes subscriptions itself (an upstream that accepts
    /// them: `subscribe` is then called), beyond `RegistryBuilder::subscribable`.
    fn subscribable(&self) -> bool {
        false
    }
    /// A member subscribed to `uri` (one it owns); an upstream passes it on.
    async fn subscribe(&self, _uri: &str) -> Result<(), McpError> {
        Ok(())
    }
    /// A member's subscription to `uri` ended.
    async fn unsubscribe(&self, _uri: &str) {}
    /// Whether it serves skills (SEP-2640): the extension is advertised
    /// while a provider does.
    fn serves_skills(&self) -> bool {
        false
    }
    /// Its skills (`skills/list`), each with its complete manifest, named
    /// by URIs it owns.
    async fn skills(&self) -> Result<Vec<Skill>, McpError> {
        Ok(Vec::new())
    }
    /// The skill whose `SKILL.md` is `uri`, one it owns (`skills/get`).
    async fn skill(&self, uri: &str, _cx: &CallContext) -> Result<Skill, McpError> {
        Err(super::skills::unknown_skill(uri))
    }
}

/// Offers prompts.
#[async_trait]
pub trait PromptProvider: Send + Sync {
    fn prompts(&self) -> Vec<Prompt>;
    async fn get(
        &self,
        name: &str,
        arguments: HashMap<String, String>,
        cx: &CallContext,
    ) -> Result<GetPromptResponse, McpError>;
    /// Values for a prompt argument being typed (`completion/complete`).
    async fn complete(&self, _prompt: &str, _argument: &str, _prefix: &str) -> Vec<String> {
        Vec::new()
    }
    /// Scopes a caller needs for `name`; `None`: the default `prompts:<name>`.
    fn required_scopes(&self, _name: &str) -> Option<Vec<String>> {
        None
    }
    /// The upstream server whose prompts these are.
    fn origin(&self) -> Option<String> {
        None
    }
    /// The resource URI whose paths complete `argument` of `prompt`, if any:
    /// a caller offered them must be allowed to read it too.
    fn completes_from(&self, _prompt: &str, _argument: &str) -> Option<String> {
        None
    }
}
