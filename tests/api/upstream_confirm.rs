//! Issue 65 part 1: an upstream tool annotated `destructiveHint: true`
//! (and not `readOnlyHint`) is confirmed by each member before it runs,
//! unless its operator says `confirm = false`; `teamgate upstreams list`
//! and the portal's upstreams page show which tools are confirmed and why.

use std::time::Duration;

use serde_json::{Value, json};
use teamgate::{config::UpstreamConfig, store::PinRepo};

use crate::{
    helpers::{repo_path, spawn_app_with},
    portal_idp::{Browser, portal_app_with},
    sdk::{self, Heard, call, text},
    sec44_upreg::python,
    upstream_pins::cli,
};

#[tokio::test]
async fn a_destructive_upstream_tool_is_confirmed_unless_the_operator_says_otherwise() {
    let Some(python) = python() else { return };
    let script = repo_path("tests/interop/annotated_py.py");
    let entry = format!(
        "name = \"db\"\ncommand = {python:?}\nargs = [{script:?}]\n\
         [tools.trim]\nconfirm = false\n",
        script = script.display().to_string()
    );
    let upstream: UpstreamConfig = toml::from_str(&entry).unwrap();
    let app = spawn_app_with(move |c| c.upstreams = vec![upstream]).await;

    let (yes, mut heard) = sdk::connect(&app.url, Some(true)).await;
    for _ in 0..300 {
        let tools = yes.list_all_tools().await.unwrap();
        if tools.iter().any(|t| t.name == "db_drop_table") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let dropped = call(&yes, "db_drop_table", json!({"target": "users"})).await;
    assert_eq!(text(&dropped), "done: users", "{dropped}");
    // Heard before it: the upstream's tools arriving.
    let mut asked = None;
    while let Ok(next) = heard.try_recv() {
        if let Heard::Elicited(message) = next {
            asked = Some(message);
        }
    }
    let message = asked.expect("the member was asked");
    assert!(message.contains("db_drop_table"), "{message}");
    yes.cancel().await.unwrap();

    let (no, _) = sdk::connect(&app.url, Some(false)).await;
    let declined = call(&no, "db_drop_table", json!({"target": "users"})).await;
    assert_eq!(declined["isError"], true, "{declined}");
    assert!(text(&declined).contains("declined"), "{declined}");
    // Read-only wins over destructive; `confirm = false` stands; no hint asks nothing.
    for tool in ["db_read_rows", "db_trim", "db_plain"] {
        let ran = call(&no, tool, json!({"target": "t"})).await;
        assert_eq!(text(&ran), "done: t", "{tool} runs unasked: {ran}");
    }
    no.cancel().await.unwrap();

    // The operator's view, from the pinned definitions and the configuration.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("db.toml");
    let file = entry.replace("[tools.trim]", "[upstreams.tools.trim]");
    std::fs::write(&config, format!("[[upstreams]]\n{file}")).unwrap();
    let (ok, out, err) = cli(&config, &app.store_url(), &["list", "--json"]).await;
    assert!(ok, "{err}");
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        shown[0]["confirmed"],
        json!([{"tool": "drop_table", "why": "destructiveHint"}]),
        "{shown}"
    );
    let (_, table, _) = cli(&config, &app.store_url(), &["list"]).await;
    assert!(table.contains("drop_table (destructiveHint)"), "{table}");
    app.stop().await;
}

/// The portal's upstreams page says the same to an admin.
#[tokio::test]
async fn the_portal_shows_which_upstream_tools_are_confirmed_and_why() {
    let Some(python) = python() else { return };
    let script = repo_path("tests/interop/annotated_py.py");
    let entry = format!(
        "name = \"db\"\ncommand = {python:?}\nargs = [{script:?}]\n[tools.trim]\nconfirm = false\n",
        script = script.display().to_string()
    );
    let upstream: UpstreamConfig = toml::from_str(&entry).unwrap();
    let clock = std::sync::Arc::new(teamgate::store::SystemClock);
    let (app, _idp) = portal_app_with(clock, move |c| c.upstreams = vec![upstream]).await;
    // Pinned on first sight, once the upstream is connected.
    for _ in 0..300 {
        if app.store.pins(Some("db")).await.unwrap().len() == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let cat = Browser::sign_in(&app, "cat").await;
    let page = cat
        .get(&format!("{}/portal/admin/upstreams", app.base()))
        .await;
    let page = page.text().await.unwrap();
    assert!(
        page.contains("Confirmed by the member before each call")
            && page.contains("<code>drop_table</code> (destructiveHint)"),
        "{page}"
    );
    assert!(
        !page.contains("<code>trim</code> ("),
        "confirm = false: {page}"
    );
    app.stop().await;
}
