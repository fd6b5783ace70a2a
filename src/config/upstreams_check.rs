//! The rules of `[[upstreams]]` serde cannot express: each upstream on its
//! own and the list as a whole, every key named.

use super::{ConfigError, UpstreamAuth, UpstreamConfig, UpstreamOauth, upstreams::ToolOverride};

/// Checks each upstream on its own and the list as a whole; every key named.
pub(super) fn validate(
    upstreams: &[UpstreamConfig],
    allowlist: &[String],
) -> Result<(), ConfigError> {
    let invalid = |i: usize, key: &str, why: String| ConfigError::Invalid {
        key: format!("upstreams[{i}].{key}"),
        why,
    };
    let mut seen = std::collections::HashSet::new();
    for (i, upstream) in upstreams.iter().enumerate() {
        let name = &upstream.name;
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(invalid(
                i,
                "name",
                format!("{name:?}: use letters, digits and '-'"),
            ));
        }
        if !seen.insert(name.as_str()) {
            return Err(invalid(i, "name", format!("{name:?} is used twice")));
        }
        match (upstream.url.is_empty(), upstream.command.is_empty()) {
            (false, false) => {
                return Err(invalid(
                    i,
                    "url",
                    "set either url or command, not both".into(),
                ));
            }
            (true, true) => {
                return Err(invalid(
                    i,
                    "url",
                    "set url (a remote server) or command (a stdio server)".into(),
                ));
            }
            (false, true) => {
                let url = url::Url::parse(&upstream.url)
                    .map_err(|e| invalid(i, "url", format!("{:?}: {e}", upstream.url)))?;
                if !matches!(url.scheme(), "http" | "https") {
                    return Err(invalid(i, "url", "only http and https URLs".into()));
                }
                if !super::url_allowed(&upstream.url, allowlist) {
                    return Err(invalid(
                        i,
                        "url",
                        format!(
                            "{:?} is not under any base URL of tools.http_allowlist",
                            upstream.url
                        ),
                    ));
                }
            }
            (true, false) => {
                if upstream.auth == UpstreamAuth::Oauth {
                    return Err(invalid(i, "auth", "oauth is for a url upstream".into()));
                }
                if !upstream.headers.is_empty() {
                    return Err(invalid(
                        i,
                        "headers",
                        "headers are for a url upstream".into(),
                    ));
                }
            }
        }
        for (key, globs) in [
            ("tools.include", &upstream.tools.include),
            ("tools.exclude", &upstream.tools.exclude),
        ] {
            for glob in globs {
                globset::Glob::new(glob).map_err(|e| invalid(i, key, format!("{glob:?}: {e}")))?;
            }
        }
        if upstream.auth == UpstreamAuth::Oauth
            && upstream
                .headers
                .keys()
                .any(|h| h.eq_ignore_ascii_case("authorization"))
        {
            return Err(invalid(
                i,
                "headers",
                "an oauth upstream gets each member's own Authorization header".into(),
            ));
        }
        let oauth_read = upstream.auth == UpstreamAuth::Oauth || upstream.may_detect_oauth();
        if !oauth_read && upstream.oauth != UpstreamOauth::default() {
            return Err(invalid(
                i,
                "oauth",
                "is only read with auth = \"oauth\", or \"auto\" on a url upstream without \
                 an Authorization header"
                    .into(),
            ));
        }
        if upstream.timeout.is_zero() {
            return Err(invalid(i, "timeout", "must be more than 0".into()));
        }
        for (tool, over) in &upstream.tools.overrides {
            overriding(&format!("upstreams[{i}].tools.{tool}"), over)?;
        }
    }
    Ok(())
}

/// Rules of one `[upstreams.tools.NAME]`, as for a declared tool (the
/// upstream's schema is unknown here: a `from_caller` argument it lacks is
/// simply added).
fn overriding(key: &str, over: &ToolOverride) -> Result<(), ConfigError> {
    let invalid = |field: &str, why: &str| ConfigError::Invalid {
        key: format!("{key}.{field}"),
        why: why.to_owned(),
    };
    if let Some(rename) = &over.rename {
        super::validate::name(&format!("{key}.rename"), rename)?;
    }
    for (argument, source) in &over.from_caller {
        if !super::validate::caller_source(source) {
            return Err(invalid(
                &format!("from_caller.{argument}"),
                "must be \"user\" or \"claim:<claim name>\"",
            ));
        }
    }
    if over.cache_ttl.is_some() && over.read_only != Some(true) {
        return Err(invalid(
            "cache_ttl",
            "is only allowed with read_only = true (the upstream's own hint is not trusted)",
        ));
    }
    if over.timeout.is_some_and(|t| t.is_zero()) {
        return Err(invalid("timeout", "must be more than 0"));
    }
    if over
        .rate_limit
        .is_some_and(|r| r.per_minute == 0 || r.burst == 0)
    {
        return Err(invalid(
            "rate_limit",
            "per_minute and burst must be at least 1",
        ));
    }
    Ok(())
}
