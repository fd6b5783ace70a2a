//! Issue 65 part 3 in headless chromium: "A changed upstream definition
//! approved on the portal". The upstream on the official Python SDK
//! (tests/interop/upstream_py.py) rewrites its `describe` tool (description,
//! a new `to` argument, destructive and open-world hints); the member loses
//! it; cat, an admin signed in at the real `oidc-provider`, reads the diff
//! on the upstreams page and approves it there; the member is offered it
//! again with the new definition. Screenshots:
//! `target/portal-screenshots/pins-NN-name.png`.

use serde_json::json;
use teamgate::store::PinRow;

use crate::{
    pin_review::{ORIGINAL, REWRITTEN, audited, pin_until, review_app, until_offered},
    portal_browser::driver::Chrome,
    sdk::{self, call, text},
    upstream_oauth::token,
    upstream_pins::python,
};

#[tokio::test]
async fn pin_review_browser_an_admin_approves_a_changed_definition_on_the_portal() {
    let Some((python, script)) = python() else {
        return;
    };
    let (app, _idp) = review_app(&python, &script).await;
    let ann = token(&app, "ann", &["tools:*"]).await;
    // ann's client confirms when asked: the approved definition is destructive.
    let (client, mut heard) = sdk::connect_as(&app.url, Some(&ann), Some(true)).await;
    until_offered(&client, "py_describe", Some(ORIGINAL)).await;
    let changed = json!({"description": REWRITTEN, "mail": true});
    assert_eq!(text(&call(&client, "py_change", changed).await), "changed");
    until_offered(&client, "py_describe", None).await;
    pin_until(&app, "describe", PinRow::awaiting).await;

    let mut chrome = Chrome::start_with_prefix(&app.base(), "pins-").await;
    chrome.sign_in("cat").await;
    chrome
        .wait("//header//a[.='Upstreams']")
        .await
        .click()
        .await
        .unwrap();
    chrome.wait("//h1[.='Upstream approvals']").await;
    let section = "//section[@id='pin-py-describe']";
    let heading = chrome.text(&format!("{section}/h3")).await;
    assert!(heading.starts_with("describe changed"), "{heading}");
    // The description: the old line removed, the new one added.
    let description = format!("{section}//h4[code='description']/following-sibling::pre[1]");
    let removed = chrome.text(&format!("{description}/del")).await;
    let added = chrome.text(&format!("{description}/ins")).await;
    assert_eq!(
        (removed.as_str(), added.as_str()),
        ("- Echoes the text.", &*format!("+ {REWRITTEN}"))
    );
    // The input schema: the new `to` argument's lines added, and required.
    let schema = format!("{section}//h4[code='inputSchema']/following-sibling::pre[1]");
    let mut added = Vec::new();
    for line in chrome.all(&format!("{schema}/ins")).await {
        let text = line.text().await.unwrap();
        added.push(
            text.strip_prefix('+')
                .map(str::trim)
                .unwrap_or(&text)
                .to_owned(),
        );
    }
    assert!(
        added.iter().any(|l| l == "\"to\": {") && added.iter().any(|l| l == "\"to\""),
        "{added:?}"
    );
    // The hints, each old → new.
    let rows = format!("{section}//table[@class='hints']//tr");
    let mut names = Vec::new();
    for name in chrome.all(&format!("{rows}/th")).await {
        names.push(name.text().await.unwrap());
    }
    assert_eq!(names, ["destructiveHint", "openWorldHint"]);
    let hints = chrome.cells(&rows).await;
    assert_eq!(hints, [["unset", "→", "true"], ["unset", "→", "true"]]);
    // Added and removed lines are colored by the stylesheet (no script).
    let colors = chrome
        .client
        .execute(
            "const s = document.querySelector(arguments[0]);
             return [getComputedStyle(s.querySelector('ins')).backgroundColor,
                     getComputedStyle(s.querySelector('del')).backgroundColor,
                     getComputedStyle(s.querySelector('span.same')).backgroundColor];",
            vec![json!("#pin-py-describe pre.diff:nth-of-type(2)")],
        )
        .await
        .unwrap();
    let colors: Vec<String> = serde_json::from_value(colors).unwrap();
    assert!(
        colors[0] != colors[1] && colors[0] != colors[2] && colors[1] != colors[2],
        "added, removed and unchanged lines look different: {colors:?}"
    );
    chrome
        .client
        .execute(
            "document.querySelector('#pin-py-describe').scrollIntoView()",
            vec![],
        )
        .await
        .unwrap();
    chrome.shot("admin-diff").await;
    chrome
        .client
        .execute(
            "document.querySelector('#pin-py-describe table.hints').scrollIntoView()",
            vec![],
        )
        .await
        .unwrap();
    chrome.shot("admin-diff-hints-and-buttons").await;

    // Approved in the browser: the page has nothing awaiting any more.
    chrome
        .wait(&format!("{section}//button[.='Approve']"))
        .await
        .click()
        .await
        .unwrap();
    chrome.wait("//h1[.='Upstream approvals']").await;
    chrome.wait_gone(section).await;
    let pinned = chrome.text("//main/p[@class='muted']").await;
    assert_eq!(pinned, "3 tool definitions pinned");
    chrome.shot("admin-approved").await;

    // The member is offered the new definition, and it runs, confirmed
    // first as its new destructive hint asks (issue 65 part 1).
    until_offered(&client, "py_describe", Some(REWRITTEN)).await;
    let echoed = call(
        &client,
        "py_describe",
        json!({"text": "hi", "to": "x@example.com"}),
    )
    .await;
    assert_eq!(text(&echoed), "hi");
    let mut asked = false;
    while let Ok(next) = heard.try_recv() {
        asked |= matches!(next, sdk::Heard::Elicited(m) if m.contains("py_describe"));
    }
    assert!(asked, "ann confirmed the destructive tool");
    let approved = audited(&app, "upstreams/approve").await;
    assert_eq!(approved, ("py/describe".into(), "cat".into()));

    let shots = chrome.close().await;
    assert_eq!(shots.len(), 5, "{shots:?}");
    client.cancel().await.unwrap();
    app.stop().await;
}
