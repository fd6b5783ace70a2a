//! The counts' freshness on a real SQLite store and the store's manual clock.

use std::sync::Arc;

use super::{FAR_MS, NEAR_MS, Tally};
use crate::store::{ManualClock, SessionRepo, SessionRow, Store};

const START_MS: i64 = 1_000_000;

/// A tally with `caps` over a scratch store on a manual clock; the folder
/// must outlive the store.
async fn tally(caps: (i64, i64)) -> (Tally, Store, Arc<ManualClock>, tempfile::TempDir) {
    let clock = Arc::new(ManualClock::new(START_MS));
    let (dir, store) = Store::scratch(clock.clone()).await;
    (Tally::new(Arc::new(store.clone()), caps), store, clock, dir)
}

/// `n` sessions of `owner`, as another replica would store them.
async fn elsewhere(store: &Store, owner: &str, n: usize) {
    let now = store.clock_ms();
    let rows: Vec<SessionRow> = (0..n)
        .map(|_| SessionRow {
            id: uuid::Uuid::new_v4().to_string(),
            owner: owner.into(),
            protocol_version: "2025-06-18".into(),
            client_name: "t".into(),
            client_version: "1".into(),
            init_params: "{}".into(),
            server_capabilities: "{}".into(),
            state: "{}".into(),
            created_ms: now,
            last_seen_ms: now,
            expires_ms: now + 3_600_000,
        })
        .collect();
    store.create_many(&rows).await.unwrap();
}

#[tokio::test]
async fn a_count_near_its_cap_is_read_again_within_a_second() {
    let (tally, store, clock, _dir) = tally((10, 4)).await;
    elsewhere(&store, "ann", 2).await;
    assert_eq!(tally.counts("ann").await.unwrap(), (2, 2));
    tally.opened("ann");
    assert_eq!(tally.counts("ann").await.unwrap(), (3, 3));
    // Other replicas' openings are seen once the count is a second old.
    elsewhere(&store, "ann", 1).await;
    clock.advance(NEAR_MS - 1);
    assert_eq!(tally.counts("ann").await.unwrap(), (3, 3));
    clock.advance(1);
    assert_eq!(
        tally.counts("ann").await.unwrap(),
        (3, 3),
        "2 + 1 elsewhere"
    );
    elsewhere(&store, "ann", 1).await;
    clock.advance(NEAR_MS);
    // Everyone's count (3 of 10) is far from its cap: still the one read.
    assert_eq!(tally.counts("ann").await.unwrap(), (3, 4));
}

#[tokio::test]
async fn a_count_far_below_its_cap_is_trusted_longer() {
    let (tally, store, clock, _dir) = tally((1_000, 100)).await;
    elsewhere(&store, "ann", 3).await;
    assert_eq!(tally.counts("ann").await.unwrap(), (3, 3));
    tally.opened("ann");
    elsewhere(&store, "bob", 5).await;
    // A second later nothing is scanned again: neither count is near its cap.
    clock.advance(NEAR_MS * 5);
    assert_eq!(tally.counts("ann").await.unwrap(), (4, 4));
    // Bob's count is read for the first time; everyone's is still trusted.
    assert_eq!(tally.counts("bob").await.unwrap(), (4, 5));
    clock.advance(FAR_MS);
    assert_eq!(tally.counts("ann").await.unwrap(), (8, 3));
}

#[tokio::test]
async fn a_count_reaching_half_its_cap_is_read_again_as_near() {
    let (tally, store, clock, _dir) = tally((1_000, 4)).await;
    elsewhere(&store, "ann", 1).await;
    assert_eq!(tally.counts("ann").await.unwrap().1, 1);
    // This replica's own openings bring it to half of the cap.
    tally.opened("ann");
    elsewhere(&store, "ann", 2).await;
    clock.advance(NEAR_MS);
    assert_eq!(tally.counts("ann").await.unwrap().1, 3);
}

#[tokio::test]
async fn openings_admitted_together_are_all_counted() {
    let (tally, _store, _clock, _dir) = tally((1_000_000, 1_000_000)).await;
    let tally = Arc::new(tally);
    assert_eq!(tally.counts("ann").await.unwrap(), (0, 0));
    let openers: Vec<_> = (0..8)
        .map(|_| {
            let tally = tally.clone();
            std::thread::spawn(move || (0..1_000).for_each(|_| tally.opened("ann")))
        })
        .collect();
    for opener in openers {
        opener.join().unwrap();
    }
    assert_eq!(tally.counts("ann").await.unwrap(), (8_000, 8_000));
}
