//! Audit records in PostgreSQL's `COPY ... FROM STDIN` text format.
//!
//! Every call writes one audit row, so on PostgreSQL the rows' cost lands on
//! the database process, which shares the machine with teamgate. A multi-row
//! INSERT makes PostgreSQL set up an executor per statement and evaluate one
//! parameter expression per bound value (14 per row); COPY hands it rows it
//! splits and converts directly, one statement per batch. The profile of the
//! benchmark showed the difference (see BENCHMARKS.md).

use std::borrow::Cow;

use super::AuditRecord;

/// The statement that starts a batch; the column order is `encode`'s.
pub(super) const STATEMENT: &str = "copy audit (id, at_ms, user_name, token_id, issuer, subject, \
    session_id, protocol_version, method, target, args_digest, outcome, latency_ms, trace_id) \
    from stdin";

/// Appends `records` as COPY text rows: fields split by tabs, rows ended by
/// newlines, with the backslash escapes the format defines.
pub(super) fn encode(records: &[AuditRecord], out: &mut Vec<u8>) {
    for r in records {
        text(out, &r.id);
        number(out, r.at_ms);
        for field in [
            &r.user,
            &r.token_id,
            &r.issuer,
            &r.subject,
            &r.session_id,
            &r.protocol_version,
            &r.method,
            &r.target,
            &r.args_digest,
            &r.outcome,
        ] {
            text(out, field);
        }
        number(out, r.latency_ms);
        text(out, &r.trace_id);
        // Replace the last field's tab with the row's end.
        *out.last_mut().expect("a row was written") = b'\n';
    }
}

fn number(out: &mut Vec<u8>, value: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
    out.push(b'\t');
}

/// One text field and its separator. Backslash, tab, newline and carriage
/// return are escaped; everything else, multi-byte UTF-8 included, is copied.
fn text(out: &mut Vec<u8>, value: &str) {
    let value = storable(value);
    let bytes = value.as_bytes();
    let mut start = 0;
    for (at, byte) in bytes.iter().enumerate() {
        let escaped: &[u8] = match byte {
            b'\\' => b"\\\\",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
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

/// `records` with `storable` text, copied only when one of them needs it.
pub(super) fn storable_records(records: &[AuditRecord]) -> Cow<'_, [AuditRecord]> {
    let has_nul = |r: &AuditRecord| texts(r).into_iter().any(|field| field.contains('\0'));
    if !records.iter().any(has_nul) {
        return Cow::Borrowed(records);
    }
    let mut records = records.to_vec();
    for field in records.iter_mut().flat_map(texts_mut) {
        if let Cow::Owned(cleaned) = storable(field) {
            *field = cleaned;
        }
    }
    Cow::Owned(records)
}

/// A record's text fields (in no particular order).
fn texts(r: &AuditRecord) -> [&String; 12] {
    let AuditRecord {
        id,
        at_ms: _,
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
        latency_ms: _,
        trace_id,
    } = r;
    [
        id,
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
        trace_id,
    ]
}

fn texts_mut(r: &mut AuditRecord) -> [&mut String; 12] {
    let AuditRecord {
        id,
        at_ms: _,
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
        latency_ms: _,
        trace_id,
    } = r;
    [
        id,
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
        trace_id,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(target: &str) -> AuditRecord {
        AuditRecord {
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
            latency_ms: -3,
            trace_id: "t".into(),
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
