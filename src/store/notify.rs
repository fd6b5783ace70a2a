//! Cross-replica change delivery on PostgreSQL: every local change is sent
//! with NOTIFY, and every replica LISTENs and republishes what the others
//! sent. On SQLite (one instance) the bus stays in-process.

use serde::{Deserialize, Serialize};
use sqlx::postgres::PgListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Backend, Store};
use crate::registry::{ChangeBus, ChangeEvent};

const CHANNEL: &str = "teamgate_changes";
/// Changes waiting to be sent; a burst beyond this is dropped with a warning.
const QUEUE: usize = 1024;

#[derive(Serialize, Deserialize)]
struct Envelope {
    origin: String,
    event: ChangeEvent,
}

/// Connects `bus` to the other replicas when the store is PostgreSQL.
pub async fn bridge(
    store: &Store,
    url: &str,
    bus: &ChangeBus,
    stop: CancellationToken,
) -> Result<(), sqlx::Error> {
    if store.backend() != Backend::Postgres {
        return Ok(());
    }
    let origin = uuid::Uuid::new_v4().simple().to_string();
    let mut listener = PgListener::connect(url).await?;
    listener.listen(CHANNEL).await?;

    let (relay, mut outgoing) = mpsc::channel::<ChangeEvent>(QUEUE);
    bus.set_relay(relay);
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
                .execute(sender_store.pool())
                .await;
            if let Err(error) = sent {
                tracing::warn!(%error, "change not sent to other replicas");
            }
        }
    });

    let bus = bus.clone();
    tokio::spawn(async move {
        loop {
            // PgListener reconnects and re-listens by itself after a drop.
            let notification = tokio::select! {
                n = listener.recv() => n,
                () = stop.cancelled() => return,
            };
            match notification {
                Ok(notification) => {
                    match serde_json::from_str::<Envelope>(notification.payload()) {
                        Ok(envelope) if envelope.origin != origin => {
                            bus.publish_local(envelope.event)
                        }
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
    Ok(())
}
