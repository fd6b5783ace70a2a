//! Session policy, decided before rmcp opens or serves a 2025-era session:
//! a session is its owner's alone, and the server and each member hold at
//! most their cap of sessions. The engine's, like every MCP policy; the
//! HTTP layer only gives a refusal its status (`http/error.rs`).

use std::sync::Arc;

use axum::http::request::Parts;

use super::{EngineError, Sessions, calls::actor, tally::Tally};
use crate::{
    audit::Auditor,
    protocol::{ProtocolEra, header_text, names},
    registry::{Caller, RequestFacts},
    store::{AuditRecord, SessionRepo, Via},
};

/// The session caps and the owners' register they are checked against.
pub struct Admission {
    sessions: Arc<Sessions>,
    repo: Arc<dyn SessionRepo>,
    tally: Tally,
    auditor: Auditor,
    max_sessions: i64,
    max_sessions_per_owner: i64,
}

impl Admission {
    /// `max_sessions` for the server, `max_sessions_per_owner` for each
    /// member, counted in `repo`.
    pub fn new(
        sessions: Arc<Sessions>,
        repo: Arc<dyn SessionRepo>,
        auditor: Auditor,
        max_sessions: i64,
        max_sessions_per_owner: i64,
    ) -> Self {
        Self {
            sessions,
            tally: Tally::new(repo.clone(), (max_sessions, max_sessions_per_owner)),
            repo,
            auditor,
            max_sessions,
            max_sessions_per_owner,
        }
    }

    /// Refuses a request on another member's session (audited), and a
    /// request that would open a session past a cap. A 2025-era POST without
    /// a session id opens one if rmcp serves it at all (it serves only
    /// `initialize` so), which is decided without reading the body.
    pub async fn check(&self, facts: &RequestFacts, parts: &Parts) -> Result<(), EngineError> {
        let caller = &facts.caller;
        if let Some(session) = parts.headers.get(names::MCP_SESSION_ID) {
            let session = session.to_str().unwrap_or_default();
            if let Some(owner) = self.sessions.owner_of(session).await
                && *owner != *caller.user
            {
                self.audit_refusal(caller, parts, "denied: another member's session")
                    .await;
                return Err(EngineError::SessionNotFound);
            }
            return Ok(());
        }
        if facts.post && facts.era != ProtocolEra::Modern {
            return self.room_for(caller).await;
        }
        Ok(())
    }

    /// Whether `caller` may open one more session.
    async fn room_for(&self, caller: &Caller) -> Result<(), EngineError> {
        let owner = &caller.user;
        // The counts may be trusted for a while (`tally.rs`); the database
        // must answer now, or the session would live on this replica only.
        if !self.repo.reachable().await {
            return Err(EngineError::Unavailable(
                "the session store is unavailable: the database does not answer".into(),
            ));
        }
        let (all, mine) = match self.tally.counts(owner).await {
            Ok(counts) => counts,
            // Without the store no session could be kept: say so.
            Err(e) => {
                return Err(EngineError::Unavailable(format!(
                    "the session store is unavailable: {e}"
                )));
            }
        };
        if all >= self.max_sessions {
            return Err(EngineError::Unavailable(format!(
                "the server holds its maximum of {} sessions; try again later",
                self.max_sessions
            )));
        }
        if mine >= self.max_sessions_per_owner {
            return Err(EngineError::Unavailable(format!(
                "{owner} already has {mine} open sessions (the limit is {}); end unused ones with DELETE",
                self.max_sessions_per_owner
            )));
        }
        self.tally.opened(owner);
        Ok(())
    }

    async fn audit_refusal(&self, caller: &Caller, parts: &Parts, reason: &str) {
        let now = self.repo.clock_ms();
        // The header, as the session was named (not the message's version).
        let via = Via {
            session_id: header_text(&parts.headers, names::MCP_SESSION_ID),
            protocol_version: header_text(&parts.headers, names::MCP_PROTOCOL_VERSION),
            ..Via::default()
        };
        let record = AuditRecord::session_refused(now, actor(caller), via, reason);
        self.auditor.record(record).await;
    }
}
