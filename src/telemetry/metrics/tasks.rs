//! `teamgate_tasks{state}`: durable tasks by state, as the store counts them.

use std::sync::Arc;

use opentelemetry::KeyValue;

use super::Metrics;

/// Every state a task can be in; each is reported, 0 when none is in it.
const STATES: [&str; 5] = [
    "working",
    "input_required",
    "completed",
    "failed",
    "cancelled",
];

impl Metrics {
    /// Unexpired tasks by state, read at every collection from `read` (a
    /// snapshot the tasks' heartbeat loop refreshes: collection never waits
    /// on the database).
    pub fn watch_tasks(&self, read: Arc<dyn Fn() -> Vec<(String, i64)> + Send + Sync>) {
        self.inner
            .meter
            .i64_observable_gauge("teamgate.tasks")
            .with_description("Durable tasks kept in the store, by state (all replicas)")
            .with_callback(move |gauge| {
                let counts = read();
                for state in STATES {
                    let n = counts
                        .iter()
                        .find(|(s, _)| s == state)
                        .map_or(0, |(_, n)| *n);
                    gauge.observe(n, &[KeyValue::new("state", state)]);
                }
            })
            .build();
    }
}
