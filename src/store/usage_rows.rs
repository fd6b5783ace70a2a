//! The usage rollups' rows (issue 64 part 2): added in the audit batch's
//! transaction, read per range by the portal's usage pages, purged per
//! grain. What a row counts is `usage.rs`.
//!
//! Batches written at once (PostgreSQL takes `Store::audit_writers` of
//! them) each add to a shard of their own: rows they shared would have
//! each wait for the other's commit, which undoes PostgreSQL's grouping of
//! commits. Reads sum the shards; the purge folds the shards of buckets
//! past into shard 0, so a year of days keeps one row per key.

use std::sync::atomic::{AtomicUsize, Ordering};

use sqlx::{Database, Encode, Executor, IntoArguments, Row, Type};

use super::{
    AuditRecord, Store, StoreError, batch, query_error,
    usage::{Dimension, Grain, LATENCY_BUCKETS, RowKey, Tally, rollup},
};

/// Rows per upsert statement at most (a power of two, see batch.rs).
const MAX_ROWS: usize = 64;
const FIELDS: usize = 8 + LATENCY_BUCKETS;

/// The next batch's shard, in turn, modulo the batches written at once.
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

/// `name = usage_rollups.name + excluded.name` for every counted column.
fn additions() -> String {
    ["calls", "errors"]
        .into_iter()
        .map(str::to_owned)
        .chain(histogram_columns())
        .map(|c| format!("{c} = usage_rollups.{c} + excluded.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

const KEY: &str = "grain_ms, bucket_ms, dimension, key, sub";

fn histogram_columns() -> impl Iterator<Item = String> {
    (0..LATENCY_BUCKETS).map(|i| format!("h{i}"))
}

/// The summed columns of the series and table reads.
fn sums() -> String {
    std::iter::once("calls".to_owned())
        .chain(std::iter::once("errors".to_owned()))
        .chain(histogram_columns())
        .map(|c| format!("cast(sum({c}) as bigint) as {c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn read_tally(row: &sqlx::any::AnyRow) -> Result<Tally, sqlx::Error> {
    let mut tally = Tally {
        calls: row.try_get("calls")?,
        errors: row.try_get("errors")?,
        ..Tally::default()
    };
    for (i, slot) in tally.latency.iter_mut().enumerate() {
        *slot = row.try_get(format!("h{i}").as_str())?;
    }
    Ok(tally)
}

/// One line of a usage table: a key (and a member's tool) and its tally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRow {
    pub key: String,
    pub sub: String,
    pub tally: Tally,
}

impl Store {
    /// Adds what `records` count to the rollups, inside the audit batch's
    /// transaction on `tx`: a few upserts per batch, not one per record.
    /// Over either driver: sqlx's `Any`, or PostgreSQL's own where the
    /// records went in as a `COPY` (audit_copy.rs).
    pub(super) async fn add_usage<DB>(
        &self,
        tx: &mut DB::Connection,
        records: &[AuditRecord],
    ) -> Result<(), sqlx::Error>
    where
        DB: Database,
        for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
        for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
        for<'q> i64: Encode<'q, DB> + Type<DB>,
        for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    {
        static UPSERT: batch::Texts = batch::Texts::new();
        let rows: Vec<(RowKey, Tally)> = rollup(records).into_iter().collect();
        let shard = (NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % self.audit_writers()) as i64;
        for chunk in batch::chunks(&rows, MAX_ROWS) {
            let sql = UPSERT.get(self.backend(), chunk.len(), || {
                format!(
                    "insert into usage_rollups ({KEY}, shard, calls, errors, {}) \
                     values {} on conflict ({KEY}, shard) do update set {}",
                    histogram_columns().collect::<Vec<_>>().join(", "),
                    batch::values(self.backend(), chunk.len(), FIELDS),
                    additions(),
                )
            });
            let mut upsert = sqlx::query::<DB>(&sql);
            for ((grain, bucket, dimension, key, sub), tally) in chunk {
                upsert = upsert
                    .bind(*grain)
                    .bind(*bucket)
                    .bind(dimension.label())
                    .bind(key.as_str())
                    .bind(sub.as_str())
                    .bind(shard)
                    .bind(tally.calls)
                    .bind(tally.errors);
                for count in tally.latency {
                    upsert = upsert.bind(count);
                }
            }
            upsert.execute(&mut *tx).await?;
        }
        Ok(())
    }

    /// Calls and errors per bucket of `grain` from `since_ms` on, of one
    /// member or (`None`) everyone, oldest first; buckets without calls
    /// are absent.
    pub async fn usage_series(
        &self,
        grain: Grain,
        since_ms: i64,
        member: Option<&str>,
    ) -> Result<Vec<(i64, Tally)>, StoreError> {
        let error = query_error("read the usage series");
        let sql = format!(
            "select bucket_ms, {} from usage_rollups where grain_ms = $1 and bucket_ms >= $2 \
             and dimension = 'member'{} group by bucket_ms order by bucket_ms",
            sums(),
            if member.is_some() {
                " and key = $3"
            } else {
                ""
            },
        );
        let mut query = sqlx::query(&sql).bind(grain.ms()).bind(since_ms);
        if let Some(member) = member {
            query = query.bind(member);
        }
        let rows = query.fetch_all(self.pool()).await.map_err(error)?;
        rows.iter()
            .map(|row| Ok((row.try_get("bucket_ms")?, read_tally(row)?)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(error)
    }

    /// The tally of each key of `dimension` over the buckets of `grain` from
    /// `since_ms` on, most calls first; only `key`'s rows when given (a
    /// member's own tools).
    pub async fn usage_table(
        &self,
        grain: Grain,
        since_ms: i64,
        dimension: Dimension,
        key: Option<&str>,
    ) -> Result<Vec<UsageRow>, StoreError> {
        let error = query_error("read the usage table");
        let sql = format!(
            "select key, sub, {} from usage_rollups where grain_ms = $1 and bucket_ms >= $2 \
             and dimension = $3{} group by key, sub",
            sums(),
            if key.is_some() { " and key = $4" } else { "" },
        );
        let mut query = sqlx::query(&sql)
            .bind(grain.ms())
            .bind(since_ms)
            .bind(dimension.label());
        if let Some(key) = key {
            query = query.bind(key);
        }
        let rows = query.fetch_all(self.pool()).await.map_err(error)?;
        let mut table = rows
            .iter()
            .map(|row| {
                Ok(UsageRow {
                    key: row.try_get("key")?,
                    sub: row.try_get("sub")?,
                    tally: read_tally(row)?,
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()
            .map_err(error)?;
        table.sort_by(|a, b| (b.tally.calls, &a.key, &a.sub).cmp(&(a.tally.calls, &b.key, &b.sub)));
        Ok(table)
    }

    /// Deletes each grain's buckets older than it is kept, as of `now_ms`,
    /// and folds the shards of the buckets before the current one.
    pub async fn purge_usage(&self, now_ms: i64) -> Result<u64, StoreError> {
        if self.audit_writers() > 1 {
            for grain in Grain::ALL {
                self.fold_usage(grain, grain.bucket(now_ms)).await?;
            }
        }
        let mut deleted = 0;
        for grain in Grain::ALL {
            let done =
                sqlx::query("delete from usage_rollups where grain_ms = $1 and bucket_ms < $2")
                    .bind(grain.ms())
                    .bind(now_ms - grain.kept_ms())
                    .execute(self.writer())
                    .await
                    .map_err(query_error("purge old usage buckets"))?;
            deleted += done.rows_affected();
        }
        Ok(deleted)
    }

    /// Moves the counts of every shard but 0 of `grain`'s buckets before
    /// `before_ms` into shard 0, in one statement: the rows deleted are the
    /// rows added, even while a late batch writes.
    async fn fold_usage(&self, grain: Grain, before_ms: i64) -> Result<(), StoreError> {
        let columns: Vec<String> = histogram_columns().collect();
        let sql = format!(
            "with moved as (delete from usage_rollups where grain_ms = $1 and bucket_ms < $2 \
             and shard > 0 returning *) \
             insert into usage_rollups ({KEY}, shard, calls, errors, {}) \
             select {KEY}, 0, {} from moved group by {KEY} \
             on conflict ({KEY}, shard) do update set {}",
            columns.join(", "),
            sums(),
            additions(),
        );
        sqlx::query(&sql)
            .bind(grain.ms())
            .bind(before_ms)
            .execute(self.writer())
            .await
            .map_err(query_error("fold usage shards"))?;
        Ok(())
    }
}
