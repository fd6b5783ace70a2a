//! The server's answers to the HTTP guard's questions: session caps and
//! owners, the challenge of a scope refusal, and the audit of refusals. Lives apart
//! from `http` so that module stays free of sessions, scopes and storage.

use std::sync::Arc;

use crate::{
    audit::{Auditor, digest, record_id},
    auth::Authenticator,
    http::{Gate, Refusal},
    mcp::Sessions,
    protocol::{header_text, names},
    registry::Caller,
    store::{AuditRecord, SessionRepo, SqlEventStore},
};

pub struct TeamGate {
    pub sessions: Arc<Sessions>,
    pub repo: Arc<dyn SessionRepo>,
    pub auditor: Auditor,
    pub events: Arc<SqlEventStore>,
    pub authenticator: Arc<Authenticator>,
    pub max_sessions: i64,
    pub max_sessions_per_owner: i64,
}

#[async_trait::async_trait]
impl Gate for TeamGate {
    async fn admit(&self, caller: &Caller) -> Result<(), String> {
        let owner = &caller.user;
        let (all, mine) = match (
            self.repo.count(None).await,
            self.repo.count(Some(owner)).await,
        ) {
            (Ok(all), Ok(mine)) => (all, mine),
            // Without the store no session could be kept: say so.
            (Err(e), _) | (_, Err(e)) => {
                return Err(format!("the session store is unavailable: {e}"));
            }
        };
        if all >= self.max_sessions {
            return Err(format!(
                "the server holds its maximum of {} sessions; try again later",
                self.max_sessions
            ));
        }
        if mine >= self.max_sessions_per_owner {
            return Err(format!(
                "{owner} already has {mine} open sessions (the limit is {}); end unused ones with DELETE",
                self.max_sessions_per_owner
            ));
        }
        Ok(())
    }

    async fn session_owner(&self, session_id: &str) -> Option<Arc<str>> {
        self.sessions.owner_of(session_id).await
    }

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
        let id = caller.token_id.as_deref()?;
        Some(Box::pin(self.authenticator.tokens.revoked(id)))
    }

    async fn audit_refusal(&self, caller: &Caller, refusal: Refusal<'_>) {
        let now = self.repo.clock_ms();
        let (issuer, subject) = caller.issuer_subject();
        let parts = refusal.parts;
        self.auditor
            .record(AuditRecord {
                id: record_id(now),
                at_ms: now,
                user: caller.user.clone(),
                token_id: caller.token_id.clone().unwrap_or_default(),
                issuer,
                subject,
                session_id: header_text(&parts.headers, names::MCP_SESSION_ID),
                protocol_version: header_text(&parts.headers, names::MCP_PROTOCOL_VERSION),
                method: refusal.method.to_owned(),
                target: refusal.target.to_owned(),
                args_digest: digest(refusal.arguments),
                outcome: refusal.reason,
                latency_ms: 0,
                trace_id: String::new(),
            })
            .await;
    }

    fn discard_events(&self, event_ids: Vec<String>) {
        self.events.discard(&event_ids);
    }
}
