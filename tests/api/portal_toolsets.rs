//! The portal's toolsets (issue 60 part 3) over HTTP, at the real
//! `oidc-provider`: each member sees `/mcp` and the toolset endpoints open
//! to their groups (and not the others), each with its URL and client
//! setups; a token limited on the form to a toolset works there and only
//! there; a forged form naming a toolset the member may not use is refused;
//! the admin page lists each toolset's tools and who may connect.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};
use teamgate::{
    config::{Config, ToolsetConfig},
    store::SystemClock,
};

use crate::{
    helpers::TestApp,
    portal_idp::{Browser, portal_app_with},
    toolsets::{call, names},
};

/// ann is in dev, bob in ops, cat in admins (tests/interop/idp_oidc.mjs).
pub(crate) fn toolsets() -> Vec<ToolsetConfig> {
    let toolset = |v: Value| serde_json::from_value(v).expect("a toolset");
    vec![
        toolset(
            json!({"name": "oncall", "description": "What on-call needs.",
            "include": ["test_*_content", "test_simple_text"], "exclude": ["test_audio_content"],
            "groups": ["ops"]}),
        ),
        toolset(
            json!({"name": "dev", "description": "The tools developers test with.",
            "include": ["test_*"], "exclude": ["test_audio_content"], "groups": ["dev", "leads"]}),
        ),
        toolset(
            json!({"name": "docs", "description": "Open to everyone; found by search.",
            "include": ["test_simple_text", "test_image_content"], "discovery": "search",
            "always": ["test_simple_text"]}),
        ),
        toolset(json!({"name": "leads", "include": ["*"], "groups": ["leads"]})),
    ]
}

pub(crate) fn configure(c: &mut Config) {
    c.toolsets = toolsets();
}

pub(crate) async fn page(browser: &Browser, app: &TestApp, path: &str) -> (StatusCode, String) {
    let response = browser.get(&format!("{}{path}", app.base())).await;
    (response.status(), response.text().await.unwrap())
}

/// The part of `html` from the section `id` (`endpoint-dev`, a section of
/// class `endpoint`) to the next of its class.
pub(crate) fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let class = id.split('-').next().unwrap();
    let from = html
        .split(&format!("id=\"{id}\""))
        .nth(1)
        .unwrap_or_else(|| panic!("{id} on the page: {html}"));
    from.split(&format!("<section class=\"{class}\""))
        .next()
        .unwrap()
}

/// Makes a token through the form, `toolset` as the form's limit.
async fn create_limited(
    app: &TestApp,
    browser: &Browser,
    scope: &str,
    toolset: &str,
) -> (StatusCode, String) {
    let csrf = browser.csrf(app).await;
    let form = [
        ("csrf", csrf.as_str()),
        ("label", "limited"),
        ("days", "30"),
        ("scope", scope),
        ("toolset", toolset),
    ];
    let response = browser
        .post(&format!("{}/portal/tokens", app.base()), &form)
        .await;
    (response.status(), response.text().await.unwrap())
}

fn secret_on(html: &str) -> String {
    (html.split("id=\"token-secret\">").nth(1))
        .and_then(|rest| rest.split('<').next())
        .expect("the new token on the page")
        .to_owned()
}

#[tokio::test]
async fn portal_members_see_the_endpoints_their_groups_open_with_setups() {
    let (app, _idp) = portal_app_with(Arc::new(SystemClock), configure).await;
    let base = app.base();
    for (user, shown, hidden) in [
        ("ann", ["main", "dev", "docs"], ["oncall", "leads"]),
        ("bob", ["main", "oncall", "docs"], ["dev", "leads"]),
    ] {
        let browser = Browser::sign_in(&app, user).await;
        let (status, html) = page(&browser, &app, "/portal/endpoints").await;
        assert_eq!(status, StatusCode::OK, "{html}");
        for name in shown {
            let part = section(&html, &format!("endpoint-{name}"));
            let (server, url) = match name {
                "main" => ("teamgate".to_owned(), format!("{base}/mcp")),
                _ => (format!("teamgate-{name}"), format!("{base}/mcp/{name}")),
            };
            let claude = format!("claude mcp add --transport http {server} {url} \\\n");
            assert!(part.contains(&claude), "{user} {name}: {part}");
            assert!(
                part.contains(&format!("&quot;url&quot;: &quot;{url}&quot;")),
                "{part}"
            );
        }
        for name in hidden {
            assert!(
                !html.contains(&format!("endpoint-{name}")),
                "{user}: {html}"
            );
            assert!(!html.contains(&format!("/mcp/{name}")), "{user}: {html}");
        }
        // The token form offers the same toolsets as limits, and no others.
        let (_, home) = page(&browser, &app, "/portal/").await;
        for name in shown.iter().filter(|n| **n != "main") {
            assert!(
                home.contains(&format!("<option value=\"{name}\">")),
                "{home}"
            );
        }
        for name in hidden {
            assert!(
                !home.contains(&format!("<option value=\"{name}\">")),
                "{home}"
            );
        }
    }
    let ann = Browser::sign_in(&app, "ann").await;
    let (_, html) = page(&ann, &app, "/portal/endpoints").await;
    let dev = section(&html, "endpoint-dev");
    assert!(dev.contains("The tools developers test with."), "{dev}");
    assert!(dev.contains("list: tools/list gives every tool"), "{dev}");
    assert!(dev.contains("limited to this toolset"), "{dev}");
    let docs = section(&html, "endpoint-docs");
    assert!(
        docs.contains("search: tools/list gives search_tools"),
        "{docs}"
    );
    assert!(docs.contains("1 pinned tool"), "{docs}");
}

#[tokio::test]
async fn portal_a_token_limited_to_a_toolset_works_there_only() {
    let (app, _idp) = portal_app_with(Arc::new(SystemClock), configure).await;
    let ann = Browser::sign_in(&app, "ann").await;
    let (status, html) = create_limited(&app, &ann, "tools:*", "dev").await;
    assert_eq!(status, StatusCode::OK, "{html}");
    let token = secret_on(&html);
    // The setups shown with it are for the one endpoint where it works.
    let url = format!("{}/mcp/dev", app.base());
    assert!(
        html.contains(&format!(
            "claude mcp add --transport http teamgate-dev {url}"
        )),
        "{html}"
    );
    let rows = app.store.tokens(Some("ann")).await.unwrap();
    assert_eq!(rows[0].scopes, ["tools:*", "toolset:dev"]);
    let dev = names(&app, "/mcp/dev", &token).await;
    assert!(dev.contains("test_simple_text") && !dev.contains("test_audio_content"));
    let (status, reply) = call(&app, "/mcp", &token, 2, "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{reply}");
    let (status, _) = call(&app, "/mcp/docs", &token, 3, "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // bob (ops, scope tools:test_simple_text) limits his to oncall.
    let bob = Browser::sign_in(&app, "bob").await;
    let (status, html) = create_limited(&app, &bob, "tools:test_simple_text", "oncall").await;
    assert_eq!(status, StatusCode::OK, "{html}");
    let token = secret_on(&html);
    let oncall = names(&app, "/mcp/oncall", &token).await;
    assert_eq!(oncall.into_iter().collect::<Vec<_>>(), ["test_simple_text"]);
    let (status, _) = call(&app, "/mcp", &token, 2, "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn portal_refuses_a_token_limited_to_a_toolset_the_member_may_not_use() {
    let (app, _idp) = portal_app_with(Arc::new(SystemClock), configure).await;
    let ann = Browser::sign_in(&app, "ann").await;
    // Not offered to ann on the form; her browser posts it anyway.
    for toolset in ["oncall", "leads"] {
        let (status, html) = create_limited(&app, &ann, "tools:*", toolset).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{toolset}: {html}");
        assert!(html.contains("none of those that may connect"), "{html}");
    }
    let (status, html) = create_limited(&app, &ann, "tools:*", "nosuch").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{html}");
    assert!(app.store.tokens(Some("ann")).await.unwrap().is_empty());
}

#[tokio::test]
async fn portal_admins_see_each_toolsets_tools_and_who_may_connect() {
    let (app, _idp) = portal_app_with(Arc::new(SystemClock), configure).await;
    let bob = Browser::sign_in(&app, "bob").await;
    let (status, _) = page(&bob, &app, "/portal/admin/toolsets").await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let cat = Browser::sign_in(&app, "cat").await;
    let (status, html) = page(&cat, &app, "/portal/admin/toolsets").await;
    assert_eq!(status, StatusCode::OK, "{html}");
    let item = |tool: &str| format!("<li><code>{tool}</code>");
    let oncall = section(&html, "toolset-oncall");
    assert!(
        oncall.contains(&format!("{}/mcp/oncall", app.base())),
        "{oncall}"
    );
    assert!(oncall.contains("What on-call needs.") && oncall.contains("groups ops"));
    assert!(
        oncall.contains("<strong class=\"count\">2</strong>"),
        "{oncall}"
    );
    assert!(
        oncall.contains(&item("test_simple_text")) && oncall.contains(&item("test_image_content"))
    );
    assert!(!oncall.contains(&item("test_audio_content")), "{oncall}");
    let docs = section(&html, "toolset-docs");
    assert!(
        docs.contains("everyone") && docs.contains("search:"),
        "{docs}"
    );
    assert!(docs.contains("(pinned)"), "{docs}");
    let leads = section(&html, "toolset-leads");
    assert!(leads.contains("groups leads") && leads.contains(&item("test_audio_content")));
    let dev = section(&html, "toolset-dev");
    assert!(dev.contains("groups dev, leads") && !dev.contains(&item("test_audio_content")));
}
