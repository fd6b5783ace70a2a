//! Rules over the server's own settings that span several keys (serde has
//! checked each key alone); `validate.rs` has those of declared capabilities.

use std::{net::SocketAddr, time::Duration};

use super::{AuthMode, Config, ConfigError, Secret, validate};

/// One rule over a group of keys.
type Rule = fn(&Config) -> Result<(), ConfigError>;

impl Config {
    /// Checks that span several keys; serde has already checked each key
    /// alone. The first problem; `problems` has every one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.problems().into_iter().next().map_or(Ok(()), Err)
    }

    /// Every rule across keys broken, each group of keys checked on its own
    /// (and each declared tool, `validate.rs`): an operator fixes a file in
    /// one pass, `serve` and `check-config` alike.
    pub fn problems(&self) -> Vec<ConfigError> {
        let checks: [Rule; 18] = [
            |c| super::upstreams_check::validate(&c.upstreams, &c.tools.http_allowlist),
            |c| super::toolsets::validate(&c.toolsets),
            |c| super::guardrails::validate(&c.guardrails),
            super::approvals::validate,
            super::apps::validate,
            super::skills::validate,
            |c| (c.portal.as_ref()).map_or(Ok(()), |portal| portal.validate(&c.server.public_url)),
            |c| {
                (c.authorization_server.as_ref()).map_or(Ok(()), |authz| {
                    authz.validate(c.portal.as_ref(), &c.server.public_url)
                })
            },
            |c| c.tasks.validate(),
            Config::validate_credentials,
            super::environment::validate,
            Config::mcp_rules,
            Config::no_placeholder_secrets,
            Config::store_and_server_rules,
            Config::limit_rules,
            Config::auth_rules,
            |c| c.audit.validate(&c.telemetry.otlp_endpoint),
            Config::telemetry_rules,
        ];
        let mut problems: Vec<ConfigError> = checks
            .iter()
            .filter_map(|check| check(self).err())
            .collect();
        validate::capabilities(self, &mut problems);
        problems
    }

    /// `mcp.*` and the request limits of `server.*`; the conformance fixtures.
    fn mcp_rules(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: String| ConfigError::Invalid {
            key: key.to_owned(),
            why,
        };
        // The fixtures are compiled only for the conformance and interop runs.
        if self.providers.conformance.enabled && !cfg!(feature = "conformance") {
            return Err(invalid(
                "providers.conformance.enabled",
                "this build has no conformance fixtures: build with --features conformance".into(),
            ));
        }
        if !self.mcp.path.starts_with('/') || self.mcp.path.len() < 2 {
            return Err(invalid(
                "mcp.path",
                format!(
                    "must be an absolute path like \"/mcp\", got {:?}",
                    self.mcp.path
                ),
            ));
        }
        if self.server.max_body_bytes < 1024 {
            return Err(invalid(
                "server.max_body_bytes",
                "must be at least 1024 bytes".into(),
            ));
        }
        if !(2..=1024).contains(&self.server.max_json_depth) {
            return Err(invalid(
                "server.max_json_depth",
                "must be between 2 and 1024".into(),
            ));
        }
        if self.mcp.sse_keep_alive.is_zero() {
            return Err(invalid(
                "mcp.sse_keep_alive",
                "must be greater than zero".into(),
            ));
        }
        if self.mcp.disconnect_grace <= self.mcp.sse_retry {
            return Err(invalid(
                "mcp.disconnect_grace",
                format!(
                    "must be longer than mcp.sse_retry ({:?}), the delay clients wait before \
                     resuming a stream",
                    self.mcp.sse_retry
                ),
            ));
        }
        for (i, key) in self.mcp.request_state_keys.iter().enumerate() {
            if key.expose().len() < 32 {
                return Err(invalid(
                    &format!("mcp.request_state_keys[{i}]"),
                    "must be at least 32 characters of secret material".into(),
                ));
            }
        }
        Ok(())
    }

    /// `store.*` and the listener of `server.*`.
    fn store_and_server_rules(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: String| ConfigError::Invalid {
            key: key.to_owned(),
            why,
        };
        let store = &self.store;
        if !store.url.is_supported() {
            return Err(invalid(
                "store.url",
                "must start with sqlite:// or postgres://".into(),
            ));
        }
        if store.session_memory_idle > store.session_idle_ttl {
            return Err(invalid(
                "store.session_memory_idle",
                "must not exceed store.session_idle_ttl".into(),
            ));
        }
        if store.max_sessions < 1
            || store.max_sessions_per_owner < 1
            || store.max_sessions_in_memory < 1
            || store.events_max < 1
        {
            return Err(invalid(
                "store",
                "max_sessions, max_sessions_per_owner, max_sessions_in_memory and events_max \
                 must be at least 1"
                    .into(),
            ));
        }
        if store.connection_lifetime < Duration::from_secs(1) {
            return Err(invalid(
                "store.connection_lifetime",
                "must be at least 1s (the pool checks its idle connections this often)".into(),
            ));
        }
        if store.purge_interval.is_zero() {
            return Err(invalid(
                "store.purge_interval",
                "must be greater than zero".into(),
            ));
        }
        let server = &self.server;
        if !server.listen.ip().is_loopback() && server.public_url.is_empty() {
            return Err(invalid(
                "server.public_url",
                format!(
                    "is empty but server.listen ({}) is reachable from other machines: set it to the URL clients use, e.g. \"https://mcp.example.com/mcp\"",
                    server.listen
                ),
            ));
        }
        let absolute = ["https://", "http://"]
            .iter()
            .any(|p| server.public_url.starts_with(p));
        if !server.public_url.is_empty() && !absolute {
            return Err(invalid(
                "server.public_url",
                "must be an absolute http(s) URL".into(),
            ));
        }
        if server.header_read_timeout.is_zero()
            || server.body_read_timeout.is_zero()
            || server.max_connections == 0
        {
            return Err(invalid("server", "header_read_timeout, body_read_timeout and max_connections must be greater than zero".into()));
        }
        Ok(())
    }

    /// `limits.*` and `rate_limit.*`.
    fn limit_rules(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: String| ConfigError::Invalid {
            key: key.to_owned(),
            why,
        };
        let limits = &self.limits;
        if limits.max_in_flight == 0
            || limits.max_streams == 0
            || limits.max_streams_per_caller == 0
            || limits.tool_timeout.is_zero()
        {
            return Err(invalid("limits", "max_in_flight, max_streams, max_streams_per_caller and tool_timeout must be greater than zero".into()));
        }
        let rl = &self.rate_limit;
        if rl.per_caller_per_minute == 0
            || rl.unauthenticated_per_minute == 0
            || rl.per_caller_burst == 0
            || rl.unauthenticated_burst == 0
        {
            return Err(invalid(
                "rate_limit",
                "quotas and bursts must be at least 1 (set enabled = false to turn limits off)"
                    .into(),
            ));
        }
        for (i, t) in rl.tools.iter().enumerate() {
            if t.tool.is_empty() || t.per_minute == 0 || t.burst == 0 {
                return Err(invalid(
                    &format!("rate_limit.tools[{i}]"),
                    "needs a tool name and per_minute, burst of at least 1".into(),
                ));
            }
        }
        Ok(())
    }

    /// `auth.*`.
    fn auth_rules(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: String| ConfigError::Invalid {
            key: key.to_owned(),
            why,
        };
        if self.auth.mode == AuthMode::None && !self.server.listen.ip().is_loopback() {
            return Err(invalid(
                "auth.mode",
                format!(
                    "is \"none\" but server.listen ({}) is not a loopback address; require authentication or bind 127.0.0.1",
                    self.server.listen
                ),
            ));
        }
        for (i, issuer) in self.auth.oauth.issuers.iter().enumerate() {
            let key = |k: &str| format!("auth.oauth.issuers[{i}].{k}");
            if !issuer.issuer.starts_with("https://") && !issuer.issuer.starts_with("http://") {
                return Err(invalid(&key("issuer"), "must be an http(s) URL".into()));
            }
            if issuer.algorithms.is_empty() {
                return Err(invalid(
                    &key("algorithms"),
                    "must list at least one algorithm".into(),
                ));
            }
            for alg in &issuer.algorithms {
                if !matches!(
                    alg.as_str(),
                    "RS256"
                        | "RS384"
                        | "RS512"
                        | "PS256"
                        | "PS384"
                        | "PS512"
                        | "ES256"
                        | "ES384"
                        | "EdDSA"
                ) {
                    return Err(invalid(
                        &key("algorithms"),
                        format!(
                            "{alg:?} is not allowed: only asymmetric algorithms (RS*, PS*, ES256, ES384, EdDSA)"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `telemetry.*` and `log.level`.
    fn telemetry_rules(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: String| ConfigError::Invalid {
            key: key.to_owned(),
            why,
        };
        let telemetry = &self.telemetry;
        if !telemetry.otlp_endpoint.is_empty()
            && !telemetry.otlp_endpoint.starts_with("http://")
            && !telemetry.otlp_endpoint.starts_with("https://")
        {
            return Err(invalid(
                "telemetry.otlp_endpoint",
                "must be an http(s) URL such as \"http://otel-collector:4318\"".into(),
            ));
        }
        if telemetry.export_interval < Duration::from_millis(100) {
            return Err(invalid(
                "telemetry.export_interval",
                "must be at least 100ms".into(),
            ));
        }
        if !telemetry.metrics.listen.is_empty()
            && telemetry.metrics.listen.parse::<SocketAddr>().is_err()
        {
            return Err(invalid(
                "telemetry.metrics.listen",
                format!(
                    "must be empty or an address like \"0.0.0.0:9090\", got {:?}",
                    telemetry.metrics.listen
                ),
            ));
        }
        tracing_subscriber::EnvFilter::try_new(&self.log.level)
            .map(drop)
            .map_err(|e| invalid("log.level", e.to_string()))
    }
}

impl Config {
    /// The secrets still holding an example's stand-in (`CHANGE-ME…`) are
    /// refused, naming the key and never the value: a key everyone can read
    /// in the repository seals nothing.
    fn no_placeholder_secrets(&self) -> Result<(), ConfigError> {
        let mut secrets: Vec<(String, &str)> = Vec::new();
        for (key, list) in [
            ("mcp.request_state_keys", &self.mcp.request_state_keys),
            ("credentials.keys", &self.credentials.keys),
        ] {
            for (i, value) in list.iter().enumerate() {
                secrets.push((format!("{key}[{i}]"), value.expose()));
            }
        }
        secrets.push((
            "telemetry.metrics.token".into(),
            self.telemetry.metrics.token.expose(),
        ));
        if let Some(portal) = &self.portal {
            secrets.push(("portal.client_secret".into(), portal.client_secret.expose()));
        }
        let passwords = self.store.url.passwords();
        secrets.extend(
            passwords
                .iter()
                .map(|p| ("store.url's password".into(), p.as_str())),
        );
        for (key, value) in secrets {
            if !value.is_empty() && Secret::is_placeholder(value) {
                return Err(ConfigError::Invalid {
                    key,
                    why: "still holds an example's placeholder (CHANGE-ME, <...> or a few \
                          characters repeated): set a random secret of your own"
                        .into(),
                });
            }
        }
        Ok(())
    }
}
