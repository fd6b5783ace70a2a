//! Item 12: a registered `client_name` loses its bidirectional embedding,
//! override and isolate characters (U+202A-U+202E, U+2066-U+2069), so the
//! consent page shows the name as it reads, not as the registrant arranged.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::{
    oauth_flow::{REDIRECT, authorize_url, oauth_app, pkce},
    portal_idp::Browser,
};

const BIDI: [char; 9] = [
    '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}',
    '\u{2069}',
];

#[tokio::test]
async fn registered_client_names_lose_bidi_controls() {
    let (app, _idp) = oauth_app(|_| {}).await;
    // "Acme \u{202E}lanigirO\u{202C}" shows as "Acme Original" in a browser.
    let name: String = format!(
        "Acme \u{202E}lanigirO\u{202C} {}x",
        BIDI.iter().collect::<String>()
    );
    let response = teamgate::outbound::client()
        .post(format!("{}/register", app.base()))
        .json(&json!({"client_name": name, "redirect_uris": [REDIRECT]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["client_name"], "Acme lanigirO x", "{body}");
    let client = body["client_id"].as_str().unwrap().to_owned();

    let browser = Browser::sign_in(&app, "ann").await;
    let (_, challenge) = pkce();
    let page = browser
        .get(&authorize_url(&app, &client, REDIRECT, &challenge, &[]))
        .await;
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    assert!(html.contains("Acme lanigirO x"), "{html}");
    assert!(!html.contains(BIDI), "a bidi control on the consent page");
}
