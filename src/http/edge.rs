//! The edge of the server: which client this is (trusting forwarded headers
//! only from configured proxies), and whether its `Host` and `Origin` may
//! reach us at all (DNS-rebinding protection). Runs before anything else
//! reads the request, authentication included.

use std::net::{IpAddr, SocketAddr};

use super::{
    authority::{OriginRule, origin_rule, parse_origin, split_authority},
    body,
    error::{EdgeRuleError, HttpError},
    forwarded::Proxies,
};
use crate::{config::ForwardedHeader, protocol::ClientInfo};
use axum::{
    extract::{ConnectInfo, Request},
    http::{HeaderMap, header},
    response::{IntoResponse, Response},
};

#[derive(Debug, Clone)]
struct HostRule {
    host: String,
    port: Option<u16>,
}

#[derive(Debug, Clone)]
pub struct EdgeConfig {
    proxies: Proxies,
    hosts: Vec<HostRule>,
    origins: Vec<OriginRule>,
}

const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

impl EdgeConfig {
    /// Loopback always; plus `public_url`'s host and origin and the configured extras.
    pub fn new(
        public_url: &str,
        allowed_hosts: &[String],
        allowed_origins: &[String],
        trusted_proxies: &[String],
        forwarded_header: ForwardedHeader,
    ) -> Result<Self, EdgeRuleError> {
        let mut hosts: Vec<HostRule> = LOOPBACK
            .iter()
            .map(|h| HostRule {
                host: h.to_string(),
                port: None,
            })
            .collect();
        let mut origins: Vec<OriginRule> = LOOPBACK
            .iter()
            .flat_map(|h| {
                ["http", "https"].map(|scheme| OriginRule {
                    scheme: scheme.into(),
                    host: h.to_string(),
                    port: None,
                })
            })
            .collect();
        if !public_url.is_empty() {
            let origin = public_url
                .splitn(4, '/')
                .take(3)
                .collect::<Vec<_>>()
                .join("/");
            let rule = origin_rule(&origin)
                .ok_or_else(|| EdgeRuleError::PublicUrl(public_url.to_owned()))?;
            hosts.push(HostRule {
                host: rule.host.clone(),
                port: None,
            });
            origins.push(rule);
        }
        for entry in allowed_hosts {
            let (host, port) =
                split_authority(entry.trim()).ok_or_else(|| EdgeRuleError::Host(entry.clone()))?;
            hosts.push(HostRule { host, port });
        }
        for entry in allowed_origins {
            if entry == "null" {
                // An explicit opt-in for sandboxed pages; never a default.
                origins.push(OriginRule {
                    scheme: "null".into(),
                    host: String::new(),
                    port: None,
                });
                continue;
            }
            origins.push(origin_rule(entry).ok_or_else(|| EdgeRuleError::Origin(entry.clone()))?);
        }
        let proxies = Proxies::new(trusted_proxies, forwarded_header)?;
        Ok(Self {
            proxies,
            hosts,
            origins,
        })
    }

    pub fn host_allowed(&self, host: &str) -> bool {
        if let Some(allowed) = self.plain_host_allowed(host) {
            return allowed;
        }
        let Some((host, port)) = split_authority(host.trim()) else {
            return false;
        };
        self.host_matches(&host, port)
    }

    /// Whether a rule allows `host` (any case) on `port`.
    fn host_matches(&self, host: &str, port: Option<u16>) -> bool {
        self.hosts.iter().any(|rule| {
            rule.host.eq_ignore_ascii_case(host) && (rule.port.is_none() || rule.port == port)
        })
    }

    /// [`Self::host_allowed`] for the common `name[:port]` form, compared in
    /// place (every request asks); `None` for anything else (IPv6 brackets,
    /// spaces, odd ports), which the full parse decides.
    fn plain_host_allowed(&self, authority: &str) -> Option<bool> {
        let plain = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':');
        if authority.is_empty() || !authority.bytes().all(plain) {
            return None;
        }
        let (name, port) = match authority.split_once(':') {
            Some((name, port)) => (name, Some(port.parse::<u16>().ok()?)),
            None => (authority, None),
        };
        if name.is_empty() {
            return None;
        }
        Some(self.host_matches(name, port))
    }

    pub fn origin_allowed(&self, origin: &str) -> bool {
        if origin == "null" {
            return self.origins.iter().any(|o| o.scheme == "null");
        }
        let Some(candidate) = parse_origin(origin) else {
            return false;
        };
        self.origins.iter().any(|rule| {
            rule.scheme != "null"
                && rule.scheme == candidate.scheme
                && rule.host == candidate.host
                && (rule.port.is_none() || rule.port == candidate.port)
        })
    }

    /// The client as seen through trusted proxies; forwarded headers from
    /// anyone else are ignored.
    pub fn client(
        &self,
        peer: IpAddr,
        headers: &HeaderMap,
        uri_authority: Option<&str>,
    ) -> ClientInfo {
        let forwarded = self.proxies.forwarded(peer, headers);
        let host = forwarded.host.unwrap_or_else(|| {
            headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .or(uri_authority)
                .unwrap_or_default()
                .to_owned()
        });
        let scheme = forwarded
            .scheme
            .map(|s| s.to_ascii_lowercase())
            .filter(|s| s == "http" || s == "https");
        ClientInfo {
            ip: forwarded.ip.unwrap_or(peer),
            scheme: scheme.unwrap_or_else(|| "http".into()),
            host,
        }
    }
}

/// The edge step (`front.rs`, step 5): the refusal of a foreign `Host` or
/// `Origin` (403, JSON-RPC body), if any; else the `ClientInfo` is recorded
/// for the steps below. The peer's address comes from the accept loop
/// (`serve.rs`).
pub(super) fn check(config: &EdgeConfig, request: &mut Request) -> Option<Response> {
    let Some(ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<SocketAddr>>() else {
        // Only a router served without `serve.rs` lacks it: a bug of ours.
        tracing::error!("a request reached the edge step without its peer's address");
        return Some(HttpError::Internal.into_response());
    };
    let client = config.client(
        peer.ip(),
        request.headers(),
        request.uri().authority().map(|a| a.as_str()),
    );
    // A refusal here leaves the body unread: say so (see `body::close`).
    let refuse = |refusal: HttpError, request: &Request| {
        let response = refusal.into_response();
        if body::unread(request) {
            body::close(response)
        } else {
            response
        }
    };
    if !config.host_allowed(&client.host) {
        let refusal = HttpError::Forbidden {
            challenge: String::new(),
            message: format!(
                "Host {:?} is not served here (DNS-rebinding protection)",
                client.host
            ),
        };
        return Some(refuse(refusal, request));
    }
    let mut origins = request.headers().get_all(header::ORIGIN).iter();
    if let Some(origin) = origins.next() {
        let origin = origin.to_str().unwrap_or_default();
        // The portal's pages send `Referrer-Policy: no-referrer`, so a browser
        // posts their forms with `Origin: null`; each of those forms carries
        // the session's CSRF token, which is what protects it.
        let portal_form = origin == "null"
            && request.method() == axum::http::Method::POST
            && request.uri().path().starts_with("/portal/");
        let cookieless = any_origin(request.uri().path());
        if origins.next().is_some() || !(portal_form || cookieless || config.origin_allowed(origin))
        {
            let refusal = HttpError::Forbidden {
                challenge: String::new(),
                message: format!("Origin {origin:?} is not allowed"),
            };
            return Some(refuse(refusal, request));
        }
    }
    request.extensions_mut().insert(client);
    None
}

/// The authorization server's endpoints for clients (and the metadata):
/// they take no cookie, so a browser-based client (the Inspector) may call
/// them from its own origin, preflight included.
pub(crate) fn any_origin(path: &str) -> bool {
    matches!(path, "/token" | "/register" | "/revoke") || path.starts_with("/.well-known/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> EdgeConfig {
        EdgeConfig::new(
            "https://mcp.example.com/mcp",
            &["internal.example:8443".into()],
            &[
                "https://app.example.com".into(),
                "http://localhost:3000".into(),
            ],
            &["10.0.0.0/8".into()],
            ForwardedHeader::XForwardedFor,
        )
        .unwrap()
    }

    #[test]
    fn hosts() {
        let c = config();
        let table = [
            ("localhost:8080", true),
            ("127.0.0.1", true),
            ("[::1]:9000", true),
            ("mcp.example.com", true),
            ("MCP.example.com:443", true),
            ("internal.example:8443", true),
            ("internal.example:80", false),
            ("evil.example.com", false),
            ("mcp.example.com.evil.com", false),
            ("127.0.0.2", false),
            ("", false),
            ("LOCALHOST:1", true),
            ("localhost:", true), // an empty port is no port (RFC 3986)
            ("localhost:8080:1", false),
            (" localhost:8080 ", true),
            ("127.0.0.1:80.evil.example", false),
            ("localhost:65536", false),
            ("user@localhost", false),
            ("[::1]:80x", false),
        ];
        for (host, allowed) in table {
            assert_eq!(c.host_allowed(host), allowed, "{host}");
        }
    }

    #[test]
    fn origins() {
        let c = config();
        let table = [
            ("https://mcp.example.com", true),
            ("https://mcp.example.com:443", true),
            ("http://mcp.example.com", false),       // other scheme
            ("https://mcp.example.com:8443", false), // other port
            ("https://app.example.com", true),
            ("https://app.example.com.evil.com", false), // look-alike
            ("http://localhost:3000", true),
            ("http://localhost:4000", true), // loopback, any port
            ("http://[::1]:5173", true),
            ("null", false),
            ("https://evil.example.com", false),
            ("not an origin", false),
            // Not origins at all: refused, whatever host they start with.
            ("http://localhost:3000.evil.example", false),
            ("http://localhost:99999", false),
            ("http://localhost:3000/", false),
            ("http://localhost:3000/path", false),
            ("http://evil@localhost:3000", false),
            ("http://localhost:", false),
            ("http://localhost:+80", false),
            ("http://[::1", false),
            ("http://[::1]x", false),
            ("http://", false),
            ("://localhost", false),
            ("http://localhost:3000?x", false),
            ("http://localhost#x", false),
            ("HTTP://LOCALHOST:3000", true),
        ];
        for (origin, allowed) in table {
            assert_eq!(c.origin_allowed(origin), allowed, "{origin}");
        }
        let with_null = EdgeConfig::new(
            "",
            &[],
            &["null".into()],
            &[],
            ForwardedHeader::XForwardedFor,
        )
        .unwrap();
        assert!(with_null.origin_allowed("null"));
    }

    #[test]
    fn forwarded_headers_count_only_from_trusted_proxies() {
        let c = config();
        let mut headers = HeaderMap::new();
        headers.insert("host", "10.1.2.3:8080".parse().unwrap());
        headers.insert("x-forwarded-for", "203.0.113.7, 10.9.9.9".parse().unwrap());
        headers.insert("x-forwarded-proto", "https".parse().unwrap());
        headers.insert("x-forwarded-host", "mcp.example.com".parse().unwrap());
        let trusted = c.client("10.0.0.5".parse().unwrap(), &headers, None);
        assert_eq!(trusted.ip, "203.0.113.7".parse::<IpAddr>().unwrap());
        assert_eq!(
            (trusted.scheme.as_str(), trusted.host.as_str()),
            ("https", "mcp.example.com")
        );
        let untrusted = c.client("198.51.100.1".parse().unwrap(), &headers, None);
        assert_eq!(untrusted.ip, "198.51.100.1".parse::<IpAddr>().unwrap());
        assert_eq!(
            (untrusted.scheme.as_str(), untrusted.host.as_str()),
            ("http", "10.1.2.3:8080")
        );
    }
}
