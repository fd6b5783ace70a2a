//! Change events raised by providers and fanned out to subscribers.
//!
//! One bounded broadcast channel per process; a slow subscriber that falls
//! behind loses old events (it is told it lagged) instead of growing memory.
//! With several replicas, a relay (PostgreSQL NOTIFY, see `store::notify`)
//! carries each local event to the other replicas, which publish it locally.

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, mpsc};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChangeEvent {
    ToolsListChanged,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated { uri: String },
}

#[derive(Clone)]
pub struct ChangeBus {
    sender: broadcast::Sender<ChangeEvent>,
    relay: Arc<OnceLock<mpsc::Sender<ChangeEvent>>>,
}

/// Events kept for a subscriber that has not read them yet.
const CAPACITY: usize = 256;

impl Default for ChangeBus {
    fn default() -> Self {
        Self {
            sender: broadcast::channel(CAPACITY).0,
            relay: Arc::default(),
        }
    }
}

impl ChangeBus {
    /// Announces a change here and, through the relay, on every replica.
    pub fn publish(&self, event: ChangeEvent) {
        if let Some(relay) = self.relay.get()
            && relay.try_send(event.clone()).is_err()
        {
            tracing::warn!(
                ?event,
                "change not relayed to other replicas (relay busy or gone)"
            );
        }
        self.publish_local(event);
    }

    /// Announces a change that came from another replica.
    pub fn publish_local(&self, event: ChangeEvent) {
        // No subscriber is not an error: nobody is listening right now.
        let _ = self.sender.send(event);
    }

    /// How many receivers are subscribed now (session forwarders, listen
    /// streams, ...): what tests use to see that none is left behind.
    pub fn subscribers(&self) -> usize {
        self.sender.receiver_count()
    }

    pub fn subscribe(&self) -> broadcast::Receiver<ChangeEvent> {
        self.sender.subscribe()
    }

    /// Installs the cross-replica relay; only the first call takes effect.
    pub fn set_relay(&self, relay: mpsc::Sender<ChangeEvent>) {
        let _ = self.relay.set(relay);
    }
}
