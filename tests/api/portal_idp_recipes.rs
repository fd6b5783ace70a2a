//! docs/identity-providers.md's recipes, tested as written (issue 63 item
//! 1): each `[portal]` block is read from the page, the test provider sends
//! what that provider sends (`idp_oidc.mjs --profile`), members sign in over
//! HTTP and get the scopes the recipe's grants promise; a sign-in that
//! matches no grant is told which claim held what (Entra's groups overage,
//! a wrong `groups_claim`, an unverified e-mail).

use std::sync::Arc;

use teamgate::{
    config::{AuthMode, PortalConfig, Secret},
    store::SystemClock,
};

use crate::{
    helpers::{TestApp, repo_path, spawn_app_on},
    portal_idp::{Browser, Idp},
};

/// The `[portal]` of the first `toml` block after the heading `heading`.
fn recipe(heading: &str) -> PortalConfig {
    let page = std::fs::read_to_string(repo_path("docs/identity-providers.md")).unwrap();
    let after = page
        .split_once(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("the heading {heading}"))
        .1;
    let block = after.split_once("```toml\n").expect("a toml block").1;
    let block = block.split_once("```").expect("its end").0;
    let mut table: toml::Table = toml::from_str(block).expect("the recipe is TOML");
    table
        .remove("portal")
        .expect("[portal]")
        .try_into()
        .expect("a portal configuration")
}

/// A teamgate with `portal` (its issuer and client the test provider's)
/// and the provider sending `profile`'s claims.
async fn app(profile: &str, mut portal: PortalConfig) -> (TestApp, Idp) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let redirect = format!("http://{addr}/portal/callback");
    let idp = Idp::start_with(&redirect, &["--profile", profile]).await;
    portal.issuer = idp.issuer.clone();
    portal.client_id = "teamgate".into();
    portal.client_secret = Secret::new("portal-test-secret");
    let app = spawn_app_on(
        listener,
        move |c| {
            c.auth.mode = AuthMode::Required;
            c.server.public_url = format!("http://{addr}/mcp");
            c.portal = Some(portal);
            c.validate().expect("the recipe is a valid configuration");
        },
        Arc::new(SystemClock),
    )
    .await;
    (app, idp)
}

/// After signing in as `user`: the scopes offered for a new token, and the
/// no-scope explanation, if any.
async fn signed_in(app: &TestApp, user: &str) -> (Vec<String>, Option<String>) {
    let browser = Browser::sign_in(app, user).await;
    let html = browser
        .get(&format!("{}/portal/", app.base()))
        .await
        .text()
        .await
        .unwrap();
    let scopes = html
        .split("name=\"scope\" value=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect();
    let message = html
        .split_once("id=\"no-scopes\">")
        .and_then(|(_, rest)| rest.split_once("</p>"))
        .map(|(text, _)| text.replace("&quot;", "\"").replace("&#x27;", "'"));
    (scopes, message)
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

const DEVELOPER: &[&str] = &["prompts:*", "resources:read", "tools:*"];
const SUPPORT: &[&str] = &["resources:read", "tools:search_docs"];

/// Signs in as ann (developer) and bob (support), and as dan (no grant),
/// whose message must hold each of `told`.
async fn promised(profile: &str, heading: &str, told: &[&str]) {
    let (app, _idp) = app(profile, recipe(heading)).await;
    for (user, scopes) in [("ann", DEVELOPER), ("bob", SUPPORT)] {
        let (got, message) = signed_in(&app, user).await;
        assert_eq!(got, strings(scopes), "{profile}: {user}: {message:?}");
    }
    let (got, message) = signed_in(&app, "dan").await;
    assert!(got.is_empty(), "{profile}: dan gets nothing: {got:?}");
    let message = message.expect("dan is told why");
    for part in told {
        assert!(message.contains(part), "{profile}: {part:?} in {message}");
    }
}

#[tokio::test]
async fn keycloak_group_paths_grant_their_scopes() {
    let told = [r#"`groups` claim held no group names"#];
    promised("keycloak", "## Keycloak", &told).await;
}

#[tokio::test]
async fn okta_group_names_grant_their_scopes() {
    let told = [
        r#"`groups` claim held ["Everyone"] (1 value)"#,
        "the grants name: Engineering, Support",
    ];
    promised("okta", "## Okta", &told).await;
}

#[tokio::test]
async fn entra_group_object_ids_grant_their_scopes() {
    let told = ["`groups` claim held no group names"];
    promised("entra", "## Microsoft Entra ID", &told).await;
}

#[tokio::test]
async fn entra_app_roles_grant_their_scopes_despite_the_overage() {
    let heading = "### The groups overage: use app roles";
    let told = [
        "the ID token has no `roles` claim",
        "its claims are: ",
        "oid",
    ];
    promised("entra-overage", heading, &told).await;
}

#[tokio::test]
async fn entra_groups_overage_is_told_not_silently_empty() {
    let (app, _idp) = app("entra-overage", recipe("## Microsoft Entra ID")).await;
    let (got, message) = signed_in(&app, "ann").await;
    assert!(got.is_empty(), "{got:?}");
    let message = message.expect("ann is told why");
    for part in [
        "`groups` claim was not in the token",
        "_claim_names",
        "overage",
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    // The Graph endpoint the token points at is no value worth showing.
    assert!(!message.contains("graph.microsoft.com"), "{message}");
}

#[tokio::test]
async fn google_workspace_grants_by_hosted_domain_and_verified_email() {
    let (app, _idp) = app("google", recipe("## Google Workspace")).await;
    let (got, message) = signed_in(&app, "ann").await;
    assert_eq!(got, strings(DEVELOPER), "ann@example.com: {message:?}");
    // A consumer account: no hd, an e-mail elsewhere.
    let (got, message) = signed_in(&app, "bob").await;
    assert!(got.is_empty(), "{got:?}");
    let message = message.expect("bob is told why");
    assert!(
        !message.contains("`groups`"),
        "no groups expected: {message}"
    );
    for part in [
        "grants for hd = example.com found none: the ID token's `hd` is missing (its claims are: ",
        r#"grants for e-mail @example.org found none: the ID token's `email` held ["bob@gmail.com"]"#,
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    // dan@example.org, unverified: the domain's grant does not apply.
    let (got, message) = signed_in(&app, "dan").await;
    assert!(got.is_empty(), "{got:?}");
    let message = message.expect("dan is told why");
    assert!(message.contains("`email` is not verified"), "{message}");
}

#[tokio::test]
async fn gitlab_direct_group_paths_grant_their_scopes() {
    // dan's top-level "engineering" is anyone's to create on gitlab.com.
    let told = [
        r#"`groups_direct` claim held ["engineering"] (1 value)"#,
        "the grants name: acme/engineering, acme/support",
    ];
    promised("gitlab", "## GitLab", &told).await;
}

#[tokio::test]
async fn a_wrong_groups_claim_says_which_claims_the_token_had() {
    let mut portal = recipe("## GitLab");
    portal.groups_claim = "groups".into();
    let (app, _idp) = app("gitlab", portal).await;
    let (got, message) = signed_in(&app, "ann").await;
    assert!(got.is_empty(), "{got:?}");
    let message = message.expect("ann is told why");
    assert!(
        message.contains("the ID token has no `groups` claim (groups_claim); its claims are: "),
        "{message}"
    );
    assert!(message.contains("groups_direct"), "{message}");
    // Names only: never another claim's value.
    assert!(!message.contains("ann@example.com"), "{message}");
}

#[test]
fn a_grant_names_exactly_one_kind_of_member() {
    let mut config = crate::helpers::test_config();
    config.server.public_url = "https://mcp.example.com/mcp".into();
    for grant in [
        r#"group = "a"
claim = "hd"
value = "example.com""#,
        r#"claim = "hd""#,
        r#"email_domain = "@example.com""#,
        "",
    ] {
        let mut portal = recipe("## Google Workspace");
        let text = format!("{grant}\nscopes = [\"tools:*\"]");
        portal.grants = vec![toml::from_str(&text).unwrap()];
        config.portal = Some(portal);
        let refused = config.validate().expect_err(grant).to_string();
        assert!(refused.contains("portal.grants[0]"), "{grant}: {refused}");
    }
}
