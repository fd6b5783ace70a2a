//! `teamgate_store_connections` and `teamgate_store_connections_opened_total`:
//! the store's database connections, in use and idle, and how many were
//! opened (`store.connection_lifetime` replaces each once it is that old), so
//! an operator sees a pool that is always busy and how often it reconnects.

use std::sync::Arc;

use opentelemetry::KeyValue;

use super::Metrics;

/// What the store reports at each collection: connections open, idle of
/// them, and opened since the start.
type StoreConnections = Arc<dyn Fn() -> (u32, usize, u64) + Send + Sync>;

impl Metrics {
    /// The store's connections, read at every collection from `read`.
    pub fn watch_store_connections(&self, read: StoreConnections) {
        let meter = &self.inner.meter;
        let current = read.clone();
        meter
            .i64_observable_gauge("teamgate.store.connections")
            .with_description(
                "Connections to the store's database this replica holds, by state: in_use (a \
                 query or transaction) or idle",
            )
            .with_callback(move |gauge| {
                let (open, idle, _) = current();
                let idle = i64::try_from(idle).unwrap_or(i64::MAX);
                let in_use = (i64::from(open) - idle).max(0);
                gauge.observe(idle, &[KeyValue::new("state", "idle")]);
                gauge.observe(in_use, &[KeyValue::new("state", "in_use")]);
            })
            .build();
        meter
            .u64_observable_counter("teamgate.store.connections.opened")
            .with_description(
                "Connections to the store's database opened since the start: the first ones, \
                 and each that replaces one past store.connection_lifetime",
            )
            .with_callback(move |counter| counter.observe(read().2, &[]))
            .build();
    }
}
