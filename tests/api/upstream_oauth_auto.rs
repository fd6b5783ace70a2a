//! An upstream configured without `auth` (`"auto"`) that answers 401 with
//! RFC 9728 metadata (the official Python SDK's own auth,
//! tests/interop/upstream_oauth_py.py) is switched to members' OAuth on its
//! first connection, and says so in the log; the portal offers it on the
//! Connections page. It lists nothing without a token, so its tools and
//! prompts are listed over the first connected member's connection (pinned
//! as any upstream's) and offered to every member: one who has not
//! connected sees them and is sent to connect when calling one; a member's
//! prompt is fetched over their own connection. Without the portal the
//! upstream stays unavailable, and the log says what it needs.
//! Screenshots: `target/portal-screenshots/upauto-NN-name.png`.

use std::time::Duration;

use serde_json::{Value, json};
use teamgate::{
    config::{AuthMode, UpstreamConfig},
    store::{PinRepo, Vault},
};

use crate::{
    credentials::{Logs, Recording},
    helpers::{TestApp, spawn_app_with},
    portal_browser::driver::Chrome,
    sec_authz::{reply, send},
    upstream_oauth::{
        SEALING_KEY, Upstream, app_fronting, connect_in_browser, nothing_leaked, text, token,
        tokens_of, whoami, whoami_once_listed,
    },
    upstream_pins::python,
    upstreams::modern_meta,
};

/// `method` with `params` as `token`'s caller (2026-07-28): the JSON-RPC reply.
async fn rpc(app: &TestApp, token: &str, method: &str, name: &str, mut params: Value) -> Value {
    params["_meta"] = modern_meta();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if !name.is_empty() {
        headers.push(("mcp-name", name));
    }
    let (status, text) = send(app, token, &body, &headers).await;
    assert_eq!(status, 200, "{text}");
    reply(&text)
}

/// Waits until the log holds `needle`: a condition, bounded at 120 s because
/// the upstream is a Python process, slow to start on a loaded 2-core machine
/// (30 s was once not enough under a full `scripts/test`).
async fn logged(logs: &Recording, needle: &str) -> String {
    for _ in 0..1200 {
        let text = logs.text();
        if text.contains(needle) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the log never said {needle:?}: {}", logs.text());
}

#[tokio::test]
async fn upstream_oauth_auto_an_upstream_asking_for_oauth_gets_members_oauth() {
    let Some((python, _)) = python() else {
        return;
    };
    let logs = Logs::capture();
    let (app, _idp, _upstream) = app_fronting(&python, json!({})).await;
    let vault = Vault::new(app.store.clone(), &[SEALING_KEY]);
    let scopes = ["tools:*", "prompts:*"];
    let (ann, bob) = (
        token(&app, "ann", &scopes).await,
        token(&app, "bob", &scopes).await,
    );
    let (mut seen, mut secrets) = (Vec::new(), Vec::new());
    let start = format!("{}/portal/connections/oauth/py/start", app.base());

    // Found on the first connection, logged; nothing listed yet.
    logged(&logs, "upstream asks for OAuth").await;
    let unlisted = whoami(&app, &ann).await;
    assert!(unlisted.to_string().contains("Unknown tool"), "{unlisted}");

    // ann connects in the browser: the upstream is listed over her connection.
    let mut chrome = Chrome::start_with_prefix(&app.base(), "upauto-").await;
    connect_in_browser(&mut chrome, "ann").await;
    let first = whoami_once_listed(&app, &ann).await;
    assert_eq!(text(&first), "ann", "{first}");
    seen.push(first.to_string());
    logged(&logs, "upstream listed over a member's connection").await;

    // bob, not connected, sees the tools and the prompt, and is sent to connect.
    let tools = rpc(&app, &bob, "tools/list", "", json!({})).await;
    let names: Vec<&str> = (tools["result"]["tools"].as_array().unwrap().iter())
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"py_whoami"), "{tools}");
    let prompts = rpc(&app, &bob, "prompts/list", "", json!({})).await;
    assert!(prompts.to_string().contains("py_greeting"), "{prompts}");
    let told = whoami(&app, &bob).await;
    assert_eq!(told["result"]["isError"], true, "{told}");
    assert!(text(&told).contains(&start), "{told}");
    let greeting = json!({"name": "py_greeting"});
    let refused = rpc(&app, &bob, "prompts/get", "py_greeting", greeting.clone()).await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&start),
        "{refused}"
    );

    // Pinned on first sight, as any upstream's tools.
    let pins = app.store.pins(Some("py")).await.unwrap();
    assert!(pins.iter().any(|p| p.tool == "whoami"), "{pins:?}");

    // A member's prompt comes over their own connection, as them.
    let hello = rpc(&app, &ann, "prompts/get", "py_greeting", greeting).await;
    let said = hello["result"]["messages"][0]["content"]["text"].as_str();
    assert_eq!(said, Some("hello ann"), "{hello}");
    seen.push(hello.to_string());

    // bob connects; each call carries the caller's own token.
    connect_in_browser(&mut chrome, "bob").await;
    for (token, member) in [(&bob, "bob"), (&ann, "ann"), (&bob, "bob")] {
        let reply = whoami(&app, token).await;
        assert_eq!(text(&reply), member, "{reply}");
        secrets.extend(
            tokens_of(&vault, member)
                .await
                .expect("connected")
                .secrets(),
        );
        seen.push(reply.to_string());
    }
    chrome.close().await;
    nothing_leaked(&app, &logs, seen, &secrets).await;
}

#[tokio::test]
async fn upstream_oauth_auto_without_the_portal_the_upstream_says_what_it_needs() {
    let Some((python, _)) = python() else {
        return;
    };
    let logs = Logs::capture();
    // No token is ever checked: the issuer need not answer.
    let upstream = Upstream::start(&python, "http://127.0.0.1:9");
    let url = upstream.url.clone();
    let app = spawn_app_with(move |c| {
        c.auth.mode = AuthMode::Required;
        c.tools.http_allowlist = vec![url.clone()];
        let upstream = json!({"name": "py", "url": url});
        c.upstreams = vec![serde_json::from_value::<UpstreamConfig>(upstream).unwrap()];
    })
    .await;
    let log = logged(
        &logs,
        "upstream unavailable: it asks each member to sign in",
    )
    .await;
    assert!(log.contains("needs [portal] and credentials.keys"), "{log}");
    let ann = token(&app, "ann", &["tools:*"]).await;
    let unlisted = whoami(&app, &ann).await;
    assert!(unlisted.to_string().contains("Unknown tool"), "{unlisted}");
}
