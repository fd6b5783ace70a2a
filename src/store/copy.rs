//! Audit records in PostgreSQL's `COPY ... FROM STDIN` text format.
//!
//! Every call writes one audit row, so on PostgreSQL the rows' cost lands on
//! the database process, which shares the machine with teamgate. A multi-row
//! INSERT makes PostgreSQL set up an executor per statement and evaluate one
//! parameter expression per bound value (14 per row); COPY hands it rows it
//! splits and converts directly, one statement per batch. The profile of the
//! benchmark showed the difference (see BENCHMARKS.md).

use std::borrow::Cow;

use super::{
    AuditRecord,
    audit::{Field, columns},
};

/// The statement that starts a batch; the column order is `encode`'s.
pub(super) const STATEMENT: &str = concat!("copy audit (", columns!(), ") from stdin");

/// Records per COPY message (see `Store::append_audit`).
pub(super) const CHUNK: usize = 256;

/// Appends `records` as COPY text rows: fields split by tabs, rows ended by
/// newlines, with the backslash escapes the format defines.
pub(super) fn encode(records: &[AuditRecord], out: &mut Vec<u8>) {
    for r in records {
        for field in r.fields() {
            match field {
                Field::Text(value) => text(out, value),
                Field::Number(value) => number(out, value),
            }
        }
        // Replace the last field's tab with the row's end.
        *out.last_mut().expect("a row was written") = b'\n';
    }
}

fn number(out: &mut Vec<u8>, value: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
    out.push(b'\t');
}

/// One text field and its separator. Backslash, tab, newline and carriage
/// return are escaped and NUL becomes U+FFFD (see `storable`), in the same
/// pass; everything else, multi-byte UTF-8 included, is copied.
fn text(out: &mut Vec<u8>, value: &str) {
    let bytes = value.as_bytes();
    let mut start = 0;
    for (at, byte) in bytes.iter().enumerate() {
        let escaped: &[u8] = match byte {
            b'\\' => b"\\\\",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\0' => "\u{FFFD}".as_bytes(),
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..at]);
        out.extend_from_slice(escaped);
        start = at + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'\t');
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn record(target: &str) -> AuditRecord {
        AuditRecord {
            latency_ms: -3,
            trace_id: "t".into(),
            ..AuditRecord::example(target)
        }
    }

    #[test]
    fn rows_have_fourteen_fields_and_escape_what_the_format_reserves() {
        let mut out = Vec::new();
        encode(&[record("a\tb\nc\rd\\e\0f é"), record("x")], &mut out);
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<&str> = text.split_terminator('\n').collect();
        assert_eq!(rows.len(), 2);
        for row in &rows {
            assert_eq!(row.split('\t').count(), 14, "{row}");
        }
        assert_eq!(
            rows[0],
            "0000000000001-abc\t1\tann\t\t\t\t\t2026-07-28\ttools/call\t\
             a\\tb\\nc\\rd\\\\e\u{FFFD}f é\t\tok\t-3\tt"
        );
        assert!(text.ends_with("\tok\t-3\tt\n"));
    }

    #[test]
    fn clean_text_is_not_copied() {
        assert!(matches!(storable("echo"), Cow::Borrowed("echo")));
        assert_eq!(storable("a\0b"), "a\u{FFFD}b");
    }
}
