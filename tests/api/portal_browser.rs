//! The portal (issue 27) in a real browser: headless chromium through
//! WebDriver, the real `oidc-provider`, and the official TypeScript client.
//! ann signs in, makes a token, copies it from the page, calls a tool with
//! it through the TS SDK, revokes it (the next request is refused); bob
//! sees none of ann's tokens and cannot revoke one; cat, an admin, ends
//! ann's live MCP session and filters the audit trail. Every page visited
//! is saved as `target/portal-screenshots/NN-name.png` (not committed).

pub(crate) mod driver;

use std::{process::Stdio, time::Duration};

use serde_json::{Value, json};
use teamgate::store::SessionRepo;

use crate::{
    helpers::{TestApp, header, repo_path},
    portal::tools_with,
    portal_idp::portal_app_now,
    sec_authz::send,
};
use driver::Chrome;

const SIMPLE_TEXT: &str = "This is a simple text response for testing.";

/// The tokens table's row labelled `label`.
fn token_row(label: &str) -> String {
    format!("//table[@id='tokens']/tbody/tr[td[2][normalize-space()='{label}']]")
}

/// Makes a token labelled `label` with only `scope` through the form;
/// the secret as the page shows it, once.
async fn create_token(chrome: &mut Chrome, label: &str, scope: &str) -> String {
    chrome
        .wait("//input[@name='label']")
        .await
        .send_keys(label)
        .await
        .unwrap();
    chrome
        .wait("//select[@name='days']")
        .await
        .select_by_value("30")
        .await
        .unwrap();
    for checkbox in chrome.all("//input[@type='checkbox'][@name='scope']").await {
        let value = checkbox.attr("value").await.unwrap().unwrap();
        if checkbox.is_selected().await.unwrap() != (value == scope) {
            checkbox.click().await.unwrap();
        }
    }
    chrome
        .wait("//button[@id='create']")
        .await
        .click()
        .await
        .unwrap();
    let secret = chrome.text("//code[@id='token-secret']").await;
    assert!(secret.starts_with("tg_") && secret.len() > 20, "{secret}");
    let setup = chrome.text("//div[@id='new-token']").await;
    assert!(
        setup.contains(&format!("Bearer {secret}")) && setup.contains("claude mcp add"),
        "the setups carry the token: {setup}"
    );
    let row = token_row(label);
    assert_eq!(chrome.text(&format!("{row}/td[3]")).await, scope);
    assert_eq!(chrome.text(&format!("{row}/td[7]")).await, "active");
    secret
}

/// tests/interop/ts_portal_call.mjs: the official TS SDK client calls `tool`
/// with `token`; its result.
async fn ts_call(app: &TestApp, token: &str, tool: &str) -> Value {
    let node = repo_path(".cache/bin/node22");
    let sdk = repo_path(".cache/ts-client/node_modules/@modelcontextprotocol/sdk");
    assert!(
        node.exists() && sdk.exists(),
        "Node 22 and the TS SDK are missing: run scripts/install-test-deps.sh"
    );
    let run = tokio::process::Command::new(node)
        .arg(repo_path("tests/interop/ts_portal_call.mjs"))
        .args(["--url", &app.url, "--token", token, "--tool", tool])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the TS client ends within 30 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("a RESULT line: {stdout}"));
    serde_json::from_str(line).unwrap()
}

/// A 2025-11-25 MCP session opened with `token`; its id.
async fn open_session(app: &TestApp, token: &str) -> String {
    let bearer = format!("Bearer {token}");
    let response = app
        .post(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "ann-phone", "version": "1"}}}),
            &[("authorization", &bearer)],
        )
        .await;
    assert_eq!(response.status(), 200);
    let session = header(response.headers(), "mcp-session-id").expect("a session id");
    let (status, _) = send(
        app,
        token,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        &[
            ("mcp-session-id", &session),
            ("mcp-protocol-version", "2025-11-25"),
        ],
    )
    .await;
    assert_eq!(status, 202);
    session
}

/// `ping` in `session`: the HTTP status.
async fn ping_in(app: &TestApp, token: &str, session: &str) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 8, "method": "ping"});
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    send(app, token, &body, &headers).await.0
}

/// `tools/call test_simple_text` in `session`: the HTTP status.
async fn call_in(app: &TestApp, token: &str, session: &str) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "test_simple_text", "arguments": {}}});
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let (status, text) = send(app, token, &body, &headers).await;
    if status == 200 {
        assert!(text.contains(SIMPLE_TEXT), "{text}");
    }
    status
}

#[tokio::test]
async fn portal_browser_members_and_an_admin_walk_through_the_pages() {
    let (app, _idp) = portal_app_now().await;
    let mut chrome = Chrome::start(&app.base()).await;

    // ann (group dev) signs in at the provider and makes a token.
    chrome.sign_in("ann").await;
    assert_eq!(chrome.all("//table[@id='tokens']/tbody/tr").await.len(), 0);
    chrome.shot("ann-tokens").await;
    let laptop = create_token(&mut chrome, "ann-laptop", "tools:*").await;
    chrome.shot("ann-token-shown-once").await;

    // The token copied from the page, in the official TS client.
    let result = ts_call(&app, &laptop, "test_simple_text").await;
    assert_eq!(result["content"][0]["text"], SIMPLE_TEXT, "{result}");
    assert_ne!(result["isError"], true, "{result}");
    assert_eq!(tools_with(&app, &laptop).await.0, 200);

    // A second token, whose MCP session the admin ends below.
    chrome.goto("/portal/").await;
    assert!(
        !chrome.client.source().await.unwrap().contains(&laptop),
        "a token is shown once"
    );
    let phone = create_token(&mut chrome, "ann-phone", "tools:*").await;
    chrome.shot("ann-second-token").await;
    let session = open_session(&app, &phone).await;
    assert_eq!(call_in(&app, &phone, &session).await, 200);
    let phone_id = chrome
        .text(&format!("{}/td[1]", token_row("ann-phone")))
        .await;

    // ann revokes "ann-laptop": the page says so, and the next request is refused.
    chrome
        .wait(&format!("{}//button[.='Revoke']", token_row("ann-laptop")))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .wait(&format!("{}/td[7][.='revoked']", token_row("ann-laptop")))
        .await;
    assert!(
        chrome
            .all(&format!("{}//button", token_row("ann-laptop")))
            .await
            .is_empty()
    );
    chrome.shot("ann-token-revoked").await;
    assert_eq!(tools_with(&app, &laptop).await.0, 401);
    assert_eq!(tools_with(&app, &phone).await.0, 200);
    chrome.goto("/portal/activity").await;
    chrome.wait("//h1[.='Your activity']").await;
    chrome.wait("//ul/li/code[.='test_simple_text']").await;
    chrome.shot("ann-activity").await;
    chrome.sign_out().await;

    // bob (group ops) sees none of ann's tokens and cannot revoke one.
    chrome.sign_in("bob").await;
    chrome.shot("bob-tokens").await;
    let html = chrome.client.source().await.unwrap();
    for hidden in ["ann-laptop", "ann-phone", phone_id.as_str()] {
        assert!(!html.contains(hidden), "bob sees ann's {hidden}");
    }
    assert_eq!(chrome.all("//table[@id='tokens']/tbody/tr").await.len(), 0);
    // No button for it, so bob's browser posts a form of its own (with his CSRF token).
    chrome
        .client
        .execute(
            "const form = document.createElement('form');
             form.method = 'post';
             form.action = '/portal/tokens/' + arguments[0] + '/revoke';
             const csrf = document.querySelector('input[name=csrf]').cloneNode();
             form.appendChild(csrf);
             document.body.appendChild(form);
             form.submit();",
            vec![json!(phone_id)],
        )
        .await
        .unwrap();
    chrome.wait("//h1[.='Not Found']").await;
    chrome.shot("bob-revoke-refused").await;
    assert_eq!(call_in(&app, &phone, &session).await, 200, "still ann's");
    chrome.goto("/portal/admin/sessions").await;
    chrome.wait("//h1[.='Forbidden']").await;
    chrome.shot("bob-admin-forbidden").await;
    chrome.goto("/portal/").await;
    chrome.sign_out().await;

    // cat (group admins) ends ann's MCP session and filters the audit.
    chrome.sign_in("cat").await;
    chrome.shot("cat-tokens").await;
    chrome
        .wait("//header//a[.='Sessions']")
        .await
        .click()
        .await
        .unwrap();
    chrome.wait("//h1[.='Live sessions']").await;
    let row = format!("//table[@id='sessions']/tbody/tr[td[1][normalize-space()='{session}']]");
    assert_eq!(chrome.text(&format!("{row}/td[2]")).await, "ann");
    chrome.shot("admin-sessions").await;
    chrome
        .wait(&format!("{row}//button[.='End']"))
        .await
        .click()
        .await
        .unwrap();
    chrome.wait("//h1[.='Live sessions']").await;
    chrome.wait_gone(&row).await;
    chrome.shot("admin-session-ended").await;
    assert!(app.store.get(&session).await.unwrap().is_none());
    // A replica trusts a session's row for up to 5 s (src/mcp/sessions.rs,
    // PRESENCE_TTL) before reading it again: then the session is gone.
    let ended = std::time::Instant::now();
    loop {
        let status = ping_in(&app, &phone, &session).await;
        if status == 404 {
            break;
        }
        assert_eq!(status, 200);
        assert!(ended.elapsed() < Duration::from_secs(10), "still served");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // The whole trail holds more than ann's calls: the filter leaves those out.
    chrome
        .wait("//header//a[.='Audit']")
        .await
        .click()
        .await
        .unwrap();
    chrome.wait("//h1[.='Audit trail']").await;
    let rows = "//table[@id='audit']/tbody/tr";
    let all = chrome
        .reload_until(rows, |rows| {
            let has =
                |member: &str, method: &str| rows.iter().any(|r| r[1] == member && r[2] == method);
            has("ann", "portal/tokens/create") && has("cat", "portal/admin/sessions/end")
        })
        .await;
    chrome.shot("admin-audit").await;
    chrome
        .wait("//input[@name='member']")
        .await
        .send_keys("ann")
        .await
        .unwrap();
    chrome
        .wait("//input[@name='tool']")
        .await
        .send_keys("test_simple_text")
        .await
        .unwrap();
    chrome
        .wait("//button[@id='filter']")
        .await
        .click()
        .await
        .unwrap();
    chrome.wait("//input[@name='member'][@value='ann']").await;
    let url = chrome.client.current_url().await.unwrap();
    assert!(
        url.as_str().contains("member=ann&tool=test_simple_text"),
        "{url}"
    );
    // ann's three calls (the TS client's, two in the ended session), nothing else.
    let matching =
        |r: &Vec<String>| r[1] == "ann" && r[2] == "tools/call" && r[3] == "test_simple_text";
    let filtered = chrome.reload_until(rows, |rows| rows.len() >= 3).await;
    assert!(filtered.iter().all(matching), "{filtered:?}");
    assert_eq!(filtered.len(), 3, "{filtered:?}");
    assert!(all.iter().any(|r| !matching(r)), "{all:?}");
    chrome.shot("admin-audit-filtered").await;

    let shots = chrome.close().await;
    assert_eq!(shots.len(), 19, "{shots:?}");
}
