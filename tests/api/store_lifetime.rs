//! `store.connection_lifetime`: each of the store's connections is replaced
//! once it is that old, so what a load left in it (a SQLite connection's
//! page cache and thread) does not stay, and requests go on being served;
//! `/metrics` shows the connections and how many were opened. On every
//! backend.

use std::time::{Duration, Instant};

use serde_json::json;
use teamgate::config::{DatabaseUrl, Secret};

use crate::{
    config::load_snippet,
    databases::TestDb,
    helpers::{TestApp, audit_until, is_simple_text, spawn_app_with},
    telemetry::{sample, scrape},
};

/// What `/metrics` reports of the store's connections: (in use, idle,
/// opened since the start).
async fn reported(app: &TestApp) -> (f64, f64, f64) {
    let (status, text) = scrape(&app.base(), None).await;
    assert_eq!(status, 200, "{text}");
    let value = |name: &str, labels: &[&str]| {
        sample(&text, name, labels).unwrap_or_else(|| panic!("no {name} {labels:?}: {text}"))
    };
    (
        value("teamgate_store_connections", &["state=\"in_use\""]),
        value("teamgate_store_connections", &["state=\"idle\""]),
        value("teamgate_store_connections_opened_total", &[]),
    )
}

#[tokio::test]
async fn store_connections_are_replaced_past_their_lifetime_and_calls_go_on() {
    for db in TestDb::all().await {
        let url = db.url.clone();
        let app = spawn_app_with(|c| {
            c.store.url = DatabaseUrl::new(url);
            c.store.connection_lifetime = Duration::from_secs(1);
            // Replicas on PostgreSQL share the key that seals requestState.
            c.mcp.request_state_keys =
                vec![Secret::new("store-lifetime-test-key-0123456789abcdef")];
        })
        .await;
        let session = app.initialize("2025-11-25").await;
        let call = json!({"name": "test_simple_text"});
        let reply = app
            .session_call(&session, 1, "tools/call", call.clone())
            .await;
        assert!(is_simple_text(&reply), "{}: {reply}", db.name);
        // The call's audit row is written after its reply, on PostgreSQL
        // over the audit writers' pool: once it is, no connection of that
        // pool is still being opened while the figures are read.
        let written = audit_until(&app.store, None, |records| !records.is_empty()).await;
        assert!(!written.is_empty(), "{}: no audit row", db.name);
        let (in_use, idle, opened) = reported(&app).await;
        assert!(
            in_use + idle >= 1.0 && opened >= in_use + idle,
            "{}",
            db.name
        );
        let held = app.store.connections();
        assert_eq!(f64::from(held.open), in_use + idle, "{}", db.name);

        // Every connection open now is replaced within a few of the pool's
        // looks (one a second): more are opened than were open.
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut id = 2;
        while app.store.connections().opened < held.opened + u64::from(held.open) {
            assert!(
                Instant::now() < deadline,
                "{}: not replaced: {:?} after {held:?}",
                db.name,
                app.store.connections()
            );
            let reply = app
                .session_call(&session, id, "tools/call", call.clone())
                .await;
            assert!(is_simple_text(&reply), "{}: {reply}", db.name);
            id += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let (_, _, now_opened) = reported(&app).await;
        assert!(
            now_opened > opened,
            "{}: {now_opened} after {opened}",
            db.name
        );
        // The pools stay within their sizes (4 readers and a writer on
        // SQLite; 16 on PostgreSQL and the audit writers' 4).
        assert!(app.store.connections().open <= 20, "{}", db.name);
        app.stop().await;
        db.cleanup().await;
    }
}

#[test]
fn a_lifetime_under_a_second_is_refused_naming_the_key() {
    // The pool looks at its connections every lifetime: a tiny one would
    // have it spin.
    let error = load_snippet("[store]\nconnection_lifetime = \"10ms\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("store.connection_lifetime") && error.contains("at least 1s"),
        "{error}"
    );
    assert!(load_snippet("[store]\nconnection_lifetime = \"1s\"\n").is_ok());
}
