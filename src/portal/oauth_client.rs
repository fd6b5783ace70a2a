//! teamgate as an OAuth client of an upstream's authorization server
//! (issue 29): the server found through the upstream's RFC 9728 protected
//! resource metadata and its RFC 8414 (or OpenID) metadata, teamgate's
//! client registered there once (RFC 7591) unless configured, the code
//! exchanged with PKCE, tokens revoked (RFC 7009) when a member disconnects.
//! Every URL the upstream or its metadata names is reached only by the rule
//! of `registry::oauth_reach` (issue 44), at the addresses it checked.

use std::time::Duration;

use serde_json::{Value, json};

use super::PortalError;
use oauth2::basic::BasicTokenResponse;

use crate::{
    body::read_response,
    config::UpstreamConfig,
    registry::{
        oauth::TokenSet,
        oauth_grant::{self, Grant},
        oauth_reach::Reach,
    },
};

/// How long the authorization server may take to answer.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The longest metadata or token answer read (another server's answer must
/// not fill our memory before the timeout).
const MAX_BYTES: usize = 256 * 1024;

/// What the flow needs of the upstream's authorization server.
#[derive(Debug, Clone)]
pub(super) struct Server {
    /// The RFC 8707 resource asked for: the upstream's configured URL.
    pub resource: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub revocation_endpoint: Option<String>,
    pub scopes: Vec<String>,
}

fn client() -> reqwest::ClientBuilder {
    crate::outbound::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
}

/// A client for `url` if the rule lets teamgate reach it, sending to the
/// addresses checked; else the refusal, naming the URL and the rule.
async fn to(reach: &Reach, url: &str) -> Result<(reqwest::Client, url::Url), PortalError> {
    let reached = reach
        .check(url)
        .await
        .map_err(|e| PortalError::Upstream(e.to_string()))?;
    let mut builder = client();
    if let Some(domain) = &reached.domain {
        builder = builder.resolve_to_addrs(domain, &reached.addrs);
    }
    Ok((builder.build().map_err(provider)?, reached.url))
}

fn provider(why: impl std::fmt::Display) -> PortalError {
    PortalError::Provider(why.to_string())
}

/// A JSON document; `None` when the URL does not answer one with 200.
async fn json_at(reach: &Reach, url: &str) -> Result<Option<Value>, PortalError> {
    let (http, url) = to(reach, url).await?;
    let response = http.get(url).header("accept", "application/json").send();
    let Ok(response) = response.await else {
        return Ok(None);
    };
    if !response.status().is_success() {
        return Ok(None);
    }
    let bytes = read_response(response, MAX_BYTES).await.unwrap_or_default();
    Ok(serde_json::from_slice(&bytes).ok())
}

/// `<origin>/.well-known/<name><path>`, then `<origin>/.well-known/<name>`.
fn well_known(url: &url::Url, name: &str) -> Vec<String> {
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let mut out = vec![format!("{origin}/.well-known/{name}{path}")];
    if !path.is_empty() {
        out.push(format!("{origin}/.well-known/{name}"));
    }
    out
}

/// The `resource_metadata` of a 401's `WWW-Authenticate`, if the upstream sends one.
async fn challenge_metadata(url: &str) -> Option<String> {
    let response = (client().build().ok()?)
        .post(url)
        .header("content-type", "application/json")
        .body("{}");
    let response = response.send().await.ok()?;
    let challenge = response.headers().get("www-authenticate")?.to_str().ok()?;
    let rest = challenge.split("resource_metadata=\"").nth(1)?;
    Some(rest.split('"').next()?.to_owned())
}

/// The upstream's authorization server, as its metadata describe it.
pub(super) async fn discover(
    reach: &Reach,
    upstream: &UpstreamConfig,
) -> Result<Server, PortalError> {
    let url = url::Url::parse(&upstream.url).map_err(provider)?;
    let mut resource = None;
    let mut candidates = well_known(&url, "oauth-protected-resource");
    if let Some(from_challenge) = challenge_metadata(&upstream.url).await {
        candidates.insert(0, from_challenge);
    }
    for candidate in candidates {
        if let Some(found) = json_at(reach, &candidate).await? {
            resource = Some(found);
            break;
        }
    }
    let resource = resource.ok_or_else(|| {
        provider(format!(
            "{} publishes no protected resource metadata",
            upstream.name
        ))
    })?;
    // RFC 9728 §3.3: metadata for another resource is not this upstream's,
    // and a token for it would let the upstream act at that resource.
    if let Some(claimed) = resource["resource"].as_str()
        && !same_resource(claimed, &upstream.url)
    {
        return Err(PortalError::Upstream(format!(
            "{}'s protected resource metadata is for the resource {claimed}, not for its URL {} \
             (RFC 9728 §3.3): refused, no token is asked for another resource",
            upstream.name, upstream.url
        )));
    }
    let issuer = resource["authorization_servers"][0]
        .as_str()
        .ok_or_else(|| {
            provider(format!(
                "{}'s metadata names no authorization server",
                upstream.name
            ))
        })?;
    let issuer_url = url::Url::parse(issuer).map_err(provider)?;
    let mut metadata = None;
    for name in ["oauth-authorization-server", "openid-configuration"] {
        for candidate in well_known(&issuer_url, name) {
            if let Some(found) = json_at(reach, &candidate).await? {
                metadata = Some(found);
                break;
            }
        }
        if metadata.is_some() {
            break;
        }
    }
    let metadata = metadata.ok_or_else(|| provider(format!("{issuer} publishes no metadata")))?;
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let scopes = if upstream.oauth.scopes.is_empty() {
        (resource["scopes_supported"]
            .as_array()
            .into_iter()
            .flatten())
        .filter_map(text)
        .collect()
    } else {
        upstream.oauth.scopes.clone()
    };
    // Refused now, with the member there to read why, not at first use.
    for endpoint in [
        "token_endpoint",
        "registration_endpoint",
        "revocation_endpoint",
    ] {
        if let Some(url) = metadata[endpoint].as_str() {
            reach
                .check(url)
                .await
                .map_err(|e| PortalError::Upstream(e.to_string()))?;
        }
    }
    let authorization_endpoint = text(&metadata["authorization_endpoint"])
        .ok_or_else(|| provider("no authorization_endpoint"))?;
    (reach.browser(&authorization_endpoint).await)
        .map_err(|e| PortalError::Upstream(e.to_string()))?;
    Ok(Server {
        resource: upstream.url.clone(),
        authorization_endpoint,
        token_endpoint: text(&metadata["token_endpoint"])
            .ok_or_else(|| provider("no token_endpoint"))?,
        registration_endpoint: text(&metadata["registration_endpoint"]),
        revocation_endpoint: text(&metadata["revocation_endpoint"]),
        scopes,
    })
}

/// Whether `a` and `b` name the same resource: equal once scheme and host
/// case, a default port and an empty path (`/`) are normalized (RFC 3986
/// §6.2.2-6.2.3); `/mcp` and `/mcp/` are two resources.
fn same_resource(a: &str, b: &str) -> bool {
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Registers teamgate as a public client redirecting to `redirect`; its client ID.
pub(super) async fn register(
    reach: &Reach,
    server: &Server,
    redirect: &str,
) -> Result<String, PortalError> {
    let endpoint = server.registration_endpoint.as_deref().ok_or_else(|| {
        provider("the authorization server offers no dynamic registration; set oauth.client_id")
    })?;
    let body = json!({
        "client_name": "teamgate",
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let (http, endpoint) = to(reach, endpoint).await?;
    let response = http
        .post(endpoint)
        .json(&body)
        .send()
        .await
        .map_err(provider)?;
    let status = response.status();
    let answer: Value = response.json().await.map_err(provider)?;
    match answer["client_id"].as_str() {
        Some(id) if status.is_success() => Ok(id.to_owned()),
        _ => Err(provider(format!(
            "registration refused ({status}): {}",
            answer["error"]
        ))),
    }
}

/// The token endpoint's answer to `grant` for the client and resource
/// `ids`, sent to the addresses checked.
pub(super) async fn token_request(
    reach: &Reach,
    endpoint: &str,
    ids: (&str, &str),
    grant: Grant<'_>,
) -> Result<BasicTokenResponse, PortalError> {
    let (http, endpoint) = to(reach, endpoint).await?;
    (oauth_grant::request(http, endpoint, ids, grant).await).map_err(provider)
}

/// Best effort: the authorization server told to forget the member's tokens.
/// Posted here, not by `oauth2`: its `revoke_token` refuses any http
/// endpoint (RFC 7009 §2), and `oauth_reach` lets an upstream on loopback
/// use its own http authorization server.
pub(super) async fn revoke(reach: &Reach, set: &TokenSet) {
    let Some(endpoint) = &set.revocation_endpoint else {
        return;
    };
    let (http, endpoint) = match to(reach, endpoint).await {
        Ok(reached) => reached,
        Err(error) => {
            tracing::warn!(%error, "portal: a token revocation was not sent");
            return;
        }
    };
    let mut tokens = vec![("refresh_token", set.refresh_token.as_deref())];
    tokens.push(("access_token", Some(set.access_token.as_str())));
    for (hint, token) in tokens {
        let Some(token) = token else { continue };
        let form = [
            ("token", token),
            ("token_type_hint", hint),
            ("client_id", &set.client_id),
        ];
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let request = http
            .post(endpoint.clone())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        if let Err(error) = request.send().await {
            tracing::info!(error = %error.without_url(), "portal: a token revocation failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::same_resource;

    #[test]
    fn a_resource_is_the_same_only_once_normalized() {
        let url = "https://mcp.example.com/mcp";
        for same in [
            url,
            "HTTPS://MCP.Example.COM/mcp",
            "https://mcp.example.com:443/mcp",
        ] {
            assert!(same_resource(same, url), "{same}");
        }
        assert!(same_resource("http://h", "http://h/"));
        assert!(same_resource("http://h:80/", "HTTP://H"));
        for other in [
            "https://mcp.example.com/mcp/",
            "https://mcp.example.com/MCP",
            "https://mcp.example.com:8443/mcp",
            "http://mcp.example.com/mcp",
            "https://api.example.com/mcp",
            "https://mcp.example.com/mcp?x=1",
            "https://mcp.example.com/mcp#f",
            "not a url",
        ] {
            assert!(!same_resource(other, url), "{other}");
        }
    }
}
