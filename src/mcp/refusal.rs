//! The engine's refusal of a call for lack of scope, made by the handler on
//! rmcp's typed request (`access.rs`) and carried to the reply it shapes
//! (`reply.rs`), which answers it with 403 and the challenge.

use std::sync::Mutex;

use tokio::sync::oneshot;

/// How the `WWW-Authenticate` challenge of a refusal is written for a request
/// (the server's `Gate` knows the resource URL).
pub(super) type Challenge = Box<dyn Fn(&http::request::Parts, &[String]) -> String + Send + Sync>;

/// Where the engine leaves its decision on a call's scopes. The decision is
/// the engine's, made on the typed request it acts on; the reply only gives
/// a refusal the HTTP shape (403 and `WWW-Authenticate`).
pub(super) struct ScopeRefusal {
    challenge: Challenge,
    decided: Mutex<Option<oneshot::Sender<Refused>>>,
}

/// The reply's end: resolves with the refusal, or with an error once the
/// engine allowed the call (or dropped the request without deciding).
pub(super) type Decision = oneshot::Receiver<Refused>;

/// A refusal as the reply answers it.
#[derive(Debug)]
pub(super) struct Refused {
    /// The `WWW-Authenticate` value, naming the scopes needed.
    pub(super) challenge: String,
    pub(super) message: String,
}

impl ScopeRefusal {
    pub(super) fn new(challenge: Challenge) -> (Self, Decision) {
        let (sender, decision) = oneshot::channel();
        let refusal = Self {
            challenge,
            decided: Mutex::new(Some(sender)),
        };
        (refusal, decision)
    }

    /// Records that the request in `parts` lacks `scopes`; `message` says so.
    pub(super) fn refuse(&self, parts: &http::request::Parts, scopes: &[String], message: String) {
        if let Some(sender) = self.decided.lock().expect("refusal lock").take() {
            let challenge = (self.challenge)(parts, scopes);
            // The reply may have stopped waiting; the JSON-RPC error still goes out.
            let _ = sender.send(Refused { challenge, message });
        }
    }

    /// Records that the call holds the scopes it needs.
    pub(super) fn allow(&self) {
        self.decided.lock().expect("refusal lock").take();
    }
}
