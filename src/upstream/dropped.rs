//! The tools of one upstream teamgate does not offer, as the store records
//! them for `teamgate upstreams list`: the names `names.rs` dropped from its
//! list, and those a registry build left out for a name another tool has.

use std::sync::{Arc, Mutex, OnceLock};

use super::{
    names::{Dropped, Why},
    pins::Pins,
};

/// The tools of one upstream teamgate does not offer: those dropped from
/// its last list (`checked`) and those the last registry build left out,
/// their exposed name taken by a tool registered before them. Each change
/// is recorded in the store (`Pins::dropped`) for `teamgate upstreams list`.
#[derive(Default)]
pub(super) struct Tally {
    listed: Mutex<Vec<Dropped>>,
    clashed: Mutex<Vec<Dropped>>,
    /// What the store was last told; `None` before the first report.
    reported: Mutex<Option<Vec<Dropped>>>,
    store: OnceLock<(String, Arc<dyn Pins>)>,
}

impl Tally {
    /// Records changes of `upstream`'s drops in `pins` from now on.
    pub(super) fn report_to(&self, upstream: &str, pins: Option<Arc<dyn Pins>>) {
        if let Some(pins) = pins {
            let _ = self.store.set((upstream.to_owned(), pins));
        }
    }

    /// What `checked` dropped from the upstream's latest list.
    pub(super) fn listed(&self, dropped: Vec<Dropped>) {
        *self.listed.lock().expect("dropped lock") = dropped;
        self.report();
    }

    /// The exposed names the latest registry build left out; each newly
    /// left out is logged.
    pub(super) fn clashed(&self, upstream: &str, names: Vec<String>) {
        let dropped: Vec<Dropped> = (names.into_iter())
            .map(|name| Dropped::new(name, Why::Clash))
            .collect();
        {
            let mut clashed = self.clashed.lock().expect("dropped lock");
            if *clashed == dropped {
                return;
            }
            for new in dropped.iter().filter(|d| !clashed.contains(d)) {
                tracing::warn!(%upstream, tool = %new.tool, "an upstream tool's name is another tool's, listed before it (a built-in, a declared tool or an upstream configured earlier); dropped");
            }
            *clashed = dropped;
        }
        self.report();
    }

    /// Every tool dropped now.
    pub(super) fn all(&self) -> Vec<Dropped> {
        let mut all = self.listed.lock().expect("dropped lock").clone();
        all.extend(self.clashed.lock().expect("dropped lock").iter().cloned());
        all
    }

    fn report(&self) {
        let all = self.all();
        {
            let mut reported = self.reported.lock().expect("dropped lock");
            if reported.as_ref() == Some(&all) {
                return;
            }
            *reported = Some(all.clone());
        }
        let Some((upstream, pins)) = self.store.get().cloned() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            if let Err(error) = pins.dropped(&upstream, &all).await {
                tracing::warn!(%upstream, error = %format!("{error:#}"), "the upstream's dropped tools were not recorded");
            }
        });
    }
}
