//! The message for an unknown key: figment's own nests backticks
//! (``expected `one of `a`, `b``` ``), so it is written here, with the
//! closest known key when one is close enough to be a typo.

/// ``unknown key `server.listn` in <source> (did you mean `server.listen`?);
/// keys there: listen, ...``, `key` being the dotted path figment reports.
pub(super) fn unknown_key(key: &str, found: &str, expected: &[&str], source: &str) -> String {
    let mut message = format!("unknown key `{key}` in {source}");
    let parent = key.rsplit_once('.').map(|(parent, _)| parent);
    if let Some(close) = closest(found, expected) {
        let suggestion = parent.map_or(close.to_owned(), |p| format!("{p}.{close}"));
        message.push_str(&format!(" (did you mean `{suggestion}`?)"));
    }
    if !expected.is_empty() {
        let section = parent.map_or("at the top level".to_owned(), |p| format!("in [{p}]"));
        message.push_str(&format!("; the keys {section}: {}", expected.join(", ")));
    }
    message
}

/// The known key most like `found`, if it is similar enough to be a typo.
fn closest<'a>(found: &str, expected: &[&'a str]) -> Option<&'a str> {
    let found = found.to_lowercase();
    expected
        .iter()
        .map(|key| (strsim::jaro_winkler(&found, key), *key))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, key)| key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_only_a_close_key() {
        let keys = ["listen", "public_url", "allowed_hosts"];
        assert_eq!(closest("listn", &keys), Some("listen"));
        assert_eq!(closest("alowed_hosts", &keys), Some("allowed_hosts"));
        assert_eq!(closest("zzz", &keys), None);
        let message = unknown_key("server.listn", "listn", &keys, "file a.toml");
        assert_eq!(
            message,
            "unknown key `server.listn` in file a.toml (did you mean `server.listen`?); \
             the keys in [server]: listen, public_url, allowed_hosts"
        );
    }
}
