//! The portal's toolsets (issue 60 part 3) in headless chromium, at the
//! real `oidc-provider`: bob (group ops) opens his endpoints (`/mcp`, the
//! open `docs` and his `oncall`, not `dev`), makes a token limited to
//! `oncall` with the form, and it lists tools there and is refused at
//! `/mcp`; cat, an admin, reads each toolset's tools and who may connect.
//! Screenshots: `target/portal-screenshots/toolsets-NN-name.png`.

use reqwest::StatusCode;
use serde_json::json;

use crate::{
    portal_browser::driver::Chrome,
    portal_idp::portal_app_with,
    portal_toolsets::configure,
    toolsets::{call, names},
};

#[tokio::test]
async fn portal_browser_members_see_their_endpoints_and_admins_the_toolsets() {
    let clock = std::sync::Arc::new(teamgate::store::SystemClock);
    let (app, _idp) = portal_app_with(clock, configure).await;
    let base = app.base();
    let mut chrome = Chrome::start_with_prefix(&base, "toolsets-").await;

    chrome.sign_in("bob").await;
    chrome
        .wait("//header//a[.='Endpoints']")
        .await
        .click()
        .await
        .unwrap();
    chrome.wait("//h1[.='Your endpoints']").await;
    let sections = chrome.all("//section[@class='endpoint']").await;
    let mut ids = Vec::new();
    for section in sections {
        ids.push(section.attr("id").await.unwrap().unwrap_or_default());
    }
    assert_eq!(
        ids,
        ["endpoint-main", "endpoint-docs", "endpoint-oncall"],
        "{}",
        chrome.page().await
    );
    let oncall = "//section[@id='endpoint-oncall']";
    let url = chrome.text(&format!("{oncall}//code[@class='url']")).await;
    assert_eq!(url, format!("{base}/mcp/oncall"));
    let claude = chrome.text(&format!("{oncall}//section[1]//pre")).await;
    assert!(
        claude.starts_with(&format!(
            "claude mcp add --transport http teamgate-oncall {url} \\\n  --header"
        )),
        "{claude}"
    );
    chrome.shot("bob-endpoints").await;
    chrome
        .client
        .execute(
            "document.getElementById('endpoint-oncall').scrollIntoView()",
            vec![],
        )
        .await
        .unwrap();
    chrome.shot("bob-endpoint-oncall").await;
    // The other clients' setups are folded; a click (no script) opens them.
    chrome
        .wait(&format!(
            "{oncall}//details/summary[starts-with(., 'More clients')]"
        ))
        .await
        .click()
        .await
        .unwrap();
    let vscode = chrome
        .text(&format!("{oncall}//details/section[1]//pre"))
        .await;
    assert!(
        vscode.contains(&format!("\"url\": \"{url}\"")) && vscode.contains("teamgate-oncall"),
        "{vscode}"
    );
    chrome
        .client
        .execute(
            "document.querySelector('#endpoint-oncall details').scrollIntoView()",
            vec![],
        )
        .await
        .unwrap();
    chrome.shot("bob-endpoint-oncall-more-clients").await;

    // A token limited to oncall, made with the form.
    chrome.goto("/portal/").await;
    chrome
        .wait("//input[@name='label']")
        .await
        .send_keys("bob-oncall")
        .await
        .unwrap();
    chrome
        .wait("//select[@name='toolset']")
        .await
        .select_by_value("oncall")
        .await
        .unwrap();
    chrome
        .wait("//button[@id='create']")
        .await
        .click()
        .await
        .unwrap();
    let secret = chrome.text("//code[@id='token-secret']").await;
    let shown = chrome.text("//div[@id='new-token']").await;
    assert!(
        shown.contains(&format!("teamgate-oncall {base}/mcp/oncall")),
        "{shown}"
    );
    chrome.shot("bob-token-limited").await;
    let listed = names(&app, "/mcp/oncall", &secret).await;
    assert_eq!(listed.into_iter().collect::<Vec<_>>(), ["test_simple_text"]);
    let (status, _) = call(&app, "/mcp", &secret, 2, "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    chrome.sign_out().await;

    // cat, an admin, reads the toolsets.
    chrome.sign_in("cat").await;
    chrome
        .wait("//header//a[.='Toolsets']")
        .await
        .click()
        .await
        .unwrap();
    chrome.wait("//h1[.='Toolsets']").await;
    let oncall = "//section[@id='toolset-oncall']";
    let tools = chrome
        .all(&format!("{oncall}//td[@class='tools']//li"))
        .await;
    assert_eq!(tools.len(), 2);
    assert_eq!(
        chrome
            .text(&format!("{oncall}//strong[@class='count']"))
            .await,
        "2"
    );
    let groups = chrome
        .text("//section[@id='toolset-docs']//td[@class='groups']")
        .await;
    assert!(groups.starts_with("everyone"), "{groups}");
    chrome.shot("admin-toolsets").await;
    chrome
        .client
        .execute(
            "document.getElementById('toolset-leads').scrollIntoView()",
            vec![],
        )
        .await
        .unwrap();
    chrome.shot("admin-toolsets-leads").await;

    let shots = chrome.close().await;
    assert_eq!(shots.len(), 10, "{shots:?}");
}
