//! Which of an upstream's tools members confirm, and why, read from the
//! configuration and the pinned definitions: for `teamgate upstreams list`
//! and the portal's upstreams page (the running server decides the same
//! from the live list, `providers::declared::policies`).

use serde_json::Value;

use super::PinRow;
use crate::config::UpstreamConfig;

/// Why a tool is confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmedBy {
    /// `confirm = true` in `[upstreams.tools.NAME]`.
    Configured,
    /// The pinned definition's `destructiveHint: true`, not `readOnlyHint`.
    DestructiveHint,
}

impl ConfirmedBy {
    pub fn label(self) -> &'static str {
        match self {
            Self::Configured => "configured",
            Self::DestructiveHint => "destructiveHint",
        }
    }
}

/// The upstream's own names of the tools confirmed, and why: configured,
/// or annotated destructive (unless `confirm = false` or the operator's
/// `destructive = false` / `read_only = true`); only tools the globs offer.
pub fn confirmed(upstream: &UpstreamConfig, pins: &[PinRow]) -> Vec<(String, ConfirmedBy)> {
    let overrides = &upstream.tools.overrides;
    let mut out: Vec<(String, ConfirmedBy)> = (overrides.iter())
        .filter(|(tool, o)| o.confirm == Some(true) && selects(upstream, tool))
        .map(|(tool, _)| (tool.clone(), ConfirmedBy::Configured))
        .collect();
    for row in pins.iter().filter(|row| row.claim.is_none()) {
        let over = overrides.get(&row.tool);
        let definition: Value = serde_json::from_str(&row.definition).unwrap_or_default();
        let hints = &definition["annotations"];
        let destructive =
            (over.and_then(|o| o.destructive)).unwrap_or(hints["destructiveHint"] == true);
        let read_only = (over.and_then(|o| o.read_only)).unwrap_or(hints["readOnlyHint"] == true);
        let decided = over.is_some_and(|o| o.confirm.is_some());
        if destructive && !read_only && !decided && selects(upstream, &row.tool) {
            out.push((row.tool.clone(), ConfirmedBy::DestructiveHint));
        }
    }
    out
}

/// Whether `tools.include`/`exclude` offer the upstream's tool `name` (its
/// own name); a running server builds the sets once (`upstream::tools`).
pub fn selects(upstream: &UpstreamConfig, name: &str) -> bool {
    let set = |patterns: &[String]| {
        let mut set = globset::GlobSetBuilder::new();
        for pattern in patterns {
            set.add(globset::Glob::new(pattern).ok()?);
        }
        set.build().ok()
    };
    let tools = &upstream.tools;
    let (Some(include), Some(exclude)) = (set(&tools.include), set(&tools.exclude)) else {
        return false;
    };
    (tools.include.is_empty() || include.is_match(name)) && !exclude.is_match(name)
}
