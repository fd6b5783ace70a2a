//! Quotas shared by replicas (issue 64): a replica admits from a lease, a
//! block of a key's quota for the current window taken from the store's
//! shared counter (`store::QuotaRepo`), and takes the next block in the
//! background before the lease runs out, so no call waits on the database.
//!
//! The count is per fixed window of a minute: the replicas together admit
//! at most the quota in each window. Blocks are a twentieth of the quota,
//! smaller as the window ends, so little of a window is left leased and
//! unused on another replica. A key's first calls in a window, before its
//! first block arrives, are admitted on a small credit (a hundredth of the
//! quota, at least one call) charged to the next block. Governor's local
//! limiter still shapes bursts, and decides alone while the store fails:
//! quotas are then per replica until it answers again (`QuotaStatus`,
//! which `/readyz` reports).

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicI64, Ordering},
    },
    time::{Duration, Instant},
};

use tokio::sync::mpsc;

use super::limits::{Limiter, QuotaStatus};
use crate::store::{Clock, QuotaRepo};

/// The window a quota counts in: `per_minute` means per window.
pub const WINDOW_MS: i64 = 60_000;
/// How long a refill may take before the store counts as failed.
const REFILL_TIMEOUT: Duration = Duration::from_secs(1);
/// A key waiting this long for its block is admitted by the local limiter
/// alone (a slow database must not refuse calls within quota).
const STALLED: Duration = Duration::from_millis(250);
/// While the store fails, how often a refill tries it again.
const PROBE_EVERY_MS: i64 = 1000;
/// Refills waiting to run; one more is not asked (the key asks again on
/// its next call).
const REFILL_QUEUE: usize = 4096;
/// Refills running at once: a burst of new keys does not take every
/// connection of the store's pool.
const REFILLS_AT_ONCE: usize = 16;
/// Keys a limiter leases for in one window; a key beyond them (a flood of
/// addresses) is counted by this replica alone until the window ends.
const MAX_KEYS: usize = 100_000;

/// The store side every shared limiter of a server uses.
pub struct QuotaLeases {
    repo: Arc<dyn QuotaRepo>,
    clock: Arc<dyn Clock>,
    status: QuotaStatus,
    last_probe_ms: AtomicI64,
    refills: mpsc::Sender<Refill>,
}

impl QuotaLeases {
    /// Starts the refill task (it ends when every limiter is dropped);
    /// needs a Tokio runtime.
    pub fn start(repo: Arc<dyn QuotaRepo>, clock: Arc<dyn Clock>) -> Arc<Self> {
        // A key has at most one refill asked; the queue bounds the keys.
        let (refills, mut queue) = mpsc::channel::<Refill>(REFILL_QUEUE);
        let shared = Arc::new(Self {
            repo,
            clock,
            status: QuotaStatus::default(),
            last_probe_ms: AtomicI64::new(i64::MIN),
            refills,
        });
        let weak = Arc::downgrade(&shared);
        let running = Arc::new(tokio::sync::Semaphore::new(REFILLS_AT_ONCE));
        tokio::spawn(async move {
            while let Some(refill) = queue.recv().await {
                let Ok(permit) = running.clone().acquire_owned().await else {
                    return;
                };
                let Some(shared) = weak.upgrade() else { return };
                // Each on its own: one slow row must not hold up the others.
                tokio::spawn(async move {
                    shared.run(refill).await;
                    drop(permit);
                });
            }
        });
        shared
    }

    pub fn status(&self) -> QuotaStatus {
        self.status.clone()
    }

    /// A limiter counting `name`'s quota (`limit` a window) across replicas,
    /// in front of which `local` shapes bursts.
    pub fn limiter(
        self: &Arc<Self>,
        name: &str,
        limit: u32,
        local: Arc<dyn Limiter>,
    ) -> Arc<dyn Limiter> {
        Arc::new(SharedLimiter {
            shared: self.clone(),
            table: Arc::new(Table {
                name: name.to_owned(),
                limit: limit.max(1),
                leases: Mutex::default(),
            }),
            local,
        })
    }

    async fn run(&self, refill: Refill) {
        let key = format!("{}:{}", refill.table.name, refill.key);
        let take = self.repo.take_quota(
            &key,
            refill.window * WINDOW_MS,
            i64::from(refill.table.limit),
            i64::from(refill.want),
        );
        let (granted, failure) = match tokio::time::timeout(REFILL_TIMEOUT, take).await {
            Ok(Ok(granted)) => (Some(granted.clamp(0, i64::from(refill.want)) as u32), None),
            Ok(Err(error)) => (None, Some(error.to_string())),
            Err(_) => (None, Some(format!("no answer within {REFILL_TIMEOUT:?}"))),
        };
        // Logged when the state changes, not on every failed refill.
        if self.status.set(failure.is_some()) {
            match failure {
                Some(error) => tracing::warn!(
                    %error,
                    "shared quotas unavailable: each replica counts on its own until the store answers"
                ),
                None => tracing::info!("shared quotas counted across replicas again"),
            }
        }
        refill.table.settle(&refill, granted);
    }

    /// While fallen back: at most one refill a second tries the store.
    fn probe_due(&self, now_ms: i64) -> bool {
        let last = self.last_probe_ms.load(Ordering::Relaxed);
        now_ms.saturating_sub(last) >= PROBE_EVERY_MS
            && self
                .last_probe_ms
                .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

/// One key's lease in one window.
struct Lease {
    window: i64,
    /// Calls this replica may still admit from blocks granted.
    left: u32,
    /// Calls admitted on credit, not yet charged to a refill.
    debt: u32,
    /// Credit left in this window.
    credit: u32,
    /// The counter said the window is spent.
    spent: bool,
    /// When the refill in flight was asked for.
    asked: Option<Instant>,
}

/// One limiter's leases, by key.
struct Table {
    name: String,
    limit: u32,
    leases: Mutex<HashMap<String, Lease>>,
}

struct Refill {
    table: Arc<Table>,
    key: String,
    window: i64,
    want: u32,
    /// The part of `want` that pays for calls already admitted on credit.
    debt: u32,
}

impl Table {
    /// A block of the quota, smaller as the window ends.
    fn block(&self, into_window_ms: i64) -> u32 {
        let base = f64::from((self.limit / 20).max(1));
        let remaining = (WINDOW_MS - into_window_ms) as f64 / WINDOW_MS as f64;
        ((base * remaining).ceil() as u32).max(1)
    }

    /// A key's lease at the start of a window (or of its first call in
    /// it): nothing leased yet, and the credit its first calls are
    /// admitted on until the first block arrives.
    fn lease(&self, window: i64) -> Lease {
        Lease {
            window,
            left: 0,
            debt: 0,
            credit: (self.limit / 100).max(1),
            spent: false,
            asked: None,
        }
    }

    fn settle(&self, refill: &Refill, granted: Option<u32>) {
        let mut leases = self.leases.lock().unwrap_or_else(|e| e.into_inner());
        let Some(lease) = leases.get_mut(&refill.key) else {
            return;
        };
        if lease.window != refill.window {
            return; // a block of a window already over
        }
        lease.asked = None;
        if let Some(granted) = granted {
            lease.left += granted.saturating_sub(refill.debt);
            lease.spent = granted < refill.want;
        }
    }
}

struct SharedLimiter {
    shared: Arc<QuotaLeases>,
    table: Arc<Table>,
    local: Arc<dyn Limiter>,
}

impl Limiter for SharedLimiter {
    fn check(&self, key: &str) -> Result<(), Duration> {
        let now = self.shared.clock.now_ms();
        let failed = self.shared.status.per_replica();
        if failed && !self.shared.probe_due(now) {
            return self.local.check(key);
        }
        let window = now.div_euclid(WINDOW_MS);
        let into = now.rem_euclid(WINDOW_MS);
        let mut leases = self.table.leases.lock().unwrap_or_else(|e| e.into_inner());
        // Looked up before inserting: most calls find their key, and need
        // not copy it.
        if !leases.contains_key(key) {
            if leases.len() >= MAX_KEYS {
                return self.local.check(key);
            }
            leases.insert(key.to_owned(), self.table.lease(window));
        }
        let lease = leases.get_mut(key).expect("inserted above");
        if lease.window != window {
            *lease = self.table.lease(window);
        }
        // The local limiter is asked only when the lease would admit, and
        // the lease spent only when it does: neither is used up by calls
        // the other refuses.
        let verdict = if failed {
            self.local.check(key) // this call only probes the store
        } else if lease.left > 0 {
            self.local.check(key).inspect(|()| lease.left -= 1)
        } else if lease.spent {
            Err(Duration::from_millis((WINDOW_MS - into).max(1) as u64))
        } else if lease.credit > 0 {
            self.local.check(key).inspect(|()| {
                lease.credit -= 1;
                lease.debt += 1;
            })
        } else if lease.asked.is_some_and(|at| at.elapsed() >= STALLED) {
            self.local.check(key)
        } else {
            Err(STALLED)
        };
        let block = self.table.block(into);
        let low = (block / 2).max(if failed { u32::MAX } else { 0 });
        if lease.asked.is_none() && !lease.spent && lease.left <= low {
            lease.asked = Some(Instant::now());
            let refill = Refill {
                table: self.table.clone(),
                key: key.to_owned(),
                window,
                want: if failed { 0 } else { block + lease.debt },
                debt: if failed { 0 } else { lease.debt },
            };
            lease.debt -= refill.debt;
            if let Err(mpsc::error::TrySendError::Full(refill)) =
                self.shared.refills.try_send(refill)
            {
                // Asked again on the key's next call; the credit meanwhile.
                lease.asked = None;
                lease.debt += refill.debt;
            }
        }
        verdict
    }

    fn forget_idle(&self) {
        self.local.forget_idle();
        let window = self.shared.clock.now_ms().div_euclid(WINDOW_MS);
        let mut leases = self.table.leases.lock().unwrap_or_else(|e| e.into_inner());
        leases.retain(|_, lease| lease.window == window);
        leases.shrink_to_fit();
    }
}
