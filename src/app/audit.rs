//! The audit trail as the app wires it: the writer, the shipper of
//! `[audit.ship]`, their figures on `/metrics`, and their ends at exit.

use std::{sync::Arc, time::Duration};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::{
    audit::{Auditor, Shipper},
    config::Config,
    store::Store,
    telemetry::Metrics,
};

/// How long, at exit, the writer may take to write what is queued.
const WRITE_DRAIN: Duration = Duration::from_secs(10);
/// How long, at exit, the shipper may take to deliver what is queued.
const SHIP_DRAIN: Duration = Duration::from_secs(5);

pub(super) struct AuditParts {
    pub(super) auditor: Auditor,
    /// Cancelled once the server has stopped: the writer then writes what
    /// is queued and finishes.
    stop: CancellationToken,
    /// Where records are shipped, and its stop, cancelled once the writer
    /// has handed over the last batch.
    shipper: Option<(Shipper, CancellationToken)>,
}

impl AuditParts {
    pub(super) fn start(config: &Config, store: &Store) -> anyhow::Result<Self> {
        let stop = CancellationToken::new();
        let ship_stop = CancellationToken::new();
        let telemetry = &config.telemetry;
        let otlp = (&*telemetry.otlp_endpoint, &*telemetry.service_name);
        let shipper = Shipper::start(&config.audit, otlp, ship_stop.clone())
            .context("audit.ship: cannot start")?;
        let auditor = Auditor::start_with(
            store.clone(),
            config.audit.buffer,
            shipper.clone(),
            stop.clone(),
        )
        .durable(config.audit.durable.then_some(config.store.timeout));
        Ok(Self {
            auditor,
            stop,
            shipper: shipper.map(|shipper| (shipper, ship_stop)),
        })
    }

    /// The shipper's queues and losses on `/metrics`.
    pub(super) fn observe(&self, metrics: &Metrics) {
        if let Some((shipper, _)) = &self.shipper {
            let shipper = shipper.clone();
            metrics.watch_audit_shipping(Arc::new(move || {
                (shipper.stats().into_iter())
                    .map(|s| (s.destination, s.queued, s.dropped))
                    .collect()
            }));
        }
    }

    /// Every connection has closed: writes the records still queued, then
    /// delivers what is queued for shipping, each within its bound.
    pub(super) async fn finish(&self) {
        self.stop.cancel();
        if !self.auditor.finished(WRITE_DRAIN).await {
            tracing::error!(
                "audit records still queued at exit were not written (database unreachable)"
            );
        }
        if let Some((shipper, stop)) = &self.shipper {
            stop.cancel();
            if !shipper.finished(SHIP_DRAIN).await {
                tracing::error!(
                    "audit records still queued for shipping at exit were not delivered \
                     (a destination is unreachable)"
                );
            }
        }
    }
}
