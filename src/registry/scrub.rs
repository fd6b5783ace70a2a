//! Removes configured secret values from anything leaving the server.
//!
//! Every tool result passes through [`Scrubber::result`] in the registry, so a
//! provider that echoes an upstream error or a process's environment cannot
//! leak a token even when it forgets to scrub on its own.

use std::sync::Arc;

use memchr::memmem;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::protocol::{CallToolResponse, McpError};

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

    /// These secrets and `more` (a member's own values, known per call).
    pub fn with(&self, more: impl IntoIterator<Item = String>) -> Self {
        Self::new(self.secrets.iter().cloned().chain(more))
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

    /// `bytes` with every secret replaced; they need not be UTF-8.
    fn bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        for finder in self.finders.iter() {
            if finder.find(&out).is_none() {
                continue;
            }
            let mut replaced = Vec::with_capacity(out.len());
            let mut last = 0;
            for at in finder.find_iter(&out) {
                replaced.extend_from_slice(&out[last..at]);
                replaced.extend_from_slice(REDACTED.as_bytes());
                last = at + finder.needle().len();
            }
            replaced.extend_from_slice(&out[last..]);
            out = replaced;
        }
        out
    }

    /// Scrubs a stream that arrives in pieces (a process's output): see
    /// [`StreamScrub`].
    pub fn stream(&self) -> StreamScrub {
        StreamScrub {
            scrubber: self.clone(),
            pending: Vec::new(),
        }
    }

    /// Where `buffer` may be cut so that no secret is split: before a tail
    /// that could be the start of a secret, and never inside a whole one.
    fn safe_cut(&self, buffer: &[u8]) -> usize {
        let longest = self.secrets.first().map_or(0, String::len);
        let mut cut = (buffer.len().saturating_sub(longest.saturating_sub(1))..buffer.len())
            .find(|&start| {
                self.secrets
                    .iter()
                    .any(|s| s.as_bytes().starts_with(&buffer[start..]))
            })
            .unwrap_or(buffer.len());
        // Any occurrence found within a secret's length either side of the
        // cut spans it: move the cut to its start, until none does.
        loop {
            let mut moved = false;
            for finder in self.finders.iter() {
                let len = finder.needle().len();
                let from = cut.saturating_sub(len - 1);
                let to = (cut + len - 1).min(buffer.len());
                if let Some(at) = finder.find(&buffer[from..to]) {
                    cut = from + at;
                    moved = true;
                }
            }
            if !moved {
                return cut;
            }
        }
    }

    pub fn value(&self, value: &mut Value) {
        match value {
            Value::String(s) if self.holds_secret(s.as_bytes()) => {
                *s = self.text(s);
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => {
                // Keys leave the server too (`{"<token>": ...}`).
                if map.keys().any(|k| self.holds_secret(k.as_bytes())) {
                    *map = std::mem::take(map)
                        .into_iter()
                        .map(|(k, v)| (self.text(&k), v))
                        .collect();
                }
                map.values_mut().for_each(|v| self.value(v));
            }
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

    /// Scrubs any MCP value (an upstream's prompt or resource contents).
    pub fn scrub<T: Serialize + DeserializeOwned>(&self, item: T) -> T {
        if self.is_empty() {
            return item;
        }
        self.wire(item)
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

/// Scrubs output that arrives in pieces. What [`StreamScrub::push`] gives
/// back holds no secret and never ends inside one: a tail that could be
/// the start of a secret is held until the next piece or [`StreamScrub::finish`],
/// so cutting the output anywhere afterwards (progress lines, a head and
/// tail cap) cannot split a secret into halves that no longer match.
pub struct StreamScrub {
    scrubber: Scrubber,
    pending: Vec<u8>,
}

impl StreamScrub {
    pub fn push(&mut self, bytes: &[u8]) -> Vec<u8> {
        if self.scrubber.is_empty() {
            return bytes.to_vec();
        }
        self.pending.extend_from_slice(bytes);
        let held = self
            .pending
            .split_off(self.scrubber.safe_cut(&self.pending));
        let ready = std::mem::replace(&mut self.pending, held);
        self.scrubber.bytes(&ready)
    }

    /// The rest, at the end of the stream.
    pub fn finish(&mut self) -> Vec<u8> {
        self.scrubber.bytes(&std::mem::take(&mut self.pending))
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
            .map(|t| crate::protocol::ContentBlock::text(*t))
            .collect();
        let mut result = crate::protocol::CallToolResult::success(content);
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
    fn streams_never_pass_on_part_of_a_secret() {
        let secret = "s3cr3t-token-0123";
        let scrub = Scrubber::new([secret.to_owned(), "s3cr3t".to_owned()]);
        let input = format!("a {secret} b s3cr3t c {secret}{secret} s3cr3");
        // Every way of cutting the input into two pieces.
        for cut in 0..=input.len() {
            let mut stream = scrub.stream();
            let first = stream.push(&input.as_bytes()[..cut]);
            let second = stream.push(&input.as_bytes()[cut..]);
            let rest = stream.finish();
            for piece in [&first, &second, &rest] {
                let piece = String::from_utf8_lossy(piece);
                assert!(!piece.contains("s3cr3t"), "{cut}: {piece}");
            }
            let whole = String::from_utf8([first, second, rest].concat()).unwrap();
            assert_eq!(whole, scrub.text(&input), "{cut}");
        }
        let mut value = serde_json::json!({"k-s3cr3t": {"s3cr3t-token-0123": 1}});
        scrub.value(&mut value);
        assert_eq!(
            value,
            serde_json::json!({"k-[redacted]": {"[redacted]": 1}})
        );
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
