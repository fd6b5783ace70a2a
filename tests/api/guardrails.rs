//! Issue 65 part 4: `[[guardrails]]` on tool arguments and results, in
//! order, per tool: each built-in detector on real-looking data (block,
//! redact, log), audited by rule and never with the value; and a webhook
//! filter that allows, refuses, and is down (closed and open).

use std::sync::{Arc, Mutex};

use axum::{Json, Router, body::Bytes, extract::State, http::HeaderMap, routing::post};
use serde_json::{Value, json};
use teamgate::store::AuditRecord;

use crate::{
    command_tools::command,
    helpers::{audit_until, spawn_app_with},
};

const CARD: &str = "4111 1111 1111 1111";
const IBAN: &str = "GB82 WEST 1234 5698 7654 32";
const EMAIL: &str = "ann.lee@example.com";
const AWS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";

fn say(name: &str) -> Value {
    json!({"name": name, "description": "says the text", "program": "/bin/echo",
        "args": ["{text}"],
        "input_schema": {"type": "object", "required": ["text"],
            "properties": {"text": {"type": "string"}}}})
}

fn guardrail(value: Value) -> teamgate::config::GuardrailConfig {
    serde_json::from_value(value).expect("a valid [[guardrails]]")
}

async fn call(app: &crate::helpers::TestApp, id: i64, tool: &str, text: &str) -> Value {
    let params = json!({"name": tool, "arguments": {"text": text}});
    let (status, mut replies) = app.modern_call(id, "tools/call", params).await;
    assert_eq!(status, 200, "{replies:?}");
    replies.pop().expect("a reply")["result"].clone()
}

/// The `tools/call` audit records, oldest first, once `n` are written (the
/// writer follows the replies by a few milliseconds).
async fn audited_calls(
    app: &crate::helpers::TestApp,
    n: usize,
) -> Vec<teamgate::store::AuditRecord> {
    let calls = |r: &[AuditRecord]| r.iter().filter(|r| r.method == "tools/call").count();
    let mut rows = audit_until(&app.store, None, |r| calls(r) >= n).await;
    rows.retain(|r| r.method == "tools/call");
    assert!(rows.len() >= n, "{} of {n} calls audited", rows.len());
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    rows
}

/// A refusal's text, or what the command printed.
fn text_of(result: &Value) -> String {
    match result["structuredContent"]["stdout"].as_str() {
        Some(stdout) => stdout.to_owned(),
        None => result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    }
}

#[tokio::test]
async fn detectors_block_redact_and_log_in_order_per_tool_and_audit_the_rule_only() {
    let app = spawn_app_with(|c| {
        c.tools.command = vec![command(say("say")), command(say("say_too"))];
        c.guardrails = vec![
            guardrail(json!({"name": "no-cards", "detect": "card_number", "on": ["arguments"]})),
            guardrail(
                json!({"name": "no-email", "detect": "email", "action": "redact",
                "on": ["results"]}),
            ),
            guardrail(json!({"name": "keys-seen", "detect": "secrets", "action": "log"})),
            guardrail(
                json!({"name": "no-iban-from-say", "detect": "iban", "on": ["results"],
                "tools": ["say"]}),
            ),
        ];
    })
    .await;
    // A card number in the arguments: refused before the tool runs.
    let result = call(&app, 1, "say", &format!("charge {CARD} now")).await;
    assert_eq!(result["isError"], true, "{result}");
    assert!(text_of(&result).contains("no-cards"), "{result}");
    assert!(!result.to_string().contains("4111"), "{result}");
    // A number that fails the Luhn check passes.
    let result = call(&app, 2, "say", "order 4111 1111 1111 1112").await;
    assert_eq!(text_of(&result).trim(), "order 4111 1111 1111 1112");
    // An e-mail address in the result: redacted, the rest intact.
    let result = call(&app, 3, "say", &format!("mail {EMAIL} please")).await;
    assert_eq!(
        text_of(&result).trim(),
        "mail [redacted:email] please",
        "{result}"
    );
    // A secret: passes, logged in the audit record.
    let result = call(&app, 4, "say_too", &format!("key {AWS_KEY}")).await;
    assert!(text_of(&result).contains(AWS_KEY), "{result}");
    // An IBAN in the result: withheld from `say`, not from `say_too`.
    let result = call(&app, 5, "say", &format!("pay {IBAN}")).await;
    assert_eq!(result["isError"], true, "{result}");
    assert!(text_of(&result).contains("no-iban-from-say"), "{result}");
    let result = call(&app, 6, "say_too", &format!("pay {IBAN}")).await;
    assert!(text_of(&result).contains(IBAN), "{result}");

    // The audit names each rule, its action and phase; never the value.
    let rows = audited_calls(&app, 6).await;
    let outcomes: Vec<String> = rows.iter().map(|r| r.outcome.clone()).collect();
    assert_eq!(
        outcomes,
        [
            "tool_error; guardrails: no-cards blocked arguments",
            "ok",
            "ok; guardrails: no-email redacted result",
            "ok; guardrails: keys-seen logged arguments, keys-seen logged result",
            "tool_error; guardrails: no-iban-from-say blocked result",
            "ok",
        ]
    );
    let all = format!("{:?}", app.store.audit_tail(None, 0, 1000).await.unwrap());
    for value in [CARD, "4111", EMAIL, AWS_KEY, IBAN] {
        assert!(!all.contains(value), "{value} in the audit trail");
    }
}

/// What the filter was asked, each with whether its signature held.
type Asked = Arc<Mutex<Vec<(bool, Value)>>>;

/// A filter that refuses any content mentioning "forbidden", checking
/// each request's signature.
async fn filter(State(seen): State<Asked>, headers: HeaderMap, body: Bytes) -> Json<Value> {
    let signature = headers["x-teamgate-signature"].to_str().unwrap().to_owned();
    let t: u64 = signature[2..signature.find(',').unwrap()].parse().unwrap();
    let key = std::env::var("HOME").unwrap();
    let good = signature == teamgate::outbound::signature(key.as_bytes(), t, &body);
    let request: Value = serde_json::from_slice(&body).unwrap();
    let allow = !request["content"].to_string().contains("forbidden");
    seen.lock().unwrap().push((good, request));
    Json(json!({"allow": allow}))
}

#[tokio::test]
async fn a_webhook_filter_allows_refuses_and_when_down_fails_closed_or_open() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let router = Router::new()
        .route("/filter", post(filter))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/filter", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    let down = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down_url = format!("http://{}/filter", down.local_addr().unwrap());
    drop(down);
    // The key is read from the variable `secret_env` names; a variable every
    // test process has stands in for the operator's.
    let key_env = "HOME";
    let app = spawn_app_with(|c| {
        c.tools.command = vec![
            command(say("say")),
            command(say("closed")),
            command(say("open")),
        ];
        let webhook = |name: &str, url: &str, tools: &str, failure: &str| {
            guardrail(json!({"name": name, "detect": "webhook", "url": url,
                "secret_env": key_env, "timeout": "1s", "failure": failure,
                "tools": [tools], "on": ["arguments"]}))
        };
        c.guardrails = vec![
            webhook("filter", &url, "say", "closed"),
            webhook("filter-down-closed", &down_url, "closed", "closed"),
            webhook("filter-down-open", &down_url, "open", "open"),
        ];
    })
    .await;
    let result = call(&app, 1, "say", "fine words").await;
    assert_eq!(text_of(&result).trim(), "fine words", "{result}");
    let result = call(&app, 2, "say", "forbidden words").await;
    assert_eq!(result["isError"], true, "{result}");
    assert!(text_of(&result).contains("\"filter\""), "{result}");
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert!(seen.iter().all(|(good, _)| *good), "signatures checked");
        assert_eq!(seen[0].1["tool"], "say");
        assert_eq!(seen[0].1["phase"], "arguments");
        assert_eq!(seen[0].1["content"]["text"], "fine words");
    }
    let result = call(&app, 3, "closed", "anything").await;
    assert_eq!(result["isError"], true, "fail-closed: {result}");
    let result = call(&app, 4, "open", "anything").await;
    assert_eq!(text_of(&result).trim(), "anything", "fail-open: {result}");
    let rows = audited_calls(&app, 4).await;
    let outcomes: Vec<&str> = (rows.iter()).map(|r| r.outcome.as_str()).collect();
    assert_eq!(
        outcomes,
        [
            "ok",
            "tool_error; guardrails: filter blocked arguments",
            "tool_error; guardrails: filter-down-closed blocked arguments",
            "ok; guardrails: filter-down-open logged arguments",
        ]
    );
}
