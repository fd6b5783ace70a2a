//! The portal's store contract (`store::PortalSessions`, a member's own
//! token revocation, the audit search with its address column), run on
//! SQLite and, when one answers, PostgreSQL.

use std::sync::Arc;

use teamgate::store::{
    AuditFilter, AuditRecord, Clock, ManualClock, PortalSession, PortalSessions, SignInClaims,
    Store, TokenRow, record_id,
};

use crate::databases::TestDb;

const START: i64 = 1_800_000_000_000;
const IDLE: i64 = 60_000;

fn session(id_hash: &str, member: &str, now: i64) -> PortalSession {
    PortalSession {
        id_hash: id_hash.into(),
        member: member.into(),
        groups: vec!["dev".into()],
        claims: SignInClaims {
            values: [("hd".to_owned(), vec!["example.com".to_owned()])].into(),
            names: vec!["hd".into(), "sub".into()],
            distributed: Vec::new(),
        },
        csrf: "c".repeat(64),
        created_ms: now,
        last_seen_ms: now,
        expires_ms: now + 10 * IDLE,
    }
}

async fn sessions_contract(store: &Store, clock: &ManualClock, backend: &str) {
    let now = clock.now_ms();
    store
        .create_portal_session(&session("pre", "", now), Some(("st", "ver", "non")))
        .await
        .unwrap();
    assert!(
        store.take_login("pre", "wrong").await.unwrap().is_none(),
        "{backend}"
    );
    let taken = store.take_login("pre", "st").await.unwrap().expect(backend);
    assert_eq!(
        (taken.verifier.as_str(), taken.nonce.as_str()),
        ("ver", "non")
    );
    assert!(
        store.take_login("pre", "st").await.unwrap().is_none(),
        "{backend}: once"
    );

    store
        .create_portal_session(&session("ann", "ann", now), None)
        .await
        .unwrap();
    let found = store
        .portal_session("ann", IDLE)
        .await
        .unwrap()
        .expect(backend);
    assert_eq!(
        (found.member.as_str(), found.groups.clone()),
        ("ann", vec!["dev".to_owned()])
    );
    // The claims read at sign-in come back as kept (Google's hd for a grant).
    assert_eq!(found.claims, session("ann", "ann", now).claims, "{backend}");
    // Used within the idle time, it lives on; past it, it is gone.
    clock.advance(IDLE - 1);
    assert!(
        store.portal_session("ann", IDLE).await.unwrap().is_some(),
        "{backend}"
    );
    clock.advance(IDLE + 1);
    assert!(
        store.portal_session("ann", IDLE).await.unwrap().is_none(),
        "{backend}: idle"
    );
    // The absolute expiry holds however often it is used.
    let now = clock.now_ms();
    store
        .create_portal_session(&session("bob", "bob", now), None)
        .await
        .unwrap();
    for _ in 0..11 {
        clock.advance(IDLE - 1);
        store.portal_session("bob", IDLE).await.unwrap();
    }
    assert!(
        store.portal_session("bob", IDLE).await.unwrap().is_none(),
        "{backend}: absolute"
    );
    assert!(
        store.purge_portal_sessions(IDLE).await.unwrap() >= 2,
        "{backend}"
    );
    let now = clock.now_ms();
    store
        .create_portal_session(&session("cat", "cat", now), None)
        .await
        .unwrap();
    assert!(store.end_portal_session("cat").await.unwrap(), "{backend}");
    assert!(
        store.portal_session("cat", IDLE).await.unwrap().is_none(),
        "{backend}"
    );
}

async fn ownership_contract(store: &Store, clock: &ManualClock, backend: &str) {
    let token = TokenRow {
        id: "t-ann".into(),
        user_name: "ann".into(),
        label: "laptop".into(),
        scopes: vec!["tools:*".into()],
        secret_hash: "h".into(),
        created_ms: clock.now_ms(),
        expires_ms: None,
        last_used_ms: None,
        revoked_ms: None,
    };
    store.insert_token(&token).await.unwrap();
    assert!(
        !store.revoke_own_token("t-ann", "bob").await.unwrap(),
        "{backend}"
    );
    assert!(
        store
            .token("t-ann")
            .await
            .unwrap()
            .unwrap()
            .revoked_ms
            .is_none()
    );
    assert!(
        store.revoke_own_token("t-ann", "ann").await.unwrap(),
        "{backend}"
    );
    assert!(
        !store.revoke_own_token("t-ann", "ann").await.unwrap(),
        "{backend}: once"
    );
}

async fn audit_search_contract(store: &Store, clock: &ManualClock, backend: &str) {
    let at = clock.now_ms();
    let record = |user: &str, target: &str, outcome: &str, at_ms: i64| AuditRecord {
        id: record_id(at_ms),
        at_ms,
        user: user.into(),
        target: target.into(),
        outcome: outcome.into(),
        address: "192.0.2.7".into(),
        token_id: String::new(),
        issuer: String::new(),
        subject: String::new(),
        session_id: String::new(),
        protocol_version: String::new(),
        method: "tools/call".into(),
        args_digest: String::new(),
        latency_ms: 1,
        trace_id: String::new(),
        upstream: String::new(),
        credential: String::new(),
        endpoint: String::new(),
    };
    store
        .append_audit(&[
            record("ann", "echo", "ok", at),
            record("ann", "deploy", "denied", at + 1),
            record("bob", "echo", "ok", at + 2),
        ])
        .await
        .unwrap();
    let search = |user: Option<&str>, target: Option<&str>, outcome: Option<&str>| AuditFilter {
        user: user.map(str::to_owned),
        target: target.map(str::to_owned),
        outcome: outcome.map(str::to_owned),
        since_ms: at,
        until_ms: None,
        limit: 100,
    };
    let found = store
        .audit_search(&search(Some("ann"), None, None))
        .await
        .unwrap();
    assert_eq!(found.len(), 2, "{backend}");
    assert_eq!(found[0].target, "deploy", "{backend}: newest first");
    assert_eq!(found[0].address, "192.0.2.7", "{backend}");
    let found = store
        .audit_search(&search(None, Some("echo"), Some("ok")))
        .await
        .unwrap();
    assert_eq!(found.len(), 2, "{backend}");
    let mut until = search(None, None, None);
    until.until_ms = Some(at + 1);
    assert_eq!(
        store.audit_search(&until).await.unwrap().len(),
        1,
        "{backend}"
    );
}

#[tokio::test]
async fn the_portal_store_contract_holds_on_every_backend() {
    for db in TestDb::all().await {
        let clock = Arc::new(ManualClock::new(START));
        let store = db.store(clock.clone()).await;
        sessions_contract(&store, &clock, db.name).await;
        ownership_contract(&store, &clock, db.name).await;
        audit_search_contract(&store, &clock, db.name).await;
        db.cleanup().await;
    }
}
