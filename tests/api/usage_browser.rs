//! The usage pages (issue 64 part 2) in headless chromium: after real calls,
//! cat (an admin) opens Team usage from the header, reads each range, and
//! the chart is drawn (an SVG of real size, its bars styled by the portal's
//! stylesheet under the strict CSP); ann opens her own page and sees only
//! her calls. Screenshots: `target/portal-screenshots/usage-NN-name.png`.

use crate::{
    portal_browser::driver::Chrome,
    usage::{make_calls, usage_app},
};

/// The width and height chromium lays the element at `xpath` out with.
async fn size(chrome: &Chrome, xpath: &str) -> (f64, f64) {
    let (_, _, width, height) = chrome.wait(xpath).await.rectangle().await.unwrap();
    (width, height)
}

const CHART: &str = "//*[local-name()='svg' and @id='usage-chart']";
const BAR: &str =
    "//*[local-name()='svg' and @id='usage-chart']//*[local-name()='rect' and @class='calls']";

#[tokio::test]
async fn usage_browser_an_admin_and_a_member_see_the_charts() {
    let (app, _idp, with_upstream) = usage_app().await;
    make_calls(&app, with_upstream).await;
    let ann_calls = if with_upstream { 5 } else { 4 };
    let mut chrome = Chrome::start_with_prefix(&app.base(), "usage-").await;

    chrome.sign_in("cat").await;
    chrome
        .wait("//header//a[.='Team usage']")
        .await
        .click()
        .await
        .unwrap();
    chrome.wait("//h1[.='Team usage']").await;
    assert_eq!(chrome.text("//nav[@id='ranges']/strong").await, "Last day");
    let (width, height) = size(&chrome, CHART).await;
    assert!(
        width > 300.0 && height > 50.0,
        "the chart's size: {width}x{height}"
    );
    let (_, bar) = size(&chrome, BAR).await;
    assert!(bar > 1.0, "the bar of this hour has height: {bar}");
    // The stylesheet reaches the SVG: bars in the accent colour, not black.
    let fill = chrome
        .client
        .execute(
            "return getComputedStyle(document.querySelector('#usage-chart rect.calls')).fill",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(fill, "rgb(43, 108, 176)", "{}", chrome.page().await);
    let members = chrome.cells("//table[@id='usage-members']/tbody/tr").await;
    assert_eq!(members[0][0], "ann", "{members:?}");
    assert_eq!(members[0][1], ann_calls.to_string(), "{members:?}");
    assert_eq!(members[1][..2], ["bob", "2"], "{members:?}");
    chrome.shot("admin-usage-day").await;

    chrome
        .wait("//nav[@id='ranges']/a[.='Last hour']")
        .await
        .click()
        .await
        .unwrap();
    chrome
        .wait("//nav[@id='ranges']/strong[.='Last hour']")
        .await;
    let bars = chrome
        .all("//*[local-name()='svg' and @id='usage-chart']//*[local-name()='g' and @class='bar']")
        .await;
    assert_eq!(bars.len(), 60, "a bar slot per minute");
    let tools = chrome.cells("//table[@id='usage-tools']/tbody/tr").await;
    assert!(
        tools
            .iter()
            .any(|r| r[0] == "test_simple_text" && r[1] == "3"),
        "{tools:?}"
    );
    chrome.shot("admin-usage-hour").await;
    chrome
        .wait("//nav[@id='ranges']/a[.='Last 30 days']")
        .await
        .click()
        .await
        .unwrap();
    chrome
        .wait("//nav[@id='ranges']/strong[.='Last 30 days']")
        .await;
    assert!(size(&chrome, BAR).await.1 > 1.0, "today's bar");
    chrome.shot("admin-usage-30d").await;
    chrome.sign_out().await;

    chrome.sign_in("ann").await;
    chrome
        .wait("//header//a[.='Usage']")
        .await
        .click()
        .await
        .unwrap();
    chrome.wait("//h1[.='Your usage']").await;
    let (width, _) = size(&chrome, CHART).await;
    assert!(width > 300.0, "ann's chart: {width}");
    let tools = chrome.cells("//table[@id='usage-tools']/tbody/tr").await;
    let names: Vec<&str> = tools.iter().map(|r| r[0].as_str()).collect();
    let mut expected = vec!["test_simple_text", "everything_echo", "test_error_handling"];
    if !with_upstream {
        expected.retain(|n| *n != "everything_echo");
    }
    let mut sorted = names.clone();
    sorted.sort_unstable();
    expected.sort_unstable();
    assert_eq!(sorted, expected, "ann's own tools only");
    let page = chrome.page().await;
    assert!(
        !page.contains("bob") && !page.contains("test_image_content"),
        "{page}"
    );
    chrome.shot("ann-usage").await;

    let shots = chrome.close().await;
    assert_eq!(shots.len(), 8, "{shots:?}");
}
