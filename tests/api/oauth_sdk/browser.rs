//! The authorization step of the TypeScript SDK client's OAuth in the
//! headless chromium of the portal tests: the browser opens the URL the
//! client printed, the member signs in at `oidc-provider`'s own login form,
//! the consent page names the client and the scopes, the member allows, and
//! the browser lands on the client's loopback redirect URI, where the
//! client's own listener takes the code. Screenshots are saved as
//! `target/portal-screenshots/oauth-NN-<label>-<step>.png`.

use std::time::{Duration, Instant};

use crate::portal_browser::driver::Chrome;

/// How long the sign-in may take to come back to teamgate's consent page.
const PATIENCE: Duration = Duration::from_secs(20);

/// Follows `url` as `user` through sign-in and consent, expecting the
/// consent page to name `client_name` and the client's loopback listener to
/// show `landing` (an XPath); the URL the browser ends on.
pub(crate) async fn authorize(
    base: &str,
    url: &str,
    user: &str,
    client_name: &str,
    label: &str,
    landing: &str,
) -> String {
    let mut chrome = Chrome::start_with(base, "oauth-", false).await;
    chrome
        .client
        .goto(url)
        .await
        .expect("the authorization URL loads");
    // Not signed in: teamgate sends the browser to the provider's login form.
    let login = chrome.wait("//form//input[@name='login']").await;
    let at = chrome.client.current_url().await.unwrap();
    assert!(!at.as_str().starts_with(base), "the provider's page: {at}");
    login.send_keys(user).await.unwrap();
    let password = chrome.wait("//form//input[@name='password']").await;
    password.send_keys("any password").await.unwrap();
    chrome.shot(&format!("{label}-provider-login")).await;
    chrome
        .wait("//form//button[@type='submit']")
        .await
        .click()
        .await
        .unwrap();
    // Back at teamgate's consent page (the provider's own consent, if shown, accepted).
    let until = Instant::now() + PATIENCE;
    while chrome.all("//h1[.='Allow access?']").await.is_empty() {
        let provider_consent = chrome
            .all("//form[input[@name='prompt' and @value='consent']]//button")
            .await;
        if let Some(button) = provider_consent.first() {
            button.click().await.unwrap();
        }
        assert!(
            Instant::now() < until,
            "no consent page: {}",
            chrome.page().await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let at = chrome.client.current_url().await.unwrap();
    assert!(at.as_str().starts_with(base), "teamgate's page: {at}");
    assert_eq!(
        chrome.text("//main//p[1]/strong[1]").await,
        client_name,
        "the consent page names the client"
    );
    assert_eq!(chrome.text("//main//p[1]/strong[2]").await, user);
    let mut scopes = Vec::new();
    for item in chrome.all("//main//ul/li/code").await {
        scopes.push(item.text().await.unwrap());
    }
    assert!(
        scopes.contains(&"tools:*".to_owned())
            && scopes
                .iter()
                .all(|s| ["tools:*", "resources:read"].contains(&s.as_str())),
        "the consent page names the scopes {user}'s groups allow: {scopes:?}"
    );
    chrome.shot(&format!("{label}-consent")).await;
    chrome
        .wait("//button[@name='decision' and @value='allow']")
        .await
        .click()
        .await
        .unwrap();
    // The client's loopback listener answers the redirect.
    let until = Instant::now() + PATIENCE;
    let landed = loop {
        let at = chrome.client.current_url().await.unwrap();
        if !at.as_str().starts_with(base) {
            break at;
        }
        assert!(
            Instant::now() < until,
            "not back at the client: {}",
            chrome.page().await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        landed.as_str().starts_with("http://127.0.0.1:") && landed.path().ends_with("/callback"),
        "the client's loopback redirect URI: {landed}"
    );
    chrome.wait(landing).await;
    chrome.shot(&format!("{label}-back-at-client")).await;
    chrome.close().await;
    landed.to_string()
}
