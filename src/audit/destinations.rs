//! The places `[audit.ship]` sends records: stdout (JSON lines), a webhook
//! (JSON lines, HMAC-signed) and an OTLP collector (log records); what a
//! destination is (`Destination`) and a record as it leaves (`Shipped`).

use std::{future::Future, sync::Arc, time::Duration};

use opentelemetry_proto::tonic::{
    collector::logs::v1::ExportLogsServiceRequest,
    common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value},
    logs::v1::{LogRecord, ResourceLogs, ScopeLogs},
    resource::v1::Resource,
};
use prost::Message;
use serde_json::{Map, Value};
use tokio::io::AsyncWriteExt;

use super::AuditError;
use crate::{
    config::{AuditWebhookConfig, Secret},
    store::AuditRecord,
};

/// One record as it leaves: its fields with the redacted ones blanked, and
/// its JSON line. Made once, shared by every destination.
pub(super) struct Shipped {
    pub(super) at_ms: i64,
    pub(super) fields: Map<String, Value>,
    pub(super) line: String,
}

impl Shipped {
    pub(super) fn new(record: &AuditRecord, redact: &[String]) -> Self {
        let mut fields = match serde_json::to_value(record) {
            Ok(Value::Object(fields)) => fields,
            _ => Map::new(),
        };
        for field in redact {
            if let Some(value) = fields.get_mut(field) {
                *value = Value::String("[redacted]".into());
            }
        }
        let line = serde_json::to_string(&fields).unwrap_or_default();
        Self {
            at_ms: record.at_ms,
            fields,
            line,
        }
    }
}

/// Where records go: one POST, one write. A `Refused` failure drops the
/// batch, counted; any other is tried again (with backoff) until it succeeds.
pub(super) trait Destination: Send + Sync + 'static {
    fn name(&self) -> &'static str;
    /// Records per delivery at most.
    fn batch(&self) -> usize;
    fn deliver(
        &self,
        records: &[Arc<Shipped>],
    ) -> impl Future<Output = Result<(), AuditError>> + Send;
}

/// The records' lines joined, one per line, ending with a newline.
fn json_lines(records: &[Arc<Shipped>]) -> Vec<u8> {
    let mut body = Vec::with_capacity(records.iter().map(|r| r.line.len() + 1).sum());
    for record in records {
        body.extend_from_slice(record.line.as_bytes());
        body.push(b'\n');
    }
    body
}

/// A reply's status as a delivery's outcome: retried when the receiver may
/// take it later (408, 429, 5xx), refused for good otherwise.
fn status_outcome(status: reqwest::StatusCode) -> Result<(), AuditError> {
    match status.as_u16() {
        200..=299 => Ok(()),
        408 | 429 | 500..=599 => Err(AuditError::Status(status.as_u16())),
        other => Err(AuditError::Refused(format!("HTTP {other}"))),
    }
}

/// JSON lines on stdout, for a log shipper reading the container's output.
pub(super) struct Stdout;

impl Destination for Stdout {
    fn name(&self) -> &'static str {
        "stdout"
    }

    fn batch(&self) -> usize {
        1024
    }

    async fn deliver(&self, records: &[Arc<Shipped>]) -> Result<(), AuditError> {
        let mut out = tokio::io::stdout();
        out.write_all(&json_lines(records)).await?;
        out.flush().await?;
        Ok(())
    }
}

/// JSON lines POSTed to `[audit.ship.webhook]`, each body signed:
/// `X-Teamgate-Signature: t=<unix seconds>,sha256=<hex>`, the HMAC-SHA256
/// under the secret of `<t>.<body>` (the time inside, so a captured body
/// cannot be replayed later as new). Receivers deduplicate by record `id`:
/// delivery is at least once.
pub(super) struct Webhook {
    client: reqwest::Client,
    url: String,
    secret: Secret,
    batch: usize,
}

impl Webhook {
    pub(super) fn new(config: &AuditWebhookConfig) -> Result<Self, AuditError> {
        let client = crate::outbound::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(AuditError::Unreachable)?;
        Ok(Self {
            client,
            url: config.url.clone(),
            secret: config.secret.clone(),
            batch: config.batch,
        })
    }
}

impl Destination for Webhook {
    fn name(&self) -> &'static str {
        "webhook"
    }

    fn batch(&self) -> usize {
        self.batch
    }

    async fn deliver(&self, records: &[Arc<Shipped>]) -> Result<(), AuditError> {
        let body = json_lines(records);
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let signed = crate::outbound::signature(self.secret.expose().as_bytes(), unix, &body);
        let reply = (self.client.post(&self.url))
            .header(reqwest::header::CONTENT_TYPE, "application/x-ndjson")
            .header("X-Teamgate-Signature", signed)
            .body(body)
            .send()
            .await
            .map_err(|e| AuditError::Unreachable(e.without_url()))?;
        status_outcome(reply.status())
    }
}

/// OTLP/HTTP log records (protobuf) to `<telemetry.otlp_endpoint>/v1/logs`:
/// one record per audit record, its fields as attributes, its trace id as
/// the record's, so a collector joins it to the call's spans.
pub(super) struct Otlp {
    client: reqwest::Client,
    url: String,
    service: String,
}

impl Otlp {
    pub(super) fn new(endpoint: &str, service: &str) -> Result<Self, AuditError> {
        let client = crate::outbound::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(AuditError::Unreachable)?;
        Ok(Self {
            client,
            url: format!("{}/v1/logs", endpoint.trim_end_matches('/')),
            service: service.to_owned(),
        })
    }

    fn request(&self, records: &[Arc<Shipped>]) -> ExportLogsServiceRequest {
        let text = |s: &str| AnyValue {
            value: Some(any_value::Value::StringValue(s.to_owned())),
        };
        let log_records = records
            .iter()
            .map(|record| log_record(record, text))
            .collect();
        ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                resource: Some(Resource {
                    attributes: vec![KeyValue {
                        key: "service.name".into(),
                        value: Some(text(&self.service)),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                scope_logs: vec![ScopeLogs {
                    scope: Some(InstrumentationScope {
                        name: "teamgate.audit".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                        ..Default::default()
                    }),
                    log_records,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }
}

/// One audit record as an OTLP log record: INFO, its body the method,
/// target and outcome, every field an attribute under `audit.`.
fn log_record(record: &Shipped, text: impl Fn(&str) -> AnyValue) -> LogRecord {
    let field = |name: &str| {
        record
            .fields
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let attributes = (record.fields.iter())
        .map(|(name, value)| KeyValue {
            key: format!("audit.{name}"),
            value: Some(match value {
                Value::Number(n) => AnyValue {
                    value: Some(any_value::Value::IntValue(n.as_i64().unwrap_or_default())),
                },
                Value::String(s) => text(s),
                other => text(&other.to_string()),
            }),
            ..Default::default()
        })
        .collect();
    let body = format!(
        "{} {} {}",
        field("method"),
        field("target"),
        field("outcome")
    );
    let nanos = u64::try_from(record.at_ms).unwrap_or_default() * 1_000_000;
    LogRecord {
        time_unix_nano: nanos,
        observed_time_unix_nano: nanos,
        severity_number: 9, // INFO
        severity_text: "INFO".into(),
        body: Some(text(body.trim())),
        attributes,
        trace_id: hex::decode(field("traceId"))
            .ok()
            .filter(|id| id.len() == 16)
            .unwrap_or_default(),
        ..Default::default()
    }
}

impl Destination for Otlp {
    fn name(&self) -> &'static str {
        "otlp"
    }

    fn batch(&self) -> usize {
        512
    }

    async fn deliver(&self, records: &[Arc<Shipped>]) -> Result<(), AuditError> {
        let body = self.request(records).encode_to_vec();
        let reply = (self.client.post(&self.url))
            .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
            .body(body)
            .send()
            .await
            .map_err(|e| AuditError::Unreachable(e.without_url()))?;
        status_outcome(reply.status())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_covers_the_time_and_the_body() {
        use crate::outbound::signature;
        let one = signature(b"k-0123456789abcdef", 1_700_000_000, b"{\"id\":\"a\"}\n");
        assert!(one.starts_with("t=1700000000,sha256="));
        assert_eq!(one.len(), "t=1700000000,sha256=".len() + 64);
        assert_ne!(
            one,
            signature(b"k-0123456789abcdef", 1_700_000_001, b"{\"id\":\"a\"}\n")
        );
        assert_ne!(
            one,
            signature(b"k-0123456789abcdef", 1_700_000_000, b"{\"id\":\"b\"}\n")
        );
        assert_ne!(
            one,
            signature(b"another-key-01234", 1_700_000_000, b"{\"id\":\"a\"}\n")
        );
    }

    #[test]
    fn statuses_split_into_retried_and_refused() {
        assert!(status_outcome(reqwest::StatusCode::NO_CONTENT).is_ok());
        for retried in [408, 429, 500, 503] {
            let status = reqwest::StatusCode::from_u16(retried).unwrap();
            assert!(matches!(status_outcome(status), Err(AuditError::Status(_))));
        }
        for refused in [400, 401, 404, 413] {
            let status = reqwest::StatusCode::from_u16(refused).unwrap();
            assert!(matches!(
                status_outcome(status),
                Err(AuditError::Refused(_))
            ));
        }
    }
}
