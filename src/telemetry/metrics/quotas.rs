//! `teamgate_quota_store_up`: 1 while shared quotas are counted in the
//! store, 0 while this replica has fallen back to counting on its own
//! (`rate_limit.shared`; the `TeamgateQuotaStoreUnreachable` alert).

use std::sync::Arc;

use super::Metrics;

impl Metrics {
    /// Whether the shared quota store answers, read at every collection
    /// from `up` (a flag the lease refills set).
    pub fn watch_quota_store(&self, up: Arc<dyn Fn() -> bool + Send + Sync>) {
        self.inner
            .meter
            .i64_observable_gauge("teamgate.quota_store.up")
            .with_description(
                "1 while quotas are counted across replicas in the store; 0 while this replica \
                 counts on its own because the store does not answer",
            )
            .with_callback(move |gauge| gauge.observe(i64::from(up()), &[]))
            .build();
    }
}
