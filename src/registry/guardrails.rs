//! `[[guardrails]]` applied to every tool call the registry routes, of any
//! provider (declared, OpenAPI, SQL, upstream), in their order: on the
//! arguments before the provider runs, on the result after secrets are
//! scrubbed. A rule blocks, redacts or logs; what fired is reported on the
//! call's context for its audit record, by rule name, never the value.

mod detect;
mod webhook;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::Value;

use super::{CallContext, Caller, Fired, RegistryError};
use crate::{
    config::{Detect, GuardAction, GuardrailConfig, Phase},
    protocol::{CallToolResponse, CallToolResult, JsonObject},
};

/// The rules of one configuration, in order.
#[derive(Default)]
pub struct Guardrails {
    rules: Vec<Rule>,
}

struct Rule {
    name: String,
    detect: Detect,
    action: GuardAction,
    on: Vec<Phase>,
    tools: GlobSet,
    toolsets: Vec<String>,
    webhook: Option<webhook::Webhook>,
}

/// Notes that `rule` fired with `action` on `phase`, for the audit record
/// (`"<rule> <action> <phase>"`).
fn note(fired: &Fired, rule: &Rule, action: GuardAction, phase: Phase) {
    let action = match action {
        GuardAction::Block => "blocked",
        GuardAction::Redact => "redacted",
        GuardAction::Log => "logged",
    };
    let phase = match phase {
        Phase::Arguments => "arguments",
        Phase::Results => "result",
    };
    fired.note(format!("{} {action} {phase}", rule.name));
}

/// A blocked call's answer to the member: a tool error naming the rule.
fn blocked(rule: &Rule, phase: Phase) -> CallToolResponse {
    let what = match phase {
        Phase::Arguments => "The call was refused",
        Phase::Results => "The tool's result was withheld",
    };
    let text = format!(
        "{what} by the team's guardrail \"{}\" ({}).",
        rule.name,
        label(rule.detect)
    );
    CallToolResponse::Complete(CallToolResult::error(vec![
        crate::protocol::ContentBlock::text(text),
    ]))
}

fn label(detect: Detect) -> &'static str {
    match detect {
        Detect::Secrets => "a secret",
        Detect::Email => "an e-mail address",
        Detect::CardNumber => "a card number",
        Detect::Iban => "an IBAN",
        Detect::Webhook => "the content filter refused it",
    }
}

impl Guardrails {
    pub fn build(configs: &[GuardrailConfig]) -> Result<Self, RegistryError> {
        let rules = configs.iter().map(Rule::build).collect::<Result<_, _>>()?;
        Ok(Self { rules })
    }

    fn applying<'a>(
        &'a self,
        tool: &'a str,
        caller: &'a Caller,
        phase: Phase,
    ) -> impl Iterator<Item = &'a Rule> {
        let endpoint = caller.endpoint().unwrap_or_default();
        self.rules.iter().filter(move |rule| {
            rule.on.contains(&phase)
                && rule.tools.is_match(tool)
                && (rule.toolsets.is_empty() || rule.toolsets.iter().any(|t| t == endpoint))
        })
    }

    /// Checks (and redacts) a call's arguments; `Some` answer when a rule
    /// blocks the call.
    pub async fn arguments(
        &self,
        tool: &str,
        cx: &CallContext,
        arguments: &mut JsonObject,
    ) -> Option<CallToolResponse> {
        let (caller, fired) = (cx.caller(), cx.fired());
        for rule in self.applying(tool, caller, Phase::Arguments) {
            let mut value = Value::Object(std::mem::take(arguments));
            let verdict = rule.check(tool, caller, Phase::Arguments, &mut value).await;
            if let Value::Object(map) = value {
                *arguments = map;
            }
            if let Some(action) = verdict {
                note(fired, rule, action, Phase::Arguments);
                if action == GuardAction::Block {
                    return Some(blocked(rule, Phase::Arguments));
                }
            }
        }
        None
    }

    /// Checks (and redacts) a finished call's result; a blocked result is
    /// replaced by a tool error naming the rule.
    pub async fn result(
        &self,
        tool: &str,
        cx: &CallContext,
        response: CallToolResponse,
    ) -> CallToolResponse {
        let (caller, fired) = (cx.caller(), cx.fired());
        let CallToolResponse::Complete(result) = response else {
            return response;
        };
        let mut rules = self.applying(tool, caller, Phase::Results).peekable();
        if rules.peek().is_none() {
            return CallToolResponse::Complete(result);
        }
        let Ok(mut value) = serde_json::to_value(&result) else {
            return CallToolResponse::Complete(result);
        };
        for rule in rules {
            if let Some(action) = rule.check(tool, caller, Phase::Results, &mut value).await {
                note(fired, rule, action, Phase::Results);
                if action == GuardAction::Block {
                    return blocked(rule, Phase::Results);
                }
            }
        }
        CallToolResponse::Complete(serde_json::from_value(value).unwrap_or(result))
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

impl Rule {
    fn build(config: &GuardrailConfig) -> Result<Self, RegistryError> {
        let mut tools = GlobSetBuilder::new();
        for glob in &config.tools {
            tools.add(Glob::new(glob).map_err(|e| RegistryError::Guardrail(e.to_string()))?);
        }
        let webhook = match config.detect {
            Detect::Webhook => Some(webhook::Webhook::new(config)?),
            _ => None,
        };
        Ok(Self {
            name: config.name.clone(),
            detect: config.detect,
            action: config.action,
            on: config.on.clone(),
            tools: tools
                .build()
                .map_err(|e| RegistryError::Guardrail(e.to_string()))?,
            toolsets: config.toolsets.clone(),
            webhook,
        })
    }

    /// The action taken when the rule fires on `value` (redacting it in
    /// place for `redact`); `None` when it finds nothing.
    async fn check(
        &self,
        tool: &str,
        caller: &Caller,
        phase: Phase,
        value: &mut Value,
    ) -> Option<GuardAction> {
        if let Some(webhook) = &self.webhook {
            return match webhook
                .verdict(&self.name, tool, caller, phase, value)
                .await
            {
                webhook::Verdict::Allowed => None,
                webhook::Verdict::Refused | webhook::Verdict::UnansweredClosed => Some(self.action),
                // Passes, but the record says the filter was not asked.
                webhook::Verdict::UnansweredOpen => Some(GuardAction::Log),
            };
        }
        let redact = self.action == GuardAction::Redact;
        let found = walk(value, self.detect, redact);
        (found > 0).then_some(self.action)
    }
}

/// Finds `detect` in every string of `value` (keys included), replacing
/// each finding with `[redacted:<detector>]` when `redact`; the count.
fn walk(value: &mut Value, detect: Detect, redact: bool) -> usize {
    match value {
        Value::String(text) => {
            let found = detect::find(detect, text);
            if redact && !found.is_empty() {
                let mark = format!("[redacted:{}]", marker(detect));
                let redacted = super::scrub::redact(text.as_bytes(), &found, &mark);
                *text = String::from_utf8_lossy(&redacted).into_owned();
            }
            found.len()
        }
        Value::Array(items) => items.iter_mut().map(|v| walk(v, detect, redact)).sum(),
        Value::Object(map) => {
            let keys = map
                .keys()
                .filter(|k| !detect::find(detect, k).is_empty())
                .count();
            keys + map
                .values_mut()
                .map(|v| walk(v, detect, redact))
                .sum::<usize>()
        }
        _ => 0,
    }
}

fn marker(detect: Detect) -> &'static str {
    match detect {
        Detect::Secrets => "secret",
        Detect::Email => "email",
        Detect::CardNumber => "card_number",
        Detect::Iban => "iban",
        Detect::Webhook => "webhook",
    }
}
