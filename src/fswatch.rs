//! File-change watching for hot reload and docs sources: notify's events,
//! debounced, minus the ones that change nothing.
//!
//! inotify reports a file being *opened*, and re-reading files is exactly
//! what a reload or a re-index does: reacting to reads would re-index
//! forever (it did, burning a tenth of a core on an idle server). Reads and
//! metadata-only events (atime, chmod) are therefore ignored.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::Context;
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher, event::ModifyKind};
use tokio::sync::mpsc;

/// Dropping it stops the OS watcher, which ends the debounce task and
/// closes the receiver [`watch`] returned.
pub struct FsWatch {
    _watcher: RecommendedWatcher,
}

/// Watches `targets`; the receiver yields once per burst of changes to a
/// path `wanted` accepts, after `debounce` of quiet. Bursts that arrive
/// while the receiver is busy collapse into one more.
pub fn watch(
    targets: &[(PathBuf, RecursiveMode)],
    debounce: Duration,
    wanted: impl Fn(&Path) -> bool + Send + 'static,
) -> anyhow::Result<(FsWatch, mpsc::Receiver<()>)> {
    let (raw_tx, mut raw_rx) = mpsc::channel::<()>(1);
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
        if let Ok(event) = event
            && changes_content(&event.kind)
            && event.paths.iter().any(|p| wanted(p))
        {
            let _ = raw_tx.try_send(());
        }
    })
    .context("starting a file watcher")?;
    for (target, mode) in targets {
        watcher
            .watch(target, *mode)
            .with_context(|| format!("watching {}", target.display()))?;
    }
    let (tx, rx) = mpsc::channel::<()>(1);
    tokio::spawn(async move {
        while raw_rx.recv().await.is_some() {
            // Quiet period: every event inside it restarts the wait.
            loop {
                tokio::time::sleep(debounce).await;
                match raw_rx.try_recv() {
                    Ok(()) => continue,
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => return,
                }
            }
            if let Err(mpsc::error::TrySendError::Closed(())) = tx.try_send(()) {
                return;
            }
        }
    });
    Ok((FsWatch { _watcher: watcher }, rx))
}

/// Creations, writes, renames and removals; not reads or metadata.
fn changes_content(kind: &EventKind) -> bool {
    !matches!(
        kind,
        EventKind::Access(_) | EventKind::Other | EventKind::Modify(ModifyKind::Metadata(_))
    )
}

#[cfg(test)]
mod tests {
    use notify::event::{AccessKind, CreateKind, DataChange, MetadataKind};

    use super::*;

    #[test]
    fn reads_and_metadata_are_not_changes() {
        assert!(!changes_content(&EventKind::Access(AccessKind::Any)));
        assert!(!changes_content(&EventKind::Modify(ModifyKind::Metadata(
            MetadataKind::AccessTime
        ))));
        assert!(changes_content(&EventKind::Modify(ModifyKind::Data(
            DataChange::Any
        ))));
        assert!(changes_content(&EventKind::Create(CreateKind::File)));
    }
}
