//! The task store contract (`TaskRepo`), run unchanged on SQLite and
//! PostgreSQL, with the clock moved by hand for expiry and heartbeats.

use std::sync::Arc;

use serde_json::json;
use teamgate::store::{ManualClock, Store, TaskRepo, TaskRow};

use crate::databases::TestDb;

const START: i64 = 1_800_000_000_000;
const TTL: i64 = 3_600_000;

fn row(id: &str, owner: &str, now: i64) -> TaskRow {
    TaskRow {
        id: id.into(),
        owner: owner.into(),
        tool: "run_tests".into(),
        status: "working".into(),
        status_message: None,
        progress: None,
        outcome: None,
        input_requests: None,
        input_responses: None,
        ttl_ms: TTL,
        poll_ms: 1000,
        created_ms: now,
        updated_ms: now,
        replica: "r1".into(),
        heartbeat_ms: now,
        cancel_requested: false,
        retries_left: 0,
        call: None,
        upstream: None,
        upstream_task: None,
    }
}

async fn task_contract(store: &Store, clock: &ManualClock, backend: &str) {
    assert!(
        store
            .create_task(&row("t1", "alice", START), 2)
            .await
            .unwrap()
    );
    assert!(
        store
            .create_task(&row("t2", "alice", START), 2)
            .await
            .unwrap()
    );
    assert!(
        !store
            .create_task(&row("t3", "alice", START), 2)
            .await
            .unwrap(),
        "{backend}: max_per_owner refuses a third"
    );
    assert!(
        store
            .create_task(&row("b1", "bob", START), 2)
            .await
            .unwrap()
    );

    // Visible only to the owner.
    let t1 = store
        .task("t1", "alice")
        .await
        .unwrap()
        .expect("owner sees it");
    assert_eq!(t1, row("t1", "alice", START), "{backend}: round trip");
    assert_eq!(store.task("t1", "bob").await.unwrap(), None, "{backend}");
    assert!(
        !store.request_cancel("t1", "bob").await.unwrap(),
        "{backend}"
    );
    assert!(
        !store
            .answer_input("t1", "bob", &Default::default())
            .await
            .unwrap()
    );

    // Input: partial answers keep it waiting; unknown keys are ignored.
    let asked =
        json!({"a": {"method": "elicitation/create"}, "b": {"method": "elicitation/create"}});
    store.ask_input("t2", &asked.to_string()).await.unwrap();
    let waiting = store.task("t2", "alice").await.unwrap().unwrap();
    assert_eq!(waiting.status, "input_required", "{backend}");
    let answer = |k: &str| {
        json!({k: {"action": "accept"}, "zz": 1})
            .as_object()
            .unwrap()
            .clone()
    };
    assert!(
        store
            .answer_input("t2", "alice", &answer("a"))
            .await
            .unwrap()
    );
    let partial = store.task("t2", "alice").await.unwrap().unwrap();
    assert_eq!(partial.status, "input_required", "{backend}");
    let left: serde_json::Value =
        serde_json::from_str(partial.input_requests.as_deref().unwrap()).unwrap();
    assert_eq!(
        left,
        json!({"b": {"method": "elicitation/create"}}),
        "{backend}"
    );
    assert_eq!(
        store.take_input("t2").await.unwrap(),
        None,
        "{backend}: not all answered"
    );
    store
        .answer_input("t2", "alice", &answer("b"))
        .await
        .unwrap();
    let taken: serde_json::Value =
        serde_json::from_str(&store.take_input("t2").await.unwrap().unwrap()).unwrap();
    assert_eq!(
        taken,
        json!({"a": {"action": "accept"}, "b": {"action": "accept"}}),
        "{backend}"
    );
    assert_eq!(
        store.take_input("t2").await.unwrap(),
        None,
        "{backend}: taken once"
    );

    // Progress moves a working task's `updated_ms`, not a finished one's.
    clock.advance(1_000);
    store.task_progress("t2", "step 2 of 3").await.unwrap();
    let moving = store.task("t2", "alice").await.unwrap().unwrap();
    assert_eq!(moving.progress.as_deref(), Some("step 2 of 3"), "{backend}");
    assert_eq!(moving.updated_ms, START + 1_000, "{backend}");

    // Cancellation reaches the running replica through its heartbeat.
    assert!(store.request_cancel("t1", "alice").await.unwrap());
    let ids = vec!["t1".to_owned(), "t2".to_owned()];
    assert_eq!(
        store.heartbeat("r1", &ids).await.unwrap(),
        ["t1"],
        "{backend}"
    );

    // A terminal status is set once.
    assert!(
        store
            .finish_task(("t1", "r1"), "cancelled", None, None)
            .await
            .unwrap()
    );
    assert!(
        !store
            .finish_task(("t1", "r1"), "completed", None, Some("{}"))
            .await
            .unwrap()
    );
    assert_eq!(
        store.task("t1", "alice").await.unwrap().unwrap().status,
        "cancelled"
    );
    store.task_progress("t1", "late").await.unwrap();
    let ended = store.task("t1", "alice").await.unwrap().unwrap();
    assert_eq!(
        ended.progress, None,
        "{backend}: a finished task keeps its state"
    );

    // A replica that stops beating: its live tasks fail after the timeout.
    clock.advance(10_000);
    store.heartbeat("r1", &["t2".to_owned()]).await.unwrap();
    let (failed, _) = store.sweep_tasks(START + 5_000).await.unwrap();
    let ids: Vec<&str> = failed.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        ["b1"],
        "{backend}: bob's task had no heartbeat since START"
    );
    assert_eq!(
        (failed[0].owner.as_str(), failed[0].tool.as_str()),
        ("bob", "run_tests"),
        "{backend}"
    );
    let lost = store.task("b1", "bob").await.unwrap().unwrap();
    assert_eq!(lost.status, "failed", "{backend}");
    assert!(lost.status_message.unwrap().contains("heartbeat_timeout"));
    let error: serde_json::Value = serde_json::from_str(&lost.outcome.unwrap()).unwrap();
    assert_eq!(error["code"], -32603, "{backend}");
    assert_eq!(
        store.task("t2", "alice").await.unwrap().unwrap().status,
        "working"
    );

    let counts = store.count_tasks().await.unwrap();
    assert!(
        counts.contains(&("failed".to_owned(), 1)),
        "{backend}: {counts:?}"
    );

    // Expired tasks are gone before and after the sweep.
    clock.advance(TTL);
    assert_eq!(store.task("t2", "alice").await.unwrap(), None, "{backend}");
    let (_, deleted) = store.sweep_tasks(START).await.unwrap();
    assert_eq!(deleted, 3, "{backend}");
    assert!(
        store
            .create_task(&row("t4", "alice", START + TTL + 10_000), 2)
            .await
            .unwrap()
    );
    store.delete_task("t4").await.unwrap();
    assert!(store.count_tasks().await.unwrap().is_empty(), "{backend}");
}

/// A task with retries left whose replica stopped: claimed by exactly one
/// replica, its retries counted down, never failed by the sweep while one
/// is left; its old replica told to stop and unable to finish it.
async fn retry_contract(store: &Store, clock: &ManualClock, backend: &str) {
    let retried = |id: &str, retries: i64| TaskRow {
        retries_left: retries,
        call: Some(r#"{"arguments":{}}"#.into()),
        ..row(id, "carol", START)
    };
    assert!(store.create_task(&retried("r-a", 2), 10).await.unwrap());
    let cancelled = TaskRow {
        cancel_requested: true,
        ..retried("r-c", 2)
    };
    assert!(store.create_task(&cancelled, 10).await.unwrap());
    // An upstream's own task, mapped: no replica runs it.
    let mapped = TaskRow {
        replica: String::new(),
        upstream: Some("builds".into()),
        upstream_task: Some("theirs".into()),
        ..row("m-1", "carol", START)
    };
    assert!(store.create_task(&mapped, 10).await.unwrap());
    // Not stale yet: nobody claims it.
    assert_eq!(store.claim_task("r2", START - 1).await.unwrap(), None);

    clock.advance(10_000);
    let stale = START + 5_000;
    let (first, second) =
        tokio::join!(store.claim_task("r2", stale), store.claim_task("r3", stale));
    let claims: Vec<TaskRow> = [first.unwrap(), second.unwrap()]
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(
        claims.len(),
        1,
        "{backend}: exactly one replica claims it: {claims:?}"
    );
    let claimed = &claims[0];
    assert_eq!(
        claimed.id, "r-a",
        "{backend}: a task asked to cancel is not run again"
    );
    assert_eq!(claimed.retries_left, 1, "{backend}");
    assert_eq!(claimed.heartbeat_ms, START + 10_000, "{backend}");
    assert!(claimed.call.is_some(), "{backend}");
    let winner = claimed.replica.clone();

    // The sweep fails the cancelled one, leaves the claimed one working.
    let (failed, _) = store.sweep_tasks(stale).await.unwrap();
    let ids: Vec<&str> = failed.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["r-c"], "{backend}");
    // The old replica is told to stop it, and cannot finish it.
    let stop = store.heartbeat("r1", &["r-a".to_owned()]).await.unwrap();
    assert_eq!(stop, ["r-a"], "{backend}: claimed away from r1");
    let late = store.finish_task(("r-a", "r1"), "completed", None, Some("{}"));
    assert!(
        !late.await.unwrap(),
        "{backend}: only the claiming replica finishes it"
    );

    // The mapped task is neither failed by the sweep nor claimed; its end
    // is written once, for replica "".
    let kept = store.task("m-1", "carol").await.unwrap().unwrap();
    assert_eq!(
        kept.status, "working",
        "{backend}: mapped rows are not swept"
    );
    assert_eq!(kept.upstream_task.as_deref(), Some("theirs"), "{backend}");
    let ended = store.finish_task(("m-1", ""), "completed", None, Some("{}"));
    assert!(ended.await.unwrap(), "{backend}");
    let again = store.finish_task(("m-1", ""), "failed", None, None);
    assert!(!again.await.unwrap(), "{backend}: its end is set once");

    // Its new replica dies too: the last retry, then the sweep fails it.
    clock.advance(10_000);
    let again = store.claim_task("r4", START + 15_000).await.unwrap();
    assert_eq!(again.map(|t| t.retries_left), Some(0), "{backend}");
    assert_eq!(store.claim_task("r5", START + 15_000).await.unwrap(), None);
    clock.advance(10_000);
    let (failed, _) = store.sweep_tasks(START + 25_000).await.unwrap();
    assert_eq!(failed.len(), 1, "{backend}: no retry left");
    let lost = store.task("r-a", "carol").await.unwrap().unwrap();
    assert_eq!(lost.status, "failed", "{backend}");
    assert!(lost.status_message.unwrap().contains("no retry is left"));
    assert_ne!(winner, "r1");
}

#[tokio::test]
async fn the_task_store_contract_holds_on_every_backend() {
    for db in TestDb::all().await {
        let clock = Arc::new(ManualClock::new(START));
        let store = db.store(clock.clone()).await;
        task_contract(&store, &clock, db.name).await;
        db.cleanup().await;
    }
}

#[tokio::test]
async fn the_task_retry_contract_holds_on_every_backend() {
    for db in TestDb::all().await {
        let clock = Arc::new(ManualClock::new(START));
        let store = db.store(clock.clone()).await;
        retry_contract(&store, &clock, db.name).await;
        db.cleanup().await;
    }
}
