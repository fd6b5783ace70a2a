//! The authorization server's store contract (`store::OAuthRepo`): signing
//! keys, registered clients, grants, single-use codes and rotating refresh
//! tokens, run on SQLite and, when one answers, PostgreSQL.

use std::{sync::Arc, time::Duration};

use teamgate::auth::OwnIssuer;
use teamgate::store::{
    Clock, ManualClock, OAuthClientRow, OAuthCodeRow, OAuthGrantRow, OAuthKeyRow, OAuthRepo, Store,
    Taken,
};

use crate::databases::TestDb;

const START: i64 = 1_800_000_000_000;

fn key(kid: &str, created_ms: i64) -> OAuthKeyRow {
    OAuthKeyRow {
        kid: kid.into(),
        private_pkcs8: "cHJpdmF0ZQ==".into(),
        public_x: "x".into(),
        public_y: "y".into(),
        created_ms,
    }
}

fn grant(id: &str, member: &str, now: i64) -> OAuthGrantRow {
    OAuthGrantRow {
        id: id.into(),
        client_id: "tgc_1".into(),
        client_name: "Client".into(),
        member: member.into(),
        scopes: vec!["tools:*".into()],
        created_ms: now,
        last_used_ms: now,
        revoked_ms: None,
    }
}

fn code(hash: &str, grant: &str, expires_ms: i64) -> OAuthCodeRow {
    OAuthCodeRow {
        code_hash: hash.into(),
        grant_id: grant.into(),
        redirect_uri: "http://127.0.0.1/cb".into(),
        challenge: "c".repeat(43),
        expires_ms,
    }
}

async fn contract(store: &Store, clock: &ManualClock, backend: &str) {
    let now = clock.now_ms();
    // Keys: newest first, older ones purged.
    store
        .add_oauth_key(&key("old", now - 10_000))
        .await
        .unwrap();
    store.add_oauth_key(&key("new", now)).await.unwrap();
    let kids: Vec<String> = store
        .oauth_keys(0)
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.kid)
        .collect();
    assert_eq!(kids, ["new", "old"], "{backend}");
    assert_eq!(
        store.oauth_keys(now - 5_000).await.unwrap().len(),
        1,
        "{backend}"
    );
    assert_eq!(
        store.purge_oauth_keys(now - 5_000).await.unwrap(),
        1,
        "{backend}"
    );

    // Clients.
    let client = OAuthClientRow {
        client_id: "tgc_1".into(),
        name: "Client".into(),
        redirect_uris: vec!["http://127.0.0.1/cb".into()],
        created_ms: now,
    };
    store.add_oauth_client(&client).await.unwrap();
    assert_eq!(
        store.oauth_client("tgc_1").await.unwrap(),
        Some(client),
        "{backend}"
    );
    assert_eq!(
        store.oauth_client("tgc_2").await.unwrap(),
        None,
        "{backend}"
    );

    // A code: taken once; again, it names its grant.
    store
        .add_oauth_grant(&grant("g1", "ann", now), &code("h1", "g1", now + 60_000))
        .await
        .unwrap();
    assert!(
        matches!(store.take_oauth_code("h1").await.unwrap(), Taken::Fresh(c) if c.grant_id == "g1"),
        "{backend}"
    );
    assert_eq!(
        store.take_oauth_code("h1").await.unwrap(),
        Taken::Reused("g1".into()),
        "{backend}"
    );
    assert_eq!(
        store.take_oauth_code("nope").await.unwrap(),
        Taken::Unknown,
        "{backend}"
    );
    // An expired code is unknown.
    store
        .add_oauth_grant(&grant("g2", "bob", now), &code("h2", "g2", now + 1_000))
        .await
        .unwrap();
    clock.advance(2_000);
    assert_eq!(
        store.take_oauth_code("h2").await.unwrap(),
        Taken::Unknown,
        "{backend}"
    );

    // Refresh tokens rotate once.
    let later = clock.now_ms();
    store
        .add_oauth_refresh("r1", "g1", later + 60_000)
        .await
        .unwrap();
    assert_eq!(
        store.oauth_refresh_grant("r1").await.unwrap().as_deref(),
        Some("g1")
    );
    assert_eq!(
        store.take_oauth_refresh("r1").await.unwrap(),
        Taken::Fresh("g1".into()),
        "{backend}"
    );
    assert_eq!(
        store.take_oauth_refresh("r1").await.unwrap(),
        Taken::Reused("g1".into()),
        "{backend}"
    );
    assert_eq!(
        store.take_oauth_refresh("r2").await.unwrap(),
        Taken::Unknown,
        "{backend}"
    );

    // Grants: listed live, revoked by their member (or anyone's by an admin).
    assert_eq!(
        store.oauth_grants(Some("ann")).await.unwrap().len(),
        1,
        "{backend}"
    );
    assert_eq!(
        store.oauth_grants(None).await.unwrap().len(),
        2,
        "{backend}"
    );
    assert!(
        !store.revoke_oauth_grant("g1", Some("bob")).await.unwrap(),
        "{backend}: not bob's"
    );
    assert!(
        store.revoke_oauth_grant("g1", Some("ann")).await.unwrap(),
        "{backend}"
    );
    assert!(
        !store.revoke_oauth_grant("g1", None).await.unwrap(),
        "{backend}: once"
    );
    assert!(
        store
            .oauth_grant("g1")
            .await
            .unwrap()
            .unwrap()
            .revoked_ms
            .is_some(),
        "{backend}"
    );
    assert!(
        store.revoke_oauth_grant("g2", None).await.unwrap(),
        "{backend}"
    );
    assert!(
        store.oauth_grants(None).await.unwrap().is_empty(),
        "{backend}"
    );
    // A day after their revocation the grants go, with their codes and refresh tokens.
    assert_eq!(
        store.purge_oauth().await.unwrap(),
        0,
        "{backend}: too early"
    );
    clock.advance(2 * 24 * 3600 * 1000);
    assert_eq!(
        store.purge_oauth().await.unwrap(),
        5,
        "{backend}: 2 codes, 1 refresh, 2 grants"
    );
    assert!(
        store.oauth_grant("g1").await.unwrap().is_none(),
        "{backend}"
    );
    // A registered client without a grant goes after a week.
    assert_eq!(store.oauth_clients_since(0).await.unwrap(), 1, "{backend}");
    // Unused and no longer young, it no longer counts against the cap.
    let fresh = store.now_ms() - 600_000;
    let counted = store.oauth_clients_counted(0, fresh).await.unwrap();
    assert_eq!(counted, 0, "{backend}");
    assert_eq!(
        store.oauth_clients_counted(0, 0).await.unwrap(),
        1,
        "{backend}"
    );
    clock.advance(7 * 24 * 3600 * 1000);
    assert_eq!(
        store.purge_oauth().await.unwrap(),
        1,
        "{backend}: the unused client"
    );
    assert_eq!(store.oauth_clients_since(0).await.unwrap(), 0, "{backend}");
}

#[tokio::test]
async fn the_oauth_store_contract_holds_on_every_backend() {
    for db in TestDb::all().await {
        let clock = Arc::new(ManualClock::new(START));
        let store = db.store(clock.clone()).await;
        contract(&store, &clock, db.name).await;
        db.cleanup().await;
    }
}

/// Two replicas' issuers on one store: one key set, rotated after
/// `key_rotation`, the old key published until its last token expired, and
/// both replicas signing with the same key.
async fn keys_contract(store: &Store, clock: &ManualClock, backend: &str) {
    const TTL: Duration = Duration::from_secs(600);
    const ROTATION: Duration = Duration::from_secs(3600);
    let issuer = "https://mcp.example.com/mcp";
    let one = OwnIssuer::new(store.clone(), issuer, TTL, ROTATION);
    let two = OwnIssuer::new(store.clone(), issuer, TTL, ROTATION);
    let now = clock.now_ms();
    store
        .add_oauth_grant(&grant("gk", "ann", now), &code("hk", "gk", now + 60_000))
        .await
        .unwrap();
    let signed = one
        .sign("ann", &["tools:*".into()], "gk", "tgc_1")
        .await
        .unwrap();
    let kid = |token: &str| jsonwebtoken::decode_header(token).unwrap().kid.unwrap();
    let first = kid(&signed.token);
    assert_eq!(
        kid(&two.sign("ann", &[], "gk", "tgc_1").await.unwrap().token),
        first,
        "{backend}: shared"
    );
    // The claims (verification on the other replica is oauth_flow.rs's: nbf and exp are read
    // against real time, which this manual clock is ahead of).
    let claims = jsonwebtoken::dangerous::insecure_decode::<serde_json::Value>(&signed.token)
        .unwrap()
        .claims;
    assert_eq!(
        (claims["aud"].as_str(), claims["member"].as_str()),
        (Some(issuer), Some("ann")),
        "{backend}"
    );
    clock.advance(ROTATION.as_millis() as i64 + 1);
    let second = kid(&one.sign("ann", &[], "gk", "tgc_1").await.unwrap().token);
    assert_ne!(second, first, "{backend}: rotated");
    let published = |set: serde_json::Value| -> Vec<String> {
        set["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap().to_owned())
            .collect()
    };
    let set = published(two.jwks().await.unwrap());
    assert!(
        set.contains(&first) && set.contains(&second),
        "{backend}: both published: {set:?}"
    );
    clock.advance(ROTATION.as_millis() as i64 + TTL.as_millis() as i64);
    // The first key's tokens have all expired: a new key is made and the first one goes.
    let third = kid(&two.sign("ann", &[], "gk", "tgc_1").await.unwrap().token);
    let set = published(one.jwks().await.unwrap());
    assert!(
        !set.contains(&first) && set.contains(&third),
        "{backend}: {set:?}"
    );
}

#[tokio::test]
async fn oauth_signing_keys_are_shared_and_rotated_on_every_backend() {
    for db in TestDb::all().await {
        let clock = Arc::new(ManualClock::new(START));
        let store = db.store(clock.clone()).await;
        keys_contract(&store, &clock, db.name).await;
        db.cleanup().await;
    }
}
