//! Issue 44, the runtime items: secrets split across a result's blocks or a
//! call's progress messages, or encoded, are scrubbed (item 7, `scrub.rs`).

pub(crate) mod scrub;
