//! Metric label values: only what teamgate knows (methods, protocol
//! revisions) or a bounded number of names (tools, clients), so no caller,
//! and no one without credentials at all, can grow the label space or crowd
//! real values out of it.

use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
};

use opentelemetry::StringValue;

/// Distinct label values kept per open-ended label (tool and client
/// names); later ones are counted as "other". Each label has its own
/// budget, so no label's values crowd out another's.
const MAX_LABEL_VALUES: usize = 200;

/// Notifications a client sends; with the request methods, every method
/// name that becomes a label as it is.
const CLIENT_NOTIFICATIONS: [&str; 4] = [
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
];

/// The method label: a method of the MCP method table, an HTTP method
/// (GET streams, DELETE), `response`, or "other". Never what a client made
/// up: anyone may send any `Mcp-Method` header before authentication.
pub(super) fn method_label(method: &str) -> &'static str {
    let known = crate::protocol::STANDARD_METHODS
        .iter()
        .chain(&CLIENT_NOTIFICATIONS)
        .chain(&["GET", "POST", "DELETE", "response"])
        .find(|m| **m == method);
    known.copied().unwrap_or("other")
}

/// The protocol version label: a revision teamgate serves, empty when none
/// was named, or "other".
pub(super) fn version_label(version: &str) -> StringValue {
    let served = crate::protocol::SUPPORTED_VERSIONS
        .iter()
        .any(|v| v.as_str() == version);
    if served || version.is_empty() {
        version.to_owned().into()
    } else {
        "other".into()
    }
}

/// The values one open-ended label has reported, at most `MAX_LABEL_VALUES`.
#[derive(Default)]
pub(super) struct Labels(Mutex<HashSet<Arc<str>>>);

impl Labels {
    /// `value`, or "other" once `MAX_LABEL_VALUES` distinct ones were seen.
    /// Values are interned: a label costs a reference count, not a copy.
    pub(super) fn bounded(&self, value: &str) -> StringValue {
        let value = crate::protocol::clip(value, 64);
        let mut seen = self.0.lock().expect("label set lock");
        if let Some(known) = seen.get(value) {
            return known.clone().into();
        }
        if seen.len() >= MAX_LABEL_VALUES {
            return "other".into();
        }
        let value: Arc<str> = value.into();
        seen.insert(value.clone());
        value.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caller_chosen_label_values_are_bounded() {
        let labels = Labels::default();
        for i in 0..MAX_LABEL_VALUES {
            assert_eq!(labels.bounded(&format!("m{i}")).as_str(), format!("m{i}"));
        }
        assert_eq!(labels.bounded("one-too-many").as_str(), "other");
        assert_eq!(
            labels.bounded("m7").as_str(),
            "m7",
            "known values keep their name"
        );
        let long = "x".repeat(500);
        assert_eq!(labels.bounded(&long).as_str(), "other");
    }

    #[test]
    fn methods_and_versions_are_labels_only_when_known() {
        assert_eq!(method_label("tools/call"), "tools/call");
        assert_eq!(method_label("GET"), "GET");
        assert_eq!(method_label("junk-1"), "other");
        assert_eq!(version_label("2025-11-25").as_str(), "2025-11-25");
        assert_eq!(version_label("1999-01-01").as_str(), "other");
    }
}
