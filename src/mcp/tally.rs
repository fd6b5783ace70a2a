//! Live-session counts for the session caps (`admission.rs`), read from the
//! store at most once per `FRESH` per owner (and once for everyone), with
//! this replica's own openings added since.
//!
//! Counting rows on every `initialize` made each one scan the live sessions
//! of the whole table: the cost grew with the number of sessions, and it was
//! most of an `initialize`. The caps protect the server from a flood, so a
//! count up to `FRESH` old is precise enough: within it, this replica counts
//! exactly what it admits, and only other replicas' openings are missed.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use moka::sync::Cache;

use crate::store::{SessionRepo, StoreError};

/// How long a count read from the store is trusted.
const FRESH: Duration = Duration::from_secs(1);
/// Owners whose counts are kept at once; more are read again.
const OWNERS: u64 = 10_000;

/// A count and when it was read from the store (openings added since do not
/// make it fresher).
type Count = (i64, Instant);

pub(super) struct Tally {
    repo: Arc<dyn SessionRepo>,
    owners: Cache<String, Count>,
    all: Mutex<Option<Count>>,
}

impl Tally {
    pub(super) fn new(repo: Arc<dyn SessionRepo>) -> Self {
        Self {
            repo,
            owners: Cache::builder()
                .max_capacity(OWNERS)
                .time_to_live(FRESH)
                .build(),
            all: Mutex::new(None),
        }
    }

    /// The live sessions of everyone and of `owner`, as far as this replica
    /// knows.
    pub(super) async fn counts(&self, owner: &str) -> Result<(i64, i64), StoreError> {
        let cached = *self.all.lock().unwrap_or_else(|p| p.into_inner());
        let all = match cached.filter(fresh) {
            Some((all, _)) => all,
            None => {
                let all = self.repo.count(None).await?;
                *self.all.lock().unwrap_or_else(|p| p.into_inner()) = Some((all, Instant::now()));
                all
            }
        };
        let mine = match self.owners.get(owner).filter(fresh) {
            Some((mine, _)) => mine,
            None => {
                let mine = self.repo.count(Some(owner)).await?;
                self.owners.insert(owner.to_owned(), (mine, Instant::now()));
                mine
            }
        };
        Ok((all, mine))
    }

    /// Counts one more session of `owner` (admitted by this replica).
    pub(super) fn opened(&self, owner: &str) {
        if let Some((all, _)) = self.all.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            *all += 1;
        }
        // Keeps the time it was read: a stale count is read again, and the
        // store has this session by then.
        if let Some((mine, read)) = self.owners.get(owner) {
            self.owners.insert(owner.to_owned(), (mine + 1, read));
        }
    }
}

fn fresh(count: &Count) -> bool {
    count.1.elapsed() < FRESH
}
