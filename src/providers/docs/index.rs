//! A snapshot of one docs source: the documents found on disk (`document`)
//! and the tantivy (BM25) index over their sections (`build`). A
//! snapshot's documents never change; a re-index reads the changed files
//! into a new snapshot, which the source swaps in.
//!
//! An index kept on disk (`index_dir`) is opened and brought up to date
//! with the snapshot, so its folder's errors are start-up errors. One in
//! RAM is built on the snapshot's first search: a server whose members
//! never search its docs holds no index (about 7 MiB for this project's
//! own docs, BENCHMARKS.md).

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError},
};

use super::{
    build::Searchable,
    document::{Documents, read},
};
use crate::config::DocsSourceConfig;

pub(super) struct Snapshot {
    /// Documents by path inside the source (`guide.md`, `ops/oncall.md`).
    pub documents: Documents,
    /// The index over `documents`, once built. The lock is held while it
    /// is built, so concurrent first searches build it once.
    searchable: Mutex<Option<Arc<Searchable>>>,
}

/// Files the source offers, as (path inside the source, file): `.gitignore`
/// and hidden files honoured, symlinks not followed, capped in number and size.
pub(super) fn scan(config: &DocsSourceConfig) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    for root in &config.paths {
        let root = Path::new(root);
        let Ok(meta) = std::fs::metadata(root) else {
            continue;
        };
        if meta.is_file() {
            if let Some(name) = root.file_name().and_then(|n| n.to_str()) {
                found.push((name.to_owned(), root.to_owned()));
            }
            continue;
        }
        let walker = ignore::WalkBuilder::new(root)
            .require_git(false)
            .follow_links(false)
            .sort_by_file_name(|a, b| a.cmp(b))
            .build();
        for entry in walker.flatten() {
            if entry.file_type().is_some_and(|t| t.is_file())
                && let Ok(inside) = entry.path().strip_prefix(root)
            {
                // Paths are relative to the configured folder itself.
                let name = inside.to_string_lossy().replace('\\', "/");
                found.push((name, entry.into_path()));
            }
        }
    }
    found.retain(|(_, path)| {
        let ext_ok = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| config.extensions.iter().any(|x| x == e));
        ext_ok && std::fs::metadata(path).is_ok_and(|m| m.len() <= config.max_file_bytes)
    });
    found.sort();
    found.dedup_by(|a, b| a.0 == b.0);
    found.truncate(config.max_documents);
    found
}

impl Snapshot {
    /// A source's first snapshot. With `folder`, the index kept there is
    /// opened now and only files whose content changed since are
    /// re-indexed; without, the index waits for the first search.
    pub(super) fn open(files: &[(String, PathBuf)], folder: Option<&Path>) -> anyhow::Result<Self> {
        let documents = read(files, None);
        let searchable = match folder {
            Some(folder) => Some(Arc::new(Searchable::open(&documents, Some(folder))?)),
            None => None,
        };
        Ok(Self::new(documents, searchable))
    }

    /// The next snapshot: unchanged documents are kept as they are; an
    /// index already built is brought up to date (only changed documents
    /// re-indexed, gone ones deleted), else it still waits for a search.
    pub(super) fn update(&self, files: &[(String, PathBuf)]) -> anyhow::Result<Self> {
        let documents = read(files, Some(&self.documents));
        let searchable = match self.built() {
            Some(built) => Some(Arc::new(built.update(&documents)?)),
            None => None,
        };
        Ok(Self::new(documents, searchable))
    }

    /// The index over this snapshot's documents, built now if it is not.
    pub(super) fn searchable(&self) -> anyhow::Result<Arc<Searchable>> {
        let mut slot = self
            .searchable
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(built) = slot.as_ref() {
            return Ok(built.clone());
        }
        let built = Arc::new(Searchable::open(&self.documents, None)?);
        *slot = Some(built.clone());
        Ok(built)
    }

    pub(super) fn built(&self) -> Option<Arc<Searchable>> {
        let slot = self
            .searchable
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        slot.clone()
    }

    fn new(documents: Documents, searchable: Option<Arc<Searchable>>) -> Self {
        Self {
            documents,
            searchable: Mutex::new(searchable),
        }
    }
}
