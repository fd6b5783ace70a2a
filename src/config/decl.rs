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
}
