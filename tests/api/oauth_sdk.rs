//! The official TypeScript and Python SDK clients' OAuth against teamgate as
//! the authorization server (tests/interop/ts_oauth.mjs on Node 22,
//! tests/interop/py_oauth.py on .cache/venv's mcp 2.3): discovery
//! from the 401, registration (RFC 7591; the SDK takes only https Client
//! ID Metadata Document URLs, so CIMD is covered over loopback by
//! `oauth_refusals.rs`), the authorization URL followed here by the browser-less
//! browser through the real identity provider and the consent page, the
//! code handed back, token, a tool call, refresh, and a revoked grant refused.

use std::{process::Stdio, time::Duration};

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

#[tokio::test]
async fn oauth_sdk_client_registers_signs_in_calls_refreshes_and_is_revoked() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let output = run_sdk(&app, ".cache/bin/node22", "tests/interop/ts_oauth.mjs").await;
    for check in [
        "ok - first connection is challenged",
        "ok - client identified",
        "ok - code exchanged for tokens",
        "ok - tool called with the access token",
        "ok - refreshed and rotated",
        "ok - revoked grant refused",
    ] {
        assert!(output.contains(check), "{check}:\n{output}");
    }
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
