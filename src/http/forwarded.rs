//! Who the client is behind a trusted proxy. Only the header that proxy sets
//! (`server.forwarded_header`) is read: a proxy replaces its own header but
//! passes any other through from the client, so believing both let a client
//! choose its address (and dodge the unauthenticated rate limit) or its Host.

use std::net::IpAddr;

use axum::http::HeaderMap;
use ipnet::IpNet;

use super::error::EdgeRuleError;
use crate::config::ForwardedHeader;

/// What the trusted proxies said about the client; `None` where they said
/// nothing usable.
#[derive(Debug, Default)]
pub(super) struct Forwarded {
    pub ip: Option<IpAddr>,
    pub scheme: Option<String>,
    pub host: Option<String>,
}

#[derive(Debug, Clone)]
pub(super) struct Proxies {
    nets: Vec<IpNet>,
    header: ForwardedHeader,
}

impl Proxies {
    pub(super) fn new(cidrs: &[String], header: ForwardedHeader) -> Result<Self, EdgeRuleError> {
        let nets = cidrs
            .iter()
            .map(|cidr| {
                cidr.parse::<IpNet>()
                    .or_else(|_| cidr.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| EdgeRuleError::Proxy(cidr.clone()))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { nets, header })
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|net| net.contains(&ip))
    }

    /// What the proxy in front of `peer` forwarded: nothing unless `peer` is
    /// a trusted proxy, and then only from the configured header.
    pub(super) fn forwarded(&self, peer: IpAddr, headers: &HeaderMap) -> Forwarded {
        if !self.trusts(peer) {
            return Forwarded::default();
        }
        match self.header {
            ForwardedHeader::XForwardedFor => Forwarded {
                ip: self.client_of(joined(headers, "x-forwarded-for").rsplit(','), |a| {
                    a.trim().parse().ok()
                }),
                scheme: last(headers, "x-forwarded-proto"),
                host: last(headers, "x-forwarded-host"),
            },
            ForwardedHeader::Forwarded => self.rfc7239(&joined(headers, "forwarded")),
        }
    }

    /// Walks the hops from the nearest: the first address that is not a
    /// trusted proxy is the client. An entry that is no address ends the
    /// walk: what lies beyond it was not written by a proxy we trust.
    fn client_of<'a>(
        &self,
        nearest_first: impl Iterator<Item = &'a str>,
        address: impl Fn(&str) -> Option<IpAddr>,
    ) -> Option<IpAddr> {
        for hop in nearest_first {
            let ip = address(hop)?;
            if !self.trusts(ip) {
                return Some(ip);
            }
        }
        None
    }

    /// RFC 7239: the client from the `for=` chain; `proto` and `host` from
    /// the element the nearest proxy added.
    fn rfc7239(&self, value: &str) -> Forwarded {
        let elements: Vec<&str> = value.split(',').filter(|e| !e.trim().is_empty()).collect();
        let ip = self.client_of(elements.iter().rev().copied(), |element| {
            node_ip(&pair(element, "for")?)
        });
        let nearest = elements.last().copied().unwrap_or_default();
        Forwarded {
            ip,
            scheme: pair(nearest, "proto"),
            host: pair(nearest, "host"),
        }
    }
}

/// Every line of a header as one comma-separated list (RFC 9110, 5.3).
fn joined(headers: &HeaderMap, name: &str) -> String {
    let lines: Vec<&str> = headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    lines.join(",")
}

/// The value the nearest proxy set, for the single-valued `X-Forwarded-*`.
fn last(headers: &HeaderMap, name: &str) -> Option<String> {
    let value = joined(headers, name);
    let value = value.rsplit(',').next()?.trim();
    (!value.is_empty()).then(|| value.to_owned())
}

/// The value of `key` in one `Forwarded` element, unquoted.
fn pair(element: &str, key: &str) -> Option<String> {
    element.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case(key)
            .then(|| v.trim().trim_matches('"').to_owned())
    })
}

/// A `for=` node: `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]:4711`;
/// `unknown` and obfuscated names are no address.
fn node_ip(node: &str) -> Option<IpAddr> {
    if let Some(v6) = node.strip_prefix('[') {
        return v6.split(']').next()?.parse().ok();
    }
    node.split(':').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        map
    }

    const PROXY: &str = "10.0.0.5";

    fn seen(header: ForwardedHeader, pairs: &[(&str, &str)]) -> Forwarded {
        Proxies::new(&["10.0.0.0/8".into()], header)
            .unwrap()
            .forwarded(PROXY.parse().unwrap(), &headers(pairs))
    }

    #[test]
    fn only_the_configured_header_is_read() {
        let both = [
            ("x-forwarded-for", "203.0.113.7, 10.9.9.9"),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "mcp.example.com"),
            ("forwarded", "for=198.51.100.9;proto=http;host=evil.com"),
        ];
        let x = seen(ForwardedHeader::XForwardedFor, &both);
        assert_eq!(x.ip, Some("203.0.113.7".parse().unwrap()));
        assert_eq!(x.scheme.as_deref(), Some("https"));
        assert_eq!(x.host.as_deref(), Some("mcp.example.com"));
        let rfc = seen(ForwardedHeader::Forwarded, &both);
        assert_eq!(rfc.ip, Some("198.51.100.9".parse().unwrap()));
        assert_eq!(rfc.host.as_deref(), Some("evil.com"));
    }

    #[test]
    fn the_chain_is_walked_from_the_nearest_hop() {
        let rfc = seen(
            ForwardedHeader::Forwarded,
            &[
                ("forwarded", "for=192.0.2.1"),
                (
                    "forwarded",
                    "for=\"[2001:db8::1]:4711\";proto=http, for=10.1.1.1;proto=https;host=a.example",
                ),
            ],
        );
        assert_eq!(rfc.ip, Some("2001:db8::1".parse().unwrap()));
        assert_eq!(
            (rfc.scheme.as_deref(), rfc.host.as_deref()),
            (Some("https"), Some("a.example"))
        );
        // A spoofed entry to the left of the proxy's own does not count.
        let x = seen(
            ForwardedHeader::XForwardedFor,
            &[("x-forwarded-for", "1.2.3.4, 198.51.100.2")],
        );
        assert_eq!(x.ip, Some("198.51.100.2".parse().unwrap()));
        // Garbage next to us: no client address, the peer stands.
        let x = seen(
            ForwardedHeader::XForwardedFor,
            &[("x-forwarded-for", "198.51.100.2, junk")],
        );
        assert_eq!(x.ip, None);
        let rfc = seen(ForwardedHeader::Forwarded, &[("forwarded", "for=unknown")]);
        assert_eq!(rfc.ip, None);
    }

    #[test]
    fn untrusted_peers_forward_nothing() {
        let proxies = Proxies::new(&["10.0.0.0/8".into()], ForwardedHeader::Forwarded).unwrap();
        let f = proxies.forwarded(
            "198.51.100.1".parse().unwrap(),
            &headers(&[("forwarded", "for=1.2.3.4;host=evil.com")]),
        );
        assert!(f.ip.is_none() && f.host.is_none() && f.scheme.is_none());
    }
}
