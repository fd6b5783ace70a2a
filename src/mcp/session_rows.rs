//! New sessions' rows, committed in groups. Each `initialize` still waits
//! until its row is committed, so a session made here is found by every
//! replica as soon as its client has the id; the rows of the sessions opened
//! meanwhile share that one transaction.
//!
//! One insert per `initialize`, from up to every pool connection at once,
//! was most of an `initialize`'s cost: on SQLite the inserts queued on its one
//! write lock (the losers sleeping in its busy handler), on PostgreSQL each
//! waited for a commit of its own. Here one writer commits whatever has
//! queued while it wrote the last group.

use std::sync::{Arc, OnceLock};

use tokio::sync::{mpsc, oneshot};

use crate::store::{SessionRepo, SessionRow, StoreError};

/// Rows committed in one transaction at most.
const GROUP: usize = 256;
/// Rows waiting for the writer at most; an `initialize` past it waits for room.
const QUEUE: usize = 4096;

/// A row and who waits for its commit.
type Pending = (SessionRow, oneshot::Sender<Result<(), StoreError>>);

/// The group writer of one `Sessions`; its task starts with the first row
/// and ends when this is dropped.
pub(super) struct SessionRows {
    repo: Arc<dyn SessionRepo>,
    queue: OnceLock<mpsc::Sender<Pending>>,
}

impl SessionRows {
    pub(super) fn new(repo: Arc<dyn SessionRepo>) -> Self {
        Self {
            repo,
            queue: OnceLock::new(),
        }
    }

    /// Stores `row`, returning once it is committed or failed. A failure is
    /// logged, not fatal: the session then works on this replica until it
    /// idles out.
    pub(super) async fn store(&self, row: SessionRow) {
        let queue = self.queue.get_or_init(|| {
            let (queue, receiver) = mpsc::channel(QUEUE);
            tokio::spawn(write(self.repo.clone(), receiver));
            queue
        });
        let (done, committed) = oneshot::channel();
        let result = match queue.send((row, done)).await {
            Ok(()) => committed.await.unwrap_or_else(|_| {
                tracing::error!("the session writer stopped while writing this session");
                Ok(())
            }),
            // The writer is gone (it panicked): write alone.
            Err(mpsc::error::SendError((row, _))) => self.repo.create(&row).await,
        };
        if let Err(error) = result {
            tracing::error!(%error, "session not stored; it will not survive a restart");
        }
    }
}

/// The writer: takes every row waiting and commits them together; a group
/// that fails (a clashing id, say) is written row by row, so each
/// `initialize` gets its own row's outcome.
async fn write(repo: Arc<dyn SessionRepo>, mut receiver: mpsc::Receiver<Pending>) {
    let mut group = Vec::with_capacity(GROUP);
    while receiver.recv_many(&mut group, GROUP).await > 0 {
        let (rows, waiting): (Vec<SessionRow>, Vec<_>) = group.drain(..).unzip();
        match repo.create_many(&rows).await {
            Ok(()) => {
                for waiter in waiting {
                    let _ = waiter.send(Ok(()));
                }
            }
            Err(error) if rows.len() == 1 => {
                if let Some(waiter) = waiting.into_iter().next() {
                    let _ = waiter.send(Err(error));
                }
            }
            Err(_) => {
                for (row, waiter) in rows.iter().zip(waiting) {
                    let _ = waiter.send(repo.create(row).await);
                }
            }
        }
    }
}
