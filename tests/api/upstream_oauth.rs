//! An upstream with `auth = "oauth"` (issue 29, part 3): teamgate finds its
//! authorization server through the upstream's RFC 9728 metadata, registers
//! itself there (RFC 7591), and runs each member's authorization code flow
//! with PKCE from the portal. The upstream (the official Python SDK,
//! tests/interop/upstream_oauth_py.py) is a protected resource through the
//! SDK's own auth: every request, listing included, needs a JWT access token
//! from the real `oidc-provider` for its resource, so its tools are listed
//! over the first member's connection. Members connect in headless chromium:
//! signed in at the provider, they consent to teamgate's client on the
//! provider's own page and land back on the portal. The provider's access
//! tokens live 30 s, under teamgate's 60 s margin, so every call refreshes
//! first. Disconnecting deletes and revokes the member's tokens, and no
//! token appears in logs, audit rows, /metrics or results. Screenshots:
//! `target/portal-screenshots/upoauth-NN-name.png`.

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
    credentials::{Logs, Recording, call_tool},
    helpers::{TestApp, repo_path, spawn_app_on},
    portal_browser::driver::Chrome,
    portal_idp::{Browser, Idp, hidden, location, portal_config},
    upstream_pins::python,
};

pub(crate) const SEALING_KEY: &str = "upstream-oauth-sealing-key-0123456789abcdef";
/// The `py` row of the Connections page's table of services.
const ROW: &str = "//table[@id='oauth-connections']/tbody/tr[@id='oauth-py']";

/// The Python upstream, ended when dropped.
pub(crate) struct Upstream {
    child: Child,
    pub(crate) url: String,
}

impl Upstream {
    pub(crate) fn start(python: &str, issuer: &str) -> Self {
        Self::start_on(python, issuer, 0)
    }

    /// On `port` (0: any free one).
    pub(crate) fn start_on(python: &str, issuer: &str, port: u16) -> Self {
        let script = repo_path("tests/interop/upstream_oauth_py.py");
        let mut child = Command::new(python)
            .arg(script)
            .args(["--issuer", issuer, "--port", &port.to_string()])
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

/// teamgate (with the portal) fronting the protected Python upstream as
/// `py`, configured with `fields` beside its name and URL.
pub(crate) async fn app_fronting(python: &str, fields: Value) -> (TestApp, Idp, Upstream) {
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
            let mut upstream = json!({"name": "py", "url": url});
            upstream
                .as_object_mut()
                .unwrap()
                .extend(fields.as_object().unwrap().clone());
            let upstream: UpstreamConfig = serde_json::from_value(upstream).unwrap();
            c.upstreams = vec![upstream];
        },
        Arc::new(SystemClock),
    )
    .await;
    (app, idp, upstream)
}

/// `member` signs in to the portal in `chrome` (at the provider's login
/// form), opens Connections, presses Connect for `py`, consents to
/// teamgate's client on the provider's own page, and lands back on the
/// Connections page, connected; then signs out.
pub(crate) async fn connect_in_browser(chrome: &mut Chrome, member: &str) {
    chrome.sign_in(member).await;
    chrome.goto("/portal/connections").await;
    assert_eq!(chrome.text(&format!("{ROW}/td[2]")).await, "not connected");
    chrome.shot(&format!("{member}-not-connected")).await;
    let connect = chrome.wait(&format!("{ROW}//a[.='Connect']")).await;
    connect.click().await.unwrap();
    let consent = "//form[input[@name='prompt' and @value='consent']]//button";
    let button = chrome.wait(consent).await;
    let url = chrome.client.current_url().await.unwrap();
    assert!(
        !url.as_str().starts_with(&chrome.base),
        "the provider's consent page, not teamgate's: {url}"
    );
    chrome.shot(&format!("{member}-provider-consent")).await;
    button.click().await.unwrap();
    let connected = format!("{ROW}/td[2][starts-with(normalize-space(), 'connected ')]");
    chrome.wait(&connected).await;
    let url = chrome.client.current_url().await.unwrap();
    assert_eq!(url.as_str(), format!("{}/portal/connections", chrome.base));
    chrome.wait(&format!("{ROW}//button[.='Disconnect']")).await;
    chrome.shot(&format!("{member}-connected")).await;
    chrome.sign_out().await;
}

pub(crate) async fn whoami(app: &TestApp, token: &str) -> Value {
    call_tool(app, token, "py_whoami", json!({})).await
}

/// `py_whoami` called until teamgate lists it (at most 10 s).
pub(crate) async fn whoami_once_listed(app: &TestApp, token: &str) -> Value {
    for _ in 0..100 {
        let reply = whoami(app, token).await;
        if !reply.to_string().contains("Unknown tool") {
            return reply;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("py_whoami was never listed");
}

pub(crate) fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

pub(crate) async fn tokens_of(vault: &Vault, member: &str) -> Option<TokenSet> {
    let value = vault.get(member, "oauth:py").await.unwrap()?;
    Some(TokenSet::read(&value).expect("a token set"))
}

/// A personal token of `member` with `scopes`.
pub(crate) async fn token(app: &TestApp, member: &str, scopes: &[&str]) -> String {
    let scopes = scopes.iter().map(|s| s.to_string()).collect();
    let created = app.tokens.create(member, "t", scopes, None).await.unwrap();
    created.token
}

/// No secret in any text; the audit names the member OAuth kind.
pub(crate) async fn nothing_leaked(
    app: &TestApp,
    logs: &Recording,
    mut seen: Vec<String>,
    secrets: &[String],
) {
    tokio::time::sleep(Duration::from_millis(700)).await;
    let trail = app.store.audit_tail(None, 0, 200).await.unwrap();
    let kinds: Vec<(&str, &str)> = (trail.iter())
        .filter(|r| r.method == "tools/call" && r.target == "py_whoami" && r.outcome == "ok")
        .map(|r| (r.user.as_str(), r.credential.as_str()))
        .collect();
    assert!(kinds.len() >= 3, "{kinds:?}");
    assert!(kinds.iter().all(|k| k.1 == "member_oauth"), "{kinds:?}");
    assert!(
        trail
            .iter()
            .any(|r| r.method == "portal/connections/oauth/connect" && r.target == "py"),
        "the connection is audited"
    );
    seen.push(serde_json::to_string(&trail).unwrap());
    let metrics = teamgate::outbound::client()
        .get(format!("{}/metrics", app.base()))
        .send()
        .await
        .unwrap();
    seen.push(metrics.text().await.unwrap());
    seen.push(logs.text());
    assert!(secrets.len() >= 4, "{}", secrets.len());
    for secret in secrets {
        for (i, text) in seen.iter().enumerate() {
            assert!(!text.contains(secret.as_str()), "a token leaked in #{i}");
        }
    }
}

#[tokio::test]
async fn upstream_oauth_each_member_connects_their_own_account() {
    let Some((python, _)) = python() else {
        return;
    };
    let logs = Logs::capture();
    let fields = json!({"auth": "oauth", "oauth": {"scopes": ["mcp"]}});
    let (app, idp, _upstream) = app_fronting(&python, fields).await;
    let vault = Vault::new(app.store.clone(), &[SEALING_KEY]);
    let ann = token(&app, "ann", &["tools:*"]).await;
    let bob = token(&app, "bob", &["tools:*"]).await;
    let (mut seen, mut secrets) = (Vec::new(), Vec::new());
    let start = format!("{}/portal/connections/oauth/py/start", app.base());

    // The upstream lists nothing without a token: no tool until a member connects.
    let unlisted = whoami(&app, &ann).await;
    assert!(unlisted.to_string().contains("Unknown tool"), "{unlisted}");
    let mut chrome = Chrome::start_with_prefix(&app.base(), "upoauth-").await;
    connect_in_browser(&mut chrome, "ann").await;
    let first = whoami_once_listed(&app, &ann).await;
    assert_eq!(text(&first), "ann", "{first}");
    seen.push(first.to_string());

    // bob sees the tool ann's connection listed, and is sent to connect his
    // own account: a tool error naming the start page, or an
    // `input_required` round whose retry runs once he connected.
    let told = whoami(&app, &bob).await;
    assert_eq!(told["result"]["isError"], true, "{told}");
    assert!(text(&told).contains(&start), "{told}");
    let can_open = json!({"_meta": {
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}}
    }});
    let asked = call_tool(&app, &bob, "py_whoami", can_open.clone()).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let request = &asked["result"]["inputRequests"]["credential"];
    assert_eq!(request["params"]["mode"], "url", "{asked}");
    assert_eq!(request["params"]["url"], start.as_str(), "{asked}");
    let mut retry = can_open;
    retry["inputResponses"] = json!({"credential": {"action": "accept"}});
    retry["requestState"] = asked["result"]["requestState"].clone();
    connect_in_browser(&mut chrome, "bob").await;
    let done = call_tool(&app, &bob, "py_whoami", retry).await;
    assert_eq!(text(&done), "bob", "{done}");
    seen.push(done.to_string());

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

    // A callback is taken once, by the session that started it; junk is refused.
    let ann_browser = Browser::sign_in(&app, "ann").await;
    let bob_browser = Browser::sign_in(&app, "bob").await;
    let started = ann_browser.get(&start).await;
    let authorize = url::Url::parse(&location(&started, &start)).unwrap();
    let (_, state) = authorize.query_pairs().find(|(k, _)| k == "state").unwrap();
    let base = format!("{}/portal/connections/oauth/callback", app.base());
    let stolen = format!("{base}?code=x&state={state}");
    assert_eq!(
        bob_browser.get(&stolen).await.status(),
        StatusCode::BAD_REQUEST
    );
    let spent = ann_browser.get(&stolen).await.status();
    assert!(
        spent.is_client_error() || spent.is_server_error(),
        "{spent}"
    );
    assert_eq!(
        ann_browser.get(&stolen).await.status(),
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

    // Disconnecting deletes ann's tokens and revokes them at the provider.
    let last = tokens_of(&vault, "ann").await.unwrap();
    let page = ann_browser
        .get(&format!("{}/portal/connections", app.base()))
        .await;
    let csrf = hidden(&page.text().await.unwrap(), "csrf").unwrap();
    let url = format!("{}/portal/connections/oauth/py/disconnect", app.base());
    let forged = bob_browser.post(&url, &[("csrf", "x")]).await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let gone = ann_browser.post(&url, &[("csrf", &csrf)]).await;
    assert_eq!(gone.status(), StatusCode::SEE_OTHER);
    assert!(tokens_of(&vault, "ann").await.is_none());
    let refresh = teamgate::outbound::client()
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
    let reply = whoami(&app, &bob).await;
    assert_eq!(text(&reply), "bob", "{reply}");
    seen.push(reply.to_string());
    secrets.extend(tokens_of(&vault, "bob").await.unwrap().secrets());

    // A refresh the provider refuses (bob's refresh token revoked there)
    // drops his tokens, and he is told to connect again.
    let bobs = tokens_of(&vault, "bob").await.unwrap();
    let revoked = teamgate::outbound::client()
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
    let trail = app.store.audit_tail(None, 0, 200).await.unwrap();
    assert!(
        trail
            .iter()
            .any(|r| r.method == "portal/connections/oauth/disconnect")
    );
    chrome.close().await;
    nothing_leaked(&app, &logs, seen, &secrets).await;
}
