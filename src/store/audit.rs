//! The audit table: appended in batches, read by `teamgate audit tail`,
//! trimmed by retention.

use std::borrow::Cow;

use sqlx::Row;

use super::{Store, StoreError, batch, query_error};

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    pub id: String,
    pub at_ms: i64,
    pub user: String,
    pub token_id: String,
    pub issuer: String,
    pub subject: String,
    pub session_id: String,
    pub protocol_version: String,
    pub method: String,
    pub target: String,
    pub args_digest: String,
    pub outcome: String,
    pub latency_ms: i64,
    pub trace_id: String,
    /// The upstream server that served the call; empty for teamgate's own.
    pub upstream: String,
    /// Which credential kind served an upstream call (`shared`, `member`,
    /// `fallback`); empty when none was used. Never the value.
    pub credential: String,
    /// Where the action came from (the client's address); empty when unknown.
    pub address: String,
    /// The toolset endpoint the call came through; empty for the main one.
    pub endpoint: String,
}

/// The audit table's columns, in the order `AuditRecord::fields` gives a
/// record's values.
pub(super) const COLUMNS: &str = "id, at_ms, user_name, token_id, issuer, subject, session_id, \
    protocol_version, method, target, args_digest, outcome, latency_ms, trace_id, upstream, address, credential, endpoint";
pub(super) const FIELDS: usize = 18;

/// One column's value.
pub(super) enum Field<'a> {
    Text(&'a str),
    Number(i64),
}

impl AuditRecord {
    /// The record's values in `COLUMNS` order: the one place that pairs
    /// fields with columns.
    pub(super) fn fields(&self) -> [Field<'_>; FIELDS] {
        use Field::{Number, Text};
        let AuditRecord {
            id,
            at_ms,
            user,
            token_id,
            issuer,
            subject,
            session_id,
            protocol_version,
            method,
            target,
            args_digest,
            outcome,
            latency_ms,
            trace_id,
            upstream,
            address,
            credential,
            endpoint,
        } = self;
        [
            Text(id),
            Number(*at_ms),
            Text(user),
            Text(token_id),
            Text(issuer),
            Text(subject),
            Text(session_id),
            Text(protocol_version),
            Text(method),
            Text(target),
            Text(args_digest),
            Text(outcome),
            Number(*latency_ms),
            Text(trace_id),
            Text(upstream),
            Text(address),
            Text(credential),
            Text(endpoint),
        ]
    }

    /// A record with fixed values, for tests to adjust.
    #[cfg(test)]
    pub(crate) fn example(target: &str) -> Self {
        Self {
            id: "0000000000001-abc".into(),
            at_ms: 1,
            user: "ann".into(),
            token_id: String::new(),
            issuer: String::new(),
            subject: String::new(),
            session_id: String::new(),
            protocol_version: "2026-07-28".into(),
            method: "tools/call".into(),
            target: target.into(),
            args_digest: String::new(),
            outcome: "ok".into(),
            latency_ms: 0,
            trace_id: String::new(),
            upstream: String::new(),
            address: String::new(),
            credential: String::new(),
            endpoint: String::new(),
        }
    }
}
/// A new record id: its time, zero-padded so ids sort as their times do,
/// then a random part that keeps ids unique across replicas.
pub fn record_id(at_ms: i64) -> String {
    // One allocation: this runs on every audited call.
    let mut id = String::with_capacity(32);
    push_time_prefix(&mut id, at_ms);
    id.push('-');
    let mut random = [0u8; 12];
    hex::encode_to_slice(rand::random::<[u8; 6]>(), &mut random).expect("12 hex digits");
    id.push_str(std::str::from_utf8(&random).expect("hex is ASCII"));
    id
}

fn push_time_prefix(id: &mut String, at_ms: i64) {
    use std::fmt::Write as _;
    let _ = write!(id, "{at_ms:013}");
}

/// Rows per insert statement at most (a power of two, see batch.rs).
const MAX_ROWS: usize = 64;

/// PostgreSQL text cannot hold NUL, and a batch holding one would fail again
/// on every retry (the audit queue would fill and calls be refused), so a
/// client-chosen name with NUL in it is stored with U+FFFD instead; SQLite
/// stores the same, so both backends keep the same trail.
pub(super) fn storable(value: &str) -> Cow<'_, str> {
    if value.contains('\0') {
        Cow::Owned(value.replace('\0', "\u{FFFD}"))
    } else {
        Cow::Borrowed(value)
    }
}

/// The smallest record id at `at_ms`, for time ranges on the primary key.
fn id_at(at_ms: i64) -> String {
    let mut id = String::with_capacity(13);
    push_time_prefix(&mut id, at_ms.max(0));
    id
}

fn read_record(row: &sqlx::any::AnyRow) -> Result<AuditRecord, sqlx::Error> {
    Ok(AuditRecord {
        id: row.try_get("id")?,
        at_ms: row.try_get("at_ms")?,
        user: row.try_get("user_name")?,
        token_id: row.try_get("token_id")?,
        issuer: row.try_get("issuer")?,
        subject: row.try_get("subject")?,
        session_id: row.try_get("session_id")?,
        protocol_version: row.try_get("protocol_version")?,
        method: row.try_get("method")?,
        target: row.try_get("target")?,
        args_digest: row.try_get("args_digest")?,
        outcome: row.try_get("outcome")?,
        latency_ms: row.try_get("latency_ms")?,
        trace_id: row.try_get("trace_id")?,
        upstream: row.try_get("upstream")?,
        address: row.try_get("address")?,
        credential: row.try_get("credential")?,
        endpoint: row.try_get("endpoint")?,
    })
}

/// What the portal's audit page filters on; `None` matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    pub user: Option<String>,
    pub target: Option<String>,
    pub outcome: Option<String>,
    pub since_ms: i64,
    pub until_ms: Option<i64>,
    pub limit: i64,
}

impl Store {
    /// The newest records matching `filter`, newest first.
    pub async fn audit_search(&self, filter: &AuditFilter) -> Result<Vec<AuditRecord>, StoreError> {
        let mut sql = format!("select {COLUMNS} from audit where id >= $1");
        let mut texts = Vec::new();
        for (column, value) in [
            ("user_name", &filter.user),
            ("target", &filter.target),
            ("outcome", &filter.outcome),
        ] {
            if let Some(value) = value {
                texts.push(value.clone());
                sql.push_str(&format!(" and {column} = ${}", texts.len() + 1));
            }
        }
        if filter.until_ms.is_some() {
            sql.push_str(&format!(" and id < ${}", texts.len() + 2));
        }
        let limit_at = texts.len() + 2 + usize::from(filter.until_ms.is_some());
        sql.push_str(&format!(" order by id desc limit ${limit_at}"));
        let mut query = sqlx::query(&sql).bind(id_at(filter.since_ms));
        for text in texts {
            query = query.bind(text);
        }
        if let Some(until) = filter.until_ms {
            query = query.bind(id_at(until));
        }
        let rows = query
            .bind(filter.limit)
            .fetch_all(self.pool())
            .await
            .map_err(query_error("search the audit log"))?;
        rows.iter()
            .map(read_record)
            .collect::<Result<Vec<_>, _>>()
            .map_err(query_error("search the audit log"))
    }

    /// Appends records all or none, with what they add to the usage
    /// rollups (usage.rs) in the same transaction: on PostgreSQL as one
    /// `COPY` (audit_copy.rs), on SQLite as multi-row inserts.
    pub async fn append_audit(&self, records: &[AuditRecord]) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        match self.copier() {
            Some(copier) => self.copy_audit(copier, records).await,
            None => self.insert_audit(records).await,
        }
    }

    /// Multi-row inserts in one transaction, whose statement texts repeat
    /// (batch.rs), so each is prepared once.
    async fn insert_audit(&self, records: &[AuditRecord]) -> Result<(), StoreError> {
        let error = query_error("append audit records");
        let mut tx = self.writer().begin().await.map_err(error)?;
        for chunk in batch::chunks(records, MAX_ROWS) {
            static INSERT: batch::Texts = batch::Texts::new();
            let sql = INSERT.get(self.backend(), chunk.len(), || {
                format!(
                    "insert into audit ({COLUMNS}) values {}",
                    batch::values(self.backend(), chunk.len(), FIELDS)
                )
            });
            let mut insert = sqlx::query(&sql);
            for field in chunk.iter().flat_map(AuditRecord::fields) {
                insert = match field {
                    // Borrowed from the records unless a NUL had to go.
                    Field::Text(text) => match storable(text) {
                        Cow::Borrowed(text) => insert.bind(text),
                        Cow::Owned(text) => insert.bind(text),
                    },
                    Field::Number(number) => insert.bind(number),
                };
            }
            insert.execute(&mut *tx).await.map_err(error)?;
        }
        // Last, so the rows it shares with other batches stay locked briefly.
        self.add_usage::<sqlx::Any>(&mut tx, records)
            .await
            .map_err(query_error("roll up usage"))?;
        tx.commit().await.map_err(error)
    }

    /// The newest `limit` records since `since_ms`, optionally of one user, oldest first.
    pub async fn audit_tail(
        &self,
        user: Option<&str>,
        since_ms: i64,
        limit: i64,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let with_user = format!(
            "select {COLUMNS} from audit where at_ms >= $1 and user_name = $2 order by at_ms desc, id desc limit $3"
        );
        // Without a user, the primary key serves: ids sort by time.
        let everyone =
            format!("select {COLUMNS} from audit where id >= $1 order by id desc limit $2");
        let query = match user {
            Some(user) => sqlx::query(&with_user)
                .bind(since_ms)
                .bind(user.to_owned())
                .bind(limit),
            None => sqlx::query(&everyone).bind(id_at(since_ms)).bind(limit),
        };
        let rows = query
            .fetch_all(self.pool())
            .await
            .map_err(query_error("read the audit log"))?;
        let mut records = rows
            .iter()
            .map(read_record)
            .collect::<Result<Vec<_>, _>>()
            .map_err(query_error("read the audit log"))?;
        records.reverse();
        Ok(records)
    }

    pub async fn audit_count(&self) -> Result<i64, StoreError> {
        let row = sqlx::query("select count(*) from audit")
            .fetch_one(self.pool())
            .await
            .map_err(query_error("count audit records"))?;
        row.try_get::<i64, _>(0)
            .map_err(query_error("count audit records"))
    }

    /// Deletes records older than `before_ms` (an id range on the primary key).
    pub async fn purge_audit(&self, before_ms: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("delete from audit where id < $1")
            .bind(id_at(before_ms))
            .execute(self.writer())
            .await
            .map_err(query_error("apply audit retention"))?;
        Ok(done.rows_affected())
    }
}
