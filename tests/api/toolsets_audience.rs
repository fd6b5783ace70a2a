//! Each endpoint is its own resource for an external issuer's access
//! tokens (issue 60): a token whose audience is `/mcp/oncall` works there
//! and is refused at `/mcp/dev` and `/mcp`; the groups that admit to a
//! toolset come from the token's groups claim.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use teamgate::config::{AuthMode, IssuerConfig};

use crate::{helpers::spawn_app_with, idp::Idp, toolsets::call};

#[tokio::test]
async fn an_access_token_is_for_the_endpoint_its_audience_names() {
    let idp = Idp::start().await;
    let issuer = IssuerConfig {
        issuer: idp.issuer.clone(),
        jwks_url: String::new(),
        audience: String::new(),
        algorithms: vec!["ES256".into()],
        user_claim: "preferred_username".into(),
        user_prefix: None,
    };
    let app = spawn_app_with(move |c| {
        c.auth.mode = AuthMode::Required;
        c.auth.oauth.issuers = vec![issuer];
        c.auth.oauth.jwks_refresh_min_interval = Duration::from_secs(60);
        c.toolsets = vec![
            serde_json::from_value(
                json!({"name": "oncall", "include": ["test_simple_text"], "groups": ["oncall"]}),
            )
            .unwrap(),
            serde_json::from_value(json!({"name": "dev", "include": ["test_*"]})).unwrap(),
        ];
    })
    .await;
    let token = |audience: &str, groups: &[&str]| {
        let mut claims = idp.claims(&format!("{}{audience}", app.base()), "olga", "tools:*");
        claims["groups"] = json!(groups);
        idp.sign(&claims)
    };
    let status = |reply: (StatusCode, serde_json::Value)| reply.0;

    let oncall = token("/mcp/oncall", &["oncall"]);
    assert_eq!(
        status(call(&app, "/mcp/oncall", &oncall, 1, "tools/list", json!({})).await),
        StatusCode::OK
    );
    for other in ["/mcp/dev", "/mcp"] {
        let (code, reply) = call(&app, other, &oncall, 2, "tools/list", json!({})).await;
        assert_eq!(code, StatusCode::UNAUTHORIZED, "{other}: {reply}");
    }
    // A token for /mcp is not one for a toolset either.
    let main = token("/mcp", &["oncall"]);
    assert_eq!(
        status(call(&app, "/mcp", &main, 3, "tools/list", json!({})).await),
        StatusCode::OK
    );
    let (code, _) = call(&app, "/mcp/oncall", &main, 4, "tools/list", json!({})).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    // The right audience without the group: refused by the toolset's groups.
    let outsider = token("/mcp/oncall", &["dev"]);
    let (code, reply) = call(&app, "/mcp/oncall", &outsider, 5, "tools/list", json!({})).await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{reply}");
    assert_eq!(reply["id"], 5, "{reply}");
}
