//! The guard's checks of a POSTed body before the engine (`http/guard.rs`):
//! never a panic; the nesting depth it measures is the JSON's; what it lets
//! through is one JSON-RPC object whose id and method are the envelope's;
//! what it refuses is answered in the JSON-RPC shape, with the request's id
//! whenever the body is an object carrying one.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[derive(Arbitrary, Debug)]
enum ContentType {
    Json,
    JsonWithCharset,
    Text,
    Missing,
    Other(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Input {
    content_type: ContentType,
    max_depth: u8,
    body: Vec<u8>,
}

/// Nesting of arrays and objects, from the parsed tree.
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn is_json(content_type: Option<&[u8]>) -> bool {
    content_type
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

fuzz_target!(|input: Input| {
    let content_type: Option<&[u8]> = match &input.content_type {
        ContentType::Json => Some(b"application/json"),
        ContentType::JsonWithCharset => Some(b"application/json; charset=utf-8"),
        ContentType::Text => Some(b"text/plain"),
        ContentType::Missing => None,
        ContentType::Other(bytes) => Some(bytes),
    };
    // serde_json stops at 128 levels; stay below so the tree is the reference.
    let max_depth = usize::from(input.max_depth % 100) + 1;
    let body = &input.body;
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    if let Some(value) = &parsed {
        assert_eq!(teamgate::fuzzing::json_depth(body), depth(value), "depth");
    }
    let header_ok = content_type.is_some_and(|v| http::HeaderValue::from_bytes(v).is_ok());
    match teamgate::fuzzing::inspect(body, content_type, max_depth) {
        Ok(envelope) => {
            let Some(value) = parsed else {
                // JSON whose numbers a `Value` cannot hold (RFC 8259 sets no
                // range): the grammar is the guard's, the range the engine's.
                let grammar = serde_json::from_slice::<serde::de::IgnoredAny>(body);
                assert!(grammar.is_ok(), "let through, so it is JSON");
                return;
            };
            let object = value.as_object().expect("let through, so an object");
            assert!(depth(&value) <= max_depth, "deeper than allowed");
            assert!(header_ok && is_json(content_type), "not declared as JSON");
            let id = object.get("id").filter(|id| !id.is_null());
            assert_eq!(envelope.id.as_ref(), id, "id");
            let method = object.get("method").and_then(Value::as_str);
            assert_eq!(envelope.method.as_deref(), method, "method");
        }
        Err((status, reply)) => {
            assert!(matches!(status, 400 | 415), "status {status}");
            assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
            assert!(reply["error"]["code"].is_i64(), "{reply}");
            assert!(reply["error"]["message"].is_string(), "{reply}");
            let sent = parsed
                .as_ref()
                .and_then(|v| v.get("id"))
                .filter(|id| id.is_string() || id.is_number());
            match reply.get("id") {
                Some(id) => assert_eq!(Some(id), sent, "an id the request did not send"),
                // Deeper than allowed is refused before the body is parsed.
                None if depth_refused(&reply) => {}
                None => assert!(
                    !STRICT_ID || sent.is_none(),
                    "the refusal lost the id {sent:?}: {reply}"
                ),
            }
        }
    }
});

/// Every refusal of an object carrying an id carries it (issue 30, 14).
const STRICT_ID: bool = true;

fn depth_refused(reply: &Value) -> bool {
    reply["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("nesting deeper"))
}
