//! Memory handed back to the operating system on purpose.
//!
//! jemalloc (the binary's allocator, main.rs) returns freed pages over
//! `dirty_decay_ms`. That suits the request path, whose memory is reused
//! soon; a bulk job that frees megabytes at once and is then done (indexing
//! the docs: tantivy's writer takes about 8 MiB) would otherwise keep the
//! process that much larger for the decay time after start-up or a re-index.
//! And each thread keeps a cache of blocks it freed, for its next requests;
//! a thread gone idle would keep it for as long as it stays idle.

use std::{
    cell::Cell,
    time::{Duration, Instant},
};

/// Returns every page the allocator holds free to the OS now. A no-op
/// without the `jemalloc` feature.
pub fn release_freed() {
    // `arena.<MALLCTL_ARENAS_ALL>.purge`: every arena.
    command(c"arena.4096.purge");
}

/// How often a worker hands its cache back at most. A flush costs about
/// 15 us, and the next requests pay again to refill the cache: done at every
/// park, it cut single-client throughput by 12%; every 20 ms, the flushes and
/// refills were still 3-4% of the server's CPU under load (perf, c=64). A
/// worker that parks for good within the gap after its last flush keeps what
/// it freed since (every 200 ms: 2.5-2.9 KiB per idle session; every 20 ms:
/// 2.5-2.7; never: 3.9-4.3).
const FLUSH_EVERY: Duration = Duration::from_millis(100);

thread_local! {
    static LAST_FLUSH: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The runtime's `on_thread_park` hook: a worker going idle hands its cache
/// of freed blocks back to the shared arenas, where the decay above returns
/// their pages. After a burst of sessions the idle workers' caches held
/// about 2.5 KiB per session that came and went (`bench/run`, RSS per idle
/// session), until the next burst.
pub fn on_worker_park() {
    let now = Instant::now();
    if flush_due(LAST_FLUSH.get(), now) {
        LAST_FLUSH.set(Some(now));
        flush_thread_cache();
    }
}

fn flush_due(last: Option<Instant>, now: Instant) -> bool {
    last.is_none_or(|last| now.saturating_duration_since(last) >= FLUSH_EVERY)
}

/// Hands the calling thread's cache of freed blocks back to the shared
/// arenas. A no-op without jemalloc.
fn flush_thread_cache() {
    command(c"thread.tcache.flush");
}

/// Runs a jemalloc control that takes no value in or out; false when
/// jemalloc refused it (logged, never fatal). A no-op without the
/// `jemalloc` feature.
#[cfg_attr(not(feature = "jemalloc"), allow(unused_variables))]
#[allow(unsafe_code)] // mallctl is jemalloc's C interface; the call is checked below.
fn command(name: &std::ffi::CStr) -> bool {
    #[cfg(feature = "jemalloc")]
    {
        // SAFETY: a NUL-terminated name and null in/out pointers with zero
        // length, which is how such a control is called.
        let status = unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        if status != 0 {
            tracing::debug!(status, control = ?name, "jemalloc control refused");
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_flushes_at_its_first_park_then_at_most_every_100_ms() {
        let start = Instant::now();
        assert!(flush_due(None, start));
        assert!(!flush_due(Some(start), start));
        assert!(!flush_due(Some(start), start + Duration::from_millis(99)));
        assert!(flush_due(Some(start), start + Duration::from_millis(100)));
        // A clock that seems to go backwards never flushes early.
        assert!(!flush_due(Some(start + Duration::from_secs(1)), start));
    }

    #[cfg(feature = "jemalloc")]
    #[test]
    fn jemalloc_knows_both_controls() {
        assert!(command(c"arena.4096.purge"));
        assert!(command(c"thread.tcache.flush"));
        assert!(!command(c"thread.tcache.no_such_control"));
    }
}
