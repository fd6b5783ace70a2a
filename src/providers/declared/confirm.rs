//! `confirm = true`: the user approves each run. Legacy sessions ask through
//! an `elicitation/create` request; 2026-07-28 answers `input_required` and
//! runs when the retry carries an accepting response together with the
//! `requestState` it was given. That state is sealed (HMAC) and bound to the
//! tool, the caller and the exact arguments, with a short expiry, so an
//! approval cannot be forged, replayed for other arguments, or sent unasked.
//! A client that cannot ask, a refusal, or a cancel means the tool does not run.

use std::{sync::OnceLock, time::Duration};

use serde_json::{Value, json};

use super::template::canonical;
use crate::{
    config::ToolDecl,
    mcp::{InputRequiredResult, JsonObject, RequestStateCodec, SealOptions},
    providers::wire,
    registry::CallContext,
};

/// Key of the confirmation in `inputRequests` / `inputResponses`.
const KEY: &str = "confirm";
/// How long an issued confirmation request stays answerable.
const STATE_TTL: Duration = Duration::from_secs(600);
const SEALED_PAYLOAD: &[u8] = b"confirm";

/// Seals and opens the `requestState` of confirmation round trips.
pub struct Sealer {
    /// The first seals; every one opens (key rotation).
    codecs: Vec<RequestStateCodec>,
}

impl Sealer {
    /// From `mcp.request_state_keys`; without any, a random key made once
    /// per process, so reloads keep pending confirmations answerable.
    pub fn new(keys: &[&str]) -> anyhow::Result<Self> {
        static PROCESS_KEY: OnceLock<[u8; 32]> = OnceLock::new();
        let mut codecs = Vec::new();
        for key in keys {
            codecs.push(RequestStateCodec::try_new(key.as_bytes().to_vec())?);
        }
        if codecs.is_empty() {
            let key = PROCESS_KEY.get_or_init(rand::random);
            codecs.push(RequestStateCodec::try_new(key.to_vec())?);
        }
        Ok(Self { codecs })
    }

    fn seal(&self, context: &[u8]) -> String {
        let options = SealOptions::new().associated_data(context).ttl(STATE_TTL);
        self.codecs[0].seal_with(SEALED_PAYLOAD, &options)
    }

    fn opens(&self, sealed: &str, context: &[u8]) -> bool {
        self.codecs.iter().any(|codec| {
            codec
                .open_with(sealed, context)
                .is_ok_and(|p| p == SEALED_PAYLOAD)
        })
    }
}

/// What an approval is bound to: this tool, this caller, these arguments.
fn binding(decl: &ToolDecl, arguments: &JsonObject, cx: &CallContext) -> Vec<u8> {
    let arguments = canonical(&Value::Object(arguments.clone()));
    format!("{}\0{}\0{arguments}", decl.name, cx.caller().user).into_bytes()
}

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

pub async fn ask(
    decl: &ToolDecl,
    arguments: &JsonObject,
    cx: &CallContext,
    sealer: &Sealer,
) -> Answer {
    if !decl.confirm {
        return Answer::Granted;
    }
    let bound = binding(decl, arguments, cx);
    // A response counts only with the state this server issued for exactly
    // this call; anything else is asked again.
    let issued = cx.request_state().is_some_and(|s| sealer.opens(s, &bound));
    if cx.is_modern()
        && issued
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
            "requestState": sealer.seal(&bound),
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
