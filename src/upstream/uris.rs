//! The URI rule for upstream resources: an upstream's URI is kept unless
//! another provider has it too, and then reads `upstream://<name>/<its URI>`,
//! percent-encoded where a URI path needs it (and `%` always, so the way
//! back is exact). Templates are matched here too (RFC 6570, loosely: a
//! variable matches anything up to the next literal), and URIs compared as
//! RFC 3986 normalises them, so another spelling of a URI is the same URI.

use std::fmt::Write;

/// Where an upstream's renamed resources live.
const SCHEME: &str = "upstream://";

/// `upstream://<name>/`: what starts every renamed URI of upstream `name`.
pub(super) fn namespace(name: &str) -> String {
    format!("{SCHEME}{name}/")
}

/// `uri` under upstream `name`'s namespace. With `template`, `{...}`
/// expressions are kept as they are so the result is a template still.
pub(super) fn rewrite(name: &str, uri: &str, template: bool) -> String {
    let mut out = namespace(name);
    for byte in uri.bytes() {
        let kept = byte.is_ascii_alphanumeric()
            || b"-._~!$&'()*+,;=:@/".contains(&byte)
            || (template && (byte == b'{' || byte == b'}'));
        if kept {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// The upstream's own URI of `uri`, if it is in upstream `name`'s namespace.
pub(super) fn original(name: &str, uri: &str) -> Option<String> {
    let rest = uri.strip_prefix(&namespace(name))?;
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = (bytes[i] == b'%')
            .then(|| rest.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match decoded {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// `uri` as RFC 3986 §6.2.2 normalises it: percent-encoded unreserved
/// characters decoded and other escapes' hex uppercase, scheme and host
/// lowercase, `.` and `..` segments of a path removed.
pub(super) fn normalised(uri: &str) -> String {
    let mut out = String::with_capacity(uri.len());
    let mut rest = uri;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let hex = (rest.get(at + 1..at + 3)).filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
        match hex.and_then(|hex| u8::from_str_radix(hex, 16).ok().map(|b| (hex, b))) {
            Some((_, byte)) if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) => {
                out.push(byte as char);
                rest = &rest[at + 3..];
            }
            Some((hex, _)) => {
                out.push('%');
                out.push_str(&hex.to_ascii_uppercase());
                rest = &rest[at + 3..];
            }
            None => {
                out.push('%');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    let scheme = out.find(':').map(|colon| &out[..colon]).filter(|scheme| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && (scheme.bytes()).all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    });
    let Some(scheme) = scheme else {
        return out;
    };
    let after = &out[scheme.len() + 1..];
    let mut normal = scheme.to_ascii_lowercase() + ":";
    let path = match after.strip_prefix("//") {
        Some(rest) => {
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let (authority, path) = rest.split_at(end);
            // The host is after any user information; escapes keep uppercase hex.
            let host = authority.rfind('@').map_or(0, |at| at + 1);
            normal.push_str("//");
            normal.push_str(&authority[..host]);
            let mut escape = 0;
            for c in authority[host..].chars() {
                escape = if c == '%' { 3 } else { escape.max(1) - 1 };
                normal.push(if escape > 0 {
                    c
                } else {
                    c.to_ascii_lowercase()
                });
            }
            path
        }
        None => after,
    };
    let end = path.find(['?', '#']).unwrap_or(path.len());
    match path.starts_with('/') {
        true => normal.push_str(&without_dots(&path[..end])),
        false => normal.push_str(&path[..end]),
    }
    normal.push_str(&path[end..]);
    normal
}

/// An absolute path without `.` and `..` segments (RFC 3986 §5.2.4).
fn without_dots(path: &str) -> String {
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len() - 1;
    let mut kept: Vec<&str> = Vec::new();
    for (i, segment) in segments.into_iter().enumerate() {
        match segment {
            "." | ".." => {
                if segment == ".." && kept.len() > 1 {
                    kept.pop();
                }
                if i == last {
                    kept.push("");
                }
            }
            other => kept.push(other),
        }
    }
    kept.join("/")
}

/// Templates longer than this (product of both lengths) are taken to
/// overlap rather than compared, which would cost too much.
const MAX_COMPARED: usize = 1 << 20;

/// Whether some URI matches both templates (as `matches` reads them): a
/// URI two upstreams' templates can both serve belongs to neither.
pub(super) fn overlap(a: &str, b: &str) -> bool {
    let (a, b) = (pattern(a), pattern(b));
    if a.len().saturating_mul(b.len()) > MAX_COMPARED {
        return true;
    }
    // can[i][j]: some string matches both a[i..] and b[j..].
    let mut can = vec![vec![false; b.len() + 1]; a.len() + 1];
    for i in (0..=a.len()).rev() {
        for j in (0..=b.len()).rev() {
            can[i][j] = match (a.get(i), b.get(j)) {
                (None, None) => true,
                (Some(None), _) => can[i + 1][j] || (j < b.len() && can[i][j + 1]),
                (_, Some(None)) => can[i][j + 1] || (i < a.len() && can[i + 1][j]),
                (Some(Some(x)), Some(Some(y))) => x == y && can[i + 1][j + 1],
                _ => false,
            };
        }
    }
    can[0][0]
}

/// A template as bytes, `None` for each `{...}` (a template with an
/// unclosed one is all literal, as `matches` reads it).
fn pattern(template: &str) -> Vec<Option<u8>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            return template.bytes().map(Some).collect();
        };
        out.extend(rest[..open].bytes().map(Some));
        out.push(None);
        rest = &rest[open + close + 1..];
    }
    out.extend(rest.bytes().map(Some));
    out
}

/// Whether `uri` is in teamgate's `upstream://` scheme, where each
/// upstream's namespace is (`namespace`): no upstream lists or templates
/// URIs there, and no template claims one.
pub(super) fn reserved(uri: &str) -> bool {
    uri.get(..SCHEME.len())
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case(SCHEME))
}

/// Whether `uri` is one `template` describes: its literal parts in order,
/// each `{...}` standing for anything (nothing included) up to the next one.
pub(super) fn matches(template: &str, uri: &str) -> bool {
    let mut literals = Vec::new();
    let mut rest = template;
    loop {
        match rest.find('{') {
            None => {
                literals.push(rest);
                break;
            }
            Some(open) => {
                literals.push(&rest[..open]);
                let Some(close) = rest[open..].find('}') else {
                    return template == uri;
                };
                rest = &rest[open + close + 1..];
            }
        }
    }
    let (first, last, middle) = match literals.as_slice() {
        [] | [_] => return template == uri,
        [first, between @ .., last] => (*first, *last, between),
    };
    let Some(mut left) = uri.strip_prefix(first) else {
        return false;
    };
    for literal in middle {
        if literal.is_empty() {
            continue;
        }
        match left.find(literal) {
            Some(at) => left = &left[at + literal.len()..],
            None => return false,
        }
    }
    left.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewritten_uri_reads_back_exactly() {
        for uri in [
            "demo://resource/static/document/architecture.md",
            "file:///tmp/a b/100%.txt",
            "x://héllo?q=1#frag",
        ] {
            let rewritten = rewrite("two", uri, false);
            assert!(rewritten.starts_with("upstream://two/"), "{rewritten}");
            assert!(
                !rewritten[15..].contains([' ', '?', '#', 'é']),
                "{rewritten}"
            );
            assert_eq!(original("two", &rewritten).as_deref(), Some(uri));
        }
        assert_eq!(original("one", &rewrite("two", "a://b", false)), None);
    }

    #[test]
    fn a_rewritten_template_stays_a_template() {
        let template = rewrite("two", "demo://resource/dynamic/text/{resourceId}", true);
        assert_eq!(
            template,
            "upstream://two/demo://resource/dynamic/text/{resourceId}"
        );
        let read = template.replace("{resourceId}", "7");
        assert_eq!(
            original("two", &read).as_deref(),
            Some("demo://resource/dynamic/text/7")
        );
    }

    #[test]
    fn templates_match_their_uris_only() {
        let t = "demo://resource/dynamic/text/{resourceId}";
        assert!(matches(t, "demo://resource/dynamic/text/12"));
        assert!(!matches(t, "demo://resource/dynamic/blob/12"));
        assert!(matches("a://{x}/b/{y}.md", "a://q/b/r.md"));
        assert!(!matches("a://{x}/b/{y}.md", "a://q/c/r.md"));
        assert!(matches("plain://x", "plain://x"));
        assert!(!matches("plain://x", "plain://xy"));
        assert!(!matches("broken://{x", "broken://y"));
    }

    #[test]
    fn templates_overlap_when_one_uri_matches_both() {
        assert!(overlap("mem://private/{+y}", "mem://private/{x}"));
        assert!(overlap("mem://private/a{x}", "mem://private/{x}"));
        assert!(overlap("{x}", "mem://docs/{id}"));
        assert!(overlap("a://{x}/b", "a://q/{y}"));
        assert!(!overlap("mem://docs/{id}", "mem://notes/{id}"));
        assert!(!overlap("x{v}y", "x{w}z"));
        assert!(!overlap("plain://x", "plain://y") && overlap("plain://x", "plain://x"));
    }

    #[test]
    fn uris_are_normalised_as_rfc_3986_says() {
        for (uri, normal) in [
            ("Mem://static", "mem://static"),
            ("mem://stat%69c", "mem://static"),
            ("MEM://Host.Example/A%2fb%7e", "mem://host.example/A%2Fb~"),
            ("mem://User@H%c3%A9/x", "mem://User@h%C3%A9/x"),
            ("file:///a/./b/../c?q=/../#f", "file:///a/c?q=/../#f"),
            ("mem://h/a/..", "mem://h/"),
            ("urn:Ex:a/../b", "urn:Ex:a/../b"),
            ("no scheme %zz %4", "no scheme %zz %4"),
            ("100%", "100%"),
        ] {
            assert_eq!(normalised(uri), normal, "{uri}");
        }
    }

    #[test]
    fn the_upstream_scheme_is_reserved() {
        assert!(reserved("upstream://victim/a") && reserved("UPSTREAM://v/a"));
        assert!(!reserved("mem://upstream://") && !reserved("ups"));
    }
}
