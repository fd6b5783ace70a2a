//! The engine's refusal of a call for lack of scope, on its way to the
//! guard (`http/guard.rs`), which answers it with 403 and the challenge.

use std::sync::Mutex;

use tokio::sync::oneshot;

/// How the `WWW-Authenticate` challenge of a refusal is written for a request
/// (the guard knows the resource URL and the scopes supported).
pub type Challenge = Box<dyn Fn(&http::request::Parts, &[String]) -> String + Send + Sync>;

/// Where the engine leaves its decision on a call's scopes. The decision is
/// the engine's, made on the typed request it acts on; the guard only gives
/// a refusal the HTTP shape (403 and `WWW-Authenticate`).
pub struct ScopeRefusal {
    challenge: Challenge,
    decided: Mutex<Option<oneshot::Sender<Refused>>>,
}

/// The guard's end: resolves with the refusal, or with an error once the
/// engine allowed the call (or dropped the request without deciding).
pub type Decision = oneshot::Receiver<Refused>;

/// A refusal as the guard answers it.
#[derive(Debug)]
pub struct Refused {
    /// The `WWW-Authenticate` value, naming the scopes needed.
    pub challenge: String,
    pub message: String,
}

impl ScopeRefusal {
    pub fn new(challenge: Challenge) -> (Self, Decision) {
        let (sender, decision) = oneshot::channel();
        let refusal = Self {
            challenge,
            decided: Mutex::new(Some(sender)),
        };
        (refusal, decision)
    }

    /// Records that the request in `parts` lacks `scopes`; `message` says so.
    pub fn refuse(&self, parts: &http::request::Parts, scopes: &[String], message: String) {
        if let Some(sender) = self.decided.lock().expect("refusal lock").take() {
            let challenge = (self.challenge)(parts, scopes);
            // The guard may have stopped waiting; the JSON-RPC error still goes out.
            let _ = sender.send(Refused { challenge, message });
        }
    }

    /// Records that the call holds the scopes it needs.
    pub fn allow(&self) {
        self.decided.lock().expect("refusal lock").take();
    }
}
