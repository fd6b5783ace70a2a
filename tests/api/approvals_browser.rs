//! Issue 65 part 2 in headless chromium: "two members signed in at the
//! real OpenID provider: one asks, the other approves in the browser, with
//! the TS SDK client waiting on its call". eve's official TypeScript client
//! (tests/interop/ts_approval_call.mjs) calls `deploy` and hears, as
//! progress, that it waits for a lead; eve signs in and finds her request
//! listed as hers, with nothing to decide; fay signs in, reads the exact
//! arguments and approves; eve's call returns what ran. Screenshots:
//! `target/portal-screenshots/approvals-NN-name.png`.

use std::{process::Stdio, sync::Arc, time::Duration};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::{
    approvals::{approvals_app, request_until},
    pin_review::audited,
    portal_browser::{driver::Chrome, ts_script},
    upstream_oauth::token,
};

/// The next line the client prints (bounded).
async fn next_line(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) -> String {
    tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the TS client says something in time")
        .unwrap()
        .expect("the TS client is still running")
}

#[tokio::test]
async fn approvals_browser_a_lead_approves_a_waiting_ts_client_call() {
    let clock = Arc::new(teamgate::store::SystemClock);
    let (app, _idp) = approvals_app(clock, |_| {}).await;
    let eve_token = token(&app, "eve", &["tools:*"]).await;
    let arguments = r#"{"service":"checkout","version":"2.0.0"}"#;
    let mut child = ts_script("ts_approval_call.mjs")
        .args(["--url", &app.url, "--token", &eve_token, "--tool", "deploy"])
        .args(["--args", arguments])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = next_line(&mut lines).await;
    assert!(
        first.starts_with("PROGRESS Waiting for a member of leads to approve this call"),
        "{first}"
    );
    let row = request_until(&app, "checkout", "pending").await;

    // eve sees her request as hers: waiting, with nothing for her to decide.
    let mut chrome = Chrome::start_with_prefix(&app.base(), "approvals-").await;
    chrome.sign_in("eve").await;
    let nav = chrome.wait("//header//a[.='Approvals']").await;
    nav.click().await.unwrap();
    chrome.wait("//h1[.='Approvals']").await;
    let own = format!("//tr[@id='request-{}']", row.id);
    assert_eq!(chrome.text(&format!("{own}/td[2]")).await, "deploy");
    assert_eq!(
        chrome.text(&format!("{own}/td[@class='status']")).await,
        "waiting"
    );
    assert!(
        chrome.all("//section[@class='approval']").await.is_empty(),
        "not hers to decide"
    );
    chrome.shot("eve-own-request").await;
    chrome.sign_out().await;

    // fay, a lead, reads exactly what will run, and approves.
    chrome.sign_in("fay").await;
    chrome
        .wait("//header//a[.='Approvals']")
        .await
        .click()
        .await
        .unwrap();
    let section = format!("//section[@id='approval-{}']", row.id);
    let heading = chrome.text(&format!("{section}/h3")).await;
    assert_eq!(heading, "deploy asked by eve");
    let shown: Value = serde_json::from_str(&chrome.text(&format!("{section}/pre")).await).unwrap();
    assert_eq!(shown, serde_json::from_str::<Value>(arguments).unwrap());
    let reason = chrome
        .wait(&format!("{section}//input[@name='reason']"))
        .await;
    reason.send_keys("checkout release").await.unwrap();
    chrome.shot("fay-reads-the-request").await;
    let approve = chrome
        .wait(&format!("{section}//button[.='Approve']"))
        .await;
    approve.click().await.unwrap();
    chrome.wait("//h1[.='Approvals']").await;
    chrome.wait_gone(&section).await;

    // eve's client had waited; it gets what ran.
    let mut printed = Vec::new();
    let result = loop {
        let line = next_line(&mut lines).await;
        if let Some(result) = line.strip_prefix("RESULT ") {
            break serde_json::from_str::<Value>(result).unwrap();
        }
        assert!(line.starts_with("PROGRESS "), "{line}");
        printed.push(line);
    };
    let stdout = &result["structuredContent"]["stdout"];
    assert_eq!(
        stdout, "deployed checkout at 2.0.0\n",
        "{result} after {printed:?}"
    );
    chrome.goto("/portal/approvals").await;
    let decided = format!("//tr[@id='request-{}']", row.id);
    let status = chrome.text(&format!("{decided}/td[@class='status']")).await;
    assert_eq!(status, "approved by fay, run");
    chrome.shot("fay-decided").await;
    let approved = audited(&app, "approvals/approve").await;
    assert_eq!(approved, (format!("deploy {}", row.id), "fay".into()));

    let shots = chrome.close().await;
    assert!(shots.len() >= 3, "{shots:?}");
    assert!(child.wait().await.unwrap().success());
    app.stop().await;
}
