//! Issue 65 part 3: pin review on the portal, over HTTP. An upstream on the
//! official Python SDK (tests/interop/upstream_py.py) rewrites a tool's
//! description, schema and hints; cat, an admin signed in at the real
//! `oidc-provider`, reads the diff on the upstreams page, rejects it (the
//! member keeps not seeing the tool, the same definition is not proposed
//! again), then approves a different one (the member sees it again). A
//! renamed tool is pinned as a new tool. The browser version is
//! `pin_review_browser.rs`.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use teamgate::{
    config::UpstreamConfig,
    store::{PinRepo, PinRow},
};

use crate::{
    helpers::{TestApp, audit_until, spawn_app_with},
    portal_idp::{Browser, Idp, portal_app_with},
    sdk::{self, call, text},
    upstream_oauth::token,
    upstream_pins::python,
};

/// The Python upstream `py` over stdio.
pub(crate) fn upstream(python: &str, script: &str) -> UpstreamConfig {
    let entry = format!("name = \"py\"\ncommand = {python:?}\nargs = [{script:?}, \"stdio\"]\n");
    toml::from_str(&entry).unwrap()
}

/// The portal's server fronting `py`, once its tools are pinned.
pub(crate) async fn review_app(python: &str, script: &str) -> (TestApp, Idp) {
    let upstream = upstream(python, script);
    let clock = std::sync::Arc::new(teamgate::store::SystemClock);
    let (app, idp) = portal_app_with(clock, move |c| c.upstreams = vec![upstream]).await;
    (app, idp)
}

/// The description of each tool the member is offered, name → description.
pub(crate) async fn listed(client: &sdk::Client) -> Vec<(String, String)> {
    let tools = client.list_all_tools().await.expect("tools/list answers");
    let described = |t: &rmcp::model::Tool| t.description.as_deref().unwrap_or("").to_owned();
    tools
        .iter()
        .map(|t| (t.name.to_string(), described(t)))
        .collect()
}

/// Lists until `tool` is offered with `description` (or, with `None`, is
/// not offered); bounded at 30 s.
pub(crate) async fn until_offered(client: &sdk::Client, tool: &str, description: Option<&str>) {
    for _ in 0..300 {
        let now = listed(client).await;
        let found = now.iter().find(|(n, _)| n == tool).map(|(_, d)| d.as_str());
        if found == description {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let now = listed(client).await;
    panic!("{tool} offered as {description:?} in time; listed {now:?}");
}

/// `py`'s pin of `tool`, once `done` holds of it (bounded at 30 s).
pub(crate) async fn pin_until(app: &TestApp, tool: &str, done: impl Fn(&PinRow) -> bool) -> PinRow {
    for _ in 0..300 {
        let pins = app.store.pins(Some("py")).await.unwrap();
        if let Some(row) = pins.into_iter().find(|r| r.tool == tool && done(r)) {
            return row;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{tool}'s pin: {:?}", app.store.pins(Some("py")).await);
}

/// The target and user of the first audit record of `method` (written in
/// batches: bounded at 10 s).
pub(crate) async fn audited(app: &TestApp, method: &str) -> (String, String) {
    let trail = audit_until(&app.store, None, |t| t.iter().any(|r| r.method == method)).await;
    let r = (trail.iter().find(|r| r.method == method))
        .unwrap_or_else(|| panic!("no {method} audited"));
    (r.target.clone(), r.user.clone())
}

pub(crate) const ORIGINAL: &str = "Echoes the text.";
pub(crate) const REWRITTEN: &str = "Echoes the text, then mails it to the address in `to`.";

#[tokio::test]
async fn an_admin_rejects_then_approves_a_changed_definition_on_the_portal() {
    let Some((python, script)) = python() else {
        return;
    };
    let (app, _idp) = review_app(&python, &script).await;
    let ann = token(&app, "ann", &["tools:*"]).await;
    let (client, _) = sdk::connect_as(&app.url, Some(&ann), None).await;
    until_offered(&client, "py_describe", Some(ORIGINAL)).await;
    let pinned = pin_until(&app, "describe", |_| true).await;

    let changed = json!({"description": REWRITTEN, "mail": true});
    assert_eq!(
        text(&call(&client, "py_change", changed.clone()).await),
        "changed"
    );
    until_offered(&client, "py_describe", None).await;

    // cat, an admin, reads the diff: description, schema and hints.
    let cat = Browser::sign_in(&app, "cat").await;
    let url = format!("{}/portal/admin/upstreams", app.base());
    let page = cat.get(&url).await.text().await.unwrap();
    for shown in [
        "<section class=\"pin awaiting\" id=\"pin-py-describe\">",
        "<del>- Echoes the text.</del>",
        &format!("<ins>+ {}</ins>", REWRITTEN),
        "<ins>+     &quot;to&quot;: {</ins>",
        "<th><code>destructiveHint</code></th><td><del>unset</del></td><td>→</td><td><ins>true</ins></td>",
        "button class=\"danger reject\"",
    ] {
        assert!(page.contains(shown), "{shown} on {page}");
    }
    let form = |csrf: &str| {
        let csrf = csrf.to_owned();
        move |action: &str| {
            let fields = vec![
                ("csrf", csrf.clone()),
                ("upstream", "py".into()),
                ("tool", "describe".into()),
            ];
            (action.to_owned(), fields)
        }
    };
    let post = |browser: &Browser, (action, fields): (String, Vec<(&'static str, String)>)| {
        let browser = browser.clone();
        let url = format!("{}/portal/admin/upstreams/{action}", app.base());
        async move {
            let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            browser.post(&url, &fields).await.status()
        }
    };

    // Refused: a member who is no admin, and a form without its CSRF token.
    let bob = Browser::sign_in(&app, "bob").await;
    let bobs = form(&bob.csrf(&app).await);
    assert_eq!(post(&bob, bobs("reject")).await, StatusCode::FORBIDDEN);
    assert_ne!(
        post(&cat, form("forged")("reject")).await,
        StatusCode::SEE_OTHER
    );
    assert!(
        pin_until(&app, "describe", |r| r.awaiting())
            .await
            .rejected
            .is_none()
    );

    // Rejected: withheld still, listed apart, audited.
    let cats = form(&cat.csrf(&app).await);
    assert_eq!(post(&cat, cats("reject")).await, StatusCode::SEE_OTHER);
    let row = pin_until(&app, "describe", PinRow::is_rejected).await;
    assert_eq!(row.hash, pinned.hash, "the first definition stays pinned");
    let page = cat.get(&url).await.text().await.unwrap();
    assert!(!page.contains("id=\"pin-py-describe\""), "{page}");
    assert!(page.contains("id=\"rejected-py-describe\""), "{page}");
    let audited_reject = audited(&app, "upstreams/reject").await;
    assert_eq!(audited_reject, ("py/describe".into(), "cat".into()));

    // The same definition offered again is not proposed again.
    assert_eq!(text(&call(&client, "py_change", changed).await), "changed");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(pin_until(&app, "describe", |_| true).await.is_rejected());
    until_offered(&client, "py_describe", None).await;

    // A different one is, and approved on the portal the member sees it.
    let third = "Echoes the text once more.";
    call(&client, "py_change", json!({"description": third})).await;
    pin_until(&app, "describe", PinRow::awaiting).await;
    assert_eq!(post(&cat, cats("approve")).await, StatusCode::SEE_OTHER);
    until_offered(&client, "py_describe", Some(third)).await;
    let row = pin_until(&app, "describe", |_| true).await;
    assert!(row.pending.is_none() && row.rejected.is_none(), "{row:?}");
    assert!(row.definition.contains(third), "{row:?}");
    let audited_approve = audited(&app, "upstreams/approve").await;
    assert_eq!(audited_approve, ("py/describe".into(), "cat".into()));
    client.cancel().await.unwrap();
    app.stop().await;
}

/// A tool the upstream renames is a new tool: pinned and offered on first
/// sight under its new name (trust on first use); the old name is gone.
#[tokio::test]
async fn a_renamed_upstream_tool_is_pinned_as_a_new_tool() {
    let Some((python, script)) = python() else {
        return;
    };
    let upstream = upstream(&python, &script);
    let app = spawn_app_with(move |c| c.upstreams = vec![upstream]).await;
    let (client, _) = sdk::connect(&app.url, None).await;
    until_offered(&client, "py_describe", Some(ORIGINAL)).await;
    let renamed = json!({"description": ORIGINAL, "name": "repeat"});
    call(&client, "py_change", renamed).await;
    until_offered(&client, "py_repeat", Some(ORIGINAL)).await;
    until_offered(&client, "py_describe", None).await;
    let echoed = call(&client, "py_repeat", json!({"text": "again"})).await;
    assert_eq!(text(&echoed), "again");
    let repeat = pin_until(&app, "repeat", |_| true).await;
    assert!(
        repeat.pending.is_none() && repeat.claim.is_none(),
        "{repeat:?}"
    );
    assert!(
        repeat.definition.contains("\"name\":\"repeat\""),
        "{repeat:?}"
    );
    // The old name's pin stays as it was: the same tool coming back is trusted.
    let describe = pin_until(&app, "describe", |_| true).await;
    assert!(describe.pending.is_none(), "{describe:?}");
    client.cancel().await.unwrap();
    app.stop().await;
}
