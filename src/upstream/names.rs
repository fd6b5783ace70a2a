//! An upstream's tool names, checked as they are listed: a name outside
//! `[A-Za-z0-9_.-]{1,128}` (markup, 3,000 characters, spaces, non-ASCII)
//! is dropped, so it never reaches a client's screen or model, and so is a
//! name the server lists more than once (regardless of case), every copy of it (which of the
//! definitions a call would reach is the server's choice, not the one
//! pinned or shown). Each drop is a warning naming the upstream and the
//! name, cut short and escaped.

use std::collections::HashMap;

use rmcp::model::Tool;

/// The longest tool name an upstream may list.
const MAX_NAME: usize = 128;

/// How much of a dropped name a log line shows.
const SHOWN: usize = 64;

/// Whether `name` is a tool name an upstream may list.
pub(super) fn valid(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len())
        && (name.bytes()).all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// `name` as a log line shows it: its first characters, escaped (anything
/// but printable ASCII as `\u{..}`), with "…" when cut.
pub(super) fn shown(name: &str) -> String {
    let mut shown: String = (name.chars().take(SHOWN))
        .flat_map(char::escape_default)
        .collect();
    if name.chars().nth(SHOWN).is_some() {
        shown.push('…');
    }
    shown
}

/// What the upstream `upstream` listed, minus the names it may not list
/// and every copy of a name listed twice; each dropped name is logged, and
/// returned (shown as `shown` does) with why.
pub(super) fn checked(upstream: &str, mut tools: Vec<Tool>) -> (Vec<Tool>, Vec<Dropped>) {
    let mut dropped = Vec::new();
    tools.retain(|tool| {
        let ok = valid(&tool.name);
        if !ok {
            let name = shown(&tool.name);
            tracing::warn!(%upstream, tool = %name, "the upstream listed a tool name outside [A-Za-z0-9_.-]{{1,128}}; dropped");
            dropped.push(Dropped::new(name, Why::Invalid));
        }
        ok
    });
    // `Foo` and `foo` are one name to a member reading the list.
    let mut copies: HashMap<String, usize> = HashMap::new();
    for tool in &tools {
        *copies.entry(tool.name.to_lowercase()).or_default() += 1;
    }
    let mut twice: Vec<(String, usize)> = Vec::new();
    tools.retain(|tool| {
        let n = copies[&tool.name.to_lowercase()];
        if n > 1 && !twice.iter().any(|(t, _)| t == tool.name.as_ref()) {
            twice.push((tool.name.to_string(), n));
        }
        n == 1
    });
    twice.sort();
    for (name, copies) in twice {
        tracing::warn!(%upstream, tool = %name, copies, "the upstream listed a tool name more than once; every copy dropped");
        dropped.push(Dropped::new(name, Why::Twice));
    }
    (tools, dropped)
}

/// A tool teamgate does not offer, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The name, as `shown` shows it for an invalid one.
    pub tool: String,
    pub why: Why,
}

impl Dropped {
    pub(super) fn new(tool: String, why: Why) -> Self {
        Self { tool, why }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// Outside `[A-Za-z0-9_.-]{1,128}`.
    Invalid,
    /// Listed more than once by the upstream.
    Twice,
    /// Its exposed name is another tool's (a built-in, a declared tool or
    /// an upstream configured earlier, which keeps it).
    Clash,
}

impl Why {
    pub fn label(self) -> &'static str {
        match self {
            Self::Invalid => "invalid name",
            Self::Twice => "listed twice",
            Self::Clash => "name taken",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_and_shown_escaped_and_cut() {
        assert!(valid("a.b-c_D9") && valid(&"x".repeat(128)));
        for bad in ["", "a b", "<b>", "naïve", "a/b", "a\n", &"x".repeat(129)] {
            assert!(!valid(bad), "{bad:?}");
        }
        assert_eq!(shown("na\u{ef}ve\n"), "na\\u{ef}ve\\n");
        assert_eq!(shown(&"a".repeat(65)), format!("{}…", "a".repeat(64)));
        assert_eq!(shown(&"a".repeat(64)), "a".repeat(64));
    }
}
