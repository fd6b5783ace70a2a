//! `[[sources.openapi]]` with a member's own credential in a header (issue
//! 62): `Authorization = "Bearer ${user:tracker_token}"` sends each member's
//! own value to the service (which echoes what it got, scrubbed on the way
//! back), and a member without one is sent to the Connections page.

use std::sync::Arc;

use serde_json::json;
use teamgate::store::{Store, SystemClock, Vault};

use crate::{
    binary,
    openapi::service,
    sdk::{self, call, text},
    sec44_upreg::python,
};

const KEY: &str = "openapi-member-test-key-of-32-characters!";

#[tokio::test]
async fn each_member_sends_their_own_credential_to_the_service() {
    let Some(python) = python() else { return };
    let service = service(&python);
    let base = &service.base;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("teamgate.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[tools]
http_allowlist = ["{base}/"]
[credentials]
keys = ["{KEY}"]
[[credentials.slots]]
name = "tracker_token"
description = "your tracker API token"
[[sources.openapi]]
name = "tracker"
spec = "{base}/openapi.json"
include = ["whoami"]
headers = {{ Authorization = "Bearer ${{user:tracker_token}}" }}
"#
        ),
    )
    .unwrap();
    let served = binary::serve(&config, &[]);
    let store = Store::connect(&served.store_url, Arc::new(SystemClock))
        .await
        .unwrap();
    let alices = "alice-tracker-token-7d1c3e9a";
    Vault::new(store, &[KEY])
        .set("alice", "tracker_token", alices)
        .await
        .unwrap();

    let (alice, _) = sdk::connect_as(&served.url, Some(&served.token("alice", &[])), None).await;
    let who = call(&alice, "tracker_whoami", json!({})).await;
    assert_eq!(who["isError"], false, "{who}");
    // Sent (the service got a bearer), and scrubbed on the way back.
    assert_eq!(
        who["structuredContent"]["authorization"], "Bearer [redacted]",
        "{who}"
    );
    assert!(!who.to_string().contains(alices), "{who}");
    alice.cancel().await.unwrap();

    let (bob, _) = sdk::connect_as(&served.url, Some(&served.token("bob", &[])), None).await;
    let unset = call(&bob, "tracker_whoami", json!({})).await;
    assert_eq!(unset["isError"], true, "{unset}");
    assert!(text(&unset).contains("tracker_token"), "{unset}");
    assert!(text(&unset).contains("/portal/connections"), "{unset}");
    bob.cancel().await.unwrap();
}
