//! Issue 44, members' OAuth to upstreams. Item 2: the audience of a
//! member's token is the upstream's configured URL, never what the
//! upstream's RFC 9728 metadata claims (§3.3: its `resource` must be the
//! upstream's URL, else the metadata is refused). Item 6 (`discovery.rs`):
//! the requests discovery makes go only where the rule allows.
//!
//! The upstream here is written to misbehave: an HTTP server that answers
//! every MCP request with 401 and whatever protected resource metadata the
//! test sets; its authorization server is the real `oidc-provider`, which
//! issues a JWT for whichever resource it is asked for (the attack).

mod discovery;

use std::sync::{Arc, Mutex};

use axum::{
    Json, Router,
    extract::State,
    http::{StatusCode, header},
    response::IntoResponse,
    routing::{get, post},
};
use base64::Engine;
use reqwest::Response;
use serde_json::{Value, json};
use teamgate::{
    config::{AuthMode, UpstreamConfig},
    registry::oauth::TokenSet,
    store::{SystemClock, Vault},
};

use crate::{
    credentials::Logs,
    helpers::{TestApp, spawn_app_on},
    portal_idp::{Browser, Idp, location, portal_config},
};

pub(crate) const SEALING_KEY: &str = "sec44-upoauth-sealing-key-0123456789abcdef";

/// What the misbehaving upstream says, changed by the test as it goes.
#[derive(Clone, Default)]
pub(crate) struct Says {
    /// The 401's `resource_metadata` (empty: its own well-known URL).
    pub(crate) challenge: String,
    /// Its metadata's `resource` (empty: its own URL).
    pub(crate) resource: String,
    /// Its metadata's authorization server.
    pub(crate) issuer: String,
    /// The authorization server metadata it serves itself at
    /// `/.well-known/oauth-authorization-server` (for an issuer on it).
    pub(crate) server: Value,
}

/// The misbehaving upstream on 127.0.0.1: its URL (`/mcp`) and its words.
pub(crate) struct Liar {
    pub(crate) url: String,
    pub(crate) origin: String,
    pub(crate) says: Arc<Mutex<Says>>,
}

impl Liar {
    pub(crate) async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let says = Arc::new(Mutex::new(Says::default()));
        let state = (says.clone(), origin.clone());
        let app = Router::new()
            .route("/mcp", post(challenge))
            .route("/.well-known/oauth-protected-resource/mcp", get(metadata))
            .route("/.well-known/oauth-authorization-server", get(server))
            .with_state(state);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            url: format!("{origin}/mcp"),
            origin,
            says,
        }
    }

    pub(crate) fn say(&self, change: impl FnOnce(&mut Says)) {
        change(&mut self.says.lock().unwrap());
    }
}

type Words = (Arc<Mutex<Says>>, String);

async fn challenge(State((says, origin)): State<Words>) -> impl IntoResponse {
    let named = says.lock().unwrap().challenge.clone();
    let named = if named.is_empty() {
        format!("{origin}/.well-known/oauth-protected-resource/mcp")
    } else {
        named
    };
    let challenge = format!("Bearer error=\"invalid_token\", resource_metadata=\"{named}\"");
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge)],
    )
}

async fn metadata(State((says, origin)): State<Words>) -> Json<Value> {
    let says = says.lock().unwrap().clone();
    let resource = if says.resource.is_empty() {
        format!("{origin}/mcp")
    } else {
        says.resource
    };
    Json(json!({
        "resource": resource,
        "authorization_servers": [says.issuer],
        "scopes_supported": ["mcp"],
    }))
}

async fn server(State((says, _)): State<Words>) -> Json<Value> {
    Json(says.lock().unwrap().server.clone())
}

/// teamgate with the portal fronting the liar as `up` with `auth = "oauth"`
/// (and `auto`, when given, as `auto` configured without `auth`); the real
/// provider as the portal's and the liars' authorization server.
pub(crate) async fn fronting(liar: &Liar, auto: Option<&Liar>) -> (TestApp, Idp) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let redirect = format!("http://{addr}/portal/callback");
    let idp = Idp::start_with(&redirect, &["--upstream-oauth", "30"]).await;
    let (issuer, url) = (idp.issuer.clone(), liar.url.clone());
    let auto_url = auto.map(|a| a.url.clone());
    for liar in std::iter::once(liar).chain(auto) {
        liar.say(|s| s.issuer = issuer.clone());
    }
    let app = spawn_app_on(
        listener,
        move |c| {
            c.auth.mode = AuthMode::Required;
            c.server.public_url = format!("http://{addr}/mcp");
            c.portal = Some(portal_config(&issuer));
            c.credentials =
                serde_json::from_value(json!({"keys": [SEALING_KEY], "slots": []})).unwrap();
            c.tools.http_allowlist = vec![url.clone()];
            let upstream = json!({"name": "up", "url": url, "auth": "oauth"});
            c.upstreams = vec![serde_json::from_value::<UpstreamConfig>(upstream).unwrap()];
            if let Some(auto) = auto_url {
                c.tools.http_allowlist.push(auto.clone());
                let upstream = json!({"name": "auto", "url": auto});
                c.upstreams.push(serde_json::from_value(upstream).unwrap());
            }
        },
        Arc::new(SystemClock),
    )
    .await;
    (app, idp)
}

pub(crate) fn start_url(app: &TestApp) -> String {
    format!("{}/portal/connections/oauth/up/start", app.base())
}

/// The page's text, for a refusal shown to the member.
pub(crate) async fn refused(response: Response) -> String {
    let status = response.status();
    let text = response.text().await.unwrap();
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{text}");
    text
}

/// From the authorization request at the provider, through its sign-in
/// and consent forms, to teamgate's callback, which the member visits.
async fn through_the_provider(browser: &Browser, app: &TestApp, mut url: String) -> Response {
    let callback = format!("{}/portal/connections/oauth/callback", app.base());
    for _ in 0..20 {
        if url.starts_with(&callback) {
            return browser.get(&url).await;
        }
        let response = browser.get(&url).await;
        if response.status().is_redirection() {
            url = location(&response, &url);
            continue;
        }
        assert_eq!(response.status(), StatusCode::OK, "{url}");
        let html = response.text().await.unwrap();
        let action = (html.split("action=\"").nth(1))
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("a form at {url}: {html}"));
        let action = url::Url::parse(&url).unwrap().join(action).unwrap();
        let prompt = if html.contains("name=\"login\"") {
            "login"
        } else {
            "consent"
        };
        let form = [("prompt", prompt), ("login", "ann"), ("password", "any")];
        let posted = browser.post(action.as_str(), &form).await;
        assert!(posted.status().is_redirection(), "{action}");
        url = location(&posted, action.as_str());
    }
    panic!("the provider never sent the member back to teamgate");
}

/// The `aud` of a JWT access token.
fn audience(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice::<Value>(&bytes).unwrap()["aud"].clone()
}

#[tokio::test]
async fn upstream_metadata_naming_another_resource_gets_no_token_for_it() {
    let logs = Logs::capture();
    let liar = Liar::start().await;
    let (app, _idp) = fronting(&liar, None).await;
    let ann = Browser::sign_in(&app, "ann").await;
    let start = start_url(&app);

    // The upstream names another service's resource: refused, said to the
    // member and logged; the provider is never asked for that token.
    let other = format!("{}/mcp", app.base());
    liar.say(|s| s.resource = other.clone());
    let text = refused(ann.get(&start).await).await;
    for needle in [other.as_str(), liar.url.as_str(), "RFC 9728"] {
        assert!(text.contains(needle), "{needle}: {text}");
        assert!(logs.text().contains(needle), "{needle} logged");
    }
    // Another path on the upstream's own origin is another resource too.
    liar.say(|s| s.resource = format!("{}/other", liar.origin));
    refused(ann.get(&start).await).await;

    // The same URL written otherwise (scheme and host case, the default
    // port spelled out is not at issue on a random port) is the upstream's:
    // the provider is asked for a token for the configured URL as written.
    liar.say(|s| s.resource = liar.url.replacen("http://", "HTTP://", 1));
    let started = ann.get(&start).await;
    assert_eq!(started.status(), StatusCode::SEE_OTHER);
    let authorize = location(&started, &start);
    let query: Vec<(String, String)> = (url::Url::parse(&authorize).unwrap().query_pairs())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let resources: Vec<&str> = (query.iter())
        .filter(|(k, _)| k == "resource")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(resources, [liar.url.as_str()], "{authorize}");

    // The code exchange asks for the same resource: the token the provider
    // issued is for the upstream, and so is the set teamgate keeps.
    let back = through_the_provider(&ann, &app, authorize).await;
    assert_eq!(back.status(), StatusCode::SEE_OTHER);
    let vault = Vault::new(app.store.clone(), &[SEALING_KEY]);
    let kept = vault.get("ann", "oauth:up").await.unwrap().expect("kept");
    let set = TokenSet::read(&kept).unwrap();
    assert_eq!(set.resource, liar.url);
    assert_eq!(audience(&set.access_token), json!(liar.url));
}
