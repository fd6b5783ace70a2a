//! Multi-row inserts that stay cheap on both backends.
//!
//! - Statement text depends only on the row count. Batches of several
//!   statements are cut into power-of-two row counts (`chunks`), so each
//!   connection prepares a handful of statements once and reuses them (sqlx
//!   caches them by text); a writer that sends a small batch as one
//!   statement (sessions.rs) prepares one per row count it meets, at most
//!   its cap. The texts themselves are built once per process (`Texts`): a
//!   batch writer that formats its statement anew for every batch spends
//!   more on the text than on its rows when batches are small.
//! - A batch that fits one statement is that statement, its own transaction
//!   (`Writing`): one round trip to the database (on SQLite one
//!   hand-off to its thread) instead of three (begin, insert, commit).
//!   Larger batches, and those that need a setting first, are their chunks
//!   in one transaction. The audit writer always opens one: its usage
//!   rollups share it.
//! - SQLite gets anonymous `?` placeholders: it resolves each numbered `$n`
//!   by scanning every parameter name, which is quadratic in a wide insert.

use std::{borrow::Cow, sync::OnceLock};

use sqlx::{Any, AnyConnection, AnyPool, Transaction, pool::PoolConnection};

use super::Backend;

/// Row counts a `Texts` keeps a text for: 1 to 64, every writer's cap.
const SLOTS: usize = 64;

/// One statement's texts by backend and row count, each built the first
/// time it is needed: a handful per statement when chunks are powers of two
/// (`chunks`), one per row count met when a batch is one statement.
pub(crate) struct Texts([[OnceLock<String>; SLOTS]; 2]);

impl Texts {
    pub(crate) const fn new() -> Self {
        Self([const { [const { OnceLock::new() }; SLOTS] }; 2])
    }

    /// The text for `rows` rows on `backend`, made by `build` the first
    /// time; a row count of none or past `SLOTS` is built anew each time.
    pub(crate) fn get(
        &self,
        backend: Backend,
        rows: usize,
        build: impl FnOnce() -> String,
    ) -> Cow<'_, str> {
        let Some(slot) = rows.checked_sub(1).filter(|slot| *slot < SLOTS) else {
            return Cow::Owned(build());
        };
        let texts = match backend {
            Backend::Sqlite => &self.0[0],
            Backend::Postgres => &self.0[1],
        };
        Cow::Borrowed(texts[slot].get_or_init(build))
    }
}

/// Where a writer's batch of inserts goes: all its rows in one statement,
/// its own transaction, when they fit `max` and no setting must run first;
/// else `setting` (a `set local ...`) and the rows' chunks (`chunks`) in
/// one transaction. Either way all rows land or none do:
///
/// ```text
/// let mut writing = Writing::begin(writer, rows.len(), MAX_ROWS, None).await?;
/// for chunk in writing.chunks(rows) {
///     insert(chunk).execute(writing.connection()).await?;
/// }
/// writing.finish().await
/// ```
pub(crate) struct Writing {
    to: To,
    max: usize,
}

enum To {
    One(PoolConnection<Any>),
    Many(Transaction<'static, Any>),
}

impl Writing {
    pub(crate) async fn begin(
        writer: &AnyPool,
        rows: usize,
        max: usize,
        setting: Option<&str>,
    ) -> Result<Self, sqlx::Error> {
        if rows <= max && setting.is_none() {
            let to = To::One(writer.acquire().await?);
            return Ok(Self { to, max });
        }
        let mut tx = writer.begin().await?;
        if let Some(setting) = setting {
            sqlx::query(setting).execute(&mut *tx).await?;
        }
        Ok(Self {
            to: To::Many(tx),
            max,
        })
    }

    /// The statements' rows: all of them, or their chunks.
    pub(crate) fn chunks<'r, T>(
        &self,
        rows: &'r [T],
    ) -> impl Iterator<Item = &'r [T]> + use<'r, T> {
        let (whole, rest) = match self.to {
            To::One(_) => (Some(rows).filter(|rows| !rows.is_empty()), &rows[..0]),
            To::Many(_) => (None, rows),
        };
        whole.into_iter().chain(chunks(rest, self.max))
    }

    pub(crate) fn connection(&mut self) -> &mut AnyConnection {
        match &mut self.to {
            To::One(connection) => connection,
            To::Many(tx) => tx,
        }
    }

    pub(crate) async fn finish(self) -> Result<(), sqlx::Error> {
        match self.to {
            To::One(_) => Ok(()),
            To::Many(tx) => tx.commit().await,
        }
    }
}

/// `rows` cut into the chunks `chunk_sizes` gives, one insert statement each.
pub(crate) fn chunks<T>(rows: &[T], max: usize) -> impl Iterator<Item = &[T]> {
    let mut rest = rows;
    chunk_sizes(rows.len(), max).map(move |size| {
        let (chunk, after) = rest.split_at(size);
        rest = after;
        chunk
    })
}

/// Row counts to insert `total` rows in, largest first, none above `max`
/// (a power of two), each a power of two.
fn chunk_sizes(total: usize, max: usize) -> impl Iterator<Item = usize> {
    debug_assert!(max.is_power_of_two());
    let mut left = total;
    std::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        let size = if left >= max {
            max
        } else {
            1 << (usize::BITS - 1 - left.leading_zeros())
        };
        left -= size;
        Some(size)
    })
}

/// `(…), (…)` for `rows` rows of `fields` placeholders each.
pub(crate) fn values(backend: Backend, rows: usize, fields: usize) -> String {
    let mut sql = String::with_capacity(rows * fields * 5);
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        for field in 0..fields {
            if field > 0 {
                sql.push_str(", ");
            }
            match backend {
                Backend::Sqlite => sql.push('?'),
                Backend::Postgres => {
                    sql.push('$');
                    sql.push_str(&(row * fields + field + 1).to_string());
                }
            }
        }
        sql.push(')');
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_powers_of_two_that_add_up() {
        for total in [0, 1, 2, 3, 7, 255, 256, 257, 1000] {
            let sizes: Vec<usize> = chunk_sizes(total, 256).collect();
            assert_eq!(sizes.iter().sum::<usize>(), total);
            assert!(sizes.iter().all(|s| s.is_power_of_two() && *s <= 256));
            assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{sizes:?}");
        }
    }

    #[test]
    fn chunks_cover_the_rows_in_order() {
        let rows: Vec<u32> = (0..100).collect();
        let chunks: Vec<&[u32]> = chunks(&rows, 64).collect();
        let lens: Vec<usize> = chunks.iter().map(|c| c.len()).collect();
        assert_eq!(lens, [64, 32, 4]);
        assert_eq!(chunks.concat(), rows);
    }

    #[test]
    fn texts_are_built_once_per_backend_and_row_count() {
        static TEXTS: Texts = Texts::new();
        let built = std::cell::Cell::new(0);
        let text = |backend, rows| {
            TEXTS
                .get(backend, rows, || {
                    built.set(built.get() + 1);
                    values(backend, rows, 2)
                })
                .into_owned()
        };
        assert_eq!(text(Backend::Sqlite, 2), "(?, ?), (?, ?)");
        assert_eq!(text(Backend::Sqlite, 2), "(?, ?), (?, ?)");
        assert_eq!(built.get(), 1);
        assert_eq!(text(Backend::Postgres, 2), "($1, $2), ($3, $4)");
        assert_eq!(text(Backend::Sqlite, 1), "(?, ?)");
        assert_eq!(built.get(), 3);
        // Any row count up to the slots is kept, powers of two or not.
        assert_eq!(text(Backend::Sqlite, 3), "(?, ?), (?, ?), (?, ?)");
        assert_eq!(text(Backend::Sqlite, 3).len(), 22);
        assert_eq!(text(Backend::Sqlite, SLOTS).matches('?').count(), 128);
        assert_eq!(text(Backend::Sqlite, SLOTS).matches('?').count(), 128);
        assert_eq!(built.get(), 5);
        // Past the slots, or none: built every time, still right.
        assert_eq!(text(Backend::Sqlite, 256).matches('?').count(), 512);
        assert_eq!(text(Backend::Sqlite, 256).matches('?').count(), 512);
        assert_eq!(text(Backend::Sqlite, 0), "");
        assert_eq!(built.get(), 8);
    }

    /// All rows in one statement when they fit and need no setting; else
    /// the setting and the chunks in one transaction, none of it kept when
    /// the transaction is dropped unfinished.
    #[tokio::test]
    async fn a_batch_is_one_statement_when_it_fits_else_a_transaction_of_chunks() {
        sqlx::any::install_default_drivers();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("b.db").display());
        let pool = AnyPool::connect(&url).await.unwrap();
        sqlx::query("create table t (v integer)")
            .execute(&pool)
            .await
            .unwrap();
        let rows: Vec<i64> = (0..100).collect();
        let lens =
            |writing: &Writing, rows| writing.chunks(rows).map(<[i64]>::len).collect::<Vec<_>>();

        let one = Writing::begin(&pool, 3, 64, None).await.unwrap();
        assert!(matches!(one.to, To::One(_)));
        assert_eq!(lens(&one, &rows[..3]), [3]);
        assert_eq!(lens(&one, &rows[..0]), [0usize; 0]);
        one.finish().await.unwrap();

        let insert_all = async |writing: &mut Writing| {
            for chunk in writing.chunks(&rows) {
                let sql = format!(
                    "insert into t (v) values {}",
                    values(Backend::Sqlite, chunk.len(), 1)
                );
                let insert = chunk.iter().fold(sqlx::query(&sql), |q, v| q.bind(*v));
                insert.execute(writing.connection()).await.unwrap();
            }
        };
        let count = async || -> i64 {
            sqlx::query_scalar("select count(*) from t")
                .fetch_one(&pool)
                .await
                .unwrap()
        };
        let mut many = Writing::begin(&pool, 100, 64, None).await.unwrap();
        assert_eq!(lens(&many, &rows), [64, 32, 4]);
        insert_all(&mut many).await;
        many.finish().await.unwrap();
        assert_eq!(count().await, 100);
        let mut unfinished = Writing::begin(&pool, 100, 64, None).await.unwrap();
        insert_all(&mut unfinished).await;
        drop(unfinished);
        assert_eq!(
            count().await,
            100,
            "an unfinished transaction keeps nothing"
        );

        // A setting first: a transaction even for rows that would fit.
        let set = Writing::begin(&pool, 3, 64, Some("pragma cache_size = 100"))
            .await
            .unwrap();
        assert!(matches!(set.to, To::Many(_)));
        assert_eq!(lens(&set, &rows[..3]), [2, 1]);
        set.finish().await.unwrap();
    }

    #[test]
    fn placeholders_follow_the_backend() {
        assert_eq!(values(Backend::Sqlite, 2, 2), "(?, ?), (?, ?)");
        assert_eq!(values(Backend::Postgres, 2, 2), "($1, $2), ($3, $4)");
    }
}
