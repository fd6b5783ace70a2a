//! Persistence: where sessions and resumable stream events live.
//! For now the in-memory event store; the SQL backends plug in here.

mod memory;

pub use memory::{MemoryEventStore, Retention};
