//! The transport knows HTTP and JSON-RPC framing, never MCP's methods:
//! no file under `src/http/` names one (ARCHITECTURE's rule for `http`).
//! What a method means is the engine's (`src/mcp/`).

use super::{code_only, rust_files};
use crate::helpers::repo_path;

/// The first path segments of MCP's method names, and the two names
/// without one.
const NAMESPACES: &[&str] = &[
    "tools",
    "resources",
    "prompts",
    "completion",
    "logging",
    "subscriptions",
    "notifications",
    "tasks",
    "sampling",
    "elicitation",
    "roots",
    "server",
];
const BARE: &[&str] = &["initialize", "ping"];

/// The MCP method names among `text`'s string literals.
fn methods_named(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, literal) in text.split('"').enumerate() {
        // Odd pieces are inside quotes (escaped quotes do not occur in
        // method names, and a stray one only shifts to pieces that are no
        // method either).
        if i % 2 == 0 {
            continue;
        }
        let first = literal.split('/').next().unwrap_or_default();
        let method_shaped = literal.contains('/')
            && literal
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '/' || c == '_');
        if (method_shaped && NAMESPACES.contains(&first)) || BARE.contains(&literal) {
            found.push(literal.to_owned());
        }
    }
    found
}

#[test]
fn no_file_under_http_names_an_mcp_method() {
    let mut files = Vec::new();
    rust_files(&repo_path("src/http"), &mut files);
    assert!(files.len() > 5, "src/http/ was not found");
    let offences: Vec<String> = files
        .iter()
        .flat_map(|file| {
            let text = code_only(&std::fs::read_to_string(file).unwrap());
            methods_named(&text)
                .into_iter()
                .map(move |method| format!("{} names \"{method}\"", file.display()))
        })
        .collect();
    assert!(
        offences.is_empty(),
        "the engine (src/mcp/) decides what methods mean:\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_method_scanner_finds_methods_and_only_methods() {
    let text = r#"if m == "subscriptions/listen" || m == "ping" { route("/portal/x", "text/plain", "a/b") }"#;
    assert_eq!(methods_named(text), ["subscriptions/listen", "ping"]);
}
