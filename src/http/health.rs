//! `/healthz` (the process answers) and `/readyz` (it should get traffic).
//! Both are unauthenticated and cheap: probes call them every few seconds.
//! They answer whatever the `Host`: the kubelet sends the pod's address, and
//! a status word gives a DNS-rebinding page nothing to read.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use tokio::sync::Mutex;

use crate::store::Store;

use axum::{Json, extract::State, http::StatusCode, response::IntoResponse};
use serde_json::json;

/// How long a store probe result is reused: probes arrive every few
/// seconds from several places, the database need not see each one.
const PROBE_TTL: Duration = Duration::from_secs(1);

/// The probes' paths, answered ahead of the Host check.
pub(super) const PROBES: [&str; 2] = ["/healthz", "/readyz"];

/// Readiness inputs, shared with the shutdown path.
#[derive(Clone)]
pub struct Health {
    draining: Arc<AtomicBool>,
    store: Option<Store>,
    last_probe: Arc<Mutex<Option<(Instant, bool)>>>,
}

impl Health {
    pub fn new(store: Option<Store>) -> Self {
        Self {
            draining: Arc::default(),
            store,
            last_probe: Arc::default(),
        }
    }

    async fn store_ok(&self) -> bool {
        let Some(store) = &self.store else {
            return true;
        };
        if let Some((at, ok)) = *self.last_probe.lock().await
            && at.elapsed() < PROBE_TTL
        {
            return ok;
        }
        let ok = store.ping().await;
        *self.last_probe.lock().await = Some((Instant::now(), ok));
        ok
    }

    /// Called when shutdown starts: load balancers stop sending new work.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

pub(super) async fn healthz() -> impl IntoResponse {
    Json(json!({"status": "ok"}))
}

pub(super) async fn readyz(State(health): State<Health>) -> impl IntoResponse {
    if health.is_draining() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "draining"})),
        );
    }
    if !health.store_ok().await {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "store unavailable"})),
        );
    }
    (StatusCode::OK, Json(json!({"status": "ready"})))
}
