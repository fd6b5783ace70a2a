//! Concrete capability providers, each behind the registry's traits.
//!
//! A provider never sees HTTP, sessions or JSON-RPC envelopes: it gets its
//! arguments and a `CallContext`, and returns MCP results.

pub mod builtin;
pub mod conformance;

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Builds an rmcp model value from its wire JSON. Used for fixed shapes known
/// at compile time, where a failure is a programming error caught by tests.
pub(crate) fn wire<T: DeserializeOwned>(value: Value) -> T {
    match serde_json::from_value(value) {
        Ok(v) => v,
        Err(e) => panic!("static MCP value does not match rmcp's model: {e}"),
    }
}
