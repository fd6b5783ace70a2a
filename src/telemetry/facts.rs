//! What the span, the log line and the metrics say about one MCP request:
//! its method, target, caller, session and protocol era. Read by `observe`
//! when the request starts and by `watched` when its reply ends.

use axum::http::Method;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::{
    protocol::{Envelope, ProtocolEra, clip, header_text, names},
    registry::Caller,
};

/// The request as the span and the metrics describe it.
pub(super) struct Facts {
    pub(super) method: String,
    pub(super) target: String,
    pub(super) user: String,
    pub(super) session: String,
    pub(super) version: String,
    pub(super) era: &'static str,
    pub(super) client: String,
    pub(super) traceparent: Option<String>,
    pub(super) post: bool,
}

pub(super) fn era(version: &str) -> &'static str {
    ProtocolEra::label(ProtocolEra::of(version))
}

/// The `_meta` keys the span and the metrics read. Each is read on its own,
/// so an odd value in one hides none of the others; the guard checked that
/// `_meta` is JSON, and rmcp, not this, decides whether it is valid.
#[derive(Deserialize, Default)]
struct MetaKeys<'a> {
    #[serde(borrow, rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<&'a RawValue>,
    #[serde(borrow, rename = "io.modelcontextprotocol/clientInfo")]
    client_info: Option<&'a RawValue>,
    #[serde(borrow)]
    traceparent: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Named {
    name: Option<String>,
}

/// A JSON string's text; `None` for anything else.
fn string(raw: Option<&RawValue>) -> Option<String> {
    raw.and_then(|raw| serde_json::from_str(raw.get()).ok())
}

impl Facts {
    pub(super) fn of(parts: &http::request::Parts, message: &Envelope) -> Self {
        let params = message.params.as_ref();
        let meta: MetaKeys = params
            .and_then(|p| p.meta.as_ref())
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default();
        let client_info = params
            .and_then(|p| p.client_info.as_deref())
            .or(meta.client_info);
        let mut version = header_text(&parts.headers, names::MCP_PROTOCOL_VERSION);
        if let Some(mut v) = string(meta.protocol_version)
            .or_else(|| params.and_then(|p| p.protocol_version.clone()))
        {
            v.truncate(clip(&v, 32).len());
            version = v;
        }
        let method = match (&parts.method, &message.method) {
            (&Method::POST, Some(method)) => clip(method, 64).to_owned(),
            (&Method::POST, None) => "response".to_owned(),
            (method, _) => method.as_str().to_owned(),
        };
        let client = client_info
            .and_then(|raw| serde_json::from_str::<Named>(raw.get()).ok())
            .and_then(|named| named.name)
            .unwrap_or_default();
        let traceparent = string(meta.traceparent).or_else(|| {
            Some(header_text(&parts.headers, names::TRACEPARENT)).filter(|t| !t.is_empty())
        });
        Self {
            method,
            target: clip(
                params
                    .and_then(|p| p.name.as_deref().or(p.uri.as_deref()))
                    .unwrap_or_default(),
                200,
            )
            .to_owned(),
            user: parts
                .extensions
                .get::<Caller>()
                .map(|c| c.user.clone())
                .unwrap_or_default(),
            session: header_text(&parts.headers, names::MCP_SESSION_ID),
            // As the guard decided it for the request, where it did.
            era: match parts.extensions.get::<ProtocolEra>() {
                Some(decided) => ProtocolEra::label(Some(*decided)),
                None => era(&version),
            },
            version,
            client: clip(&client, 64).to_owned(),
            traceparent,
            post: parts.method == Method::POST,
        }
    }
}

/// The target of served requests' spans and lines, so `log.requests` can
/// switch them off for the log without touching OTLP export.
pub(crate) const REQUEST_TARGET: &str = "teamgate::request";
