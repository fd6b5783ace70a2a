//! Rate limits (governor GCRA, keyed).
//!
//! One keyed limiter per kind: per caller, per caller and tool, and per
//! client address for requests without valid credentials. Each caller has
//! its own bucket, so one caller's burst never slows another. On their own
//! these limits are per replica; with `rate_limit.shared` each is wrapped by
//! a limiter counting the quota across replicas (`lease.rs`). Keys of idle
//! callers are forgotten periodically, so the key space cannot grow without
//! bound.

use std::{
    collections::HashMap,
    num::NonZeroU32,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use governor::{
    Quota, RateLimiter,
    clock::{Clock, DefaultClock, FakeRelativeClock},
    middleware::NoOpMiddleware,
    state::keyed::DefaultKeyedStateStore,
};

/// A keyed rate limiter whose clock is hidden (real, or fake in tests).
pub trait Limiter: Send + Sync {
    /// `Err(wait)` when `key` is over its quota; `wait` is when to retry.
    fn check(&self, key: &str) -> Result<(), Duration>;
    /// Forgets keys whose buckets are full again (idle callers).
    fn forget_idle(&self);
}

struct Keyed<C: Clock> {
    limiter: RateLimiter<String, DefaultKeyedStateStore<String>, C, NoOpMiddleware<C::Instant>>,
    clock: C,
}

impl<C: Clock + Send + Sync> Limiter for Keyed<C>
where
    C::Instant: Send + Sync,
{
    fn check(&self, key: &str) -> Result<(), Duration> {
        self.limiter
            .check_key(&key.to_owned())
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    fn forget_idle(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

/// `per_minute` requests a minute on average, `burst` at once.
pub fn quota(per_minute: u32, burst: u32) -> Quota {
    let per_minute = NonZeroU32::new(per_minute.max(1)).expect("non-zero");
    let burst = NonZeroU32::new(burst.max(1)).expect("non-zero");
    Quota::per_minute(per_minute).allow_burst(burst)
}

pub fn limiter(quota: Quota) -> Arc<dyn Limiter> {
    let clock = DefaultClock::default();
    Arc::new(Keyed {
        limiter: RateLimiter::dashmap_with_clock(quota, clock.clone()),
        clock,
    })
}

/// A limiter on a clock the caller moves (tests).
pub fn limiter_with_fake_clock(quota: Quota, clock: FakeRelativeClock) -> Arc<dyn Limiter> {
    Arc::new(Keyed {
        limiter: RateLimiter::dashmap_with_clock(quota, clock.clone()),
        clock,
    })
}

/// Whether quotas are counted across replicas right now; shared with
/// `/readyz`.
#[derive(Clone, Default)]
pub struct QuotaStatus {
    fallen_back: Arc<AtomicBool>,
}

impl QuotaStatus {
    /// True while the store fails and each replica counts on its own.
    pub fn per_replica(&self) -> bool {
        self.fallen_back.load(Ordering::Relaxed)
    }

    /// Whether this changed the state.
    pub(super) fn set(&self, failed: bool) -> bool {
        self.fallen_back.swap(failed, Ordering::Relaxed) != failed
    }
}

/// Every limit the HTTP layer applies.
#[derive(Clone)]
pub struct RateLimits {
    pub per_caller: Option<Arc<dyn Limiter>>,
    pub unauthenticated: Option<Arc<dyn Limiter>>,
    /// Per caller × tool, for the tools that declare one.
    pub per_tool: Arc<HashMap<String, Arc<dyn Limiter>>>,
    /// Whether the quotas are counted across replicas right now, when
    /// they are shared.
    pub shared: Option<QuotaStatus>,
}

impl RateLimits {
    pub fn none() -> Self {
        Self {
            per_caller: None,
            unauthenticated: None,
            per_tool: Arc::default(),
            shared: None,
        }
    }

    pub fn check_caller(&self, user: &str) -> Result<(), Duration> {
        self.per_caller.as_ref().map_or(Ok(()), |l| l.check(user))
    }

    pub fn check_address(&self, address: &str) -> Result<(), Duration> {
        self.unauthenticated
            .as_ref()
            .map_or(Ok(()), |l| l.check(address))
    }

    pub fn check_tool(&self, user: &str, tool: &str) -> Result<(), Duration> {
        match self.per_tool.get(tool) {
            Some(limiter) => limiter.check(user),
            None => Ok(()),
        }
    }

    pub fn forget_idle(&self) {
        let all = self
            .per_caller
            .iter()
            .chain(&self.unauthenticated)
            .chain(self.per_tool.values());
        for limiter in all {
            limiter.forget_idle();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_caller_has_its_own_bucket_and_refills_with_time() {
        let clock = FakeRelativeClock::default();
        let limiter = limiter_with_fake_clock(quota(60, 3), clock.clone());
        // (caller, clock advance before the request in ms, expected to pass)
        let table = [
            ("a", 0, true),
            ("a", 0, true),
            ("a", 0, true),
            ("a", 0, false), // burst of 3 spent
            ("b", 0, true),  // another caller is untouched
            ("a", 999, false),
            ("a", 1, true), // one request a second refills
            ("a", 0, false),
        ];
        for (i, (caller, advance, allowed)) in table.into_iter().enumerate() {
            clock.advance(Duration::from_millis(advance));
            let result = limiter.check(caller);
            assert_eq!(result.is_ok(), allowed, "row {i}: {result:?}");
            if let Err(wait) = result {
                assert!(
                    wait > Duration::ZERO && wait <= Duration::from_secs(1),
                    "row {i}: {wait:?}"
                );
            }
        }
    }
}
