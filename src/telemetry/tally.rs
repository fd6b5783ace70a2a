//! Counters bumped on every request, kept in-process and handed to
//! OpenTelemetry only when it collects (a `/metrics` scrape or an OTLP push).
//!
//! The SDK's `Counter::add` builds, hashes (SipHash) and compares a label
//! set per call; with three such counters per request that showed in the
//! profile. Here a known label set costs one fast hash, a read lock and an
//! atomic add; only a new one takes the write lock.

use std::{
    hash::BuildHasher,
    sync::{
        Arc, RwLock,
        atomic::{AtomicU64, Ordering},
    },
};

use hashbrown::HashTable;
use opentelemetry::{KeyValue, StringValue};

/// Label sets per counter at most; later ones are counted as all "other".
const MAX_CELLS: usize = 2000;
const OTHER: &str = "other";

/// One counter with `N` labels.
pub(super) struct Tally<const N: usize> {
    names: [&'static str; N],
    cells: RwLock<HashTable<Arc<Cell<N>>>>,
    hasher: foldhash::fast::RandomState,
}

pub(super) struct Cell<const N: usize> {
    /// The reported values (the lookup key).
    given: [Box<str>; N],
    /// The same, as OpenTelemetry reports them.
    labels: Vec<KeyValue>,
    count: AtomicU64,
}

impl<const N: usize> Cell<N> {
    /// The reported label set, in the order of the tally's names.
    pub(super) fn labels(&self) -> &[KeyValue] {
        &self.labels
    }
}

impl<const N: usize> Tally<N> {
    pub(super) fn new(names: [&'static str; N]) -> Self {
        Self {
            names,
            cells: RwLock::default(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    fn hash(&self, values: &[&str; N]) -> u64 {
        self.hasher.hash_one(values)
    }

    /// Adds one to the label set `values` and returns its cell (whose
    /// labels other instruments may reuse). `bound` turns caller-chosen
    /// values into reported ones ("other" past a cap); cells are keyed by
    /// the reported values, so their number stays bounded whatever callers
    /// send, and a value that is reported as it came hits the fast path.
    pub(super) fn add(
        &self,
        values: [&str; N],
        bound: impl FnOnce([&str; N]) -> [StringValue; N],
    ) -> Arc<Cell<N>> {
        if let Some(cell) = self
            .cells
            .read()
            .expect("tally lock")
            .find(self.hash(&values), matching(&values))
        {
            return counted(cell);
        }
        let bounded = bound(values);
        let mut cells = self.cells.write().expect("tally lock");
        let key: [&str; N] = if cells.len() < MAX_CELLS {
            std::array::from_fn(|i| bounded[i].as_str())
        } else {
            [OTHER; N]
        };
        let hash = self.hash(&key);
        if let Some(cell) = cells.find(hash, matching(&key)) {
            return counted(cell);
        }
        let cell = Arc::new(Cell {
            given: key.map(Box::from),
            labels: self
                .names
                .iter()
                .zip(key)
                .map(|(name, value)| KeyValue::new(*name, value.to_owned()))
                .collect(),
            count: AtomicU64::new(1),
        });
        cells.insert_unique(hash, cell.clone(), |cell| {
            let given: [&str; N] = std::array::from_fn(|i| cell.given[i].as_ref());
            self.hash(&given)
        });
        cell
    }

    /// Every label set with its count so far.
    pub(super) fn each(&self, mut report: impl FnMut(u64, &[KeyValue])) {
        for cell in self.cells.read().expect("tally lock").iter() {
            report(cell.count.load(Ordering::Relaxed), &cell.labels);
        }
    }
}

fn counted<const N: usize>(cell: &Arc<Cell<N>>) -> Arc<Cell<N>> {
    cell.count.fetch_add(1, Ordering::Relaxed);
    cell.clone()
}

fn matching<const N: usize>(values: &[&str; N]) -> impl Fn(&Arc<Cell<N>>) -> bool {
    move |cell| {
        cell.given
            .iter()
            .zip(values.iter())
            .all(|(a, b)| a.as_ref() == *b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collected(tally: &Tally<2>) -> Vec<(u64, Vec<String>)> {
        let mut out = Vec::new();
        tally.each(|count, labels| {
            out.push((
                count,
                labels.iter().map(|kv| kv.value.to_string()).collect(),
            ));
        });
        out.sort();
        out
    }

    #[test]
    fn counts_per_reported_label_set() {
        let tally = Tally::new(["tool", "outcome"]);
        let bound = |[tool, outcome]: [&str; 2]| {
            let tool = if tool.starts_with('x') { "other" } else { tool };
            [
                StringValue::from(tool.to_owned()),
                StringValue::from(outcome.to_owned()),
            ]
        };
        for _ in 0..3 {
            tally.add(["echo", "ok"], bound);
        }
        tally.add(["echo", "tool_error"], bound);
        tally.add(["x1", "ok"], bound);
        tally.add(["x2", "ok"], bound);
        assert_eq!(
            collected(&tally),
            vec![
                (1, vec!["echo".into(), "tool_error".into()]),
                (2, vec!["other".into(), "ok".into()]),
                (3, vec!["echo".into(), "ok".into()]),
            ]
        );
    }
}
