//! Every method that names a capability is checked, and what a caller may
//! not use answers as what does not exist (issue 30, item 2).

use std::time::Duration;

use serde_json::{Value, json};

use super::{Fixture, legacy, listen, open_session, reply, send};
use crate::helpers::{MODERN, TestApp};

/// The error of a reply, with the names it quotes made alike.
fn error_shape(message: &Value, names: &[&str]) -> (Value, String) {
    let error = &message["error"];
    let mut text = error["message"].as_str().unwrap_or_default().to_owned();
    for name in names {
        text = text.replace(name, "<name>");
    }
    (error["code"].clone(), text)
}

#[tokio::test]
async fn every_method_naming_a_capability_is_checked_and_forbidden_looks_unknown() {
    let fx = Fixture::start().await;
    let app = &fx.app;
    let narrow = fx.token("nina", &["tools:teamgate_info"]).await;
    let admin = fx.token("ada", &["*"]).await;
    let mine = open_session(app, &narrow).await;
    let theirs = open_session(app, &admin).await;
    let complete = |name: &str, argument: &str| json!({"ref": {"type": "ref/prompt", "name": name}, "argument": {"name": argument, "value": ""}});

    // completion/complete of a prompt the caller may not get: as unknown.
    let (_, forbidden) = legacy(
        app,
        &narrow,
        &mine,
        2,
        "completion/complete",
        complete("oncall", "service"),
    )
    .await;
    let (_, unknown) = legacy(
        app,
        &narrow,
        &mine,
        3,
        "completion/complete",
        complete("nosuch", "service"),
    )
    .await;
    assert!(
        !forbidden.to_string().contains("payments-ledger"),
        "{forbidden}"
    );
    assert!(forbidden["error"].is_object(), "{forbidden}");
    assert_eq!(
        error_shape(&forbidden, &["oncall"]),
        error_shape(&unknown, &["nosuch"]),
        "forbidden {forbidden} and unknown {unknown} answer alike"
    );
    let (_, allowed) = legacy(
        app,
        &admin,
        &theirs,
        4,
        "completion/complete",
        complete("oncall", "service"),
    )
    .await;
    assert!(allowed.to_string().contains("payments-ledger"), "{allowed}");

    // A restricted docs source's paths, through its template...
    let template = json!({"ref": {"type": "ref/resource", "uri": "docs://runbooks/{+path}"},
        "argument": {"name": "path", "value": ""}});
    let (_, hidden) = legacy(
        app,
        &narrow,
        &mine,
        5,
        "completion/complete",
        template.clone(),
    )
    .await;
    assert_eq!(
        hidden["result"]["completion"]["values"],
        json!([]),
        "{hidden}"
    );
    let (_, shown) = legacy(app, &admin, &theirs, 6, "completion/complete", template).await;
    assert!(shown.to_string().contains("restricted.md"), "{shown}");
    // ...and through a prompt the caller may use that completes from it.
    let prompter = fx.token("pia", &["prompts:lookup"]).await;
    let hers = open_session(app, &prompter).await;
    let (_, hidden) = legacy(
        app,
        &prompter,
        &hers,
        7,
        "completion/complete",
        complete("lookup", "path"),
    )
    .await;
    assert_eq!(
        hidden["result"]["completion"]["values"],
        json!([]),
        "{hidden}"
    );
    let (_, shown) = legacy(
        app,
        &admin,
        &theirs,
        8,
        "completion/complete",
        complete("lookup", "path"),
    )
    .await;
    assert!(shown.to_string().contains("restricted.md"), "{shown}");

    // resources/templates/list shows only what the caller may read.
    let (_, listed) = legacy(
        app,
        &narrow,
        &mine,
        9,
        "resources/templates/list",
        json!({}),
    )
    .await;
    assert!(listed["result"]["resourceTemplates"].is_array(), "{listed}");
    assert!(!listed.to_string().contains("docs://runbooks/"), "{listed}");
    let (_, listed) = legacy(
        app,
        &admin,
        &theirs,
        10,
        "resources/templates/list",
        json!({}),
    )
    .await;
    assert!(listed.to_string().contains("docs://runbooks/"), "{listed}");

    // resources/subscribe to what the caller may not read: as unknown.
    let reader = fx.token("rita", &["resources:read"]).await;
    let hers = open_session(app, &reader).await;
    let (_, forbidden) = legacy(
        app,
        &reader,
        &hers,
        11,
        "resources/subscribe",
        json!({"uri": fx.restricted}),
    )
    .await;
    let (_, unknown) = legacy(
        app,
        &reader,
        &hers,
        12,
        "resources/subscribe",
        json!({"uri": "docs://nowhere/x.md"}),
    )
    .await;
    assert!(forbidden["error"].is_object(), "{forbidden}");
    assert_eq!(
        error_shape(&forbidden, &[&fx.restricted]),
        error_shape(&unknown, &["docs://nowhere/x.md"]),
        "forbidden {forbidden} and unknown {unknown} answer alike"
    );
    let (_, readable) = legacy(
        app,
        &reader,
        &hers,
        13,
        "resources/subscribe",
        json!({"uri": "test://static-text"}),
    )
    .await;
    assert!(readable["result"].is_object(), "{readable}");

    // subscriptions/listen grants only what the caller may read, on both paths
    // (the stream served beside rmcp, and rmcp's own for other shapes).
    for extra in [None, Some(("last-event-id", "0"))] {
        let accepted = acknowledged(app, &reader, &fx.restricted, extra).await;
        assert_eq!(accepted, json!(["test://static-text"]), "{extra:?}");
    }
}

/// The resource subscriptions a listen stream of `token` acknowledges, asked
/// for a readable, a restricted and an unknown URI.
async fn acknowledged(
    app: &TestApp,
    token: &str,
    restricted: &str,
    extra: Option<(&str, &str)>,
) -> Value {
    let asked =
        json!({"resourceSubscriptions": ["test://static-text", restricted, "docs://nowhere/x.md"]});
    let mut stream = listen(app, token, asked, extra).await;
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(at) = seen.find("notifications/subscriptions/acknowledged") {
            let line = seen[..at]
                .rfind("data:")
                .map(|start| &seen[start + 5..])
                .unwrap();
            let line = line.lines().next().unwrap();
            let ack: Value = serde_json::from_str(line.trim()).unwrap();
            return ack["params"]["notifications"]["resourceSubscriptions"].clone();
        }
        let chunk = tokio::time::timeout_at(deadline, stream.chunk())
            .await
            .expect("acknowledged in time")
            .unwrap()
            .expect("stream open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[tokio::test]
async fn mcp_param_headers_of_a_forbidden_tool_are_checked_as_for_an_unknown_one() {
    let fx = Fixture::start().await;
    let app = &fx.app;
    let narrow = fx.token("nina", &["tools:teamgate_info"]).await;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}});
    let mut answers = Vec::new();
    for name in ["test_custom_header_echo", "no_such_tool"] {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": name, "arguments": {"region": "eu"}, "_meta": meta}});
        let headers = [
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", name),
            ("mcp-param-region", "us"),
        ];
        let (status, text) = send(app, &narrow, &body, &headers).await;
        let message = reply(&text);
        answers.push((status, message["error"]["code"].clone()));
    }
    assert_eq!(answers[0], answers[1], "{answers:?}");
    assert_eq!(answers[0].0, 403, "{answers:?}");
}
