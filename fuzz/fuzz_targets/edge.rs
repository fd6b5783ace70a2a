//! The edge's header checks (`http/edge.rs`): `Host` and `Origin` are let
//! in only when they are well formed and match a rule, and forwarded
//! headers count only from a trusted proxy. Never a panic.
#![no_main]

use std::net::{IpAddr, Ipv4Addr};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    /// The peer: 10.x.y.z (a trusted proxy) or 192.0.2.z.
    trusted: bool,
    peer: [u8; 3],
    host: Option<Vec<u8>>,
    origin: String,
    forwarded: Option<Vec<u8>>,
    x_forwarded_for: Option<Vec<u8>>,
    x_forwarded_proto: Option<Vec<u8>>,
    x_forwarded_host: Option<Vec<u8>>,
}

/// The hosts `teamgate::fuzzing::edge_config` allows: name, and port when
/// only that one is.
const HOSTS: [(&str, Option<u16>); 5] = [
    ("localhost", None),
    ("127.0.0.1", None),
    ("::1", None),
    ("mcp.example.com", None),
    ("internal.example", Some(8443)),
];

/// `host[:port]` as RFC 3986 writes it: a reg-name or IPv4 address, or an
/// IPv6 address in brackets, then an optional (possibly empty) port.
fn strict_authority(text: &str) -> Option<(String, Option<u16>)> {
    let text = text.trim();
    let (host, port) = match text.strip_prefix('[') {
        Some(rest) => {
            let (v6, rest) = rest.split_once(']')?;
            v6.parse::<std::net::Ipv6Addr>().ok()?;
            (v6, rest)
        }
        None => {
            let end = text.find(':').unwrap_or(text.len());
            (&text[..end], &text[end..])
        }
    };
    let name = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_');
    if host.is_empty() || !host.bytes().all(name) {
        return None;
    }
    let port = match port {
        "" | ":" => None,
        _ => {
            let digits = port.strip_prefix(':')?;
            if !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some(digits.parse::<u16>().ok()?)
        }
    };
    Some((host.to_ascii_lowercase(), port))
}

fn host_matches(host: &str, port: Option<u16>) -> bool {
    HOSTS
        .iter()
        .any(|(name, only)| *name == host && (only.is_none() || *only == port))
}

/// `scheme://host[:port]` and nothing else, matching a rule.
fn origin_matches(origin: &str) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    let Some((host, port)) = strict_authority(authority) else {
        return false;
    };
    if authority != authority.trim() || authority.ends_with(':') {
        return false;
    }
    let scheme = scheme.to_ascii_lowercase();
    let loopback = ["localhost", "127.0.0.1", "::1"].contains(&host.as_str());
    let port = port.or(match scheme.as_str() {
        "https" => Some(443),
        "http" => Some(80),
        _ => None,
    });
    (loopback && (scheme == "http" || scheme == "https"))
        || (scheme == "https"
            && ["mcp.example.com", "app.example.com"].contains(&host.as_str())
            && port == Some(443))
}

fuzz_target!(|input: Input| {
    let edge = teamgate::fuzzing::edge_config();
    let peer = if input.trusted {
        IpAddr::V4(Ipv4Addr::new(
            10,
            input.peer[0],
            input.peer[1],
            input.peer[2],
        ))
    } else {
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, input.peer[2]))
    };
    let mut headers = http::HeaderMap::new();
    let fields = [
        ("host", &input.host),
        ("forwarded", &input.forwarded),
        ("x-forwarded-for", &input.x_forwarded_for),
        ("x-forwarded-proto", &input.x_forwarded_proto),
        ("x-forwarded-host", &input.x_forwarded_host),
    ];
    for (name, value) in fields {
        if let Some(value) = value
            .as_deref()
            .and_then(|v| http::HeaderValue::from_bytes(v).ok())
        {
            headers.insert(name, value);
        }
    }
    let client = edge.client(peer, &headers, None);
    if !input.trusted {
        // Forwarded headers from anyone else change nothing.
        assert_eq!(client.ip, peer);
        assert_eq!(client.scheme, "http");
        let host = headers
            .get("host")
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        assert_eq!(client.host, host);
    }
    assert!(client.scheme == "http" || client.scheme == "https");

    if edge.host_allowed(&client.host) {
        // Whatever the parse, what is let in names an allowed host and port.
        let authority: http::uri::Authority =
            client.host.trim().parse().expect("a valid authority");
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let host = host.to_ascii_lowercase();
        assert!(
            host_matches(&host, authority.port_u16()),
            "Host {:?} let in",
            client.host
        );
    }
    if STRICT && edge.host_allowed(&client.host) {
        let parsed = strict_authority(&client.host);
        assert!(
            parsed.as_ref().is_some_and(|(h, p)| host_matches(h, *p)),
            "Host {:?} let in ({parsed:?})",
            client.host
        );
    }
    if STRICT && edge.origin_allowed(&input.origin) {
        assert!(
            origin_matches(&input.origin),
            "Origin {:?} let in",
            input.origin
        );
    }
});

/// Malformed hosts and origins are refused (issue 30, 13; before the fix
/// `Host: x@localhost` and `Origin: http://127.0.0.1:1.evil.example` got in).
const STRICT: bool = true;
