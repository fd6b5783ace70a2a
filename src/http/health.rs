//! `/healthz` (the process answers) and `/readyz` (it should get traffic).
//! Both are unauthenticated and cheap: probes call them every few seconds.
//! They answer whatever the `Host`: the kubelet sends the pod's address, and
//! a status word gives a DNS-rebinding page nothing to read.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use super::limits::QuotaStatus;
use crate::store::Store;

use axum::{Json, extract::State, http::StatusCode, response::IntoResponse};
use serde_json::json;

/// The probes' paths, answered ahead of the Host check.
pub(super) const PROBES: [&str; 2] = ["/healthz", "/readyz"];

/// Readiness inputs, shared with the shutdown path.
#[derive(Clone)]
pub struct Health {
    draining: Arc<AtomicBool>,
    store: Option<Store>,
    /// Shared quotas' state, when they are on.
    quotas: Option<QuotaStatus>,
}

impl Health {
    pub fn new(store: Option<Store>) -> Self {
        Self {
            draining: Arc::default(),
            store,
            quotas: None,
        }
    }

    /// Reports whether quotas are counted across replicas or, the store
    /// failing, per replica.
    pub fn with_quotas(mut self, quotas: Option<QuotaStatus>) -> Self {
        self.quotas = quotas;
        self
    }

    /// `"quotas"` in the readiness answer: only when they are shared, since
    /// only then can they fall back.
    fn quotas(&self) -> Option<&'static str> {
        let quotas = self.quotas.as_ref()?;
        Some(if quotas.per_replica() {
            "per replica: the store is unreachable, each replica counts on its own"
        } else {
            "shared"
        })
    }

    /// The store's answer, probed at most once a second (`store/probe.rs`).
    async fn store_ok(&self) -> bool {
        match &self.store {
            Some(store) => store.reachable().await,
            None => true,
        }
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
    let (status, word) = if health.is_draining() {
        (StatusCode::SERVICE_UNAVAILABLE, "draining")
    } else if !health.store_ok().await {
        (StatusCode::SERVICE_UNAVAILABLE, "store unavailable")
    } else {
        (StatusCode::OK, "ready")
    };
    let mut body = json!({"status": word});
    if let Some(quotas) = health.quotas() {
        body["quotas"] = quotas.into();
    }
    (status, Json(body))
}
