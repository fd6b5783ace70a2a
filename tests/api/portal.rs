//! The portal (issue 27) over HTTP: sign-in at the real `oidc-provider`,
//! a member's token made, used and revoked, and the refusals: forged CSRF,
//! wrong `state`, a replayed callback, an expired session, a non-admin on
//! an admin page, a group mapped to no scope, another member's token.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::json;
use teamgate::store::{Clock, ManualClock};

use crate::{
    helpers::{TestApp, spawn_app},
    portal_idp::{Browser, hidden, portal_app, portal_app_now},
    sec_authz::{reply, send},
    upstreams::modern_meta,
};

/// `tools/list` with `token`: the HTTP status and the tool names.
pub(crate) async fn tools_with(app: &TestApp, token: &str) -> (u16, Vec<String>) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let (status, text) = send(app, token, &body, &headers).await;
    let names = reply(&text)["result"]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (status, names)
}

/// A page asked for without a session: sent to sign in (and back after it).
pub(crate) fn assert_signed_out(response: &reqwest::Response) {
    assert_eq!(response.status(), StatusCode::SEE_OTHER, "{response:?}");
    assert_eq!(response.headers()["location"], "/portal/login");
}

/// Creates a token through the form; the page's HTML.
async fn create_token(app: &TestApp, browser: &Browser, scopes: &[&str]) -> (StatusCode, String) {
    let csrf = browser.csrf(app).await;
    let mut form = vec![("csrf", csrf.as_str()), ("label", "laptop"), ("days", "30")];
    form.extend(scopes.iter().map(|s| ("scope", *s)));
    let response = browser
        .post(&format!("{}/portal/tokens", app.base()), &form)
        .await;
    (response.status(), response.text().await.unwrap())
}

fn secret_on(html: &str) -> String {
    html.split("id=\"token-secret\">")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .expect("the new token on the page")
        .to_owned()
}

#[tokio::test]
async fn without_portal_nothing_under_portal_exists() {
    let app = spawn_app().await;
    for path in [
        "/portal",
        "/portal/",
        "/portal/login",
        "/portal/callback",
        "/portal/admin",
    ] {
        let status = app
            .client
            .get(format!("{}{path}", app.base()))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }
}

#[tokio::test]
async fn portal_a_member_makes_uses_and_revokes_a_token() {
    let (app, _idp) = portal_app_now().await;
    let ann = Browser::sign_in(&app, "ann").await;
    let home = ann.get(&format!("{}/portal/", app.base())).await;
    let headers = home.headers().clone();
    assert!(
        headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("default-src 'none'")
    );
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    let html = home.text().await.unwrap();
    assert!(
        html.contains("Your tokens") && html.contains("tools:*"),
        "{html}"
    );

    let (status, page) = create_token(&app, &ann, &["tools:*"]).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let token = secret_on(&page);
    assert!(token.starts_with("tg_"));
    // The setups carry the URL and the header.
    assert!(
        page.contains("claude mcp add --transport http teamgate"),
        "{page}"
    );
    assert!(page.contains(&format!("Bearer {token}")));
    let (status, tools) = tools_with(&app, &token).await;
    assert_eq!(status, 200);
    assert!(tools.iter().any(|t| t == "test_simple_text"), "{tools:?}");

    // Stored hashed, owned by ann, audited with where it came from.
    let rows = app.store.tokens(Some("ann")).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert!(
        !rows[0]
            .secret_hash
            .contains(token.rsplit('_').next().unwrap())
    );
    let id = rows[0].id.clone();
    let after = ann
        .get(&format!("{}/portal/", app.base()))
        .await
        .text()
        .await
        .unwrap();
    assert!(!after.contains(&token), "a token is shown once");

    let csrf = ann.csrf(&app).await;
    let revoked = ann
        .post(
            &format!("{}/portal/tokens/{id}/revoke", app.base()),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(revoked.status(), StatusCode::SEE_OTHER);
    assert_eq!(tools_with(&app, &token).await.0, 401);

    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    let trail = app.store.audit_tail(Some("ann"), 0, 100).await.unwrap();
    for method in ["portal/tokens/create", "portal/tokens/revoke"] {
        let record = trail.iter().find(|r| r.method == method).expect(method);
        assert_eq!(record.target, id);
        assert_eq!(record.address, "127.0.0.1");
        assert!(!format!("{record:?}").contains(&token));
    }
    // Logout ends the session.
    let out = ann
        .post(&format!("{}/portal/logout", app.base()), &[("csrf", &csrf)])
        .await;
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    let gone = ann.get(&format!("{}/portal/activity", app.base())).await;
    assert_signed_out(&gone);
}

#[tokio::test]
async fn portal_refuses_forged_csrf_wrong_state_and_a_replayed_callback() {
    let (app, _idp) = portal_app_now().await;
    let ann = Browser::sign_in(&app, "ann").await;
    let forged = ann
        .post(
            &format!("{}/portal/tokens", app.base()),
            &[
                ("csrf", &"0".repeat(64)),
                ("label", "x"),
                ("days", "30"),
                ("scope", "tools:*"),
            ],
        )
        .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    assert!(app.store.tokens(Some("ann")).await.unwrap().is_empty());

    // Wrong state: the callback of this browser's login, state changed.
    let browser = Browser::new();
    let callback = browser.authorize(&app, "bob").await;
    let mut url = url::Url::parse(&callback).unwrap();
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    url.query_pairs_mut().clear();
    for (k, v) in &pairs {
        let v = if k == "state" {
            "not-the-state"
        } else {
            v.as_str()
        };
        url.query_pairs_mut().append_pair(k, v);
    }
    let wrong = browser.get(url.as_str()).await;
    assert_eq!(wrong.status(), StatusCode::BAD_REQUEST);
    assert_signed_out(
        &browser
            .get(&format!("{}/portal/activity", app.base()))
            .await,
    );

    // Replayed: the same code and state, after the login used them.
    let browser = Browser::new();
    let callback = browser.authorize(&app, "bob").await;
    let pre_login = browser.portal_cookie().unwrap();
    assert_eq!(browser.get(&callback).await.status(), StatusCode::SEE_OTHER);
    let replay = Browser::new();
    replay.set_portal_cookie(&pre_login);
    assert_eq!(
        replay.get(&callback).await.status(),
        StatusCode::BAD_REQUEST
    );
    // ... and in another browser, which never started this login.
    let other = Browser::new();
    assert_eq!(other.get(&callback).await.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn portal_a_deep_link_signs_in_and_lands_where_it_was_going() {
    let (app, _idp) = portal_app_now().await;
    let browser = Browser::new();
    let page = format!("{}/portal/admin/audit?member=ann", app.base());
    assert_signed_out(&browser.get(&page).await);
    let callback = browser.authorize(&app, "cat").await;
    let done = browser.get(&callback).await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    assert_eq!(done.headers()["location"], "/portal/admin/audit?member=ann");
    assert_eq!(browser.get(&page).await.status(), StatusCode::OK);
    // Used once: the next sign-in lands on the home page again.
    let again = Browser::new();
    let callback = again.authorize(&app, "cat").await;
    assert_eq!(again.get(&callback).await.headers()["location"], "/portal/");
    // Never somewhere else: a way back off this site is not followed.
    for forged in ["//evil.example.com/portal/", "/portal//evil.example.com"] {
        let browser = Browser::new();
        let url = format!("{}{forged}", app.base());
        let _ = browser.get(&url).await;
        let callback = browser.authorize(&app, "cat").await;
        let location = browser.get(&callback).await.headers()["location"].clone();
        assert_eq!(location, "/portal/", "{forged}");
    }
}

#[tokio::test]
async fn portal_sessions_expire_when_idle() {
    let clock = Arc::new(ManualClock::new(teamgate::store::SystemClock.now_ms()));
    let (app, _idp) = portal_app(clock.clone()).await;
    let ann = Browser::sign_in(&app, "ann").await;
    let page = format!("{}/portal/activity", app.base());
    assert_eq!(ann.get(&page).await.status(), StatusCode::OK);
    clock.advance(2 * 3600 * 1000 + 1);
    assert_signed_out(&ann.get(&page).await);
}

#[tokio::test]
async fn portal_keeps_members_apart_and_admin_pages_for_admins() {
    let (app, _idp) = portal_app_now().await;
    let ann = Browser::sign_in(&app, "ann").await;
    let (_, page) = create_token(&app, &ann, &["tools:*"]).await;
    let ann_token = secret_on(&page);
    let ann_id = app.store.tokens(Some("ann")).await.unwrap()[0].id.clone();

    let bob = Browser::sign_in(&app, "bob").await;
    let home = bob
        .get(&format!("{}/portal/", app.base()))
        .await
        .text()
        .await
        .unwrap();
    assert!(!home.contains(&ann_id), "bob sees ann's token");
    let csrf = hidden(&home, "csrf").unwrap();
    let revoke = bob
        .post(
            &format!("{}/portal/tokens/{ann_id}/revoke", app.base()),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(revoke.status(), StatusCode::NOT_FOUND);
    assert_eq!(tools_with(&app, &ann_token).await.0, 200);
    // Scopes beyond bob's groups are refused.
    let (status, _) = create_token(&app, &bob, &["tools:*"]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    for path in [
        "/portal/admin",
        "/portal/admin/members",
        "/portal/admin/audit",
        "/portal/admin/config",
    ] {
        let status = bob.get(&format!("{}{path}", app.base())).await.status();
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
    }
    let end = bob
        .post(
            &format!("{}/portal/admin/tokens/{ann_id}/revoke", app.base()),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(end.status(), StatusCode::FORBIDDEN);

    // dan's group maps to no scope: no form, and a post is refused.
    let dan = Browser::sign_in(&app, "dan").await;
    let home = dan
        .get(&format!("{}/portal/", app.base()))
        .await
        .text()
        .await
        .unwrap();
    assert!(home.contains("id=\"no-scopes\""), "{home}");
    let (status, _) = create_token(&app, &dan, &["tools:*"]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // cat is an admin: sees ann's token, the audit filtered, the config masked.
    let cat = Browser::sign_in(&app, "cat").await;
    let members = cat
        .get(&format!("{}/portal/admin/members", app.base()))
        .await
        .text()
        .await
        .unwrap();
    assert!(members.contains(&ann_id));
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    let audit = cat
        .get(&format!(
            "{}/portal/admin/audit?member=ann&outcome=ok&since=1h",
            app.base()
        ))
        .await
        .text()
        .await
        .unwrap();
    assert!(audit.contains("portal/tokens/create"), "{audit}");
    let csv = cat
        .get(&format!("{}/portal/admin/audit.csv?member=bob", app.base()))
        .await
        .text()
        .await
        .unwrap();
    assert!(csv.starts_with("time,member"), "{csv}");
    assert!(!csv.contains("portal/tokens/create"), "{csv}");
    let config = cat
        .get(&format!("{}/portal/admin/config", app.base()))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        !config.contains("portal-test-secret") && config.contains("redacted"),
        "{config}"
    );
    let csrf = cat.csrf(&app).await;
    let revoked = cat
        .post(
            &format!("{}/portal/admin/tokens/{ann_id}/revoke", app.base()),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(revoked.status(), StatusCode::SEE_OTHER);
    assert_eq!(tools_with(&app, &ann_token).await.0, 401);
}
