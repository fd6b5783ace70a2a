//! The method names the handler tells apart from unknown ones.

/// Requests 2026-07-28 removed: a modern request naming one is a missing method (404).
pub const REMOVED_IN_2026: [&str; 5] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Client-to-server request methods of the revisions teamgate serves, and of
/// the extensions it implements (Skills, SEP-2640).
pub const STANDARD_METHODS: [&str; 17] = [
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
    "skills/list",
    "skills/get",
];
