//! Personal tokens from the CLI, and their revocation on every replica.

use super::*;

fn cli(db_url: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_teamgate"))
        .args(args)
        .env("TEAMGATE__STORE__URL", db_url)
        .current_dir(crate::helpers::repo_path(""))
        .output()
        .unwrap()
}

/// Polls until `request` answers `status` (revocations propagate within ~250 ms).
async fn eventually(status: u16, request: impl Fn() -> reqwest::RequestBuilder) -> u16 {
    let mut last = 0;
    for _ in 0..40 {
        last = request().send().await.unwrap().status().as_u16();
        if last == status {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    last
}

#[tokio::test]
async fn tokens_are_created_listed_and_revoked_from_the_command_line() {
    let db = crate::databases::TestDb::sqlite();
    let url = db.url.clone();
    let app = spawn_app_with(move |c| {
        c.auth.mode = AuthMode::Required;
        c.store.url = teamgate::config::DatabaseUrl::new(url);
    })
    .await;
    let created = cli(
        &db.url,
        &[
            "token",
            "create",
            "--user",
            "erin",
            "--name",
            "laptop",
            "--scope",
            "tools:*",
            "--expires-in",
            "30d",
        ],
    );
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let stdout = String::from_utf8(created.stdout).unwrap();
    let token = stdout.lines().last().unwrap().to_owned();
    assert!(
        token.starts_with("tg_"),
        "the token is alone on the last line: {stdout}"
    );

    let listed = cli(&db.url, &["token", "list", "--user", "erin", "--json"]);
    let listed_text = String::from_utf8(listed.stdout).unwrap();
    let rows: Value = serde_json::from_str(&listed_text).unwrap();
    assert_eq!(rows[0]["label"], "laptop");
    assert_eq!(rows[0]["scopes"], json!(["tools:*"]));
    assert!(rows[0]["expiresMs"].is_i64());
    assert!(
        !listed_text.contains(token.rsplit('_').next().unwrap()),
        "the secret is never listed"
    );

    let call = || {
        app.client
            .post(&app.url)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .header("accept", crate::helpers::ACCEPT_BOTH)
            .body(initialize_body().to_string())
    };
    assert_eq!(call().send().await.unwrap().status(), 200);
    let id = rows[0]["id"].as_str().unwrap();
    assert!(cli(&db.url, &["token", "revoke", id]).status.success());
    assert_eq!(
        eventually(401, call).await,
        401,
        "revocation from the CLI reaches the running server"
    );

    let audit = cli(
        &db.url,
        &["audit", "tail", "--user", "erin", "--json", "--since", "1h"],
    );
    assert!(audit.status.success());
    let text = String::from_utf8(audit.stdout).unwrap();
    assert!(!text.contains(&token), "no secret in the audit trail");
}

#[tokio::test]
async fn a_revocation_reaches_every_replica() {
    let Some(db) = crate::databases::TestDb::postgres().await else {
        return;
    };
    let start = |url: String| {
        spawn_app_with(move |c| {
            c.auth.mode = AuthMode::Required;
            c.store.url = teamgate::config::DatabaseUrl::new(url);
            c.mcp.request_state_keys = vec![teamgate::config::Secret::new(format!(
                "replica-revocation-{}",
                "k".repeat(24)
            ))];
        })
    };
    let (a, b) = (start(db.url.clone()).await, start(db.url.clone()).await);
    let tokens = PersonalTokens::new(a.store.clone(), Duration::from_secs(30));
    let created = tokens
        .create("frank", "", vec!["*".into()], None)
        .await
        .unwrap();
    let call = |app: &TestApp| {
        let request = app
            .client
            .post(&app.url)
            .header("authorization", format!("Bearer {}", created.token))
            .header("content-type", "application/json")
            .header("accept", crate::helpers::ACCEPT_BOTH)
            .body(initialize_body().to_string());
        move || request.try_clone().unwrap()
    };
    assert_eq!(
        call(&b)().send().await.unwrap().status(),
        200,
        "B has it cached now"
    );
    assert!(tokens.revoke(&created.row.id).await.unwrap());
    assert_eq!(
        eventually(401, call(&b)).await,
        401,
        "revoked on A, refused on B"
    );
    a.stop().await;
    b.stop().await;
    db.cleanup().await;
}
