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

use std::sync::{Arc, Mutex};

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

/// A count as read from the store at `read_ms` (openings added since do not
/// make it fresher), and since when a request has been reading it again.
#[derive(Clone, Copy)]
struct Count {
    sessions: i64,
    read_ms: i64,
    claimed_ms: Option<i64>,
}

impl Count {
    fn read(sessions: i64, now_ms: i64) -> Self {
        Self {
            sessions,
            read_ms: now_ms,
            claimed_ms: None,
        }
    }

    /// Whether the count still holds at `now_ms` against `cap`.
    fn fresh(&self, cap: i64, now_ms: i64) -> bool {
        let trusted = if self.sessions.saturating_mul(2) < cap {
            FAR_MS
        } else {
            NEAR_MS
        };
        now_ms - self.read_ms < trusted
    }

    /// Whether another request is reading it again right now.
    fn claimed(&self, now_ms: i64) -> bool {
        self.claimed_ms.is_some_and(|at| now_ms - at < CLAIM_MS)
    }
}

/// What a stale count calls for: read it (this request claimed it), or go
/// on with it while another request reads.
enum Next {
    Use(i64),
    Read,
}

pub(super) struct Tally {
    repo: Arc<dyn SessionRepo>,
    /// `max_sessions` and `max_sessions_per_owner`: how near a count is.
    caps: (i64, i64),
    owners: Cache<String, Count>,
    all: Mutex<Option<Count>>,
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

    /// The live sessions of everyone and of `owner`, as far as this replica
    /// knows.
    pub(super) async fn counts(&self, owner: &str) -> Result<(i64, i64), StoreError> {
        let now = self.repo.clock_ms();
        let all = match self.next_all(now) {
            Next::Use(all) => all,
            Next::Read => {
                let read = self.repo.count(None).await;
                let mut all = self.all.lock().unwrap_or_else(|p| p.into_inner());
                match read {
                    Ok(count) => *all = Some(Count::read(count, now)),
                    // Unclaimed, so the next request tries again.
                    Err(error) => {
                        if let Some(stale) = all.as_mut() {
                            stale.claimed_ms = None;
                        }
                        return Err(error);
                    }
                }
                all.map_or(0, |count| count.sessions)
            }
        };
        let mine = match self.next_owner(owner, now) {
            Next::Use(mine) => mine,
            Next::Read => match self.repo.count(Some(owner)).await {
                Ok(mine) => {
                    self.owners.insert(owner.to_owned(), Count::read(mine, now));
                    mine
                }
                Err(error) => {
                    self.owners.invalidate(owner);
                    return Err(error);
                }
            },
        };
        Ok((all, mine))
    }

    fn next_all(&self, now: i64) -> Next {
        let mut all = self.all.lock().unwrap_or_else(|p| p.into_inner());
        match all.as_mut() {
            Some(count) if count.fresh(self.caps.0, now) || count.claimed(now) => {
                Next::Use(count.sessions)
            }
            Some(count) => {
                count.claimed_ms = Some(now);
                Next::Read
            }
            None => Next::Read,
        }
    }

    fn next_owner(&self, owner: &str, now: i64) -> Next {
        match self.owners.get(owner) {
            Some(count) if count.fresh(self.caps.1, now) || count.claimed(now) => {
                Next::Use(count.sessions)
            }
            Some(count) => {
                let claimed = Count {
                    claimed_ms: Some(now),
                    ..count
                };
                self.owners.insert(owner.to_owned(), claimed);
                Next::Read
            }
            None => Next::Read,
        }
    }

    /// Counts one more session of `owner` (admitted by this replica).
    pub(super) fn opened(&self, owner: &str) {
        if let Some(all) = self.all.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            all.sessions += 1;
        }
        // Keeps the time it was read: a stale count is read again, and the
        // store has this session by then.
        if let Some(mine) = self.owners.get(owner) {
            let opened = Count {
                sessions: mine.sessions + 1,
                ..mine
            };
            self.owners.insert(owner.to_owned(), opened);
        }
    }
}

#[cfg(test)]
mod tests;
