//! Re-indexes a docs source when its files change (notify, debounced) and
//! tells subscribers: `resources/updated` for each changed or removed
//! document, `resources/list_changed` when documents come or go. Events stay
//! on this process: every replica watches and indexes its own files.

use std::{path::Path, sync::Arc};

use notify::RecursiveMode;

use super::{Inner, index};
use crate::{fswatch::FsWatch, registry::ChangeEvent};

/// Dropping it stops the OS watcher, which closes the channel and ends the task.
pub(super) struct Watcher {
    _watch: FsWatch,
}

pub(super) fn start(inner: Arc<Inner>) -> anyhow::Result<Watcher> {
    let mut targets = Vec::new();
    for root in &inner.config.paths {
        let root = Path::new(root);
        // A single file is watched through its folder: editors replace files.
        if root.is_dir() {
            targets.push((root.to_owned(), RecursiveMode::Recursive));
        } else if root.is_file() {
            let parent = root.parent().filter(|p| !p.as_os_str().is_empty());
            let folder = parent.unwrap_or(Path::new(".")).to_owned();
            targets.push((folder, RecursiveMode::NonRecursive));
        }
    }
    let (watch, mut changes) = crate::fswatch::watch(&targets, inner.config.debounce, |_| true)?;
    let weak = Arc::downgrade(&inner);
    drop(inner);
    tokio::spawn(async move {
        while changes.recv().await.is_some() {
            let Some(inner) = weak.upgrade() else {
                return;
            };
            reindex(&inner).await;
        }
    });
    Ok(Watcher { _watch: watch })
}

async fn reindex(inner: &Arc<Inner>) {
    let config = inner.config.clone();
    let current = inner.snapshot.load_full();
    // Only changed files are re-indexed; unchanged ones keep their sections.
    let built = tokio::task::spawn_blocking(move || current.update(&index::scan(&config))).await;
    let new = match built {
        Ok(Ok(snapshot)) => Arc::new(snapshot),
        Ok(Err(error)) => {
            tracing::warn!(source = %inner.config.name, %error, "re-indexing docs failed; keeping the old index");
            return;
        }
        Err(_) => return,
    };
    let old = inner.snapshot.swap(new.clone());
    let mut listed_changed = old.documents.len() != new.documents.len();
    for (path, before) in &old.documents {
        match new.documents.get(path) {
            Some(after) if after.hash == before.hash => {}
            Some(after) => {
                listed_changed |= after.title != before.title || after.size != before.size;
                inner.bus.publish_local(ChangeEvent::ResourceUpdated {
                    uri: inner.uri(path),
                });
            }
            None => {
                listed_changed = true;
                inner.bus.publish_local(ChangeEvent::ResourceUpdated {
                    uri: inner.uri(path),
                });
            }
        }
    }
    listed_changed |= new.documents.keys().any(|p| !old.documents.contains_key(p));
    if listed_changed {
        inner.bus.publish_local(ChangeEvent::ResourcesListChanged);
    }
    tracing::debug!(source = %inner.config.name, documents = new.documents.len(), "docs re-indexed");
}
