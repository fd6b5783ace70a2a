//! The forms exact matching misses (issue 59 item 3), found by reducing a
//! text and every form of a secret to a skeleton and comparing those.
//!
//! A text is decoded twice (percent-escapes, `\xHH`, `\uXXXX` and the
//! one-letter backslash escapes: twice, because a result's JSON text
//! escapes the backslash of an escape its strings hold) and then folded:
//! only ASCII letters, in lower case, digits and non-ASCII bytes are kept.
//! So a secret in another case, hex with separators (`45 56`, `45:56`,
//! `\x45`), base64 or base32 wrapped at any column, `\u`-escaped or partly
//! percent-encoded has the skeleton of one of its forms. Each skeleton byte
//! keeps the range of the original text it came from: the original is
//! what gets redacted.

/// Skeletons shorter than this are not searched for: the shortest ones
/// would turn up by chance in long data (a base64 image) and mangle it.
pub(super) const MIN_LEN: usize = 8;

/// A range of the original text, as byte offsets.
type Span = (u32, u32);

/// The skeleton of `text`; with `track`, each byte's span in `text` too.
pub(super) fn skeleton(text: &[u8], track: bool) -> (Vec<u8>, Vec<Span>) {
    let (once, spans_once) = decode(text, track);
    let (twice, spans_twice) = decode(&once, track);
    let mut folded = Vec::with_capacity(twice.len());
    let mut spans = Vec::with_capacity(if track { twice.len() } else { 0 });
    for (i, &byte) in twice.iter().enumerate() {
        let kept = match byte {
            b'A'..=b'Z' => byte.to_ascii_lowercase(),
            b'a'..=b'z' | b'0'..=b'9' | 0x80.. => byte,
            _ => continue,
        };
        folded.push(kept);
        if track {
            // Through both decodings back to the original text.
            let (from, to) = spans_twice[i];
            let start = spans_once[from as usize].0;
            let end = spans_once[to as usize - 1].1;
            spans.push((start, end));
        }
    }
    (folded, spans)
}

/// One decoding pass: each escape becomes the bytes it stands for, each
/// with the span of the escape.
fn decode(input: &[u8], track: bool) -> (Vec<u8>, Vec<Span>) {
    let mut out = Vec::with_capacity(input.len());
    let mut spans = Vec::with_capacity(if track { input.len() } else { 0 });
    let mut at = 0;
    while at < input.len() {
        let (bytes, len, width) = unit(&input[at..]);
        out.extend_from_slice(&bytes[..len]);
        if track {
            let span = (at as u32, (at + width) as u32);
            spans.extend(std::iter::repeat_n(span, len));
        }
        at += width;
    }
    (out, spans)
}

/// The bytes the unit at the start of `rest` stands for (at most four, as
/// a buffer and a length) and how many bytes of `rest` it takes.
fn unit(rest: &[u8]) -> ([u8; 4], usize, usize) {
    let one = |b: u8| ([b, 0, 0, 0], 1);
    let (decoded, width) = match rest {
        [b'%', a, b, ..] if a.is_ascii_hexdigit() && b.is_ascii_hexdigit() => {
            (one(hex(&[*a, *b]) as u8), 3)
        }
        [b'\\', b'x' | b'X', a, b, ..] if a.is_ascii_hexdigit() && b.is_ascii_hexdigit() => {
            (one(hex(&[*a, *b]) as u8), 4)
        }
        [b'\\', b'u', digits @ ..]
            if digits.len() >= 4 && digits[..4].iter().all(u8::is_ascii_hexdigit) =>
        {
            let mut buffer = [0u8; 4];
            let len =
                char::from_u32(hex(&digits[..4])).map_or(0, |c| c.encode_utf8(&mut buffer).len());
            ((buffer, len), 6)
        }
        [b'\\', escaped, ..] if b"nrtbf/\\\"'".contains(escaped) => {
            let byte = match escaped {
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'b' => 8,
                b'f' => 12,
                // `\\` stays a backslash: the next pass reads what it escapes.
                other => *other,
            };
            (one(byte), 2)
        }
        [byte, ..] => (one(*byte), 1),
        [] => (([0; 4], 0), 1),
    };
    (decoded.0, decoded.1, width)
}

fn hex(digits: &[u8]) -> u32 {
    digits
        .iter()
        .fold(0, |n, d| n * 16 + (*d as char).to_digit(16).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(text: &str) -> String {
        String::from_utf8(skeleton(text.as_bytes(), false).0).unwrap()
    }

    #[test]
    fn escapes_separators_and_case_fold_away() {
        assert_eq!(folded("S3CR-%33t"), "s3cr3t");
        assert_eq!(folded("\\x53\\x33 CR"), "s3cr");
        assert_eq!(folded("\\u0053\\u0033"), "s3");
        assert_eq!(folded("\\\\u0053 in JSON"), "sinjson");
        assert_eq!(folded("53 33:43\n52"), "53334352");
        assert_eq!(folded("UzND\\nUjNU"), "uzndujnu");
    }

    #[test]
    fn each_byte_remembers_where_it_came_from() {
        let text = b"ab %41\\x42-C";
        let (bytes, spans) = skeleton(text, true);
        assert_eq!(bytes, b"ababc");
        assert_eq!(spans, [(0, 1), (1, 2), (3, 6), (6, 10), (11, 12)]);
    }
}
