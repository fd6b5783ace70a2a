//! `confirm = true`: the user approves each run. Legacy sessions ask through
//! an `elicitation/create` request; 2026-07-28 answers `input_required` and
//! runs when the retry carries an accepting response. A client that cannot
//! ask, a refusal, or a cancel means the tool does not run.

use serde_json::{Value, json};

use crate::{
    config::ToolDecl,
    mcp::{InputRequiredResult, JsonObject},
    providers::wire,
    registry::CallContext,
};

/// Key of the confirmation in `inputRequests` / `inputResponses`.
const KEY: &str = "confirm";
/// Longest argument summary shown to the user.
const MAX_SUMMARY: usize = 500;

pub enum Answer {
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

pub async fn ask(decl: &ToolDecl, arguments: &JsonObject, cx: &CallContext) -> Answer {
    if !decl.confirm {
        return Answer::Granted;
    }
    if cx.is_modern()
        && let Some(response) = cx.input_response(KEY)
    {
        return if approves(response) {
            Answer::Granted
        } else {
            refused(decl, "the user declined")
        };
    }
    if cx.client_capabilities().elicitation.is_none() {
        return refused(
            decl,
            "this client cannot ask the user (no elicitation capability)",
        );
    }
    let params = request_params(decl, arguments);
    if cx.is_modern() {
        return Answer::Ask(wire(json!({
            "resultType": "input_required",
            "inputRequests": {KEY: {"method": "elicitation/create", "params": params}},
        })));
    }
    match cx.peer().create_elicitation(wire(params)).await {
        Ok(result) if approves(&serde_json::to_value(&result).unwrap_or_default()) => {
            Answer::Granted
        }
        Ok(_) => refused(decl, "the user declined"),
        Err(error) => refused(decl, &format!("the confirmation request failed ({error})")),
    }
}
