//! How a request the engine handled ended, as the engine decided it. The
//! engine records it into the request's slot (`Observed`), on the typed
//! request and result; the span and the metrics read it from there, never
//! from the reply's bytes.

use std::{
    borrow::Cow,
    sync::{
        OnceLock,
        atomic::{AtomicBool, Ordering},
    },
};

/// A request's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// A tool ran and reported an error (`isError`).
    ToolError,
    /// The call asked the client for input (MRTR).
    InputRequired,
    /// The call became a task.
    Task,
    /// Refused: the caller lacks a scope it needs.
    Denied,
    /// A JSON-RPC error, with its code.
    Error(i32),
}

impl Outcome {
    /// The `outcome` label of spans and metrics.
    pub fn label(self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Self::Ok => "ok",
            Self::ToolError => "tool_error",
            Self::InputRequired => "input_required",
            Self::Task => "task",
            Self::Denied => "denied",
            Self::Error(code) => return Cow::Owned(format!("error {code}")),
        })
    }

    pub fn is_error(self) -> bool {
        matches!(self, Self::Error(_) | Self::Denied)
    }
}

/// The request's outcome slot, in its extensions from the `observe` step on.
#[derive(Default, Debug)]
pub struct Observed {
    outcome: OnceLock<Outcome>,
    /// The call reached a declared tool, resource or prompt (its name may
    /// label the metrics; a name the engine did not know never does).
    declared: AtomicBool,
}

impl Observed {
    /// The outcome of a call that reached a declared target (the audited
    /// ones). The first outcome recorded is the request's.
    pub fn record(&self, outcome: Outcome) {
        self.declared.store(true, Ordering::Relaxed);
        let _ = self.outcome.set(outcome);
    }

    /// The outcome of any request the handler answered, unless a more
    /// specific one was recorded already.
    pub fn settle(&self, outcome: Outcome) {
        let _ = self.outcome.set(outcome);
    }

    pub fn get(&self) -> Option<Outcome> {
        self.outcome.get().copied()
    }

    pub fn declared(&self) -> bool {
        self.declared.load(Ordering::Relaxed)
    }
}
