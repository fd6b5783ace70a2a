//! The fixtures the official MCP conformance suite expects (tools, resources,
//! prompts, completion), with the exact names, schemas and outputs it checks.
//! Compiled only with the `conformance` cargo feature (the test and interop
//! runs), enabled only by `config/conformance.toml`; never in a deployment.

mod modern;
mod mrtr;
mod prompts;
mod resources;
mod tasks;
mod tools;

pub use modern::ConformanceModern;
pub use mrtr::ConformanceMrtr;
pub use prompts::ConformancePrompts;
pub use resources::ConformanceResources;
pub use tasks::ConformanceTasks;
pub use tools::ConformanceTools;

/// 1x1 PNG.
pub(crate) const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A bare 44-byte RIFF/WAVE header.
pub(crate) const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

use serde_json::{Value, json};

use crate::{
    protocol::{CallToolResponse, Tool},
    providers::wire,
};

/// A fixture tool's declaration.
pub(crate) fn declare(name: &str, description: &str, input_schema: Value) -> Tool {
    wire(json!({"name": name, "description": description, "inputSchema": input_schema}))
}

/// A successful result holding one text item.
pub(crate) fn text_result(message: impl Into<String>) -> CallToolResponse {
    crate::protocol::text_result(message, false).into()
}
