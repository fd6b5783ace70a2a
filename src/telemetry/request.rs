//! What the served requests' spans and log lines share, below the steps
//! that write them (`observe.rs`, `watched.rs`, `refusals.rs`).

use crate::protocol::ProtocolEra;

/// The target of served requests' spans and lines, so `log.requests` can
/// switch them off for the log without touching OTLP export.
pub(crate) const REQUEST_TARGET: &str = "teamgate::request";

/// The era label of a protocol version, for a request the guard never saw.
pub(super) fn era(version: &str) -> &'static str {
    ProtocolEra::label(ProtocolEra::of(version))
}
