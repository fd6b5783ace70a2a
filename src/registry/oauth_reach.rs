//! Where teamgate sends the requests of an upstream's OAuth (issue 44):
//! the metadata, registration, token and revocation URLs come from the
//! upstream's 401 and its metadata, so each is checked before a request
//! goes out. A URL is reached when it is under a base URL of
//! `tools.http_allowlist` (as HTTP tools are), or is https on a public
//! address, or, for an upstream on loopback, is on that upstream's own
//! loopback addresses. The names are resolved here and the request is sent
//! to the addresses checked ([`Reached::addrs`]), not resolved again.

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    time::Duration,
};

/// How long resolving a name may take.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a URL an upstream's OAuth named is not reached; it names the URL
/// and the rule (the URL came from the upstream, never a secret).
#[derive(Debug, thiserror::Error)]
pub enum ReachError {
    #[error(
        "{url} is refused: {why}; an upstream's OAuth requests go only to a URL under \
         tools.http_allowlist, to https on a public address, or, for an upstream on \
         loopback, to that upstream's own loopback address"
    )]
    Request { url: String, why: String },
    #[error(
        "{url} is refused as the authorization endpoint: {why}; a member's browser is \
         sent only to https, or to http on a loopback upstream's own address"
    )]
    Browser { url: String, why: &'static str },
}

/// The rule for one upstream's OAuth requests.
#[derive(Debug, Clone)]
pub struct Reach {
    upstream: String,
    allowlist: Vec<String>,
}

/// A URL the rule lets teamgate reach.
#[derive(Debug)]
pub struct Reached {
    pub url: url::Url,
    /// The name to send to `addrs` (none: an address, or resolved as usual).
    pub domain: Option<String>,
    /// The checked addresses the request must connect to (empty: the URL is
    /// allowlisted, and the operator's resolver decides).
    pub addrs: Vec<SocketAddr>,
}

impl Reach {
    /// For the upstream at `upstream` (its configured URL) under `allowlist`.
    pub fn new(upstream: &str, allowlist: &[String]) -> Self {
        Self {
            upstream: upstream.to_owned(),
            allowlist: allowlist.to_vec(),
        }
    }

    /// `url` with where to send it, or why it is refused (naming it and the rule).
    pub async fn check(&self, url: &str) -> Result<Reached, ReachError> {
        let refused = |why: String| ReachError::Request {
            url: url.to_owned(),
            why,
        };
        let parsed = url::Url::parse(url).map_err(|e| refused(format!("not a URL ({e})")))?;
        let web = matches!(parsed.scheme(), "http" | "https");
        if !web || parsed.host().is_none() || !parsed.username().is_empty() {
            return Err(refused("not an http(s) URL with a host and no user".into()));
        }
        if crate::config::rendered_url_allowed(url, &self.allowlist) {
            return Ok(Reached {
                url: parsed,
                domain: None,
                addrs: Vec::new(),
            });
        }
        let addrs = (resolve(&parsed).await).map_err(|why| refused(why.into()))?;
        let shown = || {
            let ips: Vec<String> = addrs.iter().map(|a| a.ip().to_string()).collect();
            ips.join(", ")
        };
        let public = addrs.iter().all(|a| public(a.ip()));
        let own = self.own_loopback().await;
        let on_own = !own.is_empty() && addrs.iter().all(|a| own.contains(&a.ip()));
        if !(on_own || public && parsed.scheme() == "https") {
            let why = if public {
                "it is not https".to_owned()
            } else {
                format!("it is on {}, not a public address", shown())
            };
            return Err(refused(why));
        }
        let domain = match parsed.host() {
            Some(url::Host::Domain(name)) => Some(name.to_owned()),
            _ => None,
        };
        Ok(Reached {
            url: parsed,
            domain,
            addrs,
        })
    }

    /// Whether a member's browser may be sent to `url` (the authorization
    /// endpoint): https, or http on the upstream's own loopback address.
    /// The browser, not teamgate, reaches it, so a private https address is
    /// fine; `javascript:` and the like never become a `Location`.
    pub async fn browser(&self, url: &str) -> Result<url::Url, ReachError> {
        let refused = |why: &'static str| ReachError::Browser {
            url: url.to_owned(),
            why,
        };
        let parsed = url::Url::parse(url).map_err(|_| refused("not a URL"))?;
        if parsed.host().is_none() || !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(refused("not a URL with a host and no user"));
        }
        match parsed.scheme() {
            "https" => Ok(parsed),
            "http" => {
                let own = self.own_loopback().await;
                let addrs = resolve(&parsed).await.unwrap_or_default();
                if !own.is_empty()
                    && !addrs.is_empty()
                    && addrs.iter().all(|a| own.contains(&a.ip()))
                {
                    Ok(parsed)
                } else {
                    Err(refused(
                        "it is http, not on the upstream's own loopback address",
                    ))
                }
            }
            _ => Err(refused("it is not https")),
        }
    }

    /// The upstream's addresses when all of them are loopback; else none.
    async fn own_loopback(&self) -> Vec<IpAddr> {
        let Ok(url) = url::Url::parse(&self.upstream) else {
            return Vec::new();
        };
        let addrs = resolve(&url).await.unwrap_or_default();
        if addrs.iter().all(|a| a.ip().is_loopback()) {
            addrs.iter().map(SocketAddr::ip).collect()
        } else {
            Vec::new()
        }
    }
}

/// Every address `url`'s host has (an address is its own); never none.
async fn resolve(url: &url::Url) -> Result<Vec<SocketAddr>, &'static str> {
    let port = url.port_or_known_default().unwrap_or(443);
    let addrs = match url.host() {
        Some(url::Host::Ipv4(ip)) => vec![SocketAddr::new(ip.into(), port)],
        Some(url::Host::Ipv6(ip)) => vec![SocketAddr::new(ip.into(), port)],
        Some(url::Host::Domain(name)) => {
            let found =
                tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((name, port)));
            let found = found
                .await
                .map_err(|_| "its name took too long to resolve")?;
            found.map_err(|_| "its name does not resolve")?.collect()
        }
        None => Vec::new(),
    };
    if addrs.is_empty() {
        return Err("its name has no address");
    }
    Ok(addrs)
}

/// Whether `ip` is a public address: not loopback, private (RFC 1918),
/// shared (RFC 6598), link-local (the cloud metadata address among them),
/// unique-local, unspecified, multicast, documentation, benchmarking or
/// reserved; IPv6 forms embedding an IPv4 address are judged by it.
pub fn public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => public_v6(v6),
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || (a == 100 && (b & 0xc0) == 64)
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b & 0xfe) == 18)
        || a >= 240)
}

fn public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return public_v4(v4);
    }
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        public_v4(Ipv4Addr::new(a, b, c, d))
    };
    match s[0] {
        // `::/8`: unspecified, loopback, IPv4-compatible and reserved.
        0 => false,
        // NAT64 `64:ff9b::/96` and 6to4 `2002::/16` reach an IPv4 address.
        0x64 if s[1] == 0xff9b => embedded(s[6], s[7]),
        0x2002 => embedded(s[1], s[2]),
        // Teredo `2001::/32` and documentation `2001:db8::/32`.
        0x2001 if s[1] == 0 || s[1] == 0xdb8 => false,
        // Discard-only `100::/64`.
        0x100 if s[1..4] == [0, 0, 0] => false,
        first => {
            !((first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || (first & 0xffc0) == 0xfec0
                || (first & 0xff00) == 0xff00)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_public() {
        for ip in [
            "0.0.0.0",
            "127.0.0.2",
            "10.255.255.1",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "192.0.0.8",
            "198.18.0.1",
            "224.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:a00:1::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
        ] {
            assert!(!public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.215.14",
            "1.1.1.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn a_loopback_upstream_reaches_only_its_own_addresses() {
        let reach = Reach::new("http://127.0.0.1:8000/mcp", &[]);
        assert!(reach.check("http://127.0.0.1:9000/as").await.is_ok());
        for refused in [
            "http://127.0.0.2:9000/as",
            "http://169.254.169.254/latest/meta-data",
            "https://10.255.255.1/token",
            "http://93.184.215.14/token",
            "file:///etc/passwd",
            "http://user@127.0.0.1:9000/",
        ] {
            let why = reach.check(refused).await.unwrap_err().to_string();
            assert!(why.starts_with(refused) && why.contains("tools.http_allowlist"));
        }
        let remote = Reach::new("https://mcp.example.com/mcp", &[]);
        assert!(remote.check("http://127.0.0.1:9000/as").await.is_err());
        let allowed = Reach::new("https://mcp.example.com/mcp", &["http://10.1.2.3/".into()]);
        let reached = allowed.check("http://10.1.2.3/token").await.unwrap();
        assert!(reached.addrs.is_empty());
    }
}
