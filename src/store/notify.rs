//! Cross-replica change delivery on PostgreSQL: every local change is sent
//! with NOTIFY, and every replica LISTENs and republishes what the others
//! sent. On SQLite (one instance) the bus stays in-process.

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use sqlx::postgres::PgListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Backend, Store};

const CHANNEL: &str = "teamgate_changes";
/// Changes waiting to be sent; a burst beyond this is dropped with a warning.
pub const RELAY_QUEUE: usize = 1024;

#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    origin: String,
    event: T,
}

/// Relays changes between the replicas when the store is PostgreSQL: what
/// arrives on `outgoing` goes to the others, what the others send goes to
/// `deliver`. `Ok(false)` on SQLite (one instance; nothing to relay).
pub async fn bridge<T>(
    store: &Store,
    url: &str,
    mut outgoing: mpsc::Receiver<T>,
    deliver: impl Fn(T) + Send + 'static,
    stop: CancellationToken,
) -> Result<bool, sqlx::Error>
where
    T: Serialize + DeserializeOwned + Send + 'static,
{
    if store.backend() != Backend::Postgres {
        return Ok(false);
    }
    let origin = uuid::Uuid::new_v4().simple().to_string();
    let mut listener = PgListener::connect(url).await?;
    listener.listen(CHANNEL).await?;
    let sender_store = store.clone();
    let sender_origin = origin.clone();
    let sender_stop = stop.clone();
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                event = outgoing.recv() => match event { Some(e) => e, None => return },
                () = sender_stop.cancelled() => return,
            };
            let payload = serde_json::to_string(&Envelope {
                origin: sender_origin.clone(),
                event,
            })
            .unwrap_or_default();
            let sent = sqlx::query("select pg_notify($1, $2)")
                .bind(CHANNEL)
                .bind(payload)
                .execute(sender_store.writer())
                .await;
            if let Err(error) = sent {
                tracing::warn!(%error, "change not sent to other replicas");
            }
        }
    });

    tokio::spawn(async move {
        loop {
            // PgListener reconnects and re-listens by itself after a drop.
            let notification = tokio::select! {
                n = listener.recv() => n,
                () = stop.cancelled() => return,
            };
            match notification {
                Ok(notification) => {
                    match serde_json::from_str::<Envelope<T>>(notification.payload()) {
                        Ok(envelope) if envelope.origin != origin => deliver(envelope.event),
                        Ok(_) => {}
                        Err(error) => tracing::warn!(%error, "unreadable change notification"),
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "change listener lost its connection; retrying");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            }
        }
    });
    Ok(true)
}
