//! `[audit]`: the audit trail's retention and queue, whether a reply waits
//! for its row (`durable`), and where records are shipped as they are
//! written (`[audit.ship]`, issue 64).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ConfigError, Secret};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// Records older than this are deleted.
    #[serde(with = "super::duration")]
    pub retention: Duration,
    /// Records waiting to be written; when full, new calls are refused (503)
    /// rather than a record being lost.
    pub buffer: usize,
    /// Each audited reply waits until its row is committed (group commit
    /// with the other calls of the moment): a replica killed right after a
    /// reply cannot lose that call's row. Off: rows are written a few
    /// milliseconds after the reply.
    #[serde(default)]
    pub durable: bool,
    #[serde(default)]
    pub ship: AuditShipConfig,
}

/// `[audit.ship]`: copies of every audit record, in the order this replica
/// wrote them, to the destinations turned on here.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditShipConfig {
    /// Records held per destination while it is slow or down; when full, new
    /// records are dropped for that destination, counted on `/metrics`
    /// (`teamgate_audit_ship_dropped_total`) and logged.
    #[serde(default = "default_buffer")]
    pub buffer: usize,
    /// Record fields blanked (`"[redacted]"`) before any record leaves, e.g.
    /// `["address", "subject"]`. The store keeps them.
    #[serde(default)]
    pub redact: Vec<String>,
    /// One JSON line per record on stdout, for a log shipper reading the
    /// container's output.
    #[serde(default)]
    pub stdout: bool,
    /// OTLP log records to `telemetry.otlp_endpoint` (`/v1/logs`, protobuf).
    #[serde(default)]
    pub otlp: bool,
    /// JSON lines POSTed to a webhook, signed with HMAC-SHA256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<AuditWebhookConfig>,
}

/// `[audit.ship.webhook]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditWebhookConfig {
    pub url: String,
    /// The HMAC-SHA256 key of `X-Teamgate-Signature: sha256=<hex>` over the
    /// body. A secret: set it through the environment,
    /// `TEAMGATE__AUDIT__SHIP__WEBHOOK__SECRET`.
    pub secret: Secret,
    /// How long one POST may take before it is retried.
    #[serde(default = "default_timeout", with = "super::duration")]
    pub timeout: Duration,
    /// Records per POST at most.
    #[serde(default = "default_batch")]
    pub batch: usize,
}

impl Default for AuditShipConfig {
    fn default() -> Self {
        Self {
            buffer: default_buffer(),
            redact: Vec::new(),
            stdout: false,
            otlp: false,
            webhook: None,
        }
    }
}

fn default_buffer() -> usize {
    10_000
}

fn default_timeout() -> Duration {
    Duration::from_secs(5)
}

fn default_batch() -> usize {
    500
}

/// The fields of a shipped record (as its JSON line names them), the names
/// `redact` takes.
pub const SHIPPED_FIELDS: [&str; 18] = [
    "id",
    "atMs",
    "user",
    "tokenId",
    "issuer",
    "subject",
    "sessionId",
    "protocolVersion",
    "method",
    "target",
    "argsDigest",
    "outcome",
    "latencyMs",
    "traceId",
    "upstream",
    "credential",
    "address",
    "endpoint",
];

impl AuditConfig {
    /// The keys of `[audit]` together; `otlp_endpoint` is
    /// `telemetry.otlp_endpoint`, which `ship.otlp` sends to.
    pub(super) fn validate(&self, otlp_endpoint: &str) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: String| ConfigError::Invalid {
            key: key.to_owned(),
            why,
        };
        if self.buffer < 16 {
            return Err(invalid("audit.buffer", "must be at least 16".into()));
        }
        let ship = &self.ship;
        if ship.buffer < 16 {
            return Err(invalid("audit.ship.buffer", "must be at least 16".into()));
        }
        if let Some(unknown) = ship
            .redact
            .iter()
            .find(|f| !SHIPPED_FIELDS.contains(&&***f))
        {
            return Err(invalid(
                "audit.ship.redact",
                format!(
                    "{unknown:?} is no record field; fields: {}",
                    SHIPPED_FIELDS.join(", ")
                ),
            ));
        }
        if ship.otlp && otlp_endpoint.is_empty() {
            return Err(invalid(
                "audit.ship.otlp",
                "needs telemetry.otlp_endpoint, the collector the records go to".into(),
            ));
        }
        if let Some(hook) = &ship.webhook {
            let url = url::Url::parse(&hook.url)
                .map_err(|e| invalid("audit.ship.webhook.url", format!("{e}")))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(invalid(
                    "audit.ship.webhook.url",
                    "must be an http or https URL".into(),
                ));
            }
            if hook.secret.expose().len() < 16 {
                return Err(invalid(
                    "audit.ship.webhook.secret",
                    "must be at least 16 characters (set TEAMGATE__AUDIT__SHIP__WEBHOOK__SECRET)"
                        .into(),
                ));
            }
            if !(1..=10_000).contains(&hook.batch) {
                return Err(invalid(
                    "audit.ship.webhook.batch",
                    "must be 1 to 10000".into(),
                ));
            }
            if hook.timeout.is_zero() {
                return Err(invalid(
                    "audit.ship.webhook.timeout",
                    "must be more than 0".into(),
                ));
            }
        }
        Ok(())
    }

    /// Whether any destination is turned on.
    pub fn ships(&self) -> bool {
        self.ship.stdout || self.ship.otlp || self.ship.webhook.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn audit() -> AuditConfig {
        AuditConfig {
            retention: Duration::from_secs(86_400),
            buffer: 10_000,
            durable: false,
            ship: AuditShipConfig::default(),
        }
    }

    fn refused_key(config: &AuditConfig, otlp: &str) -> String {
        match config.validate(otlp) {
            Err(ConfigError::Invalid { key, .. }) => key,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn each_shipping_key_is_checked_and_named() {
        assert!(audit().validate("").is_ok());
        let mut config = audit();
        config.ship.redact = vec!["adress".into()];
        assert_eq!(refused_key(&config, ""), "audit.ship.redact");
        config.ship.redact = vec!["address".into(), "atMs".into()];
        assert!(config.validate("").is_ok());
        config.ship.otlp = true;
        assert_eq!(refused_key(&config, ""), "audit.ship.otlp");
        assert!(config.validate("http://collector:4318").is_ok());
        let mut hook = AuditWebhookConfig {
            url: "ftp://siem".into(),
            secret: Secret::new("0123456789abcdef"),
            timeout: Duration::from_secs(5),
            batch: 500,
        };
        config.ship.webhook = Some(hook.clone());
        assert_eq!(refused_key(&config, "http://c"), "audit.ship.webhook.url");
        hook.url = "https://siem.example.com/in".into();
        hook.secret = Secret::new("short");
        config.ship.webhook = Some(hook.clone());
        assert_eq!(
            refused_key(&config, "http://c"),
            "audit.ship.webhook.secret"
        );
        hook.secret = Secret::new("0123456789abcdef");
        config.ship.webhook = Some(hook);
        assert!(config.validate("http://c").is_ok());
        assert!(config.ships());
    }
}
