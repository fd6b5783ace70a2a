//! The engine's refusal of a call for lack of scope, on its way to the
//! guard (`http/guard.rs`), which answers it with 403 and the challenge.

use std::sync::Mutex;

/// How the `WWW-Authenticate` challenge of a refusal is written for a request
/// (the guard knows the resource URL and the scopes supported).
pub type Challenge = Box<dyn Fn(&http::request::Parts, &[String]) -> String + Send + Sync>;

/// Where the engine leaves its refusal of a call for lack of scope. The
/// decision is the engine's, made on the typed request it acts on; the guard
/// only gives the reply the HTTP shape (403 and `WWW-Authenticate`).
pub struct ScopeRefusal {
    challenge: Challenge,
    refused: Mutex<Option<Refused>>,
}

/// A refusal as the guard answers it.
pub struct Refused {
    /// The `WWW-Authenticate` value, naming the scopes needed.
    pub challenge: String,
    pub message: String,
}

impl ScopeRefusal {
    pub fn new(challenge: Challenge) -> Self {
        Self {
            challenge,
            refused: Mutex::default(),
        }
    }

    /// Records that the request in `parts` lacks `scopes`; `message` says so.
    pub fn refuse(&self, parts: &http::request::Parts, scopes: &[String], message: String) {
        let challenge = (self.challenge)(parts, scopes);
        *self.refused.lock().expect("refusal lock") = Some(Refused { challenge, message });
    }

    /// The refusal, if the engine made one.
    pub fn take(&self) -> Option<Refused> {
        self.refused.lock().expect("refusal lock").take()
    }
}
