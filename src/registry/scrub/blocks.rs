//! A secret cut across a tool result's text blocks (issue 44 item 7): each
//! block alone holds no secret, the text a client joins does. A non-text
//! block between them (an image, a link) does not part them (issue 59).

use serde_json::Value;

use super::Scrubber;
use crate::protocol::ContentBlock;

/// Whether the text blocks of a result, joined in order, hold a secret
/// (a secret inside one block counts too: the caller scrubs anyway).
pub(super) fn any_joined(scrubber: &Scrubber, content: &[ContentBlock]) -> bool {
    let texts: Vec<&str> = (content.iter())
        .filter_map(|block| Some(block.as_text()?.text.as_str()))
        .collect();
    texts.len() > 1 && scrubber.holds_secret(texts.concat().as_bytes())
}

/// Scrubs the text blocks of a result's wire form as one text: a secret
/// spanning blocks is replaced in the block it starts in and removed from
/// the rest.
pub(super) fn scrub_joined(scrubber: &Scrubber, result: &mut Value) {
    let Some(content) = result.get_mut("content").and_then(Value::as_array_mut) else {
        return;
    };
    let run: Vec<&mut String> = (content.iter_mut())
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| match block.get_mut("text") {
            Some(Value::String(text)) => Some(text),
            _ => None,
        })
        .collect();
    scrub_run(scrubber, run);
}

/// Scrubs the text blocks of `content` (in place) as one text with the
/// `before` texts in front (a call's last progress messages): what is
/// clean of each `before` text, or `None` when nothing held a secret.
pub(super) fn scrub_after(
    scrubber: &Scrubber,
    before: &[&str],
    content: &mut [ContentBlock],
) -> Option<Vec<String>> {
    let mut texts: Vec<&str> = before.to_vec();
    texts.extend((content.iter()).filter_map(|block| Some(block.as_text()?.text.as_str())));
    let mut clean = pieces(scrubber, &texts)?.into_iter();
    let before: Vec<String> = clean.by_ref().take(before.len()).collect();
    for block in content.iter_mut() {
        if let ContentBlock::Text(text) = block {
            text.text = clean.next().unwrap_or_default();
        }
    }
    Some(before)
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
