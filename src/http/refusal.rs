//! The engine's refusal of a call for lack of scope, on its way to the
//! guard, which answers it with 403 and the challenge.

use std::sync::{Arc, Mutex};

use super::{Gate, error::HttpError};

/// Where the engine leaves its refusal of a call for lack of scope. The
/// decision is the engine's, made on the typed request it acts on; the guard
/// only gives the reply the HTTP shape (403 and `WWW-Authenticate`).
pub struct ScopeRefusal {
    gate: Arc<dyn Gate>,
    refused: Mutex<Option<HttpError>>,
}

impl ScopeRefusal {
    pub(super) fn new(gate: Arc<dyn Gate>) -> Self {
        Self {
            gate,
            refused: Mutex::default(),
        }
    }

    /// Records that the request in `parts` lacks `scopes`; `message` says so.
    pub fn refuse(&self, parts: &http::request::Parts, scopes: &[String], message: String) {
        let challenge = self.gate.scope_challenge(parts, scopes);
        *self.refused.lock().expect("refusal lock") =
            Some(HttpError::Forbidden { challenge, message });
    }

    pub(super) fn take(&self) -> Option<HttpError> {
        self.refused.lock().expect("refusal lock").take()
    }
}
