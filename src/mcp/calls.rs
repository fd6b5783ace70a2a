//! Per-call plumbing shared by the handler's methods: who is calling, and
//! the audit record each tools/call, resources/read and prompts/get leaves.

use std::{borrow::Cow, sync::Arc, time::Instant};

use serde_json::Value;

use super::{
    CallToolResponse, GetPromptResponse, McpError, ReadResourceResponse, RequestContext,
    RoleServer, departure::Departure,
};
use crate::{
    audit::{Auditor, digest_object, record_id},
    protocol::{header_text, names, version_of},
    registry::{Caller, CredentialUse, Fired, RequestFacts},
    store::{Actor, AuditRecord, Via},
    telemetry::{Observed, Outcome},
};

/// The request's facts (`registry::RequestFacts`), over HTTP.
pub(super) fn facts_of(context: &RequestContext<RoleServer>) -> Option<&Arc<RequestFacts>> {
    facts_in(&context.extensions)
}

/// The facts of the request whose `extensions` rmcp carries (a handler's
/// context, or a message before rmcp takes it).
pub(super) fn facts_in(extensions: &rmcp::model::Extensions) -> Option<&Arc<RequestFacts>> {
    extensions
        .get::<http::request::Parts>()
        .and_then(RequestFacts::of)
}

/// Who the audit trail names for `caller`.
pub(super) fn actor(caller: &Caller) -> Actor {
    let (issuer, subject) = caller.issuer_subject();
    Actor {
        user: caller.user.clone(),
        token_id: caller.token_id.clone().unwrap_or_default(),
        issuer,
        subject,
        endpoint: caller.endpoint().unwrap_or_default().to_owned(),
    }
}

/// The caller the request's facts name; stdio is the anonymous local user.
pub(super) fn caller_of(context: &RequestContext<RoleServer>) -> Caller {
    facts_of(context).map_or_else(Caller::anonymous, |facts| facts.caller.clone())
}

/// A request header as text, clipped like every header the audit trail and
/// spans keep (`http::header_text`).
fn header(context: &RequestContext<RoleServer>, name: axum::http::HeaderName) -> String {
    context
        .extensions
        .get::<http::request::Parts>()
        .map(|parts| header_text(&parts.headers, name))
        .unwrap_or_default()
}

/// What the HTTP layer observing the request left for the call, if any.
fn observed<T: Clone + Send + Sync + 'static>(context: &RequestContext<RoleServer>) -> Option<T> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<T>())
        .cloned()
}

/// The request's outcome slot (`telemetry::Observed`), over HTTP.
pub(super) fn outcome_slot(context: &RequestContext<RoleServer>) -> Option<Arc<Observed>> {
    observed::<Arc<Observed>>(context)
}

/// Records a request's error in its outcome slot (the span and the metrics
/// read it) unless its audit recorded the outcome already, and passes the
/// result on. A request that records nothing succeeded.
pub(super) fn ended<T>(
    slot: Option<&Arc<Observed>>,
    result: Result<T, McpError>,
) -> Result<T, McpError> {
    if let (Err(error), Some(slot)) = (&result, slot) {
        slot.settle(Outcome::Error(error.code.0));
    }
    result
}

/// The W3C trace id of the call: the request span's (which continues a
/// `traceparent` from the header or `_meta`), else from `traceparent`, or new.
fn trace_id(context: &RequestContext<RoleServer>) -> String {
    if let Some(id) = facts_of(context).and_then(|facts| facts.trace_id()) {
        return id.to_owned();
    }
    let from_meta = context
        .meta
        .get("traceparent")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let traceparent = from_meta.unwrap_or_else(|| header(context, names::TRACEPARENT));
    match traceparent.split('-').nth(1) {
        Some(id) if id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) => id.to_owned(),
        _ => crate::telemetry::new_trace_id(),
    }
}

/// Where audit records go, and the clock they are stamped with.
#[derive(Clone)]
pub struct AuditSink {
    pub auditor: Auditor,
    pub now_ms: Arc<dyn Fn() -> i64 + Send + Sync>,
}

/// An audit record being filled while its call runs.
pub(super) struct Audit {
    sink: AuditSink,
    started: Instant,
    record: AuditRecord,
    /// The request span's outcome slot, so span, metrics and audit agree.
    observed: Option<Arc<Observed>>,
    /// Where the call's provider reports the credential kind it used.
    credential: Option<CredentialUse>,
    /// Where the guardrails that fired on the call are noted.
    fired: Option<Fired>,
    /// Set when the call was cancelled because its client left
    /// (`departure.rs`).
    departure: Option<Arc<Departure>>,
}

impl Audit {
    pub(super) fn begin(
        sink: &AuditSink,
        context: &RequestContext<RoleServer>,
        caller: &Caller,
        method: &str,
        target: &str,
        arguments: Option<&serde_json::Map<String, Value>>,
    ) -> Self {
        let at_ms = (sink.now_ms)();
        let via = Via {
            session_id: header(context, names::MCP_SESSION_ID),
            protocol_version: version_of(context).map(Cow::into_owned).unwrap_or_default(),
            trace_id: trace_id(context),
            address: String::new(),
        };
        let digest = arguments.map(digest_object).unwrap_or_default();
        Self {
            sink: sink.clone(),
            started: Instant::now(),
            observed: observed::<Arc<Observed>>(context),
            credential: None,
            fired: None,
            departure: context.extensions.get::<Arc<Departure>>().cloned(),
            record: AuditRecord::request(at_ms, actor(caller), via, (method, target), digest),
        }
    }

    /// A call of a name no provider has: audited, but a client-made name
    /// never labels a metric (the request's outcome settles as any error's).
    pub(super) fn unknown_target(mut self) -> Self {
        self.observed = None;
        self
    }

    /// Names the upstream server that serves the call.
    pub(super) fn served_by(mut self, upstream: Option<String>) -> Self {
        self.record.upstream = upstream.unwrap_or_default();
        self
    }

    /// Names, when written, the credential kind the call's provider
    /// reported in `used` (none: the column stays empty).
    pub(super) fn credential(mut self, used: &CredentialUse) -> Self {
        self.credential = Some(used.clone());
        self
    }

    /// Names, when written, the guardrails noted in `fired` (by rule,
    /// action and phase; never what they found).
    pub(super) fn guardrails(mut self, fired: &Fired) -> Self {
        self.fired = Some(fired.clone());
        self
    }

    /// The record of a task's end, begun with this call's creation record:
    /// its latency is the task's whole run; stamped when written.
    pub(super) fn sequel(&self) -> Self {
        let mut record = self.record.clone();
        record.method = "tasks/end".into();
        Self {
            sink: self.sink.clone(),
            started: self.started,
            record,
            observed: None,
            credential: self.credential.clone(),
            fired: self.fired.clone(),
            departure: None,
        }
    }

    /// The record of the end of a task run again on this replica, begun
    /// with its retry's record; its latency is this run's.
    pub(super) fn retried(sink: &AuditSink, retry: &AuditRecord) -> Self {
        let mut record = retry.clone();
        record.method = "tasks/end".into();
        Self {
            sink: sink.clone(),
            started: Instant::now(),
            record,
            observed: None,
            credential: None,
            fired: None,
            departure: None,
        }
    }

    /// Records the call's refusal for lack of scope; `reason` says which.
    pub(super) async fn deny(mut self, reason: &str) {
        self.record.outcome = format!("denied: {reason}");
        if let Some(observed) = &self.observed {
            observed.record(Outcome::Denied);
        }
        self.sink.auditor.record(self.record).await;
    }

    pub(super) async fn finish<T: Ended>(mut self, result: &Result<T, McpError>) {
        let outcome = match result {
            Ok(response) => response.outcome(),
            Err(error) => Outcome::Error(error.code.0),
        };
        self.record.outcome = outcome.label().into_owned();
        if self.departure.as_ref().is_some_and(|d| d.left()) {
            "cancelled: client disconnected".clone_into(&mut self.record.outcome);
        }
        self.record.latency_ms = self.started.elapsed().as_millis() as i64;
        if let Some(used) = &self.credential {
            used.label().clone_into(&mut self.record.credential);
        }
        let fired = self.fired.as_ref().map(Fired::lines).unwrap_or_default();
        if !fired.is_empty() {
            self.record.outcome =
                format!("{}; guardrails: {}", self.record.outcome, fired.join(", "));
        }
        if self.record.method == "tasks/end" {
            self.record.at_ms = (self.sink.now_ms)();
            self.record.id = record_id(self.record.at_ms);
        }
        if let Some(observed) = &self.observed {
            observed.record(outcome);
        }
        self.sink.auditor.record(self.record).await;
    }
}

/// How a finished call ended, for the audit trail, the span and the metrics.
pub(super) trait Ended {
    fn outcome(&self) -> Outcome;
}

impl Ended for CallToolResponse {
    fn outcome(&self) -> Outcome {
        match self {
            CallToolResponse::Complete(r) if r.is_error == Some(true) => Outcome::ToolError,
            CallToolResponse::Complete(_) => Outcome::Ok,
            CallToolResponse::InputRequired(_) => Outcome::InputRequired,
            _ => Outcome::Task,
        }
    }
}

impl Ended for ReadResourceResponse {
    fn outcome(&self) -> Outcome {
        match self {
            ReadResourceResponse::Complete(_) => Outcome::Ok,
            _ => Outcome::InputRequired,
        }
    }
}

impl Ended for rmcp::model::GetSkillResult {
    fn outcome(&self) -> Outcome {
        Outcome::Ok
    }
}

impl Ended for GetPromptResponse {
    fn outcome(&self) -> Outcome {
        match self {
            GetPromptResponse::Complete(_) => Outcome::Ok,
            _ => Outcome::InputRequired,
        }
    }
}
