//! What the served requests' spans and log lines share with the rest:
//! the log target `log.requests` switches, and trace ids. The steps that
//! write them live beside the stack (`http/observe.rs`, `http/watched.rs`,
//! `http/refusals.rs`); the engine mints a trace id too, so it lives here,
//! below both.

/// The target of served requests' spans and lines, so `log.requests` can
/// switch them off for the log without touching OTLP export.
pub const REQUEST_TARGET: &str = "teamgate::request";

/// A random W3C trace id (32 lowercase hex digits).
pub fn new_trace_id() -> String {
    let mut text = [0u8; 32];
    hex::encode_to_slice(rand::random::<[u8; 16]>(), &mut text).expect("32 hex digits");
    String::from_utf8_lossy(&text).into_owned()
}
