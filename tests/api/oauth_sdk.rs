//! The official TypeScript and Python SDK clients' OAuth against teamgate as
//! the authorization server (tests/interop/ts_oauth.mjs on Node 22,
//! tests/interop/py_oauth.py on .cache/venv's mcp 2.3): discovery from the
//! 401, the client identified both ways (RFC 7591 registration, and for the
//! TS SDK a Client ID Metadata Document served over https on loopback),
//! authorization, token, a tool call, refresh, and a revoked grant refused.
//! The TS SDK's authorization runs in the headless chromium of the portal
//! tests (`browser.rs`: sign-in at the real identity provider, the consent
//! page, the redirect to the client's own loopback listener); the Python
//! client's authorization URL is followed by the browser-less browser, and
//! the code handed back on its stdin.

pub(crate) mod browser;
mod cimd_tls;

use std::{process::Stdio, sync::atomic::Ordering, time::Duration};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::{
    helpers::{TestApp, repo_path},
    oauth_flow::{REDIRECT, consent, oauth_app, param},
    portal_idp::Browser,
};

/// Runs an SDK client's script against `app`, playing its browser; its output.
async fn run_sdk(app: &TestApp, program: &str, script: &str) -> String {
    let mut command = tokio::process::Command::new(repo_path(program));
    command
        .arg(repo_path(script))
        .args(["--url", &format!("{}/mcp", app.base())]);
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the SDK client runs (scripts/install-test-deps.sh)");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut output = String::new();
    let read = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            output.push_str(&line);
            output.push('\n');
            if let Some(url) = line.strip_prefix("AUTHORIZE ") {
                if output.matches("AUTHORIZE ").count() > 1 {
                    continue; // the revoked grant's new authorization: not followed
                }
                let browser = Browser::new();
                let back = consent(app, &browser, url, "ann").await;
                assert!(back.starts_with(REDIRECT), "{back}");
                let code = param(&back, "code").expect("a code");
                stdin
                    .write_all(format!("CODE {code} {back}\n").as_bytes())
                    .await
                    .unwrap();
                stdin.flush().await.unwrap();
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(90), read)
        .await
        .expect("the SDK client finishes within 90 s");
    let status = child.wait().await.unwrap();
    assert!(status.success(), "{script} failed:\n{output}");
    output
}

/// Runs tests/interop/ts_oauth.mjs (identified by the metadata document
/// `cimd` if given), its authorization followed in headless chromium by ann
/// expecting a consent page naming `client_name`; its output and the URL the
/// browser landed on.
async fn run_ts(
    app: &TestApp,
    cimd: Option<&str>,
    client_name: &str,
    label: &str,
) -> (String, String) {
    let mut command = tokio::process::Command::new(repo_path(".cache/bin/node22"));
    command
        .arg(repo_path("tests/interop/ts_oauth.mjs"))
        .args(["--url", &format!("{}/mcp", app.base())]);
    if let Some(id) = cimd {
        command.args(["--cimd", id]);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the SDK client runs (scripts/install-test-deps.sh)");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut output = String::new();
    let mut landed = None;
    let read = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            output.push_str(&line);
            output.push('\n');
            // The revoked grant's new authorization (the second) is not followed.
            if let Some(url) = line.strip_prefix("AUTHORIZE ")
                && landed.is_none()
            {
                landed = Some(
                    browser::authorize(&app.base(), url, "ann", client_name, label, SIGNED_IN)
                        .await,
                );
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(120), read)
        .await
        .expect("the SDK client finishes within 120 s");
    let status = child.wait().await.unwrap();
    assert!(status.success(), "ts_oauth.mjs failed:\n{output}");
    let landed = landed.expect("an authorization URL");
    assert!(
        param(&landed, "code").is_some()
            && param(&landed, "iss") == Some(format!("{}/mcp", app.base())),
        "the code and the issuer (RFC 9207) at the redirect URI: {landed}"
    );
    (output, landed)
}

/// What ts_oauth.mjs's loopback listener shows once it has the code.
const SIGNED_IN: &str = "//h1[.='Signed in']";

const TS_CHECKS: [&str; 7] = [
    "ok - first connection is challenged",
    "ok - client identified",
    "ok - code received at the loopback redirect URI",
    "ok - code exchanged for tokens",
    "ok - tool called with the access token",
    "ok - refreshed and rotated",
    "ok - revoked grant refused",
];

#[tokio::test]
async fn oauth_sdk_client_registers_signs_in_in_the_browser_calls_refreshes_and_is_revoked() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let (output, _) = run_ts(&app, None, "ts-oauth", "ts-registered").await;
    for check in TS_CHECKS {
        assert!(output.contains(check), "{check}:\n{output}");
    }
}

#[tokio::test]
async fn oauth_sdk_client_with_a_metadata_document_over_https_signs_in_in_the_browser() {
    let site = cimd_tls::serve("TS SDK client (metadata document)").await;
    let (app, _idp) = oauth_app(|_| {}).await;
    let (output, _) = run_ts(
        &app,
        Some(&site.url),
        "TS SDK client (metadata document)",
        "ts-cimd",
    )
    .await;
    for check in TS_CHECKS {
        assert!(output.contains(check), "{check}:\n{output}");
    }
    assert!(
        site.fetches.load(Ordering::SeqCst) >= 1,
        "teamgate fetched the document"
    );
}

#[tokio::test]
async fn oauth_python_sdk_client_registers_signs_in_calls_refreshes_and_is_revoked() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let output = run_sdk(&app, ".cache/venv/bin/python", "tests/interop/py_oauth.py").await;
    for check in [
        "ok - signed in and called a tool",
        "ok - client registered",
        "ok - refreshed and rotated",
        "ok - revoked grant refused",
    ] {
        assert!(output.contains(check), "{check}:\n{output}");
    }
}
