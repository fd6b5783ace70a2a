//! Caps on open long-lived streams (2025-era GET streams and
//! 2026-07-28 `subscriptions/listen`), in total and per caller, and a
//! stream's slot held while its reply is sent (`reply.rs`).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use axum::{body::Body, response::Response};
use futures::{StreamExt, future::BoxFuture};

/// Open long-lived streams, in total and per caller. A stream holds a [`StreamSlot`]; dropping the response
/// body frees it, so a closed stream never keeps counting.
#[derive(Clone)]
pub struct StreamCaps {
    max_total: usize,
    max_per_caller: usize,
    open: Arc<Mutex<(usize, HashMap<String, usize>)>>,
}

/// Why a stream gets no slot.
#[derive(Debug, thiserror::Error)]
pub enum StreamCapReached {
    #[error("the server holds its maximum of {0} open streams")]
    Server(usize),
    #[error("{caller} already has {mine} open streams (the limit is {limit}); close one first")]
    Caller {
        caller: String,
        mine: usize,
        limit: usize,
    },
}

pub struct StreamSlot {
    caps: StreamCaps,
    caller: String,
}

impl std::fmt::Debug for StreamSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSlot")
            .field("caller", &self.caller)
            .finish()
    }
}

impl StreamCaps {
    pub fn new(max_total: usize, max_per_caller: usize) -> Self {
        Self {
            max_total,
            max_per_caller,
            open: Arc::default(),
        }
    }

    /// A slot for one more stream of `caller`, or the cap it would pass.
    pub fn acquire(&self, caller: &str) -> Result<StreamSlot, StreamCapReached> {
        let mut open = self.open.lock().expect("stream caps lock");
        let mine = open.1.get(caller).copied().unwrap_or(0);
        if open.0 >= self.max_total {
            return Err(StreamCapReached::Server(self.max_total));
        }
        if mine >= self.max_per_caller {
            let (caller, limit) = (caller.to_owned(), self.max_per_caller);
            return Err(StreamCapReached::Caller {
                caller,
                mine,
                limit,
            });
        }
        open.0 += 1;
        *open.1.entry(caller.to_owned()).or_default() += 1;
        Ok(StreamSlot {
            caps: self.clone(),
            caller: caller.to_owned(),
        })
    }

    pub fn open_total(&self) -> usize {
        self.open.lock().expect("stream caps lock").0
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.caps.open.lock().expect("stream caps lock");
        open.0 = open.0.saturating_sub(1);
        if let Some(n) = open.1.get_mut(&self.caller) {
            *n -= 1;
            if *n == 0 {
                open.1.remove(&self.caller);
            }
        }
    }
}

/// Keeps `slot` taken for as long as the response body is being sent, and
/// ends the body when `withdrawn` resolves.
pub(super) fn hold(
    response: Response,
    slot: StreamSlot,
    withdrawn: Option<BoxFuture<'static, ()>>,
) -> Response {
    let (parts, body) = response.into_parts();
    let withdrawn = async move {
        match withdrawn {
            Some(withdrawn) => withdrawn.await,
            None => std::future::pending().await,
        }
    };
    let stream = body
        .into_data_stream()
        .map(move |chunk| {
            let _held = &slot;
            chunk
        })
        .take_until(withdrawn);
    Response::from_parts(parts, Body::from_stream(stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_slots_are_capped_and_freed_on_drop() {
        let caps = StreamCaps::new(3, 2);
        let a1 = caps.acquire("a").unwrap();
        let _a2 = caps.acquire("a").unwrap();
        let refused = caps.acquire("a").unwrap_err().to_string();
        assert!(refused.contains("limit is 2"), "{refused}");
        let _b1 = caps.acquire("b").unwrap();
        let refused = caps.acquire("c").unwrap_err().to_string();
        assert!(refused.contains("maximum of 3"), "{refused}");
        drop(a1);
        assert_eq!(caps.open_total(), 2);
        assert!(caps.acquire("c").is_ok());
    }
}
