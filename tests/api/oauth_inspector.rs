//! The MCP Inspector's CLI (@modelcontextprotocol/inspector 2.12 from
//! .cache/inspector) as a further OAuth client of teamgate as the
//! authorization server (issue 28), headless: it finds the sign-in from the
//! 401, registers, prints the authorization URL on stderr (its interactive
//! sign-in wants a TTY or `MCP_AUTO_OPEN_ENABLED=true`; the browser it would
//! open is `BROWSER=true`, which opens nothing), and waits on its own loopback
//! callback listener; the member signs in and consents in headless chromium
//! (`oauth_sdk/browser.rs`); then it calls a tool with the access token.

use std::{process::Stdio, time::Duration};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use crate::{helpers::repo_path, oauth_flow::oauth_app, oauth_sdk::browser};

const CLI: &str =
    ".cache/inspector/node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js";

#[tokio::test]
async fn oauth_inspector_cli_signs_in_in_the_browser_and_calls_a_tool() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let home = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = tokio::process::Command::new(repo_path(".cache/bin/node22"))
        .arg(repo_path(CLI))
        .arg(format!("{}/mcp", app.base()))
        .args(["--transport", "http", "--method", "tools/call"])
        .args(["--tool-name", "teamgate_info"])
        .args([
            "--callback-url",
            &format!("http://127.0.0.1:{port}/oauth/callback"),
        ])
        .env("HOME", home.path())
        .env("MCP_AUTO_OPEN_ENABLED", "true")
        .env("BROWSER", "true")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the Inspector's CLI runs (scripts/install-test-deps.sh)");
    let mut stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut errors = String::new();
    let mut landed = None;
    let run = async {
        let mut out = String::new();
        let read_out = async {
            stdout.read_to_string(&mut out).await.unwrap();
        };
        let follow = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                errors.push_str(&line);
                errors.push('\n');
                if let Some(at) = line.find("http")
                    && line.contains("navigate to")
                    && landed.is_none()
                {
                    let url = line[at..].trim();
                    landed = Some(
                        browser::authorize(
                            &app.base(),
                            url,
                            "ann",
                            "MCP Inspector",
                            "inspector",
                            "//body[contains(., 'OAuth complete')]",
                        )
                        .await,
                    );
                }
            }
        };
        tokio::join!(read_out, follow);
        out
    };
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the Inspector's CLI finishes within 120 s");
    let status = child.wait().await.unwrap();
    assert!(status.success(), "{out}\n{errors}");
    let landed = landed.unwrap_or_else(|| panic!("an authorization URL: {errors}"));
    assert!(
        landed.contains(&format!("127.0.0.1:{port}/oauth/callback")),
        "{landed}"
    );
    let result: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_ne!(result["isError"], true, "{result}");
    assert!(result["content"].is_array(), "{result}");
}
