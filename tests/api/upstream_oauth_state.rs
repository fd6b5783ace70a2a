//! An OAuth upstream's state follows the server (issue 26): the Python SDK
//! upstream of tests/interop/upstream_oauth_py.py, listed over a member's
//! connection, says its tool list changed on that member's own connection
//! (teamgate lists it again and members hear `list_changed`); stopped, it is
//! down on `/metrics` and its tools leave the lists (members hear it);
//! started again on the same port, it is listed again and answers as the
//! member; `teamgate upstreams list` shows it as `auto` with members'
//! OAuth in use. With `on_unavailable = "error"` its tools stay listed while it
//! is down and each call says plainly that it is unavailable.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{
    credentials::call_tool,
    helpers::TestApp,
    portal_browser::driver::Chrome,
    sdk::{self, Heard},
    upstream_oauth::{Upstream, app_fronting, connect_in_browser, text, token, whoami},
    upstream_pins::{cli, python},
};

/// The value of the `/metrics` line that starts with `prefix`.
async fn metric(app: &TestApp, prefix: &str) -> Option<String> {
    let metrics = (app.client.get(format!("{}/metrics", app.base())).send())
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = metrics.lines().find(|l| l.starts_with(prefix))?;
    Some(line.rsplit(' ').next().unwrap().to_owned())
}

/// `py`'s `teamgate_upstream_up` value on `/metrics`.
async fn up(app: &TestApp) -> String {
    let prefix = "teamgate_upstream_up{upstream=\"py\"";
    (metric(app, prefix).await).unwrap_or_else(|| panic!("no {prefix} on /metrics"))
}

/// Waits (at most `secs`) until `/metrics` shows `py` as `value`.
async fn until_up_is(app: &TestApp, value: &str, secs: u64) {
    for _ in 0..secs * 5 {
        if up(app).await == value {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("py's teamgate_upstream_up never became {value}");
}

/// The tool names `token`'s caller is offered.
async fn names(app: &TestApp, token: &str) -> Vec<String> {
    let params = json!({"_meta": crate::upstreams::modern_meta()});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let (status, text) = crate::sec_authz::send(app, token, &body, &headers).await;
    assert_eq!(status, 200, "{text}");
    let reply: Value = crate::sec_authz::reply(&text);
    (reply["result"]["tools"].as_array().unwrap().iter())
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// Waits (at most 10 s) until `wanted` says yes about the names offered.
async fn until_names(app: &TestApp, token: &str, wanted: impl Fn(&[String]) -> bool) {
    for _ in 0..50 {
        if wanted(&names(app, token).await) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("never offered as wanted: {:?}", names(app, token).await);
}

/// The upstream's port, from its URL.
fn port(upstream: &Upstream) -> u16 {
    let url = reqwest::Url::parse(&upstream.url).unwrap();
    url.port().unwrap()
}

#[tokio::test]
async fn upstream_oauth_state_follows_the_server_down_and_back_and_its_list_changes() {
    let Some((python, _)) = python() else {
        return;
    };
    let (app, idp, upstream) = app_fronting(&python, json!({})).await;
    let (ann, bob) = (
        token(&app, "ann", &["tools:*"]).await,
        token(&app, "bob", &["tools:*"]).await,
    );
    let mut chrome = Chrome::start_with_prefix(&app.base(), "upstate-").await;
    connect_in_browser(&mut chrome, "ann").await;
    chrome.close().await;
    until_names(&app, &bob, |n| n.iter().any(|n| n == "py_whoami")).await;
    until_up_is(&app, "1", 10).await;

    // The operator sees members' OAuth in use, found on an `auto` upstream.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("upstreams.toml");
    let url = &upstream.url;
    let file = format!(
        "[tools]\nhttp_allowlist = [{url:?}]\n[[upstreams]]\nname = \"py\"\nurl = {url:?}\n"
    );
    std::fs::write(&config, file).unwrap();
    let (ok, out, err) = cli(&config, &app.store_url(), &["list"]).await;
    assert!(ok, "{err}");
    assert!(out.contains("auto: oauth, 1 connected"), "{out}");
    let (ok, out, err) = cli(&config, &app.store_url(), &["list", "--json"]).await;
    assert!(ok, "{err}");
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown[0]["auth"], "auto", "{shown}");
    assert_eq!(shown[0]["oauthInUse"], true, "{shown}");
    assert_eq!(shown[0]["membersConnected"], 1, "{shown}");

    let (_bob_client, mut heard) =
        sdk::connect_as(&format!("{}/mcp", app.base()), Some(&bob), None).await;

    // A list change said on ann's own connection lists the upstream again.
    let added = call_tool(&app, &ann, "py_more_tools", json!({})).await;
    assert_eq!(text(&added), "added", "{added}");
    sdk::hear(&mut heard, &Heard::ToolsChanged).await;
    until_names(&app, &bob, |n| n.iter().any(|n| n == "py_extra")).await;

    // Stopped: down, its tools gone from the lists, members told.
    let port = port(&upstream);
    drop(upstream);
    until_up_is(&app, "0", 40).await;
    until_names(&app, &bob, |n| !n.iter().any(|n| n.starts_with("py_"))).await;
    sdk::hear(&mut heard, &Heard::ToolsChanged).await;
    let gone = whoami(&app, &ann).await;
    assert!(gone.to_string().contains("Unknown tool"), "{gone}");

    // Back on the same port: listed again, answering as the member.
    let _upstream = Upstream::start_on(&python, &idp.issuer, port);
    until_up_is(&app, "1", 60).await;
    until_names(&app, &bob, |n| n.iter().any(|n| n == "py_whoami")).await;
    sdk::hear(&mut heard, &Heard::ToolsChanged).await;
    let back = whoami(&app, &ann).await;
    assert_eq!(text(&back), "ann", "{back}");
}

#[tokio::test]
async fn upstream_oauth_state_down_with_on_unavailable_error_answers_a_clear_error() {
    let Some((python, _)) = python() else {
        return;
    };
    let (app, _idp, upstream) = app_fronting(&python, json!({"on_unavailable": "error"})).await;
    let ann = token(&app, "ann", &["tools:*"]).await;
    let mut chrome = Chrome::start_with_prefix(&app.base(), "upstate-err-").await;
    connect_in_browser(&mut chrome, "ann").await;
    chrome.close().await;
    until_names(&app, &ann, |n| n.iter().any(|n| n == "py_whoami")).await;
    until_up_is(&app, "1", 10).await;

    drop(upstream);
    until_up_is(&app, "0", 40).await;
    assert!(names(&app, &ann).await.iter().any(|n| n == "py_whoami"));
    let told = whoami(&app, &ann).await;
    assert_eq!(told["result"]["isError"], true, "{told}");
    assert_eq!(
        text(&told),
        "the upstream server py is unavailable (down); try again shortly",
        "{told}"
    );
}
