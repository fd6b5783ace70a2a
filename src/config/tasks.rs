//! `[tasks]`: durable task-augmented tool calls (issue 31), and what a
//! declared tool takes: `task = "forbidden" | "optional" | "required"`, and
//! `task_retry` / `task_retry_max` (issue 66 part 3).

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

/// How many times a task runs again by default when `task_retry` is set.
const DEFAULT_RETRIES: u32 = 3;

/// The most `task_retry_max` may be: a task that keeps killing replicas
/// must not take the whole fleet down with it.
const MAX_RETRIES: u32 = 10;

/// The times a tool's task runs again when its replica dies: 0 without
/// `task_retry`.
pub(super) fn task_retries(retry: bool, max: Option<u32>) -> u32 {
    if retry {
        max.unwrap_or(DEFAULT_RETRIES)
    } else {
        0
    }
}

/// A tool's `task_retry` keys, what they need and what they cannot join.
pub(super) struct RetryKeys {
    pub retry: bool,
    pub max: Option<u32>,
    pub task: Option<TaskMode>,
    pub approval: bool,
}

impl RetryKeys {
    /// The first problem of the tool at `key`.
    pub(super) fn check(&self, key: &str) -> Result<(), ConfigError> {
        let invalid = |field: &str, why: &str| ConfigError::Invalid {
            key: format!("{key}.{field}"),
            why: why.to_owned(),
        };
        match self.max {
            Some(_) if !self.retry => {
                return Err(invalid("task_retry_max", "needs task_retry = true"));
            }
            Some(max) if !(1..=MAX_RETRIES).contains(&max) => {
                return Err(invalid("task_retry_max", "must be from 1 to 10"));
            }
            _ => {}
        }
        if !self.retry {
            return Ok(());
        }
        if self.task == Some(TaskMode::Forbidden) {
            return Err(invalid(
                "task_retry",
                "needs calls that become tasks: this tool has task = \"forbidden\"",
            ));
        }
        if self.approval {
            return Err(invalid(
                "task_retry",
                "cannot be combined with approval: an approval is for one run, and a retry \
                 would run the call again unapproved",
            ));
        }
        Ok(())
    }
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
