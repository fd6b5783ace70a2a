//! The approval store contract (`ApprovalRepo`), run unchanged on SQLite
//! and PostgreSQL, with the clock moved by hand for expiry.

use std::sync::Arc;

use teamgate::store::{ApprovalRepo, ApprovalRow, Decision, ManualClock, Store};

use crate::databases::TestDb;

const START: i64 = 1_800_000_000_000;
const WAIT: i64 = 30 * 60 * 1000;

fn row(id: &str, requester: &str, digest: &str, group: &str) -> ApprovalRow {
    ApprovalRow {
        id: id.into(),
        requester: requester.into(),
        tool: "deploy".into(),
        arguments: format!("{{\"service\":\"{digest}\"}}"),
        args_digest: digest.into(),
        group: group.into(),
        status: "pending".into(),
        decided_by: None,
        reason: None,
        created_ms: START,
        expires_ms: START + WAIT,
        decided_ms: None,
    }
}

async fn approval_contract(store: &Store, clock: &ManualClock, backend: &str) {
    for (id, requester, digest, group) in [
        ("a1", "eve", "d1", "leads"),
        ("a2", "eve", "d2", "leads"),
        ("a3", "ann", "d1", "ops"),
    ] {
        store
            .create_approval(&row(id, requester, digest, group))
            .await
            .unwrap();
    }
    let read = store.approval("a1").await.unwrap().unwrap();
    assert_eq!(read, row("a1", "eve", "d1", "leads"), "{backend}");
    assert_eq!(store.approval("nope").await.unwrap(), None, "{backend}");

    // A repeated call finds its own open request, nobody else's.
    let open = store.open_approval("eve", "deploy", "d1").await.unwrap();
    assert_eq!(open.map(|r| r.id), Some("a1".into()), "{backend}");
    assert_eq!(
        store.open_approval("fay", "deploy", "d1").await.unwrap(),
        None
    );
    assert_eq!(
        store.open_approval("eve", "other", "d1").await.unwrap(),
        None
    );

    // Never the requester's own decision; once only.
    let own = store
        .decide_approval("a1", "eve", true, None)
        .await
        .unwrap();
    assert_eq!(own, Decision::OwnRequest, "{backend}");
    clock.advance(1000);
    let approved = store
        .decide_approval("a1", "fay", true, Some("ok"))
        .await
        .unwrap();
    assert_eq!(approved, Decision::Recorded, "{backend}");
    let again = store
        .decide_approval("a1", "bob", false, None)
        .await
        .unwrap();
    assert_eq!(again, Decision::Closed("approved".into()), "{backend}");
    let decided = store.approval("a1").await.unwrap().unwrap();
    assert_eq!(decided.status, "approved", "{backend}");
    assert_eq!(decided.decided_by.as_deref(), Some("fay"), "{backend}");
    assert_eq!(decided.reason.as_deref(), Some("ok"), "{backend}");
    assert_eq!(decided.decided_ms, Some(START + 1000), "{backend}");
    let unknown = store
        .decide_approval("nope", "fay", true, None)
        .await
        .unwrap();
    assert_eq!(unknown, Decision::Unknown, "{backend}");

    // An approval still open (approved, unused) is found; used once.
    let open = store.open_approval("eve", "deploy", "d1").await.unwrap();
    assert_eq!(open.map(|r| r.status), Some("approved".into()), "{backend}");
    assert!(
        store
            .settle_approval("a1", "approved", "used")
            .await
            .unwrap()
    );
    assert!(
        !store
            .settle_approval("a1", "approved", "used")
            .await
            .unwrap(),
        "{backend}"
    );
    assert_eq!(
        store.open_approval("eve", "deploy", "d1").await.unwrap(),
        None
    );

    // A denial keeps its reason.
    let denied = store
        .decide_approval("a3", "bob", false, Some("freeze"))
        .await
        .unwrap();
    assert_eq!(denied, Decision::Recorded, "{backend}");
    assert_eq!(
        store.approval("a3").await.unwrap().unwrap().status,
        "denied"
    );

    // What a member sees: their groups' requests and their own, newest first.
    let mut later = row("a4", "bob", "d4", "ops");
    later.created_ms = START + 5;
    later.expires_ms = START + WAIT + 5;
    store.create_approval(&later).await.unwrap();
    let seen = |rows: Vec<ApprovalRow>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let fay = store
        .approvals_seen_by("fay", &["leads".into()], 50)
        .await
        .unwrap();
    assert_eq!(
        seen(fay),
        ["a2", "a1"],
        "{backend}: newest first, then by id"
    );
    let bob = store
        .approvals_seen_by("bob", &["ops".into()], 50)
        .await
        .unwrap();
    assert_eq!(seen(bob), ["a4", "a3"], "{backend}");
    let ann = store.approvals_seen_by("ann", &[], 1).await.unwrap();
    assert_eq!(
        seen(ann),
        ["a3"],
        "{backend}: own requests, at most the limit"
    );

    // Past its expiry a request takes no decision and is not joined.
    clock.advance(WAIT);
    let late = store
        .decide_approval("a2", "fay", true, None)
        .await
        .unwrap();
    assert_eq!(late, Decision::Closed("expired".into()), "{backend}");
    assert_eq!(
        store.open_approval("eve", "deploy", "d2").await.unwrap(),
        None
    );
    assert!(
        store
            .settle_approval("a2", "pending", "expired")
            .await
            .unwrap()
    );
    assert!(
        !store
            .settle_approval("a2", "pending", "withdrawn")
            .await
            .unwrap()
    );

    // The purge takes the rows expired before the horizon.
    assert_eq!(
        store.purge_approvals(START + WAIT + 1).await.unwrap(),
        3,
        "{backend}"
    );
    assert_eq!(
        store.purge_approvals(START + WAIT + 10).await.unwrap(),
        1,
        "{backend}"
    );
    assert_eq!(store.approval("a4").await.unwrap(), None, "{backend}");
}

#[tokio::test]
async fn the_approval_store_contract_holds_on_every_backend() {
    for db in TestDb::all().await {
        let clock = Arc::new(ManualClock::new(START));
        let store = db.store(clock.clone()).await;
        approval_contract(&store, &clock, db.name).await;
        db.cleanup().await;
    }
}
