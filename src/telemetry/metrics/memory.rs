//! `teamgate_memory_bytes{kind}`: the allocator's own account of the heap,
//! so an operator (and `bench/run`) can tell memory the program holds from
//! memory the allocator keeps: `allocated` is what live objects take,
//! `resident` what the allocator has in RAM (RSS minus code, stacks and
//! the SQLite page cache, which are outside it). Read from jemalloc at each
//! collection; without the `jemalloc` feature nothing is reported (where
//! jemalloc is linked but not the process's allocator, as in the test
//! binary, the figures are its own few pages).

#[cfg(feature = "jemalloc")]
use opentelemetry::KeyValue;

use super::Metrics;

impl Metrics {
    pub(super) fn watch_memory(&self) {
        #[cfg(feature = "jemalloc")]
        self.inner
            .meter
            .u64_observable_gauge("teamgate.memory")
            .with_unit("By")
            .with_description(
                "The allocator's heap: allocated (live objects), active, resident, metadata, retained (unmapped from RAM, kept as address space)",
            )
            .with_callback(|gauge| {
                for (kind, bytes) in jemalloc() {
                    gauge.observe(bytes as u64, &[KeyValue::new("kind", kind)]);
                }
            })
            .build();
    }
}

/// jemalloc's totals, refreshed (`epoch`) first: its statistics are a
/// snapshot taken at each epoch. An error leaves a figure out.
#[cfg(feature = "jemalloc")]
fn jemalloc() -> Vec<(&'static str, usize)> {
    use tikv_jemalloc_ctl::{epoch, stats};
    if epoch::advance().is_err() {
        return Vec::new();
    }
    let mut figures = Vec::with_capacity(5);
    let reads = [
        ("allocated", stats::allocated::read()),
        ("active", stats::active::read()),
        ("resident", stats::resident::read()),
        ("metadata", stats::metadata::read()),
        ("retained", stats::retained::read()),
    ];
    for (kind, read) in reads {
        if let Ok(bytes) = read {
            figures.push((kind, bytes));
        }
    }
    figures
}
