//! Edge defects found by attacking the server from outside (issue 30, items
//! 12, 13, 16 and 17; issue 32, item 1): forwarded headers, Origin parsing,
//! health probes behind a Host allowlist, metrics labels.

use std::time::Duration;

use serde_json::{Value, json};
use teamgate::config::{AuthMode, Config, ConfigSources, ForwardedHeader};

use crate::helpers::{TestApp, repo_path, spawn_app_with};

fn init() -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})
}

/// POSTs `initialize` with the given headers; the status.
async fn status(app: &TestApp, headers: &[(&str, String)]) -> u16 {
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    app.post(&init(), &headers).await.status().as_u16()
}

/// Behind a trusted proxy on loopback, with authentication and a small
/// unauthenticated quota.
fn proxied(header: ForwardedHeader) -> impl FnOnce(&mut Config) {
    move |c| {
        c.auth.mode = AuthMode::Required;
        c.server.trusted_proxies = vec!["127.0.0.1/32".into()];
        c.server.forwarded_header = header;
        c.rate_limit.enabled = true;
        c.rate_limit.unauthenticated_per_minute = 60;
        c.rate_limit.unauthenticated_burst = 5;
    }
}

/// Bad-token guesses, each claiming another client address through the
/// header the proxy does not set: the quota of the one real address runs out.
async fn guesses_hit_the_limit(app: &TestApp, spoofed: &str, address: impl Fn(u32) -> String) {
    let mut statuses = Vec::new();
    for n in 0..12 {
        let headers = [
            ("authorization", format!("Bearer tg_guess{n}")),
            (spoofed, address(n)),
        ];
        statuses.push(status(app, &headers).await);
    }
    assert_eq!(statuses[0], 401, "{statuses:?}");
    assert!(
        statuses.contains(&429),
        "rotating {spoofed} dodged the unauthenticated limit: {statuses:?}"
    );
}

#[tokio::test]
async fn only_the_header_the_proxy_sets_is_believed() {
    let app = spawn_app_with(proxied(ForwardedHeader::XForwardedFor)).await;
    guesses_hit_the_limit(&app, "forwarded", |n| format!("for=198.51.100.{n}")).await;
    let port = app.addr.port();
    // A client-supplied Forwarded host does not pass the Host check.
    let spoofed_host = [
        ("host", "evil.com".to_owned()),
        (
            "forwarded",
            format!("for=198.51.100.1;host=127.0.0.1:{port}"),
        ),
    ];
    let other = spawn_app_with(proxied(ForwardedHeader::XForwardedFor)).await;
    assert_eq!(status(&other, &spoofed_host).await, 403);
    // The header the proxy does set is believed.
    let forwarded_host = [
        ("host", "evil.com".to_owned()),
        ("x-forwarded-host", format!("127.0.0.1:{port}")),
    ];
    assert_eq!(status(&other, &forwarded_host).await, 401);

    // The same with a proxy that sets RFC 7239 `Forwarded`.
    let app = spawn_app_with(proxied(ForwardedHeader::Forwarded)).await;
    guesses_hit_the_limit(&app, "x-forwarded-for", |n| format!("198.51.100.{n}")).await;
    let other = spawn_app_with(proxied(ForwardedHeader::Forwarded)).await;
    assert_eq!(status(&other, &forwarded_host).await, 403);
    assert_eq!(status(&other, &spoofed_host).await, 401);
}

#[tokio::test]
async fn malformed_origins_are_refused() {
    let app = spawn_app_with(|_| {}).await;
    let port = app.addr.port();
    let with = |origin: String| [("origin", origin)];
    // A valid loopback origin reaches the endpoint.
    let own = format!("http://127.0.0.1:{port}");
    assert_eq!(status(&app, &with(own)).await, 200);
    for origin in [
        format!("http://127.0.0.1:{port}.evil.example"),
        format!("http://127.0.0.1:{port}/"),
        format!("http://127.0.0.1:{port}/path"),
        format!("http://evil.example@127.0.0.1:{port}"),
        "http://127.0.0.1:99999".to_owned(),
        "http://127.0.0.1:".to_owned(),
        "http://[::1".to_owned(),
        "127.0.0.1".to_owned(),
        "null".to_owned(),
    ] {
        assert_eq!(status(&app, &with(origin.clone())).await, 403, "{origin}");
    }
    // The same strictness for Host.
    let host = [("host", format!("127.0.0.1:{port}.evil.example"))];
    assert_eq!(status(&app, &host).await, 403);
}

/// GETs `path` with the given `Host`; the status.
async fn get_with_host(app: &TestApp, path: &str, host: &str) -> u16 {
    let response = app
        .client
        .get(format!("{}{path}", app.base()))
        .header("host", host)
        .send()
        .await
        .unwrap();
    response.status().as_u16()
}

#[tokio::test]
async fn probes_answer_the_kubelet_behind_a_host_allowlist() {
    // deploy/k8s/base/teamgate.toml's server section, as the pods run it, on loopback.
    let k8s = ConfigSources::files_only(vec![repo_path("deploy/k8s/base/teamgate.toml")])
        .load()
        .expect("the Kubernetes configuration loads");
    assert!(
        !k8s.server.allowed_hosts.is_empty(),
        "it sets allowed_hosts"
    );
    let app = spawn_app_with(|c| {
        c.server = k8s.server.clone();
        c.server.listen = "127.0.0.1:0".parse().unwrap();
    })
    .await;
    // The paths the Deployment's probes request.
    let deployment = std::fs::read_to_string(repo_path("deploy/k8s/base/deployment.yaml")).unwrap();
    let probes: Vec<&str> = deployment
        .split("httpGet: {path: ")
        .skip(1)
        .filter_map(|rest| rest.split(',').next())
        .collect();
    assert_eq!(probes, ["/readyz", "/healthz"], "{deployment}");
    // The kubelet sends the pod's address and port as Host.
    let kubelet = "10.1.2.3:8080";
    for path in probes {
        assert_eq!(get_with_host(&app, path, kubelet).await, 200, "{path}");
    }
    // Everything else still checks Host.
    assert_eq!(get_with_host(&app, "/mcp", kubelet).await, 403);
    let spoofed = [("host", kubelet.to_owned())];
    assert_eq!(status(&app, &spoofed).await, 403);
    let public = [("host", "mcp.example.com".to_owned())];
    assert_eq!(status(&app, &public).await, 200);
}

#[tokio::test]
async fn outsiders_cannot_fill_the_metrics_label_space() {
    let app = spawn_app_with(|c| {
        c.auth.mode = AuthMode::Required;
        // From many addresses, as far as the quota can tell.
        c.rate_limit.enabled = false;
    })
    .await;
    // More made-up method names than any label keeps, without credentials.
    for n in 0..205 {
        let headers = [("mcp-method", format!("junk-{n}"))];
        assert_eq!(status(&app, &headers).await, 401);
    }
    // Then a real client initializes.
    let tokens = teamgate::auth::PersonalTokens::new(app.store.clone(), Duration::from_secs(30));
    let token = tokens.create("alice", "", vec!["*".into()], None).await;
    let bearer = format!("Bearer {}", token.unwrap().token);
    let mut real = init();
    real["params"]["clientInfo"]["name"] = json!("real-client");
    let response = app.post(&real, &[("authorization", &bearer)]).await;
    assert_eq!(response.status(), 200);
    let scrape = |host: &'static str| {
        app.client
            .get(format!("{}/metrics", app.base()))
            .header("host", host)
            .send()
    };
    let text = scrape("127.0.0.1").await.unwrap().text().await.unwrap();
    assert!(!text.contains("junk-"), "{text}");
    assert!(
        text.contains("method=\"other\"") && text.contains("outcome=\"http_401\""),
        "{text}"
    );
    let clients = text
        .lines()
        .find(|l| l.starts_with("teamgate_mcp_clients_total{"))
        .unwrap_or_default();
    assert!(
        clients.contains("client=\"real-client\"")
            && clients.contains("protocol_version=\"2025-11-25\""),
        "{text}"
    );
    // /metrics on the main listener checks Host like every route.
    assert_eq!(scrape("evil.example.com").await.unwrap().status(), 403);
}
