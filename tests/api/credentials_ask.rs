//! Per-member credential slots (issue 29), an empty slot with a client
//! that can open URLs: the member is sent to the portal's Connections page
//! (a URL-mode elicitation on 2025-11-25, an `input_required` round on
//! 2026-07-28) and the call goes on once the value is set there.

use serde_json::json;
use teamgate::store::CredentialRepo;

use crate::{
    credentials::{ANN_KEY, call_tool, call_with, credentials_app, crm, set_crm},
    helpers::audit_until,
    portal_idp::Browser,
    sdk::{self, Heard},
};

/// A 2026-07-28 client that can open URLs: the empty slot is an
/// `input_required` round with a URL-mode elicitation of the Connections
/// page; the retry, once the member set the value there, runs the call.
#[tokio::test]
async fn an_empty_slot_sends_the_member_to_the_page_and_the_retry_runs() {
    let api = crm().await;
    let (app, _idp) = credentials_app(&api).await;
    let token = app
        .tokens
        .create("ann", "t", vec!["tools:*".into()], None)
        .await
        .unwrap()
        .token;
    let can_open = json!({"_meta": {
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}}
    }});
    let asked = call_with(&app, &token, can_open.clone()).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let request = &result["inputRequests"]["credential"];
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["mode"], "url");
    let page = format!("{}/portal/connections", app.base());
    assert_eq!(request["params"]["url"], page.as_str());
    let state = result["requestState"].as_str().unwrap().to_owned();

    // The member opens the page and sets the value; the retry accepts.
    let accept = json!({"action": "accept"});
    let mut retry = can_open.clone();
    retry["inputResponses"] = json!({"credential": accept});
    retry["requestState"] = json!(state);
    let ann = Browser::sign_in(&app, "ann").await;
    set_crm(&app, &ann, ANN_KEY).await;
    let done = call_with(&app, &token, retry.clone()).await;
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("\"account\":\"ann\""), "{done}");
    assert!(!done.to_string().contains(ANN_KEY));

    // Declined: a tool error naming the page, nothing sent upstream.
    let bob = app
        .tokens
        .create("bob", "t", vec!["tools:*".into()], None)
        .await
        .unwrap()
        .token;
    let asked = call_with(&app, &bob, can_open.clone()).await;
    let mut declined = can_open;
    declined["inputResponses"] = json!({"credential": {"action": "decline"}});
    declined["requestState"] = asked["result"]["requestState"].clone();
    let refused = call_with(&app, &bob, declined).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let message = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        message.contains(&page) && message.contains("declined"),
        "{message}"
    );
}

/// A 2025-11-25 session whose client can open URLs: the URL-mode
/// elicitation names the page, the call waits while the member sets the
/// value there, and then goes on.
#[tokio::test]
async fn on_a_2025_session_the_call_waits_for_the_value_set_on_the_page() {
    let api = crm().await;
    let (app, _idp) = credentials_app(&api).await;
    let token = app
        .tokens
        .create("ann", "t", vec!["tools:*".into()], None)
        .await
        .unwrap()
        .token;
    let (client, mut heard) = sdk::connect_as(&app.url, Some(&token), Some(true)).await;
    let call = tokio::spawn(async move {
        let result = sdk::call(&client, "crm_me", json!({})).await;
        client.cancel().await.ok();
        result
    });
    let asked = tokio::time::timeout(std::time::Duration::from_secs(10), heard.recv())
        .await
        .expect("the client is asked to open the page");
    assert!(
        matches!(&asked, Some(Heard::Elicited(m)) if m.contains("`crm`")),
        "{asked:?}"
    );
    let ann = Browser::sign_in(&app, "ann").await;
    set_crm(&app, &ann, ANN_KEY).await;
    let result = tokio::time::timeout(std::time::Duration::from_secs(20), call)
        .await
        .expect("the call goes on once the value is set")
        .unwrap();
    assert!(
        sdk::text(&result).contains("\"account\":\"ann\""),
        "{result}"
    );
}

/// A slot with a shared fallback: a member who set no value calls as the
/// team (audited `fallback`), the fallback scrubbed like every secret.
#[tokio::test]
async fn an_empty_slot_with_a_fallback_uses_the_shared_value() {
    let api = crm().await;
    let (app, _idp) = credentials_app(&api).await;
    let token = app
        .tokens
        .create("ann", "t", vec!["tools:*".into()], None)
        .await
        .unwrap()
        .token;
    // The API does not know the fallback and quotes it back.
    let quoted = call_tool(&app, &token, "crm_team", json!({})).await;
    assert_eq!(quoted["result"]["isError"], true, "{quoted}");
    let home = std::env::var("HOME").unwrap();
    assert!(!quoted.to_string().contains(&home) && quoted.to_string().contains("[redacted]"));
    let kinds: Vec<_> = audit_until(&app.store, None, |t| {
        t.iter().any(|r| r.target == "crm_team")
    })
    .await
    .into_iter()
    .filter(|r| r.target == "crm_team")
    .map(|r| r.credential)
    .collect();
    assert_eq!(kinds, ["fallback"]);
}

/// The Connections forms' refusals: a forged CSRF token, an undeclared
/// slot, no sign-in, an empty value; a member deletes only their own value.
#[tokio::test]
async fn the_connections_page_refuses_what_it_should() {
    use reqwest::StatusCode;
    let api = crm().await;
    let (app, _idp) = credentials_app(&api).await;
    let page = format!("{}/portal/connections", app.base());
    let anonymous = Browser::new();
    crate::portal::assert_signed_out(&anonymous.get(&page).await);
    let ann = Browser::sign_in(&app, "ann").await;
    set_crm(&app, &ann, ANN_KEY).await;
    let bob = Browser::sign_in(&app, "bob").await;
    let html = bob.get(&page).await.text().await.unwrap();
    let csrf = crate::portal_idp::hidden(&html, "csrf").unwrap();
    let post = |browser: &Browser, path: &str, form: Vec<(&'static str, String)>| {
        let (browser, url) = (browser.clone(), format!("{page}{path}"));
        async move {
            let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            browser.post(&url, &form).await.status()
        }
    };
    let forged = vec![("csrf", "0".repeat(64)), ("value", "x-value".to_owned())];
    assert_eq!(post(&bob, "/crm", forged).await, StatusCode::FORBIDDEN);
    let unknown = vec![("csrf", csrf.clone()), ("value", "x-value".to_owned())];
    assert_eq!(post(&bob, "/nope", unknown).await, StatusCode::NOT_FOUND);
    let empty = vec![("csrf", csrf.clone()), ("value", "  ".to_owned())];
    assert_eq!(post(&bob, "/crm", empty).await, StatusCode::BAD_REQUEST);
    // Bob has no value of his own to delete; Ann's stays.
    let delete = vec![("csrf", csrf.clone())];
    assert_eq!(
        post(&bob, "/crm/delete", delete).await,
        StatusCode::NOT_FOUND
    );
    let slots = app.store.credential_slots("ann").await.unwrap();
    assert_eq!(slots.len(), 1, "{slots:?}");
    assert!(app.store.credential_slots("bob").await.unwrap().is_empty());
}
