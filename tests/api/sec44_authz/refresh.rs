//! Item 11: every client here is public, so a refresh must name the client
//! (OAuth 2.1 §4.3): without `client_id` it is `invalid_request` and the
//! refresh token stays usable by its client; with another client's id it is
//! refused too.

use reqwest::StatusCode;

use crate::oauth_flow::{REDIRECT, code_for, oauth_app, register, token};

#[tokio::test]
async fn a_refresh_without_client_id_is_refused() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let client = register(&app, REDIRECT).await;
    let other = register(&app, REDIRECT).await;
    let (code, verifier) = code_for(&app, &client, "ann").await;
    let (status, tokens) = token(
        &app,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("client_id", &client),
            ("code_verifier", &verifier),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();

    let (status, body) = token(
        &app,
        &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_request")),
        "{body}"
    );
    assert!(
        body["error_description"]
            .as_str()
            .is_some_and(|d| d.contains("client_id")),
        "{body}"
    );
    let (status, body) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &other),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.get("access_token").is_none(), "{body}");
}

#[tokio::test]
async fn a_refresh_refused_for_a_missing_client_id_keeps_the_token() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let client = register(&app, REDIRECT).await;
    let (code, verifier) = code_for(&app, &client, "bob").await;
    let (_, tokens) = token(
        &app,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("client_id", &client),
            ("code_verifier", &verifier),
        ],
    )
    .await;
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let (status, _) = token(
        &app,
        &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // Its own client still refreshes with it: the refusal spent nothing.
    let (status, renewed) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{renewed}");
    assert!(renewed["access_token"].is_string(), "{renewed}");
}
