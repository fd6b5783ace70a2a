//! One member name, two identities (issue 30, item 4): an OAuth user is not
//! the personal-token user of the same name unless configured to be.

use serde_json::{Value, json};

use super::{Fixture, legacy, open_session};
use crate::{helpers::audit_until, idp::Idp};

/// An issuer served by `idp` whose users are named by `preferred_username`,
/// with `extra` keys of `[[auth.oauth.issuers]]`.
pub(super) fn issuer(idp: &Idp, extra: Value) -> teamgate::config::IssuerConfig {
    let mut config =
        json!({"issuer": idp.issuer, "algorithms": ["ES256"], "user_claim": "preferred_username"});
    for (key, value) in extra.as_object().unwrap() {
        config[key] = value.clone();
    }
    serde_json::from_value(config).unwrap()
}

#[tokio::test]
async fn an_oauth_user_is_not_the_personal_token_user_of_the_same_name() {
    let idp = Idp::start().await;
    let trusted = issuer(&idp, json!({}));
    let fx = Fixture::start_with(move |c| c.auth.oauth.issuers = vec![trusted]).await;
    let app = &fx.app;
    let alice = fx.token("alice", &["*"]).await;
    let hers = open_session(app, &alice).await;
    let claims = idp.claims(&app.url, "alice", "tools:* prompts:* resources:read");
    let impostor = idp.sign(&claims);

    // Alice's session is another member's to the OAuth user named alice.
    let (status, message) = legacy(app, &impostor, &hers, 2, "tools/list", json!({})).await;
    assert_eq!(status, 404, "{message}");
    let (status, message) = legacy(
        app,
        &impostor,
        &hers,
        3,
        "tools/call",
        json!({"name": "teamgate_info"}),
    )
    .await;
    assert_eq!(status, 404, "{message}");
    let ended = app
        .client
        .delete(&app.url)
        .header("authorization", format!("Bearer {impostor}"))
        .header("mcp-session-id", &hers)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 404);
    let (status, message) = legacy(app, &alice, &hers, 4, "tools/list", json!({})).await;
    assert_eq!(status, 200, "alice's session lives on: {message}");

    // Its own session and audit records are its own, not alice's.
    let its = open_session(app, &impostor).await;
    let (_, info) = legacy(
        app,
        &impostor,
        &its,
        5,
        "tools/call",
        json!({"name": "teamgate_info"}),
    )
    .await;
    assert!(info["result"].is_object(), "{info}");
    let records = audit_until(&app.store, None, |r| {
        r.iter().any(|r| r.target == "teamgate_info")
    })
    .await;
    let call = records
        .iter()
        .find(|r| r.target == "teamgate_info")
        .expect("audited");
    assert_ne!(call.user, "alice", "{call:?}");
    assert!(
        call.user.contains("alice") && call.user.contains(&idp.issuer),
        "{call:?}"
    );
    assert!(
        app.store
            .audit_tail(Some("alice"), 0, 100)
            .await
            .unwrap()
            .iter()
            .all(|r| r.target != "teamgate_info")
    );
}

#[tokio::test]
async fn an_issuer_configured_without_prefix_names_the_same_member_on_purpose() {
    let idp = Idp::start().await;
    let merged = issuer(&idp, json!({"user_prefix": ""}));
    let fx = Fixture::start_with(move |c| c.auth.oauth.issuers = vec![merged]).await;
    let app = &fx.app;
    let alice = fx.token("alice", &["*"]).await;
    let hers = open_session(app, &alice).await;
    let claims = idp.claims(&app.url, "alice", "tools:* prompts:* resources:read");
    let same = idp.sign(&claims);
    let (status, message) = legacy(app, &same, &hers, 2, "tools/list", json!({})).await;
    assert_eq!(status, 200, "configured as the same member: {message}");
}

#[test]
fn a_personal_token_cannot_take_an_issuer_qualified_name() {
    let db = crate::databases::TestDb::sqlite();
    // The operator commands never create a store: `migrate` does.
    let migrated = std::process::Command::new(env!("CARGO_BIN_EXE_teamgate"))
        .arg("migrate")
        .env("TEAMGATE__STORE__URL", &db.url)
        .current_dir(crate::helpers::repo_path(""))
        .output()
        .unwrap();
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    let created = std::process::Command::new(env!("CARGO_BIN_EXE_teamgate"))
        .args([
            "token",
            "create",
            "--user",
            "https://login.example.com#alice",
        ])
        .env("TEAMGATE__STORE__URL", &db.url)
        .current_dir(crate::helpers::repo_path(""))
        .output()
        .unwrap();
    assert!(!created.status.success());
    let stderr = String::from_utf8_lossy(&created.stderr);
    assert!(stderr.contains("`#`"), "{stderr}");
    assert!(!String::from_utf8_lossy(&created.stdout).contains("tg_"));
}
