//! Calls parked for a 2026-07-28 member's retry (see `forward.rs`): a
//! bounded table, each entry owned by one user and dropped when its time
//! is up, so an abandoned call holds nothing for long.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

/// Calls parked per upstream, at most.
pub(super) const MAX_PARKED: usize = 64;

/// Parked values by the random id their `requestState` carries.
pub(super) struct Parked<T> {
    table: Arc<Mutex<HashMap<String, (String, T)>>>,
    ttl: Duration,
}

impl<T> Default for Parked<T> {
    fn default() -> Self {
        Self::new(super::relay::RELAY_TIMEOUT)
    }
}

impl<T> Parked<T> {
    pub(super) fn new(ttl: Duration) -> Self {
        Self {
            table: Arc::default(),
            ttl,
        }
    }
}

impl<T: Send + 'static> Parked<T> {
    /// Parks `value` for `user` under `id`, dropped after the TTL unless
    /// taken; a full table gives it back.
    pub(super) fn put(&self, id: String, user: String, value: T) -> Result<(), T> {
        let mut table = self.table.lock().expect("parked calls lock");
        if table.len() >= MAX_PARKED {
            return Err(value);
        }
        table.insert(id.clone(), (user, value));
        let weak = Arc::downgrade(&self.table);
        let ttl = self.ttl;
        tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            // Dropped outside the lock: dropping a call cancels it upstream.
            let expired = weak
                .upgrade()
                .and_then(|t| t.lock().expect("parked calls lock").remove(&id));
            drop(expired);
        });
        Ok(())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.table.lock().expect("parked calls lock").is_empty()
    }

    /// Takes `id` out, if it is there and `user`'s: good once.
    pub(super) fn take(&self, id: &str, user: &str) -> Option<T> {
        let mut table = self.table.lock().expect("parked calls lock");
        match table.get(id) {
            Some((owner, _)) if owner == user => table.remove(id).map(|(_, value)| value),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn parked_calls_are_bounded_owned_taken_once_and_expire() {
        let parked = Parked::new(Duration::from_secs(120));
        for i in 0..MAX_PARKED {
            parked.put(i.to_string(), "ann".into(), i).unwrap();
        }
        assert_eq!(
            parked.put("full".into(), "ann".into(), 0),
            Err(0),
            "bounded"
        );
        assert_eq!(parked.take("1", "bob"), None, "only its owner takes it");
        assert_eq!(parked.take("1", "ann"), Some(1));
        assert_eq!(parked.take("1", "ann"), None, "taken once");
        tokio::time::sleep(Duration::from_secs(60)).await;
        parked.put("late".into(), "ann".into(), 99).unwrap();
        tokio::time::sleep(Duration::from_secs(59)).await;
        assert_eq!(
            parked.take("2", "ann"),
            Some(2),
            "still there before its time"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(parked.take("3", "ann"), None, "dropped after its time");
        assert_eq!(parked.take("late", "ann"), Some(99));
    }
}
