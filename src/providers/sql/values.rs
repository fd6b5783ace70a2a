//! A database row as a JSON object: column name → value. PostgreSQL's common
//! types as JSON (numeric as a string, so no digit is lost; timestamps as
//! RFC 3339; json as JSON; bytea as base64); SQLite's by storage class.

use base64::Engine;
use serde_json::{Map, Value};
use sqlx::types::chrono;
use sqlx::{Column, Row, TypeInfo, ValueRef, postgres::PgRow, sqlite::SqliteRow};

fn base64(bytes: &[u8]) -> Value {
    base64::engine::general_purpose::STANDARD
        .encode(bytes)
        .into()
}

/// A PostgreSQL row; a type it does not know is its text, else base64.
pub(super) fn pg_row(row: &PgRow) -> Map<String, Value> {
    let mut object = Map::new();
    for (i, column) in row.columns().iter().enumerate() {
        object.insert(column.name().to_owned(), pg_value(row, i));
    }
    object
}

fn pg_value(row: &PgRow, i: usize) -> Value {
    let Ok(raw) = row.try_get_raw(i) else {
        return Value::Null;
    };
    if raw.is_null() {
        return Value::Null;
    }
    let kind = raw.type_info().name().to_owned();
    let get = |i| -> Result<Value, sqlx::Error> {
        Ok(match kind.as_str() {
            "BOOL" => row.try_get::<bool, _>(i)?.into(),
            "INT2" => row.try_get::<i16, _>(i)?.into(),
            "INT4" => row.try_get::<i32, _>(i)?.into(),
            "INT8" => row.try_get::<i64, _>(i)?.into(),
            "OID" => row.try_get::<sqlx::postgres::types::Oid, _>(i)?.0.into(),
            "FLOAT4" => row.try_get::<f32, _>(i)?.into(),
            "FLOAT8" => row.try_get::<f64, _>(i)?.into(),
            "NUMERIC" => {
                let raw = row.try_get_raw(i)?;
                numeric(raw.as_bytes().map_err(sqlx::Error::Decode)?).into()
            }
            "JSON" | "JSONB" => row.try_get::<sqlx::types::JsonValue, _>(i)?,
            "BYTEA" => base64(&row.try_get::<Vec<u8>, _>(i)?),
            "TIMESTAMPTZ" => (row.try_get::<chrono::DateTime<chrono::Utc>, _>(i)?)
                .to_rfc3339()
                .into(),
            "TIMESTAMP" => (row.try_get::<chrono::NaiveDateTime, _>(i)?)
                .format("%Y-%m-%dT%H:%M:%S%.f")
                .to_string()
                .into(),
            "DATE" => row.try_get::<chrono::NaiveDate, _>(i)?.to_string().into(),
            "TIME" => row.try_get::<chrono::NaiveTime, _>(i)?.to_string().into(),
            "UUID" => {
                let raw = row.try_get_raw(i)?;
                let bytes = raw.as_bytes().map_err(sqlx::Error::Decode)?;
                uuid::Uuid::from_slice(bytes)
                    .map_err(|e| sqlx::Error::Decode(e.into()))?
                    .to_string()
                    .into()
            }
            "TEXT[]" | "VARCHAR[]" => row.try_get::<Vec<String>, _>(i)?.into(),
            "INT4[]" => row.try_get::<Vec<i32>, _>(i)?.into(),
            "INT8[]" => row.try_get::<Vec<i64>, _>(i)?.into(),
            // text, varchar, name, bpchar, enums and others sent as text.
            _ => {
                let raw = row.try_get_raw(i)?;
                let bytes = raw.as_bytes().map_err(sqlx::Error::Decode)?;
                match std::str::from_utf8(bytes) {
                    Ok(text) => text.into(),
                    Err(_) => base64(bytes),
                }
            }
        })
    };
    get(i).unwrap_or_else(|e| format!("<{kind}: {e}>").into())
}

/// PostgreSQL's binary NUMERIC as decimal text: a header (digit count,
/// weight of the first digit, sign, display scale) and base-10000 digits.
fn numeric(bytes: &[u8]) -> String {
    let word = |at: usize| -> i32 {
        bytes
            .get(at..at + 2)
            .map_or(0, |b| i32::from(i16::from_be_bytes([b[0], b[1]])))
    };
    let (count, weight, sign, scale) = (word(0), word(2), word(4) as u16, word(6));
    match sign {
        0xC000 => return "NaN".into(),
        0xD000 => return "Infinity".into(),
        0xF000 => return "-Infinity".into(),
        _ => {}
    }
    let digit = |k: i32| {
        if k < count {
            word(8 + 2 * k as usize)
        } else {
            0
        }
    };
    let mut text = String::new();
    if sign == 0x4000 {
        text.push('-');
    }
    if weight < 0 {
        text.push('0');
    } else {
        text.push_str(&digit(0).to_string());
        for k in 1..=weight {
            text.push_str(&format!("{:04}", digit(k)));
        }
    }
    if scale > 0 {
        let mut fraction = String::new();
        let mut k = weight + 1;
        while (fraction.len() as i32) < scale {
            fraction.push_str(&format!("{:04}", if k < 0 { 0 } else { digit(k) }));
            k += 1;
        }
        fraction.truncate(scale as usize);
        text.push('.');
        text.push_str(&fraction);
    }
    text
}

/// A SQLite row, by each value's own storage class.
pub(super) fn sqlite_row(row: &SqliteRow) -> Map<String, Value> {
    let mut object = Map::new();
    for (i, column) in row.columns().iter().enumerate() {
        let value = match row.try_get_raw(i) {
            Ok(raw) if !raw.is_null() => {
                let kind = raw.type_info().name().to_owned();
                let value = match kind.as_str() {
                    "INTEGER" | "BOOLEAN" => row.try_get::<i64, _>(i).map(Value::from),
                    "REAL" => row.try_get::<f64, _>(i).map(Value::from),
                    "BLOB" => row.try_get::<Vec<u8>, _>(i).map(|b| base64(&b)),
                    _ => row.try_get_unchecked::<String, _>(i).map(Value::from),
                };
                value.unwrap_or_else(|e| format!("<{kind}: {e}>").into())
            }
            _ => Value::Null,
        };
        object.insert(column.name().to_owned(), value);
    }
    object
}

#[cfg(test)]
mod tests {
    use super::numeric;

    fn encode(count: i16, weight: i16, sign: u16, scale: u16, digits: &[i16]) -> Vec<u8> {
        let mut out = Vec::new();
        for w in [count, weight, sign as i16, scale as i16]
            .iter()
            .chain(digits)
        {
            out.extend_from_slice(&w.to_be_bytes());
        }
        out
    }

    #[test]
    fn numeric_is_read_digit_for_digit() {
        // 12345.678 = [1, 2345, 6780], weight 1, scale 3.
        assert_eq!(numeric(&encode(3, 1, 0, 3, &[1, 2345, 6780])), "12345.678");
        assert_eq!(numeric(&encode(1, -1, 0x4000, 2, &[500])), "-0.05");
        assert_eq!(numeric(&encode(1, 1, 0, 0, &[7])), "70000");
        assert_eq!(numeric(&encode(0, 0, 0, 2, &[])), "0.00");
        assert_eq!(numeric(&encode(1, -2, 0, 6, &[1200])), "0.000012");
    }
}
