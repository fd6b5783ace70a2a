//! Removes configured secret values from anything leaving the server.
//!
//! Every tool result passes through [`Scrubber::result`] in the registry, so a
//! provider that echoes an upstream error or a process's environment cannot
//! leak a token even when it forgets to scrub on its own.

use std::sync::Arc;

use memchr::memmem;
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
    /// The secrets' searchers, in the same order, built once (building one
    /// costs more than a search through a result).
    finders: Arc<[memmem::Finder<'static>]>,
    /// Whether some secret's JSON form differs from its text (it holds a
    /// quote, a backslash or a control character), so searching serialized
    /// JSON could miss it.
    escaped: bool,
}

impl Scrubber {
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .collect();
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        let escaped = secrets
            .iter()
            .any(|s| s.chars().any(|c| c == '"' || c == '\\' || c < ' '));
        let finders = secrets
            .iter()
            .map(|s| memmem::Finder::new(s.as_bytes()).into_owned())
            .collect();
        Self {
            secrets: secrets.into(),
            finders,
            escaped,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// Whether any secret occurs in `bytes`.
    fn holds_secret(&self, bytes: &[u8]) -> bool {
        self.finders.iter().any(|f| f.find(bytes).is_some())
    }

    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (secret, finder) in self.secrets.iter().zip(self.finders.iter()) {
            if finder.find(out.as_bytes()).is_some() {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    pub fn value(&self, value: &mut Value) {
        match value {
            Value::String(s) if self.holds_secret(s.as_bytes()) => {
                *s = self.text(s);
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.value(v)),
            _ => {}
        }
    }

    /// Scrubs any MCP value through its wire form. Most results hold no
    /// secret, so their JSON text is searched first and the value is rebuilt
    /// only when a secret may be in it: a string holding a secret whose JSON
    /// form is its text shows it verbatim there. Rebuilding every result cost
    /// 3,400 instructions a call in the benchmark (BENCHMARKS.md).
    fn wire<T: Serialize + DeserializeOwned>(&self, item: T) -> T {
        if !self.escaped {
            let Ok(text) = serde_json::to_vec(&item) else {
                return item;
            };
            if !self.holds_secret(&text) {
                return item;
            }
        }
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

    fn result(texts: &[&str], structured: Value) -> CallToolResponse {
        let content = texts
            .iter()
            .map(|t| crate::mcp::ContentBlock::text(*t))
            .collect();
        let mut result = crate::mcp::CallToolResult::success(content);
        result.structured_content = Some(structured);
        result.into()
    }

    fn wire_text(response: &CallToolResponse) -> String {
        match response {
            CallToolResponse::Complete(result) => serde_json::to_string(result).unwrap(),
            _ => panic!("a complete result"),
        }
    }

    #[test]
    fn results_are_scrubbed_whether_or_not_a_secret_needs_escaping() {
        for secret in [
            "s3cr3t-token",
            "quo\"te-secret",
            "back\\slash-secret",
            "tab\tsecret",
        ] {
            let scrub = Scrubber::new([secret.to_owned()]);
            let clean = result(&["nothing here"], serde_json::json!({"k": "v"}));
            let before = wire_text(&clean);
            assert_eq!(wire_text(&scrub.result(clean)), before, "{secret:?}");
            let leaky = result(
                &["ok", &format!("env: {secret}!")],
                serde_json::json!({"deep": [{"key": format!("={secret}")}]}),
            );
            let after = serde_json::from_str::<Value>(&wire_text(&scrub.result(leaky))).unwrap();
            assert_eq!(
                after["content"][1]["text"], "env: [redacted]!",
                "{secret:?}"
            );
            assert_eq!(after["structuredContent"]["deep"][0]["key"], "=[redacted]");
            assert!(!after.to_string().contains(secret), "{secret:?}");
        }
    }

    #[test]
    fn text_that_only_looks_like_a_secret_in_json_is_left_alone() {
        // "1234" appears in the JSON text (a number), in no string: the full
        // path runs and changes nothing.
        let scrub = Scrubber::new(["1234".to_owned()]);
        let response = result(&["fine"], serde_json::json!({"n": 123456}));
        let before = wire_text(&response);
        assert_eq!(wire_text(&scrub.result(response)), before);
    }
}
