//! Probes and graceful shutdown.

use std::time::Duration;

use serde_json::Value;

use crate::helpers::spawn_app_with;

#[tokio::test]
async fn probes_answer_without_authentication() {
    let app = crate::helpers::spawn_app().await;
    for (path, status) in [("/healthz", "ok"), ("/readyz", "ready")] {
        let response = app
            .client
            .get(format!("{}{path}", app.base()))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["status"], status);
    }
}

#[tokio::test]
async fn shutdown_ends_open_streams_after_the_grace_period() {
    let mut app = spawn_app_with(|c| c.server.shutdown_grace = Duration::from_millis(300)).await;
    let session = app.initialize("2025-11-25").await;
    // A standalone GET stream never ends by itself.
    let stream = app.open_stream(&session).await;
    assert_eq!(stream.status(), 200);
    app.shutdown();
    let served = tokio::time::timeout(Duration::from_secs(10), &mut app.served)
        .await
        .expect("the server stops within grace plus slack");
    served.unwrap().expect("clean exit");
    let rest = tokio::time::timeout(Duration::from_secs(5), stream.text()).await;
    assert!(rest.is_ok(), "the open stream was ended");
}

#[tokio::test]
async fn sigterm_drains_readiness_first_then_ends_streams_and_exits() {
    use tokio::io::AsyncBufReadExt;
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_teamgate"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(crate::helpers::repo_path("config/conformance.toml"))
        .env(
            "TEAMGATE__STORE__URL",
            format!("sqlite://{}/t.db", dir.path().display()),
        )
        .env("TEAMGATE__AUTH__MODE", "none")
        .env("TEAMGATE__LOG__FORMAT", "json")
        .env("TEAMGATE__SERVER__DRAIN_DELAY", "1s")
        .env("TEAMGATE__SERVER__SHUTDOWN_GRACE", "1s")
        .current_dir(crate::helpers::repo_path(""))
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(start) = line.find("\"url\":\"") {
                let rest = &line[start + 7..];
                return rest[..rest.find('"').unwrap()].to_owned();
            }
        }
        panic!("no start-up line")
    })
    .await
    .expect("starts");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let base = url.trim_end_matches("/mcp").to_owned();
    let client = teamgate::outbound::client();
    let init = client
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", crate::helpers::ACCEPT_BOTH)
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .send()
        .await
        .unwrap();
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let stream = client
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);

    let pid = child.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let mut ready = 200;
    for _ in 0..20 {
        ready = client
            .get(format!("{base}/readyz"))
            .send()
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0);
        if ready == 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        ready, 503,
        "readiness turns false as soon as draining starts, while still accepting"
    );
    let ended = tokio::time::timeout(Duration::from_secs(10), stream.text()).await;
    assert!(
        ended.is_ok(),
        "the open stream is ended after the grace period"
    );
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exits")
        .unwrap();
    assert!(status.success(), "a clean exit: {status}");
}
