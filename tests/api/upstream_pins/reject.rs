//! Issue 65 part 3: a changed definition rejected stays withheld, awaits
//! nothing, and is not proposed again; a different one is. The store's
//! contract on both backends, and `teamgate upstreams reject`.

use std::sync::Arc;

use teamgate::store::{ManualClock, PinRepo, PinRow};

use crate::databases::TestDb;

async fn row(store: &teamgate::store::Store, tool: &str) -> PinRow {
    let pins = store.pins(Some("up")).await.unwrap();
    pins.into_iter().find(|r| r.tool == tool).expect("pinned")
}

#[tokio::test]
async fn the_pin_store_keeps_a_rejected_definition_withheld_and_proposes_a_different_one() {
    for db in TestDb::all().await {
        let backend = db.name;
        let store = db.store(Arc::new(ManualClock::new(1_000))).await;
        store.pin("up", "t", "h1", "{\"d\":1}").await.unwrap();
        store.pin("up", "u", "hu", "{}").await.unwrap();
        assert!(
            !store.reject("up", "t").await.unwrap(),
            "{backend}: nothing pending, nothing to reject"
        );
        store
            .set_pending("up", "t", Some(("h2", "{\"d\":2}")))
            .await
            .unwrap();
        assert!(row(&store, "t").await.awaiting(), "{backend}");

        assert!(store.reject("up", "t").await.unwrap(), "{backend}");
        let t = row(&store, "t").await;
        assert_eq!(t.rejected.as_deref(), Some("h2"), "{backend}");
        assert_eq!(t.hash, "h1", "{backend}: the pin stays");
        assert!(t.pending.is_some(), "{backend}: withheld still");
        assert!(!t.awaiting() && t.is_rejected(), "{backend}: {t:?}");
        // Approving everything awaiting leaves a rejected definition alone.
        store
            .set_pending("up", "u", Some(("hu2", "{\"u\":2}")))
            .await
            .unwrap();
        assert_eq!(store.approve("up", None).await.unwrap(), ["u"], "{backend}");
        assert_eq!(row(&store, "t").await.hash, "h1", "{backend}");

        // Back to the pinned one, then the rejected one again: rejected still.
        store.set_pending("up", "t", None).await.unwrap();
        store
            .set_pending("up", "t", Some(("h2", "{\"d\":2}")))
            .await
            .unwrap();
        assert!(row(&store, "t").await.is_rejected(), "{backend}");
        // A different definition awaits a decision again.
        store
            .set_pending("up", "t", Some(("h3", "{\"d\":3}")))
            .await
            .unwrap();
        let t = row(&store, "t").await;
        assert!(t.awaiting() && !t.is_rejected(), "{backend}: {t:?}");

        // Rejected, then approved anyway by name: pinned, nothing rejected.
        assert!(store.reject("up", "t").await.unwrap());
        assert_eq!(store.approve("up", Some("t")).await.unwrap(), ["t"]);
        let t = row(&store, "t").await;
        assert_eq!(
            (t.hash.as_str(), t.definition.as_str()),
            ("h3", "{\"d\":3}")
        );
        assert!(
            t.pending.is_none() && t.rejected.is_none(),
            "{backend}: {t:?}"
        );
        db.cleanup().await;
    }
}

/// `teamgate upstreams reject NAME TOOL` on the store: rejected, audited,
/// no longer awaiting in `list --json`; refused when nothing is pending.
#[tokio::test]
async fn the_cli_rejects_a_changed_definition() {
    let db = TestDb::sqlite();
    let store = db.store(Arc::new(ManualClock::new(1_000))).await;
    store
        .pin("py", "describe", "h1", "{\"d\":1}")
        .await
        .unwrap();
    store.pin("py", "headers", "hh", "{}").await.unwrap();
    store
        .set_pending("py", "describe", Some(("h2", "{\"d\":2}")))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pins.toml");
    std::fs::write(
        &config,
        "[[upstreams]]\nname = \"py\"\ncommand = \"true\"\n",
    )
    .unwrap();

    let (ok, _, err) = super::cli(&config, &db.url, &["reject", "py", "headers"]).await;
    assert!(!ok && err.contains("no changed definition"), "{err}");
    let (ok, out, err) = super::cli(&config, &db.url, &["reject", "py", "describe"]).await;
    assert!(ok, "{err}");
    assert!(out.contains("rejected py tool describe"), "{out}");
    assert!(row_of(&store, "py", "describe").await.is_rejected());
    let (_, out, _) = super::cli(&config, &db.url, &["list", "--json"]).await;
    let shown: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown[0]["awaiting"], serde_json::json!([]), "{shown}");
    assert_eq!(
        shown[0]["rejected"],
        serde_json::json!(["describe"]),
        "{shown}"
    );
    let trail = store.audit_tail(None, 0, 10).await.unwrap();
    let record = trail.iter().find(|r| r.method == "upstreams/reject");
    assert_eq!(record.map(|r| r.target.as_str()), Some("py/describe"));
    db.cleanup().await;
}

async fn row_of(store: &teamgate::store::Store, upstream: &str, tool: &str) -> PinRow {
    let pins = store.pins(Some(upstream)).await.unwrap();
    pins.into_iter().find(|r| r.tool == tool).expect("pinned")
}
