//! The official TypeScript and Python SDK clients' OAuth against teamgate as
//! the authorization server (tests/interop/ts_oauth.mjs on Node 22,
//! tests/interop/py_oauth.py on .cache/venv's mcp 2.3): discovery from the
//! 401, the client identified both ways (RFC 7591 registration, and for the
//! TS SDK a Client ID Metadata Document served over https on loopback),
//! authorization, token, a tool call, refresh, and a revoked grant refused.
//! Both clients' authorization runs in the headless chromium of the portal
//! tests (`browser.rs`: sign-in at the real identity provider, the consent
//! page, the redirect to the client's own loopback listener).

pub(crate) mod browser;
mod cimd_tls;

use std::{process::Stdio, sync::atomic::Ordering, time::Duration};

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::{
    helpers::{TestApp, repo_path},
    oauth_flow::{oauth_app, param},
};

/// Runs an SDK client's `script` with `program` (identified by the metadata
/// document `cimd` if given), its authorization followed in headless
/// chromium by ann expecting a consent page naming `client_name`; its output
/// and the URL the browser landed on.
async fn run_sdk(
    app: &TestApp,
    (program, script): (&str, &str),
    cimd: Option<&str>,
    client_name: &str,
    label: &str,
) -> (String, String) {
    let mut command = tokio::process::Command::new(repo_path(program));
    command
        .arg(repo_path(script))
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
    assert!(status.success(), "{script} failed:\n{output}");
    let landed = landed.expect("an authorization URL");
    assert!(
        param(&landed, "code").is_some()
            && param(&landed, "iss") == Some(format!("{}/mcp", app.base())),
        "the code and the issuer (RFC 9207) at the redirect URI: {landed}"
    );
    (output, landed)
}

const TS: (&str, &str) = (".cache/bin/node22", "tests/interop/ts_oauth.mjs");
const PY: (&str, &str) = (".cache/venv/bin/python", "tests/interop/py_oauth.py");

/// What the scripts' loopback listeners show once they have the code.
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
    let (output, _) = run_sdk(&app, TS, None, "ts-oauth", "ts-registered").await;
    for check in TS_CHECKS {
        assert!(output.contains(check), "{check}:\n{output}");
    }
}

#[tokio::test]
async fn oauth_sdk_client_with_a_metadata_document_over_https_signs_in_in_the_browser() {
    let site = cimd_tls::serve("TS SDK client (metadata document)").await;
    let (app, _idp) = oauth_app(|_| {}).await;
    let (output, _) = run_sdk(
        &app,
        TS,
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
    let (output, _) = run_sdk(&app, PY, None, "py-oauth", "py-registered").await;
    for check in [
        "ok - signed in and called a tool",
        "ok - client registered",
        "ok - refreshed and rotated",
        "ok - revoked grant refused",
    ] {
        assert!(output.contains(check), "{check}:\n{output}");
    }
}
