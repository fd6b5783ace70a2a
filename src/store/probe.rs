//! Whether the database answers, as `/readyz` and the session caps ask it:
//! one probe (`Store::ping`) at most per `PROBE_TTL`, by one caller while the
//! others take the last answer.
//!
//! The session caps trust their counts for up to 30 s (`mcp/tally.rs`), so
//! with the database stopped a new `initialize` would be admitted and its
//! session kept on this replica only; asking this first gives it the clear
//! 503 the counts' read used to give. Probes arrive every few seconds from
//! several places, and `initialize` thousands of times a second: the
//! database sees one `select 1` a second.

use std::{
    sync::{
        Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use super::Store;

/// How long an answer is reused.
const PROBE_TTL: Duration = Duration::from_secs(1);

/// The last answer and whether a caller is probing now.
#[derive(Default)]
pub(super) struct Probe {
    last: Mutex<Option<(Instant, bool)>>,
    probing: AtomicBool,
}

/// Lets the next caller probe again, even when this one's future is dropped
/// mid-probe.
struct Probing<'a>(&'a AtomicBool);

impl Drop for Probing<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Probe {
    fn last(&self) -> Option<(Instant, bool)> {
        *self.last.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Store {
    /// Whether the database answered its last probe, probing it again once
    /// the answer is `PROBE_TTL` old. While one caller probes, the others
    /// take the last answer (true before the first).
    pub async fn reachable(&self) -> bool {
        let probe = &self.probe;
        let last = probe.last();
        if let Some((at, ok)) = last
            && at.elapsed() < PROBE_TTL
        {
            return ok;
        }
        let was_ok = last.is_none_or(|(_, ok)| ok);
        if probe.probing.swap(true, Ordering::AcqRel) {
            return was_ok;
        }
        let _probing = Probing(&probe.probing);
        let ok = self.ping().await;
        *probe.last.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), ok));
        // Once per change, by the one caller probing: what the operator acts on.
        match (was_ok, ok) {
            (true, false) => tracing::error!(
                backend = ?self.backend(),
                "the database does not answer: /readyz reports 503 and new sessions are refused"
            ),
            (false, true) => {
                tracing::info!(backend = ?self.backend(), "the database answers again")
            }
            _ => {}
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::store::{Store, SystemClock};

    #[tokio::test]
    async fn a_closed_database_is_unreachable_and_the_answer_is_reused() {
        let (_dir, store) = Store::scratch(Arc::new(SystemClock)).await;
        assert!(store.reachable().await);
        // Within the second the answer is reused, even though the pool has
        // closed meanwhile; after it the database is asked again.
        store.pool.close().await;
        assert!(store.reachable().await, "reused within PROBE_TTL");
        tokio::time::sleep(super::PROBE_TTL).await;
        assert!(!store.reachable().await);
    }
}
