//! The URI rule for upstream resources: an upstream's URI is kept unless
//! another provider has it too, and then reads `upstream://<name>/<its URI>`,
//! percent-encoded where a URI path needs it (and `%` always, so the way
//! back is exact). Templates are matched here too (RFC 6570, loosely: a
//! variable matches anything up to the next literal).

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

/// How specific `template` is: the characters before its first variable.
/// Of two templates matching a URI, the more specific one serves it.
pub(super) fn specificity(template: &str) -> usize {
    template.find('{').unwrap_or(template.len())
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
    fn specificity_counts_the_literal_before_the_first_variable() {
        assert_eq!(specificity("{x}"), 0);
        assert_eq!(specificity("mem://{x}"), 6);
        assert!(specificity("mem://docs/{id}") > specificity("mem://{x}"));
        assert!(reserved("upstream://victim/a") && reserved("UPSTREAM://v/a"));
        assert!(!reserved("mem://upstream://") && !reserved("ups"));
    }
}
