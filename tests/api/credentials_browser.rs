//! Per-member credential slots (issue 29) with a real member at a real
//! browser: the official TypeScript client calls `crm_me` on a 2025-11-25
//! session while the member's `crm` slot is empty; the URL-mode elicitation
//! names the portal's Connections page, which headless chromium opens; the
//! member signs in at the `oidc-provider`, sets the value in the form (the
//! page says it is set and never shows it), the client accepts, and the
//! call returns the member's own CRM account. A second member, with a value
//! of their own, gets their own account. Screenshots are saved as
//! `target/portal-screenshots/cred-NN-name.png`.

use std::{process::Stdio, time::Duration};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::{
    credentials::{ANN_KEY, BOB_KEY, credentials_app, crm},
    helpers::TestApp,
    portal_browser::{driver::Chrome, ts_script},
};

/// The `crm` row of the Connections table.
const ROW: &str = "//table[@id='connections']/tbody/tr[@id='slot-crm']";

/// The next line the script prints, within `wait`; `None` at its end.
async fn next_line(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    wait: Duration,
) -> Option<String> {
    tokio::time::timeout(wait, lines.next_line())
        .await
        .expect("the TS client says something in time")
        .unwrap()
}

/// `member` (whose token is `token`) calls `crm_me` through
/// tests/interop/ts_credential_call.mjs with an empty slot, is sent to the
/// Connections page, signs in there in `chrome`, sets `key` and lets the
/// client accept; the call's result, and all the script printed (stdout
/// and stderr).
async fn set_when_asked(
    app: &TestApp,
    chrome: &mut Chrome,
    member: &str,
    token: &str,
    key: &str,
) -> (Value, String) {
    let mut child = ts_script("ts_credential_call.mjs")
        .args(["--url", &app.url, "--token", token, "--tool", "crm_me"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    let mut stderr = child.stderr.take().unwrap();
    let errors = tokio::spawn(async move {
        let mut text = String::new();
        stderr.read_to_string(&mut text).await.ok();
        text
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = String::new();

    // The client is sent to the portal's Connections page.
    let first = next_line(&mut lines, Duration::from_secs(20)).await;
    let first = first.expect("the TS client prints the elicitation");
    printed.push_str(&first);
    let url = first
        .strip_prefix("ELICIT ")
        .unwrap_or_else(|| panic!("an ELICIT line: {first}"))
        .to_owned();
    assert_eq!(url, format!("{}/portal/connections", app.base()));

    // The browser opens it: sign in first, then land on that page (issue 51 item 9).
    chrome.client.goto(&url).await.unwrap();
    chrome.wait("//form//input[@name='login']").await;
    chrome
        .shot(&format!("{member}-connections-signed-out"))
        .await;
    chrome
        .sign_in_at_provider(member, "/portal/connections")
        .await;
    chrome.wait("//h1[.='Your connections']").await;
    assert_eq!(chrome.text(&format!("{ROW}/td[3]")).await, "not set");
    assert!(
        chrome
            .text(&format!("{ROW}/td[2]"))
            .await
            .contains("CRM API key")
    );
    chrome.shot(&format!("{member}-connections-empty")).await;

    // The member sets the value: the page says so and never shows it.
    let input = chrome.wait(&format!("{ROW}//input[@name='value']")).await;
    assert_eq!(
        input.attr("type").await.unwrap().as_deref(),
        Some("password")
    );
    input.send_keys(key).await.unwrap();
    chrome
        .wait(&format!("{ROW}//button[.='Set']"))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .wait(&format!(
            "{ROW}/td[3][starts-with(normalize-space(), 'set ')]"
        ))
        .await;
    chrome.wait(&format!("{ROW}//button[.='Replace']")).await;
    chrome.wait(&format!("{ROW}//button[.='Delete']")).await;
    let html = chrome.client.source().await.unwrap();
    assert!(!html.contains(key), "the page shows the value");
    chrome.shot(&format!("{member}-connections-set")).await;

    // The client accepts; the call goes on with the member's value.
    stdin.write_all(b"accept\n").await.unwrap();
    stdin.flush().await.unwrap();
    let mut result = None;
    while let Some(line) = next_line(&mut lines, Duration::from_secs(20)).await {
        printed.push('\n');
        printed.push_str(&line);
        if let Some(json) = line.strip_prefix("RESULT ") {
            result = Some(serde_json::from_str(json).unwrap());
        }
    }
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the TS client ends")
        .unwrap();
    printed.push('\n');
    printed.push_str(&errors.await.unwrap());
    assert!(status.success(), "{printed}");
    chrome.sign_out().await;
    (
        result.unwrap_or_else(|| panic!("a RESULT line: {printed}")),
        printed,
    )
}

#[tokio::test]
async fn credentials_browser_members_set_their_value_when_asked() {
    let api = crm().await;
    let (app, _idp) = credentials_app(&api).await;
    let mut chrome = Chrome::start_with_prefix(&app.base(), "cred-").await;
    let mut printed = Vec::new();
    for (member, key, other) in [("ann", ANN_KEY, "bob"), ("bob", BOB_KEY, "ann")] {
        let token = app
            .tokens
            .create(member, "t", vec!["tools:*".into()], None)
            .await
            .unwrap()
            .token;
        let (result, output) = set_when_asked(&app, &mut chrome, member, &token, key).await;
        assert_ne!(result["isError"], true, "{result}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            text.contains(&format!("\"account\":\"{member}\"")),
            "{member} sees their own account: {result}"
        );
        assert!(
            !text.contains(&format!("\"account\":\"{other}\"")),
            "{result}"
        );
        printed.push(output);
    }

    // Neither value ever reached the client (results are scrubbed, the
    // elicitation only names the page).
    for output in &printed {
        for key in [ANN_KEY, BOB_KEY] {
            assert!(
                !output.contains(key),
                "{key} in the client's output: {output}"
            );
        }
    }
    let shots = chrome.close().await;
    assert_eq!(shots.len(), 8, "{shots:?}");
    assert!(
        shots.iter().all(|s| s
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("cred-"))),
        "{shots:?}"
    );
}
