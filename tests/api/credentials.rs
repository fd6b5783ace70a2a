//! Per-member credential slots (issue 29) end to end: an HTTP tool whose
//! header is `${user:crm}` against a loopback API that answers per key; two
//! members, each set through the portal's Connections page (the real
//! `oidc-provider` sign-in), see their own data; an empty slot is a tool
//! error naming that page; the retried call succeeds; the audit record
//! names the credential kind. No value set in the test appears in the
//! logs, audit rows, /metrics, errors or results.

use std::{
    collections::HashMap,
    io::Write,
    sync::{Arc, Mutex, atomic::Ordering},
};

use axum::extract::Query;
use axum::{Json, Router, http::HeaderMap, http::StatusCode, response::IntoResponse, routing::get};
use reqwest::StatusCode as Status;
use serde_json::{Value, json};
use teamgate::{config::HttpToolConfig, store::SystemClock};

use crate::{
    helpers::TestApp,
    portal_idp::{Browser, Idp, hidden, portal_app_with},
    sec_authz::{reply, send},
    upstreams::modern_meta,
};

pub(crate) const ANN_KEY: &str = "crm-key-ann-7f3a9c2e51";
pub(crate) const BOB_KEY: &str = "crm-key-bob-0b6d4e8a27";
/// A value the API does not know: it answers 401 quoting it.
const WRONG_KEY: &str = "crm-key-wrong-5c1e9f04d3";
const CREDENTIAL_KEY: &str = "credential-sealing-key-0123456789-abcdef";

/// The API: `/api/me` answers the data of the `x-api-key` it gets (or the
/// `key` query parameter), and 401
/// quoting an unknown key back (as careless APIs do).
pub(crate) async fn crm() -> String {
    let app = Router::new().route(
        "/api/me",
        get(
            |headers: HeaderMap, query: Query<HashMap<String, String>>| async move {
                let key = headers
                    .get("x-api-key")
                    .and_then(|v| v.to_str().ok())
                    .or(query.get("key").map(String::as_str))
                    .unwrap_or_default()
                    .to_owned();
                match key.as_str() {
                    ANN_KEY => Json(json!({"account": "ann", "deals": 3})).into_response(),
                    BOB_KEY => Json(json!({"account": "bob", "deals": 9})).into_response(),
                    other => {
                        (StatusCode::UNAUTHORIZED, format!("unknown key {other}")).into_response()
                    }
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// Everything logged while the test runs (its runtime is this thread's).
#[derive(Clone, Default)]
pub(crate) struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether the capture keeps lines: only while this test runs, so the
/// other tests of the binary pay a flag check per event, no formatting.
/// How many tests are recording: lines are kept while any is. (A flag, which
/// the first test to finish cleared, lost the lines of the others: the cause
/// of a test that failed only under a full, parallel run.)
static RECORDING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Logs {
    /// The process-wide log capture (a scoped subscriber missed events when
    /// other tests hit the same call sites first), recording until dropped:
    /// lines of tests running meanwhile land here too, which is harmless, as
    /// only this test knows its secrets.
    pub(crate) fn capture() -> Recording {
        use tracing_subscriber::{Layer, filter::filter_fn, layer::SubscriberExt};
        static LOGS: std::sync::OnceLock<Logs> = std::sync::OnceLock::new();
        let logs = LOGS.get_or_init(|| {
            let logs = Logs::default();
            let writer = logs.clone();
            let layer = tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .with_filter(filter_fn(|_| RECORDING.load(Ordering::Relaxed) > 0))
                .with_filter(tracing_subscriber::EnvFilter::new(
                    "info,teamgate=debug,tower_http=debug",
                ));
            let subscriber = tracing_subscriber::registry().with(layer);
            tracing::subscriber::set_global_default(subscriber)
                .expect("no other global subscriber");
            logs
        });
        RECORDING.fetch_add(1, Ordering::Relaxed);
        Recording(logs.clone())
    }
}

/// The captured lines, recorded while this lives.
pub(crate) struct Recording(Logs);

impl Recording {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.0.lock().unwrap()).into_owned()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        RECORDING.fetch_sub(1, Ordering::Relaxed);
    }
}

pub(crate) async fn credentials_app(api: &str) -> (TestApp, Idp) {
    let api = api.to_owned();
    portal_app_with(Arc::new(SystemClock), move |c| {
        c.credentials = serde_json::from_value(json!({
            "keys": [CREDENTIAL_KEY],
            "slots": [{"name": "crm", "description": "Your CRM API key (CRM > Settings > API)",
                       "tools": ["crm_me", "crm_me_cached", "crm_me_q", "crm_env"]},
                      // A shared fallback (HOME stands for a team key).
                      {"name": "team", "fallback_env": "HOME"}],
        }))
        .unwrap();
        c.tools.http_allowlist = vec![format!("{api}/api/")];
        c.tools.http = vec![
            serde_json::from_value::<HttpToolConfig>(json!({
                "name": "crm_me",
                "description": "Your CRM account",
                "url": format!("{api}/api/me"),
                "headers": {"X-Api-Key": "${user:crm}"},
            }))
            .unwrap(),
            // The value in the URL, percent-encoded like an argument.
            serde_json::from_value::<HttpToolConfig>(json!({
                "name": "crm_me_q",
                "description": "Your CRM account, keyed in the URL",
                "url": format!("{api}/api/me?key=${{user:crm}}"),
            }))
            .unwrap(),
            serde_json::from_value::<HttpToolConfig>(json!({
                "name": "crm_team",
                "description": "The CRM as yourself or as the team",
                "url": format!("{api}/api/me"),
                "headers": {"X-Api-Key": "${user:team}"},
            }))
            .unwrap(),
            // Cached: a result acting as one member is never another's.
            serde_json::from_value::<HttpToolConfig>(json!({
                "name": "crm_me_cached",
                "description": "Your CRM account, cached",
                "url": format!("{api}/api/me"),
                "headers": {"X-Api-Key": "${user:crm}"},
                "read_only": true,
                "cache_ttl": "60s",
            }))
            .unwrap(),
        ];
        // A command tool gets the member's value in its environment.
        c.tools.command = vec![
            serde_json::from_value(json!({
                "name": "crm_env",
                "description": "Prints the CRM key it was given",
                "program": "/usr/bin/printenv",
                "args": ["CRM_KEY"],
                "secret_env": ["CRM_KEY=${user:crm}"],
            }))
            .unwrap(),
        ];
    })
    .await
}

/// `crm_me` called with `token`: the JSON-RPC result (or error) as sent.
async fn call(app: &TestApp, token: &str) -> Value {
    call_with(app, token, json!({})).await
}

/// `crm_me` with `extra` params (`inputResponses`, `requestState`, `_meta`).
pub(crate) async fn call_with(app: &TestApp, token: &str, extra: Value) -> Value {
    call_tool(app, token, "crm_me", extra).await
}

pub(crate) async fn call_tool(app: &TestApp, token: &str, tool: &str, extra: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": {}, "_meta": modern_meta()});
    for (key, value) in extra.as_object().unwrap() {
        if key == "_meta" {
            for (k, v) in value.as_object().unwrap() {
                params["_meta"][k] = v.clone();
            }
        } else {
            params[key] = value.clone();
        }
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", tool),
    ];
    let (status, text) = send(app, token, &body, &headers).await;
    assert_eq!(status, 200, "{text}");
    reply(&text)
}

/// Sets the member's `crm` value through the Connections form.
pub(crate) async fn set_crm(app: &TestApp, browser: &Browser, value: &str) -> String {
    let page = browser
        .get(&format!("{}/portal/connections", app.base()))
        .await
        .text()
        .await
        .unwrap();
    let csrf = hidden(&page, "csrf").expect("a CSRF field");
    let url = format!("{}/portal/connections/crm", app.base());
    let set = browser
        .post(&url, &[("csrf", &csrf), ("value", value)])
        .await;
    assert_eq!(set.status(), Status::SEE_OTHER);
    browser
        .get(&format!("{}/portal/connections", app.base()))
        .await
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn each_member_acts_upstream_with_their_own_credential() {
    let logs = Logs::capture();
    let api = crm().await;
    let (app, _idp) = credentials_app(&api).await;
    let mut seen = Vec::new();
    let scopes = vec!["tools:*".to_owned()];
    let ann_token = app
        .tokens
        .create("ann", "t", scopes.clone(), None)
        .await
        .unwrap()
        .token;
    let bob_token = app
        .tokens
        .create("bob", "t", scopes, None)
        .await
        .unwrap()
        .token;

    // An empty slot: a tool error naming the page that sets it.
    let empty = call(&app, &ann_token).await;
    assert_eq!(empty["result"]["isError"], true, "{empty}");
    let message = empty["result"]["content"][0]["text"].as_str().unwrap();
    let page = format!("{}/portal/connections", app.base());
    assert!(
        message.contains(&page) && message.contains("`crm`"),
        "{message}"
    );
    seen.push(empty.to_string());

    // Each member sets their own value in the portal; it is never shown back.
    let ann = Browser::sign_in(&app, "ann").await;
    let bob = Browser::sign_in(&app, "bob").await;
    let unset = ann.get(&page).await.text().await.unwrap();
    assert!(
        unset.contains("not set") && unset.contains("Your CRM API key"),
        "{unset}"
    );
    let after = set_crm(&app, &ann, ANN_KEY).await;
    let row = after.split("id=\"slot-crm\"").nth(1).unwrap();
    let row = row.split("</tr>").next().unwrap();
    assert!(row.contains("Replace") && row.contains(">set "), "{row}");
    seen.push(after);
    seen.push(set_crm(&app, &bob, BOB_KEY).await);

    // The retried call succeeds, and each member sees their own data.
    let mine = call(&app, &ann_token).await;
    let text = mine["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("\"account\":\"ann\""), "{mine}");
    let theirs = call(&app, &bob_token).await;
    let text = theirs["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("\"account\":\"bob\""), "{theirs}");
    seen.extend([mine.to_string(), theirs.to_string()]);
    for (token, account) in [(&ann_token, "ann"), (&bob_token, "bob")] {
        let keyed = call_tool(&app, token, "crm_me_q", json!({})).await;
        let text = keyed["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains(&format!("\"account\":\"{account}\"")),
            "{keyed}"
        );
    }
    // The process got the caller's own value: only that is scrubbed from
    // this call's output, so another's would show.
    for token in [&ann_token, &bob_token] {
        let printed = call_tool(&app, token, "crm_env", json!({})).await;
        let text = printed["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("[redacted]"), "{printed}");
        seen.push(printed.to_string());
    }
    for (token, account) in [
        (&ann_token, "ann"),
        (&bob_token, "bob"),
        (&ann_token, "ann"),
    ] {
        let cached = call_tool(&app, token, "crm_me_cached", json!({})).await;
        let text = cached["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains(&format!("\"account\":\"{account}\"")),
            "{cached}"
        );
    }

    // An upstream quoting the member's value back: the value is scrubbed.
    set_crm(&app, &ann, WRONG_KEY).await;
    let quoted = call(&app, &ann_token).await;
    assert_eq!(quoted["result"]["isError"], true, "{quoted}");
    assert!(quoted.to_string().contains("[redacted]"), "{quoted}");
    seen.push(quoted.to_string());

    // Deleting the value empties the slot again.
    let csrf = hidden(&ann.get(&page).await.text().await.unwrap(), "csrf").unwrap();
    let deleted = ann
        .post(&format!("{page}/crm/delete"), &[("csrf", &csrf)])
        .await;
    assert_eq!(deleted.status(), Status::SEE_OTHER);
    assert_eq!(call(&app, &ann_token).await["result"]["isError"], true);

    // The audit trail names the kind of credential, and the portal actions.
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    let trail = app.store.audit_tail(None, 0, 100).await.unwrap();
    let calls: Vec<(&str, &str, &str)> = trail
        .iter()
        .filter(|r| r.method == "tools/call")
        .map(|r| (r.user.as_str(), r.outcome.as_str(), r.credential.as_str()))
        .collect();
    assert!(calls.contains(&("ann", "ok", "member")), "{calls:?}");
    assert!(calls.contains(&("bob", "ok", "member")), "{calls:?}");
    assert!(
        trail
            .iter()
            .any(|r| r.method == "portal/connections/set" && r.target == "crm"),
        "{trail:?}"
    );
    assert!(
        trail
            .iter()
            .any(|r| r.method == "portal/connections/delete")
    );
    seen.push(serde_json::to_string(&trail).unwrap());
    let metrics = teamgate::outbound::client()
        .get(format!("{}/metrics", app.base()))
        .send()
        .await
        .unwrap();
    seen.push(metrics.text().await.unwrap());
    seen.push(logs.text());
    assert!(
        seen.last()
            .is_some_and(|l| l.contains("mcp.target=crm_me user=bob")),
        "this test's requests are in the captured logs"
    );

    for secret in [ANN_KEY, BOB_KEY, WRONG_KEY, CREDENTIAL_KEY] {
        for (i, text) in seen.iter().enumerate() {
            assert!(!text.contains(secret), "{secret} leaked in #{i}: {text}");
        }
    }
}
