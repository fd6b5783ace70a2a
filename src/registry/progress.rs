//! A call's progress messages scrubbed as one text (issue 44 item 7): a
//! secret sent a few characters a message is redacted like one sent whole.
//! A notification whose text could start a secret is held, unchanged, until
//! the next shows whether it does, or the call ends; the ones after it wait
//! too, so progress still only increases.

use super::Scrubber;
use crate::protocol::CallToolResponse;

/// One `notifications/progress`, as the provider sent it.
pub(super) struct Update {
    pub(super) progress: f64,
    pub(super) total: Option<f64>,
    pub(super) message: Option<String>,
}

impl Update {
    fn text(&self) -> &str {
        self.message.as_deref().unwrap_or_default()
    }
}

pub(super) struct ProgressScrub {
    scrubber: Scrubber,
    held: Vec<Update>,
}

impl ProgressScrub {
    pub(super) fn new(scrubber: Scrubber) -> Self {
        Self {
            scrubber,
            held: Vec::new(),
        }
    }

    /// The updates that may go out now, in order.
    pub(super) fn push(&mut self, update: Update) -> Vec<Update> {
        if self.scrubber.is_empty() || (self.held.is_empty() && update.text().is_empty()) {
            return vec![update];
        }
        // Updates without text behind held ones: only the latest counts,
        // so what is held stays bounded by the secrets' length.
        if update.text().is_empty() && self.held.last().is_some_and(|u| u.text().is_empty()) {
            self.held.pop();
        }
        self.held.push(update);
        let joined: String = self.held.iter().map(Update::text).collect();
        let cut = self.scrubber.safe_cut(joined.as_bytes());
        let matches = self.scrubber.matches(joined.as_bytes());
        // The last update ending at or before the cut with no secret
        // running across its end.
        let mut end = 0;
        let mut ready = 0;
        for (i, update) in self.held.iter().enumerate() {
            end += update.text().len();
            if end > cut {
                break;
            }
            if !matches.iter().any(|&(from, to)| from < end && to > end) {
                ready = i + 1;
            }
        }
        let rest = self.held.split_off(ready);
        let ready = std::mem::replace(&mut self.held, rest);
        self.scrubbed(ready)
    }

    /// Everything still held, at the end of the call, scrubbed as one text
    /// with the text of `result` after it (issue 59): a secret begun in the
    /// last messages and ended in the result is redacted in both.
    pub(super) fn finish(&mut self, result: Option<&mut CallToolResponse>) -> Vec<Update> {
        let mut held = std::mem::take(&mut self.held);
        let Some(CallToolResponse::Complete(result)) = result else {
            return self.scrubbed(held);
        };
        let texts: Vec<&str> = held.iter().map(Update::text).collect();
        if let Some(clean) = self.scrubber.leading(&texts, &mut result.content) {
            for (update, clean) in held.iter_mut().zip(clean) {
                if update.message.is_some() {
                    update.message = Some(clean);
                }
            }
        }
        held
    }

    fn scrubbed(&self, mut updates: Vec<Update>) -> Vec<Update> {
        let texts: Vec<&str> = updates.iter().map(Update::text).collect();
        if let Some(clean) = self.scrubber.pieces(&texts) {
            for (update, clean) in updates.iter_mut().zip(clean) {
                if update.message.is_some() {
                    update.message = Some(clean);
                }
            }
        }
        updates
    }
}
