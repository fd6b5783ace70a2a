//! The fields every declared tool shares, apart from the kinds that fill
//! them (`capabilities.rs`, `sql.rs`), so each kind's file reads only this.

use std::{collections::BTreeMap, time::Duration};

use serde_json::{Map, Value};

/// The fields every declared tool shares, whatever its kind.
#[derive(Debug, Clone)]
pub struct ToolDecl {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Map<String, Value>,
    pub output_schema: Option<Map<String, Value>>,
    pub scopes: Vec<String>,
    pub confirm: bool,
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
    pub from_caller: BTreeMap<String, String>,
    pub cache_ttl: Option<Duration>,
    pub task: Option<super::TaskMode>,
    pub approval: Option<ToolApproval>,
    /// MCP Apps: the `ui://` page its results are shown with.
    pub ui: Option<super::ToolUi>,
    /// Times a task of it runs again when its replica dies (`task_retry`);
    /// 0: none.
    pub task_retry: u32,
}

/// `approval = { group = "leads", timeout = "30m" }`: each call waits,
/// parked, until a member of `group` other than the caller approves it on
/// the portal (it then runs with exactly the arguments they saw), denies
/// it, or `timeout` passes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolApproval {
    /// The group (the sign-in's `groups_claim`) whose members decide.
    pub group: String,
    /// How long a call waits for a decision before it ends unrun.
    #[serde(default = "approval_timeout", with = "super::duration")]
    pub timeout: Duration,
}

fn approval_timeout() -> Duration {
    Duration::from_secs(30 * 60)
}
