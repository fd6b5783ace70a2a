//! A secret cut across a tool result's adjacent text blocks (issue 44 item
//! 7): each block alone holds no secret, the text a client joins does.

use serde_json::Value;

use super::Scrubber;
use crate::protocol::ContentBlock;

/// Whether some run of two or more adjacent text blocks, joined, holds a
/// secret (a secret inside one block counts too: the caller scrubs anyway).
pub(super) fn any_joined(scrubber: &Scrubber, content: &[ContentBlock]) -> bool {
    let mut joined = String::new();
    let mut run = 0;
    for block in content {
        match block.as_text() {
            Some(text) => {
                joined.push_str(&text.text);
                run += 1;
            }
            None => {
                if run > 1 && scrubber.holds_secret(joined.as_bytes()) {
                    return true;
                }
                joined.clear();
                run = 0;
            }
        }
    }
    run > 1 && scrubber.holds_secret(joined.as_bytes())
}

/// Scrubs each run of adjacent text blocks of a result's wire form as one
/// text: a secret spanning blocks is replaced in the block it starts in and
/// removed from the rest.
pub(super) fn scrub_joined(scrubber: &Scrubber, result: &mut Value) {
    let Some(content) = result.get_mut("content").and_then(Value::as_array_mut) else {
        return;
    };
    let mut run: Vec<&mut String> = Vec::new();
    for block in content.iter_mut() {
        let is_text = block.get("type").and_then(Value::as_str) == Some("text");
        match block.get_mut("text") {
            Some(Value::String(text)) if is_text => run.push(text),
            _ => scrub_run(scrubber, std::mem::take(&mut run)),
        }
    }
    scrub_run(scrubber, run);
}

fn scrub_run(scrubber: &Scrubber, run: Vec<&mut String>) {
    if run.len() < 2 {
        return;
    }
    let texts: Vec<&str> = run.iter().map(|t| t.as_str()).collect();
    let Some(scrubbed) = pieces(scrubber, &texts) else {
        return;
    };
    for (text, clean) in run.into_iter().zip(scrubbed) {
        *text = clean;
    }
}

/// `texts` scrubbed as the one text they join into, each piece keeping its
/// own part: a secret spanning pieces is replaced in the piece it starts in
/// and removed from the rest. `None` when they hold no secret.
pub(super) fn pieces(scrubber: &Scrubber, texts: &[&str]) -> Option<Vec<String>> {
    let joined: String = texts.concat();
    let matches = scrubber.matches(joined.as_bytes());
    if matches.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(texts.len());
    let mut at = 0;
    let mut matches = matches.into_iter().peekable();
    for text in texts {
        let (start, end) = (at, at + text.len());
        at = end;
        let mut piece = Vec::with_capacity(text.len());
        let mut pos = start;
        while pos < end {
            match matches.peek().copied() {
                Some((from, to)) if from < end => {
                    if from >= pos {
                        piece.extend_from_slice(&joined.as_bytes()[pos..from]);
                        piece.extend_from_slice(super::REDACTED.as_bytes());
                    }
                    // A match going on into the next piece: skip its part.
                    pos = to.min(end);
                    if to <= end {
                        matches.next();
                    } else {
                        break;
                    }
                }
                _ => {
                    piece.extend_from_slice(&joined.as_bytes()[pos..end]);
                    pos = end;
                }
            }
        }
        out.push(String::from_utf8_lossy(&piece).into_owned());
    }
    Some(out)
}
