//! The server's background loops: the gauges (sessions, dropped session
//! workers, the store's connections) and the purge of expired rows, events
//! and rate-limit state (shared quotas' old windows included).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::SESSIONS_GAUGE_EVERY;
use crate::{
    config::Config,
    http::{QUOTA_WINDOW_MS, RateLimits},
    mcp::Sessions,
    store::{ApprovalRepo, PortalSessions, QuotaRepo, SessionRepo, SqlEventStore, Store},
    telemetry::Metrics,
};

/// Keeps the active-sessions gauge current until `stop`, counts the
/// workers dropped for `store.max_sessions_in_memory` and watches the
/// store's connections; beside it, idle session workers leave memory.
pub(super) async fn gauges(
    sessions: Arc<Sessions>,
    store: Store,
    metrics: Metrics,
    stop: CancellationToken,
) {
    let leaving = sessions.clone();
    let until = stop.clone();
    tokio::spawn(async move { leaving.leave_idle(until).await });
    let counted = sessions.clone();
    metrics.watch_sessions_dropped(Arc::new(move || counted.dropped_for_cap()));
    metrics.watch_store_connections(Arc::new(move || {
        let now = store.connections();
        (now.open, now.idle, now.opened)
    }));
    let mut ticks = tokio::time::interval(SESSIONS_GAUGE_EVERY);
    loop {
        tokio::select! {
            _ = ticks.tick() => metrics.set_sessions(sessions.in_memory().await),
            () = stop.cancelled() => return,
        }
    }
}

/// Deletes expired sessions (MCP and portal), old stream events, the
/// authorization server's expired rows, old usage buckets and old audit records every
/// How long a request for approval stays listed after it expired.
const APPROVALS_KEPT_MS: i64 = 7 * 24 * 3600 * 1000;

/// `store.purge_interval`.
pub(super) async fn purge_loop(
    store: Store,
    events: Arc<SqlEventStore>,
    limits: RateLimits,
    config: Config,
    stop: CancellationToken,
) {
    let mut ticks = tokio::time::interval(config.store.purge_interval);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            () = stop.cancelled() => return,
        }
        match store.purge_expired().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(sessions = n, "expired sessions deleted"),
            Err(error) => tracing::warn!(%error, "session purge failed"),
        }
        if let Err(error) = events.purge().await {
            tracing::warn!(%error, "stream event purge failed");
        }
        if let Err(error) = store.purge_oauth().await {
            tracing::warn!(%error, "authorization server purge failed");
        }
        // The portal's sessions past either expiry, pre-login rows (minutes) included.
        if let Some(portal) = config.portal.as_ref().filter(|p| p.enabled) {
            let idle_ms = portal.session_idle.as_millis() as i64;
            match store.purge_portal_sessions(idle_ms).await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(portal_sessions = n, "expired portal sessions deleted"),
                Err(error) => tracing::warn!(%error, "portal session purge failed"),
            }
        }
        limits.forget_idle();
        // Shared quotas' windows before the last one are never read again.
        if limits.shared.is_some() {
            let before = store.now_ms() - 2 * QUOTA_WINDOW_MS;
            if let Err(error) = store.purge_quotas(before).await {
                tracing::warn!(%error, "old quota windows not deleted");
            }
        }
        // The usage rollups' buckets, each grain kept as long as it is read
        // (apart from the audit's retention: they hold counts, not calls).
        if let Err(error) = store.purge_usage(store.now_ms()).await {
            tracing::warn!(%error, "old usage buckets not deleted");
        }
        // Requests for approval stay listed a week after they ended; the
        // audit trail keeps who asked and who decided for its retention.
        if let Err(error) = store
            .purge_approvals(store.now_ms() - APPROVALS_KEPT_MS)
            .await
        {
            tracing::warn!(%error, "old requests for approval not deleted");
        }
        let horizon = store.now_ms() - config.audit.retention.as_millis() as i64;
        if let Err(error) = store.purge_audit(horizon).await {
            tracing::warn!(%error, "audit retention not applied");
        }
    }
}
