//! The credential rows' contract (`store::CredentialRepo`) and the vault
//! over it (`store::Vault`: sealed at rest, bound to owner and slot, key
//! rotation), run on SQLite and, when one answers, PostgreSQL.

use std::sync::Arc;

use teamgate::store::{CredentialRepo, ManualClock, Store, StoreError, Vault};

use crate::databases::TestDb;

const START: i64 = 1_800_000_000_000;
const OLD_KEY: &str = "old-key-old-key-old-key-old-key-0001";
const NEW_KEY: &str = "new-key-new-key-new-key-new-key-0002";

async fn rows_contract(store: &Store, backend: &str) {
    let vault = Vault::new(store.clone(), &[OLD_KEY]);
    assert_eq!(vault.get("ann", "github").await.unwrap(), None, "{backend}");
    vault.set("ann", "github", "ann-secret-1").await.unwrap();
    vault.set("bob", "github", "bob-secret-1").await.unwrap();
    vault.set("ann", "jira", "ann-jira-1").await.unwrap();
    vault.set("ann", "github", "ann-secret-2").await.unwrap();
    assert_eq!(
        vault.get("ann", "github").await.unwrap().as_deref(),
        Some("ann-secret-2"),
        "{backend}: replaced"
    );
    assert_eq!(
        vault.get("bob", "github").await.unwrap().as_deref(),
        Some("bob-secret-1")
    );
    let slots: Vec<String> = vault
        .slots("ann")
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.0)
        .collect();
    assert_eq!(slots, ["github", "jira"], "{backend}: own slots, in order");
    assert_eq!(vault.slots("carl").await.unwrap(), vec![]);
    // A slot's holders: names only, most recently set first (then by name), at most `limit`.
    let holders = vault.holders("github", 10).await.unwrap();
    assert_eq!(holders, ["ann", "bob"], "{backend}: holders");
    assert_eq!(vault.holders("github", 1).await.unwrap(), ["ann"]);
    assert_eq!(vault.holders("jira", 10).await.unwrap(), ["ann"]);
    assert!(vault.holders("none", 10).await.unwrap().is_empty());

    // At rest the value is not there in the clear.
    let row = store.credential("ann", "github").await.unwrap().unwrap();
    assert!(!row.ciphertext.contains("ann-secret-2") && !row.nonce.is_empty());
    assert_eq!(row.updated_at, START);

    // A row moved to another member does not open (owner is associated data).
    store.put_credential("carl", "github", &row).await.unwrap();
    assert!(matches!(
        vault.get("carl", "github").await,
        Err(StoreError::Corrupt(_))
    ));
    assert!(vault.delete("carl", "github").await.unwrap());
    assert!(
        !vault.delete("carl", "github").await.unwrap(),
        "{backend}: once"
    );

    // Rotation: the new key seals, the old still opens old rows.
    let rotated = Vault::new(store.clone(), &[NEW_KEY, OLD_KEY]);
    assert_eq!(
        rotated.get("ann", "github").await.unwrap().as_deref(),
        Some("ann-secret-2")
    );
    rotated.set("bob", "github", "bob-secret-2").await.unwrap();
    let resealed = store.credential("bob", "github").await.unwrap().unwrap();
    assert_ne!(
        resealed.key_id, row.key_id,
        "{backend}: sealed by the first key"
    );
    let only_new = Vault::new(store.clone(), &[NEW_KEY]);
    assert_eq!(
        only_new.get("bob", "github").await.unwrap().as_deref(),
        Some("bob-secret-2")
    );
    let old_row = only_new.get("ann", "github").await;
    let message = old_row.unwrap_err().to_string();
    assert!(
        message.contains("no longer in credentials.keys"),
        "{message}"
    );
    assert!(!message.contains("ann-secret"), "{message}");

    let keyless = Vault::new(store.clone(), &[]);
    assert!(matches!(
        keyless.set("ann", "x", "value").await,
        Err(StoreError::NoCredentialKey)
    ));
}

#[tokio::test]
async fn the_credential_store_contract_holds_on_every_backend() {
    for db in TestDb::all().await {
        let clock = Arc::new(ManualClock::new(START));
        let store = db.store(clock.clone()).await;
        rows_contract(&store, db.name).await;
        db.cleanup().await;
    }
}
