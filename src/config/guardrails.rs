//! `[[guardrails]]`: content that must not pass, checked in order on tool
//! arguments and results (issue 65): built-in detectors and a webhook
//! filter, each blocking, redacting or logging, per tool or toolset.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ConfigError;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardrailConfig {
    /// Named in the audit record and the member's error when it fires.
    pub name: String,
    pub detect: Detect,
    #[serde(default)]
    pub action: GuardAction,
    /// Where it looks: the call's arguments, its result, or both (default).
    #[serde(default = "both_phases")]
    pub on: Vec<Phase>,
    /// Globs of the tool names members see; default: every tool.
    #[serde(default = "every_tool")]
    pub tools: Vec<String>,
    /// Only calls made through these toolset endpoints (`[[toolsets]]`
    /// names; `""` is the main endpoint); default: every endpoint.
    #[serde(default)]
    pub toolsets: Vec<String>,
    /// `detect = "webhook"`: where the content is POSTed for a verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `detect = "webhook"`: the environment variable holding the
    /// HMAC-SHA256 key of its requests' `X-Teamgate-Signature`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_env: Option<String>,
    /// `detect = "webhook"`: how long its answer may take.
    #[serde(default = "default_timeout", with = "super::duration")]
    pub timeout: Duration,
    /// `detect = "webhook"`: what a webhook that does not answer in time
    /// (or answers an error) means: `"closed"` blocks the call, `"open"`
    /// lets it pass (logged and audited either way).
    #[serde(default)]
    pub failure: Failure,
}

/// What a guardrail looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Detect {
    /// API keys and tokens by their published shapes, and private keys.
    Secrets,
    Email,
    /// 13 to 19 digits (spaces or dashes between) passing the Luhn check.
    CardNumber,
    /// An IBAN whose check digits hold (ISO 13616, mod 97).
    Iban,
    /// A webhook decides (`url`, `secret_env`, `timeout`, `failure`).
    Webhook,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuardAction {
    /// The call is refused (arguments) or its result withheld.
    #[default]
    Block,
    /// What was found is replaced by `[redacted:<detector>]`.
    Redact,
    /// The call passes unchanged; the audit record says the rule fired.
    Log,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Arguments,
    Results,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Failure {
    Open,
    #[default]
    Closed,
}

fn both_phases() -> Vec<Phase> {
    vec![Phase::Arguments, Phase::Results]
}

fn every_tool() -> Vec<String> {
    vec!["*".into()]
}

fn default_timeout() -> Duration {
    Duration::from_secs(2)
}

/// Every guardrail's rules (the webhook's key is read when the registry is
/// built, naming `secret_env` if it is unset).
pub(super) fn validate(guardrails: &[GuardrailConfig]) -> Result<(), ConfigError> {
    let mut names = std::collections::HashSet::new();
    for (i, rule) in guardrails.iter().enumerate() {
        let key = |field: &str| format!("guardrails[{i}].{field}");
        let invalid = |field: &str, why: String| ConfigError::Invalid {
            key: key(field),
            why,
        };
        if rule.name.is_empty() || !names.insert(rule.name.clone()) {
            return Err(invalid("name", "must be set and unique".into()));
        }
        if rule.on.is_empty() {
            return Err(invalid(
                "on",
                "name \"arguments\", \"results\" or both".into(),
            ));
        }
        for glob in &rule.tools {
            globset::Glob::new(glob).map_err(|e| invalid("tools", e.to_string()))?;
        }
        let webhook = rule.detect == Detect::Webhook;
        if webhook != rule.url.is_some() {
            return Err(invalid(
                "url",
                "is set exactly when detect = \"webhook\"".into(),
            ));
        }
        if !webhook {
            continue;
        }
        if rule.action == GuardAction::Redact {
            return Err(invalid(
                "action",
                "a webhook allows or refuses: \"block\" or \"log\"".into(),
            ));
        }
        let url = rule.url.as_deref().unwrap_or_default();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(invalid("url", "must be an http or https URL".into()));
        }
        if rule.secret_env.as_deref().is_none_or(str::is_empty) {
            return Err(invalid(
                "secret_env",
                "names the environment variable holding the webhook's HMAC key".into(),
            ));
        }
    }
    Ok(())
}
