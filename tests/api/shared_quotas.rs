//! Quotas shared by replicas (issue 64): the store's counter on both
//! backends.

use std::sync::Arc;

use teamgate::store::{ManualClock, QuotaRepo, Store};

use crate::databases::TestDb;

/// The windows of a minute the server counts in (`http::QUOTA_WINDOW_MS`).
const QUOTA_WINDOW_MS: i64 = 60_000;

/// A window's start, so a test begins at the start of one.
const W0: i64 = 30_000_000 * QUOTA_WINDOW_MS;
const W1: i64 = W0 + QUOTA_WINDOW_MS;

async fn counter_contract(store: &Store, backend: &str) {
    let take = |key: &'static str, window, limit, want| store.take_quota(key, window, limit, want);
    assert_eq!(
        take("caller:ann", W0, 60, 40).await.unwrap(),
        40,
        "{backend}"
    );
    assert_eq!(
        take("caller:ann", W0, 60, 30).await.unwrap(),
        20,
        "{backend}: only what is left"
    );
    assert_eq!(
        take("caller:ann", W0, 60, 5).await.unwrap(),
        0,
        "{backend}: spent"
    );
    assert_eq!(take("caller:ann", W0, 60, 0).await.unwrap(), 0, "{backend}");
    assert_eq!(
        take("caller:bob", W0, 60, 10).await.unwrap(),
        10,
        "{backend}: another key counts on its own"
    );
    assert_eq!(
        take("caller:ann", W1, 60, 10).await.unwrap(),
        10,
        "{backend}: so does the next window"
    );

    // Takers at once never get more than the limit together.
    let takers: Vec<_> = (0..12)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.take_quota("tool:x:ann", W0, 50, 7).await.unwrap() })
        })
        .collect();
    let mut granted = 0;
    for taker in takers {
        granted += taker.await.unwrap();
    }
    assert_eq!(granted, 50, "{backend}: 12 takes of 7 share a limit of 50");

    assert_eq!(
        store.purge_quotas(W1).await.unwrap(),
        3,
        "{backend}: the three counts of the first window"
    );
    assert_eq!(
        take("caller:ann", W0, 60, 60).await.unwrap(),
        60,
        "{backend}: purged"
    );
    assert_eq!(
        take("caller:ann", W1, 60, 60).await.unwrap(),
        50,
        "{backend}: the later window is kept"
    );
}

#[tokio::test]
async fn the_quota_counter_contract_holds_on_every_backend() {
    for db in TestDb::all().await {
        let store = db.store(Arc::new(ManualClock::new(W0))).await;
        counter_contract(&store, db.name).await;
        db.cleanup().await;
    }
}
