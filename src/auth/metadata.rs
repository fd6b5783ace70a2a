//! RFC 9728 protected-resource metadata and the `WWW-Authenticate`
//! challenges that point clients to it.

use axum::{Json, extract::State, http::request::Parts, response::IntoResponse};
use serde_json::json;

use super::AuthState;

/// Where RFC 9728 metadata is served, before the resource's path.
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The endpoint's URL: `server.public_url` when set, else the request's own
/// origin (loopback deployments) and the endpoint path; a toolset's
/// endpoint (`<mcp_path>/<name>`, or its metadata) adds `/<name>`: each
/// endpoint is its own resource (issue 60).
pub fn resource_url(public_url: &str, mcp_path: &str, parts: &Parts) -> String {
    let toolset = endpoint_suffix(mcp_path, parts);
    if !public_url.is_empty() {
        return format!("{}{toolset}", public_url.trim_end_matches('/'));
    }
    // The edge layer resolved scheme and host, through trusted proxies only.
    if let Some(client) = parts.extensions.get::<crate::protocol::ClientInfo>() {
        return format!("{}://{}{mcp_path}{toolset}", client.scheme, client.host);
    }
    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    format!("http://{host}{mcp_path}{toolset}")
}

/// The resource of the toolset `name` under the endpoint `base` (issue 60):
/// what a token for it names as its audience.
pub fn toolset_resource(base: &str, name: &str) -> String {
    format!("{}/{name}", base.trim_end_matches('/'))
}

/// `/<name>` when the request is on a toolset's endpoint or asks for its
/// metadata; empty for the main endpoint.
pub fn endpoint_suffix(mcp_path: &str, parts: &Parts) -> String {
    let path = parts.uri.path();
    let path = path.strip_prefix(WELL_KNOWN).unwrap_or(path);
    let name = crate::protocol::toolset_in_path(mcp_path, path).filter(|name| !name.contains('/'));
    name.map(|name| format!("/{name}")).unwrap_or_default()
}

/// Where the metadata for `resource` lives (path-inserted form, RFC 9728 §3.1).
pub(super) fn metadata_url(resource: &str) -> String {
    match resource.split_once("://") {
        Some((scheme, rest)) => {
            let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
            let path = if path.is_empty() {
                String::new()
            } else {
                format!("/{path}")
            };
            format!("{scheme}://{host}/.well-known/oauth-protected-resource{path}")
        }
        None => resource.to_owned(),
    }
}

/// `Bearer resource_metadata="…"` plus the optional error and scope.
pub fn challenge(resource: &str, error: Option<&str>, scope: Option<&str>) -> String {
    let mut value = format!("Bearer resource_metadata=\"{}\"", metadata_url(resource));
    if let Some(error) = error {
        value.push_str(&format!(", error=\"{error}\""));
    }
    if let Some(scope) = scope {
        value.push_str(&format!(", scope=\"{scope}\""));
    }
    value
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`.
pub async fn protected_resource_metadata(
    State(state): State<AuthState>,
    parts: Parts,
) -> impl IntoResponse {
    let auth = &state.authenticator;
    Json(json!({
        "resource": auth.resource(&parts),
        "authorization_servers": auth.authorization_servers(),
        "scopes_supported": state.scopes_supported.as_ref(),
        "bearer_methods_supported": ["header"],
        "resource_name": "teamgate",
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_lives_at_the_path_inserted_url() {
        assert_eq!(
            metadata_url("https://mcp.example.com/mcp"),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            challenge("https://h/mcp", Some("insufficient_scope"), Some("tools:x")),
            "Bearer resource_metadata=\"https://h/.well-known/oauth-protected-resource/mcp\", error=\"insufficient_scope\", scope=\"tools:x\""
        );
    }
}
