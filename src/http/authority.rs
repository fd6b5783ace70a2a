//! The grammar of `Host` and `Origin` values, parsed strictly: what is not
//! exactly `host[:port]` or `scheme://host[:port]` is refused, never read
//! as the nearest thing that parses (`http://127.0.0.1:80.evil.example`).

#[derive(Debug, Clone)]
pub(super) struct OriginRule {
    pub scheme: String,
    pub host: String,
    /// `None`: any port.
    pub port: Option<u16>,
}

/// `host[:port]`, strictly: a name of letters, digits, `-`, `.` and `_`, or
/// a bracketed IPv6 address, then nothing but an optional numeric port (an
/// empty one is none, RFC 3986). The host lower-cased, brackets removed.
pub(super) fn split_authority(authority: &str) -> Option<(String, Option<u16>)> {
    let (host, rest) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, rest) = v6.split_once(']')?;
            host.parse::<std::net::Ipv6Addr>().ok()?;
            (host, rest)
        }
        None => {
            let end = authority.find(':').unwrap_or(authority.len());
            let host = &authority[..end];
            let name = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_');
            if host.is_empty() || !host.bytes().all(name) {
                return None;
            }
            (host, &authority[end..])
        }
    };
    let port = match rest {
        "" | ":" => None,
        _ => {
            let digits = rest.strip_prefix(':')?;
            if digits.len() > 5 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some(digits.parse::<u16>().ok()?)
        }
    };
    Some((host.to_ascii_lowercase(), port))
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "https" => Some(443),
        "http" => Some(80),
        _ => None,
    }
}

/// An `Origin` as browsers send it (RFC 6454): `scheme://host[:port]` and
/// nothing else; `None` for anything malformed, which is refused.
pub(super) fn parse_origin(origin: &str) -> Option<OriginRule> {
    let (scheme, authority) = origin.split_once("://")?;
    let scheme_char = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.');
    if !scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        || !scheme.bytes().all(scheme_char)
        || authority.ends_with(':')
    {
        return None;
    }
    let scheme = scheme.to_ascii_lowercase();
    let (host, port) = split_authority(authority)?;
    let port = port.or(default_port(&scheme));
    Some(OriginRule { scheme, host, port })
}

/// A configured origin: [`parse_origin`], also taking a trailing `/` and
/// `:*` for any port.
pub(super) fn origin_rule(entry: &str) -> Option<OriginRule> {
    let entry = entry.trim().trim_end_matches('/');
    match entry.strip_suffix(":*") {
        Some(any_port) => Some(OriginRule {
            port: None,
            ..parse_origin(any_port)?
        }),
        None => parse_origin(entry),
    }
}
