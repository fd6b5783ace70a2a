//! Where an upstream's progress notifications go: to the member call whose
//! request carried the token. rmcp names a call's progress token only as it
//! sends the call, so the upstream's first progress may come before the
//! call's route is in: it waits in `early` (bounded) for the route, rather
//! than every send and every progress taking one lock across the send
//! (which made concurrent calls of one upstream wait for each other).

use std::collections::{HashMap, VecDeque};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use tokio::sync::mpsc;

/// Progress kept for calls whose route is not in yet, oldest dropped first.
const EARLY_PROGRESS: usize = 64;

type Route = mpsc::Sender<ProgressNotificationParam>;

#[derive(Default)]
pub(super) struct Routes {
    routes: HashMap<ProgressToken, Route>,
    early: VecDeque<ProgressNotificationParam>,
}

impl Routes {
    /// Puts a call's route in, with whatever progress came before it.
    pub(super) fn open(&mut self, token: ProgressToken, route: Route) {
        if !self.early.is_empty() {
            let (mine, others): (VecDeque<_>, VecDeque<_>) = std::mem::take(&mut self.early)
                .into_iter()
                .partition(|early| early.progress_token == token);
            self.early = others;
            for early in mine {
                let _ = route.try_send(early);
            }
        }
        self.routes.insert(token, route);
    }

    /// The call ended: its progress has nowhere to go.
    pub(super) fn close(&mut self, token: &ProgressToken) {
        self.routes.remove(token);
    }

    /// One progress notification, to its call's route or to wait for it. A
    /// call that does not keep up loses progress, never blocks the
    /// connection.
    pub(super) fn deliver(&mut self, params: ProgressNotificationParam) {
        match self.routes.get(&params.progress_token) {
            Some(route) => drop(route.try_send(params)),
            None => {
                if self.early.len() == EARLY_PROGRESS {
                    self.early.pop_front();
                }
                self.early.push_back(params);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    fn progress(token: i64, progress: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), progress)
    }

    #[test]
    fn progress_before_its_route_reaches_the_call_and_no_other() {
        let mut routes = Routes::default();
        routes.deliver(progress(1, 0.5));
        routes.deliver(progress(2, 0.25));
        let (tx, mut rx) = mpsc::channel(8);
        routes.open(progress(1, 0.0).progress_token, tx);
        routes.deliver(progress(1, 0.75));
        assert_eq!(rx.try_recv().unwrap().progress, 0.5);
        assert_eq!(rx.try_recv().unwrap().progress, 0.75);
        assert!(rx.try_recv().is_err());
        assert_eq!(routes.early.len(), 1, "call 2's progress still waits");
        routes.close(&progress(1, 0.0).progress_token);
        routes.deliver(progress(1, 1.0));
        assert!(rx.try_recv().is_err(), "a closed call gets nothing");
    }

    #[test]
    fn progress_nobody_claims_is_bounded() {
        let mut routes = Routes::default();
        for token in 0..1000 {
            routes.deliver(progress(token, 0.1));
        }
        assert_eq!(routes.early.len(), EARLY_PROGRESS);
        assert_eq!(
            routes.early[0].progress_token,
            progress(936, 0.0).progress_token
        );
    }
}
