//! Quotas shared by replicas (issue 64): the store's counter on both
//! backends, the leases over it on a fake store that fails on demand, and
//! three replicas on one PostgreSQL database admitting one quota together,
//! falling back to their own counting when the database goes.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use async_trait::async_trait;
use serde_json::{Value, json};
use teamgate::{
    config::{DatabaseUrl, Secret},
    http::{QUOTA_WINDOW_MS, QuotaLeases, limits},
    store::{ManualClock, QuotaRepo, Store, StoreError},
};

use crate::{
    databases::TestDb,
    helpers::{TestApp, spawn_app_clocked},
};

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

/// The counter's contract in memory, failing while `fail` is set.
#[derive(Default)]
struct FakeCounter {
    counts: Mutex<HashMap<(String, i64), i64>>,
    fail: AtomicBool,
}

#[async_trait]
impl QuotaRepo for FakeCounter {
    async fn take_quota(
        &self,
        key: &str,
        window: i64,
        limit: i64,
        want: i64,
    ) -> Result<i64, StoreError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(StoreError::Corrupt("the test's store is down".into()));
        }
        let mut counts = self.counts.lock().unwrap();
        let used = counts.entry((key.to_owned(), window)).or_default();
        let granted = (limit - *used).clamp(0, want);
        *used += want;
        Ok(granted)
    }

    async fn purge_quotas(&self, _before_ms: i64) -> Result<u64, StoreError> {
        Ok(0)
    }
}

/// Calls on both replicas in turn until neither admits for a while (their
/// leases settled); how many each admitted.
async fn drain(replicas: &[Arc<dyn limits::Limiter>]) -> Vec<u32> {
    let mut admitted = vec![0; replicas.len()];
    let mut quiet = 0;
    while quiet < 50 {
        let mut any = false;
        for (i, replica) in replicas.iter().enumerate() {
            if replica.check("ann").is_ok() {
                admitted[i] += 1;
                any = true;
            }
        }
        quiet = if any { 0 } else { quiet + 1 };
        // Lets the refills run.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    admitted
}

#[tokio::test]
async fn leases_admit_the_quota_exactly_and_fall_back_while_the_store_fails() {
    let counter = Arc::new(FakeCounter::default());
    let clock = Arc::new(ManualClock::new(W0));
    let replica = || {
        let leases = QuotaLeases::start(counter.clone(), clock.clone());
        // The local limiter's burst is far above the quota: only the shared
        // count can refuse.
        let local = limits::limiter(limits::quota(60, 1000));
        (leases.limiter("caller", 60, local), leases)
    };
    let (a, leases_a) = replica();
    let (b, _leases_b) = replica();
    let admitted = drain(&[a.clone(), b.clone()]).await;
    assert_eq!(admitted.iter().sum::<u32>(), 60, "{admitted:?}");
    assert!(admitted.iter().all(|&n| n > 0), "both admit: {admitted:?}");
    let wait = a.check("ann").unwrap_err();
    assert!(
        wait > Duration::from_secs(50),
        "spent until the window ends: {wait:?}"
    );

    // The next window, the store down: the first call's refill fails and
    // the replica counts alone, past the shared quota.
    counter.fail.store(true, Ordering::SeqCst);
    clock.advance(QUOTA_WINDOW_MS);
    let status = leases_a.status();
    assert!(!status.per_replica());
    // What replica A's local burst has left after its share above: far
    // past the shared quota of 60.
    let alone = drain(std::slice::from_ref(&a)).await[0];
    assert!(alone > 900, "{alone} admitted alone");
    assert!(status.per_replica(), "fallen back");

    // The store back: a call a second later probes it and sharing resumes.
    counter.fail.store(false, Ordering::SeqCst);
    clock.advance(1_000);
    let _ = a.check("ann");
    for _ in 0..100 {
        if !status.per_replica() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!status.per_replica(), "shared again");
}

/// A replica on `url` with a quota of 60 calls a minute per caller.
async fn replica(url: &str, clock: Arc<ManualClock>) -> TestApp {
    let url = url.to_owned();
    spawn_app_clocked(
        move |c| {
            c.store.url = DatabaseUrl::new(url);
            c.mcp.request_state_keys = vec![Secret::new(
                "0123456789abcdef0123456789abcdef-shared-quotas",
            )];
            c.server.shutdown_grace = Duration::from_millis(100);
            let rl = &mut c.rate_limit;
            rl.enabled = true;
            // `shared` left at "auto": on, since the store is PostgreSQL.
            rl.per_caller_per_minute = 60;
            rl.per_caller_burst = 60;
            // Every test request comes from 127.0.0.1 without credentials:
            // the address quota must not be the one that binds.
            rl.unauthenticated_per_minute = 1_000_000;
            rl.unauthenticated_burst = 1_000_000;
        },
        clock,
    )
    .await
}

async fn ready(app: &TestApp) -> (u16, Value) {
    let response = app
        .client
        .get(format!("{}/readyz", app.base()))
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// Four clients' worth of calls on `app` for `time`: (admitted, refused).
async fn hammer(app: Arc<TestApp>, time: Duration) -> (u32, u32) {
    let until = tokio::time::Instant::now() + time;
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                let (mut admitted, mut refused) = (0, 0);
                while tokio::time::Instant::now() < until {
                    match app.modern_call(1, "tools/list", json!({})).await.0 {
                        200 => admitted += 1,
                        429 => refused += 1,
                        other => panic!("status {other}"),
                    }
                }
                (admitted, refused)
            })
        })
        .collect();
    let mut total = (0, 0);
    for client in clients {
        let (admitted, refused) = client.await.unwrap();
        total = (total.0 + admitted, total.1 + refused);
    }
    total
}

#[tokio::test]
async fn three_replicas_together_admit_one_quota_a_minute() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let clock = Arc::new(ManualClock::new(W0));
    let mut apps = Vec::new();
    for _ in 0..3 {
        apps.push(Arc::new(replica(&db.url, clock.clone()).await));
    }
    assert_eq!(ready(&apps[0]).await.1["quotas"], "shared");
    // Two windows, each hammered by three clients at once (the store's
    // clock stands still within one, then moves a minute).
    for window in 0..2 {
        let rounds: Vec<_> = apps
            .iter()
            .map(|app| tokio::spawn(hammer(app.clone(), Duration::from_millis(1500))))
            .collect();
        let mut per_replica = Vec::new();
        for round in rounds {
            per_replica.push(round.await.unwrap());
        }
        let admitted: u32 = per_replica.iter().map(|r| r.0).sum();
        let refused: u32 = per_replica.iter().map(|r| r.1).sum();
        eprintln!(
            "window {window}: admitted {admitted}, refused {refused}, per replica {per_replica:?}"
        );
        assert!(refused > 0, "the clients asked for more than the quota");
        assert!(
            (57..=63).contains(&admitted),
            "window {window}: {admitted} admitted of 60 ({per_replica:?})"
        );
        clock.advance(QUOTA_WINDOW_MS);
    }
    for app in apps {
        Arc::into_inner(app).expect("clients done").stop().await;
    }
    db.cleanup().await;
}

#[tokio::test]
async fn without_the_database_each_replica_counts_alone_and_readyz_says_so() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let clock = Arc::new(ManualClock::new(W0));
    let app = replica(&db.url, clock.clone()).await;
    assert_eq!(app.modern_call(1, "tools/list", json!({})).await.0, 200);
    let name = db.url.rsplit('/').next().unwrap().to_owned();
    let mut admin = crate::databases::admin_connection()
        .await
        .expect("postgres");
    use sqlx::Executor;
    admin
        .execute(format!("drop database {name} with (force)").as_str())
        .await
        .unwrap();

    // The next window's first refill fails; calls go on, counted here.
    clock.advance(QUOTA_WINDOW_MS);
    let mut body = Value::Null;
    for _ in 0..50 {
        assert_eq!(app.modern_call(2, "tools/list", json!({})).await.0, 200);
        body = ready(&app).await.1;
        if body["quotas"] != "shared" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(body["status"], "store unavailable", "{body}");
    let quotas = body["quotas"].as_str().unwrap_or_default();
    assert!(quotas.starts_with("per replica"), "{body}");
    // The local limiter still holds the quota on this replica.
    // Until the quota is spent (a loaded machine serves fewer calls a second).
    let app = Arc::new(app);
    let (mut admitted, mut refused) = (0, 0);
    for _ in 0..10 {
        let (a, r) = hammer(app.clone(), Duration::from_millis(1000)).await;
        (admitted, refused) = (admitted + a, refused + r);
        if refused > 0 {
            break;
        }
    }
    assert!(
        refused > 0 && admitted <= 62,
        "{admitted} admitted, {refused} refused"
    );
    db.cleanup().await;
}
