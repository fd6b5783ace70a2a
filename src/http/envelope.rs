//! The envelope of a POSTed JSON-RPC message, as the guard reads it once:
//! what the layers around the engine describe and count a request by.
//! What a request may do is decided by the engine, on its own typed request.

use serde::Deserialize;
use serde_json::{Value, value::RawValue};

/// What the layers need of a message, parsed once here; the rest is checked
/// for syntax and skipped. The guard hands it on in the request's
/// extensions, so the telemetry layer below never parses the body again.
#[derive(Deserialize, Default, Debug)]
pub struct Envelope {
    #[serde(default)]
    pub id: Option<Value>,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub params: Option<Params>,
}

/// What the layers below describe a request by (never decide on: the engine
/// decides on its own typed request). Nested objects are kept as checked
/// JSON text, not trees.
#[derive(Deserialize, Default, Debug)]
pub struct Params {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub uri: Option<String>,
    #[serde(default, rename = "protocolVersion")]
    pub protocol_version: Option<String>,
    #[serde(default, rename = "clientInfo")]
    pub client_info: Option<Box<RawValue>>,
    #[serde(default, rename = "_meta")]
    pub meta: Option<Box<RawValue>>,
}
