//! The kinds of audit record, one constructor each, so no caller fills the
//! record's fields by hand: an MCP request, a session refused to its
//! caller, a request refused before authentication, a portal or
//! authorization-server action, an operator's command.

use super::{AuditRecord, record_id};

/// Who an audit record names, as authenticated.
#[derive(Debug, Clone, Default)]
pub struct Actor {
    pub user: String,
    /// The personal token used, if any.
    pub token_id: String,
    /// An OAuth token's issuer and subject, if any.
    pub issuer: String,
    pub subject: String,
    /// The toolset endpoint the actor came through; empty for the main one.
    pub endpoint: String,
}

/// The MCP request a record belongs to, as its headers and span name it.
#[derive(Debug, Clone, Default)]
pub struct Via {
    pub session_id: String,
    pub protocol_version: String,
    pub trace_id: String,
    /// The client's address, where known.
    pub address: String,
}

impl AuditRecord {
    /// `actor`'s `method` on `target` at `at_ms`, over `via`, ending in
    /// `outcome`; every other field empty.
    fn of(
        at_ms: i64,
        actor: Actor,
        via: Via,
        (method, target): (&str, &str),
        outcome: String,
    ) -> Self {
        let Actor {
            user,
            token_id,
            issuer,
            subject,
            endpoint,
        } = actor;
        let Via {
            session_id,
            protocol_version,
            trace_id,
            address,
        } = via;
        Self {
            id: record_id(at_ms),
            at_ms,
            user,
            token_id,
            issuer,
            subject,
            session_id,
            protocol_version,
            method: method.to_owned(),
            target: target.to_owned(),
            args_digest: String::new(),
            outcome,
            latency_ms: 0,
            trace_id,
            upstream: String::new(),
            credential: String::new(),
            address,
            endpoint,
        }
    }

    /// An MCP request (`tools/call`, `resources/read`, `prompts/get`) begun
    /// at `at_ms`, its arguments' digest kept; its outcome, latency, upstream
    /// and credential are set when it ends.
    pub fn request(
        at_ms: i64,
        actor: Actor,
        via: Via,
        (method, target): (&str, &str),
        args_digest: String,
    ) -> Self {
        Self {
            args_digest,
            ..Self::of(at_ms, actor, via, (method, target), String::new())
        }
    }

    /// A session refused to `actor` (another member's), `reason` said.
    pub fn session_refused(at_ms: i64, actor: Actor, via: Via, reason: &str) -> Self {
        Self::of(at_ms, actor, via, ("session", ""), reason.to_owned())
    }

    /// A request refused before anyone was authenticated: nobody, from
    /// `via.address`, for `(method, target)` as its headers name them.
    pub fn unauthenticated(
        at_ms: i64,
        via: Via,
        (method, target): (&str, &str),
        why: &str,
    ) -> Self {
        let outcome = format!("unauthenticated: {why}");
        Self::of(at_ms, Actor::default(), via, (method, target), outcome)
    }

    /// A portal or authorization-server action by `actor` from `address`.
    pub fn portal(at_ms: i64, actor: Actor, address: &str, (method, target): (&str, &str)) -> Self {
        let via = Via {
            address: address.to_owned(),
            ..Via::default()
        };
        Self::of(at_ms, actor, via, (method, target), "ok".to_owned())
    }

    /// The end of `owner`'s task of `tool`, created at `created_ms`, failed
    /// at `at_ms` because the replica running it stopped (or shut down).
    pub fn task_lost(
        at_ms: i64,
        owner: &str,
        (tool, task): (&str, &str),
        created_ms: i64,
        why: &str,
    ) -> Self {
        let actor = Actor {
            user: owner.to_owned(),
            ..Actor::default()
        };
        let outcome = format!("failed: {why} (task {task})");
        Self {
            latency_ms: (at_ms - created_ms).max(0),
            ..Self::of(at_ms, actor, Via::default(), ("tasks/end", tool), outcome)
        }
    }

    /// The end, seen at `at_ms`, of `owner`'s task of `tool` that the
    /// upstream server `upstream` ran (created at `created_ms`).
    pub fn upstream_task_end(
        at_ms: i64,
        owner: &str,
        (tool, task): (&str, &str),
        (created_ms, upstream): (i64, &str),
        outcome: String,
    ) -> Self {
        let actor = Actor {
            user: owner.to_owned(),
            ..Actor::default()
        };
        let outcome = format!("{outcome} (task {task})");
        Self {
            latency_ms: (at_ms - created_ms).max(0),
            upstream: upstream.to_owned(),
            ..Self::of(at_ms, actor, Via::default(), ("tasks/end", tool), outcome)
        }
    }

    /// `actor`'s task of `tool` claimed at `at_ms` to run again (its
    /// `attempt`-th run) because the replica running it stopped.
    pub fn task_retried(
        at_ms: i64,
        actor: Actor,
        (tool, task): (&str, &str),
        protocol_version: &str,
        attempt: i64,
    ) -> Self {
        let via = Via {
            protocol_version: protocol_version.to_owned(),
            ..Via::default()
        };
        let outcome =
            format!("retried: the replica running it stopped; run {attempt} (task {task})");
        Self::of(at_ms, actor, via, ("tasks/retry", tool), outcome)
    }

    /// An operator's command on the server's store by the local `user`,
    /// about `upstream`, `digest` naming what it let through.
    pub fn operator(
        at_ms: i64,
        user: &str,
        (method, target): (&str, &str),
        upstream: &str,
        digest: String,
    ) -> Self {
        let actor = Actor {
            user: user.to_owned(),
            ..Actor::default()
        };
        Self {
            args_digest: digest,
            upstream: upstream.to_owned(),
            ..Self::of(at_ms, actor, Via::default(), (method, target), "ok".into())
        }
    }
}
