//! Removes configured secret values from anything leaving the server.
//!
//! Every tool result passes through [`Scrubber::result`] in the registry, so a
//! provider that echoes an upstream error or a process's environment cannot
//! leak a token even when it forgets to scrub on its own.

use std::sync::Arc;

use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::mcp::{CallToolResponse, McpError};

/// Shortest value treated as a secret; shorter ones would mangle ordinary text.
const MIN_SECRET_LEN: usize = 4;
pub const REDACTED: &str = "[redacted]";

/// Cheap to clone: every call context carries one.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    /// Longest first, so a secret containing another is replaced whole.
    secrets: Arc<[String]>,
}

impl Scrubber {
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .collect();
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self {
            secrets: secrets.into(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in self.secrets.iter() {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    pub fn value(&self, value: &mut Value) {
        match value {
            Value::String(s) if self.secrets.iter().any(|x| s.contains(x.as_str())) => {
                *s = self.text(s);
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.value(v)),
            _ => {}
        }
    }

    /// Scrubs any MCP value through its wire form.
    fn wire<T: Serialize + DeserializeOwned>(&self, item: T) -> T {
        let Ok(mut value) = serde_json::to_value(&item) else {
            return item;
        };
        self.value(&mut value);
        serde_json::from_value(value).unwrap_or(item)
    }

    pub fn result(&self, response: CallToolResponse) -> CallToolResponse {
        if self.is_empty() {
            return response;
        }
        match response {
            CallToolResponse::Complete(result) => self.wire(result).into(),
            CallToolResponse::InputRequired(result) => {
                CallToolResponse::InputRequired(self.wire(result))
            }
            other => other,
        }
    }

    pub fn error(&self, mut error: McpError) -> McpError {
        if self.is_empty() {
            return error;
        }
        error.message = self.text(&error.message).into();
        if let Some(data) = error.data.as_mut() {
            self.value(data);
        }
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_every_secret_everywhere() {
        let scrub = Scrubber::new(["s3cr3t-token".to_owned(), "abc".to_owned()]);
        assert_eq!(scrub.text("Bearer s3cr3t-token!"), "Bearer [redacted]!");
        assert_eq!(scrub.text("abc stays: too short"), "abc stays: too short");
        let mut value = serde_json::json!({"a": ["x s3cr3t-token y"], "b": 1});
        scrub.value(&mut value);
        assert_eq!(value["a"][0], "x [redacted] y");
    }
}
