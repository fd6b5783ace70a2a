//! The server's answers to the engine's questions: the challenge of a
//! scope refusal, what ends a withdrawn caller's streams, a session's
//! protocol version (for `http/batch.rs`). Lives apart from `mcp` so the
//! engine stays free of authentication.

use std::sync::Arc;

use crate::{
    auth::Authenticator,
    mcp::{Gate, Sessions},
    registry::Caller,
};

pub struct TeamGate {
    pub sessions: Arc<Sessions>,
    pub authenticator: Arc<Authenticator>,
}

#[async_trait::async_trait]
impl Gate for TeamGate {
    async fn session_version(&self, session_id: &str) -> Option<String> {
        self.sessions.protocol_version(session_id).await
    }

    fn scope_challenge(&self, parts: &http::request::Parts, scopes: &[String]) -> String {
        crate::auth::challenge(
            &self.authenticator.resource(parts),
            Some("insufficient_scope"),
            Some(&scopes.join(" ")),
        )
    }

    fn withdrawn(&self, caller: &Caller) -> Option<futures::future::BoxFuture<'static, ()>> {
        match caller.token_id.as_deref() {
            Some(id) => Some(Box::pin(self.authenticator.tokens.revoked(id))),
            // OAuth: at the token's expiry, or when its grant is revoked.
            None => self.authenticator.oauth_withdrawn(&caller.claims),
        }
    }
}
