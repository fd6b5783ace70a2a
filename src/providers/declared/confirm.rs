//! `confirm = true`: the user approves each run. Legacy sessions ask through
//! an `elicitation/create` request; 2026-07-28 answers `input_required` and
//! runs when the retry carries an accepting response together with the
//! `requestState` it was given. That state is sealed by [`Mrtr`] (bound to
//! the caller and the tool, with a short expiry) and holds a digest of the
//! exact arguments, so an approval cannot be forged, sent unasked, or reused
//! for other arguments. A client that cannot ask, a refusal, or a cancel
//! means the tool does not run.
//!
//! [`Mrtr`]: crate::protocol::Mrtr

use serde_json::{Value, json};

use super::template::canonical;
use crate::{
    config::ToolDecl,
    protocol::Asked,
    protocol::{CallToolResponse, InputRequests, InputRequiredResult, JsonObject, text_result},
    providers::wire,
    registry::CallContext,
};

/// Key of the confirmation in `inputRequests` / `inputResponses`.
const KEY: &str = "confirm";

/// Longest argument summary shown to the user.
const MAX_SUMMARY: usize = 500;

enum Answer {
    Granted,
    Refused(String),
    /// 2026-07-28: return this and wait for the retry.
    Ask(InputRequiredResult),
}

fn request_params(decl: &ToolDecl, arguments: &JsonObject) -> Value {
    let mut summary = Value::Object(arguments.clone()).to_string();
    if summary.len() > MAX_SUMMARY {
        let cut = (0..=MAX_SUMMARY)
            .rev()
            .find(|i| summary.is_char_boundary(*i))
            .unwrap_or(0);
        summary.truncate(cut);
        summary.push('…');
    }
    json!({
        "mode": "form",
        "message": format!("Allow the tool `{}` to run with {summary}?", decl.name),
        "requestedSchema": {
            "type": "object",
            "properties": {"confirm": {"type": "boolean", "title": "Run it", "default": false}},
            "required": ["confirm"]
        }
    })
}

/// An elicitation result approves only when accepted with `confirm` not false.
fn approves(result: &Value) -> bool {
    result["action"] == "accept" && result["content"]["confirm"] != Value::Bool(false)
}

fn refused(decl: &ToolDecl, why: &str) -> Answer {
    Answer::Refused(format!(
        "`{}` did not run: {why}. It needs the user's confirmation each time.",
        decl.name
    ))
}

/// `None` when the tool may run; else what the call answers now (the
/// refusal, or the 2026-07-28 question).
pub(super) async fn withheld(
    decl: &ToolDecl,
    arguments: &JsonObject,
    cx: &CallContext,
) -> Option<CallToolResponse> {
    match ask(decl, arguments, cx).await {
        Answer::Granted => None,
        Answer::Refused(message) => Some(text_result(message, true).into()),
        Answer::Ask(input_required) => Some(CallToolResponse::InputRequired(input_required)),
    }
}

async fn ask(decl: &ToolDecl, arguments: &JsonObject, cx: &CallContext) -> Answer {
    if !decl.confirm {
        return Answer::Granted;
    }
    if cx.client_capabilities().elicitation.is_none() {
        return refused(
            decl,
            "this client cannot ask the user (no elicitation capability)",
        );
    }
    let digest = canonical(&Value::Object(arguments.clone()));
    let requests: InputRequests = wire(json!({
        KEY: {"method": "elicitation/create", "params": request_params(decl, arguments)}
    }));
    let state = match cx.mrtr().seal(&digest) {
        Ok(state) => state,
        Err(error) => return refused(decl, &error.message),
    };
    // An answer counts only with the state issued for exactly these
    // arguments; a forged, expired or foreign one is asked again.
    let issued = cx.mrtr().open::<String>().ok().flatten().as_ref() == Some(&digest);
    if cx.is_modern() && !issued {
        return Answer::Ask(InputRequiredResult::new(Some(requests), Some(state)));
    }
    match cx.ask(requests, Some(state)).await {
        Ok(Asked::Answered(answers)) if answers.get(KEY).is_some_and(approves) => Answer::Granted,
        Ok(Asked::Answered(_)) => refused(decl, "the user declined"),
        Ok(Asked::Pending(input_required)) => Answer::Ask(input_required),
        Err(error) => refused(
            decl,
            &format!("the confirmation request failed ({})", error.message),
        ),
    }
}
