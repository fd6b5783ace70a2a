//! The scrubber, whole and streaming (`registry/scrub.rs`): no configured
//! secret survives, in one piece or split across the pieces a stream
//! arrives in, and streaming gives exactly what scrubbing the whole does.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use teamgate::registry::{REDACTED, Scrubber};

#[derive(Arbitrary, Debug)]
struct Input {
    secrets: Vec<String>,
    text: String,
    /// Where the stream is cut into pieces.
    cuts: Vec<u16>,
}

/// Secrets the invariant can be stated for. A secret shorter than the
/// minimum is not one; a secret inside the marker (`acted`), or holding its
/// brackets, could be produced by the replacement itself, so "no secret in
/// the output" would not be a property of the scrubber.
fn is_checkable(secret: &str) -> bool {
    secret.len() >= 4 && !REDACTED.contains(secret) && !secret.contains(['[', ']'])
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

fuzz_target!(|input: Input| {
    let secrets: Vec<String> = input
        .secrets
        .into_iter()
        .filter(|s| is_checkable(s))
        .take(8)
        .collect();
    let scrubber = Scrubber::new(secrets.clone());
    let whole = scrubber.text(&input.text);
    for secret in &secrets {
        assert!(
            !whole.contains(secret.as_str()),
            "{secret:?} survives in {whole:?}"
        );
    }

    // The same text in pieces.
    let bytes = input.text.as_bytes();
    let mut cuts: Vec<usize> = input
        .cuts
        .iter()
        .map(|&c| usize::from(c) % (bytes.len() + 1))
        .collect();
    cuts.sort_unstable();
    let mut stream = scrubber.stream();
    let mut pieces = Vec::new();
    let mut from = 0;
    for cut in cuts.into_iter().chain([bytes.len()]) {
        pieces.push(stream.push(&bytes[from..cut]));
        from = cut;
    }
    pieces.push(stream.finish());
    for piece in &pieces {
        for secret in &secrets {
            assert!(!holds(piece, secret), "{secret:?} in a piece {piece:?}");
        }
    }
    let joined = pieces.concat();
    assert_eq!(
        joined,
        whole.as_bytes(),
        "streaming differs from scrubbing the whole"
    );

    // Keys and values of structured results.
    let mut value =
        serde_json::json!({ input.text.clone(): [input.text.clone(), {"k": input.text}] });
    scrubber.value(&mut value);
    let mut texts = Vec::new();
    strings(&value, &mut texts);
    for text in texts {
        for secret in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "{secret:?} survives in {value}"
            );
        }
    }
});

/// Every object key and string in `value`.
fn strings<'a>(value: &'a serde_json::Value, out: &mut Vec<&'a str>) {
    match value {
        serde_json::Value::String(s) => out.push(s),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        serde_json::Value::Object(map) => map.iter().for_each(|(k, v)| {
            out.push(k);
            strings(v, out);
        }),
        _ => {}
    }
}
