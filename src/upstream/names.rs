//! An upstream's tool names, checked as they are listed: a name outside
//! `[A-Za-z0-9_.-]{1,128}` (markup, 3,000 characters, spaces, non-ASCII)
//! is dropped, so it never reaches a client's screen or model, and so is a
//! name the server lists more than once (regardless of case), every copy of it (which of the
//! definitions a call would reach is the server's choice, not the one
//! pinned or shown). Each drop is a warning naming the upstream and the
//! name, cut short and escaped.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
};

use rmcp::model::Tool;

use super::Pins;

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

/// The tools of one upstream teamgate does not offer: those dropped from
/// its last list (`checked`) and those the last registry build left out,
/// their exposed name taken by a tool registered before them. Each change
/// is recorded in the store (`Pins::dropped`) for `teamgate upstreams list`.
#[derive(Default)]
pub(super) struct Tally {
    listed: Mutex<Vec<Dropped>>,
    clashed: Mutex<Vec<Dropped>>,
    /// What the store was last told; `None` before the first report.
    reported: Mutex<Option<Vec<Dropped>>>,
    store: OnceLock<(String, Arc<dyn Pins>)>,
}

impl Tally {
    /// Records changes of `upstream`'s drops in `pins` from now on.
    pub(super) fn report_to(&self, upstream: &str, pins: Option<Arc<dyn Pins>>) {
        if let Some(pins) = pins {
            let _ = self.store.set((upstream.to_owned(), pins));
        }
    }

    /// What `checked` dropped from the upstream's latest list.
    pub(super) fn listed(&self, dropped: Vec<Dropped>) {
        *self.listed.lock().expect("dropped lock") = dropped;
        self.report();
    }

    /// The exposed names the latest registry build left out; each newly
    /// left out is logged.
    pub(super) fn clashed(&self, upstream: &str, names: Vec<String>) {
        let dropped: Vec<Dropped> = (names.into_iter())
            .map(|name| Dropped::new(name, Why::Clash))
            .collect();
        {
            let mut clashed = self.clashed.lock().expect("dropped lock");
            if *clashed == dropped {
                return;
            }
            for new in dropped.iter().filter(|d| !clashed.contains(d)) {
                tracing::warn!(%upstream, tool = %new.tool, "an upstream tool's name is another tool's, listed before it (a built-in, a declared tool or an upstream configured earlier); dropped");
            }
            *clashed = dropped;
        }
        self.report();
    }

    /// Every tool dropped now.
    pub(super) fn all(&self) -> Vec<Dropped> {
        let mut all = self.listed.lock().expect("dropped lock").clone();
        all.extend(self.clashed.lock().expect("dropped lock").iter().cloned());
        all
    }

    fn report(&self) {
        let all = self.all();
        {
            let mut reported = self.reported.lock().expect("dropped lock");
            if reported.as_ref() == Some(&all) {
                return;
            }
            *reported = Some(all.clone());
        }
        let Some((upstream, pins)) = self.store.get().cloned() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            if let Err(error) = pins.dropped(&upstream, &all).await {
                tracing::warn!(%upstream, error = %format!("{error:#}"), "the upstream's dropped tools were not recorded");
            }
        });
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
