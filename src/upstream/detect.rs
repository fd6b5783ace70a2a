//! Whether an upstream that refused teamgate's connection wants each
//! member's OAuth (issue 29, `auth = "auto"`): it answers an `initialize`
//! with 401 and a `WWW-Authenticate: Bearer` challenge, and its RFC 9728
//! protected resource metadata (the challenge's `resource_metadata`, else
//! the well-known URL under the upstream's origin) names an authorization
//! server. Asked only after a connection failed, never with a member's token.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{body::read_response, registry::oauth_reach::Reach};

/// How long the upstream may take to answer the probe or its metadata.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The longest metadata document read.
const MAX_BYTES: usize = 64 * 1024;

/// An upstream's OAuth, as its metadata describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Wanted {
    /// Its `scopes_supported`, the default scopes members are asked for.
    pub(super) scopes: Vec<String>,
}

/// What the upstream at `url` answers an unauthenticated `initialize`
/// (with the configured `headers`); `None` unless it asks for OAuth.
pub(super) async fn oauth_wanted(
    url: &str,
    headers: &std::collections::HashMap<http::HeaderName, http::HeaderValue>,
    reach: &Reach,
) -> Option<Wanted> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .build()
        .ok()?;
    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "teamgate", "version": env!("CARGO_PKG_VERSION")}},
    });
    let mut request = client
        .post(url)
        .header(http::header::ACCEPT, "application/json, text/event-stream")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(initialize.to_string());
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let response = request.send().await.ok()?;
    if response.status() != http::StatusCode::UNAUTHORIZED {
        return None;
    }
    let challenge = (response
        .headers()
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter())
    .filter_map(|v| v.to_str().ok())
    .find(|v| v.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("bearer")))?
    .to_owned();
    let named = metadata_param(&challenge);
    let url = url::Url::parse(url).ok()?;
    let mut candidates: Vec<String> = named.into_iter().collect();
    let path = url.path().trim_end_matches('/');
    let origin = url.origin().ascii_serialization();
    candidates.push(format!(
        "{origin}/.well-known/oauth-protected-resource{path}"
    ));
    candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
    for candidate in candidates {
        // The named URL is the upstream's say-so: reached only by the rule.
        let reached = match reach.check(&candidate).await {
            Ok(reached) => reached,
            Err(why) => {
                tracing::warn!(upstream = %url, "upstream OAuth discovery: {why}");
                continue;
            }
        };
        let Some(client) = super::oauth::client_to(&reached, TIMEOUT) else {
            continue;
        };
        let Some(metadata) = json_at(&client, reached.url.as_str()).await else {
            continue;
        };
        let servers = metadata["authorization_servers"].as_array();
        if !servers.is_some_and(|s| s.iter().any(Value::is_string)) {
            continue;
        }
        let scopes = (metadata["scopes_supported"]
            .as_array()
            .into_iter()
            .flatten())
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect();
        return Some(Wanted { scopes });
    }
    None
}

/// The `resource_metadata` parameter of a Bearer challenge (RFC 9728 §5.1),
/// if it names an http(s) URL.
fn metadata_param(challenge: &str) -> Option<String> {
    let at = challenge.find("resource_metadata=")?;
    let rest = challenge[at + "resource_metadata=".len()..].trim_start();
    let value = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next()?,
        None => rest.split([',', ' ']).next()?,
    };
    let parsed = url::Url::parse(value).ok()?;
    matches!(parsed.scheme(), "http" | "https").then(|| value.to_owned())
}

/// A JSON document at `url`; `None` unless it answers one with 200.
async fn json_at(client: &reqwest::Client, url: &str) -> Option<Value> {
    let response = client
        .get(url)
        .header(http::header::ACCEPT, "application/json")
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    // Read no further than `MAX_BYTES`: the document's address came from
    // the upstream's own 401.
    let bytes = read_response(response, MAX_BYTES).await.ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::{MAX_BYTES, json_at, metadata_param};

    /// A document one byte over the limit is not taken, one at the limit is,
    /// from a real server on loopback.
    #[tokio::test]
    async fn a_metadata_document_is_read_no_further_than_the_limit() {
        let pad = |len: usize| format!("{{\"p\":\"{}\"}}", "x".repeat(len - 8));
        let (at, over) = (pad(MAX_BYTES), pad(MAX_BYTES + 1));
        let app = axum::Router::new()
            .route("/at", axum::routing::get(move || async move { at }))
            .route("/over", axum::routing::get(move || async move { over }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        // As `Upstreams::start` does before any upstream client is built.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::new();
        assert!(json_at(&client, &format!("{base}/at")).await.is_some());
        assert!(json_at(&client, &format!("{base}/over")).await.is_none());
    }

    #[test]
    fn the_metadata_url_is_read_from_the_challenge() {
        let url = "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp";
        let quoted = format!(r#"Bearer error="invalid_token", resource_metadata="{url}""#);
        assert_eq!(metadata_param(&quoted).as_deref(), Some(url));
        let bare = format!("Bearer resource_metadata={url}, scope=\"mcp\"");
        assert_eq!(metadata_param(&bare).as_deref(), Some(url));
        assert_eq!(metadata_param("Bearer realm=\"x\""), None);
        assert_eq!(
            metadata_param("Bearer resource_metadata=\"file:///etc\""),
            None
        );
        assert_eq!(metadata_param("Bearer resource_metadata=\""), None);
    }
}
