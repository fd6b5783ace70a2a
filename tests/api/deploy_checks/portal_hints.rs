//! The portal's first hour (issue 51, polish): the log names the issuer it
//! could not reach and why, and `check-config` hints at a missing client
//! secret (allowed, as a public client, but usually a mistake).

use std::sync::Arc;

use teamgate::{config::AuthMode, store::SystemClock};

use super::{stderr, teamgate, write};
use crate::{credentials::Logs, helpers::spawn_app_on, portal_idp::portal_config};

#[tokio::test]
async fn an_unreachable_issuer_is_named_in_the_log_with_why() {
    let logs = Logs::capture();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // Port 9 (discard) on loopback: nothing listens, the connection is refused.
    let app = spawn_app_on(
        listener,
        move |c| {
            c.auth.mode = AuthMode::Required;
            c.server.public_url = format!("http://{addr}/mcp");
            c.portal = Some(portal_config("http://127.0.0.1:9"));
        },
        Arc::new(SystemClock),
    )
    .await;
    let response = app
        .client
        .get(format!("{}/portal/login", app.base()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 502);
    let page = response.text().await.unwrap();
    assert!(
        !page.contains("127.0.0.1:9"),
        "the page tells no one the internals: {page}"
    );
    let log = logs.text();
    let line = (log.lines())
        .find(|l| l.contains("discovery of the issuer http://127.0.0.1:9 failed"))
        .unwrap_or_else(|| panic!("no line names the issuer: {log}"));
    assert!(line.to_lowercase().contains("connect"), "{line}");
}

#[test]
fn check_config_hints_at_a_missing_portal_client_secret() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.toml");
    write(
        &file,
        "[server]\npublic_url = \"https://mcp.example.com/mcp\"\nallowed_hosts = [\"mcp.example.com\"]\n\
         [portal]\nissuer = \"https://login.example.com\"\nclient_id = \"teamgate\"\n",
    );
    let args = ["check-config", "--config", file.to_str().unwrap()];
    let output = teamgate(dir.path(), &args, &[]);
    let error = stderr(&output);
    assert!(
        error.contains("hint: portal.client_secret is empty")
            && error.contains("TEAMGATE__PORTAL__CLIENT_SECRET"),
        "{error}"
    );
    let set = [("TEAMGATE__PORTAL__CLIENT_SECRET", "s3cret-not-printed")];
    let output = teamgate(dir.path(), &args, &set);
    assert!(
        !stderr(&output).contains("hint: portal.client_secret"),
        "{}",
        stderr(&output)
    );
}
