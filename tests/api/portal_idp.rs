//! The portal tests' identity provider and browser-less browser: the real
//! `oidc-provider` (tests/interop/idp_oidc.mjs, Node 22) on a loopback port,
//! and an HTTP client that keeps cookies and follows redirects by hand, so a
//! test can stop at any step of a sign-in (a replayed or forged callback).

use std::{
    collections::BTreeMap,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use reqwest::{Response, StatusCode, header};
use serde_json::json;
use teamgate::{
    config::{AuthMode, Config, PortalConfig},
    store::{Clock, SystemClock},
};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::helpers::{TestApp, repo_path, spawn_app_on};

pub(crate) struct Idp {
    pub issuer: String,
    _child: tokio::process::Child,
}

impl Idp {
    /// The provider, its client redirecting to `redirect`. Fails loudly when
    /// Node 22 or the provider is not installed (scripts/install-test-deps.sh).
    pub(crate) async fn start(redirect: &str) -> Self {
        Self::start_with(redirect, &[]).await
    }

    /// `start` with more of the script's options.
    pub(crate) async fn start_with(redirect: &str, options: &[&str]) -> Self {
        let node = repo_path(".cache/bin/node22");
        let provider = repo_path(".cache/oidc-provider/node_modules/oidc-provider");
        assert!(
            node.exists() && provider.exists(),
            "Node 22 and oidc-provider are missing: run scripts/install-test-deps.sh"
        );
        let mut child = tokio::process::Command::new(node)
            .arg(repo_path("tests/interop/idp_oidc.mjs"))
            .args(["--redirect", redirect])
            .args(options)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node22 starts the provider");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the provider starts within 30 s")
            .unwrap()
            .expect("the provider prints its port");
        let port = line.strip_prefix("PORT ").expect("PORT <port>").to_owned();
        // Keep reading: a closed pipe would end the provider at its next line.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            issuer: format!("http://127.0.0.1:{port}"),
            _child: child,
        }
    }
}

/// The `[portal]` of the tests: ann (dev), bob (ops), cat (admins), dan
/// (guests: a group mapped to no scope).
pub(crate) fn portal_config(issuer: &str) -> PortalConfig {
    serde_json::from_value(json!({
        "issuer": issuer,
        "client_id": "teamgate",
        "client_secret": "portal-test-secret",
        "scopes": ["openid", "profile", "groups"],
        "admins": ["group:admins"],
        "grants": [
            {"group": "dev", "scopes": ["tools:*", "resources:read"]},
            {"group": "ops", "scopes": ["tools:test_simple_text"]},
            {"group": "admins", "scopes": ["*"]},
            {"group": "guests", "scopes": []},
        ],
    }))
    .expect("a portal configuration")
}

/// A teamgate with the portal and authentication on, and its provider.
pub(crate) async fn portal_app(clock: Arc<dyn Clock>) -> (TestApp, Idp) {
    portal_app_with(clock, |_| {}).await
}

/// `portal_app` with more configuration on top (`adjust` also gets the
/// server's address, e.g. for a loopback API the tools may call).
pub(crate) async fn portal_app_with(
    clock: Arc<dyn Clock>,
    adjust: impl FnOnce(&mut Config),
) -> (TestApp, Idp) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let idp = Idp::start(&format!("http://{addr}/portal/callback")).await;
    let issuer = idp.issuer.clone();
    let app = spawn_app_on(
        listener,
        move |c| {
            c.auth.mode = AuthMode::Required;
            c.server.public_url = format!("http://{addr}/mcp");
            c.portal = Some(portal_config(&issuer));
            adjust(c);
        },
        clock,
    )
    .await;
    (app, idp)
}

pub(crate) async fn portal_app_now() -> (TestApp, Idp) {
    portal_app(Arc::new(SystemClock)).await
}

/// A cookie-keeping client that does not follow redirects by itself. Like
/// a browser's, its cookies ignore the port (provider and teamgate share 127.0.0.1).
#[derive(Clone)]
pub(crate) struct Browser {
    client: reqwest::Client,
    jar: Arc<Mutex<BTreeMap<String, String>>>,
}

impl Browser {
    pub(crate) fn new() -> Self {
        Self {
            client: teamgate::outbound::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            jar: Arc::default(),
        }
    }

    fn cookies(&self) -> String {
        let jar = self.jar.lock().unwrap();
        jar.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn keep(&self, response: &Response) {
        let mut jar = self.jar.lock().unwrap();
        for value in response.headers().get_all(header::SET_COOKIE) {
            let text = value.to_str().unwrap();
            let pair = text.split(';').next().unwrap();
            if let Some((name, value)) = pair.split_once('=') {
                if value.is_empty()
                    || text.contains("Max-Age=0")
                    || text.contains("expires=Thu, 01 Jan 1970")
                {
                    jar.remove(name.trim());
                } else {
                    jar.insert(name.trim().to_owned(), value.to_owned());
                }
            }
        }
    }

    /// The portal's cookie value.
    pub(crate) fn portal_cookie(&self) -> Option<String> {
        self.jar.lock().unwrap().get("teamgate_portal").cloned()
    }

    pub(crate) fn set_portal_cookie(&self, value: &str) {
        self.jar
            .lock()
            .unwrap()
            .insert("teamgate_portal".into(), value.into());
    }

    pub(crate) async fn get(&self, url: &str) -> Response {
        let response = self
            .client
            .get(url)
            .header(header::COOKIE, self.cookies())
            .send()
            .await
            .unwrap();
        self.keep(&response);
        response
    }

    /// POSTs a form as a browser does from a no-referrer page (`Origin: null`).
    pub(crate) async fn post(&self, url: &str, form: &[(&str, &str)]) -> Response {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let response = self
            .client
            .post(url)
            .header(header::COOKIE, self.cookies())
            .header(header::ORIGIN, "null")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        self.keep(&response);
        response
    }

    /// Signs in at the provider as `user` up to its redirect back to
    /// teamgate; the callback URL, not yet visited.
    pub(crate) async fn authorize(&self, app: &TestApp, user: &str) -> String {
        let mut url = format!("{}/portal/login", app.base());
        for _ in 0..20 {
            let response = self.get(&url).await;
            if response.status().is_redirection() {
                let next = location(&response, &url);
                if next.starts_with(&format!("{}/portal/callback", app.base())) {
                    return next;
                }
                url = next;
                continue;
            }
            assert_eq!(response.status(), StatusCode::OK, "{url}");
            // The provider's login form: post the user's name (any password).
            let html = response.text().await.unwrap();
            let action = html
                .split("action=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_else(|| panic!("a form at {url}: {html}"))
                .to_owned();
            let action = absolute(&action, &url);
            let prompt = if html.contains("name=\"login\"") {
                "login"
            } else {
                "consent"
            };
            let posted = self
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
            if url.starts_with(&format!("{}/portal/callback", app.base())) {
                return url;
            }
        }
        panic!("the sign-in did not come back to teamgate");
    }

    /// A whole sign-in: afterwards the portal's cookie is a member's.
    pub(crate) async fn sign_in(app: &TestApp, user: &str) -> Self {
        let browser = Self::new();
        let callback = browser.authorize(app, user).await;
        let done = browser.get(&callback).await;
        assert_eq!(
            done.status(),
            StatusCode::SEE_OTHER,
            "callback: {}",
            done.text().await.unwrap()
        );
        browser
    }

    /// The CSRF token of the forms on a portal page.
    pub(crate) async fn csrf(&self, app: &TestApp) -> String {
        let html = self
            .get(&format!("{}/portal/", app.base()))
            .await
            .text()
            .await
            .unwrap();
        hidden(&html, "csrf").expect("a CSRF field on the page")
    }
}

pub(crate) fn hidden(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let rest = html.split(&marker).nth(1)?;
    Some(rest.split('"').next()?.to_owned())
}

pub(crate) fn location(response: &Response, from: &str) -> String {
    let to = response.headers()[header::LOCATION].to_str().unwrap();
    absolute(to, from)
}

fn absolute(to: &str, from: &str) -> String {
    url::Url::parse(from).unwrap().join(to).unwrap().to_string()
}
