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

/// Whether some URI matches both templates (as `matches` reads them): a
/// URI two upstreams' templates can both serve belongs to neither. With a
/// variable in each, one does exactly when their literal starts agree (one
/// begins the other) and so do their literal ends: the start, every middle
/// literal of both, and the end, in a row, is such a URI.
pub(super) fn overlap(a: &str, b: &str) -> bool {
    let (x, y) = (literals(a), literals(b));
    match (x.as_slice(), y.as_slice()) {
        ([_], [_]) => a == b,
        ([_], _) => matches(b, a),
        (_, [_]) => matches(a, b),
        ([x_first, .., x_last], [y_first, .., y_last]) => {
            (x_first.starts_with(y_first) || y_first.starts_with(x_first))
                && (x_last.ends_with(y_last) || y_last.ends_with(x_last))
        }
        _ => false,
    }
}

/// The literal parts of `template` around its `{...}` expressions; the
/// whole of it when it has none or one is not closed (then it is a URI).
fn literals(template: &str) -> Vec<&str> {
    let mut literals = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            return vec![template];
        };
        literals.push(&rest[..open]);
        rest = &rest[open + close + 1..];
    }
    literals.push(rest);
    literals
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
    let literals = literals(template);
    let (first, last, middle) = match literals.as_slice() {
        [first, between @ .., last] => (*first, *last, between),
        _ => return template == uri,
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
        assert!(overlap("plain://x", "plain://{y}") && !overlap("plain://x", "other://{y}"));
        assert!(overlap("broken://{x", "broken://{y}") && !overlap("broken://{x", "b://{y}"));
        assert!(overlap("ab{x}", "{y}ba"));
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
