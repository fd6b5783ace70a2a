//! PostgreSQL's audit append: a batch's records as one binary `COPY`, in a
//! transaction that also adds their usage rollups. Per row the database
//! spends about half the CPU it spends on a multi-row insert, which sets up
//! and evaluates each `VALUES` row's expressions apart (BENCHMARKS.md,
//! issue 67, sixteenth session). sqlx's `Any` driver has no `COPY`, so
//! PostgreSQL's audit writers hold a pool of their own (`Store::copier`).

use std::sync::OnceLock;

use sqlx::{PgPool, Postgres};

use super::{
    AuditRecord, Store, StoreError,
    audit::{COLUMNS, FIELDS, Field, storable},
    query_error,
};

/// The binary format's header: its signature, no flags, no extension.
const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// A field count of -1 ends the data.
const TRAILER: [u8; 2] = (-1i16).to_be_bytes();

impl Store {
    /// Appends `records` all or none, with their usage rollups.
    pub(super) async fn copy_audit(
        &self,
        copier: &PgPool,
        records: &[AuditRecord],
    ) -> Result<(), StoreError> {
        let error = query_error("append audit records");
        let data = encode(records).map_err(error)?;
        static STATEMENT: OnceLock<String> = OnceLock::new();
        let statement =
            STATEMENT.get_or_init(|| format!("copy audit ({COLUMNS}) from stdin (format binary)"));
        let mut tx = copier.begin().await.map_err(error)?;
        let mut copy = tx.copy_in_raw(statement).await.map_err(error)?;
        copy.send(data).await.map_err(error)?;
        copy.finish().await.map_err(error)?;
        // Last, so the rows it shares with other batches stay locked briefly.
        self.add_usage::<Postgres>(&mut tx, records)
            .await
            .map_err(query_error("roll up usage"))?;
        tx.commit().await.map_err(error)
    }
}

/// The records in `COPY`'s binary format: per row its field count, then
/// each field's length and bytes (text as UTF-8, numbers as big-endian
/// 64-bit integers).
fn encode(records: &[AuditRecord]) -> Result<Vec<u8>, sqlx::Error> {
    let field_count = (FIELDS as i16).to_be_bytes();
    let mut data = Vec::with_capacity(HEADER.len() + records.len() * 320 + TRAILER.len());
    data.extend_from_slice(HEADER);
    for record in records {
        data.extend_from_slice(&field_count);
        for field in record.fields() {
            match field {
                Field::Text(text) => {
                    let text = storable(text);
                    let length = i32::try_from(text.len()).map_err(|_| {
                        sqlx::Error::Encode("an audit field longer than 2 GiB".into())
                    })?;
                    data.extend_from_slice(&length.to_be_bytes());
                    data.extend_from_slice(text.as_bytes());
                }
                Field::Number(number) => {
                    data.extend_from_slice(&8i32.to_be_bytes());
                    data.extend_from_slice(&number.to_be_bytes());
                }
            }
        }
    }
    data.extend_from_slice(&TRAILER);
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_framed_as_the_binary_format_says() {
        let mut record = AuditRecord::example("echo");
        record.user = "a\0b".into();
        let data = encode(&[record]).unwrap();
        assert!(data.starts_with(b"PGCOPY\n\xff\r\n\0"));
        assert!(data.ends_with(&[0xff, 0xff]));
        let row = &data[HEADER.len()..data.len() - 2];
        assert_eq!(&row[..2], &18i16.to_be_bytes());
        // The id: its length, then its bytes.
        let id = "0000000000001-abc";
        assert_eq!(&row[2..6], &(id.len() as i32).to_be_bytes());
        assert_eq!(&row[6..6 + id.len()], id.as_bytes());
        // at_ms: eight bytes, big-endian.
        let at = &row[6 + id.len()..];
        assert_eq!(&at[..12], &[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1]);
        // The user, with its NUL stored as U+FFFD as on SQLite.
        let user = "a\u{FFFD}b";
        assert_eq!(&at[12..16], &(user.len() as i32).to_be_bytes());
        assert_eq!(&at[16..16 + user.len()], user.as_bytes());
    }
}
