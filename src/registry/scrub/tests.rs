//! The scrubber's own cases; `fuzz/fuzz_targets/scrub.rs` tries the rest.

use super::*;

#[test]
fn replaces_every_secret_everywhere() {
    let scrub = Scrubber::new(["s3cr3t-token".to_owned(), "abc".to_owned()]);
    assert_eq!(scrub.text("Bearer s3cr3t-token!"), "Bearer [redacted]!");
    assert_eq!(scrub.text("abc stays: too short"), "abc stays: too short");
    let mut value = serde_json::json!({"a": ["x s3cr3t-token y"], "b": 1});
    scrub.value(&mut value);
    assert_eq!(value["a"][0], "x [redacted] y");
}

fn result(texts: &[&str], structured: Value) -> CallToolResponse {
    let content = texts
        .iter()
        .map(|t| crate::protocol::ContentBlock::text(*t))
        .collect();
    let mut result = crate::protocol::CallToolResult::success(content);
    result.structured_content = Some(structured);
    result.into()
}

fn wire_text(response: &CallToolResponse) -> String {
    match response {
        CallToolResponse::Complete(result) => serde_json::to_string(result).unwrap(),
        _ => panic!("a complete result"),
    }
}

#[test]
fn results_are_scrubbed_whether_or_not_a_secret_needs_escaping() {
    for secret in [
        "s3cr3t-token",
        "quo\"te-secret",
        "back\\slash-secret",
        "tab\tsecret",
    ] {
        let scrub = Scrubber::new([secret.to_owned()]);
        let clean = result(&["nothing here"], serde_json::json!({"k": "v"}));
        let before = wire_text(&clean);
        assert_eq!(wire_text(&scrub.result(clean)), before, "{secret:?}");
        let leaky = result(
            &["ok", &format!("env: {secret}!")],
            serde_json::json!({"deep": [{"key": format!("={secret}")}]}),
        );
        let after = serde_json::from_str::<Value>(&wire_text(&scrub.result(leaky))).unwrap();
        assert_eq!(
            after["content"][1]["text"], "env: [redacted]!",
            "{secret:?}"
        );
        assert_eq!(after["structuredContent"]["deep"][0]["key"], "=[redacted]");
        assert!(!after.to_string().contains(secret), "{secret:?}");
    }
}

#[test]
fn streams_never_pass_on_part_of_a_secret() {
    let secret = "s3cr3t-token-0123";
    let scrub = Scrubber::new([secret.to_owned(), "s3cr3t".to_owned()]);
    let input = format!("a {secret} b s3cr3t c {secret}{secret} s3cr3");
    // Every way of cutting the input into two pieces.
    for cut in 0..=input.len() {
        let mut stream = scrub.stream();
        let first = stream.push(&input.as_bytes()[..cut]);
        let second = stream.push(&input.as_bytes()[cut..]);
        let rest = stream.finish();
        for piece in [&first, &second, &rest] {
            let piece = String::from_utf8_lossy(piece);
            assert!(!piece.contains("s3cr3t"), "{cut}: {piece}");
        }
        let whole = String::from_utf8([first, second, rest].concat()).unwrap();
        assert_eq!(whole, scrub.text(&input), "{cut}");
    }
    let mut value = serde_json::json!({"k-s3cr3t": {"s3cr3t-token-0123": 1}});
    scrub.value(&mut value);
    assert_eq!(
        value,
        serde_json::json!({"k-[redacted]": {"[redacted]": 1}})
    );
}

#[test]
fn text_that_only_looks_like_a_secret_in_json_is_left_alone() {
    // "1234" appears in the JSON text (a number), in no string: the full
    // path runs and changes nothing.
    let scrub = Scrubber::new(["1234".to_owned()]);
    let response = result(&["fine"], serde_json::json!({"n": 123456}));
    let before = wire_text(&response);
    assert_eq!(wire_text(&scrub.result(response)), before);
}
