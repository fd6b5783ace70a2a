//! The store contract, run unchanged on every backend (SQLite, PostgreSQL).

use std::{sync::Arc, time::Duration};

use teamgate::{
    audit::record_id,
    protocol::ServerSseMessage,
    store::StreamEvents,
    store::{AuditRecord, ManualClock, Retention, SessionRepo, SessionRow, SqlEventStore, Store},
};

use crate::databases::TestDb;

const START: i64 = 1_800_000_000_000;
const TTL: i64 = 60_000;

fn row(id: &str, owner: &str, now: i64) -> SessionRow {
    SessionRow {
        id: id.into(),
        owner: owner.into(),
        protocol_version: "2025-11-25".into(),
        client_name: "client".into(),
        client_version: "1.0".into(),
        init_params: "{}".into(),
        server_capabilities: "{}".into(),
        state: "{}".into(),
        created_ms: now,
        last_seen_ms: now,
        expires_ms: now + TTL,
    }
}

async fn session_contract(store: &Store, clock: &ManualClock, backend: &str) {
    let a = row("a", "alice", START);
    store.create(&a).await.unwrap();
    assert!(store.create(&a).await.is_err(), "{backend}: ids are unique");
    assert_eq!(
        store.get("a").await.unwrap(),
        Some(a.clone()),
        "{backend}: round trip"
    );
    assert_eq!(store.get("nope").await.unwrap(), None);

    store.create(&row("b", "bob", START)).await.unwrap();
    store.create(&row("c", "alice", START)).await.unwrap();
    assert_eq!(store.count(None).await.unwrap(), 3);
    assert_eq!(store.count(Some("alice")).await.unwrap(), 2);
    let ids: Vec<String> = store
        .list(10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, ["a", "b", "c"], "{backend}: oldest first");

    store
        .set_state("a", r#"{"logLevel":"debug"}"#)
        .await
        .unwrap();
    assert_eq!(
        store.get("a").await.unwrap().unwrap().state,
        r#"{"logLevel":"debug"}"#
    );

    // Touching "a" halfway keeps it alive past the others' expiry.
    clock.advance(TTL / 2);
    assert!(store.touch("a", TTL).await.unwrap());
    clock.advance(TTL / 2 + 1);
    assert!(
        store.get("b").await.unwrap().is_none(),
        "{backend}: expired rows are never returned"
    );
    assert!(
        !store.touch("b", TTL).await.unwrap(),
        "{backend}: an expired session cannot be revived"
    );
    assert_eq!(store.count(None).await.unwrap(), 1);
    assert_eq!(store.purge_expired().await.unwrap(), 2);
    assert!(store.get("a").await.unwrap().is_some());

    assert!(store.delete("a").await.unwrap());
    assert!(!store.delete("a").await.unwrap());
    assert_eq!(store.count(None).await.unwrap(), 0);

    // A group of new rows is stored whole, or not at all.
    let now = store.now_ms();
    let group: Vec<_> = (0..70).map(|i| row(&format!("g{i}"), "ann", now)).collect();
    store.create_many(&group).await.unwrap();
    assert_eq!(store.get("g69").await.unwrap(), Some(group[69].clone()));
    // Three rows, the clash last: on SQLite one statement of a row count
    // that is no power of two, on PostgreSQL a transaction of two.
    let clash = [
        row("h", "ann", now),
        row("i", "ann", now),
        row("g3", "bob", now),
    ];
    assert!(
        store.create_many(&clash).await.is_err(),
        "{backend}: ids are unique in a group too"
    );
    assert_eq!(
        store.get("h").await.unwrap(),
        None,
        "{backend}: a failed group stores nothing"
    );
    assert_eq!(store.get("i").await.unwrap(), None);
    assert_eq!(store.count(None).await.unwrap(), 70);
}

async fn concurrent_writers(store: &Store, backend: &str) {
    let now = store.now_ms();
    let tasks: Vec<_> = (0..24)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move { store.create(&row(&format!("w{i}"), "writer", now)).await })
        })
        .collect();
    for task in tasks {
        task.await
            .unwrap()
            .unwrap_or_else(|e| panic!("{backend}: concurrent insert failed: {e}"));
    }
    assert_eq!(store.count(Some("writer")).await.unwrap(), 24);
    let settings: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .setting_or_insert("k", || format!("v{i}"))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut values = Vec::new();
    for task in settings {
        values.push(task.await.unwrap());
    }
    values.dedup();
    assert_eq!(
        values.len(),
        1,
        "{backend}: the first writer wins for everyone"
    );
}

fn event(n: i64) -> ServerSseMessage {
    let message = serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": "t", "progress": n}}))
    .unwrap();
    ServerSseMessage::from_message(message)
}

/// The ids replayed after `after` for `scope`; `None` when refused.
async fn replay(store: &dyn StreamEvents, scope: &str, after: &str) -> Option<Vec<String>> {
    let events = store.replay_in(scope, after).await.unwrap()?;
    Some(events.into_iter().map(|e| e.event_id.unwrap()).collect())
}

async fn events_contract(store: &Store, clock: &ManualClock, backend: &str) {
    let retention = Retention {
        max_events: 1000,
        max_age: Duration::from_secs(60),
    };
    let replica_a = SqlEventStore::new(store.clone(), retention);
    let replica_b = SqlEventStore::new(store.clone(), retention);
    let e1 = replica_a.record("s1/a", &event(1)).await.unwrap();
    replica_a.record("s1/b", &event(2)).await.unwrap();
    let e3 = replica_a.record("s1/a", &event(3)).await.unwrap();
    let e4 = replica_a.record("s1/a", &event(4)).await.unwrap();
    replica_a.record("s2/a", &event(5)).await.unwrap();
    assert_eq!(
        replay(replica_a.as_ref(), "s1/", &e1).await,
        Some(vec![e3.clone(), e4.clone()]),
        "{backend}: from memory"
    );
    assert_eq!(
        replay(replica_a.as_ref(), "s2/", &e1).await,
        None,
        "{backend}: another session's id replays nothing (memory)"
    );
    // Another replica reads what the batch writer persisted.
    let mut from_b = None;
    for _ in 0..100 {
        from_b = replay(replica_b.as_ref(), "s1/", &e1).await;
        if from_b.as_ref().is_some_and(|ids| ids.len() == 2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        from_b,
        Some(vec![e3, e4]),
        "{backend}: another replica replays only later events of that stream"
    );
    assert_eq!(
        replay(replica_b.as_ref(), "s2/", &e1).await,
        None,
        "{backend}: another session's id replays nothing (database)"
    );
    assert_eq!(
        replay(replica_b.as_ref(), "s1/", "nope.0").await,
        None,
        "{backend}: unknown ids are refused"
    );
    let forged = format!("{}0", e1.trim_end_matches(char::is_alphanumeric));
    assert_eq!(
        replay(replica_b.as_ref(), "s1/", &forged).await,
        None,
        "{backend}: a forged id replays nothing"
    );

    // A burst of more events than one insert statement holds (32): written in
    // one cycle as several statements in a transaction, every one replayable.
    let first = replica_a.record("s3/a", &event(100)).await.unwrap();
    let mut burst = Vec::new();
    for n in 101..141 {
        burst.push(replica_a.record("s3/a", &event(n)).await.unwrap());
    }
    let mut from_b = None;
    for _ in 0..100 {
        from_b = replay(replica_b.as_ref(), "s3/", &first).await;
        if from_b.as_ref().is_some_and(|ids| ids.len() == burst.len()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(from_b, Some(burst), "{backend}: a burst is persisted whole");

    clock.advance(61_000);
    assert!(
        replica_b.purge().await.unwrap() >= 46,
        "{backend}: old events are purged"
    );
    assert_eq!(replay(replica_b.as_ref(), "s1/", &e1).await, None);
}

fn audit_record(user: &str, at_ms: i64) -> AuditRecord {
    AuditRecord {
        id: record_id(at_ms),
        at_ms,
        user: user.into(),
        token_id: String::new(),
        issuer: String::new(),
        subject: String::new(),
        session_id: String::new(),
        protocol_version: "2025-11-25".into(),
        method: "tools/call".into(),
        target: "echo".into(),
        args_digest: String::new(),
        outcome: "ok".into(),
        latency_ms: 1,
        trace_id: String::new(),
        upstream: "github".into(),
        credential: "shared".into(),
        endpoint: "oncall".into(),
        address: String::new(),
    }
}

/// Reading since a time and purging before one, whether or not a user is
/// named (the id range and the per-user index must agree).
async fn audit_contract(store: &Store, backend: &str) {
    let records: Vec<_> = [("ann", 999), ("bob", 1_000), ("ann", 1_000), ("bob", 5_000)]
        .into_iter()
        .map(|(user, offset)| audit_record(user, START + offset))
        .collect();
    store.append_audit(&records).await.unwrap();
    let times =
        |records: Vec<AuditRecord>| records.iter().map(|r| r.at_ms - START).collect::<Vec<_>>();
    let everyone = store.audit_tail(None, START + 1_000, 10).await.unwrap();
    assert_eq!(
        times(everyone),
        [1_000, 1_000, 5_000],
        "{backend}: since, oldest first"
    );
    let newest = store.audit_tail(None, 0, 1).await.unwrap();
    assert_eq!(
        times(newest),
        [5_000],
        "{backend}: the limit keeps the newest"
    );
    let ann = store
        .audit_tail(Some("ann"), START + 1_000, 10)
        .await
        .unwrap();
    assert_eq!(times(ann), [1_000], "{backend}: one user since");
    assert_eq!(
        store.purge_audit(START + 1_000).await.unwrap(),
        1,
        "{backend}: purge before"
    );
    let left = store.audit_tail(None, 0, 10).await.unwrap();
    assert_eq!(
        times(left),
        [1_000, 1_000, 5_000],
        "{backend}: the rest stays"
    );
    // Client-chosen text comes back as it went in, except NUL, which
    // PostgreSQL cannot store (a batch holding one must not fail forever).
    let mut odd = audit_record("c\\d", START + 6_000);
    odd.target = "tab\there\nnew\rline \\N \\. \0 é ✓ \"q\" \u{1} [1]".into();
    odd.subject = "\0".into();
    odd.latency_ms = -1;
    store.append_audit(&[odd.clone()]).await.unwrap();
    let mut stored = odd.clone();
    stored.target = "tab\there\nnew\rline \\N \\. \u{FFFD} é ✓ \"q\" \u{1} [1]".into();
    stored.subject = "\u{FFFD}".into();
    let newest = store.audit_tail(None, 0, 1).await.unwrap();
    assert_eq!(newest, [stored], "{backend}: text round trip");
    // A batch wider than one insert statement (64 rows on SQLite; one COPY
    // on PostgreSQL), and one that fails (a duplicate id): all or none.
    let before = store.audit_count().await.unwrap();
    let many: Vec<_> = (0..600)
        .map(|i| audit_record("cy", START + 7_000 + i))
        .collect();
    store.append_audit(&many).await.unwrap();
    let count = store.audit_count().await.unwrap();
    assert_eq!(count, before + 600, "{backend}: a wide batch");
    // The duplicate comes last, after full statements and messages of new rows.
    let mut clash: Vec<_> = (0..300)
        .map(|i| audit_record("dee", START + 8_000 + i))
        .collect();
    clash.push(many[599].clone());
    assert!(
        store.append_audit(&clash).await.is_err(),
        "{backend}: a duplicate id fails its batch"
    );
    let count = store.audit_count().await.unwrap();
    assert_eq!(
        count,
        before + 600,
        "{backend}: nothing of a failed batch stays"
    );
    // The writer goes on after a failed batch.
    store.append_audit(&clash[..300]).await.unwrap();
    let count = store.audit_count().await.unwrap();
    assert_eq!(count, before + 900, "{backend}: the next batch is written");
}

#[tokio::test]
async fn the_store_contract_holds_on_every_backend() {
    for db in TestDb::all().await {
        let clock = Arc::new(ManualClock::new(START));
        let store = db.store(clock.clone()).await;
        session_contract(&store, &clock, db.name).await;
        concurrent_writers(&store, db.name).await;
        events_contract(&store, &clock, db.name).await;
        audit_contract(&store, db.name).await;
        assert!(store.ping().await);
        assert!(SessionRepo::reachable(&store).await, "{}", db.name);
        // Migrating twice is a no-op (replicas start together).
        store.migrate().await.unwrap();
        db.cleanup().await;
    }
}
