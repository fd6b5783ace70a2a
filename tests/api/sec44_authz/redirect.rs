//! Item 4: with open registration anyone can register an https redirect
//! URI, so an error found before the member has signed in and seen the
//! consent page is teamgate's own error page (400), never a redirect to that
//! URI (RFC 9700 §4.11.2). Only a member's answer on the consent page goes
//! back to the client (`oauth_flow`'s tests).

use reqwest::{Response, StatusCode, header};

use crate::{
    helpers::TestApp,
    oauth_flow::{authorize_url, oauth_app, pkce, register},
    portal_idp::Browser,
};

const EVIL: &str = "https://evil.example/landing";

/// A 400 HTML page of teamgate's, no `Location`; the page's text.
async fn error_page(response: Response, what: &str) -> String {
    assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{what}");
    assert!(
        response.headers().get(header::LOCATION).is_none(),
        "{what}: redirected to {:?}",
        response.headers().get(header::LOCATION)
    );
    let kind = response.headers()[header::CONTENT_TYPE].to_str().unwrap();
    assert!(kind.starts_with("text/html"), "{what}: {kind}");
    response.text().await.unwrap()
}

fn bad_requests(app: &TestApp, client: &str, challenge: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "response_type=token",
            authorize_url(app, client, EVIL, challenge, &[("response_type", "token")]),
        ),
        (
            "plain PKCE",
            authorize_url(
                app,
                client,
                EVIL,
                challenge,
                &[("code_challenge_method", "plain")],
            ),
        ),
        ("no PKCE", authorize_url(app, client, EVIL, "", &[])),
        (
            "another resource",
            authorize_url(
                app,
                client,
                EVIL,
                challenge,
                &[("resource", "https://other.example/mcp")],
            ),
        ),
    ]
}

#[tokio::test]
async fn authorize_errors_before_consent_are_pages_not_redirects() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let client = register(&app, EVIL).await;
    let (_, challenge) = pkce();
    // Not signed in: the request's own faults are a page.
    let anonymous = Browser::new();
    for (what, url) in bad_requests(&app, &client, &challenge) {
        let text = error_page(anonymous.get(&url).await, what).await;
        assert!(!text.contains("evil.example"), "{what}: {text}");
    }
    // Signed in, before the consent page: the same.
    let ann = Browser::sign_in(&app, "ann").await;
    for (what, url) in bad_requests(&app, &client, &challenge) {
        error_page(ann.get(&url).await, what).await;
    }
    // A member whose groups allow nothing asked for never saw a consent page either.
    let dan = Browser::sign_in(&app, "dan").await;
    let url = authorize_url(&app, &client, EVIL, &challenge, &[]);
    error_page(dan.get(&url).await, "no scope for dan").await;
    // A valid request still reaches the consent page.
    let page = ann.get(&url).await;
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().await.unwrap().contains("Allow access?"));
}
