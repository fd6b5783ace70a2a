//! The clients the authorization server knows, both ways the MCP
//! specification allows: a Client ID Metadata Document (the `client_id` is
//! an https URL on an allowlisted host whose JSON names the client and its
//! redirect URIs; fetched with a size and time limit, never following a
//! redirect) and RFC 7591 dynamic registration (`POST /register`, which an
//! operator can turn off). All clients are public: PKCE, no secret.

use std::sync::Arc;

use axum::{
    Json,
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};

use super::{AuthServer, OAuthError, cors};
use crate::{
    body::{CappedError, read_response},
    portal::Portal,
    store::{OAuthClientRow, OAuthRepo},
};

const MAX_REDIRECT_URIS: usize = 10;
const MAX_URI_LEN: usize = 2000;
const MAX_NAME_LEN: usize = 200;
/// Registrations `/register` takes in an hour, from everyone together.
const MAX_REGISTRATIONS_PER_HOUR: i64 = 500;
/// How long a registered client counts against that cap without a grant:
/// long enough for a sign-in, short enough that a flood of unused clients
/// locks real ones out for minutes, not the hour.
const UNUSED_CLIENT_COUNTS_MS: i64 = 10 * 60 * 1000;

/// A client as `/authorize` sees it.
#[derive(Debug, Clone)]
pub(super) struct Client {
    pub id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
}

/// Whether `given` is one of `registered`: exact, or for a loopback
/// redirect (RFC 8252 §7.3) the same but for the port.
pub(super) fn redirect_allowed(registered: &[String], given: &str) -> bool {
    let Ok(given_url) = url::Url::parse(given) else {
        return false;
    };
    registered.iter().any(|r| {
        if r == given {
            return true;
        }
        let Ok(mut r) = url::Url::parse(r) else {
            return false;
        };
        let mut g = given_url.clone();
        if r.scheme() != "http" || !is_loopback(&r) || !is_loopback(&g) {
            return false;
        }
        let _ = r.set_port(None);
        let _ = g.set_port(None);
        r == g
    })
}

fn is_loopback(url: &url::Url) -> bool {
    matches!(
        url.host_str(),
        Some("127.0.0.1") | Some("[::1]") | Some("localhost")
    )
}

/// A redirect URI a client may register: https, http on loopback, or a
/// private-use scheme (native apps); never a fragment or a script scheme.
fn redirect_acceptable(uri: &str) -> bool {
    let Ok(url) = url::Url::parse(uri) else {
        return false;
    };
    if uri.len() > MAX_URI_LEN || url.fragment().is_some() {
        return false;
    }
    match url.scheme() {
        "https" => url.host().is_some(),
        "http" => is_loopback(&url),
        "javascript" | "data" | "file" | "vbscript" | "about" | "blob" => false,
        _ => true,
    }
}

fn redirect_list(value: Option<&Value>) -> Result<Vec<String>, &'static str> {
    let uris: Vec<String> = value
        .and_then(Value::as_array)
        .ok_or("redirect_uris must be a list")?
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or("redirect_uris holds a non-string")
        })
        .collect::<Result<_, _>>()?;
    if uris.is_empty() || uris.len() > MAX_REDIRECT_URIS {
        return Err("redirect_uris must hold 1 to 10 URIs");
    }
    if !uris.iter().all(|u| redirect_acceptable(u)) {
        return Err(
            "a redirect URI must be https, http on a loopback address, or a native app's scheme, without a fragment",
        );
    }
    Ok(uris)
}

/// Bidirectional embeddings, overrides and isolates (U+202A-U+202E,
/// U+2066-U+2069): in a client's name they make it read as another.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// A client's name as the consent page shows it: without control and bidi
/// characters, at most `MAX_NAME_LEN` characters.
fn clean_name(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_control() && !is_bidi_control(*c))
        .take(MAX_NAME_LEN)
        .collect()
}

fn name_of(doc: &Value, fallback: &str) -> String {
    doc.get("client_name")
        .and_then(Value::as_str)
        .map(clean_name)
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| fallback.to_owned())
}

impl AuthServer {
    /// Whether `client_id` is a metadata document URL this server fetches,
    /// and the client to fetch it with: https on an allowlisted host, or
    /// (TESTING ONLY, `cimd_testing_loopback`) http or unchecked https on a
    /// loopback host.
    fn cimd_url(&self, client_id: &str) -> Option<(url::Url, &reqwest::Client)> {
        let url = url::Url::parse(client_id).ok()?;
        let host = url.host_str()?;
        let http = match (url.scheme(), &self.loopback_http) {
            ("http" | "https", Some(loopback)) if is_loopback(&url) => loopback,
            ("https", _) if self.config.cimd_host_allowed(host) => &self.http,
            _ => return None,
        };
        (url.path() != "/" && url.fragment().is_none() && url.username().is_empty())
            .then_some((url, http))
    }

    /// The client `client_id` names: fetched (CIMD) or registered.
    pub(super) async fn client(
        &self,
        portal: &Portal,
        client_id: &str,
    ) -> Result<Client, OAuthError> {
        let unknown = || OAuthError::bad("invalid_client", "the client is unknown");
        if client_id.is_empty() || client_id.len() > MAX_URI_LEN {
            return Err(unknown());
        }
        if client_id.starts_with("https://") || client_id.starts_with("http://") {
            let (url, http) = self.cimd_url(client_id).ok_or_else(|| {
                OAuthError::bad(
                    "invalid_client",
                    "the client's metadata document is not on a host this server trusts",
                )
            })?;
            return self.fetch(http, url, client_id).await;
        }
        let row = portal
            .store
            .oauth_client(client_id)
            .await?
            .ok_or_else(unknown)?;
        Ok(Client {
            id: row.client_id,
            name: row.name,
            redirect_uris: row.redirect_uris,
        })
    }

    /// Fetches and checks a Client ID Metadata Document.
    async fn fetch(
        &self,
        http: &reqwest::Client,
        url: url::Url,
        client_id: &str,
    ) -> Result<Client, OAuthError> {
        let refused = |why: &str| {
            tracing::warn!(
                client_id,
                why,
                "authorization server: metadata document refused"
            );
            OAuthError::bad(
                "invalid_client",
                &format!("the client's metadata document was refused: {why}"),
            )
        };
        let max = self.config.cimd_max_bytes;
        let read = async {
            let response = http
                .get(url)
                .header("accept", "application/json")
                .send()
                .await
                .map_err(|e| {
                    if e.is_timeout() {
                        "it took too long"
                    } else {
                        "it cannot be fetched"
                    }
                })?;
            if response.status().is_redirection() {
                return Err("it redirects");
            }
            if response.status() != reqwest::StatusCode::OK {
                return Err("its status is not 200");
            }
            if response.content_length().is_some_and(|n| n as usize > max) {
                return Err("it is too large");
            }
            read_response(response, max).await.map_err(|e| match e {
                CappedError::TooLarge(_) => "it is too large",
                e if e.is(reqwest::Error::is_timeout) => "it took too long",
                CappedError::Read(_) => "it cannot be read",
            })
        };
        let body = tokio::time::timeout(self.config.cimd_timeout, read)
            .await
            .map_err(|_| refused("it took too long"))?
            .map_err(refused)?;
        let doc: Value = serde_json::from_slice(&body).map_err(|_| refused("it is not JSON"))?;
        if doc.get("client_id").and_then(Value::as_str) != Some(client_id) {
            return Err(refused("its client_id is not its URL"));
        }
        match doc
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
        {
            None | Some("none") => {}
            Some(_) => {
                return Err(refused(
                    "only public clients (token_endpoint_auth_method none) are supported",
                ));
            }
        }
        let redirect_uris = redirect_list(doc.get("redirect_uris")).map_err(refused)?;
        Ok(Client {
            id: client_id.to_owned(),
            name: name_of(&doc, client_id),
            redirect_uris,
        })
    }
}

/// `POST /register` (RFC 7591): a public client with its redirect URIs.
pub(super) async fn register(
    State(portal): State<Arc<Portal>>,
    body: axum::body::Bytes,
) -> Result<Response, OAuthError> {
    let authz = super::server(&portal)?;
    if !authz.config.dynamic_registration {
        return Err(OAuthError::new(
            StatusCode::FORBIDDEN,
            "access_denied",
            "dynamic client registration is turned off here; use a Client ID Metadata Document",
        ));
    }
    let doc: Value = serde_json::from_slice(&body)
        .map_err(|_| OAuthError::bad("invalid_client_metadata", "the body is not a JSON object"))?;
    if !doc.is_object() {
        return Err(OAuthError::bad(
            "invalid_client_metadata",
            "the body is not a JSON object",
        ));
    }
    let redirect_uris = redirect_list(doc.get("redirect_uris"))
        .map_err(|why| OAuthError::bad("invalid_redirect_uri", why))?;
    if let Some(types) = doc.get("grant_types").and_then(Value::as_array)
        && types
            .iter()
            .any(|t| !matches!(t.as_str(), Some("authorization_code" | "refresh_token")))
    {
        return Err(OAuthError::bad(
            "invalid_client_metadata",
            "only the authorization_code and refresh_token grants are supported",
        ));
    }
    // Registration is open to anyone: bounded per hour, counting only the
    // clients used or still young (unused ones are purged after a week).
    let now = portal.store.now_ms();
    let (hour_ago, fresh) = (now - 3_600_000, now - UNUSED_CLIENT_COUNTS_MS);
    let counted = portal.store.oauth_clients_counted(hour_ago, fresh).await?;
    if counted >= MAX_REGISTRATIONS_PER_HOUR {
        return Err(OAuthError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "temporarily_unavailable",
            "too many clients registered in the last hour; try again later",
        ));
    }
    let client_id = format!("tgc_{}", hex::encode(rand::random::<[u8; 16]>()));
    let row = OAuthClientRow {
        client_id: client_id.clone(),
        name: name_of(&doc, "an unnamed client"),
        redirect_uris: redirect_uris.clone(),
        created_ms: portal.store.now_ms(),
    };
    portal.store.add_oauth_client(&row).await?;
    portal
        .audit_oauth(
            "",
            "oauth/register",
            &format!("{client_id} {}", row.name),
            "",
        )
        .await;
    let answer = json!({
        "client_id": client_id,
        "client_id_issued_at": row.created_ms / 1000,
        "client_name": row.name,
        "redirect_uris": redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    Ok(cors((StatusCode::CREATED, Json(answer)).into_response()))
}

/// Loopback ports vary per run; everything else must match exactly.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_redirects_match_on_any_port() {
        let registered = vec![
            "http://127.0.0.1/callback".to_owned(),
            "https://app.example/cb".to_owned(),
        ];
        assert!(redirect_allowed(
            &registered,
            "http://127.0.0.1:53100/callback"
        ));
        assert!(!redirect_allowed(
            &registered,
            "http://127.0.0.1:53100/other"
        ));
        assert!(redirect_allowed(&registered, "https://app.example/cb"));
        assert!(!redirect_allowed(
            &registered,
            "https://app.example:8443/cb"
        ));
        assert!(!redirect_allowed(&registered, "https://evil.example/cb"));
        assert!(!redirect_acceptable("http://example.com/cb"));
        assert!(!redirect_acceptable("javascript:alert(1)"));
        assert!(redirect_acceptable(
            "cursor://anysphere.cursor-retrieval/oauth/callback"
        ));
    }

    #[test]
    fn names_lose_control_and_bidi_characters() {
        assert_eq!(
            clean_name("Acme \u{202E}lanigirO\u{202C}\u{2066}\u{2069}"),
            "Acme lanigirO"
        );
        assert_eq!(clean_name("a\u{0}b\nc"), "abc");
        assert_eq!(clean_name("Zoë 日本"), "Zoë 日本");
    }
}
