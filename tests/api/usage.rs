//! The usage pages (issue 64 part 2) over HTTP at the real `oidc-provider`:
//! real calls through the server (teamgate's own tools and the everything
//! server upstream) make the rollups; an admin's page shows each member's,
//! tool's and upstream's figures beside an inline SVG chart under the
//! portal's strict CSP; a member's own page shows their calls and never
//! another member's.

use std::{sync::Arc, time::Duration};

use reqwest::StatusCode;
use serde_json::{Value, json};
use teamgate::store::{Clock, Grain, ManualClock, SystemClock};

use crate::{
    helpers::TestApp,
    portal_idp::{Browser, portal_app_with},
    toolsets::call,
    upstreams::{everything, listed, upstream},
};

pub(crate) const STRICT_CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
    form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// A teamgate with the portal, the everything server upstream when it is
/// installed, and a clock that stands still (every call in one minute).
pub(crate) async fn usage_app() -> (TestApp, crate::portal_idp::Idp, bool) {
    let clock = Arc::new(ManualClock::new(SystemClock.now_ms()));
    let found = everything();
    let with_upstream = found.is_some();
    let (app, idp) = portal_app_with(clock, move |c| {
        if let Some((node, script)) = found {
            c.upstreams = vec![upstream(&node, &script, json!({}))];
        }
    })
    .await;
    (app, idp, with_upstream)
}

async fn token(app: &TestApp, user: &str) -> String {
    app.tokens
        .create(user, "usage", vec!["*".into()], None)
        .await
        .unwrap()
        .token
}

async fn tool(app: &TestApp, token: &str, name: &str, arguments: Value) -> Value {
    let (status, reply) = call(
        app,
        "/mcp",
        token,
        1,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{name}: {reply}");
    reply
}

/// ann: three simple texts, one tool error (and the upstream's echo when
/// there is one); bob: two image contents. Returns once the rollups hold
/// every call (the audit writer batches them).
pub(crate) async fn make_calls(app: &TestApp, with_upstream: bool) {
    let ann = token(app, "ann").await;
    let bob = token(app, "bob").await;
    for _ in 0..3 {
        tool(app, &ann, "test_simple_text", json!({})).await;
    }
    let failed = tool(app, &ann, "test_error_handling", json!({})).await;
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    for _ in 0..2 {
        tool(app, &bob, "test_image_content", json!({})).await;
    }
    let mut expected = 6;
    if with_upstream {
        listed(app, Some(&ann), "everything_echo").await;
        let echoed = tool(app, &ann, "everything_echo", json!({"message": "hi"})).await;
        assert!(echoed["result"].is_object(), "{echoed}");
        expected += 1;
    }
    let since = Grain::Minute.bucket(app.store.now_ms());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let series = app
            .store
            .usage_series(Grain::Minute, since, None)
            .await
            .unwrap();
        let calls: i64 = series.iter().map(|(_, t)| t.calls).sum();
        if calls == expected {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the rollups hold {calls} of {expected} calls"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A table row's name, calls and errors cells as the page draws them.
fn row(name: &str, calls: i64, errors: &str) -> String {
    format!(
        "<td class=\"name\">{name}</td><td class=\"calls\">{calls}</td><td><svg class=\"share\""
    ) + &format!("|<td class=\"errors\">{errors}</td>")
}

fn has_row(html: &str, name: &str, calls: i64, errors: &str) -> bool {
    let expected = row(name, calls, errors);
    let (head, tail) = expected.split_once('|').unwrap();
    html.split(head)
        .nth(1)
        .is_some_and(|rest| rest.split("</tr>").next().unwrap().contains(tail))
}

async fn page(browser: &Browser, app: &TestApp, path: &str) -> (String, String) {
    let response = browser.get(&format!("{}{path}", app.base())).await;
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    (csp, response.text().await.unwrap())
}

#[tokio::test]
async fn usage_an_admin_sees_calls_errors_and_latency_per_member_tool_and_upstream() {
    let (app, _idp, with_upstream) = usage_app().await;
    make_calls(&app, with_upstream).await;
    let cat = Browser::sign_in(&app, "cat").await;
    let ann_calls = if with_upstream { 5 } else { 4 };
    for range in ["hour", "day", "30d"] {
        let (csp, html) = page(&cat, &app, &format!("/portal/admin/usage?range={range}")).await;
        assert_eq!(csp, STRICT_CSP, "{range}: the CSP stays strict");
        assert!(!html.contains("<script"), "{range}: no script");
        assert!(
            html.contains("<svg id=\"usage-chart\" class=\"chart\""),
            "{range}: {html}"
        );
        assert!(html.contains("<rect class=\"calls\""), "{range}: a bar");
        assert!(
            html.contains("<rect class=\"errors\""),
            "{range}: an error bar"
        );
        let ann_errors = format!("1 ({:.1} %)", 100.0 / ann_calls as f64);
        assert!(
            has_row(&html, "ann", ann_calls, &ann_errors),
            "{range}: {html}"
        );
        assert!(has_row(&html, "bob", 2, "0"), "{range}: {html}");
        assert!(has_row(&html, "test_simple_text", 3, "0"), "{range}");
        assert!(
            has_row(&html, "test_error_handling", 1, "1 (100.0 %)"),
            "{range}"
        );
        assert!(has_row(&html, "test_image_content", 2, "0"), "{range}");
        // The conformance tools answer at once: p50 and p95 are small.
        assert!(html.contains("<td class=\"p95\">≤ "), "{range}");
        if with_upstream {
            assert!(has_row(&html, "everything", 1, "0"), "{range}: {html}");
        } else {
            assert!(html.contains("id=\"usage-upstreams-none\""), "{range}");
        }
        let total = format!("<th>Calls</th><td>{}</td>", ann_calls + 2);
        assert!(html.contains(&total), "{range}: {html}");
    }
    // The overview links to it with the last hour's count.
    let (_, overview) = page(&cat, &app, "/portal/admin").await;
    assert!(
        overview.contains(&format!(
            "id=\"usage-link\" href=\"/portal/admin/usage?range=hour\">{}<",
            ann_calls + 2
        )),
        "{overview}"
    );
    // A made-up range is refused; a member who is no admin is too.
    let odd = cat
        .get(&format!("{}/portal/admin/usage?range=week", app.base()))
        .await;
    assert_eq!(odd.status(), StatusCode::BAD_REQUEST);
    let ann = Browser::sign_in(&app, "ann").await;
    let refused = ann.get(&format!("{}/portal/admin/usage", app.base())).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn usage_a_member_sees_their_own_calls_and_never_another_members() {
    let (app, _idp, with_upstream) = usage_app().await;
    make_calls(&app, with_upstream).await;
    let ann_calls = if with_upstream { 5 } else { 4 };

    let ann = Browser::sign_in(&app, "ann").await;
    let (csp, html) = page(&ann, &app, "/portal/usage?range=hour").await;
    assert_eq!(csp, STRICT_CSP);
    assert!(html.contains("<svg id=\"usage-chart\""), "{html}");
    assert!(has_row(&html, "test_simple_text", 3, "0"), "{html}");
    assert!(
        has_row(&html, "test_error_handling", 1, "1 (100.0 %)"),
        "{html}"
    );
    assert!(
        html.contains(&format!("<th>Calls</th><td>{ann_calls}</td>")),
        "{html}"
    );
    assert!(
        html.contains(&format!(": {ann_calls} calls, 1 errors</title>")),
        "the chart's bar is ann's alone: {html}"
    );
    for other in ["bob", "test_image_content", "usage-members"] {
        assert!(!html.contains(other), "{other} on ann's page: {html}");
    }

    let bob = Browser::sign_in(&app, "bob").await;
    let (_, html) = page(&bob, &app, "/portal/usage").await;
    assert!(has_row(&html, "test_image_content", 2, "0"), "{html}");
    assert!(html.contains("<th>Calls</th><td>2</td>"), "{html}");
    assert!(html.contains(": 2 calls, 0 errors</title>"), "{html}");
    for other in [">ann<", "test_simple_text", "test_error_handling", "echo"] {
        assert!(!html.contains(other), "{other} on bob's page: {html}");
    }
    // dan made no calls: an empty page, still nobody else's figures.
    let dan = Browser::sign_in(&app, "dan").await;
    let (_, html) = page(&dan, &app, "/portal/usage?range=30d").await;
    assert!(html.contains("<th>Calls</th><td>0</td>"), "{html}");
    assert!(html.contains("id=\"usage-tools-none\""), "{html}");
    assert!(
        !html.contains("test_simple_text") && !html.contains(">bob<"),
        "{html}"
    );
}
