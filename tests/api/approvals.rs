//! Issue 65 part 2: approval by a second person, over HTTP. `deploy`, a
//! command tool with `approval = { group = "leads" }`, is called by eve
//! (dev, leads) through the official Rust SDK client; members signed in
//! at the real `oidc-provider` decide on `/portal/approvals`: eve cannot
//! approve her own call, ann (not a lead) cannot decide, fay (a lead) can.
//! Approved, the call runs with exactly the arguments fay read; denied, it
//! ends with fay's reason; undecided, it expires (the store's clock moved);
//! parked when the server restarts, the request survives and the same call
//! runs on its approval. `approvals_kinds.rs` has the other ways in (a
//! task, an upstream's tool, the configuration); the browser version is
//! `approvals_browser.rs`.

use std::{sync::Arc, time::Duration};

use reqwest::StatusCode;
use serde_json::{Value, json};
use teamgate::{
    config::Config,
    store::{ApprovalRepo, ApprovalRow, AuditRecord, Clock, ManualClock, SystemClock},
};

use crate::{
    command_tools::command,
    helpers::{TestApp, audit_until},
    pin_review::audited,
    portal_idp::{Browser, Idp, hidden, portal_app_with},
    sdk::{self, text},
    upstream_oauth::token,
};

/// `deploy`: prints what it was asked to deploy, after approval by a lead.
pub(crate) fn deploy_tool(timeout: &str) -> teamgate::config::CommandToolConfig {
    command(json!({
        "name": "deploy",
        "description": "Deploys a service.",
        "program": "/bin/echo",
        "args": ["deployed", "{service}", "at", "{version}"],
        "input_schema": {"type": "object", "properties": {
            "service": {"type": "string"}, "version": {"type": "string"}},
            "required": ["service", "version"]},
        "approval": {"group": "leads", "timeout": timeout},
    }))
}

pub(crate) async fn approvals_app(
    clock: Arc<dyn Clock>,
    adjust: impl FnOnce(&mut Config),
) -> (TestApp, Idp) {
    portal_app_with(clock, |c| {
        c.tools.command = vec![deploy_tool("30m")];
        adjust(c);
    })
    .await
}

/// `arguments` for `deploy`, as the SDK sends them.
pub(crate) fn args(service: &str) -> Value {
    json!({"service": service, "version": "1.4.2"})
}

/// eve's call of `deploy`, running until it is decided.
fn call_as_eve(client: sdk::Client, service: &str) -> tokio::task::JoinHandle<Value> {
    let arguments = args(service);
    tokio::spawn(async move { sdk::call(&client, "deploy", arguments).await })
}

/// The request for approval of `service`, once it is `status` (30 s at most).
pub(crate) async fn request_until(app: &TestApp, service: &str, status: &str) -> ApprovalRow {
    for _ in 0..300 {
        let rows = app.store.approvals_seen_by("eve", &[], 50).await.unwrap();
        let found = rows.into_iter().find(|r| {
            r.arguments.contains(&format!("\"service\":\"{service}\"")) && r.status == status
        });
        if let Some(row) = found {
            return row;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no {status} request for {service}");
}

/// `member` decides on request `id` from the Approvals page's form.
pub(crate) async fn decide(
    app: &TestApp,
    member: &Browser,
    id: &str,
    decision: &str,
    reason: &str,
) -> (StatusCode, String) {
    let page = member
        .get(&format!("{}/portal/approvals", app.base()))
        .await;
    let csrf = hidden(&page.text().await.unwrap(), "csrf").expect("a CSRF field");
    let url = format!("{}/portal/approvals/{id}", app.base());
    let response = member
        .post(
            &url,
            &[("csrf", &csrf), ("decision", decision), ("reason", reason)],
        )
        .await;
    (response.status(), response.text().await.unwrap())
}

pub(crate) async fn within(call: tokio::task::JoinHandle<Value>) -> Value {
    tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("the call ends once decided")
        .unwrap()
}

#[tokio::test]
async fn a_lead_approves_a_call_which_runs_with_exactly_the_arguments_shown() {
    let (app, _idp) = approvals_app(Arc::new(SystemClock), |_| {}).await;
    let eve_token = token(&app, "eve", &["tools:*"]).await;
    let (client, _) = sdk::connect_as(&app.url, Some(&eve_token), None).await;
    let call = call_as_eve(client, "payments");
    let row = request_until(&app, "payments", "pending").await;
    assert_eq!((row.tool.as_str(), row.group.as_str()), ("deploy", "leads"));

    // eve is a lead, but not her own approver; ann is no lead at all.
    let eve = Browser::sign_in(&app, "eve").await;
    let (status, body) = decide(&app, &eve, &row.id, "approve", "").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body.contains("you asked for this call of deploy yourself"),
        "{body}"
    );
    let ann = Browser::sign_in(&app, "ann").await;
    let listed = ann.get(&format!("{}/portal/approvals", app.base())).await;
    assert!(
        !listed.text().await.unwrap().contains(&row.id),
        "ann is no lead"
    );
    let (status, body) = decide(&app, &ann, &row.id, "approve", "").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("only a member of leads decides"), "{body}");
    assert!(!call.is_finished(), "nobody has approved yet");

    // fay reads exactly what will run, and approves.
    let fay = Browser::sign_in(&app, "fay").await;
    let page = fay.get(&format!("{}/portal/approvals", app.base())).await;
    let html = page.text().await.unwrap();
    let section = html
        .split(&format!("id=\"approval-{}\"", row.id))
        .nth(1)
        .expect("fay is shown the request");
    assert!(
        section.contains("asked by <strong>eve</strong>"),
        "{section}"
    );
    assert!(
        section.contains("&quot;service&quot;: &quot;payments&quot;"),
        "{section}"
    );
    assert!(
        section.contains("&quot;version&quot;: &quot;1.4.2&quot;"),
        "{section}"
    );
    let (status, body) = decide(&app, &fay, &row.id, "approve", "release train").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");

    let result = within(call).await;
    assert_eq!(
        result["structuredContent"]["stdout"], "deployed payments at 1.4.2\n",
        "{result}"
    );
    assert_eq!(
        request_until(&app, "payments", "used")
            .await
            .decided_by
            .as_deref(),
        Some("fay")
    );
    // Used once: a second decision is refused.
    let (status, body) = decide(&app, &fay, &row.id, "deny", "").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    let (target, user) = audited(&app, "approvals/request").await;
    assert_eq!((target.as_str(), user.as_str()), ("deploy", "eve"));
    let (target, user) = audited(&app, "approvals/approve").await;
    assert_eq!(
        (target, user.as_str()),
        (format!("deploy {}", row.id), "fay")
    );
    // The call's own record is written in the audit writer's next batch
    // after its reply: waited for (bounded).
    let ran = |r: &AuditRecord| r.method == "tools/call" && r.target == "deploy";
    let trail = audit_until(&app.store, None, |t| t.iter().any(ran)).await;
    let ran = trail.into_iter().find(ran).map(|r| (r.user, r.outcome));
    assert_eq!(ran, Some(("eve".to_owned(), "ok".to_owned())));
    app.stop().await;
}

#[tokio::test]
async fn a_denial_ends_the_call_unrun_with_the_reason() {
    let (app, _idp) = approvals_app(Arc::new(SystemClock), |_| {}).await;
    let eve_token = token(&app, "eve", &["tools:*"]).await;
    let (client, _) = sdk::connect_as(&app.url, Some(&eve_token), None).await;
    let call = call_as_eve(client, "ledger");
    let row = request_until(&app, "ledger", "pending").await;
    let fay = Browser::sign_in(&app, "fay").await;
    let (status, body) = decide(&app, &fay, &row.id, "deny", "change freeze until Monday").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    let result = within(call).await;
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(
        text(&result),
        "fay (leads) denied this call of `deploy`: change freeze until Monday. The tool did not run."
    );
    let (target, user) = audited(&app, "approvals/deny").await;
    assert_eq!(
        (target, user.as_str()),
        (format!("deploy {}", row.id), "fay")
    );
    // eve's own page shows what became of it.
    let eve = Browser::sign_in(&app, "eve").await;
    let page = eve
        .get(&format!("{}/portal/approvals", app.base()))
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("denied by fay"), "{page}");
    assert!(page.contains("change freeze until Monday"), "{page}");
    app.stop().await;
}

#[tokio::test]
async fn an_undecided_call_expires_after_its_timeout() {
    let clock = Arc::new(ManualClock::new(SystemClock.now_ms()));
    let (app, _idp) = approvals_app(clock.clone(), |_| {}).await;
    let eve_token = token(&app, "eve", &["tools:*"]).await;
    let (client, _) = sdk::connect_as(&app.url, Some(&eve_token), None).await;
    let call = call_as_eve(client, "search");
    let row = request_until(&app, "search", "pending").await;
    assert_eq!(row.expires_ms - row.created_ms, 30 * 60 * 1000);
    clock.advance(29 * 60 * 1000);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(!call.is_finished(), "still within its 30 minutes");
    clock.advance(60 * 1000 + 1);
    let result = within(call).await;
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        text(&result).starts_with("No member of leads approved this call of `deploy` within 30m"),
        "{result}"
    );
    request_until(&app, "search", "expired").await;
    let (target, user) = audited(&app, "approvals/expire").await;
    assert_eq!((target.as_str(), user.as_str()), ("deploy", "eve"));
    // Too late to decide now.
    let fay = Browser::sign_in(&app, "fay").await;
    let (status, body) = decide(&app, &fay, &row.id, "approve", "").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("no longer waiting"), "{body}");
    app.stop().await;
}

#[tokio::test]
async fn a_request_parked_across_a_restart_is_decided_and_its_call_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/kept.db", dir.path().display());
    let keep = |c: &mut Config| c.store.url = teamgate::config::DatabaseUrl::new(url.clone());
    let (mut first, _idp) = approvals_app(Arc::new(SystemClock), keep).await;
    let eve_token = token(&first, "eve", &["tools:*"]).await;
    let (client, _) = sdk::connect_as(&first.url, Some(&eve_token), None).await;
    let call = call_as_eve(client, "billing");
    let row = request_until(&first, "billing", "pending").await;
    first.halt().await;
    let _ = tokio::time::timeout(Duration::from_secs(30), call).await;

    // The restarted server lists the same request, still pending.
    let (second, _idp2) = approvals_app(Arc::new(SystemClock), keep).await;
    assert_eq!(
        request_until(&second, "billing", "pending").await.id,
        row.id
    );
    let fay = Browser::sign_in(&second, "fay").await;
    let (status, body) = decide(&second, &fay, &row.id, "approve", "").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");

    // eve calls again with the same arguments: it runs on that approval,
    // at once, and the approval is used up.
    let (client, _) = sdk::connect_as(&second.url, Some(&eve_token), None).await;
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        sdk::call(&client, "deploy", args("billing")),
    )
    .await
    .expect("runs at once on the approval it had");
    assert_eq!(
        result["structuredContent"]["stdout"], "deployed billing at 1.4.2\n",
        "{result}"
    );
    let rows = second
        .store
        .approvals_seen_by("eve", &[], 50)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "no second request: {rows:?}");
    assert_eq!(rows[0].status, "used");
    // Another call asks again.
    let again = call_as_eve(client, "billing");
    let next = request_until(&second, "billing", "pending").await;
    assert_ne!(next.id, row.id);
    again.abort();
    second.stop().await;
}
