//! What this replica remembers of the sessions it serves, read on every
//! request of a 2025-era session: the owner (which never changes), the
//! expiry the session's row had when last read, and when that expiry was last
//! pushed out.
//!
//! One `moka` cache of each session's facts, one lookup per question; the
//! facts are atomics, so a question never takes a lock of its own.

use std::{
    sync::{
        Arc,
        atomic::{AtomicI64, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use moka::sync::Cache;

/// Sessions remembered at most, and how long one unread is kept (a session
/// forgotten is read from the store again when next used).
const CAPACITY: usize = 100_000;
const IDLE: Duration = Duration::from_secs(600);

/// The expiry of a session whose row could not be read: keep serving it.
pub(super) const UNKNOWN: i64 = i64::MAX;
/// The expiry of a session whose row is gone (ended, expired, purged).
pub(super) const GONE: i64 = i64::MIN;

pub(super) struct Known {
    map: Cache<String, Arc<Facts>>,
    /// How long a read expiry is trusted before the store is asked again.
    presence_ttl: Duration,
    /// Minimum time between two expiry refreshes of one session.
    touch_every: Duration,
    /// The origin of the stamps below (milliseconds after it, plus one, so
    /// that 0 means "never").
    epoch: Instant,
}

struct Facts {
    owner: Arc<str>,
    expires_ms: AtomicI64,
    /// When the row is to be read again; 0: at the next question.
    due: AtomicU64,
    /// When this replica last refreshed the row's expiry, 0 if never.
    touched: AtomicU64,
}

/// Whether a session's expiry is known well enough to answer with.
pub(super) enum Presence {
    /// The expiry read from the store not long ago (or `UNKNOWN`, `GONE`).
    Expires(i64),
    /// Not remembered, or due: the caller reads the row and calls `note`.
    Read,
}

impl Known {
    pub(super) fn new(presence_ttl: Duration, touch_every: Duration) -> Self {
        Self {
            map: Cache::builder()
                .max_capacity(CAPACITY as u64)
                .time_to_idle(IDLE)
                .build(),
            presence_ttl,
            touch_every,
            epoch: Instant::now(),
        }
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64 + 1
    }

    pub(super) fn owner(&self, id: &str) -> Option<Arc<str>> {
        self.map.get(id).map(|facts| facts.owner.clone())
    }

    /// The remembered expiry, unless it is due for a read. Of concurrent
    /// requests that find it due, one is told to read; the rest use the old
    /// value meanwhile, so one session's burst costs one query, not one each.
    pub(super) fn presence(&self, id: &str) -> Presence {
        self.presence_at(id, self.now())
    }

    fn presence_at(&self, id: &str, now: u64) -> Presence {
        let Some(facts) = self.map.get(id) else {
            return Presence::Read;
        };
        let due = facts.due.load(Ordering::Relaxed);
        let expires = facts.expires_ms.load(Ordering::Relaxed);
        if now < due {
            return Presence::Expires(expires);
        }
        let next = after(now, self.presence_ttl);
        match facts
            .due
            .compare_exchange(due, next, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => Presence::Read,
            Err(_) => Presence::Expires(expires),
        }
    }

    /// Remembers what the store says of `id`: its owner and expiry when the
    /// row exists; `owner` `None` (no row) only updates a remembered session.
    pub(super) fn note(&self, id: &str, owner: Option<&str>, expires_ms: i64) {
        self.note_at(id, owner, expires_ms, self.now());
    }

    fn note_at(&self, id: &str, owner: Option<&str>, expires_ms: i64, now: u64) {
        let due = after(now, self.presence_ttl);
        if let Some(facts) = self.map.get(id) {
            facts.expires_ms.store(expires_ms, Ordering::Relaxed);
            facts.due.store(due, Ordering::Relaxed);
            return;
        }
        let Some(owner) = owner else { return };
        let facts = Facts {
            owner: owner.into(),
            expires_ms: AtomicI64::new(expires_ms),
            due: AtomicU64::new(due),
            touched: AtomicU64::new(0),
        };
        self.map.insert(id.to_owned(), Arc::new(facts));
    }

    /// Whether this request should refresh the row's expiry: at most once per
    /// `touch_every` per session (claimed by one request), and always for a
    /// session not remembered.
    pub(super) fn claim_touch(&self, id: &str) -> bool {
        self.claim_touch_at(id, self.now())
    }

    fn claim_touch_at(&self, id: &str, now: u64) -> bool {
        let Some(facts) = self.map.get(id) else {
            return true;
        };
        let last = facts.touched.load(Ordering::Relaxed);
        if last != 0 && now < after(last, self.touch_every) {
            return false;
        }
        facts
            .touched
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// The row changed (its expiry was pushed out): read it at the next question.
    pub(super) fn reread(&self, id: &str) {
        if let Some(facts) = self.map.get(id) {
            facts.due.store(0, Ordering::Relaxed);
        }
    }

    pub(super) fn forget(&self, id: &str) {
        self.map.invalidate(id);
    }
}

/// The stamp `wait` after `from`.
fn after(from: u64, wait: Duration) -> u64 {
    from + wait.as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(5);
    const TOUCH: Duration = Duration::from_secs(30);

    #[test]
    fn a_due_expiry_is_read_by_one_request_only() {
        let known = Known::new(TTL, TOUCH);
        assert!(matches!(known.presence_at("s", 1), Presence::Read));
        known.note_at("s", Some("ann"), 42, 1);
        assert_eq!(known.owner("s").as_deref(), Some("ann"));
        assert!(matches!(
            known.presence_at("s", 5_000),
            Presence::Expires(42)
        ));
        // Due: the first asker reads, one racing it keeps the old value.
        assert!(matches!(known.presence_at("s", 5_001), Presence::Read));
        assert!(matches!(
            known.presence_at("s", 5_002),
            Presence::Expires(42)
        ));
        known.note_at("s", None, 43, 5_003);
        assert!(matches!(
            known.presence_at("s", 10_002),
            Presence::Expires(43)
        ));
        assert!(matches!(known.presence_at("s", 10_003), Presence::Read));
    }

    #[test]
    fn an_expiry_is_trusted_until_the_row_changes() {
        let known = Known::new(TTL, TOUCH);
        known.note_at("s", Some("ann"), 42, 1);
        assert!(matches!(known.presence_at("s", 2), Presence::Expires(42)));
        known.reread("s");
        assert!(matches!(known.presence_at("s", 3), Presence::Read));
        known.note_at("s", None, GONE, 4);
        assert!(matches!(known.presence_at("s", 5), Presence::Expires(GONE)));
        known.forget("s");
        assert!(known.owner("s").is_none());
        // No row and not remembered: nothing to remember.
        known.note_at("t", None, GONE, 6);
        assert!(known.owner("t").is_none());
    }

    #[test]
    fn a_session_is_touched_once_per_interval() {
        let known = Known::new(TTL, TOUCH);
        assert!(known.claim_touch_at("s", 1), "not remembered: always touch");
        known.note_at("s", Some("ann"), 42, 1);
        assert!(known.claim_touch_at("s", 2));
        assert!(!known.claim_touch_at("s", 29_000));
        assert!(known.claim_touch_at("s", 30_002));
    }

    #[test]
    fn past_capacity_sessions_are_forgotten() {
        let known = Known::new(TTL, TOUCH);
        for i in 0..CAPACITY + 1_000 {
            known.note_at(&format!("s{i}"), Some("ann"), 42, 1);
        }
        known.map.run_pending_tasks();
        assert!(known.map.entry_count() <= CAPACITY as u64);
        known.note_at("new", Some("bob"), 42, 2);
        assert_eq!(known.owner("new").as_deref(), Some("bob"));
    }
}
