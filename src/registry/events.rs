//! Change events raised by providers and fanned out to subscribers.
//!
//! One bounded broadcast channel per process; a slow subscriber that falls
//! behind loses old events (it is told it lagged) instead of growing memory.

use tokio::sync::broadcast;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeEvent {
    ToolsListChanged,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated { uri: String },
}

#[derive(Clone)]
pub struct ChangeBus {
    sender: broadcast::Sender<ChangeEvent>,
}

/// Events kept for a subscriber that has not read them yet.
const CAPACITY: usize = 256;

impl Default for ChangeBus {
    fn default() -> Self {
        Self {
            sender: broadcast::channel(CAPACITY).0,
        }
    }
}

impl ChangeBus {
    pub fn publish(&self, event: ChangeEvent) {
        // No subscriber is not an error: nobody is listening right now.
        let _ = self.sender.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<ChangeEvent> {
        self.sender.subscribe()
    }
}
