//! An upstream MCP server whose header names a member's credential
//! (`Authorization: Bearer ${user:py_token}`, issue 29): each member's
//! calls go over their own connection, opened with their own value. The
//! upstream (the official Python SDK, tests/interop/upstream_py.py) answers
//! `headers` with the headers it got; only the caller's own value is
//! scrubbed from a result, so a call sent with another member's value, or
//! over a connection opened with a replaced value, would show it in clear.

use std::sync::Arc;

use serde_json::{Value, json};
use teamgate::{config::UpstreamConfig, store::SystemClock};

use crate::{
    credentials::call_tool,
    helpers::TestApp,
    portal_idp::{Browser, Idp, hidden, portal_app_with},
    upstream_pins::{HttpUpstream, python},
};

const ANN_VALUE: &str = "py-token-ann-5e0c1d9b7a";
const ANN_NEW_VALUE: &str = "py-token-ann-2f8a6c4e13";
const BOB_VALUE: &str = "py-token-bob-9d3b7e1f60";
const SEALING_KEY: &str = "members-upstream-sealing-key-0123456789";

async fn app_fronting(url: &str) -> (TestApp, Idp) {
    let url = url.to_owned();
    portal_app_with(Arc::new(SystemClock), move |c| {
        c.credentials = serde_json::from_value(json!({
            "keys": [SEALING_KEY],
            "slots": [{"name": "py_token", "description": "Your token for the Python server",
                       "upstreams": ["py"]}],
        }))
        .unwrap();
        c.tools.http_allowlist = vec![url.clone()];
        let upstream: UpstreamConfig = serde_json::from_value(json!({
            "name": "py",
            "url": url,
            "headers": {"Authorization": "Bearer ${user:py_token}"},
        }))
        .unwrap();
        c.upstreams = vec![upstream];
    })
    .await
}

/// Sets the member's `py_token` through the portal's Connections form.
async fn set_value(app: &TestApp, browser: &Browser, value: &str) {
    let page = format!("{}/portal/connections", app.base());
    let form = browser.get(&page).await.text().await.unwrap();
    let csrf = hidden(&form, "csrf").expect("a CSRF field");
    let url = format!("{}/portal/connections/py_token", app.base());
    let set = browser
        .post(&url, &[("csrf", &csrf), ("value", value)])
        .await;
    assert_eq!(set.status(), reqwest::StatusCode::SEE_OTHER);
}

/// The `authorization` header the upstream got for `token`'s call.
async fn authorization(app: &TestApp, token: &str) -> (String, Value) {
    let reply = call_tool(app, token, "py_headers", json!({})).await;
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    let headers: Value = serde_json::from_str(text).expect("the upstream's JSON");
    let got = headers["authorization"].as_str().unwrap_or_default();
    (got.to_owned(), reply)
}

#[tokio::test]
async fn each_member_reaches_the_upstream_over_their_own_connection() {
    let Some((python, script)) = python() else {
        return;
    };
    let upstream = HttpUpstream::start(&python, &script);
    let (app, _idp) = app_fronting(&upstream.url).await;
    let scopes = vec!["tools:*".to_owned()];
    let ann = app.tokens.create("ann", "t", scopes.clone(), None);
    let ann = ann.await.unwrap().token;
    let bob = app
        .tokens
        .create("bob", "t", scopes, None)
        .await
        .unwrap()
        .token;

    // Listed through the upstream's own connection, opened without the header.
    let mut empty = Value::Null;
    for _ in 0..100 {
        empty = call_tool(&app, &ann, "py_headers", json!({})).await;
        if !empty.to_string().contains("Unknown tool") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // An empty slot: a tool error naming the page that sets it.
    assert_eq!(empty["result"]["isError"], true, "{empty}");
    let message = empty["result"]["content"][0]["text"].as_str().unwrap();
    let page = format!("{}/portal/connections", app.base());
    assert!(
        message.contains(&page) && message.contains("`py_token`"),
        "{message}"
    );

    let ann_browser = Browser::sign_in(&app, "ann").await;
    let bob_browser = Browser::sign_in(&app, "bob").await;
    set_value(&app, &ann_browser, ANN_VALUE).await;
    set_value(&app, &bob_browser, BOB_VALUE).await;

    // Each member's own value went upstream, scrubbed from what came back.
    for _ in 0..2 {
        for (token, other) in [(&ann, BOB_VALUE), (&bob, ANN_VALUE)] {
            let (got, reply) = authorization(&app, token).await;
            assert_eq!(got, "Bearer [redacted]", "{reply}");
            assert!(!reply.to_string().contains(other), "{reply}");
        }
    }

    // A replaced value opens a new connection: the old value is not sent.
    set_value(&app, &ann_browser, ANN_NEW_VALUE).await;
    let (got, reply) = authorization(&app, &ann).await;
    assert_eq!(got, "Bearer [redacted]", "{reply}");
    assert!(!reply.to_string().contains(ANN_VALUE), "{reply}");

    // The audit records name the member's own credential, never its value.
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    let trail = app.store.audit_tail(None, 0, 100).await.unwrap();
    let calls: Vec<(&str, &str, &str)> = (trail.iter())
        .filter(|r| r.method == "tools/call" && r.target == "py_headers")
        .map(|r| (r.user.as_str(), r.outcome.as_str(), r.credential.as_str()))
        .collect();
    let ok: Vec<_> = calls.iter().filter(|c| c.1 == "ok").collect();
    assert!(ok.len() >= 5, "{calls:?}");
    assert!(ok.iter().all(|c| c.2 == "member"), "{calls:?}");
    let rows = serde_json::to_string(&trail).unwrap();
    for value in [ANN_VALUE, ANN_NEW_VALUE, BOB_VALUE] {
        assert!(!rows.contains(value));
    }
}
