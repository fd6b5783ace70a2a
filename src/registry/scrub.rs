//! Removes configured secret values from anything leaving the server.
//!
//! Every tool result passes through [`Scrubber::result`] in the registry, so a
//! provider that echoes an upstream error or a process's environment cannot
//! leak a token even when it forgets to scrub on its own.

use std::sync::Arc;

use aho_corasick::{AhoCorasick, MatchKind};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::protocol::{CallToolResponse, McpError};

mod blocks;
mod forms;
mod skeleton;

/// Shortest value treated as a secret; shorter ones would mangle ordinary text.
const MIN_SECRET_LEN: usize = 4;
pub const REDACTED: &str = "[redacted]";

/// Cheap to clone: every call context carries one.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    /// The configured values, longest first.
    secrets: Arc<[String]>,
    /// Their searchers, built once (building costs more than a search
    /// through a result); `None` without secrets.
    patterns: Option<Arc<Patterns>>,
    /// Whether some secret's JSON form differs from its text (it holds a
    /// quote, a backslash or a control character), so searching serialized
    /// JSON could miss it.
    escaped: bool,
}

/// Every form of every secret (`forms.rs`), searched for in one pass.
#[derive(Debug)]
struct Patterns {
    forms: Vec<String>,
    longest: usize,
    /// Leftmost-longest: a form containing another is replaced whole.
    replace: AhoCorasick,
    /// Every occurrence, overlapping ones too: those spanning a stream's cut.
    overlapping: AhoCorasick,
    /// The forms' skeletons (`skeleton.rs`): other case, separators, escapes.
    skeletons: Option<AhoCorasick>,
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
        let mut forms: Vec<String> = secrets.iter().flat_map(|s| forms::forms(s)).collect();
        forms.sort();
        forms.dedup();
        let build = |kind| {
            AhoCorasick::builder()
                .match_kind(kind)
                .build(&forms)
                .expect("a few thousand short patterns fit the automaton")
        };
        let mut skeletons: Vec<Vec<u8>> = (forms.iter())
            .map(|form| skeleton::skeleton(form.as_bytes(), false).0)
            .filter(|folded| folded.len() >= skeleton::MIN_LEN)
            .collect();
        skeletons.sort();
        skeletons.dedup();
        let patterns = if forms.is_empty() {
            None
        } else {
            let (replace, overlapping) = (
                build(MatchKind::LeftmostLongest),
                build(MatchKind::Standard),
            );
            Some(Arc::new(Patterns {
                longest: forms.iter().map(String::len).max().unwrap_or(0),
                replace,
                overlapping,
                forms,
                skeletons: (!skeletons.is_empty()).then(|| {
                    AhoCorasick::builder()
                        .match_kind(MatchKind::LeftmostLongest)
                        .build(&skeletons)
                        .expect("a few thousand short patterns fit the automaton")
                }),
            }))
        };
        Self {
            secrets: secrets.into(),
            patterns,
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

    /// Whether any secret occurs in `bytes`, in any of its forms.
    fn holds_secret(&self, bytes: &[u8]) -> bool {
        self.patterns.as_ref().is_some_and(|p| {
            p.replace.is_match(bytes)
                || (p.skeletons.as_ref())
                    .is_some_and(|s| s.is_match(&skeleton::skeleton(bytes, false).0))
        })
    }

    /// Where the secrets are in `bytes`: start and end of each replaced,
    /// in order, overlapping ones merged.
    pub(super) fn matches(&self, bytes: &[u8]) -> Vec<(usize, usize)> {
        let Some(p) = &self.patterns else {
            return Vec::new();
        };
        let mut found: Vec<(usize, usize)> =
            (p.replace.find_iter(bytes).map(|m| (m.start(), m.end()))).collect();
        if let Some(skeletons) = &p.skeletons
            && skeletons.is_match(&skeleton::skeleton(bytes, false).0)
        {
            // Found: the skeleton again, with where each byte came from.
            let (folded, spans) = skeleton::skeleton(bytes, true);
            found.extend(skeletons.find_iter(&folded).map(|m| {
                let (start, end) = (spans[m.start()].0, spans[m.end() - 1].1);
                (start as usize, end as usize)
            }));
            found.sort_unstable();
            found.dedup_by(|next, kept| {
                let overlaps = next.0 < kept.1;
                if overlaps {
                    kept.1 = kept.1.max(next.1);
                }
                overlaps
            });
        }
        found
    }

    pub fn text(&self, text: &str) -> String {
        self.cleaned(text).unwrap_or_else(|| text.to_owned())
    }

    /// `text` with every secret replaced, found in one search; `None` when
    /// it holds none.
    fn cleaned(&self, text: &str) -> Option<String> {
        let found = self.matches(text.as_bytes());
        (!found.is_empty()).then(|| {
            String::from_utf8_lossy(&redact(text.as_bytes(), &found, REDACTED)).into_owned()
        })
    }

    /// `bytes` with every secret replaced; they need not be UTF-8.
    fn bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let found = self.matches(bytes);
        if found.is_empty() {
            return bytes.to_vec();
        }
        redact(bytes, &found, REDACTED)
    }

    /// `texts` scrubbed as the one text they join into (a call's progress
    /// messages), each keeping its own part; `None` when they hold no secret.
    pub(super) fn pieces(&self, texts: &[&str]) -> Option<Vec<String>> {
        blocks::pieces(self, texts)
    }

    /// `before` (a call's last progress messages) and the text blocks of
    /// `content` scrubbed as one text, the blocks in place: what is clean of
    /// each `before` text, or `None` when nothing held a secret.
    pub(super) fn leading(
        &self,
        before: &[&str],
        content: &mut [crate::protocol::ContentBlock],
    ) -> Option<Vec<String>> {
        blocks::scrub_after(self, before, content)
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
    pub(super) fn safe_cut(&self, buffer: &[u8]) -> usize {
        let Some(p) = &self.patterns else {
            return buffer.len();
        };
        let mut cut = (buffer.len().saturating_sub(p.longest - 1)..buffer.len())
            .find(|&start| {
                p.forms
                    .iter()
                    .any(|f| f.as_bytes().starts_with(&buffer[start..]))
            })
            .unwrap_or(buffer.len());
        // Any occurrence found within a form's length either side of the
        // cut spans it: move the cut to its start, until none does.
        loop {
            let from = cut.saturating_sub(p.longest - 1);
            let to = (cut + p.longest - 1).min(buffer.len());
            let spanning = p
                .overlapping
                .find_overlapping_iter(&buffer[from..to])
                .map(|m| (from + m.start(), from + m.end()))
                .filter(|&(start, end)| start < cut && end > cut)
                .map(|(start, _)| start)
                .min();
            match spanning {
                Some(start) => cut = start,
                None => return cut,
            }
        }
    }

    pub fn value(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Some(clean) = self.cleaned(s) {
                    *s = clean;
                }
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
    fn wire<T: Serialize + DeserializeOwned>(&self, item: T, joined: bool) -> T {
        if !self.escaped && !joined {
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
        if joined {
            blocks::scrub_joined(self, &mut value);
        }
        self.value(&mut value);
        serde_json::from_value(value).unwrap_or(item)
    }

    /// Scrubs any MCP value (an upstream's prompt or resource contents).
    pub fn scrub<T: Serialize + DeserializeOwned>(&self, item: T) -> T {
        if self.is_empty() {
            return item;
        }
        self.wire(item, false)
    }

    pub fn result(&self, response: CallToolResponse) -> CallToolResponse {
        if self.is_empty() {
            return response;
        }
        match response {
            CallToolResponse::Complete(result) => {
                // A secret cut across adjacent text blocks is found only
                // in their joined text.
                let joined = blocks::any_joined(self, &result.content);
                self.wire(result, joined).into()
            }
            CallToolResponse::InputRequired(result) => {
                CallToolResponse::InputRequired(self.wire(result, false))
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

/// `bytes` with each of the ordered, disjoint ranges `found` replaced by
/// `mark` (the scrubber's `REDACTED`, a guardrail's `[redacted:<detector>]`).
pub(super) fn redact(bytes: &[u8], found: &[(usize, usize)], mark: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for &(start, end) in found {
        out.extend_from_slice(&bytes[at..start]);
        out.extend_from_slice(mark.as_bytes());
        at = end;
    }
    out.extend_from_slice(&bytes[at..]);
    out
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
mod tests;
