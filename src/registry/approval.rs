//! Approval by a second person (issue 65 part 2), as a tool's policy meets
//! it: what a parked call asks and how it ends. The port it waits on,
//! `ApprovalDesk`, is beside `CallContext`, which carries it; the engine
//! provides it (over the store and the audit trail); a server without one
//! (stdio) cannot ask, and the call does not run.

use crate::config::ToolApproval;
use crate::protocol::JsonObject;

/// What a parked call asks for.
pub struct ApprovalAsk<'a> {
    pub tool: &'a str,
    /// Exactly what runs when approved.
    pub arguments: &'a JsonObject,
    pub rule: &'a ToolApproval,
}

/// How a request for approval ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Approved {
        by: String,
    },
    Denied {
        by: String,
        reason: Option<String>,
    },
    /// Nobody decided within the rule's timeout.
    Expired,
    /// The caller cancelled while it waited.
    Withdrawn,
}

#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    #[error("the request for approval could not be recorded ({0}); the tool did not run")]
    Unrecorded(String),
    #[error(
        "you already have {0} calls waiting for approval; the tool did not run (wait for a \
         decision, or cancel one of them)"
    )]
    TooMany(usize),
}
