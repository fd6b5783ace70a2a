//! `/healthz` (the process answers) and `/readyz` (it should get traffic).
//! Both are unauthenticated and cheap: probes call them every few seconds.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use axum::{Json, extract::State, http::StatusCode, response::IntoResponse};
use serde_json::json;

/// Readiness flags, shared with the shutdown path.
#[derive(Clone, Default)]
pub struct Health {
    draining: Arc<AtomicBool>,
}

impl Health {
    /// Called when shutdown starts: load balancers stop sending new work.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

pub async fn healthz() -> impl IntoResponse {
    Json(json!({"status": "ok"}))
}

pub async fn readyz(State(health): State<Health>) -> impl IntoResponse {
    if health.is_draining() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "draining"})),
        );
    }
    (StatusCode::OK, Json(json!({"status": "ready"})))
}
