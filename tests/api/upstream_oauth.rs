//! An upstream with `auth = "oauth"` (issue 29, part 3): teamgate finds its
//! authorization server through the upstream's RFC 9728 metadata, registers
//! itself there (RFC 7591), and runs each member's authorization code flow
//! with PKCE from the portal. The upstream (the official Python SDK,
//! tests/interop/upstream_oauth_py.py) checks each call's bearer token at
//! the real `oidc-provider`'s JWKS (RFC 9068 JWT access tokens for its resource) and answers their `sub`; the
//! provider's access tokens live 30 s, under teamgate's 60 s margin, so
//! every call refreshes first. Disconnecting deletes and revokes the
//! member's tokens, and no token appears in logs, audit rows, /metrics or
//! results.

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    sync::Arc,
    time::Duration,
};

use reqwest::StatusCode;
use serde_json::{Value, json};
use teamgate::{
    config::{AuthMode, UpstreamConfig},
    registry::oauth::TokenSet,
    store::{SystemClock, Vault},
};

use crate::{
    credentials::{Logs, call_tool},
    helpers::{TestApp, repo_path, spawn_app_on},
    portal_idp::{Browser, Idp, hidden, location, portal_config},
    upstream_pins::python,
};

const SEALING_KEY: &str = "upstream-oauth-sealing-key-0123456789abcdef";

/// The Python upstream, ended when dropped.
struct Upstream {
    child: Child,
    url: String,
}

impl Upstream {
    fn start(python: &str, issuer: &str) -> Self {
        let script = repo_path("tests/interop/upstream_oauth_py.py");
        let mut child = Command::new(python)
            .arg(script)
            .args(["--issuer", issuer])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the Python server starts");
        let stdout = child.stdout.take().expect("stdout piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("listening on ") {
                    let _ = tx.send(url.to_owned());
                }
            }
        });
        let url = (rx.recv_timeout(Duration::from_secs(30))).expect("the Python server's URL");
        Self { child, url }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn app_fronting_oauth(python: &str) -> (TestApp, Idp, Upstream) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let redirect = format!("http://{addr}/portal/callback");
    let idp = Idp::start_with(&redirect, &["--upstream-oauth", "30"]).await;
    let upstream = Upstream::start(python, &idp.issuer);
    let (issuer, url) = (idp.issuer.clone(), upstream.url.clone());
    let app = spawn_app_on(
        listener,
        move |c| {
            c.auth.mode = AuthMode::Required;
            c.server.public_url = format!("http://{addr}/mcp");
            c.portal = Some(portal_config(&issuer));
            c.credentials =
                serde_json::from_value(json!({"keys": [SEALING_KEY], "slots": []})).unwrap();
            c.tools.http_allowlist = vec![url.clone()];
            let upstream: UpstreamConfig = serde_json::from_value(json!({
                "name": "py", "url": url, "auth": "oauth", "oauth": {"scopes": ["mcp"]},
            }))
            .unwrap();
            c.upstreams = vec![upstream];
        },
        Arc::new(SystemClock),
    )
    .await;
    (app, idp, upstream)
}

/// Runs the member's connection from the portal's start page through the
/// provider (already signed in, or by its login form) to the callback.
async fn connect(app: &TestApp, browser: &Browser, user: &str) -> String {
    let callback = format!("{}/portal/connections/oauth/callback", app.base());
    let mut url = format!("{}/portal/connections/oauth/py/start", app.base());
    for _ in 0..20 {
        let response = browser.get(&url).await;
        if response.status().is_redirection() {
            url = location(&response, &url);
            if url.starts_with(&callback) {
                let done = browser.get(&url).await;
                assert_eq!(
                    done.status(),
                    StatusCode::SEE_OTHER,
                    "{}",
                    done.text().await.unwrap()
                );
                return url;
            }
            continue;
        }
        let html = response.text().await.unwrap();
        let action = (html.split("action=\"").nth(1))
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("a form at {url}: {html}"))
            .to_owned();
        let action = url::Url::parse(&url)
            .unwrap()
            .join(&action)
            .unwrap()
            .to_string();
        let prompt = if html.contains("name=\"login\"") {
            "login"
        } else {
            "consent"
        };
        let posted = browser
            .post(
                &action,
                &[("prompt", prompt), ("login", user), ("password", "any")],
            )
            .await;
        assert!(
            posted.status().is_redirection(),
            "{action}: {}",
            posted.status()
        );
        url = location(&posted, &action);
    }
    panic!("the connection did not come back to teamgate");
}

fn start_of(app: &TestApp) -> String {
    format!("{}/portal/connections/oauth/py/start", app.base())
}

async fn whoami(app: &TestApp, token: &str) -> Value {
    call_tool(app, token, "py_whoami", json!({})).await
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

async fn tokens_of(vault: &Vault, member: &str) -> Option<TokenSet> {
    let value = vault.get(member, "oauth:py").await.unwrap()?;
    Some(TokenSet::read(&value).expect("a token set"))
}

#[tokio::test]
async fn upstream_oauth_each_member_connects_their_own_account() {
    let Some((python, _)) = python() else {
        return;
    };
    let logs = Logs::capture();
    let (app, idp, _upstream) = app_fronting_oauth(&python).await;
    let vault = Vault::new(app.store.clone(), &[SEALING_KEY]);
    let scopes = vec!["tools:*".to_owned()];
    let ann = app
        .tokens
        .create("ann", "t", scopes.clone(), None)
        .await
        .unwrap()
        .token;
    let bob = app
        .tokens
        .create("bob", "t", scopes, None)
        .await
        .unwrap()
        .token;
    let mut seen: Vec<String> = Vec::new();
    let mut secrets: Vec<String> = Vec::new();

    // Listed without a token; a member not connected is sent to the start page.
    let mut first = Value::Null;
    for _ in 0..100 {
        first = whoami(&app, &ann).await;
        if !first.to_string().contains("Unknown tool") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(first["result"]["isError"], true, "{first}");
    let start = format!("{}/portal/connections/oauth/py/start", app.base());
    assert!(text(&first).contains(&start), "{first}");

    // A client that can open URLs: an `input_required` round naming the
    // start page, whose retry runs once the member connected.
    let can_open = json!({"_meta": {
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}}
    }});
    let asked = call_tool(&app, &ann, "py_whoami", can_open.clone()).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let request = &asked["result"]["inputRequests"]["credential"];
    assert_eq!(request["params"]["mode"], "url", "{asked}");
    assert_eq!(request["params"]["url"], start.as_str(), "{asked}");
    let mut retry = can_open;
    retry["inputResponses"] = json!({"credential": {"action": "accept"}});
    retry["requestState"] = asked["result"]["requestState"].clone();

    let ann_browser = Browser::sign_in(&app, "ann").await;
    let bob_browser = Browser::sign_in(&app, "bob").await;
    let ann_callback = connect(&app, &ann_browser, "ann").await;
    let done = call_tool(&app, &ann, "py_whoami", retry).await;
    assert_eq!(text(&done), "ann", "{done}");
    seen.push(done.to_string());
    connect(&app, &bob_browser, "bob").await;

    // A callback is taken once, by the session that started it; junk is refused.
    assert_eq!(
        ann_browser.get(&ann_callback).await.status(),
        StatusCode::BAD_REQUEST
    );
    let base = format!("{}/portal/connections/oauth/callback", app.base());
    let _started = ann_browser.get(&start_of(&app)).await;
    let state_of = |url: &str| {
        let url = url::Url::parse(url).unwrap();
        let (_, state) = url.query_pairs().find(|(k, _)| k == "state").unwrap();
        state.into_owned()
    };
    let stolen = format!("{base}?code=x&state={}", state_of(&ann_callback));
    assert_eq!(
        bob_browser.get(&stolen).await.status(),
        StatusCode::BAD_REQUEST
    );
    for junk in [
        "",
        "?state=nope",
        "?state=..&code=%00",
        "?state=py&error=access_denied",
    ] {
        let status = ann_browser.get(&format!("{base}{junk}")).await.status();
        assert!(status.is_client_error(), "{junk}: {status}");
    }
    let anonymous = Browser::new().get(&stolen).await.status();
    assert!(anonymous.is_client_error(), "{anonymous}");
    let page = ann_browser
        .get(&format!("{}/portal/connections", app.base()))
        .await;
    let page = page.text().await.unwrap();
    assert!(
        page.contains("id=\"oauth-py\"") && page.contains("connected "),
        "{page}"
    );

    // Each member's call carries their own token; each call refreshes a
    // token that ends within the margin.
    for _ in 0..2 {
        for (token, member) in [(&ann, "ann"), (&bob, "bob")] {
            let before = tokens_of(&vault, member).await.expect("connected");
            let reply = whoami(&app, token).await;
            assert_eq!(reply["result"]["isError"], false, "{reply}");
            assert_eq!(text(&reply), member, "{reply}");
            let after = tokens_of(&vault, member).await.expect("still connected");
            assert_ne!(before.access_token, after.access_token, "refreshed");
            secrets.extend(before.secrets());
            secrets.extend(after.secrets());
            seen.push(reply.to_string());
        }
    }

    // Disconnecting deletes ann's tokens and revokes them at the provider.
    let last = tokens_of(&vault, "ann").await.unwrap();
    let page = ann_browser
        .get(&format!("{}/portal/connections", app.base()))
        .await;
    let csrf = hidden(&page.text().await.unwrap(), "csrf").unwrap();
    let url = format!("{}/portal/connections/oauth/py/disconnect", app.base());
    let gone = ann_browser.post(&url, &[("csrf", &csrf)]).await;
    assert_eq!(gone.status(), StatusCode::SEE_OTHER);
    assert!(tokens_of(&vault, "ann").await.is_none());
    let refresh = reqwest::Client::new()
        .post(&last.token_endpoint)
        .form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", last.refresh_token.as_deref().unwrap()),
            ("client_id", &last.client_id),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(refresh.status(), StatusCode::BAD_REQUEST, "revoked");
    assert_eq!(idp.issuer, last.token_endpoint[..idp.issuer.len()]);
    let again = whoami(&app, &ann).await;
    assert_eq!(again["result"]["isError"], true, "{again}");
    assert!(text(&again).contains(&start), "{again}");
    let forged = bob_browser.post(&url, &[("csrf", "x")]).await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let reply = whoami(&app, &bob).await;
    assert_eq!(text(&reply), "bob", "{reply}");
    seen.push(reply.to_string());
    secrets.extend(tokens_of(&vault, "bob").await.unwrap().secrets());

    // A refresh the provider refuses (bob's refresh token revoked there)
    // drops his tokens, and he is told to connect again.
    let bobs = tokens_of(&vault, "bob").await.unwrap();
    let revoked = reqwest::Client::new()
        .post(bobs.revocation_endpoint.as_deref().unwrap())
        .form(&[
            ("token", bobs.refresh_token.as_deref().unwrap()),
            ("client_id", &bobs.client_id),
        ])
        .send()
        .await
        .unwrap();
    assert!(revoked.status().is_success());
    let ended = whoami(&app, &bob).await;
    assert_eq!(ended["result"]["isError"], true, "{ended}");
    assert!(
        text(&ended).contains(&start) && text(&ended).contains("ended"),
        "{ended}"
    );
    assert!(tokens_of(&vault, "bob").await.is_none());
    seen.push(ended.to_string());

    // The audit names the kind, never a token.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let trail = app.store.audit_tail(None, 0, 200).await.unwrap();
    let kinds: Vec<(&str, &str, &str)> = (trail.iter())
        .filter(|r| r.method == "tools/call" && r.target == "py_whoami" && r.outcome == "ok")
        .map(|r| (r.user.as_str(), r.outcome.as_str(), r.credential.as_str()))
        .collect();
    assert!(kinds.len() >= 5, "{kinds:?}");
    assert!(kinds.iter().all(|k| k.2 == "member_oauth"), "{kinds:?}");
    for method in [
        "portal/connections/oauth/connect",
        "portal/connections/oauth/disconnect",
    ] {
        assert!(
            trail.iter().any(|r| r.method == method && r.target == "py"),
            "{method}"
        );
    }
    seen.push(serde_json::to_string(&trail).unwrap());
    let metrics = reqwest::get(format!("{}/metrics", app.base()))
        .await
        .unwrap();
    seen.push(metrics.text().await.unwrap());
    seen.push(logs.text());
    assert!(secrets.len() >= 8);
    for secret in &secrets {
        for (i, text) in seen.iter().enumerate() {
            assert!(!text.contains(secret.as_str()), "a token leaked in #{i}");
        }
    }
}
