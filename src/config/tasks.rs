//! `[tasks]`: durable task-augmented tool calls (issue 31), and the
//! `task = "forbidden" | "optional" | "required"` a declared tool takes.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ConfigError;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TasksConfig {
    /// A finished task's result larger than this (serialized JSON) is kept
    /// as a tool error saying so instead.
    pub max_result_bytes: usize,
    /// Unexpired tasks one member may hold; beyond, creating one is refused.
    pub max_per_owner: i64,
    /// A running task whose replica sent no heartbeat for this long is failed.
    #[serde(with = "super::duration")]
    pub heartbeat_timeout: Duration,
    /// How long a task (and its result) is kept after creation.
    #[serde(with = "super::duration")]
    pub ttl: Duration,
    /// The polling interval suggested to clients (`pollIntervalMs`).
    #[serde(with = "super::duration")]
    pub poll_interval: Duration,
}

/// Whether a tool's calls may, must or must not become tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskMode {
    Forbidden,
    Optional,
    Required,
}

impl TasksConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: &str| ConfigError::Invalid {
            key: format!("tasks.{key}"),
            why: why.to_owned(),
        };
        if self.max_result_bytes < 1024 {
            return Err(invalid("max_result_bytes", "must be at least 1024 bytes"));
        }
        if self.max_per_owner < 1 {
            return Err(invalid("max_per_owner", "must be at least 1"));
        }
        if self.heartbeat_timeout < Duration::from_secs(2) {
            return Err(invalid("heartbeat_timeout", "must be at least 2s"));
        }
        if self.ttl < Duration::from_secs(60) {
            return Err(invalid("ttl", "must be at least 1m"));
        }
        if self.poll_interval.is_zero() || self.poll_interval > self.heartbeat_timeout {
            return Err(invalid(
                "poll_interval",
                "must be greater than zero and at most tasks.heartbeat_timeout",
            ));
        }
        Ok(())
    }
}
