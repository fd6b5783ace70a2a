//! `detect = "webhook"`: the content is POSTed to the team's filter, which
//! answers whether it may pass. Signed like the audit webhook
//! (`X-Teamgate-Signature: t=<unix>,sha256=<HMAC of "<t>.<body>">`),
//! bounded by `timeout`; an answer that does not come (or is no verdict)
//! blocks or passes as `failure` says, logged either way.

use serde::Deserialize;
use serde_json::{Value, json};

use super::super::{Caller, RegistryError};
use crate::config::{Failure, GuardrailConfig, Phase};

pub(super) struct Webhook {
    client: reqwest::Client,
    url: String,
    secret: String,
    failure: Failure,
}

/// The filter's answer: `{"allow": true}` or `{"allow": false, "reason": ...}`.
#[derive(Deserialize)]
struct Answer {
    allow: bool,
}

/// What came of asking the filter.
pub(super) enum Verdict {
    Allowed,
    Refused,
    /// No verdict in time, and `failure = "closed"`: treated as refused.
    UnansweredClosed,
    /// No verdict in time, and `failure = "open"`: passes, noted.
    UnansweredOpen,
}

impl Webhook {
    pub(super) fn new(config: &GuardrailConfig) -> Result<Self, RegistryError> {
        let key = format!("guardrails {:?} secret_env", config.name);
        let env = config.secret_env.as_deref().unwrap_or_default();
        let secret = crate::config::env_value(&key, env)
            .map_err(|e| RegistryError::Guardrail(e.to_string()))?;
        let client = crate::outbound::builder()
            .timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| RegistryError::Guardrail(e.to_string()))?;
        Ok(Self {
            client,
            url: config.url.clone().unwrap_or_default(),
            secret,
            failure: config.failure,
        })
    }

    /// The filter's verdict on `content`.
    pub(super) async fn verdict(
        &self,
        rule: &str,
        tool: &str,
        caller: &Caller,
        phase: Phase,
        content: &Value,
    ) -> Verdict {
        let body = json!({
            "guardrail": rule,
            "tool": tool,
            "user": caller.user,
            "endpoint": caller.endpoint().unwrap_or_default(),
            "phase": phase,
            "content": content,
        })
        .to_string();
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let signed = crate::outbound::signature(self.secret.as_bytes(), unix, body.as_bytes());
        let asked = (self.client.post(&self.url))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("X-Teamgate-Signature", signed)
            .body(body)
            .send();
        // The client's timeout bounds the whole exchange, the answer's body
        // included.
        let answer = match asked.await {
            Ok(reply) if reply.status().is_success() => {
                let read = crate::body::read_response(reply, 64 * 1024).await;
                read.ok()
                    .and_then(|bytes| serde_json::from_slice::<Answer>(&bytes).ok())
            }
            _ => None,
        };
        match answer {
            Some(Answer { allow: true }) => Verdict::Allowed,
            Some(Answer { allow: false }) => Verdict::Refused,
            None => {
                let closed = self.failure == Failure::Closed;
                tracing::warn!(
                    guardrail = rule,
                    tool,
                    closed,
                    "guardrail webhook gave no verdict in time; the call {}",
                    if closed {
                        "is treated as refused"
                    } else {
                        "passes"
                    }
                );
                match closed {
                    true => Verdict::UnansweredClosed,
                    false => Verdict::UnansweredOpen,
                }
            }
        }
    }
}
