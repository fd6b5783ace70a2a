//! `scripts/dev-idp` (issue 63 item 7): the test OpenID provider as a
//! provider a person runs to try the portal locally: one command, a fixed
//! port, still up after its standard input closes, with the `[portal]`
//! settings that sign in against it printed.

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use crate::helpers::repo_path;

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn dev_idp_runs_on_a_fixed_port_and_stays_up() {
    if !repo_path(".cache/oidc-provider/node_modules").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "install-test-deps installs oidc-provider"
        );
        eprintln!("SKIP: oidc-provider is not installed (scripts/install-test-deps.sh)");
        return;
    }
    // A free port, released for the provider to take.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = tempfile::NamedTempFile::new().unwrap();
    let child = Command::new(repo_path("scripts/dev-idp"))
        .args([
            "--port",
            &port.to_string(),
            "--teamgate",
            "http://127.0.0.1:9999",
        ])
        // Closed at once: a person's terminal going away must not end it.
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log.reopen().unwrap())
        .spawn()
        .expect("scripts/dev-idp starts");
    let _child = Killed(child);
    let discovery = format!("http://127.0.0.1:{port}/.well-known/openid-configuration");
    let deadline = Instant::now() + Duration::from_secs(60);
    let document: serde_json::Value = loop {
        if let Ok(response) = teamgate::outbound::client().get(&discovery).send().await
            && response.status().is_success()
        {
            break response.json().await.unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "no provider on {port}: {}",
            std::fs::read_to_string(log.path()).unwrap()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(document["issuer"], format!("http://127.0.0.1:{port}"));
    // Still there a while after its standard input closed.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        teamgate::outbound::client()
            .get(&discovery)
            .send()
            .await
            .unwrap()
            .status()
            .is_success()
    );
    let printed = std::fs::read_to_string(log.path()).unwrap();
    assert!(
        printed.contains(&format!("issuer = \"http://127.0.0.1:{port}\"")),
        "{printed}"
    );
    assert!(
        printed.contains("http://127.0.0.1:9999/portal"),
        "{printed}"
    );
}

/// Issue 63's "done when", README's "Try it locally" followed as written:
/// `scripts/dev-idp --teamgate URL`, its printed `[portal]` settings in a
/// configuration file with `server.public_url`, `teamgate serve --config
/// FILE`, then a real browser opens `/portal` and signs in as `cat`.
#[tokio::test]
async fn the_readmes_local_portal_walk_signs_in() {
    if !repo_path(".cache/oidc-provider/node_modules").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI installs oidc-provider"
        );
        eprintln!("SKIP: oidc-provider is not installed (scripts/install-test-deps.sh)");
        return;
    }
    let started = Instant::now();
    let free = || {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let (idp_port, port) = (free(), free());
    let base = format!("http://127.0.0.1:{port}");
    let log = tempfile::NamedTempFile::new().unwrap();
    let idp = Command::new(repo_path("scripts/dev-idp"))
        .args(["--port", &idp_port.to_string(), "--teamgate", &base])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log.reopen().unwrap())
        .spawn()
        .expect("scripts/dev-idp starts");
    let _idp = Killed(idp);
    let discovery = format!("http://127.0.0.1:{idp_port}/.well-known/openid-configuration");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(teamgate::outbound::client().get(&discovery).send().await)
        .is_ok_and(|r| r.status().is_success())
    {
        assert!(Instant::now() < deadline, "no provider on {idp_port}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The printed settings, from `[portal]` on, as a person copies them.
    let printed = std::fs::read_to_string(log.path()).unwrap();
    let block: Vec<&str> = (printed.lines())
        .skip_while(|line| *line != "[portal]")
        .take_while(|line| line.starts_with('[') || line.contains(" = "))
        .collect();
    assert!(block.len() > 5, "{printed}");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("teamgate.toml");
    let file = format!(
        "[server]\npublic_url = \"{base}/mcp\"\n{}\n",
        block.join("\n")
    );
    std::fs::write(&config, file).unwrap();
    let serve = Command::new(env!("CARGO_BIN_EXE_teamgate"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--config",
        ])
        .arg(&config)
        .current_dir(repo_path(""))
        .env(
            "TEAMGATE__STORE__URL",
            format!("sqlite://{}/t.db", dir.path().display()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("teamgate serve starts");
    let _serve = Killed(serve);
    let ready = format!("{base}/readyz");
    while !(teamgate::outbound::client().get(&ready).send().await)
        .is_ok_and(|r| r.status().is_success())
    {
        assert!(
            Instant::now() < deadline,
            "teamgate did not start on {port}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut browser =
        crate::portal_browser::driver::Chrome::start_with_prefix(&base, "dev-idp-").await;
    browser.sign_in("cat").await;
    browser.shot("cat-signed-in").await;
    browser.close().await;
    let took = started.elapsed();
    eprintln!("README's local portal walk: signed in {took:?} after scripts/dev-idp started");
    assert!(took < Duration::from_secs(15 * 60), "{took:?}");
}
