//! Who is calling: the caller the auth layer sets on every request, its
//! identity and endpoint, and how its scopes cover what a call requires.

use std::sync::Arc;

use serde_json::Value;

/// The scope prefix that limits a token to toolset endpoints, and admits
/// it to them: `toolset:oncall` (issue 60).
pub const TOOLSET_SCOPE: &str = "toolset:";

/// The authenticated caller, set by the auth layer on every request. The
/// guard, the handler, the audit record and the call context each keep one:
/// a clone shares it instead of copying its strings.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller(Arc<Identity>, Option<Arc<str>>);

/// Who a caller is; read through `Caller`.
#[derive(Debug, PartialEq)]
pub struct Identity {
    pub user: String,
    /// Scopes granted to the caller's token (`tools:*`, `prompts:guide`, ...).
    pub scopes: Vec<String>,
    /// The personal token used, if any.
    pub token_id: Option<String>,
    /// Claims of an OAuth access token (empty for personal tokens).
    pub claims: serde_json::Map<String, Value>,
}

impl From<Identity> for Caller {
    fn from(identity: Identity) -> Self {
        Self(Arc::new(identity), None)
    }
}

impl std::ops::Deref for Caller {
    type Target = Identity;

    fn deref(&self) -> &Identity {
        &self.0
    }
}

impl Caller {
    /// The caller when `auth.mode = "none"`: one local user with every scope.
    pub fn anonymous() -> Self {
        Identity {
            user: "anonymous".into(),
            scopes: vec!["*".into()],
            token_id: None,
            claims: serde_json::Map::new(),
        }
        .into()
    }

    /// The same caller on the toolset endpoint `name` (issue 60): offered
    /// only what that toolset lets through, whatever its scopes.
    pub fn at_endpoint(&self, name: &str) -> Self {
        Self(self.0.clone(), Some(name.into()))
    }

    /// The toolset whose endpoint the caller is on; `None`: the main one.
    pub fn endpoint(&self) -> Option<&str> {
        self.1.as_deref()
    }

    /// The toolsets a `toolset:<name>` scope limits the caller's token to;
    /// empty: not limited.
    pub fn toolset_limits(&self) -> impl Iterator<Item = &str> {
        (self.scopes.iter()).filter_map(|s| s.strip_prefix(TOOLSET_SCOPE))
    }

    /// Whether a `*` scope covers whatever is required (checked first, so
    /// the common case skips working out what a call requires).
    pub fn may_do_anything(&self) -> bool {
        self.scopes.iter().any(|s| s == "*")
    }

    /// Whether the granted scopes cover every one of `required`.
    pub fn may(&self, required: &[String]) -> bool {
        required.iter().all(|r| scope_covers(&self.scopes, r))
    }

    /// `iss` and `sub` of an OAuth token, for the audit trail.
    pub fn issuer_subject(&self) -> (String, String) {
        let claim = |k: &str| {
            self.claims
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        (claim("iss"), claim("sub"))
    }
}

/// Scope hierarchy: `*` covers everything, `a:*` covers `a:` and anything
/// below it (`tools:*` covers `tools:run_tests`), otherwise scopes match exactly.
pub fn scope_covers(granted: &[String], required: &str) -> bool {
    granted.iter().any(|g| {
        g == "*"
            || g == required
            || g.strip_suffix('*')
                .is_some_and(|prefix| prefix.ends_with(':') && required.starts_with(prefix))
    })
}

#[cfg(test)]
mod tests {
    use super::scope_covers;

    #[test]
    fn scopes_cover_by_wildcard_and_hierarchy() {
        let granted = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(scope_covers(&granted(&["*"]), "tools:anything"));
        assert!(scope_covers(&granted(&["tools:*"]), "tools:run_tests"));
        assert!(scope_covers(&granted(&["tools:*"]), "tools:ci:deploy"));
        assert!(scope_covers(
            &granted(&["tools:run_tests"]),
            "tools:run_tests"
        ));
        assert!(!scope_covers(
            &granted(&["tools:run_tests"]),
            "tools:deploy"
        ));
        assert!(!scope_covers(&granted(&["tools:*"]), "prompts:guide"));
        assert!(
            !scope_covers(&granted(&["tool*"]), "tools:x"),
            "a bare prefix is not a wildcard"
        );
        assert!(!scope_covers(&granted(&[]), "tools:x"));
    }
}
