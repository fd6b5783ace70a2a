//! Memory handed back to the operating system on purpose.
//!
//! jemalloc (the binary's allocator, main.rs) returns freed pages over
//! `dirty_decay_ms`. That suits the request path, whose memory is reused
//! soon; a bulk job that frees megabytes at once and is then done (indexing
//! the docs: tantivy's writer takes about 8 MiB) would otherwise keep the
//! process that much larger for the decay time after start-up or a re-index.

/// Returns every page the allocator holds free to the OS now. A no-op
/// without the `jemalloc` feature.
pub fn release_freed() {
    #[cfg(feature = "jemalloc")]
    {
        // `arena.<MALLCTL_ARENAS_ALL>.purge`: every arena, no value in or out.
        const ALL_ARENAS_PURGE: &std::ffi::CStr = c"arena.4096.purge";
        // SAFETY: a NUL-terminated name and null in/out pointers with zero
        // length, which is how this control is called.
        let status = unsafe {
            tikv_jemalloc_sys::mallctl(
                ALL_ARENAS_PURGE.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        if status != 0 {
            tracing::debug!(status, "jemalloc purge refused");
        }
    }
}
