//! Multi-row inserts that stay cheap on both backends.
//!
//! - Statement text depends only on the row count, and batches are cut into
//!   power-of-two row counts, so each connection prepares at most a handful
//!   of statements once and reuses them (sqlx caches them by text).
//! - SQLite gets anonymous `?` placeholders: it resolves each numbered `$n`
//!   by scanning every parameter name, which is quadratic in a wide insert.

use super::Backend;

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
    fn placeholders_follow_the_backend() {
        assert_eq!(values(Backend::Sqlite, 2, 2), "(?, ?), (?, ?)");
        assert_eq!(values(Backend::Postgres, 2, 2), "($1, $2), ($3, $4)");
    }
}
