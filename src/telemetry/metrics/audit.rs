//! `teamgate_audit_ship_queue{destination}` and
//! `teamgate_audit_ship_dropped_total{destination}`: the audit shipper's
//! queues and losses (`[audit.ship]`), which the alerts in
//! `deploy/prometheus/alerts.yml` watch.

use std::sync::Arc;

use opentelemetry::KeyValue;

use super::Metrics;

impl Metrics {
    /// The shipper's figures per destination (its name, records queued,
    /// records dropped so far), read at every collection from `read` (atomic
    /// counters and a queue length: collection never waits on a destination).
    pub fn watch_audit_shipping(
        &self,
        read: Arc<dyn Fn() -> Vec<(&'static str, i64, u64)> + Send + Sync>,
    ) {
        let queued = read.clone();
        self.inner
            .meter
            .i64_observable_gauge("teamgate.audit.ship.queue")
            .with_description("Audit records waiting to be shipped, per destination")
            .with_callback(move |gauge| {
                for (destination, queued, _) in queued() {
                    gauge.observe(queued, &[KeyValue::new("destination", destination)]);
                }
            })
            .build();
        self.inner
            .meter
            .u64_observable_counter("teamgate.audit.ship.dropped")
            .with_description(
                "Audit records dropped for a destination: its queue was full or it refused them",
            )
            .with_callback(move |counter| {
                for (destination, _, dropped) in read() {
                    counter.observe(dropped, &[KeyValue::new("destination", destination)]);
                }
            })
            .build();
    }
}
