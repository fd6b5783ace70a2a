//! Live-session counts for the session caps (`admission.rs`), read from the
//! store now and then (once for everyone, once per owner), with this
//! replica's own openings added since.
//!
//! Counting rows on every `initialize` made each one scan the live sessions
//! of the whole table: the cost grew with the number of sessions, and it was
//! most of an `initialize`. The caps protect the server from a flood, so a
//! count a moment old is precise enough: within it, this replica counts
//! exactly what it admits, and only other replicas' openings (and ends) are
//! missed. How old: `NEAR` while a count is within half of its cap, where a
//! decision may turn on it; `FAR` below that, where the scans bought nothing
//! (other replicas would have to open half a cap in `FAR` to pass it
//! unseen) and still grew with the table: an `initialize` load of one owner
//! sank from 6,700 to 5,200 per second over 25 s (BENCHMARKS.md, fifth
//! session). One request reads a stale count again while the others go on
//! with it, so a count's expiry is one scan, not one per waiting request.
//! A count is shared and counted up in place (atomics), so openings admitted
//! together are all counted and an opening costs no cache insert.

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicI64, Ordering},
};

use moka::sync::Cache;

use crate::store::{SessionRepo, StoreError};

/// How long a count within half of its cap is trusted, in ms.
const NEAR_MS: i64 = 1_000;
/// How long a count below half of its cap is trusted, in ms.
const FAR_MS: i64 = 30_000;
/// How long one request's re-read keeps the others from starting theirs,
/// in ms (a request dropped while reading leaves its claim behind).
const CLAIM_MS: i64 = 5_000;
/// Owners whose counts are kept at once; more are read again.
const OWNERS: u64 = 10_000;
/// `claimed_ms` when no request is reading the count again.
const UNCLAIMED: i64 = i64::MIN;

/// A count as read from the store at `read_ms` plus this replica's openings
/// since (which do not make it fresher), and since when a request has been
/// reading it again. A new read replaces it.
struct Count {
    sessions: AtomicI64,
    read_ms: i64,
    claimed_ms: AtomicI64,
}

impl Count {
    fn read(sessions: i64, now_ms: i64) -> Arc<Self> {
        Arc::new(Self {
            sessions: AtomicI64::new(sessions),
            read_ms: now_ms,
            claimed_ms: AtomicI64::new(UNCLAIMED),
        })
    }

    fn sessions(&self) -> i64 {
        self.sessions.load(Ordering::Relaxed)
    }

    /// Whether the count still holds at `now_ms` against `cap`.
    fn fresh(&self, cap: i64, now_ms: i64) -> bool {
        let trusted = if self.sessions().saturating_mul(2) < cap {
            FAR_MS
        } else {
            NEAR_MS
        };
        now_ms - self.read_ms < trusted
    }

    /// Claims the re-read for the calling request: false while another
    /// request's claim holds.
    fn claim(&self, now_ms: i64) -> bool {
        let held = self.claimed_ms.load(Ordering::Acquire);
        if held != UNCLAIMED && now_ms.saturating_sub(held) < CLAIM_MS {
            return false;
        }
        (self.claimed_ms)
            .compare_exchange(held, now_ms, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Lets the next request try again (this one's read failed).
    fn unclaim(&self) {
        self.claimed_ms.store(UNCLAIMED, Ordering::Release);
    }
}

pub(super) struct Tally {
    repo: Arc<dyn SessionRepo>,
    /// `max_sessions` and `max_sessions_per_owner`: how near a count is.
    caps: (i64, i64),
    owners: Cache<String, Arc<Count>>,
    all: Mutex<Option<Arc<Count>>>,
}

impl Tally {
    pub(super) fn new(repo: Arc<dyn SessionRepo>, caps: (i64, i64)) -> Self {
        Self {
            repo,
            caps,
            owners: Cache::builder().max_capacity(OWNERS).build(),
            all: Mutex::new(None),
        }
    }

    fn all(&self) -> Option<Arc<Count>> {
        self.all.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The live sessions of everyone and of `owner`, as far as this replica
    /// knows.
    pub(super) async fn counts(&self, owner: &str) -> Result<(i64, i64), StoreError> {
        let now = self.repo.clock_ms();
        let all = self.current(self.all(), None, now).await?;
        let mine = (self.current(self.owners.get(owner), Some(owner), now)).await?;
        Ok((all, mine))
    }

    /// `held` (everyone's count, or `owner`'s) if it is fresh or another
    /// request is reading it again; else read from the store and kept.
    async fn current(
        &self,
        held: Option<Arc<Count>>,
        owner: Option<&str>,
        now: i64,
    ) -> Result<i64, StoreError> {
        let cap = if owner.is_some() {
            self.caps.1
        } else {
            self.caps.0
        };
        if let Some(count) = &held
            && (count.fresh(cap, now) || !count.claim(now))
        {
            return Ok(count.sessions());
        }
        match self.repo.count(owner).await {
            Ok(sessions) => {
                let count = Count::read(sessions, now);
                match owner {
                    Some(owner) => self.owners.insert(owner.to_owned(), count),
                    None => *self.all.lock().unwrap_or_else(|p| p.into_inner()) = Some(count),
                }
                Ok(sessions)
            }
            Err(error) => {
                if let Some(stale) = held {
                    stale.unclaim();
                }
                Err(error)
            }
        }
    }

    /// Counts one more session of `owner` (admitted by this replica). Keeps
    /// the time it was read: a stale count is read again, and the store has
    /// this session by then.
    pub(super) fn opened(&self, owner: &str) {
        if let Some(all) = self.all() {
            all.sessions.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(mine) = self.owners.get(owner) {
            mine.sessions.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests;
